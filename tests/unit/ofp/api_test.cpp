// The codec API around decode/encode: names, type_of, error_reply, the 65535-byte cap and the
// "out is untouched on failure" guarantee, encode-side validation, and the wire reader/writer.
#include "ofp/wire.hpp"
#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

TEST(OfpApi, ErrcNames) {
  EXPECT_STREQ(errc_name(Errc::kTruncated), "truncated");
  EXPECT_STREQ(errc_name(Errc::kBadMultipart), "bad_multipart");
  EXPECT_STREQ(errc_name(Errc::kTooLong), "too_long");
}

TEST(OfpApi, TypeOfAndTypeName) {
  EXPECT_EQ(type_of(Hello{}), Type::kHello);
  EXPECT_EQ(type_of(PacketIn{}), Type::kPacketIn);
  EXPECT_EQ(type_of(MeterMod{}), Type::kMeterMod);
  EXPECT_EQ(type_of(RoleReply{}), Type::kRoleReply);
  EXPECT_EQ(type_of(MultipartReply{}), Type::kMultipartReply);
  EXPECT_STREQ(type_name(Type::kFlowMod), "OFPT_FLOW_MOD");
  EXPECT_STREQ(type_name(static_cast<Type>(200)), "OFPT_UNKNOWN");
  // Every body alternative encodes with the header type type_of() names.
  for (const auto& g : kGoldens) {
    auto d = decode(from_hex(g.hex));
    ASSERT_TRUE(d.has_value()) << g.name;
    EXPECT_EQ(static_cast<uint8_t>(type_of(d->body)), from_hex(g.hex)[1]) << g.name;
  }
}

TEST(OfpApi, ErrorReplyEchoesAtMost64Bytes) {
  const Bytes bad = golden_bytes("flow_mod");
  Error e{Errc::kBadAction, err::kBadAction, err::kBacBadType, "x"};
  ErrorMsg m = error_reply(e, bad);
  EXPECT_EQ(m.type, err::kBadAction);
  EXPECT_EQ(m.code, err::kBacBadType);
  EXPECT_EQ(m.data, Bytes(bad.begin(), bad.begin() + 64));
  EXPECT_EQ(error_reply(e, std::span<const uint8_t>(bad).first(10)).data.size(), 10u);
}

TEST(OfpApi, EncodeAppends) {
  Bytes out = golden_bytes("hello");
  ASSERT_TRUE(encode(6, BarrierRequest{}, out).has_value());
  EXPECT_EQ(to_hex(out), std::string(golden("hello").hex) + "0414000800000006");
}

TEST(OfpApi, EncodeCapsAt65535AndLeavesOutUntouched) {
  Bytes out{9, 9, 9};
  EchoRequest ok{Bytes(kMaxMessageLen - kHeaderLen, 0xab)};
  ASSERT_TRUE(encode(1, ok, out).has_value());
  EXPECT_EQ(out.size(), 3u + kMaxMessageLen);
  out.resize(3);
  EchoRequest big{Bytes(kMaxMessageLen - kHeaderLen + 1, 0xab)};
  auto r = encode(1, big, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::kTooLong);
  EXPECT_EQ(out, (Bytes{9, 9, 9}));
}

TEST(OfpApi, EncodeCapsMultipartReplies) {
  // ~70 KB of flow stats: a session must split such a reply with REPLY_MORE.
  MultipartReply rep;
  rep.type = MultipartType::kFlow;
  std::vector<FlowStats> v(1200);
  rep.body = v;
  Bytes out;
  auto r = encode(1, rep, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::kTooLong);
  EXPECT_TRUE(out.empty());
}

TEST(OfpApi, EncodeRejectsWhatTheWireCannotCarry) {
  Bytes out;
  auto bad = [&out](Body b) {
    auto r = encode(1, std::move(b), out);
    EXPECT_TRUE(out.empty());
    return !r.has_value() && r.error().code == Errc::kBadValue;
  };
  FlowMod f;
  f.match.set(OxmField::kInPort, uint64_t{1} << 40);
  EXPECT_TRUE(bad(f));
  f.match = Match{};
  f.match.set_masked(OxmField::kInPort, 1, 1);
  EXPECT_TRUE(bad(f));
  f.match = Match{};
  f.match.fields.push_back({static_cast<OxmField>(40), 1, std::nullopt});
  EXPECT_TRUE(bad(f));
  f.match = Match{};
  f.command = static_cast<FlowModCommand>(7);
  EXPECT_TRUE(bad(f));
  PacketOut p;
  p.actions.push_back(ActionSetField{oxm(OxmField::kIpv4Dst, 1, 0xff)});
  EXPECT_TRUE(bad(p));
  MultipartReply rep;
  rep.type = MultipartType::kFlow;  // body is still Desc
  EXPECT_TRUE(bad(rep));
  MultipartRequest req;
  req.type = MultipartType::kPortStats;  // body is monostate
  EXPECT_TRUE(bad(req));
  req.type = static_cast<MultipartType>(6);
  EXPECT_TRUE(bad(req));
  MeterMod m;
  m.bands.push_back(MeterBand{3, 1, 1, 0});
  EXPECT_TRUE(bad(m));
  MultipartReply d;
  d.body = Desc{std::string(256, 'x'), "", "", "", ""};
  EXPECT_TRUE(bad(d));
}

TEST(OfpApi, PacketOutDataOnlyWithoutBuffer) {
  const Bytes frame{1, 2, 3, 4};
  PacketOut p;
  p.buffer_id = 7;
  p.data = frame;
  const Bytes wire = encode_ok({1, p});
  EXPECT_EQ(wire.size(), 24u);
  auto d = decode(golden_bytes("packet_out"));
  ASSERT_TRUE(d.has_value());
  Bytes buffered = golden_bytes("packet_out");
  buffered[8] = 0;  // buffer_id 0x00ffffff: trailing bytes are not a frame
  auto e = decode(buffered);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(std::get<PacketOut>(e->body).data.empty());
}

TEST(OfpApi, PacketInDataViewsTheInput) {
  const Bytes wire = golden_bytes("packet_in");
  auto d = decode(wire);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(std::get<PacketIn>(d->body).data.data(), wire.data() + 42);
}

// ---- wire::Reader / wire::Writer ----
TEST(OfpWire, ReaderIsBigEndianAndNeverOverruns) {
  const Bytes b = from_hex("0102030405060708090a0b");
  wire::Reader r(b);
  uint16_t a = 0;
  uint32_t c = 0;
  uint64_t d = 0;
  ASSERT_TRUE(r.u16(a));
  EXPECT_EQ(a, 0x0102);
  ASSERT_TRUE(r.u32(c));
  EXPECT_EQ(c, 0x03040506u);
  EXPECT_FALSE(r.u64(d));  // 5 left: fails and consumes nothing
  EXPECT_EQ(r.remaining(), 5u);
  ASSERT_TRUE(r.uint_n(5, d));
  EXPECT_EQ(d, 0x0708090a0bULL);
  uint8_t e = 0;
  EXPECT_FALSE(r.u8(e));
  EXPECT_FALSE(r.skip(1));
  std::span<const uint8_t> s;
  EXPECT_TRUE(r.try_pull(0, s));
  EXPECT_FALSE(r.try_pull(1, s));
}

TEST(OfpWire, WriterBackPatchesAndPads) {
  Bytes out{0xee};
  wire::Writer w(out);
  const size_t start = w.pos();
  w.u16(0);
  w.u8(7);
  w.uint_n(0x112233445566ULL, 6);
  w.pad8_from(start);
  w.patch16(start, w.pos() - start);
  EXPECT_EQ(to_hex(out), "ee" "0010" "07" "112233445566" "00000000000000");
}

}  // namespace
}  // namespace sdn::ofp::test
