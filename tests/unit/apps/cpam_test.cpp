// CPAM's logic on a manual clock: the VIP lifecycle alone (allocation, references, reclaim,
// quarantine, the bind-vs-reclaim race), then the app with topology and forwarding on a fake
// dual-homed campus with two shards (the resulting flow tables and deliveries are checked, not
// the call sequence): DNS, ARP, translation in both directions, pinning across rotations, the
// rotation-race window, reclaim of rules, UDP and ICMP, and the cooperative runtime mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>

#include "apps/cpam/cpam.hpp"
#include "apps/cpam/vips.hpp"
#include "apps/forwarding/fabric.hpp"
#include "apps/topology/topology.hpp"
#include "data/due.hpp"
#include "fakes/fake_fabric.hpp"
#include "pkt/build.hpp"
#include "pkt/dns.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::cpam {
namespace {

using pkt::Bytes;
using pkt::Ipv4Addr;
using pkt::Mac;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test::FakeFabric;

constexpr auto kAccept = milliseconds(5000);

// ---- lifecycle ----------------------------------------------------------------------------

CpamConfig small_config(size_t hosts, uint32_t pool) {
  CpamConfig c;
  c.pool_size = pool;
  for (size_t i = 0; i < hosts; ++i)
    c.hosts.push_back({"h" + std::to_string(i + 1), pkt::ipv4(10, 0, 0, static_cast<uint8_t>(i + 1)).value});
  return c;
}

TEST(VipLifecycle, EveryHostGetsADistinctVipEachEpochAndOldOnesGoToGrace) {
  const auto cfg = small_config(10, 64);
  auto table = std::make_shared<VipTable>(cfg.pool_size);
  VipLifecycle life(cfg, table, 10);
  Clock::time_point t{};
  auto first = life.reserve_next(t);
  ASSERT_EQ(first.size(), 10u);
  for (auto [h, v] : first) EXPECT_EQ(table->load(v).state, VipState::kReserved);
  auto s1 = life.commit(t, t + seconds(60));
  EXPECT_EQ(s1->epoch, 1u);
  std::set<uint32_t> seen(s1->primary.begin(), s1->primary.end());
  EXPECT_EQ(seen.size(), 10u);
  for (uint32_t h = 0; h < 10; ++h) {
    const auto v = table->load(s1->primary[h]);
    EXPECT_EQ(v.state, VipState::kPrimary);
    EXPECT_EQ(v.owner, h);
  }
  life.reserve_next(t + seconds(60));
  auto s2 = life.commit(t + seconds(60), t + seconds(120));
  for (uint32_t h = 0; h < 10; ++h) {
    EXPECT_NE(s2->primary[h], s1->primary[h]);
    EXPECT_EQ(table->load(s1->primary[h]).state, VipState::kGrace);
    EXPECT_FALSE(seen.contains(s2->primary[h])) << "a Grace VIP was handed out again";
  }
  EXPECT_EQ(life.grace_count(), 10u);
  EXPECT_EQ(life.free_count(), 64u - 20u);
}

TEST(VipLifecycle, GraceVipsAreReclaimedOnlyUnreferencedPastTheThresholdAndQuarantineBeforeReuse) {
  auto cfg = small_config(2, 6);
  cfg.reclaim_threshold = milliseconds(5000);
  cfg.grace_accept = milliseconds(5000);
  cfg.quarantine = milliseconds(30000);
  auto table = std::make_shared<VipTable>(cfg.pool_size);
  VipLifecycle life(cfg, table, 2);
  Clock::time_point t{};
  life.reserve_next(t);
  auto s1 = life.commit(t, t + seconds(60));
  const uint32_t held = s1->primary[0], idle = s1->primary[1];
  // A session pins host 0's VIP before the rotation.
  ASSERT_TRUE(table->acquire_session(held, t, kAccept));
  table->add_flow(held);
  life.reserve_next(t + seconds(60));
  life.commit(t + seconds(60), t + seconds(120));
  // Not yet: unreferenced for less than the threshold.
  EXPECT_TRUE(life.reclaim(t + seconds(62)).quarantined.empty());
  auto r = life.reclaim(t + seconds(66));  // idle: zero since 62 s -> only 4 s
  EXPECT_TRUE(r.quarantined.empty());
  r = life.reclaim(t + seconds(67));
  ASSERT_EQ(r.quarantined.size(), 1u);
  EXPECT_EQ(r.quarantined[0].first, idle);
  EXPECT_EQ(table->load(idle).state, VipState::kQuarantine);
  EXPECT_EQ(table->load(held).state, VipState::kGrace) << "a referenced VIP must stay in Grace";
  // The pinned session ends; its VIP follows after the threshold.
  table->drop_flow(held);
  table->release_session(held);
  EXPECT_TRUE(life.reclaim(t + seconds(70)).quarantined.empty());
  EXPECT_EQ(life.reclaim(t + seconds(75)).quarantined.size(), 1u);
  // While quarantined, no allocation may hand it out: 6 VIPs, 2 primary, 2 quarantined, 2 free.
  EXPECT_EQ(life.free_count(), 2u);
  auto next = life.reserve_next(t + seconds(80));
  for (auto [h, v] : next) EXPECT_TRUE(v != idle && v != held);
  life.commit(t + seconds(80), t + seconds(140));
  // Back to the pool only after the quarantine period.
  EXPECT_EQ(life.reclaim(t + seconds(96)).freed, 0u);
  EXPECT_EQ(life.reclaim(t + seconds(97)).freed, 1u);  // idle: quarantined at 67 s
  EXPECT_EQ(table->load(idle).state, VipState::kFree);
}

TEST(VipLifecycle, ANewSessionBindsAGraceVipOnlyInsideTheAcceptWindow) {
  auto cfg = small_config(1, 4);
  auto table = std::make_shared<VipTable>(cfg.pool_size);
  VipLifecycle life(cfg, table, 1);
  Clock::time_point t{};
  life.reserve_next(t);
  const uint32_t v = life.commit(t, t + seconds(60))->primary[0];
  life.reserve_next(t + seconds(60));
  life.commit(t + seconds(60), t + seconds(120));
  EXPECT_EQ(table->acquire_session(v, t + seconds(64), kAccept), 0u);  // owner host 0
  EXPECT_FALSE(table->acquire_session(v, t + seconds(65), kAccept));
  table->release_session(v);
}

TEST(VipLifecycle, BindAndReclaimCannotBothWinTheSameVip) {
  auto cfg = small_config(1, 4);
  cfg.grace_accept = milliseconds(0);
  cfg.reclaim_threshold = milliseconds(0);
  auto table = std::make_shared<VipTable>(cfg.pool_size);
  VipLifecycle life(cfg, table, 1);
  Clock::time_point t{};
  life.reserve_next(t);
  const uint32_t v = life.commit(t, t + seconds(60))->primary[0];
  life.reserve_next(t);
  life.commit(t, t + seconds(60));
  // Grace with an accept window of 0: a bind must fail, so reclaim wins.
  EXPECT_FALSE(table->acquire_session(v, t, milliseconds(0)));
  EXPECT_EQ(life.reclaim(t).quarantined.size(), 1u);
  // And a quarantined VIP is never bound, whatever the window.
  EXPECT_FALSE(table->acquire_session(v, t, seconds(100)));
  // The other way round: a reference taken first keeps reclaim off.
  const uint32_t w = life.current()->primary[0];
  ASSERT_TRUE(table->acquire_session(w, t, kAccept));
  life.reserve_next(t);
  life.commit(t, t + seconds(60));
  EXPECT_FALSE(table->try_quarantine(w));
  EXPECT_EQ(table->load(w).sessions, 1u);
}

TEST(VipLifecycle, AllocationIsUniformOverTheFreePool) {
  std::map<uint32_t, int> hits;
  const int n = 20000;
  for (int i = 0; i < n; ++i) hits[VipLifecycle::uniform(10)]++;
  ASSERT_EQ(hits.size(), 10u);
  for (auto [v, c] : hits) {
    EXPECT_LT(v, 10u);
    EXPECT_NEAR(c, n / 10, n / 10 * 0.15) << "bucket " << v;
  }
}

TEST(CpamConfig, Table1DefaultsAndBadValuesNamed) {
  auto ok = core::Config::parse("[cpam]\nhosts = [\"h1=10.0.0.1\", \"h2=10.0.0.2\"]\n");
  ASSERT_TRUE(ok);
  const CpamConfig c = read_cpam_config(*ok);
  for (const auto& p : ok->finish()) ADD_FAILURE() << p;
  EXPECT_EQ(c.rotation_interval, seconds(60));
  EXPECT_EQ(c.pool_size, 6000u);
  EXPECT_EQ(c.batch_hosts, 0u);  // derived from T and the host count: Table 1's 20 at its scale
  EXPECT_EQ(c.batch_delay, milliseconds(150));
  EXPECT_EQ(rotation_batch_size(c, 500), 20u);
  EXPECT_EQ(switch_batch_cap(c), 300u);  // 2,000 FlowMods a second over 150 ms
  EXPECT_EQ(c.tcp_idle, seconds(15));
  EXPECT_EQ(c.udp_active, seconds(30));
  EXPECT_EQ(c.reclaim_threshold, seconds(5));
  EXPECT_EQ(c.quarantine, seconds(30));
  EXPECT_EQ(c.vip_priority, 100);
  EXPECT_EQ(c.table_miss_priority, 0);
  EXPECT_EQ(c.hosts.size(), 2u);
  auto bad = core::Config::parse(
      "[cpam]\nruntime = \"threads\"\nvip_range = \"10.0.128.0/28\"\ntranslation = \"first_hop\"\n"
      "hosts = [\"h1=10.0.128.1\", \"h1=10.0.0.2\", \"bogus\"]\n");
  ASSERT_TRUE(bad);
  read_cpam_config(*bad);
  std::string all;
  for (const auto& p : bad->finish()) all += p + "\n";
  EXPECT_NE(all.find("cpam.runtime"), std::string::npos) << all;
  EXPECT_NE(all.find("cpam.vip_pool"), std::string::npos) << all;
  EXPECT_NE(all.find("cpam.translation"), std::string::npos) << all;
  EXPECT_NE(all.find("inside vip_range"), std::string::npos) << all;
  EXPECT_NE(all.find("'h1' twice"), std::string::npos) << all;
  EXPECT_NE(all.find("'bogus'"), std::string::npos) << all;
}

TEST(CpamConfig, RotationPacingFollowsTAndTheHostCount) {
  CpamConfig c;
  c.rotation_interval = seconds(10);
  // 17 batches of 5,883 would fit 2.5 s of T = 10 s, 150 ms apart; at most 500 a batch: 200
  // batches, 12 ms apart (2.4 s)
  EXPECT_EQ(rotation_pacing(c, 100'000).hosts, 500u);
  EXPECT_EQ(rotation_pacing(c, 100'000).delay, milliseconds(12));
  EXPECT_EQ(switch_batch_cap(c, rotation_pacing(c, 100'000).delay), 24u);  // 2,000 a second over 12 ms
  c.rotation_batch_max = 0;  // no cap: the 17 batches
  EXPECT_EQ(rotation_pacing(c, 100'000).hosts, 5883u);
  EXPECT_EQ(rotation_pacing(c, 100'000).delay, milliseconds(150));
  c.rotation_batch_max = 500;
  c.rotation_interval = seconds(1);
  EXPECT_EQ(rotation_pacing(c, 10'000).hosts, 500u);  // 250 ms of T = 1 s: 20 batches 12 ms apart
  EXPECT_EQ(rotation_pacing(c, 10'000).delay, milliseconds(12));
  EXPECT_EQ(rotation_batch_size(c, 10), 20u);         // never below Table 1's 20
  EXPECT_EQ(rotation_pacing(c, 10).delay, milliseconds(150));
  c.rotation_interval = seconds(60);
  EXPECT_EQ(rotation_pacing(c, 500).hosts, 20u);      // Table 1 at its scale
  EXPECT_EQ(rotation_pacing(c, 500).delay, milliseconds(150));
  c.rotation_interval = seconds(1);
  EXPECT_EQ(rotation_pacing(c, 10'000'000).delay, milliseconds(2));  // the gap never below 2 ms
  c.batch_hosts = 3;
  EXPECT_EQ(rotation_batch_size(c, 10'000), 3u);      // set: Table 1's fixed pacing
  EXPECT_EQ(rotation_pacing(c, 10'000).delay, milliseconds(150));
  c.switch_flowmod_budget = 0;
  EXPECT_EQ(switch_batch_cap(c), SIZE_MAX);
  c.switch_flowmod_budget = 1;
  EXPECT_EQ(switch_batch_cap(c), 1u);                 // at least one, so a rotation ends
  auto bad = core::Config::parse("[cpam]\nrotation_share = 2.0\nswitch_flowmod_budget = -1\nprobe_budget = 0\n");
  ASSERT_TRUE(bad);
  read_cpam_config(*bad);
  std::string all;
  for (const auto& p : bad->finish()) all += p + "\n";
  EXPECT_NE(all.find("cpam.rotation_share"), std::string::npos) << all;
  EXPECT_NE(all.find("cpam.switch_flowmod_budget"), std::string::npos) << all;
  EXPECT_NE(all.find("cpam.probe_budget"), std::string::npos) << all;
}

TEST(Guard, CoverGivesTheFewestBlocksHoldingExactlyTheAddresses) {
  using guard::Prefix;
  const uint32_t b = pkt::ipv4(10, 0, 0, 0).value;
  std::vector<uint32_t> ips;
  for (uint32_t i = 1; i <= 16; ++i) ips.push_back(b + i);
  EXPECT_EQ(guard::cover(ips),
            (std::vector<Prefix>{{b + 1, 32}, {b + 2, 31}, {b + 4, 30}, {b + 8, 29}, {b + 16, 32}}));
  ips.push_back(b + 3);  // a duplicate changes nothing
  EXPECT_EQ(guard::cover(ips).size(), 5u);
  // 500 hosts in the testbed's scheme (10.0.0.1-250, 10.0.1.1-250) in a handful of rules, and no
  // block ever holds an address that was not listed.
  ips.clear();
  for (uint32_t n = 0; n < 500; ++n) ips.push_back(b + (n / 250) * 256 + n % 250 + 1);
  const auto c = guard::cover(ips);
  EXPECT_EQ(c.size(), 26u);  // per /24: .1/32 .2/31 .4/30 ... .240/29 .248/31 .250/32
  uint64_t covered = 0;
  for (const Prefix& p : c) {
    covered += uint64_t{1} << (32 - p.len);
    for (uint64_t a = p.base; a < p.base + (uint64_t{1} << (32 - p.len)); ++a)
      EXPECT_TRUE(std::find(ips.begin(), ips.end(), static_cast<uint32_t>(a)) != ips.end()) << a;
  }
  EXPECT_EQ(covered, 500u);
  EXPECT_TRUE(guard::cover({}).empty());
}

TEST(CpamConfig, GuardDefaultsAndBadValuesNamed) {
  auto ok = core::Config::parse("[cpam]\nhosts = [\"h1=10.0.0.1\"]\nreal_allowed_from = [\"10.0.255.1\"]\n");
  ASSERT_TRUE(ok);
  const CpamConfig c = read_cpam_config(*ok);
  for (const auto& p : ok->finish()) ADD_FAILURE() << p;
  EXPECT_EQ(c.ipv6, Ipv6Policy::kBlock);
  EXPECT_TRUE(c.source_guard);
  EXPECT_TRUE(c.block_real);
  EXPECT_EQ(c.real_allowed_from, (std::vector<uint32_t>{pkt::ipv4(10, 0, 255, 1).value}));
  auto bad = core::Config::parse(
      "[cpam]\nipv6 = \"maybe\"\nreal_allowed_from = [\"nowhere\", \"10.0.0.1\"]\nguard_priority = 50\n"
      "hosts = [\"h1=10.0.0.1\"]\n");
  ASSERT_TRUE(bad);
  read_cpam_config(*bad);
  std::string all;
  for (const auto& p : bad->finish()) all += p + "\n";
  EXPECT_NE(all.find("cpam.ipv6"), std::string::npos) << all;
  EXPECT_NE(all.find("'nowhere'"), std::string::npos) << all;
  EXPECT_NE(all.find("cpam.guard_priority"), std::string::npos) << all;
  EXPECT_NE(all.find("is a protected host's"), std::string::npos) << all;
}

// ---- the app on a fake campus -------------------------------------------------------------

struct Host {
  std::string name;
  Mac mac;
  Ipv4Addr ip;
};

// s1 core; s2, s3 aggregation; s4..s7 edges on both aggs; 2 hosts per edge (ports 1-2).
class CpamFabric : public ::testing::Test {
 protected:
  // The first `protected_hosts` hosts are protected; the rest are ordinary stations.
  void build(unsigned shards, RuntimeMode mode, size_t protected_hosts = 8) {
    backends_ = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
    auto topo_due = std::make_shared<data::Due>(backends_);
    (void)topo_due->init("topology", data::kProducer, {}, {{"network/topology/**", std::nullopt}});
    auto cpam_due = std::make_shared<data::Due>(backends_);
    (void)cpam_due->init("cpam", data::kProducer | data::kConsumer, {{"network/topology/**", std::nullopt}},
                         {{"network/cpam/**", std::nullopt}});
    auto fwd_due = std::make_shared<data::Due>(backends_);
    (void)fwd_due->init("forwarding", data::kConsumer, {{"network/topology/**", std::nullopt}}, {});
    topology::TopologyConfig tc;
    tc.port_settle = milliseconds(1500);
    topo_ = std::make_shared<topology::TopologyService>(tc, topo_due);
    for (int n = 1; n <= 8; ++n)
      hosts_.push_back({"h" + std::to_string(n), Mac{static_cast<uint64_t>(n)},
                        pkt::ipv4(10, 0, 0, static_cast<uint8_t>(n))});
    cfg_.rotation_interval = seconds(10);
    cfg_.pool_size = 64;
    cfg_.vip_prefix_len = 24;
    cfg_.batch_hosts = 3;
    cfg_.commit_off_loop = false;  // the fake fabric's manual clock: the commit waits on the loop
    cfg_.batch_delay = mode == RuntimeMode::kCooperative ? milliseconds(0) : milliseconds(150);
    cfg_.mode = mode;
    for (size_t i = 0; i < protected_hosts && i < hosts_.size(); ++i) cfg_.hosts.push_back({hosts_[i].name, hosts_[i].ip.value});
    svc_ = std::make_shared<CpamService>(cfg_, cpam_due, nullptr);
    auto sub = cpam_due->observe("network/cpam/rotation", [this](const data::RecordPtr&) { ++rotations_; });
    ASSERT_TRUE(sub);
    mapping_sub_ = std::move(*sub);
    fabric_ = std::make_unique<FakeFabric>(shards, [this, fwd_due](unsigned shard) {
      std::vector<std::unique_ptr<southbound::App>> v;
      v.push_back(std::make_unique<topology::Topology>(topo_, shard));
      auto c = std::make_unique<Cpam>(svc_, shard);
      cpam_[shard] = c.get();
      v.push_back(std::move(c));
      v.push_back(std::make_unique<FabricForwarding>(ForwardingConfig{}, fwd_due, nullptr));
      return v;
    });
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
      for (uint32_t p = 1; p <= 2; ++p) fabric_->attach(hosts_[static_cast<size_t>(n++)].name, e, p);
    }
    fabric_->advance(milliseconds(2000));  // discovery and port settling
    // Every host asks the resolver once: topology learns where it is.
    for (const auto& h : hosts_) resolve(h, "h1");
  }
  void TearDown() override {
    mapping_sub_.cancel();
    fabric_.reset();
  }
  const Host& host(int n) const { return hosts_.at(static_cast<size_t>(n - 1)); }
  Cpam& home() { return *cpam_.at(0); }

  static Bytes dns_query(const Host& from, const std::string& name, uint16_t id) {
    Bytes q = {static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
    size_t start = 0;
    while (start <= name.size()) {
      size_t dot = name.find('.', start);
      if (dot == std::string::npos) dot = name.size();
      q.push_back(static_cast<uint8_t>(dot - start));
      q.insert(q.end(), name.begin() + static_cast<long>(start), name.begin() + static_cast<long>(dot));
      start = dot + 1;
    }
    q.insert(q.end(), {0, 0, 1, 0, 1});
    pkt::EthSpec eth;
    eth.src = from.mac;
    eth.dst = Mac{virtual_mac(0x0a00fffd)};
    pkt::Ipv4Spec ip;
    ip.src = from.ip;
    ip.dst = pkt::ipv4(10, 0, 255, 253);
    return pkt::build_udp(eth, ip, 40000, 53, q);
  }
  // `from` resolves `name`.cpam.lan; returns (rcode, address or 0, ttl).
  std::tuple<int, uint32_t, uint32_t> resolve(const Host& from, const std::string& name) {
    fabric_->clear_deliveries();
    fabric_->send(from.name, dns_query(from, name + ".cpam.lan", 7));
    for (const auto& [to, frame] : fabric_->deliveries()) {
      if (to != from.name) continue;
      auto p = pkt::parse(frame);
      if (!p || !p->udp || p->udp->src_port != 53) continue;
      const auto& d = p->udp->payload;
      const int rcode = d[3] & 0x0f;
      const int an = (d[6] << 8) | d[7];
      if (an == 0) return {rcode, 0, 0};
      const size_t a = d.size() - 16;  // the one A record, at the end
      const uint32_t ttl = (uint32_t{d[a + 6]} << 24) | (uint32_t{d[a + 7]} << 16) | (d[a + 8] << 8) | d[a + 9];
      const uint32_t addr = (uint32_t{d[a + 12]} << 24) | (uint32_t{d[a + 13]} << 16) | (d[a + 14] << 8) | d[a + 15];
      return {rcode, addr, ttl};
    }
    return {-1, 0, 0};
  }
  uint32_t vip(const Host& h) {
    auto [rcode, addr, ttl] = resolve(h.name == "h1" ? host(2) : host(1), h.name);
    EXPECT_EQ(rcode, 0);
    return addr;
  }
  Bytes tcp(const Host& from, uint32_t to_vip, uint16_t sport, uint16_t dport, uint16_t flags = pkt::tcpflag::kSyn) {
    pkt::EthSpec eth;
    eth.src = from.mac;
    eth.dst = Mac{virtual_mac(to_vip)};
    pkt::Ipv4Spec ip;
    ip.src = from.ip;
    ip.dst = Ipv4Addr{to_vip};
    pkt::TcpSpec t;
    t.src_port = sport;
    t.dst_port = dport;
    t.flags = flags;
    return pkt::build_tcp(eth, ip, t);
  }
  // What `to` received last: (src ip, dst ip, src mac).
  struct Seen {
    uint32_t src = 0, dst = 0;
    uint64_t src_mac = 0;
    bool checksum_ok = false;
  };
  std::optional<Seen> received(const std::string& to) {
    std::optional<Seen> out;
    for (const auto& [h, frame] : fabric_->deliveries()) {
      if (h != to) continue;
      auto p = pkt::parse(frame);
      if (!p || !p->ipv4) continue;
      out = Seen{p->ipv4->src.value, p->ipv4->dst.value, p->eth.src.value, pkt::l4_checksum_ok(*p->ipv4)};
    }
    return out;
  }
  size_t flows_of(CookieKind k) {
    size_t n = 0;
    for (uint64_t d = 1; d <= 7; ++d)
      n += fabric_->sw(d).flows_in_cookie_range(make_cookie(k, 0, 0), 0xfff0'0000'0000'0000ULL).size();
    return n;
  }
  // Standing last-hop rules of one VIP (cookie = kind + VIP index), on any switch.
  size_t vip_rules(uint32_t vip_ip) {
    size_t n = 0;
    const uint64_t c = make_cookie(CookieKind::kVipRule, 0, vip_ip - cfg_.vip_base - 1);
    for (uint64_t d = 1; d <= 7; ++d) n += fabric_->sw(d).flows_in_cookie_range(c, ~uint64_t{0}).size();
    return n;
  }
  // Answers the guard's pending flow-stats polls from the fake switches' tables (the switches
  // count packets per flow as OVS does); other requests (resync) stay unanswered as before.
  void answer_guard_stats() {
    std::vector<std::pair<southbound::ReplyCallback, ofp::Message>> replies;
    for (uint64_t d = 1; d <= 7; ++d) {
      auto& sw = fabric_->sw(d);
      auto& reqs = sw.requests();
      for (auto it = reqs.begin(); it != reqs.end();) {
        const auto* mp = std::get_if<ofp::MultipartRequest>(&it->body);
        const auto* fr = mp != nullptr ? std::get_if<ofp::FlowStatsRequest>(&mp->body) : nullptr;
        if (fr == nullptr || fr->cookie != guard::kCookie) {
          ++it;
          continue;
        }
        std::vector<ofp::FlowStats> all;
        for (const auto& e : sw.flows_in_cookie_range(fr->cookie, fr->cookie_mask)) {
          ofp::FlowStats f;
          f.cookie = e.cookie;
          f.priority = e.priority;
          f.packet_count = e.packet_count;
          f.match = e.match;
          all.push_back(std::move(f));
        }
        ofp::MultipartReply rep;
        rep.type = ofp::MultipartType::kFlow;
        rep.body = std::move(all);
        replies.emplace_back(std::move(it->on_reply), ofp::Message{1, rep});
        it = reqs.erase(it);
      }
    }
    for (auto& [cb, m] : replies) cb(&m, nullptr, false);
    fabric_->run();
  }
  uint32_t state_refs(uint32_t vip_ip) { return svc_->vips().load(vip_ip - cfg_.vip_base - 1).sessions; }

  CpamConfig cfg_;
  std::shared_ptr<data::Backends> backends_;
  std::shared_ptr<topology::TopologyService> topo_;
  std::shared_ptr<CpamService> svc_;
  std::map<unsigned, Cpam*> cpam_;
  std::unique_ptr<FakeFabric> fabric_;
  std::vector<Host> hosts_;
  data::Due::Subscription mapping_sub_;
  int rotations_ = 0;
};

TEST_F(CpamFabric, DnsAnswersTheCurrentVipWithATtlInsideTheEpoch) {
  build(2, RuntimeMode::kSharded);
  auto [rcode, a, ttl] = resolve(host(1), "h8");
  EXPECT_EQ(rcode, 0);
  EXPECT_TRUE(svc_->in_pool(a));
  EXPECT_EQ(a, cfg_.vip_ip(home().snapshot()->primary[7]));
  EXPECT_LE(ttl, 10u);
  EXPECT_EQ(std::get<0>(resolve(host(1), "h99")), 3) << "unknown name: NXDOMAIN";
  fabric_->clear_deliveries();
  auto q = dns_query(host(1), "example.com", 9);
  fabric_->send("h1", q);
  auto got = received("h1");
  ASSERT_TRUE(got);
  EXPECT_EQ(std::get<0>(resolve(host(1), "h2")), 0);
  EXPECT_EQ(svc_->counters().dns_refused, 1u);
  EXPECT_EQ(svc_->counters().dns_nxdomain, 1u);
}

TEST_F(CpamFabric, ArpForLiveVipsOnlyAndNeverForProtectedRealAddresses) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v8 = vip(host(8));
  fabric_->clear_deliveries();
  fabric_->send("h1", pkt::arp_request(host(1).mac, host(1).ip, Ipv4Addr{v8}));
  ASSERT_EQ(fabric_->deliveries().size(), 1u);
  auto p = pkt::parse(fabric_->deliveries()[0].second);
  ASSERT_TRUE(p && p->arp);
  EXPECT_EQ(p->arp->sha.value, virtual_mac(v8));
  // An unassigned pool address, and h8's real address: no answer, not flooded.
  uint32_t unused = cfg_.vip_base + 1;
  while (unused == v8 || svc_->vips().load(unused - cfg_.vip_base - 1).state != VipState::kFree) ++unused;
  fabric_->clear_deliveries();
  fabric_->send("h1", pkt::arp_request(host(1).mac, host(1).ip, Ipv4Addr{unused}));
  EXPECT_EQ(fabric_->send("h1", pkt::arp_request(host(1).mac, host(1).ip, host(8).ip)).packet_ins, 0u)
      << "dropped by the switch's guard rule, no PacketIn";
  EXPECT_TRUE(fabric_->deliveries().empty());
  fabric_->advance(milliseconds(1100));  // the guard's flow-stats poll
  answer_guard_stats();
  EXPECT_GE(svc_->stats_json()["guard"]["real_dropped"].get<uint64_t>(), 1u);
}

// ---- the edge guard (guard.cpp, docs/threat-model.md) ------------------------------------

// An ICMPv6 echo request from `from` to `dst` (16 bytes), as `ping -6` sends it.
Bytes ipv6_ping(const Host& from, uint64_t dst_mac, const std::array<uint8_t, 16>& dst) {
  Bytes f;
  for (int i = 5; i >= 0; --i) f.push_back(static_cast<uint8_t>(dst_mac >> (8 * i)));
  for (int i = 5; i >= 0; --i) f.push_back(static_cast<uint8_t>(from.mac.value >> (8 * i)));
  f.insert(f.end(), {0x86, 0xdd, 0x60, 0, 0, 0, 0, 8, 58, 64});
  const std::array<uint8_t, 16> ll = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0,
                                      static_cast<uint8_t>(from.mac.value)};
  f.insert(f.end(), ll.begin(), ll.end());
  f.insert(f.end(), dst.begin(), dst.end());
  f.insert(f.end(), {128, 0, 0, 0, 0, 1, 0, 1});
  return f;
}

TEST_F(CpamFabric, TheGuardDropsIpv6AndRealAddressesOnTheSwitchWhateverTheSource) {
  build(2, RuntimeMode::kSharded);
  // IPv6: h8's fixed link-local address (from its MAC), and all-nodes multicast.
  const std::array<uint8_t, 16> h8_ll = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 8};
  const std::array<uint8_t, 16> all_nodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h1", ipv6_ping(host(1), host(8).mac.value, h8_ll)).packet_ins, 0u);
  EXPECT_EQ(fabric_->send("h1", ipv6_ping(host(1), 0x333300000001ULL, all_nodes)).packet_ins, 0u);
  EXPECT_TRUE(fabric_->deliveries().empty());
  // h8's real address: from h1's own address, from one it chose (ip addr add), from h2's.
  for (Ipv4Addr src : {host(1).ip, pkt::ipv4(10, 0, 200, 1), host(2).ip}) {
    auto d = fabric_->send("h1", pkt::icmp_echo(host(1).mac, host(8).mac, src, host(8).ip, false, 1, 1));
    EXPECT_EQ(d.packet_ins, 0u) << src.to_string() << ": the switch drops it, the controller never sees it";
  }
  EXPECT_EQ(fabric_->send("h1", pkt::arp_request(host(1).mac, pkt::ipv4(10, 0, 200, 1), host(8).ip)).packet_ins, 0u);
  EXPECT_TRUE(fabric_->deliveries().empty());
  // Counted from the switches' flow stats.
  fabric_->advance(milliseconds(1100));
  answer_guard_stats();
  const auto g = svc_->stats_json()["guard"];
  EXPECT_EQ(g["ipv6_dropped"].get<uint64_t>(), 2u) << g.dump();
  EXPECT_EQ(g["real_dropped"].get<uint64_t>(), 4u) << g.dump();
  EXPECT_EQ(g["real_blocks"].get<uint64_t>(), 4u) << "10.0.0.1-8 is .1/32 .2/31 .4/30 .8/32";
}

// Issue [runtime]: past real_block_max_rules (100,000 addresses make ~5,200 blocks: 25 million
// rules on 2,388 switches) each address's drops go only to its host's switch; a packet for it
// entering elsewhere reaches the controller, which drops it.
TEST_F(CpamFabric, PastTheRuleBudgetRealAddressDropsSitAtEachHostsSwitch) {
  cfg_.real_block_max_rules = 0;
  build(2, RuntimeMode::kSharded);
  EXPECT_EQ(svc_->stats_json()["guard"]["real_placement"], "host_switch");
  const uint64_t at8 = topo_->core().host(host(8).mac.value)->at.dpid;
  const uint64_t low8 = guard::kHostLow | *svc_->hosts().find_ip(host(8).ip.value);
  for (uint64_t d = 1; d <= 7; ++d) {
    EXPECT_EQ(fabric_->sw(d).flows_in_cookie_range(guard::cookie(guard::Kind::kRealDrop, low8), ~uint64_t{0}).size(),
              d == at8 ? 2u : 0u) << "switch " << d;
    // No block rules anywhere: only per-host /32s.
    for (const auto& f : fabric_->sw(d).flows_in_cookie_range(guard::cookie(guard::Kind::kRealDrop), guard::kKindMask))
      EXPECT_NE(f.cookie & guard::kHostLow, 0u);
  }
  fabric_->clear_deliveries();
  // From h7, on h8's switch: dropped by the switch.
  EXPECT_EQ(fabric_->send("h7", pkt::icmp_echo(host(7).mac, host(8).mac, host(7).ip, host(8).ip, false, 1, 1)).packet_ins, 0u);
  // From h1 (another switch), with an address it chose: the controller drops it.
  const auto real0 = svc_->counters().real_blocked;
  fabric_->send("h1", pkt::icmp_echo(host(1).mac, host(8).mac, pkt::ipv4(10, 0, 200, 1), host(8).ip, false, 1, 1));
  fabric_->send("h1", pkt::arp_request(host(1).mac, pkt::ipv4(10, 0, 200, 1), host(8).ip));
  EXPECT_FALSE(received("h8"));
  EXPECT_TRUE(fabric_->deliveries().empty());
  EXPECT_GT(svc_->counters().real_blocked + svc_->counters().spoofed_src, real0);
}

TEST_F(CpamFabric, TheSourceGuardDropsAddressesAndMacsNotBoundToThePort) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v8 = vip(host(8));
  const auto spoof_rules = [&] {
    return fabric_->sw(4).flows_in_cookie_range(guard::cookie(guard::Kind::kSpoof), guard::kKindMask).size();
  };
  Host me = host(1);
  // A self-chosen address (ip addr add 10.0.200.1/16 on h1) to h8's VIP: dropped, and its
  // repeats stay on the switch (one drop rule, no more PacketIns).
  me.ip = pkt::ipv4(10, 0, 200, 1);
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h1", tcp(me, v8, 40000, 80)).packet_ins, 1u);
  EXPECT_EQ(fabric_->send("h1", tcp(me, v8, 40001, 80)).packet_ins, 0u);
  EXPECT_FALSE(received("h8"));
  // Another protected host's address (h2's, on the same switch).
  me = host(1);
  me.ip = host(2).ip;
  fabric_->send("h1", tcp(me, v8, 40002, 80));
  EXPECT_FALSE(received("h8"));
  EXPECT_EQ(svc_->counters().spoofed_src, 2u);
  EXPECT_EQ(spoof_rules(), 2u);
  // h8's MAC and address from h1's port (a gratuitous claim): dropped, and not a move.
  const auto h8_at = topo_->core().host(host(8).mac.value)->at;
  me = host(1);
  me.mac = host(8).mac;
  me.ip = host(8).ip;
  fabric_->send("h1", pkt::arp_request(me.mac, me.ip, Ipv4Addr{v8}));
  EXPECT_EQ(topo_->core().host(host(8).mac.value)->at, h8_at);
  EXPECT_EQ(topo_->core().figures().host_claims_refused, 1u);
  // An ARP claiming h8's address from h1's own MAC (cache poisoning): dropped, and topology
  // keeps the address with h8.
  fabric_->send("h1", pkt::arp_request(host(1).mac, host(8).ip, Ipv4Addr{v8}));
  EXPECT_EQ(topo_->core().host(host(8).mac.value)->at, h8_at);
  EXPECT_EQ(topo_->core().host(host(8).mac.value)->ipv4, host(8).ip.value);
  EXPECT_GE(topo_->core().figures().ip_claims_refused, 1u);
  EXPECT_EQ(svc_->counters().spoofed_src, 4u);
  // h8's MAC again, in TCP this time: the switch already drops it.
  EXPECT_EQ(fabric_->send("h1", tcp(me, v8, 40003, 80)).packet_ins, 0u);
  EXPECT_FALSE(received("h8"));
  EXPECT_EQ(spoof_rules(), 4u);
  // h1 as itself still reaches h8 by its VIP.
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), v8, 40010, 80));
  auto at8 = received("h8");
  ASSERT_TRUE(at8);
  EXPECT_EQ(at8->dst, host(8).ip.value);
  // The drop rules expire (hard timeout), their counts added when they do.
  fabric_->advance(cfg_.spoof_drop + milliseconds(1100));
  EXPECT_EQ(spoof_rules(), 0u);
  EXPECT_EQ(svc_->stats_json()["guard"]["spoof_dropped"].get<uint64_t>(), 2u) << "the repeats of 10.0.200.1 and h8's MAC";
}

TEST_F(CpamFabric, RealAddressesAnswerOnlyTheAllowedInfrastructure) {
  cfg_.real_allowed_from = {pkt::ipv4(10, 0, 0, 8).value};
  build(2, RuntimeMode::kSharded, 6);  // h7 and h8 are not protected; h8 is infrastructure
  auto ping = [&](int from, int to, uint16_t seq) {
    return fabric_->send(host(from).name, pkt::icmp_echo(host(from).mac, host(to).mac, host(from).ip, host(to).ip,
                                                         false, 1, seq));
  };
  // h8 reaches h1's real address: its first packet goes to the controller (the allow rule),
  // forwarding installs its path, and the next one rides the flows.
  fabric_->clear_deliveries();
  EXPECT_GE(ping(8, 1, 1).packet_ins, 1u);
  EXPECT_TRUE(received("h1"));
  fabric_->clear_deliveries();
  EXPECT_EQ(ping(8, 1, 2).packet_ins, 0u);
  EXPECT_TRUE(received("h1"));
  // h7, next to it but not listed, does not: dropped on its own switch.
  fabric_->clear_deliveries();
  EXPECT_EQ(ping(7, 1, 3).packet_ins, 0u);
  EXPECT_FALSE(received("h1"));
  // The blocks hold only protected addresses: h7 still reaches h8 as any station.
  fabric_->clear_deliveries();
  ping(7, 8, 4);
  EXPECT_TRUE(received("h8"));
}

TEST_F(CpamFabric, AForgedVipSourceOnTheVipOwnersSwitchIsDroppedAtTheEdgePort) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v2 = vip(host(2)), v8 = vip(host(8));
  // h8 -> h2 puts v2's standing rule on s4 (h1's and h2's switch).
  fabric_->send("h8", tcp(host(8), v2, 41000, 80));
  ASSERT_EQ(vip_rules(v2), 1u);
  // h1 forges h8's VIP as its source: it would match v2's rule on s4 and reach h2.
  Host forged = host(1);
  forged.ip = Ipv4Addr{v8};
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h1", tcp(forged, v2, 41001, 80)).packet_ins, 0u);
  EXPECT_FALSE(received("h2"));
  EXPECT_EQ(fabric_->sw(4).flows_in_cookie_range(guard::cookie(guard::Kind::kVipSource), guard::kKindMask).size(), 2u)
      << "one per edge port of s4";
}

TEST_F(CpamFabric, PacketsCrossTheFabricByVipAndNeitherHostSeesARealPeerAddress) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v8 = vip(host(8)), v1 = vip(host(1));
  fabric_->clear_deliveries();
  auto d = fabric_->send("h1", tcp(host(1), v8, 33000, 80));
  EXPECT_EQ(d.packet_ins, 1u);
  auto at8 = received("h8");
  ASSERT_TRUE(at8);
  EXPECT_EQ(at8->src, v1) << "h8 must see h1's VIP, not its real address";
  EXPECT_EQ(at8->dst, host(8).ip.value);
  EXPECT_EQ(at8->src_mac, virtual_mac(v1));
  EXPECT_TRUE(at8->checksum_ok);
  // The reply goes to h1's VIP and needs no controller: both directions were installed.
  d = fabric_->send("h8", tcp(host(8), v1, 80, 33000, pkt::tcpflag::kSyn | pkt::tcpflag::kAck));
  EXPECT_EQ(d.packet_ins, 0u);
  auto at1 = received("h1");
  ASSERT_TRUE(at1);
  EXPECT_EQ(at1->src, v8);
  EXPECT_EQ(at1->dst, host(1).ip.value);
  EXPECT_TRUE(at1->checksum_ok);
  // The rest of the session runs on the flows.
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h1", tcp(host(1), v8, 33000, 80, pkt::tcpflag::kAck)).packet_ins, 0u);
  EXPECT_TRUE(received("h8"));
  // Nothing addressed to a real address of a protected host gets through.
  fabric_->clear_deliveries();
  pkt::EthSpec eth;
  eth.src = host(1).mac;
  eth.dst = host(8).mac;
  pkt::Ipv4Spec ip;
  ip.src = host(1).ip;
  ip.dst = host(8).ip;
  fabric_->send("h1", pkt::build_tcp(eth, ip, pkt::TcpSpec{}));
  EXPECT_FALSE(received("h8"));
}

TEST_F(CpamFabric, AnEstablishedSessionKeepsItsPinnedVipsAcrossRotations) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v8 = vip(host(8)), v1 = vip(host(1));
  fabric_->send("h1", tcp(host(1), v8, 33001, 80));
  for (int r = 0; r < 3; ++r) {
    home().rotate_now();
    fabric_->advance(milliseconds(2500));  // batches every 150 ms, then the swap
    fabric_->clear_deliveries();
    EXPECT_EQ(fabric_->send("h1", tcp(host(1), v8, 33001, 80, pkt::tcpflag::kAck)).packet_ins, 0u);
    auto at8 = received("h8");
    ASSERT_TRUE(at8) << "rotation " << r;
    EXPECT_EQ(at8->src, v1);
  }
  EXPECT_NE(vip(host(8)), v8) << "DNS moved on";
  EXPECT_EQ(svc_->vips().load(v8 - cfg_.vip_base - 1).state, VipState::kGrace);
  // The flows idle out; the next packet finds the binding (it lingers) and gets the same pin.
  fabric_->advance(cfg_.tcp_idle + seconds(1));
  fabric_->clear_deliveries();
  auto d = fabric_->send("h1", tcp(host(1), v8, 33001, 80, pkt::tcpflag::kAck));
  EXPECT_EQ(d.packet_ins, 1u);
  auto at8 = received("h8");
  ASSERT_TRUE(at8);
  EXPECT_EQ(at8->src, v1);
  EXPECT_GE(svc_->counters().sessions_reused, 1u);
}

TEST_F(CpamFabric, TheRotationRaceWindowAndReclaimOfRulesAndReferences) {
  build(2, RuntimeMode::kSharded);
  const uint32_t old8 = vip(host(8));
  home().rotate_now();
  fabric_->advance(milliseconds(1000));
  ASSERT_NE(vip(host(8)), old8);
  // Resolved just before the swap, used just after: still bound (inside grace_accept).
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), old8, 34000, 80));
  ASSERT_TRUE(received("h8")) << "a connection racing the rotation must be bound";
  // Past the window the old VIP takes no new connection, but the pinned one goes on.
  fabric_->advance(kAccept);
  fabric_->clear_deliveries();
  fabric_->send("h2", tcp(host(2), old8, 34001, 80));
  EXPECT_FALSE(received("h8"));
  EXPECT_GE(svc_->counters().stale_vip, 1u);
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), old8, 34000, 80, pkt::tcpflag::kAck));
  EXPECT_TRUE(received("h8"));
  EXPECT_EQ(state_refs(old8), 1u);
  // Silence: flows idle out (FLOW_REMOVED), the binding lingers then goes, references drop to
  // zero, and after the threshold the VIP is quarantined and its rule deleted. (Its own rule:
  // how many other VIPs hold rules depends on where the rotations fell meanwhile.)
  EXPECT_GE(vip_rules(old8), 1u) << "a pinned Grace VIP keeps its last-hop rule";
  fabric_->advance(cfg_.tcp_idle + cfg_.session_linger + seconds(2));
  EXPECT_EQ(flows_of(CookieKind::kFirstFwd) + flows_of(CookieKind::kFirstRev) + flows_of(CookieKind::kTransit), 0u);
  EXPECT_EQ(state_refs(old8), 0u);
  fabric_->advance(cfg_.reclaim_threshold + seconds(1));
  EXPECT_EQ(svc_->vips().load(old8 - cfg_.vip_base - 1).state, VipState::kQuarantine);
  EXPECT_EQ(vip_rules(old8), 0u) << "a quarantined VIP's rule is deleted";
  fabric_->clear_deliveries();
  fabric_->send("h3", pkt::arp_request(host(3).mac, host(3).ip, Ipv4Addr{old8}));
  EXPECT_TRUE(fabric_->deliveries().empty()) << "a quarantined VIP does not answer ARP";
}

TEST_F(CpamFabric, RotateNowRestartsTheCadenceAndTheIntervalCanChange) {
  build(2, RuntimeMode::kSharded);
  const int before = rotations_;
  // A manual rotation voids the armed one: the next comes an interval later, not twice as often.
  home().rotate_now();
  fabric_->advance(milliseconds(25500));  // rotations start at +0, +10 s, +20 s (~300 ms each)
  EXPECT_EQ(rotations_ - before, 3);
  // A shorter interval is re-armed from the last start (+20 s, so due at once), then every 4 s.
  svc_->set_tunables({milliseconds(4000), cfg_.batch_hosts, cfg_.batch_delay});
  EXPECT_EQ(svc_->tunables().rotation_interval, milliseconds(4000));
  const int mid = rotations_;
  fabric_->advance(milliseconds(11000));  // starts at +25.5, +29.5, +33.5 s
  EXPECT_EQ(rotations_ - mid, 3);
  EXPECT_EQ(svc_->last_rotation().epoch, svc_->latest()->epoch);
}

// Issue [runtime]: no switch gets more of a rotation's FlowMods per batch than its budget; what
// does not fit waits for the next batch, and every host still gets its rule.
TEST_F(CpamFabric, ARotationKeepsEachSwitchWithinItsFlowModBudget) {
  cfg_.switch_flowmod_budget = 1;  // one rule per switch per 150-ms batch (two hosts per edge)
  build(2, RuntimeMode::kSharded);
  svc_->set_tunables({cfg_.rotation_interval, 8, cfg_.batch_delay});  // every host in one batch
  auto per_switch = [this] {
    std::vector<size_t> n;
    for (uint64_t d = 1; d <= 7; ++d)
      n.push_back(fabric_->sw(d).flows_in_cookie_range(make_cookie(CookieKind::kVipRule, 0, 0), 0xfff0'0000'0000'0000ULL).size());
    return n;
  };
  const size_t rules0 = flows_of(CookieKind::kVipRule);
  auto last = per_switch();
  home().rotate_now();
  fabric_->advance(milliseconds(1));
  int batches = 1;
  for (; svc_->rotating() && batches < 20; ++batches) {
    const auto now = per_switch();
    for (size_t i = 0; i < now.size(); ++i) EXPECT_LE(now[i] - last[i], 1u) << "switch " << i + 1 << ", batch " << batches;
    last = now;
    fabric_->advance(milliseconds(150));
  }
  EXPECT_FALSE(svc_->rotating());
  EXPECT_GE(batches, 2);  // two hosts per edge switch: at least two batches
  EXPECT_EQ(flows_of(CookieKind::kVipRule), rules0 + hosts_.size());
  EXPECT_GT(svc_->counters().rotation_deferred, 0u);
  EXPECT_EQ(rotations_, 1);
}

// A batch goes round the access switches, not down the directory (which lists a switch's hosts
// together): four hosts a batch and one rule per switch per batch fit the 8 hosts on 4 edges in
// exactly two batches, with nothing held back. In directory order the first batch met s4 and s5
// twice each and held two hosts back.
TEST_F(CpamFabric, ARotationsBatchesGoRoundTheSwitches) {
  cfg_.switch_flowmod_budget = 1;
  build(2, RuntimeMode::kSharded);
  svc_->set_tunables({cfg_.rotation_interval, 4, cfg_.batch_delay});
  const size_t rules0 = flows_of(CookieKind::kVipRule);
  const uint64_t deferred0 = svc_->counters().rotation_deferred;
  home().rotate_now();
  fabric_->advance(milliseconds(1));
  EXPECT_EQ(flows_of(CookieKind::kVipRule), rules0 + 4);
  fabric_->advance(milliseconds(150));
  EXPECT_EQ(flows_of(CookieKind::kVipRule), rules0 + hosts_.size());
  EXPECT_EQ(svc_->counters().rotation_deferred, deferred0);
  fabric_->advance(milliseconds(1000));
  EXPECT_FALSE(svc_->rotating());
}

TEST_F(CpamFabric, LocateProbesForHostsNobodyHasSeenStayWithinTheControllersBudget) {
  // Six protected hosts that are attached nowhere: a session to one of them makes CPAM probe for
  // it (an ARP request out of every edge port: one PacketOut for each of the 4 edge switches).
  for (uint8_t n = 1; n <= 6; ++n) cfg_.hosts.push_back({"p" + std::to_string(n), pkt::ipv4(10, 0, 1, n).value});
  cfg_.rotation_interval = seconds(3600);  // the first epoch's batches only
  cfg_.probe_budget = 8;                   // for the controller: 4 a second a shard, one probe
  build(2, RuntimeMode::kSharded);
  std::vector<uint32_t> vips;
  for (int n = 1; n <= 6; ++n) {
    auto [rcode, addr, ttl] = resolve(host(1), "p" + std::to_string(n));
    ASSERT_EQ(rcode, 0) << "p" << n;
    vips.push_back(addr);
  }
  fabric_->advance(seconds(10));  // past every host's backoff; the budget full again
  auto probes_seen = [&] {  // probe frames delivered to hosts (8 host ports: 8 per probe)
    size_t n = 0;
    for (const auto& [to, frame] : fabric_->deliveries()) {
      auto p = pkt::parse(frame);
      if (p && p->arp && (p->arp->tpa.value >> 8) == pkt::ipv4(10, 0, 1, 0).value >> 8) ++n;
    }
    return n;
  };
  for (int round = 0; round < 2; ++round) {
    const auto c0 = svc_->counters();
    fabric_->clear_deliveries();
    for (size_t i = 0; i < vips.size(); ++i)
      fabric_->send("h1", tcp(host(1), vips[i], static_cast<uint16_t>(40000 + 10 * round + i), 80));
    const auto c1 = svc_->counters();
    // One probe fits a shard's share of the budget in a second; the other five are counted, not queued.
    EXPECT_EQ(c1.probes - c0.probes, 1u) << "round " << round;
    EXPECT_EQ(c1.probes_deferred - c0.probes_deferred, 5u) << "round " << round;
    EXPECT_EQ(probes_seen(), 8u) << "round " << round;
    fabric_->advance(seconds(1));
  }
}

TEST_F(CpamFabric, NextEpochRulesArePreInstalledBeforeTheMappingChanges) {
  build(2, RuntimeMode::kSharded);
  const uint32_t before = vip(host(5));
  const size_t rules0 = flows_of(CookieKind::kVipRule);
  home().rotate_now();
  fabric_->advance(milliseconds(160));  // first batches out, not all
  EXPECT_GT(flows_of(CookieKind::kVipRule), rules0);
  EXPECT_EQ(vip(host(5)), before) << "the mapping must not change before the rules are in";
  EXPECT_TRUE(svc_->rotating());
  fabric_->advance(milliseconds(1000));
  EXPECT_FALSE(svc_->rotating());
  EXPECT_NE(vip(host(5)), before);
  EXPECT_EQ(flows_of(CookieKind::kVipRule), rules0 + hosts_.size());
  EXPECT_EQ(rotations_, 1);
}

TEST_F(CpamFabric, UdpAndIcmpSessionsSurviveRotations) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v6 = vip(host(6)), v3 = vip(host(3)), v7 = vip(host(7));
  auto udp = [&](uint16_t seq) {
    pkt::EthSpec eth;
    eth.src = host(3).mac;
    eth.dst = Mac{virtual_mac(v6)};
    pkt::Ipv4Spec ip;
    ip.src = host(3).ip;
    ip.dst = Ipv4Addr{v6};
    const uint8_t payload[2] = {static_cast<uint8_t>(seq >> 8), static_cast<uint8_t>(seq)};
    return pkt::build_udp(eth, ip, 5001, 5000, payload);
  };
  // A packet each way every 2 s for 70 s: 7 rotations (every 10 s) and two UDP active
  // timeouts (30 s), after which the lingering binding gives the same pin back.
  const uint64_t epoch0 = home().snapshot()->epoch;
  for (int t = 0; t < 35; ++t) {
    fabric_->clear_deliveries();
    fabric_->send("h3", udp(static_cast<uint16_t>(t)));
    auto at6 = received("h6");
    ASSERT_TRUE(at6) << "udp at " << 2 * t << " s";
    EXPECT_EQ(at6->src, v3);
    fabric_->clear_deliveries();
    fabric_->send("h4", pkt::icmp_echo(host(4).mac, Mac{virtual_mac(v7)}, host(4).ip, Ipv4Addr{v7}, false, 9,
                                       static_cast<uint16_t>(t)));
    ASSERT_TRUE(received("h7")) << "icmp at " << 2 * t << " s";
    fabric_->advance(seconds(2));
  }
  EXPECT_GE(home().snapshot()->epoch, epoch0 + 6);
  EXPECT_NE(vip(host(6)), v6);
}

TEST_F(CpamFabric, ASwitchThatGoesAwayReleasesTheReferencesOfItsFlows) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v8 = vip(host(8));
  fabric_->send("h1", tcp(host(1), v8, 36000, 80));
  ASSERT_EQ(state_refs(v8), 1u);
  EXPECT_EQ(svc_->vips().load(v8 - cfg_.vip_base - 1).flows, 2u);
  // h8's access switch (s7) disappears: its first-hop flow (server side) goes without a
  // FLOW_REMOVED. The client side's stays (a switch that left the controller may still forward:
  // the session has no other path, see link_gone) until it idles out.
  fabric_->remove_switch(7);
  fabric_->run();
  EXPECT_EQ(svc_->vips().load(v8 - cfg_.vip_base - 1).flows, 1u);
  EXPECT_EQ(state_refs(v8), 1u) << "the binding itself lingers";
  fabric_->advance(cfg_.tcp_idle + cfg_.session_linger + seconds(2));
  EXPECT_EQ(state_refs(v8), 0u);
  EXPECT_EQ(svc_->vips().load(v8 - cfg_.vip_base - 1).flows, 0u);
}

TEST_F(CpamFabric, ASessionWhosePathLosesALinkIsReinstalledOnAnotherWithTheSamePin) {
  build(2, RuntimeMode::kSharded);
  const uint32_t v8 = vip(host(8)), v1 = vip(host(1));
  fabric_->send("h1", tcp(host(1), v8, 37000, 80));
  fabric_->clear_deliveries();
  ASSERT_EQ(fabric_->send("h1", tcp(host(1), v8, 37000, 80, pkt::tcpflag::kAck)).packet_ins, 0u);
  // Both of s4's uplinks are equal; the path takes the lowest dpid (s2, s4 port 3). Pull it.
  fabric_->pull_cable(4, 3, 2, 1);
  fabric_->advance(milliseconds(100));
  EXPECT_GE(svc_->counters().reroutes, 1u);
  fabric_->clear_deliveries();
  auto d = fabric_->send("h1", tcp(host(1), v8, 37000, 80, pkt::tcpflag::kAck));
  EXPECT_EQ(d.packet_ins, 1u) << "its flows were deleted: the next packet comes to the controller";
  auto at8 = received("h8");
  ASSERT_TRUE(at8) << "delivered over s3";
  EXPECT_EQ(at8->src, v1);
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h8", tcp(host(8), v1, 80, 37000, pkt::tcpflag::kAck)).packet_ins, 0u);
  EXPECT_TRUE(received("h1"));
}

// A client port reused for a new connection to the server's newer VIP, while the old connection's
// flows are still alive, is a new session (the integration test's one setup failure before the
// keys carried the VIP).
TEST_F(CpamFabric, AClientPortReusedAcrossEpochsIsANewSession) {
  build(2, RuntimeMode::kSharded);
  const uint32_t old8 = vip(host(8));
  fabric_->send("h1", tcp(host(1), old8, 38000, 5000));
  home().rotate_now();
  fabric_->advance(milliseconds(1000));
  const uint32_t new8 = vip(host(8)), new1 = vip(host(1));
  ASSERT_NE(new8, old8);
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), new8, 38000, 5000));
  auto at8 = received("h8");
  ASSERT_TRUE(at8);
  EXPECT_EQ(at8->src, new1) << "the new session pins the client's current VIP";
  EXPECT_EQ(svc_->counters().sessions_bound, 2u);
}

TEST_F(CpamFabric, CooperativeModeRunsTheSameLogicOnOneThread) {
  build(1, RuntimeMode::kCooperative);
  const uint32_t v8 = vip(host(8)), v1 = vip(host(1));
  fabric_->send("h1", tcp(host(1), v8, 35000, 80));
  home().rotate_now();  // runs to completion: published before it returns
  EXPECT_FALSE(svc_->rotating());
  EXPECT_NE(vip(host(8)), v8);
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), v8, 35000, 80, pkt::tcpflag::kAck));
  auto at8 = received("h8");
  ASSERT_TRUE(at8);
  EXPECT_EQ(at8->src, v1);
}

}  // namespace
}  // namespace sdn::apps::cpam
