// Golden bytes both ways for the asynchronous messages (PACKET_IN, FLOW_REMOVED, PORT_STATUS)
// and the controller-to-switch mods (PACKET_OUT, FLOW_MOD, GROUP_MOD, METER_MOD).
#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

// The ARP request carried by the PACKET_IN / PACKET_OUT goldens.
const Bytes kFrame = from_hex(
    "ffffffffffff0011223344550806000108000604000100112233445"
    "50a0000010000000000000a000002");

Port eth1() {
  Port p;
  p.port_no = 1;
  p.hw_addr = 0x001122334455ULL;
  p.name = "eth1";
  p.curr = 0x802;
  p.curr_speed = 10000000;
  p.max_speed = 10000000;
  return p;
}

TEST(OfpGoldenAsync, PacketIn) {
  PacketIn p;
  p.buffer_id = kNoBuffer;
  p.total_len = 42;
  p.match.set(OxmField::kInPort, 1);
  p.data = kFrame;
  expect_golden("packet_in", {0, p});
  auto d = decode(golden_bytes("packet_in"));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(std::get<PacketIn>(d->body).in_port(), 1u);
  EXPECT_EQ(std::get<PacketIn>(d->body).data.size(), 42u);
}

TEST(OfpGoldenAsync, FlowRemoved) {
  FlowRemoved f;
  f.cookie = 0x1234;
  f.priority = 100;
  f.duration_sec = 10;
  f.duration_nsec = 500;
  f.idle_timeout = 60;
  f.packet_count = 5;
  f.byte_count = 420;
  f.match.set(OxmField::kEthType, 0x0800).set_masked(OxmField::kIpv4Src, 0x0a000000, 0xffffff00);
  expect_golden("flow_removed", {0, f});
}

TEST(OfpGoldenAsync, PortStatus) { expect_golden("port_status", {0, PortStatus{0, eth1()}}); }

TEST(OfpGoldenMods, PacketOut) {
  PacketOut p;
  p.actions.push_back(ActionOutput{2, 0xffff});
  p.data = kFrame;
  expect_golden("packet_out", {9, p});
}

TEST(OfpGoldenMods, FlowModTypical) {
  FlowMod f;
  f.priority = 100;
  f.flags = kFlowFlagSendFlowRem;
  f.match.set(OxmField::kInPort, 1)
      .set(OxmField::kEthType, 0x0800)
      .set(OxmField::kIpProto, 6)
      .set(OxmField::kIpv4Dst, 0x0a000001)
      .set(OxmField::kTcpDst, 80);
  f.instructions.push_back(InstrApplyActions{{ActionOutput{2, 0}}});
  expect_golden("flow_mod", {10, f});
}

TEST(OfpGoldenMods, FlowModEveryActionAndInstruction) {
  FlowMod f;
  f.cookie = 0xabcd;
  f.cookie_mask = 0xffff;
  f.table_id = 1;
  f.command = FlowModCommand::kModify;
  f.idle_timeout = 30;
  f.hard_timeout = 300;
  f.priority = 200;
  f.match.set_masked(OxmField::kEthDst, 0x0a0b0c0d0e00ULL, 0xffffffffff00ULL)
      .set_masked(OxmField::kVlanVid, kOfpVidPresent | 10, 0x1fff)
      .set(OxmField::kEthType, 0x0800);
  f.instructions.push_back(InstrMeter{3});
  f.instructions.push_back(InstrApplyActions{{ActionDecNwTtl{}, ActionPopVlan{}, ActionPushVlan{0x8100},
                                              ActionSetField{oxm(OxmField::kVlanVid, kOfpVidPresent | 20)},
                                              ActionSetField{oxm(OxmField::kEthDst, 0x020000000001ULL)},
                                              ActionGroup{7}}});
  f.instructions.push_back(InstrClearActions{});
  f.instructions.push_back(InstrWriteActions{{ActionOutput{port::kController, 128}}});
  f.instructions.push_back(InstrGotoTable{2});
  expect_golden("flow_mod_actions", {11, f});
}

TEST(OfpGoldenMods, GroupMod) {
  GroupMod g;
  g.type = 1;  // SELECT
  g.group_id = 1;
  g.buckets.push_back(Bucket{1, port::kAny, kGroupAny, {ActionOutput{1, 0xffff}}});
  g.buckets.push_back(Bucket{2, port::kAny, kGroupAny, {ActionOutput{2, 0xffff}}});
  expect_golden("group_mod", {12, g});
}

TEST(OfpGoldenMods, MeterMod) {
  MeterMod m;
  m.flags = 1 | 4;  // KBPS | BURST
  m.meter_id = 1;
  m.bands.push_back(MeterBand{1, 1000, 100, 0});
  m.bands.push_back(MeterBand{2, 2000, 200, 1});
  expect_golden("meter_mod", {13, m});
}

}  // namespace
}  // namespace sdn::ofp::test
