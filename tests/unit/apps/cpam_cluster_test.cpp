// CPAM in a cluster (README "Cluster"): three CpamService instances, each with its own
// cluster::Cluster on a private redis-server, on one fake campus where each switch has one
// master instance (cpam_cluster_fabric.hpp; topology runs on an observer that sees them all).
// Exactly one instance rotates and the others mirror its epoch and keep the VIP rules on their
// own switches; a deposed leader's fenced write is refused and it publishes nothing; when the
// leader goes, another one continues at the next epoch with the same VIP states and the switches
// it mastered keep their session rules (adopted by their new masters); a VIP pinned by another
// instance's session is never reclaimed by the leader, and is once that session ends.
// Figures are printed ("figure: ...").
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "apps/cpam/cluster_state.hpp"
#include "apps/cpam/cpam.hpp"
#include "apps/cpam/flows.hpp"
#include "apps/topology/topology.hpp"
#include "cluster/cluster.hpp"
#include "cpam_cluster_fabric.hpp"
#include "data/due.hpp"
#include "fakes/eventually.hpp"
#include "fakes/redis_server.hpp"
#include "fakes/sentinel.hpp"  // redis_call
#include "pkt/build.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::cpam {
namespace {

using pkt::Bytes;
using pkt::Ipv4Addr;
using pkt::Mac;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test::ClusterFabric;
using Real = std::chrono::steady_clock;

double ms_since(Real::time_point t0) { return std::chrono::duration<double, std::milli>(Real::now() - t0).count(); }

// ---- pure parts ------------------------------------------------------------------------------

TEST(CpamShared, RecordsRoundTripAndBadOnesAreRefused) {
  CpamConfig cfg;
  cfg.pool_size = 32;
  cfg.hosts = {{"h1", 1}, {"h2", 2}};
  const HostDirectory dir(cfg.hosts);
  shared::SharedVips s;
  s.vips.epoch = 7;
  s.vips.primary = {3, 4};
  s.vips.next = {5, kNone};
  s.vips.retired = {{9, VipState::kGrace, 0, 1000}, {10, VipState::kQuarantine, 1, 900}};
  s.phase = "reserved";
  s.seq = 12;
  s.leader = "a";
  s.generation = 4;
  s.due_ms = 1'700'000'000'123;
  auto back = shared::decode_vips(shared::encode_vips(s, dir), dir, 32);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->vips, s.vips);
  EXPECT_EQ(back->due_ms, s.due_ms);
  EXPECT_EQ(back->seq, 12u);
  EXPECT_EQ(back->leader, "a");
  EXPECT_EQ(back->generation, 4u);
  EXPECT_EQ(shared::epoch_seq(shared::encode_epoch(s)), 12u);
  EXPECT_FALSE(shared::epoch_seq("{\"seq\":-1}"));
  EXPECT_FALSE(shared::decode_vips("[]", dir, 32));
  EXPECT_FALSE(shared::decode_vips(shared::encode_vips(s, dir), dir, 8));  // VIPs out of the pool
  EXPECT_EQ(shared::decode_pins(shared::encode_pins("b", 1, {1, 31}), 32), (std::set<uint32_t>{1, 31}));
  EXPECT_FALSE(shared::decode_pins(shared::encode_pins("b", 1, {32}), 32));
  EXPECT_EQ(shared::decode_instances("[\"a\",\"\",3,\"b\"]"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(shared::decode_instances("nope").empty());
  EXPECT_EQ(shared::sessions_key("b", 3), "cpam:sessions:b:3");
  // Hand-off records: hosts by address, VIPs by index; anything else is refused with a reason.
  const shared::Handoff h{6, 0, 1, 3, 31, 40000, 80, "a"};
  EXPECT_EQ(shared::handoff_key(6, 2, cfg.vip_ip(3), 80, 40000), "cpam:handoff:6:0.0.0.2:10.0.128.4:80:40000");
  auto hb = shared::decode_handoff(shared::encode_handoff(h, dir), dir, 32);
  ASSERT_TRUE(hb) << hb.error();
  EXPECT_EQ(hb->client, 0u);
  EXPECT_EQ(hb->server, 1u);
  EXPECT_EQ(hb->vc, 3u);
  EXPECT_EQ(hb->vs, 31u);
  EXPECT_EQ(hb->cport, 40000u);
  EXPECT_EQ(hb->sport, 80u);
  EXPECT_EQ(hb->proto, 6u);
  EXPECT_EQ(hb->instance, "a");
  EXPECT_FALSE(shared::decode_handoff(shared::encode_handoff(h, dir), dir, 16));  // vs out of the pool
  EXPECT_FALSE(shared::decode_handoff("{\"proto\":6}", dir, 32));
  EXPECT_FALSE(shared::decode_handoff("nope", dir, 32));
  auto stranger = nlohmann::json::parse(shared::encode_handoff(h, dir));
  stranger["client"] = "192.0.2.9";
  const auto bad = shared::decode_handoff(stranger.dump(), dir, 32);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("not a protected host"), std::string::npos) << bad.error();
}

TEST(CpamShared, RemotePinsHoldAVanishedInstancesVipsAndAnUnknownOnesEverything) {
  shared::RemotePins pins(seconds(10));
  Clock::time_point t{};
  t += seconds(100);
  pins.present("b", {4, 5}, t);
  EXPECT_TRUE(pins.referenced(4, t));
  EXPECT_FALSE(pins.referenced(6, t));
  pins.absent("b", t + seconds(1));  // its record expired: held for the hold time
  EXPECT_TRUE(pins.referenced(5, t + seconds(10)));
  EXPECT_FALSE(pins.referenced(5, t + seconds(11)));
  EXPECT_EQ(pins.expired(t + seconds(11)), (std::vector<std::string>{"b"}));
  pins.absent("b", t + seconds(20));  // still gone: stays expired
  EXPECT_FALSE(pins.referenced(5, t + seconds(20)));
  pins.present("b", {7}, t + seconds(21));  // back
  EXPECT_TRUE(pins.referenced(7, t + seconds(21)));
  pins.absent("c", t + seconds(30));  // listed, never read: anything may be pinned by it
  EXPECT_TRUE(pins.referenced(1, t + seconds(39)));
  EXPECT_FALSE(pins.referenced(1, t + seconds(40)));
}

// ---- the worker against a real Redis -------------------------------------------------------------

// A follower's worker polls the epoch key every cluster_poll (here 1 s). Once it has read a
// rotation's "reserved" write it polls every Link::kFastPoll from the publication's due time
// (from at once when the write names none) until the next write, so the publication is read, and
// handed to shard 0 (on_state), within a few ms instead of up to a poll later. Without the fast
// polls this read takes about a second.
TEST(CpamShared, AFollowerReadsThePublicationAFewMsAfterTheReservedWrite) {
  test::RedisServer redis;
  if (!redis.start()) GTEST_SKIP() << "no redis-server: " << redis.error();
  cluster::ClusterConfig k;
  k.enabled = true;
  k.name = "fast" + std::to_string(::getpid());
  k.instance_id = "f";
  k.redis = {"127.0.0.1:" + std::to_string(redis.port())};
  auto c = std::make_shared<cluster::Cluster>(k);
  ASSERT_TRUE(c->start());
  auto store = shared::make_cluster_store(c);
  CpamConfig cfg;
  cfg.pool_size = 32;
  cfg.hosts = {{"h1", 1}, {"h2", 2}};
  cfg.cluster_poll = seconds(1);
  const HostDirectory dir(cfg.hosts);
  auto write = [&](uint64_t seq, const char* phase, int64_t due_ms = 0, const char* leader = "l") {
    shared::SharedVips s;
    s.due_ms = due_ms;
    s.vips.epoch = seq / 2 + 1;
    s.vips.primary = {3, 4};
    s.vips.next = {kNone, kNone};
    s.phase = phase;
    s.seq = seq;
    s.leader = leader;
    s.generation = 1;
    ASSERT_TRUE(store->set(shared::kVipsKey, shared::encode_vips(s, dir), seconds(60)));
    ASSERT_TRUE(store->set(shared::kEpochKey, shared::encode_epoch(s), seconds(60)));
  };
  std::atomic<int> told{0};  // on_state calls
  shared::Link link(store, cfg, dir);
  write(1, "committed");
  link.start([&] { ++told; });
  auto seq_read = [&] {
    auto st = link.take_state(0);
    return st ? st->seq : 0;
  };
  // Writes a state and returns how long the link took to read it (ms; 1e9: not in 3 s).
  auto read_after_write = [&](uint64_t seq, const char* phase, int64_t due_ms = 0, const char* leader = "l") {
    const auto t0 = Real::now();
    write(seq, phase, due_ms, leader);
    return test::eventually([&] { return seq_read() == seq; }, milliseconds(3000)) ? ms_since(t0) : 1e9;
  };
  ASSERT_TRUE(test::eventually([&] { return seq_read() == 1; }, milliseconds(3000)));
  ASSERT_LT(read_after_write(2, "reserved"), 3000.0);
  const double ms = read_after_write(3, "committed");
  std::printf("figure: publication read %.1f ms after its write (cluster_poll 1000 ms)\n", ms);
  EXPECT_LT(ms, 300.0);
  EXPECT_GT(link.counters().fast_polls, 0u);
  EXPECT_EQ(told.load(), 3);  // one call per newer state
  // Published: back to a poll a second.
  const uint64_t fast = link.counters().fast_polls;
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(link.counters().fast_polls, fast);
  // A "reserved" write that names its due time: no fast poll before it, then the same.
  const int64_t due = unix_ms() + 1500;
  ASSERT_LT(read_after_write(4, "reserved", due), 3000.0);
  std::this_thread::sleep_for(milliseconds(std::max<int64_t>(0, due - 300 - unix_ms())));
  EXPECT_EQ(link.counters().fast_polls, fast) << "fast polls before the due time";
  std::this_thread::sleep_for(milliseconds(std::max<int64_t>(0, due + 50 - unix_ms())));
  const double ms_due = read_after_write(5, "committed");
  std::printf("figure: publication at its due time read %.1f ms after its write\n", ms_due);
  EXPECT_LT(ms_due, 300.0);
  EXPECT_GT(link.counters().fast_polls, fast);
  // This instance's own rotation (it leads, and publishes itself): no fast polls, even past due.
  const uint64_t fast2 = link.counters().fast_polls;
  ASSERT_LT(read_after_write(6, "reserved", unix_ms() - 10, "f"), 3000.0);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(link.counters().fast_polls, fast2) << "fast polls for its own rotation";
  link.stop();
  c->stop();
}

// ---- three instances on one campus ------------------------------------------------------------

struct Host {
  std::string name;
  Mac mac;
  Ipv4Addr ip;
};

struct Node {
  std::string id;
  std::shared_ptr<cluster::Cluster> cluster;
  std::shared_ptr<CpamService> svc;
  std::map<unsigned, Cpam*> cpam;
  ClusterFabric::Instance* inst = nullptr;
  bool gone = false;
};

// s1 core; s2, s3 aggregation; s4..s7 edges with 2 hosts each (the campus of cpam_test).
// Masters: a (index 0) s1..s4, b s5 and s6, c s7. The manual clock runs ~10x faster than real
// time while the tests pump it; Redis, the cluster and CPAM's worker run in real time.
class CpamCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!redis_.start()) GTEST_SKIP() << "no redis-server: " << redis_.error();
    for (int n = 1; n <= 8; ++n)
      hosts_.push_back({"h" + std::to_string(n), Mac{static_cast<uint64_t>(n)}, pkt::ipv4(10, 0, 0, static_cast<uint8_t>(n))});
    cfg_.rotation_interval = seconds(3600);  // rotations only when a test asks
    cfg_.pool_size = 64;
    cfg_.vip_prefix_len = 24;
    cfg_.batch_hosts = 3;
    cfg_.commit_off_loop = false;  // the fake fabric's manual clock: the commit waits on the loop
    cfg_.batch_delay = milliseconds(150);
    cfg_.tcp_idle = seconds(3000);
    cfg_.session_linger = seconds(2);
    cfg_.grace_accept = seconds(2);
    cfg_.reclaim_threshold = seconds(2);
    cfg_.quarantine = seconds(5);
    // The pins travel in real time (renewed and read every second) while the manual clock runs
    // ~10x faster: the lag covers 2 s of real time here (3 s in production, one clock).
    cfg_.cluster_pin_lag = seconds(20);
    cfg_.cluster_pin_hold = seconds(3);
    cfg_.cluster_record_ttl = seconds(2);
    for (const auto& h : hosts_) cfg_.hosts.push_back({h.name, h.ip.value});
    name_ = "cpam" + std::to_string(::getpid());
  }
  void TearDown() override {
    for (auto& n : nodes_)
      if (n.cluster) n.cluster->stop();
    fabric_.reset();
    for (auto& n : nodes_) n.svc.reset();
    nodes_.clear();
  }

  cluster::ClusterConfig cluster_config(const std::string& id) const {
    cluster::ClusterConfig k;
    k.enabled = true;
    k.name = name_;
    k.instance_id = id;
    k.redis = {"127.0.0.1:" + std::to_string(redis_.port())};
    return k;  // lease 600 ms, renew 150, check 100
  }

  // `silent`: hosts that send nothing at the start (every other one announces itself by ARP).
  void build(std::set<int> silent = {}) {
    backends_ = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
    auto topo_due = std::make_shared<data::Due>(backends_);
    (void)topo_due->init("topology", data::kProducer, {}, {{"network/topology/**", std::nullopt}});
    topology::TopologyConfig tc;
    tc.port_settle = milliseconds(1500);
    topo_ = std::make_shared<topology::TopologyService>(tc, topo_due);
    fabric_ = std::make_unique<ClusterFabric>();
    fabric_->add_instance(
        2,
        [this](unsigned shard) {
          std::vector<std::unique_ptr<southbound::App>> v;
          v.push_back(std::make_unique<topology::Topology>(topo_, shard));
          return v;
        },
        true);
    nodes_.resize(3);
    const char* ids[] = {"a", "b", "c"};
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      n.id = ids[i];
      n.cluster = std::make_shared<cluster::Cluster>(cluster_config(n.id));
      ASSERT_TRUE(n.cluster->start());
      auto due = std::make_shared<data::Due>(backends_);
      (void)due->init("cpam", data::kProducer | data::kConsumer, {{"network/topology/**", std::nullopt}},
                      {{"network/cpam/**", std::nullopt}});
      n.svc = std::make_shared<CpamService>(cfg_, due, nullptr, n.cluster);
      ASSERT_TRUE(n.svc->clustered());
      Node* np = &n;
      n.inst = &fabric_->add_instance(2, [np](unsigned shard) {
        std::vector<std::unique_ptr<southbound::App>> v;
        auto c = std::make_unique<Cpam>(np->svc, shard);
        np->cpam[shard] = c.get();
        v.push_back(std::move(c));
        return v;
      });
    }
    auto* a = nodes_[0].inst;
    fabric_->add_switch(1, {1, 2}, a);
    fabric_->add_switch(2, {1, 2, 3, 4, 5}, a);
    fabric_->add_switch(3, {1, 2, 3, 4, 5}, a);
    fabric_->link(1, 1, 2, 5);
    fabric_->link(1, 2, 3, 5);
    int h = 0;
    for (uint64_t e = 4; e <= 7; ++e) {
      auto* m = e == 4 ? nodes_[0].inst : e == 7 ? nodes_[2].inst : nodes_[1].inst;
      fabric_->add_switch(e, {1, 2, 3, 4}, m);
      fabric_->link(e, 3, 2, static_cast<uint32_t>(e - 3));
      fabric_->link(e, 4, 3, static_cast<uint32_t>(e - 3));
      for (uint32_t p = 1; p <= 2; ++p) fabric_->attach(hosts_[static_cast<size_t>(h++)].name, e, p);
    }
    fabric_->advance(milliseconds(2000));
    // One leader, and every instance serves its epoch.
    ASSERT_TRUE(pump_until([&] { return leaders() == 1 && same_epoch(); })) << "leaders " << leaders();
    for (size_t i = 0; i < hosts_.size(); ++i)
      if (!silent.contains(static_cast<int>(i + 1)))
        fabric_->send(hosts_[i].name, pkt::arp_request(hosts_[i].mac, hosts_[i].ip, pkt::ipv4(10, 0, 255, 253)));
  }

  // Moves the manual clock 100 ms at a time (real threads get 10 ms each step) until `pred`.
  template <class Pred>
  bool pump_until(Pred pred, milliseconds limit = milliseconds(8000)) {
    const auto deadline = Real::now() + limit;
    while (Real::now() < deadline) {
      fabric_->advance(milliseconds(100));
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return pred();
  }
  void pump(milliseconds manual) {
    for (auto t = milliseconds(0); t < manual; t += milliseconds(100)) {
      fabric_->advance(milliseconds(100));
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  int leaders() const {
    int n = 0;
    for (const auto& x : nodes_) n += !x.gone && x.svc->leading() ? 1 : 0;
    return n;
  }
  Node& leader() {
    for (auto& x : nodes_)
      if (!x.gone && x.svc->leading()) return x;
    throw std::runtime_error("no leader");
  }
  uint64_t epoch(const Node& n) const {
    auto s = n.svc->latest();
    return s ? s->epoch : 0;
  }
  bool same_epoch() const {
    std::shared_ptr<const Snapshot> first;
    for (const auto& x : nodes_) {
      if (x.gone) continue;
      auto s = x.svc->latest();
      if (!s) return false;
      if (!first) first = s;
      if (s->epoch != first->epoch || s->primary != first->primary) return false;
    }
    return true;
  }
  uint32_t vip(const Node& n, int h) const { return cfg_.vip_ip(n.svc->latest()->primary.at(static_cast<size_t>(h - 1))); }
  uint32_t idx(uint32_t ip) const { return ip - cfg_.vip_base - 1; }
  const Host& host(int n) const { return hosts_.at(static_cast<size_t>(n - 1)); }
  Bytes tcp(const Host& from, uint32_t to_vip, uint16_t sport, uint16_t dport, uint16_t flags = pkt::tcpflag::kAck) {
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
  std::optional<uint32_t> last_src(const std::string& to) {
    std::optional<uint32_t> out;
    for (const auto& [h, frame] : fabric_->deliveries()) {
      if (h != to) continue;
      if (auto p = pkt::parse(frame); p && p->ipv4) out = p->ipv4->src.value;
    }
    return out;
  }
  std::optional<uint32_t> last_dst(const std::string& to) {
    std::optional<uint32_t> out;
    for (const auto& [h, frame] : fabric_->deliveries()) {
      if (h != to) continue;
      if (auto p = pkt::parse(frame); p && p->ipv4) out = p->ipv4->dst.value;
    }
    return out;
  }
  std::set<uint64_t> cookies(uint64_t dpid, bool sessions_only) {
    std::set<uint64_t> out;
    for (const auto& e : fabric_->sw(dpid).flows_in_cookie_range(kCookie, kCookieMask))
      if (!sessions_only || cookie_kind(e.cookie) != CookieKind::kVipRule) out.insert(e.cookie);
    return out;
  }
  bool has_vip_rule(uint64_t dpid, uint32_t vip_ip) {
    return !fabric_->sw(dpid).flows_in_cookie_range(make_cookie(CookieKind::kVipRule, 0, idx(vip_ip)), ~uint64_t{0}).empty();
  }
  nlohmann::json shared_state() {
    auto r = test::redis_call(redis_.port(), {"GET", "sdnator:cluster:" + name_ + ":" + shared::kVipsKey});
    if (!r || r->type != REDIS_REPLY_STRING) return nullptr;
    return nlohmann::json::parse(std::string(r->str, r->len), nullptr, false);
  }
  uint64_t cl(const Node& n, const char* key) { return n.svc->cluster_json()[key].get<uint64_t>(); }
  // The leader rotates once (now); true when every live instance serves the new epoch.
  bool rotate(Node& l) {
    const uint64_t e = epoch(l);
    l.cpam.at(0)->rotate_now();
    return pump_until([&] { return epoch(l) == e + 1 && same_epoch(); });
  }
  // The instance dies: its cluster stops (the leadership and its records go), its apps stop.
  void kill(Node& n) {
    n.cluster->stop();
    fabric_->stop_instance(*n.inst);
    n.gone = true;
  }

  test::RedisServer redis_;
  std::string name_;
  CpamConfig cfg_;
  std::vector<Host> hosts_;
  std::shared_ptr<data::Backends> backends_;
  std::shared_ptr<topology::TopologyService> topo_;
  std::unique_ptr<ClusterFabric> fabric_;
  std::vector<Node> nodes_;
};

TEST_F(CpamCluster, OneInstanceRotatesTheOthersMirrorItAndKeepTheVipRulesOnTheirSwitches) {
  build();
  Node& l = leader();
  const auto t0 = Real::now();
  ASSERT_TRUE(rotate(l));
  std::printf("figure: rotation to every follower's snapshot (real, manual clock pumped): %.0f ms\n", ms_since(t0));
  ASSERT_EQ(epoch(l), 2u);
  // Followers cannot rotate; only the leader ever wrote the shared state.
  for (auto& n : nodes_)
    if (&n != &l) n.cpam.at(0)->rotate_now();
  pump(milliseconds(1000));
  for (auto& n : nodes_) {
    EXPECT_EQ(epoch(n), 2u) << n.id;
    EXPECT_EQ(cl(n, "fenced_refused"), 0u) << n.id;
    EXPECT_EQ(cl(n, "leader_gains"), &n == &l ? 1u : 0u) << n.id;
    if (&n != &l) {
      EXPECT_GE(cl(n, "states_applied"), 2u) << n.id;
      // The leader's write of epoch 2 to this follower's apply (real time; -1: never measured).
      const auto lag = n.svc->cluster_json()["epoch_lag_ms"].get<int64_t>();
      std::printf("figure: %s applied epoch 2 %lld ms after the leader wrote it\n", n.id.c_str(), static_cast<long long>(lag));
      EXPECT_GE(lag, 0) << n.id;
      EXPECT_LT(lag, 1000) << n.id;
    }
  }
  auto st = shared_state();
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["leader"], l.id);
  EXPECT_EQ(st["epoch"], 2);
  // The VIP states are the same everywhere (references apart).
  for (uint32_t v = 0; v < cfg_.pool_size; ++v)
    for (auto& n : nodes_) {
      EXPECT_EQ(n.svc->vips().load(v).state, l.svc->vips().load(v).state) << n.id << " vip " << v;
      EXPECT_EQ(n.svc->vips().load(v).owner, l.svc->vips().load(v).owner) << n.id << " vip " << v;
    }
  // Every edge switch holds its hosts' new VIP rules, installed by its own master.
  for (int h = 1; h <= 8; ++h) EXPECT_TRUE(has_vip_rule(static_cast<uint64_t>(4 + (h - 1) / 2), vip(l, h))) << "h" << h;
  // A session on b's switch (h3 -> h4, both on s5) works under the mirrored epoch.
  Node& b = nodes_[1];
  fabric_->clear_deliveries();
  fabric_->send("h3", tcp(host(3), vip(b, 4), 40000, 80, pkt::tcpflag::kSyn));
  EXPECT_EQ(last_src("h4"), vip(b, 3));
  EXPECT_EQ(b.svc->counters().sessions_bound, 1u);
}

TEST_F(CpamCluster, ADeposedLeaderIsFencedOffAndPublishesNothing) {
  build();
  Node& l = leader();
  ASSERT_TRUE(rotate(l));
  const uint64_t e = epoch(l);
  // Its lease thread stalls (a long GC pause, a stopped VM): it still believes it leads while
  // its lease expires and another instance takes over.
  const auto t0 = Real::now();
  l.cluster->freeze_for_test(true);
  Node* next = nullptr;
  ASSERT_TRUE(pump_until([&] {
    for (auto& n : nodes_)
      if (&n != &l && n.svc->leading()) next = &n;
    return next != nullptr;
  }));
  std::printf("figure: frozen leader to a new leader (lease 600 ms): %.0f ms\n", ms_since(t0));
  ASSERT_TRUE(l.svc->leading()) << "the stalled leader has not noticed yet";
  l.cpam.at(0)->rotate_now();  // its write-ahead is refused: nothing reserved, nothing published
  EXPECT_FALSE(l.svc->leading());
  EXPECT_GE(cl(l, "fenced_refused"), 1u);
  EXPECT_EQ(epoch(l), e);
  auto st = shared_state();
  EXPECT_EQ(st["leader"], next->id);
  EXPECT_EQ(st["epoch"], e);
  // The new leader goes on; the old one follows it (its Redis access still works).
  ASSERT_TRUE(rotate(*next));
  EXPECT_EQ(epoch(l), e + 1);
  l.cluster->freeze_for_test(false);
  pump(milliseconds(1500));
  EXPECT_EQ(leaders(), 1);
  EXPECT_TRUE(next->svc->leading());
}

TEST_F(CpamCluster, WhenTheLeaderDiesAnotherContinuesWithTheSameVipStatesAndItsSwitchesKeepTheirSessions) {
  build();
  Node& a = leader();
  ASSERT_TRUE(rotate(a));
  ASSERT_TRUE(rotate(a));
  const uint64_t e = epoch(a);
  // A session on an edge switch the leader masters: h1 -> h2 on s4 (a), h3 -> h4 on s5 (b) or
  // h7 -> h8 on s7 (c).
  const int ch = a.id == "a" ? 1 : a.id == "b" ? 3 : 7;
  const uint64_t edge = a.id == "a" ? 4 : a.id == "b" ? 5 : 7;
  const uint32_t vs = vip(a, ch + 1), vc = vip(a, ch);
  fabric_->clear_deliveries();
  fabric_->send(host(ch).name, tcp(host(ch), vs, 36000, 80, pkt::tcpflag::kSyn));
  ASSERT_EQ(last_src(host(ch + 1).name), vc);
  pump(milliseconds(1200));
  const auto edge_sessions = cookies(edge, true);
  ASSERT_EQ(edge_sessions.size(), 2u);  // both first hops
  std::vector<VipTable::View> states;
  for (uint32_t v = 0; v < cfg_.pool_size; ++v) states.push_back(a.svc->vips().load(v));
  // The leader dies; the first other instance takes its switches over.
  Node& b = &nodes_[0] != &a ? nodes_[0] : nodes_[1];
  const auto t0 = Real::now();
  kill(a);
  for (uint64_t d = 1; d <= 7; ++d)
    if (fabric_->master_of(d) == nullptr) fabric_->set_master(d, b.inst);
  ASSERT_TRUE(pump_until([&] { return leaders() == 1; }));
  const double to_leader = ms_since(t0);
  Node& l = leader();
  EXPECT_EQ(epoch(l), e) << "the epoch goes on";
  for (uint32_t v = 0; v < cfg_.pool_size; ++v) {
    EXPECT_EQ(l.svc->vips().load(v).state, states[v].state) << "vip " << v;
    EXPECT_EQ(l.svc->vips().load(v).owner, states[v].owner) << "vip " << v;
  }
  l.cpam.at(0)->rotate_now();
  ASSERT_TRUE(pump_until([&] { return epoch(l) == e + 1 && same_epoch(); }));
  std::printf("figure: leader stopped to a new leader %.0f ms, to its first rotation published %.0f ms\n", to_leader,
              ms_since(t0));
  // The edge's session flows were kept and the binding adopted by its new master; the session
  // still flows, under its pinned VIPs.
  EXPECT_EQ(cookies(edge, true), edge_sessions);
  EXPECT_EQ(b.svc->counters().resync_adopted, 1u);
  EXPECT_EQ(b.svc->counters().resync_deleted, 0u);
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send(host(ch).name, tcp(host(ch), vs, 36000, 80)).packet_ins, 0u);
  EXPECT_EQ(last_src(host(ch + 1).name), vc);
  EXPECT_EQ(b.svc->vips().load(idx(vs)).sessions, 1u);
  // The pinned VIPs stay out of the pool at the new leader: Grace, never handed out again.
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(rotate(l));
    pump(milliseconds(4000));
    for (int h = 1; h <= 8; ++h) EXPECT_TRUE(vip(l, h) != vc && vip(l, h) != vs);
  }
  EXPECT_EQ(l.svc->vips().load(idx(vs)).state, VipState::kGrace);
  EXPECT_EQ(l.svc->vips().load(idx(vc)).state, VipState::kGrace);
}

TEST_F(CpamCluster, AVipPinnedByAnotherInstancesSessionIsNeverReclaimedUntilTheSessionEnds) {
  build();
  Node& l = leader();
  // A follower's session: whoever masters s5 (b) binds h3 -> h4 unless b leads; then c's s7.
  Node& f = &nodes_[1] != &l ? nodes_[1] : nodes_[2];
  const int ch = &f == &nodes_[1] ? 3 : 7, sh = ch + 1;
  const uint64_t edge = &f == &nodes_[1] ? 5 : 7;
  const uint32_t vc = vip(f, ch), vs = vip(f, sh);
  fabric_->send(host(ch).name, tcp(host(ch), vs, 41000, 22, pkt::tcpflag::kSyn));
  ASSERT_EQ(f.svc->counters().sessions_bound, 1u);
  pump(milliseconds(1500));
  EXPECT_FALSE(l.svc->vips().load(idx(vc)).sessions != 0) << "the leader's table holds no reference of f's session";
  size_t reclaimed = 0;
  for (int r = 0; r < 5; ++r) {
    ASSERT_TRUE(rotate(l));
    pump(milliseconds(6000));  // the first rotations' VIPs pass the accept window, lag and threshold
    for (int h = 1; h <= 8; ++h) EXPECT_TRUE(vip(l, h) != vc && vip(l, h) != vs) << "epoch " << epoch(l);
    EXPECT_EQ(l.svc->vips().load(idx(vc)).state, VipState::kGrace);
    EXPECT_EQ(l.svc->vips().load(idx(vs)).state, VipState::kGrace);
  }
  for (uint32_t v = 0; v < cfg_.pool_size; ++v) {
    const auto s = l.svc->vips().load(v).state;
    reclaimed += s == VipState::kQuarantine || s == VipState::kFree ? 1 : 0;
  }
  EXPECT_GT(l.svc->stats_json()["cluster"]["remote_pinned"].get<uint64_t>(), 0u);
  // The session ends (its flows removed at the switch): f drops it after the linger, its pins
  // go, and the leader reclaims both VIPs.
  for (uint64_t c : cookies(edge, true)) {
    ofp::FlowMod del = recovery::delete_cookie(cfg_, c);
    fabric_->sw(edge).send(del);
  }
  fabric_->run();
  const auto t0 = Real::now();
  ASSERT_TRUE(pump_until([&] {
    return l.svc->vips().load(idx(vc)).state == VipState::kQuarantine &&
           l.svc->vips().load(idx(vs)).state == VipState::kQuarantine;
  }, milliseconds(10000)));
  std::printf("figure: another instance's session ended to its VIPs quarantined by the leader: %.0f ms real "
              "(linger 2 s manual, pins renewed and read every 1 s real); %zu other VIPs were reclaimed meanwhile\n",
              ms_since(t0), reclaimed);
  EXPECT_GT(reclaimed, 0u) << "reclaim works at all";
  // And f deleted the quarantined VIPs' rules on its own switch.
  pump(milliseconds(500));
  EXPECT_FALSE(has_vip_rule(edge, vc));
}


// h1 on s4 (a) opens a session to h3 on s5 (b): the path runs s4, s2 or s3 (a), then s5 (b).
// a writes its binding to Redis before the first packet goes on from its last switch; b, seeing
// h3's reply to a VIP whose host is on a's switch, reads it and answers under the VIP h1 named.
// The other way round (h4 on s5 to h2 on s4) b finds nothing, binds, and hands off in turn.
TEST_F(CpamCluster, ASessionAcrossTwoInstancesSwitchesIsHandedOffAndFlowsBothWays) {
  build();
  Node& a = nodes_[0];
  Node& b = nodes_[1];
  const uint32_t vc = vip(a, 1), vs = vip(a, 3);
  fabric_->clear_deliveries();
  const auto t0 = Real::now();
  fabric_->send("h1", tcp(host(1), vs, 42000, 80, pkt::tcpflag::kSyn));
  ASSERT_TRUE(pump_until([&] { return last_src("h3").has_value(); }));
  const double first = ms_since(t0);
  EXPECT_EQ(last_src("h3"), vc);
  EXPECT_EQ(last_dst("h3"), host(3).ip.value);
  EXPECT_EQ(a.svc->counters().handoffs_out, 1u);
  EXPECT_EQ(a.svc->counters().onward, 1u);
  const auto t1 = Real::now();
  fabric_->send("h3", tcp(host(3), vc, 80, 42000, pkt::tcpflag::kSyn | pkt::tcpflag::kAck));
  ASSERT_TRUE(pump_until([&] { return last_src("h1").has_value(); }));
  std::printf("figure: first packet across instances delivered within %.1f ms (real; one Redis write; the test "
              "pumps every 10 ms), the reply within %.1f ms "
              "(one Redis read)\n", first, ms_since(t1));
  EXPECT_EQ(last_src("h1"), vs);
  EXPECT_EQ(last_dst("h1"), host(1).ip.value);
  EXPECT_EQ(b.svc->counters().handoffs_in, 1u);
  EXPECT_EQ(b.svc->counters().sessions_bound, 0u) << "b took a's binding, it did not bind anew";
  EXPECT_EQ(b.svc->vips().load(idx(vs)).sessions, 1u) << "b pins the pair while its half lives";
  // Both directions run on the switches' rules now.
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h1", tcp(host(1), vs, 42000, 80)).packet_ins, 0u);
  EXPECT_EQ(fabric_->send("h3", tcp(host(3), vc, 80, 42000)).packet_ins, 0u);
  EXPECT_EQ(last_src("h3"), vc);
  EXPECT_EQ(last_src("h1"), vs);

  // b's host starts one towards a's (a SYN: nothing to ask), so b binds and hands off itself.
  const uint32_t vc2 = vip(b, 4), vs2 = vip(b, 2);
  fabric_->clear_deliveries();
  fabric_->send("h4", tcp(host(4), vs2, 50000, 22, pkt::tcpflag::kSyn));
  ASSERT_TRUE(pump_until([&] { return last_src("h2").has_value(); }));
  EXPECT_EQ(last_src("h2"), vc2);
  EXPECT_EQ(b.svc->counters().handoff_misses, 0u);
  EXPECT_EQ(b.svc->counters().sessions_bound, 1u);
  EXPECT_EQ(b.svc->counters().handoffs_out, 1u);
  fabric_->send("h2", tcp(host(2), vc2, 22, 50000, pkt::tcpflag::kSyn | pkt::tcpflag::kAck));
  ASSERT_TRUE(pump_until([&] { return last_src("h4").has_value(); }));
  EXPECT_EQ(last_src("h4"), vs2);
  EXPECT_EQ(a.svc->counters().handoffs_in, 1u);
  for (auto* n : {&a, &b}) {
    EXPECT_EQ(n->svc->counters().handoff_errors, 0u) << n->id;
    EXPECT_EQ(n->svc->counters().handoff_dropped, 0u) << n->id;
  }
}

// The case the hand-off exists for: after a rotation h1 still uses h3's previous VIP (a cached
// DNS answer, inside the accept window). Bound anew at b, the reply would leave under h3's
// current VIP and h1's TCP would reset it; taken from a's record it leaves under the old one.
TEST_F(CpamCluster, AReplyAcrossInstancesLeavesUnderTheRetiringVipTheClientNamed) {
  build();
  Node& l = leader();
  Node& a = nodes_[0];
  Node& b = nodes_[1];
  const uint32_t old_vs = vip(a, 3);
  ASSERT_TRUE(rotate(l));
  ASSERT_NE(vip(a, 3), old_vs);
  ASSERT_EQ(b.svc->vips().load(idx(old_vs)).state, VipState::kGrace);
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), old_vs, 43000, 443, pkt::tcpflag::kSyn));
  ASSERT_TRUE(pump_until([&] { return last_src("h3").has_value(); }));
  const uint32_t vc = *last_src("h3");
  EXPECT_EQ(vc, vip(a, 1));
  fabric_->send("h3", tcp(host(3), vc, 443, 43000, pkt::tcpflag::kSyn | pkt::tcpflag::kAck));
  ASSERT_TRUE(pump_until([&] { return last_src("h1").has_value(); }));
  EXPECT_EQ(last_src("h1"), old_vs) << "not h3's current VIP " << Ipv4Addr{vip(b, 3)}.to_string();
  EXPECT_EQ(b.svc->counters().handoffs_in, 1u);
}

// A host that never spoke is known to nobody, and an instance's locate probes reach only its own
// switches: every instance's sweep asks for the unlocated protected hosts on its own edges, so
// the master of the silent host's switch learns it and a session from another instance reaches it.
TEST_F(CpamCluster, ASilentHostOnAPeersSwitchIsProbedByItsMasterAndReached) {
  build({3});  // h3, on s5 (b), says nothing
  Node& a = nodes_[0];
  std::optional<pkt::Arp> probe;
  ASSERT_TRUE(pump_until([&] {
    for (const auto& [h, f] : fabric_->deliveries())
      if (auto p = pkt::parse(f); h == "h3" && p && p->arp && p->arp->tpa == host(3).ip) probe = *p->arp;
    return probe.has_value();
  })) << "nobody asked for h3";
  fabric_->send("h3", pkt::arp_reply_for(*probe, host(3).mac));
  fabric_->clear_deliveries();
  const uint32_t vc = vip(a, 1), vs = vip(a, 3);
  fabric_->send("h1", tcp(host(1), vs, 44000, 80, pkt::tcpflag::kSyn));
  ASSERT_TRUE(pump_until([&] { return last_src("h3").has_value(); }));
  EXPECT_EQ(last_src("h3"), vc);
  EXPECT_EQ(a.svc->counters().unlocated, 0u);
}

// Instances apply an epoch up to a poll apart: the client's instance may already answer with a
// new VIP that the server's instance still holds as Reserved. A packet between VIPs from a
// peer's switch, and a hand-off naming such a VIP, are taken (they were dropped as stale, and
// the connection waited for a retransmission, 1 s).
TEST_F(CpamCluster, AVipStillReservedAtTheServersInstanceIsTakenFromAPeer) {
  build();
  Node& a = nodes_[0];
  Node& b = nodes_[1];
  const uint32_t vc = vip(a, 1), vs = vip(a, 3);
  b.svc->vips().restore(idx(vs), VipState::kReserved, 2, {});  // b lags: h3's VIP not yet Primary
  fabric_->clear_deliveries();
  fabric_->send("h1", tcp(host(1), vs, 45000, 80, pkt::tcpflag::kSyn));
  ASSERT_TRUE(pump_until([&] { return last_src("h3").has_value(); }, milliseconds(3000)))
      << "dropped at b: stale_vip " << b.svc->counters().stale_vip;
  EXPECT_EQ(last_src("h3"), vc);
  fabric_->send("h3", tcp(host(3), vc, 80, 45000, pkt::tcpflag::kSyn | pkt::tcpflag::kAck));
  ASSERT_TRUE(pump_until([&] { return last_src("h1").has_value(); }));
  EXPECT_EQ(last_src("h1"), vs);
  EXPECT_EQ(b.svc->counters().handoffs_in, 1u);
  EXPECT_EQ(b.svc->counters().stale_vip, 0u);
}

// h3 on s5 (b) to h7 on s7 (c): the path crosses s2 or s3, which a masters. b sends the packet on
// to a's switch, where a repairs the path up to its own last switch and sends it on again to c's
// (it was lost there: a's repair delivered only at the last hop, which c masters); the reply
// takes the same way back.
TEST_F(CpamCluster, APathWhoseTransitAThirdInstanceMastersCarriesBothWays) {
  build();
  Node& a = nodes_[0];
  Node& c = nodes_[2];
  const uint32_t vc = vip(a, 3), vs = vip(a, 7);
  fabric_->clear_deliveries();
  fabric_->send("h3", tcp(host(3), vs, 46000, 80, pkt::tcpflag::kSyn));
  ASSERT_TRUE(pump_until([&] { return last_src("h7").has_value(); }, milliseconds(3000)));
  EXPECT_EQ(last_src("h7"), vc);
  EXPECT_GE(a.svc->counters().repairs, 1u);
  EXPECT_GE(a.svc->counters().onward, 1u);
  fabric_->send("h7", tcp(host(7), vc, 80, 46000, pkt::tcpflag::kSyn | pkt::tcpflag::kAck));
  ASSERT_TRUE(pump_until([&] { return last_src("h3").has_value(); }, milliseconds(3000)));
  EXPECT_EQ(last_src("h3"), vs);
  EXPECT_EQ(c.svc->counters().handoffs_in, 1u);
  // And then both ways on the switches' rules.
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h3", tcp(host(3), vs, 46000, 80)).packet_ins, 0u);
  EXPECT_EQ(fabric_->send("h7", tcp(host(7), vc, 80, 46000)).packet_ins, 0u);
  EXPECT_EQ(last_src("h7"), vc);
  EXPECT_EQ(last_src("h3"), vs);
}

}  // namespace
}  // namespace sdn::apps::cpam
