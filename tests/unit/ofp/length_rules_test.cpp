// One negative test per wire rule: each mutates a golden message (or builds one by hand) so
// that exactly one length/format rule breaks, and checks the codec error and the OFPT_ERROR
// type/code a peer would get back.
#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

void put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}
Bytes with16(std::string_view name, size_t at, uint16_t v) {
  Bytes b = golden_bytes(name);
  put16(b, at, v);
  return b;
}
Bytes with8(std::string_view name, size_t at, uint8_t v) {
  Bytes b = golden_bytes(name);
  b[at] = v;
  return b;
}
Bytes shorter(std::string_view name, size_t by) {
  Bytes b = golden_bytes(name);
  b.resize(b.size() - by);
  return fix_len(std::move(b));
}
Bytes longer(std::string_view name, size_t by) {
  Bytes b = golden_bytes(name);
  b.resize(b.size() + by, 0);
  return fix_len(std::move(b));
}
void expect_error(const Bytes& b, Errc code, uint16_t type, uint16_t ofp_code) {
  expect_decode_error(to_hex(b), code, type, ofp_code);
}
void expect_bad_len(const Bytes& b, Errc code = Errc::kBadLength) {
  expect_error(b, code, err::kBadRequest, err::kBrcBadLen);
}

// ---- header (7.1) ----
TEST(OfpLengthRules, HeaderNeedsEightBytes) {
  auto h = decode_header(from_hex("04000008000000"));
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code, Errc::kTruncated);
  expect_bad_len(from_hex("04000008000000"), Errc::kTruncated);
}
TEST(OfpLengthRules, HeaderLengthAtLeastEight) {
  auto h = decode_header(from_hex("0400000400000001"));
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code, Errc::kBadLength);
}
TEST(OfpLengthRules, HeaderPeekDoesNotNeedTheWholeMessage) {
  auto h = decode_header(from_hex("040a005400000007"));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->type, Type::kPacketIn);
  EXPECT_EQ(h->length, 0x54);
  EXPECT_EQ(h->xid, 7u);
}
TEST(OfpLengthRules, MessageShorterThanHeaderLength) {
  expect_bad_len(from_hex("0400001000000001"), Errc::kTruncated);
}
TEST(OfpLengthRules, MessageLongerThanHeaderLength) { expect_bad_len(from_hex("040000080000000100")); }
TEST(OfpLengthRules, VersionMustBe13ExceptHello) {
  expect_error(from_hex("0102000800000001"), Errc::kBadVersion, err::kBadRequest, err::kBrcBadVersion);
}
TEST(OfpLengthRules, UnknownTypes) {
  expect_error(from_hex("041e000800000001"), Errc::kBadType, err::kBadRequest, err::kBrcBadType);
  expect_error(from_hex("0410000800000001"), Errc::kBadType, err::kBadRequest, err::kBrcBadType);  // PORT_MOD
  expect_error(from_hex("0404001000000001000023200000000a"), Errc::kBadType, err::kBadRequest,
               err::kBrcBadExperimenter);
}

// ---- fixed-size messages ----
TEST(OfpLengthRules, HeaderOnlyMessagesHaveNoBody) {
  expect_bad_len(longer("features_request", 8));
  expect_bad_len(longer("barrier_reply", 1));
}
TEST(OfpLengthRules, FixedSizeBodiesAreExact) {
  expect_bad_len(shorter("features_reply", 4), Errc::kTruncated);
  expect_bad_len(longer("features_reply", 8));
  expect_bad_len(shorter("set_config", 2), Errc::kTruncated);
  expect_bad_len(longer("get_config_reply", 4));
  expect_bad_len(shorter("role_request", 8), Errc::kTruncated);
  expect_bad_len(longer("role_reply", 8));
  expect_bad_len(shorter("port_status", 8), Errc::kTruncated);
  expect_bad_len(longer("port_status", 8));
}
TEST(OfpLengthRules, ErrorNeedsTypeAndCode) { expect_bad_len(from_hex("0401000a000000010001"), Errc::kTruncated); }

// ---- HELLO elements (7.5.1); element header at offset 8 ----
TEST(OfpLengthRules, HelloElementLengthAtLeastFour) { expect_bad_len(with16("hello", 10, 2)); }
TEST(OfpLengthRules, HelloElementWithinMessage) { expect_bad_len(with16("hello", 10, 16), Errc::kTruncated); }
TEST(OfpLengthRules, HelloBitmapIsWholeWords) { expect_bad_len(with16("hello", 10, 6)); }
TEST(OfpLengthRules, HelloTrailingPartialElement) { expect_bad_len(longer("hello", 2), Errc::kTruncated); }

// ---- match (7.2.3); in "flow_mod" the match starts at 48, first OXM (in_port) at 52 ----
TEST(OfpLengthRules, MatchTypeMustBeOxm) {
  expect_error(with16("flow_mod", 48, 0), Errc::kBadMatch, err::kBadMatch, err::kBmcBadType);
}
TEST(OfpLengthRules, MatchLengthAtLeastFour) {
  expect_error(with16("flow_mod", 50, 3), Errc::kBadLength, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, MatchWithPaddingWithinMessage) {
  expect_error(with16("flow_mod", 50, 0x200), Errc::kTruncated, err::kBadMatch, err::kBmcBadLen);
  // 109 bytes of match fit but its padding to 112 does not.
  expect_error(with16("flow_mod", 50, 64 + 1), Errc::kTruncated, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, OxmHeaderWithinMatch) {
  expect_error(with16("flow_mod", 50, 6), Errc::kTruncated, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, OxmPayloadWithinMatch) {
  expect_error(with8("flow_mod", 55, 200), Errc::kTruncated, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, OxmLengthFitsFieldType) {
  expect_error(with8("flow_mod", 55, 2), Errc::kBadLength, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, OxmMaskedLengthIsTwiceTheWidth) {
  // flow_removed: ipv4_src/mask OXM header at 8+40+4+6 = 58; length byte at 61 (8 -> 4).
  Bytes b = golden_bytes("flow_removed");
  ASSERT_EQ(b[60], (11 << 1) | 1);
  b[61] = 4;
  expect_error(b, Errc::kBadLength, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, OxmMaskOnlyOnMaskableFields) {
  expect_error(with8("flow_mod", 54, 0x01), Errc::kBadMatch, err::kBadMatch, err::kBmcBadMask);
}
TEST(OfpLengthRules, OxmUnknownFieldOrClassRejectedInFlowMod) {
  expect_error(with8("flow_mod", 54, 26 << 1), Errc::kBadMatch, err::kBadMatch, err::kBmcBadField);
  expect_error(with16("flow_mod", 52, 0x0001), Errc::kBadMatch, err::kBadMatch, err::kBmcBadField);
}
TEST(OfpLengthRules, OxmUnknownFieldSkippedInPacketIn) {
  // in "packet_in" the in_port OXM class is at 28: NXM_1 fields (tunnel, registers) are skipped.
  auto d = decode(with16("packet_in", 28, 0x0001));
  ASSERT_TRUE(d.has_value()) << d.error().detail;
  EXPECT_TRUE(std::get<PacketIn>(d->body).match.fields.empty());
  // ... but their lengths are still checked.
  Bytes b = with16("packet_in", 28, 0x0001);
  b[31] = 9;
  expect_error(b, Errc::kTruncated, err::kBadMatch, err::kBmcBadLen);
}
TEST(OfpLengthRules, OxmDuplicateField) {
  FlowMod f;
  f.match.set(OxmField::kInPort, 1).set(OxmField::kInPort, 2);
  expect_error(encode_ok({1, f}), Errc::kBadMatch, err::kBadMatch, err::kBmcDupField);
}

// ---- instructions (7.2.4); in "flow_mod" apply_actions is at 88 (len at 90) ----
TEST(OfpLengthRules, InstructionLengthMultipleOfEight) {
  expect_error(with16("flow_mod", 90, 20), Errc::kBadLength, err::kBadInstruction, err::kBicBadLen);
  expect_error(with16("flow_mod", 90, 4), Errc::kBadLength, err::kBadInstruction, err::kBicBadLen);
}
TEST(OfpLengthRules, InstructionWithinMessage) {
  expect_error(with16("flow_mod", 90, 32), Errc::kTruncated, err::kBadInstruction, err::kBicBadLen);
  expect_error(shorter("flow_mod", 22), Errc::kTruncated, err::kBadInstruction, err::kBicBadLen);
}
TEST(OfpLengthRules, FixedInstructionLengthExact) {
  expect_error(with16("flow_mod", 88, 1), Errc::kBadLength, err::kBadInstruction, err::kBicBadLen);  // goto, len 24
}
TEST(OfpLengthRules, UnknownInstruction) {
  expect_error(with16("flow_mod", 88, 2), Errc::kBadInstruction, err::kBadInstruction, err::kBicUnknownInst);
}

// ---- actions (7.2.5); in "flow_mod" the output action is at 96 (len at 98) ----
TEST(OfpLengthRules, ActionLengthMultipleOfEightAndAtLeastEight) {
  expect_error(with16("flow_mod", 98, 0), Errc::kBadLength, err::kBadAction, err::kBacBadLen);
  expect_error(with16("flow_mod", 98, 12), Errc::kBadLength, err::kBadAction, err::kBacBadLen);
}
TEST(OfpLengthRules, ActionWithinList) {
  expect_error(with16("flow_mod", 98, 24), Errc::kTruncated, err::kBadAction, err::kBacBadLen);
}
TEST(OfpLengthRules, FixedActionLengthExact) {
  expect_error(with16("flow_mod", 98, 8), Errc::kBadLength, err::kBadAction, err::kBacBadLen);
}
TEST(OfpLengthRules, UnknownAction) {
  expect_error(with16("flow_mod", 96, 11), Errc::kBadAction, err::kBadAction, err::kBacBadType);
}
// PACKET_OUT with one set_field(vlan_vid=0x1014) action.
constexpr std::string_view kSetFieldOut = "040d0028 00000001 ffffffff fffffffd 0010 000000000000 0019 0010 80000c02 1014 000000000000";
TEST(OfpLengthRules, SetFieldWellFormed) {
  auto d = decode(from_hex(kSetFieldOut));
  ASSERT_TRUE(d.has_value()) << d.error().detail;
  const auto& a = std::get<PacketOut>(d->body).actions;
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(std::get<ActionSetField>(a[0]).field, oxm(OxmField::kVlanVid, 0x1014));
}
TEST(OfpLengthRules, SetFieldOxmLength) {
  Bytes b = from_hex(kSetFieldOut);
  b[31] = 4;
  expect_error(b, Errc::kBadLength, err::kBadAction, err::kBacBadSetLen);
}
TEST(OfpLengthRules, SetFieldActionLength) {
  Bytes b = from_hex("040d0030 00000001 ffffffff fffffffd 0018 000000000000 0019 0018 80000c02 1014 000000000000 0000000000000000");
  expect_error(b, Errc::kBadLength, err::kBadAction, err::kBacBadSetLen);
}
TEST(OfpLengthRules, SetFieldMaskedOrUnknown) {
  Bytes b = from_hex(kSetFieldOut);
  b[30] = 0x0d;
  expect_error(b, Errc::kBadAction, err::kBadAction, err::kBacBadSetArgument);
  b[30] = 26 << 1;
  expect_error(b, Errc::kBadAction, err::kBadAction, err::kBacBadSetType);
}

// ---- PACKET_OUT (7.3.7): actions_len at 16 ----
TEST(OfpLengthRules, PacketOutActionsLenWithinMessage) {
  expect_bad_len(with16("packet_out", 16, 0x1000), Errc::kTruncated);
}
TEST(OfpLengthRules, PacketOutActionsLenMultipleOfEight) { expect_bad_len(with16("packet_out", 16, 12)); }
TEST(OfpLengthRules, PacketOutFixedPart) { expect_bad_len(fix_len(from_hex("040d000000000001ffffffff")), Errc::kTruncated); }

// ---- PACKET_IN (7.4.1), FLOW_REMOVED (7.4.2), FLOW_MOD (7.3.4.1) ----
TEST(OfpLengthRules, PacketInFixedPart) { expect_bad_len(shorter("packet_in", 84 - 18), Errc::kTruncated); }
TEST(OfpLengthRules, PacketInPadAfterMatch) { expect_bad_len(shorter("packet_in", 84 - 40), Errc::kTruncated); }
TEST(OfpLengthRules, FlowRemovedEndsAfterMatch) { expect_bad_len(longer("flow_removed", 8)); }
TEST(OfpLengthRules, FlowModFixedPart) { expect_bad_len(shorter("flow_mod", 112 - 40), Errc::kTruncated); }
TEST(OfpLengthRules, FlowModCommand) {
  expect_error(with8("flow_mod", 25, 9), Errc::kBadValue, err::kFlowModFailed, err::kFmfcBadCommand);
}

// ---- GROUP_MOD buckets (7.3.4.2): first bucket length at 16 ----
TEST(OfpLengthRules, BucketLengthAtLeastSixteenAndMultipleOfEight) {
  expect_bad_len(with16("group_mod", 16, 8));
  expect_bad_len(with16("group_mod", 16, 0x1c));
}
TEST(OfpLengthRules, BucketWithinMessage) { expect_bad_len(with16("group_mod", 16, 0x80), Errc::kTruncated); }
TEST(OfpLengthRules, BucketActionsFillBucket) {
  expect_error(with16("group_mod", 16, 0x18), Errc::kTruncated, err::kBadAction, err::kBacBadLen);
}
TEST(OfpLengthRules, GroupModFixedPart) { expect_bad_len(shorter("group_mod", 80 - 12), Errc::kTruncated); }

// ---- METER_MOD bands (7.3.4.5): first band type at 16, length at 18 ----
TEST(OfpLengthRules, BandLength) {
  expect_bad_len(with16("meter_mod", 18, 8));
  expect_bad_len(with16("meter_mod", 18, 24));  // DROP is exactly 16
}
TEST(OfpLengthRules, BandWithinMessage) { expect_bad_len(with16("meter_mod", 18, 0x40), Errc::kTruncated); }
TEST(OfpLengthRules, BandType) {
  expect_error(with16("meter_mod", 16, 3), Errc::kBadValue, err::kMeterModFailed, err::kMmfcBadBand);
}

// ---- multipart (7.3.5): type at 8, first element at 16 ----
TEST(OfpLengthRules, MultipartUnknownType) {
  expect_error(with16("mp_desc_request", 8, 5), Errc::kBadMultipart, err::kBadRequest, err::kBrcBadMultipart);
  expect_error(with16("mp_table_reply", 8, 12), Errc::kBadMultipart, err::kBadRequest, err::kBrcBadMultipart);
}
TEST(OfpLengthRules, MultipartHeader) { expect_bad_len(shorter("mp_desc_request", 4), Errc::kTruncated); }
TEST(OfpLengthRules, MultipartRequestBodies) {
  expect_bad_len(longer("mp_desc_request", 8));
  expect_bad_len(shorter("mp_port_stats_request", 4), Errc::kTruncated);
  expect_bad_len(longer("mp_meter_request", 8));
  expect_bad_len(longer("mp_flow_request", 8));
  expect_bad_len(shorter("mp_aggregate_request", 64 - 40), Errc::kTruncated);
}
TEST(OfpLengthRules, DescReplyIsExact) {
  expect_bad_len(shorter("mp_desc_reply", 8), Errc::kTruncated);
  expect_bad_len(longer("mp_desc_reply", 8));
}
TEST(OfpLengthRules, FlowStatsEntryLength) {
  expect_bad_len(with16("mp_flow_reply", 16, 48));
  expect_bad_len(with16("mp_flow_reply", 16, 92));
  expect_bad_len(with16("mp_flow_reply", 16, 0x1000), Errc::kTruncated);
}
TEST(OfpLengthRules, FixedElementReplies) {
  expect_bad_len(shorter("mp_aggregate_reply", 8), Errc::kTruncated);
  expect_bad_len(shorter("mp_table_reply", 8));
  expect_bad_len(shorter("mp_port_stats_reply", 8));
  expect_bad_len(shorter("mp_port_desc_reply", 8));
}
TEST(OfpLengthRules, GroupDescEntryLength) {
  expect_bad_len(with16("mp_group_desc_reply", 16, 4));
  expect_bad_len(with16("mp_group_desc_reply", 16, 0x100), Errc::kTruncated);
}
TEST(OfpLengthRules, MeterStatsEntryLength) {
  expect_bad_len(with16("mp_meter_reply", 20, 48));
  expect_bad_len(with16("mp_meter_reply", 20, 32));
  expect_bad_len(with16("mp_meter_reply", 20, 72), Errc::kTruncated);
}

// ---- port name NUL handling (7.2.1); name at 32..47 of "port_status" ----
TEST(OfpLengthRules, PortNameWithoutNulIsCutAt15) {
  Bytes b = golden_bytes("port_status");
  for (size_t i = 32; i < 48; ++i) b[i] = 'a';
  auto d = decode(b);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(std::get<PortStatus>(d->body).desc.name, std::string(15, 'a'));
}
TEST(OfpLengthRules, PortNameStopsAtFirstNul) {
  Bytes b = golden_bytes("port_status");
  b[34] = 0;
  b[35] = 'x';
  auto d = decode(b);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(std::get<PortStatus>(d->body).desc.name, "et");
}
TEST(OfpLengthRules, PortNameEncodeLimits) {
  Bytes out{1, 2, 3};
  PortStatus s;
  s.desc.name = std::string(16, 'a');
  auto r = encode(0, s, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::kBadValue);
  s.desc.name = std::string("a\0b", 3);
  EXPECT_FALSE(encode(0, s, out).has_value());
  EXPECT_EQ(out, (Bytes{1, 2, 3}));
  s.desc.name = std::string(15, 'a');
  EXPECT_TRUE(encode(0, s, out).has_value());
}

}  // namespace
}  // namespace sdn::ofp::test
