// TopologyCore on a manual clock: port roles, LLDP links, loss by PORT_STATUS and by timeout,
// host tracking and moves, and the records (wire.hpp) those changes become.
#include <gtest/gtest.h>

#include <algorithm>

#include "apps/forwarding/forwarding.hpp"
#include "apps/topology/topology.hpp"
#include "apps/topology/topology_core.hpp"
#include "core/config.hpp"
#include "apps/topology/view.hpp"
#include "apps/topology/wire.hpp"

namespace sdn::apps::topology {
namespace {

using std::chrono::milliseconds;
using apps::ForwardingConfig;
using apps::ForwardingMode;
using apps::read_forwarding_config;

ofp::Port port(uint32_t no, bool up = true) {
  ofp::Port p;
  p.port_no = no;
  p.hw_addr = 0x020000000000ULL | no;
  if (!up) p.state = ofp::kPortStateLinkDown;
  return p;
}

std::vector<ofp::Port> ports(std::initializer_list<uint32_t> nos) {
  std::vector<ofp::Port> v;
  for (uint32_t n : nos) v.push_back(port(n));
  v.push_back(port(ofp::port::kLocal));  // LOCAL is never part of the fabric
  return v;
}

class Core : public ::testing::Test {
 protected:
  Core() : core_(cfg()) {}
  static TopologyConfig cfg() {
    TopologyConfig c;
    c.lldp_interval = milliseconds(1000);
    c.link_timeout = milliseconds(3500);
    c.port_settle = milliseconds(2000);
    c.max_hosts = 3;
    return c;
  }
  // Moves the clock to `ms`, ticking every TopologyConfig::tick on the way as the app does (a
  // longer gap between ticks is a busy loop: the LateTick test).
  void at(int ms) {
    const auto target = Clock::time_point{} + milliseconds(ms);
    while (now_ + core_.config().tick < target) {
      now_ += core_.config().tick;
      core_.tick(now_);
    }
    now_ = target;
    core_.tick(now_);
  }
  // s1 ports 1,2 (2 links to s2), s2 ports 1,2 (1 to s1), hosts on s1:1 and s2:2.
  void two_switches() {
    core_.switch_up(1, ports({1, 2}), now_);
    core_.switch_up(2, ports({1, 2}), now_);
  }
  TopologyCore core_;
  Clock::time_point now_{};
};

TEST_F(Core, NewSwitchIsProbedOnEveryPortAtOnceThenEveryInterval) {
  core_.switch_up(1, ports({1, 2, 3}), now_);
  auto probes = core_.take_probes();
  EXPECT_EQ(probes, (std::vector<PortRef>{{1, 1}, {1, 2}, {1, 3}}));  // not LOCAL
  at(500);
  EXPECT_TRUE(core_.take_probes().empty());
  at(1000);
  EXPECT_EQ(core_.take_probes().size(), 3u);
  EXPECT_EQ(core_.figures().lldp_sent, 6u);
}

TEST_F(Core, SettledEdgePortsAreNotProbedByDefault) {
  core_.switch_up(1, ports({1, 2}), now_);
  core_.switch_up(2, ports({1}), now_);
  core_.lldp_received({1, 2}, {2, 1}, now_);
  at(2000);  // 1:1 settled as an edge; 1:2 and 2:1 are link ports
  core_.take_probes();
  for (int r = 3; r <= 12; ++r) {
    at(r * 1000);
    core_.lldp_received({1, 2}, {2, 1}, now_);
    for (const PortRef& p : core_.take_probes()) EXPECT_FALSE(p.dpid == 1 && p.port == 1) << "round " << r;
  }
}

TEST_F(Core, SettledEdgePortsAreProbedEveryFifthRoundOnlyWhenAsked) {
  TopologyConfig c = cfg();
  c.edge_probe_rounds = 5;
  core_ = TopologyCore(c);
  core_.switch_up(1, ports({1, 2}), now_);
  core_.switch_up(2, ports({1}), now_);
  core_.lldp_received({1, 2}, {2, 1}, now_);
  at(2000);  // 1:1 settled as an edge; 1:2 and 2:1 are link ports
  core_.take_probes();
  std::vector<size_t> per_round;
  for (int r = 3; r <= 12; ++r) {
    at(r * 1000);
    core_.lldp_received({1, 2}, {2, 1}, now_);
    per_round.push_back(core_.take_probes().size());
  }
  // Link ports (2) every round; the edge port joins on every 5th round of each switch.
  // Rounds at 1 s, 2 s (in at(2000)), then 3..12 s: the 5th round (5 s) and the 10th (10 s).
  EXPECT_EQ(per_round, (std::vector<size_t>{2, 2, 3, 2, 2, 2, 2, 3, 2, 2}));
}

TEST_F(Core, PortsArePendingUntilSettledThenEdge) {
  core_.switch_up(1, ports({1, 2}), now_);
  EXPECT_EQ(core_.role({1, 1}), PortRole::kPending);
  EXPECT_EQ(core_.figures().pending_ports, 2u);
  at(1999);
  EXPECT_EQ(core_.role({1, 1}), PortRole::kPending);
  at(2000);
  EXPECT_EQ(core_.role({1, 1}), PortRole::kEdge);
  EXPECT_EQ(core_.role({1, 2}), PortRole::kEdge);
  EXPECT_EQ(core_.figures().pending_ports, 0u);
  EXPECT_EQ(core_.figures().edge_ports, 2u);
  auto ch = core_.take_changes();
  ASSERT_FALSE(ch.switches.empty());
  EXPECT_EQ(core_.switch_record(1).ports,
            (std::vector<std::pair<uint32_t, PortRole>>{{1, PortRole::kEdge}, {2, PortRole::kEdge}}));
}

TEST_F(Core, LldpMakesALinkOnBothPortsAndTheDiscoveryTime) {
  two_switches();
  core_.take_changes();
  at(40);
  core_.lldp_received({1, 2}, {2, 1}, now_);
  ASSERT_EQ(core_.links().size(), 1u);
  EXPECT_EQ(core_.links()[0], make_link({2, 1}, {1, 2}));
  EXPECT_EQ(core_.role({1, 2}), PortRole::kLink);
  EXPECT_EQ(core_.role({2, 1}), PortRole::kLink);
  auto ch = core_.take_changes();
  ASSERT_EQ(ch.links.size(), 1u);
  EXPECT_TRUE(ch.links[0].up);
  EXPECT_EQ(ch.links[0].reason, "lldp");
  EXPECT_EQ(core_.figures().discovery, std::chrono::duration_cast<Clock::duration>(milliseconds(40)));
  // The reverse direction's probe is the same link, refreshed.
  core_.lldp_received({2, 1}, {1, 2}, now_);
  EXPECT_EQ(core_.links().size(), 1u);
  EXPECT_TRUE(core_.take_changes().links.empty());
  at(3000);
  EXPECT_EQ(core_.role({1, 1}), PortRole::kEdge);  // the other ports settled as edges
  EXPECT_EQ(core_.role({1, 2}), PortRole::kLink);
}

TEST_F(Core, ProbesFromUnknownSwitchesOrPortsAreCountedAndIgnored) {
  two_switches();
  core_.lldp_received({9, 1}, {1, 1}, now_);
  core_.lldp_received({2, 7}, {1, 1}, now_);
  core_.lldp_received({1, 1}, {1, 1}, now_);  // looped back to itself
  EXPECT_TRUE(core_.links().empty());
  EXPECT_EQ(core_.figures().lldp_foreign, 3u);
}

// A cluster (docs/cluster.md): switch 9 is mastered by another instance but connected to this
// one; its probes make links whose far end has no local port, and the link is dropped quietly
// and rediscovered when this instance becomes the switch's master.
TEST(CoreCluster, ProbesFromAPeersSwitchMakeRemoteLinks) {
  TopologyConfig c;
  c.port_settle = milliseconds(2000);
  c.remote_switch = [](uint64_t dpid) { return dpid == 9; };
  TopologyCore core(c);
  Clock::time_point t{};
  core.switch_up(1, ports({1, 2}), t);
  core.take_changes();
  core.lldp_received({9, 3}, {1, 2}, t);  // a peer's switch: a link
  core.lldp_received({8, 3}, {1, 1}, t);  // not connected to us at all: foreign
  ASSERT_EQ(core.links(), (std::vector<Link>{make_link({1, 2}, {9, 3})}));
  EXPECT_EQ(core.role({1, 2}), PortRole::kLink);
  EXPECT_EQ(core.figures().lldp_remote, 1u);
  EXPECT_EQ(core.figures().lldp_foreign, 1u);
  auto ch = core.take_changes();
  ASSERT_EQ(ch.links.size(), 1u);
  EXPECT_TRUE(ch.links[0].up);
  // Refreshed by the peer's probes, lost by timeout like any other link.
  core.lldp_received({9, 3}, {1, 2}, t + milliseconds(3000));
  core.tick(t + milliseconds(4000));
  EXPECT_EQ(core.links().size(), 1u);
  // This instance takes switch 9 over: the remote link goes without a record (the previous
  // master published switch 9's links down) and comes back, published, from the new probes.
  core.switch_up(9, ports({3}), t + milliseconds(4100));
  EXPECT_TRUE(core.links().empty());
  EXPECT_TRUE(core.take_changes().links.empty());
  core.lldp_received({9, 3}, {1, 2}, t + milliseconds(4150));
  ASSERT_EQ(core.links().size(), 1u);
  ch = core.take_changes();
  ASSERT_EQ(ch.links.size(), 1u);
  EXPECT_TRUE(ch.links[0].up);
  EXPECT_EQ(core.role({9, 3}), PortRole::kLink);
  // The cluster's periodic republish: everything this instance holds, as "up" records.
  core.host_seen(0x0b, 0x0a000002, {1, 1}, t + milliseconds(4200));  // 1:1 settled as an edge
  core.tick(t + milliseconds(4200));
  Changes all = core.full_state();
  EXPECT_EQ(all.switches, (std::vector<uint64_t>{1, 9}));
  ASSERT_EQ(all.links.size(), 1u);
  EXPECT_TRUE(all.links[0].up);
  EXPECT_EQ(all.links[0].reason, "refresh");
  ASSERT_EQ(all.hosts.size(), 1u);
  EXPECT_EQ(all.hosts[0].state, "up");
  EXPECT_EQ(core.figures().republished, 4u);
  // Demoted: switch 9 (ours since the takeover) goes to another instance. It is still up, so
  // nothing is published about it, its links or hosts; the remote link comes back from probes.
  core.take_changes();
  core.forget_switch(9);
  EXPECT_FALSE(core.has_switch(9));
  EXPECT_TRUE(core.links().empty());
  EXPECT_TRUE(core.take_changes().empty());
  EXPECT_EQ(core.figures().switches_handed_over, 1u);
  core.lldp_received({9, 3}, {1, 2}, t + milliseconds(4300));
  EXPECT_EQ(core.links().size(), 1u);
  // Without a remote_switch function (one controller) the same probe stays foreign.
  TopologyCore single{TopologyConfig{}};
  single.switch_up(1, ports({1, 2}), t);
  single.lldp_received({9, 3}, {1, 2}, t);
  EXPECT_TRUE(single.links().empty());
  EXPECT_EQ(single.figures().lldp_foreign, 1u);
}

// A takeover in a cluster: the ports the previous master had settled as edges serve hosts at
// once; the others (its link ports, unknown ports) wait as pending until probes or the settle
// time decide, as on any new switch.
TEST(CoreCluster, ATakenOverSwitchKeepsItsPublishedEdgePorts) {
  TopologyConfig c;
  c.port_settle = milliseconds(2000);
  c.remote_switch = [](uint64_t) { return true; };
  TopologyCore core(c);
  const std::vector<std::pair<uint32_t, PortRole>> published{{1, PortRole::kEdge}, {2, PortRole::kEdge},
                                                             {3, PortRole::kLink}};
  Clock::time_point t{};
  // Ticks every 100 ms up to `to`, as the app does (a longer gap is a busy loop).
  Clock::time_point ticked = t;
  auto tick_to = [&](Clock::time_point to) {
    while (ticked + c.tick < to) core.tick(ticked += c.tick);
    core.tick(ticked = to);
  };
  core.switch_up(5, ports({1, 2, 3, 4}), t, &published);
  EXPECT_EQ(core.role({5, 1}), PortRole::kEdge);
  EXPECT_EQ(core.role({5, 2}), PortRole::kEdge);
  EXPECT_EQ(core.role({5, 3}), PortRole::kLink);     // provisionally, until a probe confirms it
  EXPECT_EQ(core.role({5, 4}), PortRole::kPending);
  EXPECT_EQ(core.figures().edges_taken_over, 2u);
  EXPECT_EQ(core.figures().links_taken_over, 1u);
  EXPECT_EQ(core.figures().pending_ports, 1u);
  core.host_seen(0x0a, 0x0a000001, {5, 1}, t);  // a host on a kept edge port is learned at once
  EXPECT_TRUE(core.host(0x0a).has_value());
  tick_to(t + milliseconds(2000));
  EXPECT_EQ(core.figures().pending_ports, 0u);
  EXPECT_EQ(core.role({5, 3}), PortRole::kLink);
  // No probe confirmed 5:3 within link_timeout (3.5 s): pending again, then an edge.
  tick_to(t + milliseconds(3600));
  EXPECT_EQ(core.role({5, 3}), PortRole::kPending);
  // A confirmed one stays: take over switch 6 whose port 1 a probe then confirms.
  const std::vector<std::pair<uint32_t, PortRole>> p6{{1, PortRole::kLink}};
  core.switch_up(6, ports({1}), t + milliseconds(3600), &p6);
  core.lldp_received({5, 4}, {6, 1}, t + milliseconds(3700));
  tick_to(t + milliseconds(7150));  // past the provisional deadline (7100), link still fresh
  EXPECT_EQ(core.role({6, 1}), PortRole::kLink);
  EXPECT_EQ(core.links().size(), 1u);
}

// Issue [runtime]: a loop busy for longer than the link timeout (a cooperative rotation) does
// not kill the links: the LLDP replies of that time are unread, not missing.
TEST_F(Core, ALoopBusyLongerThanTheLinkTimeoutKeepsTheLinks) {
  two_switches();
  core_.lldp_received({1, 2}, {2, 1}, now_);
  at(1000);
  now_ += milliseconds(5000);  // no tick for 5 s (> link_timeout 3.5 s)
  core_.tick(now_);
  EXPECT_EQ(core_.links().size(), 1u);
  EXPECT_EQ(core_.figures().late_ticks, 1u);
  EXPECT_NEAR(core_.figures().late_tick_max_ms, 4900, 1);
  core_.lldp_received({1, 2}, {2, 1}, now_);  // the reply read after the busy turn
  at(6000 + 3400);
  EXPECT_EQ(core_.links().size(), 1u);
  at(6000 + 3600);  // a link really silent for 3.5 s of listening is still lost
  EXPECT_TRUE(core_.links().empty());
  EXPECT_EQ(core_.figures().link_timeouts, 1u);
}

TEST_F(Core, LinkLostByTimeoutWhenProbesStop) {
  two_switches();
  core_.lldp_received({1, 2}, {2, 1}, now_);
  at(3000);
  core_.lldp_received({1, 2}, {2, 1}, now_);  // refreshed at 3 s
  at(6500);
  EXPECT_EQ(core_.links().size(), 1u);  // 3.5 s since, not more
  core_.take_changes();
  at(6501);
  EXPECT_TRUE(core_.links().empty());
  auto ch = core_.take_changes();
  ASSERT_EQ(ch.links.size(), 1u);
  EXPECT_FALSE(ch.links[0].up);
  EXPECT_EQ(ch.links[0].reason, "lldp_timeout");
  EXPECT_NEAR(ch.links[0].detect_ms, 3501, 1);
  EXPECT_EQ(core_.figures().link_timeouts, 1u);
  // Both ends must settle again before they count as edges.
  EXPECT_EQ(core_.role({1, 2}), PortRole::kPending);
  at(8500);
  EXPECT_EQ(core_.role({1, 2}), PortRole::kPending);
  at(8501);
  EXPECT_EQ(core_.role({1, 2}), PortRole::kEdge);
}

TEST_F(Core, PortStatusDownRemovesTheLinkAtOnceAndUpProbesAgain) {
  two_switches();
  core_.lldp_received({1, 2}, {2, 1}, now_);
  core_.take_changes();
  core_.take_probes();
  core_.port_status(1, port(2, false), false, now_);
  EXPECT_TRUE(core_.links().empty());
  EXPECT_EQ(core_.role({1, 2}), PortRole::kDown);
  EXPECT_EQ(core_.role({2, 1}), PortRole::kPending);
  auto ch = core_.take_changes();
  ASSERT_EQ(ch.links.size(), 1u);
  EXPECT_EQ(ch.links[0].reason, "port_status");
  core_.port_status(1, port(2, true), false, now_);
  EXPECT_EQ(core_.role({1, 2}), PortRole::kPending);
  EXPECT_EQ(core_.take_probes(), (std::vector<PortRef>{{1, 2}}));
  // Deleted: gone from the switch's port list.
  core_.port_status(1, port(2), true, now_);
  EXPECT_FALSE(core_.role({1, 2}).has_value());
}

TEST_F(Core, HostsAreLearnedOnlyOnEdgePortsAndAClaimFromAnotherEdgePortIsRefused) {
  two_switches();
  core_.lldp_received({1, 2}, {2, 1}, now_);
  core_.host_seen(0xa1, 0x0a000001, {1, 1}, now_);  // still pending
  EXPECT_FALSE(core_.host(0xa1));
  at(2000);
  core_.take_changes();
  core_.host_seen(0xa1, 0x0a000001, {1, 2}, now_);  // a link port: a flooded copy
  EXPECT_FALSE(core_.host(0xa1));
  EXPECT_EQ(core_.figures().hosts_ignored, 2u);
  core_.host_seen(0xa1, 0x0a000001, {1, 1}, now_);
  ASSERT_TRUE(core_.host(0xa1));
  EXPECT_EQ(core_.host(0xa1)->at, (PortRef{1, 1}));
  core_.host_seen(0xa1, 0x0a000001, {1, 1}, now_);  // same place: nothing new
  // Its MAC on s2:2 while s1:1 is still an edge: somebody claiming it, not a move.
  core_.host_seen(0xa1, 0x0a000001, {2, 2}, now_);
  EXPECT_EQ(core_.host(0xa1)->at, (PortRef{1, 1}));
  EXPECT_EQ(core_.figures().host_claims_refused, 1u);
  // Its address from another MAC: refused too, and that MAC is not learned.
  core_.host_seen(0xb2, 0x0a000001, {2, 2}, now_);
  EXPECT_FALSE(core_.host(0xb2));
  EXPECT_EQ(core_.figures().ip_claims_refused, 1u);
  // Another source address from the host itself (ip addr add): it keeps its own.
  core_.host_seen(0xa1, 0x0a00c801, {1, 1}, now_);
  EXPECT_EQ(core_.host(0xa1)->ipv4, 0x0a000001u);
  EXPECT_EQ(core_.figures().ip_changes_refused, 1u);
  auto ch = core_.take_changes();
  ASSERT_EQ(ch.hosts.size(), 1u);
  EXPECT_EQ(ch.hosts[0].state, "up");
  // Unplugged from s1:1 (port down: the host goes with it), then seen on s2:2: learned there.
  core_.port_status(1, port(1, false), false, now_);
  EXPECT_FALSE(core_.host(0xa1));
  core_.host_seen(0xa1, 0x0a000001, {2, 2}, now_);
  ASSERT_TRUE(core_.host(0xa1));
  EXPECT_EQ(core_.host(0xa1)->at, (PortRef{2, 2}));
  ch = core_.take_changes();
  ASSERT_EQ(ch.hosts.size(), 2u);
  EXPECT_EQ(ch.hosts[0].state, "gone");
  EXPECT_EQ(ch.hosts[1].state, "up");
  // Once gone, its address is free for another MAC.
  core_.port_status(2, port(2, false), false, now_);
  core_.port_status(2, port(2, true), false, now_);
  at(4500);  // settled as an edge again
  core_.host_seen(0xb2, 0x0a000001, {2, 2}, now_);
  ASSERT_TRUE(core_.host(0xb2));
  EXPECT_EQ(core_.host(0xb2)->at, (PortRef{2, 2}));
  core_.host_seen(0x010000000001ULL, 0, {1, 1}, now_);  // multicast source: never a host
  EXPECT_EQ(core_.figures().hosts, 1u);
}

TEST_F(Core, HostsGoWhenTheirPortGoesDownOrTurnsOutToBeALinkOrTheSwitchLeaves) {
  two_switches();
  at(2000);
  core_.host_seen(0xa1, 1, {1, 1}, now_);
  core_.host_seen(0xa2, 2, {1, 2}, now_);
  core_.host_seen(0xa3, 3, {2, 2}, now_);
  core_.take_changes();
  core_.port_status(1, port(1, false), false, now_);
  EXPECT_FALSE(core_.host(0xa1));
  core_.lldp_received({1, 2}, {2, 1}, now_);  // 1:2 was a link after all
  EXPECT_FALSE(core_.host(0xa2));
  core_.switch_down(2, now_);
  EXPECT_FALSE(core_.host(0xa3));
  EXPECT_TRUE(core_.links().empty());
  auto ch = core_.take_changes();
  std::vector<std::string> reasons;
  for (const auto& h : ch.hosts) reasons.push_back(h.reason);
  EXPECT_EQ(reasons, (std::vector<std::string>{"port_down", "link_port", "switch_down"}));
}

TEST_F(Core, HostTableIsCapped) {
  core_.switch_up(1, ports({1}), now_);
  at(2000);
  for (uint64_t m = 1; m <= 5; ++m) core_.host_seen(m, 0, {1, 1}, now_);
  EXPECT_EQ(core_.figures().hosts, 3u);
  EXPECT_EQ(core_.figures().host_cap_exceeded, 2u);
}

TEST_F(Core, AProbeShowingAnotherPeerReplacesTheLink) {
  core_.switch_up(1, ports({1}), now_);
  core_.switch_up(2, ports({1}), now_);
  core_.switch_up(3, ports({1}), now_);
  core_.lldp_received({1, 1}, {2, 1}, now_);
  core_.lldp_received({3, 1}, {2, 1}, now_);  // recabled
  ASSERT_EQ(core_.links().size(), 1u);
  EXPECT_EQ(core_.links()[0], make_link({2, 1}, {3, 1}));
  EXPECT_EQ(core_.role({1, 1}), PortRole::kPending);
}

TEST_F(Core, ReconnectStartsFromScratch) {
  two_switches();
  core_.lldp_received({1, 2}, {2, 1}, now_);
  core_.switch_up(1, ports({1, 2}), now_);
  EXPECT_TRUE(core_.links().empty());
  EXPECT_EQ(core_.role({1, 2}), PortRole::kPending);
}

// figures() keeps the port counts by role as roles change (a walk over every port per learned
// host was 80 % of a shard at 100,000 hosts): after every kind of change they equal a count
// of the switch records.
TEST_F(Core, PortCountsByRoleFollowEveryChange) {
  std::vector<uint64_t> known;
  auto expect_counts = [&](const char* step) {
    uint64_t edge = 0, link = 0, pending = 0;
    for (uint64_t dpid : known)
      for (const auto& [no, role] : core_.switch_record(dpid).ports) {
        edge += role == PortRole::kEdge;
        link += role == PortRole::kLink;
        pending += role == PortRole::kPending;
      }
    const Figures f = core_.figures();
    EXPECT_EQ(f.edge_ports, edge) << step;
    EXPECT_EQ(f.link_ports, link) << step;
    EXPECT_EQ(f.pending_ports, pending) << step;
  };
  known = {1, 2, 3};
  two_switches();
  auto with_down = ports({1, 2, 3});
  with_down[2] = port(3, false);
  core_.switch_up(3, with_down, now_);
  expect_counts("up");
  core_.lldp_received({1, 2}, {2, 1}, now_);
  expect_counts("link");
  at(2000);
  expect_counts("settled");
  EXPECT_EQ(core_.figures().edge_ports, 4u);
  core_.port_status(3, port(3, true), false, now_);  // down -> pending
  core_.port_status(3, port(4, true), false, now_);  // a new port
  expect_counts("port up and added");
  core_.port_status(1, port(2, false), false, now_);  // the link goes
  expect_counts("link port down");
  core_.port_status(1, port(2), true, now_);  // deleted
  expect_counts("deleted");
  core_.switch_up(2, ports({1, 2, 5}), now_);  // reconnect
  expect_counts("reconnect");
  core_.switch_down(3, now_);
  known = {1, 2};
  expect_counts("switch down");
  at(5000);
  expect_counts("settled again");
  core_.forget_switch(2);
  known = {1};
  expect_counts("handed over");
}

// ---------------------------------------------------------------- records

TEST(Wire, RecordsRoundTripThroughJson) {
  SwitchRecord s{5, true, {{1, PortRole::kEdge}, {2, PortRole::kLink}, {3, PortRole::kPending}}};
  auto ds = decode(switch_key(5) + "@topology", to_json(s));
  ASSERT_TRUE(ds && *ds);
  const auto& s2 = std::get<SwitchRecord>(**ds);
  EXPECT_EQ(s2.dpid, 5u);
  EXPECT_EQ(s2.ports, s.ports);

  LinkRecord l{make_link({2, 3}, {1, 4}), false, "lldp_timeout", 3501.5};
  EXPECT_EQ(link_key(l.link), "network/topology/link/0000000000000001.4-0000000000000002.3");
  auto dl = decode(link_key(l.link), to_json(l));
  ASSERT_TRUE(dl && *dl);
  EXPECT_EQ(std::get<LinkRecord>(**dl).link, l.link);
  EXPECT_FALSE(std::get<LinkRecord>(**dl).up);
  EXPECT_DOUBLE_EQ(std::get<LinkRecord>(**dl).detect_ms, 3501.5);

  HostRecord h{0x0000000000a1ULL, 0x0a000001, {7, 1}, "moved", PortRef{6, 2}, ""};
  EXPECT_EQ(host_key(h.mac), "network/topology/host/00-00-00-00-00-a1");
  auto dh = decode(host_key(h.mac), to_json(h));
  ASSERT_TRUE(dh && *dh);
  const auto& h2 = std::get<HostRecord>(**dh);
  EXPECT_EQ(h2.mac, h.mac);
  EXPECT_EQ(h2.ipv4, h.ipv4);
  EXPECT_EQ(h2.at, h.at);
  EXPECT_EQ(h2.from, h.from);
  EXPECT_EQ(to_json(h)["ip"], "10.0.0.1");
}

TEST(Wire, SwitchPortsAreGroupedByRoleAndTheOldListFormStillReads) {
  const SwitchRecord r{2, true, {{1, PortRole::kLink}, {2, PortRole::kEdge}, {3, PortRole::kEdge}, {7, PortRole::kDown}}};
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["ports"], nlohmann::json::parse(R"({"edge": [2, 3], "link": [1], "down": [7]})"));
  auto d = decode(switch_key(2), j);
  ASSERT_TRUE(d && *d);
  EXPECT_EQ(std::get<SwitchRecord>(**d).ports, r.ports);  // sorted by port again
  // Archived before the grouped form: a list of {port, role}, in any order.
  auto old = decode(switch_key(2), nlohmann::json::parse(R"({"dpid": "0000000000000002", "state": "up", "ports":
      [{"port": 7, "role": "down"}, {"port": 1, "role": "link"}, {"port": 2, "role": "edge"}, {"port": 3, "role": "edge"}]})"));
  ASSERT_TRUE(old && *old) << (old ? "" : old.error());
  EXPECT_EQ(std::get<SwitchRecord>(**old).ports, r.ports);
  for (const char* bad : {R"({"state": "up", "ports": {"sideways": [1]}})", R"({"state": "up", "ports": {"edge": 1}})",
                          R"({"state": "up", "ports": {"edge": [1], "link": [1]}})", R"({"state": "up", "ports": 3})",
                          R"({"state": "up", "ports": {"edge": ["a"]}})"}) {
    auto e = decode(switch_key(2), nlohmann::json::parse(bad));
    ASSERT_FALSE(e) << bad;
    EXPECT_NE(e.error().find(switch_key(2)), std::string::npos) << e.error();
  }
}

TEST(Wire, MalformedRecordsAreErrorsNamingTheKeyAndOtherKeysAreSkipped) {
  auto r = decode("network/topology/link/x", nlohmann::json{{"a", 1}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("network/topology/link/x"), std::string::npos) << r.error();
  EXPECT_FALSE(decode("network/topology/switch/zz", nlohmann::json{{"state", "up"}, {"ports", nlohmann::json::array()}}));
  EXPECT_FALSE(decode(switch_key(1), nlohmann::json{{"state", "sideways"}, {"ports", nlohmann::json::array()}}));
  EXPECT_FALSE(decode(host_key(1), nlohmann::json{{"mac", "nope"}, {"ip", nullptr}, {"at", {{"dpid", "1"}, {"port", 1}}},
                                                  {"state", "up"}}));
  auto skip = decode(std::string(kSummaryKey), nlohmann::json{{"links", 3}});
  ASSERT_TRUE(skip);
  EXPECT_FALSE(*skip);
}

TEST(View, FloodPortsAreEdgesPlusTreeLinksAndNothingFromOffTree) {
  // A triangle s1-s2-s3: the tree (rooted at s1) drops the s2-s3 link.
  TopologyView v;
  v.apply(SwitchRecord{1, true, {{1, PortRole::kEdge}, {2, PortRole::kLink}, {3, PortRole::kLink}}});
  v.apply(SwitchRecord{2, true, {{1, PortRole::kEdge}, {2, PortRole::kLink}, {3, PortRole::kLink}, {4, PortRole::kPending}}});
  v.apply(SwitchRecord{3, true, {{1, PortRole::kEdge}, {2, PortRole::kLink}, {3, PortRole::kLink}}});
  v.apply(LinkRecord{make_link({1, 2}, {2, 2}), true, "lldp", 0});
  v.apply(LinkRecord{make_link({1, 3}, {3, 2}), true, "lldp", 0});
  v.apply(LinkRecord{make_link({2, 3}, {3, 3}), true, "lldp", 0});
  EXPECT_EQ(v.flood_ports(1, 1), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(v.flood_ports(2, 2), (std::vector<uint32_t>{1}));  // not the off-tree 2:3, not pending 2:4
  EXPECT_TRUE(v.flood_ports(2, 3).empty());                    // a copy that came over the off-tree link dies
  EXPECT_TRUE(v.flood_ports(2, 4).empty());                    // from a pending port: nothing yet
  v.apply(LinkRecord{make_link({1, 3}, {3, 2}), false, "port_status", 0});
  EXPECT_EQ(v.flood_ports(2, 1), (std::vector<uint32_t>{2, 3}));  // the tree now uses s2-s3
  v.apply(HostRecord{0xa1, 1, {3, 1}, "up", std::nullopt, ""});
  ASSERT_NE(v.host(0xa1), nullptr);
  v.apply(SwitchRecord{3, false, {}});
  EXPECT_EQ(v.host(0xa1), nullptr);
  EXPECT_FALSE(v.paths().has_switch(3));
}

TEST(View, HostsOnASwitchFollowMovesDeparturesAndTheSwitchLeaving) {
  TopologyView v;
  v.apply(SwitchRecord{1, true, {{1, PortRole::kEdge}, {2, PortRole::kEdge}}});
  v.apply(SwitchRecord{2, true, {{1, PortRole::kEdge}}});
  auto macs_on = [&](uint64_t dpid) {
    std::vector<uint64_t> out;
    for (const auto& [mac, loc] : v.hosts_on(dpid)) out.push_back(mac);
    return out;
  };
  v.apply(HostRecord{0xb2, 0x0a000002, {1, 2}, "up", std::nullopt, ""});
  v.apply(HostRecord{0xb1, 0x0a000001, {1, 1}, "up", std::nullopt, ""});
  v.apply(HostRecord{0xc1, 0x0a000003, {2, 1}, "up", std::nullopt, ""});
  EXPECT_EQ(macs_on(1), (std::vector<uint64_t>{0xb1, 0xb2}));  // sorted by MAC
  EXPECT_EQ(v.hosts_on(1)[0].second.ipv4, 0x0a000001u);
  v.apply(HostRecord{0xb2, 0x0a000002, {2, 1}, "moved", PortRef{1, 2}, ""});
  EXPECT_EQ(macs_on(1), (std::vector<uint64_t>{0xb1}));
  EXPECT_EQ(macs_on(2), (std::vector<uint64_t>{0xb2, 0xc1}));
  v.apply(HostRecord{0xb1, 0x0a000001, {1, 2}, "gone", std::nullopt, "port_down"});  // not where it is: kept
  EXPECT_EQ(macs_on(1), (std::vector<uint64_t>{0xb1}));
  v.apply(HostRecord{0xb1, 0x0a000001, {1, 1}, "gone", std::nullopt, "port_down"});
  EXPECT_TRUE(macs_on(1).empty());
  v.apply(SwitchRecord{2, false, {}});
  EXPECT_TRUE(macs_on(2).empty());
  EXPECT_EQ(v.host(0xb2), nullptr);
  EXPECT_EQ(v.mac_of(0x0a000002), std::nullopt);
  EXPECT_EQ(v.host_count(), 0u);
}

}  // namespace
}  // namespace sdn::apps::topology

// ---------------------------------------------------------------- config (topology + forwarding modes)

namespace sdn::apps::topology {
namespace {

TEST(Config, TopologySectionAndForwardingModeAreReadAndChecked) {
  auto cfg = core::Config::parse(R"(
[topology]
lldp_interval_ms = 500
link_timeout_ms = 1600
port_settle_ms = 700
edge_probe_rounds = 3
max_hosts = 42
[forwarding]
mode = "learning"
proxy_arp = false
)");
  ASSERT_TRUE(cfg) << cfg.error();
  TopologyConfig t = read_topology_config(*cfg);
  EXPECT_EQ(t.lldp_interval, milliseconds(500));
  EXPECT_EQ(t.link_timeout, milliseconds(1600));
  EXPECT_EQ(t.port_settle, milliseconds(700));
  EXPECT_EQ(t.edge_probe_rounds, 3u);
  EXPECT_EQ(t.max_hosts, 42u);
  ForwardingConfig f = read_forwarding_config(*cfg);
  EXPECT_EQ(f.mode, ForwardingMode::kLearning);
  EXPECT_FALSE(f.proxy_arp);
  EXPECT_TRUE(cfg->finish().empty());

  auto bad = core::Config::parse("[topology]\nlldp_interval_ms = 2000\nlink_timeout_ms = 1000\nnope = 1\n"
                                 "[forwarding]\nmode = \"hub\"\n");
  ASSERT_TRUE(bad);
  (void)read_topology_config(*bad);
  EXPECT_EQ(read_forwarding_config(*bad).mode, ForwardingMode::kFabric);  // refused: the default stays
  auto problems = bad->finish();
  auto has = [&](std::string_view what) {
    return std::any_of(problems.begin(), problems.end(), [&](const std::string& p) { return p.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(has("link_timeout_ms")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(has("mode")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(has("nope")) << ::testing::PrintToString(problems);
}

}  // namespace
}  // namespace sdn::apps::topology
