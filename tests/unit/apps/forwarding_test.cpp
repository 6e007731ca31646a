// Forwarding app against fake switches with a manual clock: the assertions are about the
// resulting flow tables and where frames end up, not about the message sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "apps/forwarding/forwarding.hpp"
#include "core/config.hpp"
#include "fakes/fake_network.hpp"
#include "fakes/fake_switch.hpp"
#include "pkt/build.hpp"

namespace sdn::apps {
namespace {

using pkt::Bytes;
using pkt::Mac;
using test::FakeNetwork;
using test::FakeSwitch;
using OF = ofp::OxmField;
using std::chrono::seconds;

constexpr Mac kM1{0x000000000001ULL}, kM2{0x000000000002ULL}, kM3{0x000000000003ULL};
constexpr pkt::Ipv4Addr kIp1 = pkt::ipv4(10, 0, 0, 1), kIp2 = pkt::ipv4(10, 0, 0, 2), kIp3 = pkt::ipv4(10, 0, 0, 3);

Bytes ping(Mac sm, pkt::Ipv4Addr si, Mac dm, pkt::Ipv4Addr di, bool reply = false, uint16_t seq = 1) {
  return pkt::icmp_echo(sm, dm, si, di, reply, 0x77, seq);
}

// Every flow the app installed must not send a frame back where it came from.
void expect_no_flow_out_in_port(const FakeSwitch& sw) {
  for (const auto& e : sw.flows()) {
    auto in = e.match.get(OF::kInPort);
    for (uint32_t p : e.output_ports()) EXPECT_FALSE(in && *in == p) << "flow outputs to its in_port " << p;
  }
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// ARP request/reply then a ping each way, as two hosts do when they first talk.
void arp_and_ping(FakeNetwork& net) {
  EXPECT_EQ(net.send("h1", pkt::arp_request(kM1, kIp1, kIp2)).received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(net.send("h2", pkt::arp_reply(kM2, kIp2, kM1, kIp1)).received_by, (std::vector<std::string>{"h1"}));
  EXPECT_EQ(net.send("h1", ping(kM1, kIp1, kM2, kIp2)).received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(net.send("h2", ping(kM2, kIp2, kM1, kIp1, true)).received_by, (std::vector<std::string>{"h1"}));
}

class OneSwitch : public ::testing::Test {
 protected:
  explicit OneSwitch(ForwardingConfig cfg = {}) : app_(cfg), net_(app_) {
    net_.add_switch(1);
    net_.attach("h1", 1, 1);
    net_.attach("h2", 1, 2);
  }
  FakeSwitch& s1() { return net_.sw(1); }
  Forwarding app_;
  FakeNetwork net_;
};

TEST_F(OneSwitch, ArpAndPingThenTheTableForwardsBothWaysWithoutTheController) {
  arp_and_ping(net_);
  const ForwardingCounters before = app_.counters();
  EXPECT_EQ(before.packet_ins, 4u);

  auto d12 = net_.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 2));
  auto d21 = net_.send("h2", ping(kM2, kIp2, kM1, kIp1, true, 2));
  EXPECT_EQ(d12.received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(d21.received_by, (std::vector<std::string>{"h1"}));
  EXPECT_EQ(d12.packet_ins + d21.packet_ins, 0u);
  EXPECT_EQ(app_.counters().packet_ins, before.packet_ins);

  // The table, read directly: ICMP h1->h2 in port 1 goes out 2, and back.
  auto a = s1().lookup_actions(ping(kM1, kIp1, kM2, kIp2), 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (ofp::ActionList{ofp::ActionOutput{2}}));
  auto b = s1().lookup_actions(ping(kM2, kIp2, kM1, kIp1, true), 2);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, (ofp::ActionList{ofp::ActionOutput{1}}));
  // The same addresses from another port are not covered (exact in_port).
  EXPECT_FALSE(s1().lookup_actions(ping(kM1, kIp1, kM2, kIp2), 3));
  expect_no_flow_out_in_port(s1());
  EXPECT_TRUE(s1().errors().empty()) << s1().errors().front();
}

TEST_F(OneSwitch, FlowsAreExactMatchWithConfiguredTimeoutsCookieAndFlags) {
  arp_and_ping(net_);
  // ARP reply h2->h1, ping h1->h2, reply h2->h1 installed flows; the ARP request flooded.
  ASSERT_EQ(s1().flows().size(), 3u);
  EXPECT_EQ(app_.counters().flows_installed, 3u);
  for (const auto& e : s1().flows()) {
    EXPECT_EQ(e.cookie, kForwardingCookie);
    EXPECT_EQ(e.priority, 10);
    EXPECT_EQ(e.table_id, 0);
    EXPECT_EQ(e.idle_timeout, 30);
    EXPECT_EQ(e.hard_timeout, 0);
    EXPECT_EQ(e.flags, ofp::kFlowFlagSendFlowRem);
  }
  const auto ipv4_flow = std::find_if(s1().flows().begin(), s1().flows().end(),
                                      [](const auto& e) { return e.match.get(OF::kEthType) == 0x0800u; });
  ASSERT_NE(ipv4_flow, s1().flows().end());
  ofp::Match want;
  want.set(OF::kInPort, 1).set(OF::kEthType, 0x0800).set(OF::kEthSrc, kM1.value).set(OF::kEthDst, kM2.value);
  want.set(OF::kIpv4Src, kIp1.value).set(OF::kIpv4Dst, kIp2.value);
  EXPECT_EQ(ipv4_flow->match, want);

  const auto arp_flow = std::find_if(s1().flows().begin(), s1().flows().end(),
                                     [](const auto& e) { return e.match.get(OF::kEthType) == 0x0806u; });
  ASSERT_NE(arp_flow, s1().flows().end());
  ofp::Match want_arp;
  want_arp.set(OF::kInPort, 2).set(OF::kEthType, 0x0806).set(OF::kEthSrc, kM2.value).set(OF::kEthDst, kM1.value);
  EXPECT_EQ(arp_flow->match, want_arp);
}

TEST_F(OneSwitch, FirstPacketIsPacketOutWithItsDataWhenUnbuffered) {
  net_.send("h1", pkt::arp_request(kM1, kIp1, kIp2));
  net_.send("h2", pkt::arp_reply(kM2, kIp2, kM1, kIp1));
  s1().clear_records();
  const Bytes first = ping(kM1, kIp1, kM2, kIp2);
  auto d = net_.send("h1", first);
  EXPECT_EQ(d.packet_ins, 1u);
  EXPECT_EQ(d.received_by, (std::vector<std::string>{"h2"}));
  ASSERT_EQ(s1().sent_count<ofp::PacketOut>(), 1u);
  for (const auto& b : s1().sent()) {
    if (const auto* fm = std::get_if<ofp::FlowMod>(&b)) {
      EXPECT_EQ(fm->buffer_id, ofp::kNoBuffer);
    }
    if (const auto* po = std::get_if<ofp::PacketOut>(&b)) {
      EXPECT_EQ(po->buffer_id, ofp::kNoBuffer);
      EXPECT_EQ(po->in_port, 1u);
      EXPECT_EQ(Bytes(po->data.begin(), po->data.end()), first);
      EXPECT_EQ(po->actions, (ofp::ActionList{ofp::ActionOutput{2}}));
    }
  }
  ASSERT_EQ(s1().outputs().size(), 1u);
  EXPECT_EQ(s1().outputs()[0].port, 2u);
  EXPECT_EQ(s1().outputs()[0].frame, first);
}

TEST_F(OneSwitch, BufferedFirstPacketIsReleasedByTheFlowModItself) {
  s1().set_buffering(true);
  arp_and_ping(net_);  // every first packet still arrives
  EXPECT_TRUE(s1().errors().empty()) << s1().errors().front();
  s1().clear_records();
  net_.advance(seconds(31));  // flows idle out
  auto d = net_.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 9));
  EXPECT_EQ(d.packet_ins, 1u);
  EXPECT_EQ(d.received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(s1().sent_count<ofp::PacketOut>(), 0u);  // the FlowMod carried the buffer_id
  ASSERT_EQ(s1().sent_count<ofp::FlowMod>(), 1u);
  EXPECT_NE(std::get<ofp::FlowMod>(s1().sent()[0]).buffer_id, ofp::kNoBuffer);
  EXPECT_TRUE(s1().errors().empty()) << s1().errors().front();
}

TEST_F(OneSwitch, BroadcastAndMulticastFloodAndInstallNothing) {
  net_.attach("h3", 1, 3);
  for (int i = 0; i < 2; ++i) {
    auto d = net_.send("h1", pkt::arp_request(kM1, kIp1, kIp3));
    EXPECT_EQ(sorted(d.received_by), (std::vector<std::string>{"h2", "h3"}));
    EXPECT_EQ(d.packet_ins, 1u);  // no flow for broadcast: every one comes to us
  }
  pkt::Ipv4Spec ip{kIp1, pkt::ipv4(224, 0, 0, 251)};
  auto d = net_.send("h1", pkt::build_udp(pkt::EthSpec{Mac{0x01005e0000fbULL}, kM1}, ip, 5353, 5353));
  EXPECT_EQ(sorted(d.received_by), (std::vector<std::string>{"h2", "h3"}));
  EXPECT_TRUE(s1().flows().empty());
  EXPECT_EQ(app_.counters().floods, 3u);
  EXPECT_EQ(app_.counters().flows_installed, 0u);
}

TEST_F(OneSwitch, UnknownUnicastFloodsThenLearnsReply) {
  net_.attach("h3", 1, 3);
  auto d = net_.send("h1", ping(kM1, kIp1, kM2, kIp2));  // h2 not learned yet
  EXPECT_EQ(sorted(d.received_by), (std::vector<std::string>{"h2", "h3"}));
  EXPECT_EQ(app_.port_of(1, kM1), 1u);
  EXPECT_FALSE(app_.port_of(1, kM2));
}

TEST_F(OneSwitch, HostMoveUpdatesTableAndDeletesStaleFlows) {
  arp_and_ping(net_);
  net_.attach("h2", 1, 3);  // h2 unplugged from 2, plugged into 3
  // Gratuitous ARP from its new place.
  auto g = net_.send("h2", pkt::build_arp(pkt::EthSpec{Mac::broadcast(), kM2},
                                           pkt::Arp{pkt::kArpRequest, kM2, kIp2, Mac{}, kIp2}));
  EXPECT_EQ(g.received_by, (std::vector<std::string>{"h1"}));
  EXPECT_EQ(app_.counters().moves, 1u);
  EXPECT_EQ(app_.port_of(1, kM2), 3u);
  for (const auto& e : s1().flows()) {
    EXPECT_NE(e.match.get(OF::kEthDst), kM2.value) << "stale flow towards h2's old port";
    EXPECT_NE(e.match.get(OF::kEthSrc), kM2.value) << "stale flow from h2's old port";
  }
  // h1 reaches h2 at its new port; after one round trip it is table-only again.
  EXPECT_EQ(net_.send("h1", ping(kM1, kIp1, kM2, kIp2)).received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(net_.send("h2", ping(kM2, kIp2, kM1, kIp1, true)).received_by, (std::vector<std::string>{"h1"}));
  auto again = net_.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 3));
  EXPECT_EQ(again.packet_ins, 0u);
  EXPECT_EQ(*s1().lookup_actions(ping(kM1, kIp1, kM2, kIp2), 1), (ofp::ActionList{ofp::ActionOutput{3}}));
  expect_no_flow_out_in_port(s1());
}

TEST_F(OneSwitch, PortDownForgetsItsMacsAndDeletesTheirFlows) {
  arp_and_ping(net_);
  net_.attach("h3", 1, 3);
  net_.send("h3", pkt::arp_request(kM3, kIp3, kIp1));
  net_.send("h1", pkt::arp_reply(kM1, kIp1, kM3, kIp3));
  ASSERT_EQ(app_.port_of(1, kM2), 2u);
  const size_t flows_before = s1().flows().size();

  app_.on_port_status(s1(), s1().set_link_down(2));
  EXPECT_EQ(app_.counters().ports_down, 1u);
  EXPECT_FALSE(app_.port_of(1, kM2));
  EXPECT_EQ(app_.port_of(1, kM1), 1u);
  EXPECT_EQ(app_.port_of(1, kM3), 3u);
  for (const auto& e : s1().flows()) {
    EXPECT_NE(e.match.get(OF::kInPort), 2u);
    for (uint32_t p : e.output_ports()) EXPECT_NE(p, 2u);
  }
  EXPECT_LT(s1().flows().size(), flows_before);
  // The h1 <-> h3 flow survives.
  EXPECT_TRUE(s1().lookup_actions(pkt::arp_reply(kM1, kIp1, kM3, kIp3), 1));
  // Traffic to h2 is unknown again: flooded, not black-holed into a dead port.
  auto d = net_.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 5));
  EXPECT_EQ(d.packet_ins, 1u);
  EXPECT_EQ(app_.counters().floods, 3u);  // 2 ARP requests + this one
}

TEST_F(OneSwitch, PortDeletedAlsoCleansUp) {
  arp_and_ping(net_);
  ofp::PortStatus ps;
  ps.reason = 1;  // OFPPR_DELETE, state left "up"
  ps.desc.port_no = 1;
  app_.on_port_status(s1(), ps);
  EXPECT_FALSE(app_.port_of(1, kM1));
  for (const auto& e : s1().flows()) EXPECT_NE(e.match.get(OF::kInPort), 1u);
  // A port coming up (or any modify without link down) changes nothing.
  const size_t n = s1().flows().size();
  ofp::PortStatus up;
  up.reason = 2;
  up.desc.port_no = 2;
  app_.on_port_status(s1(), up);
  EXPECT_EQ(s1().flows().size(), n);
  EXPECT_EQ(app_.port_of(1, kM2), 2u);
}

TEST_F(OneSwitch, NeverInstallsAFlowOutTheInPort) {
  // h1 and h2 behind the same port (a hub on port 1).
  net_.attach("h2", 1, 1);
  FakeSwitch& s = s1();
  const Bytes from_h2 = pkt::arp_request(kM2, kIp2, kIp1);
  app_.on_packet_in(s, s.packet_in(from_h2, 1), s.now());
  ASSERT_EQ(app_.port_of(1, kM2), 1u);
  s.clear_records();
  const Bytes to_h2 = ping(kM1, kIp1, kM2, kIp2);
  app_.on_packet_in(s, s.packet_in(to_h2, 1), s.now());
  EXPECT_EQ(app_.counters().drops, 1u);
  EXPECT_EQ(s.sent_count<ofp::FlowMod>(), 0u);
  EXPECT_TRUE(s.outputs().empty());
  EXPECT_TRUE(s.flows().empty());

  // Buffered: the buffer is released with an empty PacketOut (a drop), not left to age.
  s.set_buffering(true);
  app_.on_packet_in(s, s.packet_in(to_h2, 1), s.now());
  ASSERT_EQ(s.sent_count<ofp::PacketOut>(), 1u);
  EXPECT_TRUE(std::get<ofp::PacketOut>(s.sent().back()).actions.empty());
  EXPECT_TRUE(s.errors().empty());
}

TEST_F(OneSwitch, MalformedFramesAreCountedNotCrashed) {
  FakeSwitch& s = s1();
  s.clear_records();  // the on_switch_up cleanup
  const Bytes runt(10, 0xab);
  app_.on_packet_in(s, s.packet_in(runt, 1), s.now());
  Bytes bad_ihl = ping(kM1, kIp1, kM2, kIp2);
  bad_ihl[14] = 0x43;  // IHL 3
  app_.on_packet_in(s, s.packet_in(bad_ihl, 1), s.now());
  const Bytes empty;
  app_.on_packet_in(s, s.packet_in(empty, 1), s.now());
  EXPECT_EQ(app_.counters().parse_errors, 3u);
  EXPECT_EQ(app_.counters().learned, 0u);
  EXPECT_TRUE(s.sent().empty());
  // A PacketIn without an in_port (0) is dropped too.
  ofp::PacketIn no_port;
  const Bytes f = ping(kM1, kIp1, kM2, kIp2);
  no_port.data = f;
  app_.on_packet_in(s, no_port, s.now());
  EXPECT_EQ(app_.counters().drops, 1u);
  EXPECT_EQ(app_.counters().packet_ins, 4u);
}

TEST_F(OneSwitch, TruncatedPacketInStillForwards) {
  // A switch that cut the data at max_len 40: total_len says how long the frame really is.
  net_.send("h2", pkt::arp_request(kM2, kIp2, kIp1));
  std::string big(500, 'x');
  const Bytes frame = pkt::build_udp(pkt::EthSpec{kM2, kM1}, pkt::Ipv4Spec{kIp1, kIp2}, 1, 2,
                                     pkt::ByteView(reinterpret_cast<const uint8_t*>(big.data()), big.size()));
  FakeSwitch& s = s1();
  s.set_buffering(true);
  ofp::PacketIn pin = s.packet_in(frame, 1);
  pin.data = pin.data.first(40);
  app_.on_packet_in(s, pin, s.now());
  EXPECT_EQ(app_.counters().parse_errors, 0u);
  EXPECT_EQ(app_.counters().flows_installed, 1u);
  ASSERT_FALSE(s.outputs().empty());
  EXPECT_EQ(s.outputs().back().port, 2u);
  EXPECT_EQ(s.outputs().back().frame, frame);  // the whole buffered frame left
}

TEST_F(OneSwitch, LldpAndLinkLocalAreIgnored) {
  const Bytes probe = pkt::lldp_probe(7, 3, Mac{0x020000000007ULL});
  auto d = net_.send("h1", probe);
  EXPECT_TRUE(d.received_by.empty());
  EXPECT_EQ(app_.counters().ignored, 1u);
  EXPECT_EQ(app_.counters().learned, 0u);  // nor learned from
  EXPECT_TRUE(s1().flows().empty());
}

TEST_F(OneSwitch, IdleFlowsExpireAndTheControllerSeesTrafficAgain) {
  arp_and_ping(net_);
  net_.advance(seconds(29));
  net_.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 2));  // keeps h1->h2 alive
  net_.advance(seconds(2));                               // others are now 31 s idle
  EXPECT_EQ(s1().flows().size(), 1u);
  for (const auto& fr : s1().removed()) {
    EXPECT_EQ(fr.reason, 0);  // idle timeout
    app_.on_flow_removed(s1(), fr);
  }
  EXPECT_EQ(app_.counters().flows_removed, 2u);
  net_.advance(seconds(30));
  EXPECT_TRUE(s1().flows().empty());
  auto d = net_.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 3));
  EXPECT_EQ(d.packet_ins, 1u);  // MACs are still known: installed again straight away
  EXPECT_EQ(d.received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(s1().flows().size(), 1u);
}

TEST_F(OneSwitch, VlanTaggedTrafficGetsVlanInTheMatch) {
  const Bytes req = pkt::build_arp(pkt::EthSpec{Mac::broadcast(), kM1}.vlan(100),
                                   pkt::Arp{pkt::kArpRequest, kM1, kIp1, Mac{}, kIp2});
  net_.send("h1", req);
  const Bytes rep = pkt::build_arp(pkt::EthSpec{kM1, kM2}.vlan(100), pkt::Arp{pkt::kArpReply, kM2, kIp2, kM1, kIp1});
  net_.send("h2", rep);
  ASSERT_EQ(s1().flows().size(), 1u);
  EXPECT_EQ(s1().flows()[0].match.get(OF::kVlanVid), 100u | ofp::kOfpVidPresent);
  EXPECT_TRUE(s1().lookup_actions(rep, 2));
  // The same MACs untagged, or in another VLAN, are not covered by that flow.
  EXPECT_FALSE(s1().lookup_actions(pkt::arp_reply(kM2, kIp2, kM1, kIp1), 2));
  const Bytes other = pkt::build_arp(pkt::EthSpec{kM1, kM2}.vlan(200), pkt::Arp{pkt::kArpReply, kM2, kIp2, kM1, kIp1});
  EXPECT_FALSE(s1().lookup_actions(other, 2));
}

TEST(Forwarding, MacCapStopsLearningAndCounts) {
  ForwardingConfig cfg;
  cfg.max_macs_per_switch = 2;
  Forwarding app(cfg);
  FakeSwitch s(1);
  app.on_switch_up(s);
  const Mac macs[] = {kM1, kM2, kM3};
  for (uint32_t i = 0; i < 3; ++i) {
    const Bytes f = pkt::arp_request(macs[i], pkt::ipv4(10, 0, 0, static_cast<uint8_t>(i + 1)), kIp1);
    app.on_packet_in(s, s.packet_in(f, i + 1), s.now());
  }
  EXPECT_EQ(app.mac_count(1), 2u);
  EXPECT_EQ(app.counters().learned, 2u);
  EXPECT_EQ(app.counters().mac_cap_exceeded, 1u);
  EXPECT_FALSE(app.port_of(1, kM3));
  // Traffic to the unlearned host still gets through, by flooding.
  s.clear_records();
  const Bytes to3 = ping(kM1, kIp1, kM3, kIp3);
  app.on_packet_in(s, s.packet_in(to3, 1), s.now());
  EXPECT_EQ(app.counters().floods, 4u);
  EXPECT_EQ(s.outputs().size(), 3u);  // ports 2, 3, 4
  // Known MACs keep working: a move of a known MAC is not blocked by the cap.
  const Bytes moved = pkt::arp_request(kM2, kIp2, kIp1);
  app.on_packet_in(s, s.packet_in(moved, 4), s.now());
  EXPECT_EQ(app.port_of(1, kM2), 4u);
}

TEST(Forwarding, UnknownUnicastDroppedWhenFloodingIsOff) {
  ForwardingConfig cfg;
  cfg.flood_unknown = false;
  Forwarding app(cfg);
  FakeSwitch s(1);
  const Bytes f = ping(kM1, kIp1, kM2, kIp2);
  app.on_packet_in(s, s.packet_in(f, 1), s.now());
  EXPECT_EQ(app.counters().drops, 1u);
  EXPECT_EQ(app.counters().floods, 0u);
  EXPECT_TRUE(s.outputs().empty());
  // Broadcast still floods: ARP must work.
  const Bytes b = pkt::arp_request(kM1, kIp1, kIp2);
  app.on_packet_in(s, s.packet_in(b, 1), s.now());
  EXPECT_EQ(app.counters().floods, 1u);
}

TEST(Forwarding, TwoSwitchesInALineForwardEndToEnd) {
  Forwarding app;
  FakeNetwork net(app);
  net.add_switch(1);
  net.add_switch(2);
  net.link(1, 4, 2, 4);
  net.attach("h1", 1, 1);
  net.attach("h2", 2, 1);
  net.attach("h3", 2, 2);
  EXPECT_EQ(sorted(net.send("h1", pkt::arp_request(kM1, kIp1, kIp2)).received_by),
            (std::vector<std::string>{"h2", "h3"}));
  EXPECT_EQ(net.send("h2", pkt::arp_reply(kM2, kIp2, kM1, kIp1)).received_by, (std::vector<std::string>{"h1"}));
  EXPECT_EQ(net.send("h1", ping(kM1, kIp1, kM2, kIp2)).received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(net.send("h2", ping(kM2, kIp2, kM1, kIp1, true)).received_by, (std::vector<std::string>{"h1"}));
  auto d = net.send("h1", ping(kM1, kIp1, kM2, kIp2, false, 2));
  auto e = net.send("h2", ping(kM2, kIp2, kM1, kIp1, true, 2));
  EXPECT_EQ(d.received_by, (std::vector<std::string>{"h2"}));
  EXPECT_EQ(e.received_by, (std::vector<std::string>{"h1"}));
  EXPECT_EQ(d.packet_ins + e.packet_ins, 0u);
  EXPECT_EQ(app.port_of(1, kM2), 4u);
  EXPECT_EQ(app.port_of(2, kM1), 4u);
  expect_no_flow_out_in_port(net.sw(1));
  expect_no_flow_out_in_port(net.sw(2));
}

TEST(Forwarding, SwitchUpClearsOnlyOurCookieRangeAndSwitchDownForgets) {
  Forwarding app;
  FakeSwitch s(9);
  ofp::FlowMod foreign;  // e.g. the runtime's table-miss, cookie 0
  foreign.priority = 0;
  ofp::InstrApplyActions to_ctrl;
  to_ctrl.actions.push_back(ofp::ActionOutput{ofp::port::kController});
  foreign.instructions.push_back(to_ctrl);
  s.send(foreign);
  ofp::FlowMod stale = foreign;  // left over from a previous session of ours
  stale.cookie = kForwardingCookie | 42;
  stale.priority = 10;
  stale.match.set(OF::kEthDst, kM2.value);
  s.send(stale);
  ASSERT_EQ(s.flows().size(), 2u);

  app.on_switch_up(s);
  ASSERT_EQ(s.flows().size(), 1u);
  EXPECT_EQ(s.flows()[0].cookie, 0u);

  const Bytes f = pkt::arp_request(kM1, kIp1, kIp2);
  app.on_packet_in(s, s.packet_in(f, 1), s.now());
  EXPECT_EQ(app.mac_count(9), 1u);
  app.on_switch_down(9);
  EXPECT_EQ(app.mac_count(9), 0u);
  EXPECT_EQ(app.switch_count(), 0u);
}

TEST(Forwarding, FactoryMakesIndependentInstances) {
  auto factory = Forwarding::factory(ForwardingConfig{});
  auto a = factory(0);
  auto b = factory(1);
  EXPECT_EQ(a->name(), "forwarding");
  FakeSwitch s(1);
  const Bytes f = pkt::arp_request(kM1, kIp1, kIp2);
  a->on_packet_in(s, s.packet_in(f, 1), s.now());
  EXPECT_EQ(static_cast<Forwarding&>(*a).mac_count(1), 1u);
  EXPECT_EQ(static_cast<Forwarding&>(*b).mac_count(1), 0u);
}

TEST(Forwarding, ReadsConfigSection) {
  auto cfg = core::Config::parse(R"(
[forwarding]
idle_timeout = 60
hard_timeout = 600
priority = 20
cookie = 0x0100000000000007
table = 2
flood_unknown = false
max_macs_per_switch = 500
clear_flows_on_connect = false
)");
  ASSERT_TRUE(cfg) << cfg.error();
  ForwardingConfig c = read_forwarding_config(*cfg);
  EXPECT_EQ(c.idle_timeout, seconds(60));
  EXPECT_EQ(c.hard_timeout, seconds(600));
  EXPECT_EQ(c.priority, 20);
  EXPECT_EQ(c.cookie, 0x0100000000000007ULL);
  EXPECT_EQ(c.table_id, 2);
  EXPECT_FALSE(c.flood_unknown);
  EXPECT_EQ(c.max_macs_per_switch, 500u);
  EXPECT_FALSE(c.clear_flows_on_connect);
  EXPECT_TRUE(cfg->finish().empty());

  auto bad = core::Config::parse("[forwarding]\ncookie = 0x0200000000000000\nidle_timeout = 70000\nfoo = 1\n");
  ASSERT_TRUE(bad);
  ForwardingConfig d = read_forwarding_config(*bad);
  EXPECT_EQ(d.cookie, kForwardingCookie);  // rejected value leaves the default
  EXPECT_GE(bad->finish().size(), 3u);      // cookie range, idle_timeout range, unknown key
}

}  // namespace
}  // namespace sdn::apps
