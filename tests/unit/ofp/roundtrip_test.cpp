// Property tests: every random well-formed message survives encode -> decode unchanged, and
// every golden survives decode -> encode byte for byte; truncations and byte flips of the
// goldens never crash the decoder (a cheap, deterministic cousin of the fuzz targets).
#include "unit/ofp/random_messages.hpp"
#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

TEST(OfpRoundTrip, RandomMessagesEncodeDecodeEqual) {
  RandomMessages gen(0x5d4a7042);
  Bytes frame(1500);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 7);
  constexpr size_t kAlternatives = std::variant_size_v<Body>;
  for (int iter = 0; iter < 400; ++iter) {
    for (size_t alt = 0; alt < kAlternatives; ++alt) {
      const Message m = gen.message(alt, frame);
      ASSERT_EQ(m.body.index(), alt);
      Bytes wire;
      auto e = encode(m, wire);
      ASSERT_TRUE(e.has_value()) << "alt " << alt << ": " << e.error().detail;
      auto d = decode(wire);
      ASSERT_TRUE(d.has_value()) << "alt " << alt << ": " << d.error().detail << " in " << to_hex(wire);
      ASSERT_TRUE(*d == m) << "alt " << alt << " iter " << iter << ": " << to_hex(wire);
      Bytes again;
      ASSERT_TRUE(encode(*d, again).has_value());
      ASSERT_EQ(again, wire);
    }
  }
}

TEST(OfpRoundTrip, GoldensDecodeEncodeByteForByte) {
  for (const auto& g : kGoldens) {
    if (!g.round_trips) continue;
    const Bytes wire = from_hex(g.hex);
    auto d = decode(wire);
    ASSERT_TRUE(d.has_value()) << g.name;
    Bytes again;
    ASSERT_TRUE(encode(*d, again).has_value()) << g.name;
    EXPECT_EQ(to_hex(again), to_hex(wire)) << g.name;
  }
}

TEST(OfpRoundTrip, MutatedGoldensNeverCrash) {
  std::mt19937 rng(7);
  for (const auto& g : kGoldens) {
    const Bytes wire = from_hex(g.hex);
    for (size_t cut = 0; cut < wire.size(); ++cut) {
      Bytes b(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(cut));
      (void)decode(b);
      (void)decode(fix_len(b));
    }
    for (int i = 0; i < 300; ++i) {
      Bytes b = wire;
      for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
      const Bytes m = fix_len(b);  // keeps PacketIn/PacketOut::data views alive
      auto d = decode(m);
      if (!d) continue;
      Bytes again;
      ASSERT_TRUE(encode(*d, again).has_value()) << g.name << " " << to_hex(b);
      auto d2 = decode(again);
      ASSERT_TRUE(d2.has_value()) << g.name << " " << to_hex(b);
      EXPECT_TRUE(*d2 == *d) << g.name << " " << to_hex(b);
    }
  }
}

}  // namespace
}  // namespace sdn::ofp::test
