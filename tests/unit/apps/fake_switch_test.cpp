// The fake flow table follows OpenFlow 1.3 semantics closely enough to judge apps by it.
#include <gtest/gtest.h>

#include "fakes/fake_switch.hpp"
#include "pkt/build.hpp"

namespace sdn::test {
namespace {

using OF = ofp::OxmField;
using pkt::Bytes;
constexpr pkt::Mac kA{0xa}, kB{0xb};

ofp::FlowMod add(uint16_t prio, ofp::Match m, uint32_t out, uint64_t cookie = 0) {
  ofp::FlowMod fm;
  fm.priority = prio;
  fm.match = std::move(m);
  fm.cookie = cookie;
  ofp::InstrApplyActions a;
  a.actions.push_back(ofp::ActionOutput{out});
  fm.instructions.push_back(a);
  return fm;
}

ofp::FlowMod del(ofp::Match m, ofp::FlowModCommand c = ofp::FlowModCommand::kDelete) {
  ofp::FlowMod fm;
  fm.command = c;
  fm.match = std::move(m);
  return fm;
}

ofp::Match dst(pkt::Mac m) { return ofp::Match{}.set(OF::kEthDst, m.value); }

const Bytes kAtoB = pkt::icmp_echo(kA, kB, pkt::ipv4(1, 1, 1, 1), pkt::ipv4(2, 2, 2, 2), false, 1, 1);

TEST(FakeSwitch, HighestPriorityWins) {
  FakeSwitch s(1);
  s.send(add(5, dst(kB), 2));
  s.send(add(7, ofp::Match{}.set(OF::kInPort, 1).set(OF::kEthDst, kB.value), 3));
  s.send(add(1, ofp::Match{}, 4));
  EXPECT_EQ(s.lookup(kAtoB, 1)->priority, 7);
  EXPECT_EQ(s.lookup(kAtoB, 2)->priority, 5);
  EXPECT_EQ(s.lookup(pkt::arp_request(kB, pkt::ipv4(1, 1, 1, 1), pkt::ipv4(2, 2, 2, 2)), 2)->priority, 1);
}

TEST(FakeSwitch, AddWithSameMatchAndPriorityReplaces) {
  FakeSwitch s(1);
  s.send(add(5, dst(kB), 2));
  s.send(add(5, dst(kB), 3));
  s.send(add(6, dst(kB), 4));
  EXPECT_EQ(s.flows().size(), 2u);
}

TEST(FakeSwitch, NonStrictDeleteTakesMoreSpecificEntries) {
  FakeSwitch s(1);
  s.send(add(5, dst(kB), 2));
  s.send(add(5, ofp::Match{}.set(OF::kInPort, 1).set(OF::kEthDst, kB.value), 2));
  s.send(add(5, dst(kA), 1));
  s.send(del(dst(kB)));
  ASSERT_EQ(s.flows().size(), 1u);
  EXPECT_EQ(s.flows()[0].match.get(OF::kEthDst), kA.value);
  s.send(del(ofp::Match{}));  // empty match: everything
  EXPECT_TRUE(s.flows().empty());
}

TEST(FakeSwitch, StrictDeleteNeedsIdenticalMatchAndPriority) {
  FakeSwitch s(1);
  s.send(add(5, ofp::Match{}.set(OF::kInPort, 1).set(OF::kEthDst, kB.value), 2));
  auto d = del(dst(kB), ofp::FlowModCommand::kDeleteStrict);
  d.priority = 5;
  s.send(d);
  EXPECT_EQ(s.flows().size(), 1u);
  d.match = ofp::Match{}.set(OF::kEthDst, kB.value).set(OF::kInPort, 1);  // order does not matter
  d.priority = 4;
  s.send(d);
  EXPECT_EQ(s.flows().size(), 1u);
  d.priority = 5;
  s.send(d);
  EXPECT_TRUE(s.flows().empty());
}

TEST(FakeSwitch, DeleteFiltersByCookieMaskAndOutPort) {
  FakeSwitch s(1);
  s.send(add(5, dst(kB), 2, 0x0100000000000001ULL));
  s.send(add(5, dst(kA), 3, 0x0100000000000002ULL));
  s.send(add(6, dst(kA), 3, 0x0200000000000000ULL));
  ASSERT_EQ(s.flows().size(), 3u);
  auto d = del(ofp::Match{});
  d.cookie = 0x0100000000000000ULL;
  d.cookie_mask = 0xff00000000000000ULL;
  d.out_port = 3;
  s.send(d);
  ASSERT_EQ(s.flows().size(), 2u);  // only the 0x01.. entry with output 3
  d.out_port = ofp::port::kAny;
  s.send(d);
  ASSERT_EQ(s.flows().size(), 1u);
  EXPECT_EQ(s.flows()[0].cookie, 0x0200000000000000ULL);
}

TEST(FakeSwitch, ModifyChangesInstructionsOnly) {
  FakeSwitch s(1);
  s.send(add(5, dst(kB), 2));
  auto m = add(0, dst(kB), 4);
  m.command = ofp::FlowModCommand::kModify;
  s.send(m);
  ASSERT_EQ(s.flows().size(), 1u);
  EXPECT_EQ(s.flows()[0].output_ports(), (std::vector<uint32_t>{4}));
  EXPECT_EQ(s.flows()[0].priority, 5);
}

TEST(FakeSwitch, IdleAndHardTimeoutsOnTheManualClock) {
  FakeSwitch s(1);
  auto idle = add(5, dst(kB), 2);
  idle.idle_timeout = 10;
  idle.flags = ofp::kFlowFlagSendFlowRem;
  auto hard = add(5, dst(kA), 1);
  hard.hard_timeout = 15;
  s.send(idle);
  s.send(hard);
  s.advance(std::chrono::seconds(9));
  s.lookup(kAtoB, 1);  // refreshes the idle entry
  s.advance(std::chrono::seconds(5));
  EXPECT_EQ(s.flows().size(), 2u);
  s.advance(std::chrono::seconds(1));  // hard: 15 >= 15
  ASSERT_EQ(s.flows().size(), 1u);
  EXPECT_TRUE(s.removed().empty());  // no SEND_FLOW_REM on the hard one
  s.advance(std::chrono::seconds(3));
  EXPECT_EQ(s.flows().size(), 1u);
  s.advance(std::chrono::seconds(1));  // idle: 10 since last hit
  EXPECT_TRUE(s.flows().empty());
  ASSERT_EQ(s.removed().size(), 1u);
  EXPECT_EQ(s.removed()[0].reason, 0);
}

TEST(FakeSwitch, RejectsMissingPrerequisitesLikeASwitch) {
  FakeSwitch s(1);
  s.send(add(5, ofp::Match{}.set(OF::kIpv4Dst, 1), 2));
  EXPECT_TRUE(s.flows().empty());
  EXPECT_EQ(s.errors().size(), 1u);
}

TEST(FakeSwitch, PacketOutFloodsExceptInPortAndNeverBackOutInPort) {
  FakeSwitch s(1, {1, 2, 3});
  ofp::PacketOut po;
  po.in_port = 2;
  po.data = kAtoB;
  po.actions.push_back(ofp::ActionOutput{ofp::port::kFlood});
  s.send(po);
  ASSERT_EQ(s.outputs().size(), 2u);
  EXPECT_EQ(s.outputs()[0].port, 1u);
  EXPECT_EQ(s.outputs()[1].port, 3u);
  po.actions = {ofp::ActionOutput{2}};
  s.send(po);
  EXPECT_EQ(s.outputs().size(), 2u);
  EXPECT_EQ(s.errors().size(), 1u);
}

TEST(FakeSwitch, BufferedPacketReleasedByFlowModOrPacketOut) {
  FakeSwitch s(1);
  s.set_buffering(true);
  auto pin = s.packet_in(kAtoB, 1);
  ASSERT_NE(pin.buffer_id, ofp::kNoBuffer);
  auto fm = add(5, dst(kB), 2);
  fm.buffer_id = pin.buffer_id;
  s.send(fm);
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0].frame, kAtoB);
  s.send(fm);  // the buffer is gone
  EXPECT_EQ(s.errors().size(), 1u);
}

}  // namespace
}  // namespace sdn::test
