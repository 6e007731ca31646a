// OFPMP_METER_FEATURES (OpenFlow 1.3.5 7.3.5.11): golden bytes both ways (the bytes Open
// vSwitch 3.1 netdev sends, checked with ovs-ofctl), length rules, and that truncated or
// corrupted copies of the reply decode to an error, never a crash.
#include <random>

#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

// MULTIPART_REQUEST, xid 5, type 11, flags 0, empty body.
constexpr std::string_view kRequestHex = "04 12 0010 00000005  000b 0000 00000000";
// MULTIPART_REPLY, xid 5: max_meter 262144, band_types DROP (1 << 1), capabilities
// KBPS|PKTPS|BURST|STATS (0xf), max_bands 8, max_color 0 -- what `ovs-ofctl meter-features`
// reports for a netdev bridge.
constexpr std::string_view kReplyHex =
    "04 13 0020 00000005  000b 0000 00000000  00040000 00000002 0000000f 08 00 0000";

MeterFeatures ovs_features() {
  MeterFeatures f;
  f.max_meter = 262144;
  f.band_types = 1u << 1;
  f.capabilities = 0xf;
  f.max_bands = 8;
  return f;
}

TEST(OfpMeterFeatures, RequestBothWays) {
  MultipartRequest r;
  r.type = MultipartType::kMeterFeatures;
  Bytes out;
  ASSERT_TRUE(encode(5, r, out));
  EXPECT_EQ(to_hex(out), to_hex(from_hex(kRequestHex)));
  auto d = decode(from_hex(kRequestHex));
  ASSERT_TRUE(d.has_value()) << d.error().detail;
  EXPECT_EQ(d->xid, 5u);
  EXPECT_EQ(std::get<MultipartRequest>(d->body), r);
}

TEST(OfpMeterFeatures, ReplyBothWays) {
  MultipartReply r;
  r.type = MultipartType::kMeterFeatures;
  r.body = ovs_features();
  Bytes out;
  ASSERT_TRUE(encode(5, r, out));
  EXPECT_EQ(to_hex(out), to_hex(from_hex(kReplyHex)));
  auto d = decode(from_hex(kReplyHex));
  ASSERT_TRUE(d.has_value()) << d.error().detail;
  const auto& mp = std::get<MultipartReply>(d->body);
  EXPECT_EQ(mp.type, MultipartType::kMeterFeatures);
  EXPECT_EQ(std::get<MeterFeatures>(mp.body), ovs_features());
}

TEST(OfpMeterFeatures, RoundTripOfRandomValues) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200; ++i) {
    MultipartReply r;
    r.type = MultipartType::kMeterFeatures;
    r.flags = static_cast<uint16_t>(rng());
    r.body = MeterFeatures{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()),
                           static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng())};
    Bytes out;
    ASSERT_TRUE(encode(static_cast<uint32_t>(i), r, out));
    auto d = decode(out);
    ASSERT_TRUE(d.has_value()) << d.error().detail;
    EXPECT_EQ(std::get<MultipartReply>(d->body), r);
  }
}

// The length of one message, rewritten in its header after cutting or growing the body.
Bytes with_len(Bytes b) {
  b[2] = static_cast<uint8_t>(b.size() >> 8);
  b[3] = static_cast<uint8_t>(b.size());
  return b;
}

TEST(OfpMeterFeatures, ReplyBodyMustBeSixteenBytes) {
  Bytes shorter = from_hex(kReplyHex);
  shorter.pop_back();
  auto d = decode(with_len(shorter));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, Errc::kTruncated);
  Bytes longer = from_hex(kReplyHex);
  longer.insert(longer.end(), 8, 0);
  d = decode(with_len(longer));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, Errc::kBadLength);
}

TEST(OfpMeterFeatures, RequestBodyMustBeEmpty) {
  Bytes b = from_hex(kRequestHex);
  b.insert(b.end(), 8, 0);
  auto d = decode(with_len(b));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, Errc::kBadLength);
}

TEST(OfpMeterFeatures, EncoderRefusesAMismatchedBody) {
  MultipartReply r;
  r.type = MultipartType::kMeterFeatures;  // body left as Desc
  Bytes out;
  EXPECT_FALSE(encode(1, r, out).has_value());
  EXPECT_TRUE(out.empty());
}

// Every prefix and every single-byte corruption of the reply: decode returns, value or error.
TEST(OfpMeterFeatures, CutAndCorruptedRepliesNeverCrash) {
  const Bytes good = from_hex(kReplyHex);
  size_t errors = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<long>(n));
    if (cut.size() >= 4) cut = with_len(cut);
    errors += decode(cut).has_value() ? 0 : 1;
  }
  EXPECT_EQ(errors, good.size());  // no proper prefix is a valid reply
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    Bytes b = good;
    b[rng() % b.size()] = static_cast<uint8_t>(rng());
    (void)decode(b);
  }
}

}  // namespace
}  // namespace sdn::ofp::test
