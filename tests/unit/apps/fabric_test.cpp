// The topology app and fabric forwarding together, on a fake dual-homed campus (1 core, 2
// aggregation, 4 edge switches, 2 hosts per edge) with two shards and the real in-process Data
// Updates bus between the apps: discovery, loop-free flooding, whole-path installation, and
// rerouting after a cable is pulled or dies silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "apps/forwarding/fabric.hpp"
#include "apps/topology/topology.hpp"
#include "apps/topology/wire.hpp"
#include "data/due.hpp"
#include "fakes/fake_fabric.hpp"
#include "pkt/build.hpp"

namespace sdn::apps {
namespace {

using pkt::Bytes;
using pkt::Mac;
using std::chrono::milliseconds;
using test::FakeFabric;
using topology::PortRef;

struct Host {
  std::string name;
  Mac mac;
  pkt::Ipv4Addr ip;
  uint64_t dpid;
  uint32_t port;
};

// s1 core; s2, s3 aggregation; s4..s7 edges, each on both aggs. Hosts on edge ports 1-2,
// edge uplinks on 3 (to s2) and 4 (to s3); agg ports 1-4 down to the edges, 5 up to s1.
class Campus : public ::testing::Test {
 protected:
  Campus() {
    backends_ = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
    topo_due_ = std::make_shared<data::Due>(backends_);
    (void)topo_due_->init("topology", data::kProducer, {}, {{"network/topology/**", std::nullopt}});
    fwd_due_ = std::make_shared<data::Due>(backends_);
    (void)fwd_due_->init("forwarding", data::kConsumer, {{"network/topology/**", std::nullopt}}, {});
    topology::TopologyConfig tc;
    tc.lldp_interval = milliseconds(1000);
    tc.link_timeout = milliseconds(3500);
    tc.port_settle = milliseconds(1500);
    svc_ = std::make_shared<topology::TopologyService>(tc, topo_due_);
    fabric_ = std::make_unique<FakeFabric>(2, [this](unsigned shard) {
      std::vector<std::unique_ptr<southbound::App>> v;
      v.push_back(std::make_unique<topology::Topology>(svc_, shard));
      auto f = std::make_unique<FabricForwarding>(ForwardingConfig{}, fwd_due_, nullptr);
      fwd_[shard] = f.get();
      v.push_back(std::move(f));
      return v;
    });
    auto rec = topo_due_->observe("network/topology/link/**", [this](const data::RecordPtr& r) {
      link_records_.push_back(r->value.json());
    });
    link_sub_ = std::move(*rec);
    fabric_->start();
    fabric_->add_switch(1, {1, 2});
    fabric_->add_switch(2, {1, 2, 3, 4, 5});
    fabric_->add_switch(3, {1, 2, 3, 4, 5});
    fabric_->link(1, 1, 2, 5);
    fabric_->link(1, 2, 3, 5);
    int n = 0;
    for (uint64_t e = 4; e <= 7; ++e) {
      fabric_->add_switch(e, {1, 2, 3, 4});
      fabric_->link(e, 3, 2, static_cast<uint32_t>(e - 3));
      fabric_->link(e, 4, 3, static_cast<uint32_t>(e - 3));
      for (uint32_t p = 1; p <= 2; ++p) {
        ++n;
        Host h{"h" + std::to_string(n), Mac{static_cast<uint64_t>(n)}, pkt::ipv4(10, 0, 0, static_cast<uint8_t>(n)),
               e, p};
        fabric_->attach(h.name, e, p);
        hosts_.push_back(h);
      }
    }
  }
  ~Campus() override {
    link_sub_.cancel();
    fabric_.reset();
  }

  const Host& host(int i) const { return hosts_.at(static_cast<size_t>(i - 1)); }

  // ARP who-has from a, reply from b, then an echo each way; each must reach exactly its target.
  // The request reaches every other host once (flooded over the tree), or, when b is already
  // known, only a: the controller's proxy-ARP answer.
  void converse(const Host& a, const Host& b) {
    const bool known = svc_->core().host(b.mac.value).has_value();
    auto req = fabric_->send(a.name, pkt::arp_request(a.mac, a.ip, b.ip));
    std::vector<std::string> want;
    for (const auto& h : hosts_)
      if (h.name != a.name && !known) want.push_back(h.name);
    if (known) want.push_back(a.name);
    std::sort(want.begin(), want.end());
    std::sort(req.received_by.begin(), req.received_by.end());
    EXPECT_EQ(req.received_by, want) << "ARP request from " << a.name << (known ? " (proxied)" : " (flooded)");
    expect_only(fabric_->send(b.name, pkt::arp_reply(b.mac, b.ip, a.mac, a.ip)), a);
    expect_only(fabric_->send(a.name, pkt::icmp_echo(a.mac, b.mac, a.ip, b.ip, false, 1, 1)), b);
    expect_only(fabric_->send(b.name, pkt::icmp_echo(b.mac, a.mac, b.ip, a.ip, true, 1, 1)), a);
  }
  static void expect_only(const FakeFabric::Delivery& d, const Host& h) {
    EXPECT_EQ(d.received_by, (std::vector<std::string>{h.name}));
  }
  uint64_t sum(uint64_t FabricCounters::*field) const {
    uint64_t s = 0;
    for (const auto& [_, f] : fwd_) s += f->counters().*field;
    return s;
  }

  std::shared_ptr<data::Backends> backends_;
  std::shared_ptr<data::Due> topo_due_, fwd_due_;
  std::shared_ptr<topology::TopologyService> svc_;
  std::map<unsigned, FabricForwarding*> fwd_;
  std::unique_ptr<FakeFabric> fabric_;
  std::vector<Host> hosts_;
  std::vector<nlohmann::json> link_records_;
  data::Due::Subscription link_sub_;
};

TEST_F(Campus, DiscoversEveryLinkAndSettlesEveryHostPort) {
  fabric_->advance(milliseconds(2000));
  const auto f = svc_->figures();
  EXPECT_EQ(f.switches, 7u);
  EXPECT_EQ(f.links, 10u);  // 2 core-agg + 8 edge-agg
  EXPECT_EQ(f.edge_ports, 8u);
  EXPECT_EQ(f.link_ports, 20u);
  EXPECT_EQ(f.pending_ports, 0u);
  ASSERT_TRUE(f.discovery.has_value());
  EXPECT_EQ(link_records_.size(), 10u);
  // Every shard's forwarding view agrees with the core.
  for (const auto& [shard, fw] : fwd_) {
    EXPECT_EQ(fw->view().paths().link_count(), 10u) << "shard " << shard;
    EXPECT_EQ(fw->view().role(PortRef{4, 1}), topology::PortRole::kEdge);
    EXPECT_EQ(fw->counters().topology_errors, 0u);
  }
}

TEST_F(Campus, BeforePortsSettleNothingIsFloodedAndLaterEveryPairTalks) {
  fabric_->advance(milliseconds(100));
  auto early = fabric_->send("h1", pkt::arp_request(host(1).mac, host(1).ip, host(8).ip));
  EXPECT_TRUE(early.received_by.empty());
  EXPECT_GT(sum(&FabricCounters::not_ready), 0u);
  fabric_->advance(milliseconds(2000));
  for (int a = 1; a <= 8; ++a)
    for (int b = a + 1; b <= 8; ++b) converse(host(a), host(b));
  EXPECT_FALSE(fabric_->looped());
  EXPECT_EQ(sum(&FabricCounters::paths_failed), 0u);
  EXPECT_GT(sum(&FabricCounters::paths_installed), 0u);
}

TEST_F(Campus, ProxyArpAnswersForKnownHostsAtTheIngressOnly) {
  fabric_->advance(milliseconds(2000));
  converse(host(1), host(8));  // both known now
  fabric_->clear_deliveries();
  const size_t proxied = sum(&FabricCounters::proxy_arps);
  auto d = fabric_->send("h3", pkt::arp_request(host(3).mac, host(3).ip, host(8).ip));
  expect_only(d, host(3));
  EXPECT_EQ(sum(&FabricCounters::proxy_arps), proxied + 1);
  ASSERT_EQ(fabric_->deliveries().size(), 1u);
  const Bytes& frame = fabric_->deliveries()[0].second;
  auto parsed = pkt::parse(frame);
  ASSERT_TRUE(parsed && parsed->arp);
  EXPECT_EQ(parsed->arp->op, pkt::kArpReply);
  EXPECT_EQ(parsed->arp->sha, host(8).mac);  // "10.0.0.8 is at h8's MAC"
  EXPECT_EQ(parsed->arp->spa, host(8).ip);
  EXPECT_EQ(parsed->arp->tha, host(3).mac);
  EXPECT_EQ(parsed->eth.dst, host(3).mac);
  // A gratuitous ARP (asking for its own address) is never answered: flooded to the 7 others.
  auto g = fabric_->send("h8", pkt::arp_request(host(8).mac, host(8).ip, host(8).ip));
  EXPECT_EQ(g.received_by.size(), 7u) << ::testing::PrintToString(g.received_by);
}

TEST_F(Campus, UnknownUnicastReachesEveryEdgePortOnceAndInstallsNothing) {
  fabric_->advance(milliseconds(2000));
  const Mac stranger{0x0000000000ffULL};
  auto d = fabric_->send("h1", pkt::icmp_echo(host(1).mac, stranger, host(1).ip, pkt::ipv4(10, 0, 0, 99), false, 1, 1));
  std::sort(d.received_by.begin(), d.received_by.end());
  EXPECT_EQ(d.received_by, (std::vector<std::string>{"h2", "h3", "h4", "h5", "h6", "h7", "h8"}));
  EXPECT_EQ(d.packet_ins, 1u);  // only the ingress asked: the copies went straight out of edge ports
  for (uint64_t s = 1; s <= 7; ++s) EXPECT_TRUE(fabric_->sw(s).flows_in_cookie_range(kForwardingCookie, kForwardingCookieMask).empty());
}

TEST_F(Campus, TheWholePathIsInstalledOnTheFirstPacket) {
  fabric_->advance(milliseconds(2000));
  const Host &a = host(1), &b = host(8);  // s4 -> s7, 3 hops: s4, an aggregation switch, s7
  converse(a, b);
  const size_t pins = fabric_->packet_ins();
  auto d = fabric_->send(a.name, pkt::icmp_echo(a.mac, b.mac, a.ip, b.ip, false, 1, 2));
  expect_only(d, b);
  EXPECT_EQ(d.packet_ins, 0u);
  EXPECT_EQ(fabric_->packet_ins(), pins);
  // Deterministic tie-break: the lower aggregation switch (s2). s4 out 3, s2 out 4 (to s7), s7 out 2.
  const Bytes echo = pkt::icmp_echo(a.mac, b.mac, a.ip, b.ip, false, 1, 3);
  auto s4 = fabric_->sw(4).lookup_actions(echo, 1);
  auto s2 = fabric_->sw(2).lookup_actions(echo, 1);
  auto s7 = fabric_->sw(7).lookup_actions(echo, 3);
  ASSERT_TRUE(s4 && s2 && s7);
  EXPECT_EQ(*s4, (ofp::ActionList{ofp::ActionOutput{3}}));
  EXPECT_EQ(*s2, (ofp::ActionList{ofp::ActionOutput{4}}));
  EXPECT_EQ(*s7, (ofp::ActionList{ofp::ActionOutput{2}}));
  EXPECT_FALSE(fabric_->sw(3).lookup_actions(echo, 1));  // nothing on the unused aggregation switch
  for (uint64_t s = 1; s <= 7; ++s) EXPECT_TRUE(fabric_->sw(s).errors().empty());
}

// In a cluster another instance masters s7: the path is installed up to s2 and the packet
// leaves s2 towards s7 at once; its miss there is that instance's PacketIn (here the same apps
// stand in for it), which carries the path on. Nothing is sent to s7 by the first instance.
TEST_F(Campus, APathStopsAtASwitchAClusterPeerMasters) {
  fabric_->advance(milliseconds(2000));
  const Host &a = host(1), &b = host(8);  // s4 -> s2 -> s7
  converse(a, b);
  fabric_->set_remote(7, true);
  const Host &c = host(2);  // h2 on s4 too: a new flow to h8
  converse(c, b);
  EXPECT_GE(sum(&FabricCounters::cluster_handoffs), 1u);
  const Bytes echo = pkt::icmp_echo(c.mac, b.mac, c.ip, b.ip, false, 1, 9);
  EXPECT_TRUE(fabric_->sw(4).lookup_actions(echo, 2));
  EXPECT_TRUE(fabric_->sw(2).lookup_actions(echo, 1));
  fabric_->set_remote(7, false);
  for (uint64_t s = 1; s <= 7; ++s) EXPECT_TRUE(fabric_->sw(s).errors().empty());
}

TEST_F(Campus, APulledCableIsPublishedAndTrafficReroutes) {
  fabric_->advance(milliseconds(2000));
  const Host &a = host(1), &b = host(8);
  converse(a, b);
  link_records_.clear();
  fabric_->pull_cable(4, 3, 2, 1);  // s4's uplink to s2, which the path used
  ASSERT_FALSE(link_records_.empty());
  EXPECT_EQ(link_records_.back()["state"], "down");
  EXPECT_EQ(link_records_.back()["reason"], "port_status");
  EXPECT_EQ(svc_->figures().links, 9u);
  auto d = fabric_->send(a.name, pkt::icmp_echo(a.mac, b.mac, a.ip, b.ip, false, 1, 2));
  expect_only(d, b);
  EXPECT_GT(d.packet_ins, 0u);  // the stale flow was deleted, so the controller was asked again
  const Bytes echo = pkt::icmp_echo(a.mac, b.mac, a.ip, b.ip, false, 1, 3);
  auto s4 = fabric_->sw(4).lookup_actions(echo, 1);
  ASSERT_TRUE(s4);
  EXPECT_EQ(*s4, (ofp::ActionList{ofp::ActionOutput{4}}));  // now via s3
  expect_only(fabric_->send(a.name, echo), b);
  EXPECT_FALSE(fabric_->looped());
}

TEST_F(Campus, ASilentlyDeadCableIsFoundByLldpTimeoutAndTrafficReroutes) {
  fabric_->advance(milliseconds(2000));
  const Host &a = host(1), &b = host(8);
  converse(a, b);
  link_records_.clear();
  fabric_->cut_silently(4, 3, 2, 1);
  fabric_->advance(milliseconds(3000));
  EXPECT_EQ(svc_->figures().links, 10u);  // not yet: 3.5 s
  fabric_->advance(milliseconds(1600));
  EXPECT_EQ(svc_->figures().links, 9u);
  ASSERT_FALSE(link_records_.empty());
  EXPECT_EQ(link_records_.back()["reason"], "lldp_timeout");
  EXPECT_GE(link_records_.back()["detect_ms"].get<double>(), 3500.0);
  expect_only(fabric_->send(a.name, pkt::icmp_echo(a.mac, b.mac, a.ip, b.ip, false, 1, 2)), b);
  expect_only(fabric_->send(b.name, pkt::icmp_echo(b.mac, a.mac, b.ip, a.ip, true, 1, 2)), a);
}

TEST_F(Campus, AHostThatMovesIsFoundAtItsNewPort) {
  fabric_->advance(milliseconds(2000));
  const Host &a = host(1), &b = host(8);
  converse(a, b);
  // Plugged into s6:1 (h5's port is taken over) while s4:1 is still up: a claim, not a move.
  fabric_->attach(a.name, 6, 1);
  fabric_->send(a.name, pkt::arp_request(a.mac, a.ip, b.ip));
  EXPECT_EQ(svc_->core().host(a.mac.value)->at, (PortRef{4, 1}));
  EXPECT_EQ(svc_->core().figures().host_claims_refused, 1u);
  // Unplugged from s4:1 (the port goes down, and the host with it): learned at its new port.
  fabric_->port_down(4, 1);
  fabric_->advance(milliseconds(1100));  // each shard reports an unchanged sighting once a second
  fabric_->send(a.name, pkt::arp_request(a.mac, a.ip, b.ip));
  ASSERT_TRUE(svc_->core().host(a.mac.value));
  EXPECT_EQ(svc_->core().host(a.mac.value)->at, (PortRef{6, 1}));
  EXPECT_EQ(svc_->core().figures().hosts_removed, 1u);
  expect_only(fabric_->send(b.name, pkt::icmp_echo(b.mac, a.mac, b.ip, a.ip, false, 1, 9)), a);
}

TEST_F(Campus, ASwitchThatLeavesTakesItsLinksAndHostsWithIt) {
  fabric_->advance(milliseconds(2000));
  converse(host(1), host(8));
  fabric_->remove_switch(2);
  EXPECT_EQ(svc_->figures().links, 5u);  // 10 - s1-s2 - four edge-s2
  fabric_->advance(milliseconds(100));
  converse(host(2), host(7));
  EXPECT_FALSE(fabric_->looped());
}

}  // namespace
}  // namespace sdn::apps
