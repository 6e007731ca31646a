// CPAM fault recovery: the runtime's clear-on-connect complement, the archived VIP state and
// session log (JSON both ways, replay), the pure resync diff, and then the app on a fake campus:
// a switch that reconnects with its flows is resynchronised (stale and unknown CPAM flows
// deleted, missing rules added, nothing duplicated, references given back), and a controller
// restarted on the same SQLite archive reloads its epoch, VIP states and bindings, adopts the
// flows of a binding the archive missed, keeps established sessions' pins and never hands out a
// VIP still in use.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "apps/cpam/cpam.hpp"
#include "apps/cpam/flows.hpp"
#include "apps/cpam/recovery.hpp"
#include "apps/forwarding/fabric.hpp"
#include "apps/topology/topology.hpp"
#include "data/due.hpp"
#include "fakes/fake_fabric.hpp"
#include "pkt/build.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::cpam {
namespace {

using pkt::Bytes;
using pkt::Ipv4Addr;
using pkt::Mac;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test::FakeFabric;

// ---- the runtime's clear-on-connect ---------------------------------------------------------

bool covered(const std::vector<southbound::CookieRange>& rs, uint64_t c) {
  int n = 0;
  for (const auto& r : rs) n += (c & r.mask) == r.cookie ? 1 : 0;
  EXPECT_LE(n, 1) << "ranges overlap at " << std::hex << c;
  return n == 1;
}

TEST(CookieComplement, DeletesEverythingOutsideTheKeptPrefixesAndNothingInside) {
  EXPECT_EQ(southbound::cookie_complement({}), (std::vector<southbound::CookieRange>{{0, 0}}));
  const southbound::CookieRange cpam{kCookie, kCookieMask};
  const auto del = southbound::cookie_complement({cpam});
  EXPECT_EQ(del.size(), 8u);  // one per bit of the 8-bit prefix
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    uint64_t c = rng();
    if (i % 4 == 0) c = (c & ~kCookieMask) | kCookie;
    if (i % 4 == 1) c &= 0x00ff'ffff'ffff'ffffULL;  // forwarding's and the table-miss's range
    EXPECT_EQ(covered(del, c), (c & kCookieMask) != kCookie) << std::hex << c;
  }
  EXPECT_TRUE(covered(del, 0)) << "the table-miss entry (cookie 0) is replaced";
  // Two kept ranges of different lengths; a non-contiguous mask is ignored.
  const auto two = southbound::cookie_complement({cpam, {0x0300'0000'0000'0000ULL, 0xfff0'0000'0000'0000ULL},
                                                   {0x1, 0x1}});
  for (int i = 0; i < 20000; ++i) {
    const uint64_t c = rng();
    const bool kept = (c & kCookieMask) == kCookie || (c & 0xfff0'0000'0000'0000ULL) == 0x0300'0000'0000'0000ULL;
    EXPECT_EQ(covered(two, c), !kept);
  }
}

// ---- archived state -------------------------------------------------------------------------

CpamConfig small_config(size_t hosts, uint32_t pool) {
  CpamConfig c;
  c.pool_size = pool;
  for (size_t i = 0; i < hosts; ++i)
    c.hosts.push_back({"h" + std::to_string(i + 1), pkt::ipv4(10, 0, 0, static_cast<uint8_t>(i + 1)).value});
  return c;
}

TEST(Recovery, VipStateRoundTripsThroughJsonAndRestoresTheEngineMidRotation) {
  auto cfg = small_config(6, 40);
  cfg.quarantine = seconds(30);
  auto table = std::make_shared<VipTable>(cfg.pool_size);
  VipLifecycle life(cfg, table, 6);
  Clock::time_point t{};
  t += seconds(100);
  for (int e = 0; e < 3; ++e) {
    life.reserve_next(t);
    life.commit(t, t + seconds(10));
    t += seconds(10);
  }
  life.reclaim(t);                    // epochs 1 and 2's VIPs start their unreferenced time
  life.reclaim(t + seconds(6));       // ... and go to quarantine
  t += seconds(6);
  ASSERT_EQ(life.quarantine_count(), 12u);
  life.reserve_next(t);               // a rotation in progress: reservations, not committed
  const int64_t unix_now = 1'700'000'000'000;
  const HostDirectory dir(cfg.hosts);
  auto p = life.export_state(t, unix_now);
  p.boot = 4;
  const auto j = recovery::vips_to_json(p, dir, "reserved");
  auto back = recovery::vips_from_json(nlohmann::json::parse(j.dump()), dir, cfg.pool_size);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, p);

  // A fresh controller, 2 s later (Unix and steady clocks both moved).
  auto table2 = std::make_shared<VipTable>(cfg.pool_size);
  VipLifecycle life2(cfg, table2, 6);
  const auto t2 = t + seconds(500);
  EXPECT_EQ(life2.restore(*back, t2, unix_now + 2000, t2 + seconds(3)), 0u);
  for (uint32_t v = 0; v < cfg.pool_size; ++v) {
    EXPECT_EQ(table2->load(v).state, table->load(v).state) << "vip " << v;
    EXPECT_EQ(table2->load(v).owner, table->load(v).owner) << "vip " << v;
  }
  EXPECT_EQ(life2.free_count(), life.free_count());
  EXPECT_EQ(life2.grace_count(), life.grace_count());
  EXPECT_EQ(life2.quarantine_count(), life.quarantine_count());
  EXPECT_EQ(life2.current()->epoch, 3u);
  EXPECT_EQ(life2.current()->primary, life.current()->primary);
  // The rotation goes on with the same reservations, and the next one allocates only Free VIPs.
  std::set<uint32_t> busy;
  for (uint32_t v = 0; v < cfg.pool_size; ++v)
    if (table2->load(v).state != VipState::kFree) busy.insert(v);
  const auto reserved = life2.reserve_next(t2);
  for (auto [h, v] : reserved) EXPECT_EQ(v, p.next[h]);
  life2.commit(t2, t2 + seconds(10));
  for (auto [h, v] : life2.reserve_next(t2 + seconds(10))) EXPECT_FALSE(busy.contains(v)) << "VIP " << v << " reused";
  // Quarantine times carried over: the 2 s of downtime count, 30 s in all before a VIP is free.
  EXPECT_EQ(life2.reclaim(t2 + seconds(28) - milliseconds(1)).freed, 0u);
  EXPECT_EQ(life2.reclaim(t2 + seconds(28) + milliseconds(1)).freed, 12u);
}

TEST(Recovery, VipRecordsAreColumnsNamingEachHostOnceAndBadColumnsAreRefused) {
  const auto cfg = small_config(3, 16);
  const HostDirectory dir(cfg.hosts);
  PersistedVips p;
  p.epoch = 7;
  p.time_ms = 5000;
  p.primary = {2, kNone, 5};
  p.next = {kNone, kNone, 6};
  // h2 (index 1) has no VIP of its own but owns a grace VIP; one quarantined VIP has no owner.
  p.retired = {{9, VipState::kGrace, 1, 4000}, {11, VipState::kQuarantine, kNone, 3000}, {12, VipState::kQuarantine, 0, 2500}};
  const auto j = recovery::vips_to_json(p, dir, "committed");
  EXPECT_EQ(j["format"], 2);
  EXPECT_EQ(j["hosts"], nlohmann::json::parse(R"(["h1", "h3", "h2"])"));
  EXPECT_EQ(j["retired"]["state"], "gqq");
  EXPECT_EQ(j["retired"]["owner"], nlohmann::json::parse("[2, null, 0]"));
  auto back = recovery::vips_from_json(nlohmann::json::parse(j.dump()), dir, 16);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, p);

  // Reloaded with h3 no longer protected: its VIPs wait out a quarantine, as in format 1.
  const HostDirectory fewer(std::vector<ProtectedHost>(cfg.hosts.begin(), cfg.hosts.begin() + 2));
  auto f = recovery::vips_from_json(j, fewer, 16);
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->primary, (std::vector<uint32_t>{2, kNone}));
  EXPECT_EQ(f->retired.size(), 5u);

  auto refused = [&](auto change, std::string_view why) {
    auto bad = j;
    change(bad);
    auto e = recovery::vips_from_json(bad, dir, 16);
    ASSERT_FALSE(e) << why;
    EXPECT_NE(e.error().find(why), std::string::npos) << e.error();
  };
  refused([](auto& b) { b["format"] = 3; }, "format 3");
  refused([](auto& b) { b["primary"].push_back(1); }, "one entry per host");
  refused([](auto& b) { b["next"][0] = 16; }, "hosts.h1: a VIP outside the pool");
  refused([](auto& b) { b["retired"]["owner"][0] = 3; }, "owner 3 is not a listed host");
  refused([](auto& b) { b["retired"]["state"] = "gqx"; }, "state 'x'");
  refused([](auto& b) { b["retired"]["since_ms"].push_back(1); }, "differ in length");
  refused([](auto& b) { b["retired"]["vip"][1] = nullptr; }, "outside the pool");
  refused([](auto& b) { b["hosts"] = nlohmann::json::object(); }, "a list of names");
}

TEST(Recovery, BadVipRecordsAreRefusedAndHostsNoLongerProtectedGiveTheirVipsToQuarantine) {
  const auto cfg = small_config(2, 16);
  const HostDirectory dir(cfg.hosts);
  auto base = nlohmann::json{{"epoch", 5},  {"boot", 1},   {"time_ms", 1000}, {"next_rotation_ms", 2000},
                             {"phase", "x"}, {"hosts", {{"h1", {3, nullptr}}, {"gone", {7, 8}}}},
                             {"retired", {{4, "grace", "h2", 900}}}};
  auto p = recovery::vips_from_json(base, dir, 16);
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->primary, (std::vector<uint32_t>{3, kNone}));
  ASSERT_EQ(p->retired.size(), 3u);
  EXPECT_EQ(p->retired[0].vip, 7u);
  EXPECT_EQ(p->retired[0].state, VipState::kQuarantine);
  EXPECT_EQ(p->retired[2].owner, 1u);
  auto bad = base;
  bad["hosts"]["h1"] = {16, nullptr};
  auto e = recovery::vips_from_json(bad, dir, 16);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().find("hosts.h1"), std::string::npos) << e.error();
  bad = base;
  bad.erase("epoch");
  e = recovery::vips_from_json(bad, dir, 16);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().find("epoch"), std::string::npos);
  bad = base;
  bad["retired"] = {{4, "free", "h2", 1}};
  EXPECT_FALSE(recovery::vips_from_json(bad, dir, 16));
  // A VIP named twice restores once; the second is skipped and counted.
  auto twice = *p;
  twice.retired.push_back({3, VipState::kGrace, 0, 900});
  auto table = std::make_shared<VipTable>(16);
  VipLifecycle life(cfg, table, 2);
  EXPECT_EQ(life.restore(twice, Clock::time_point{} + seconds(10), 1000, {}), 1u);
  EXPECT_EQ(table->load(3).state, VipState::kPrimary);
}

TEST(Recovery, TheSessionLogReplaysBindsRenewalsAndEndsAndCountsBadEntries) {
  const auto cfg = small_config(3, 32);
  const HostDirectory dir(cfg.hosts);
  recovery::PersistedBinding a{11, 6, 0, 1, 4, 5, 40000, 80}, b{12, 17, 1, 2, 6, 7, 5000, 53};
  recovery::SessionLog log;
  log.apply({{"next_id", 12}, {"bound", {recovery::binding_to_json(a, dir), recovery::binding_to_json(b, dir)}}}, dir, 32);
  log.apply({{"next_id", 13}, {"ended", {11}}, {"bound", {{1, 2, 3}, {13, 6, "h1", "nobody", 1, 2, 3, 4}}}}, dir, 32);
  b.cport = 5001;  // a renewal carries the whole binding again
  log.apply({{"bound", {recovery::binding_to_json(b, dir)}}, {"ended", {"x"}}}, dir, 32);
  log.apply(nlohmann::json::array(), dir, 32);
  ASSERT_EQ(log.live.size(), 1u);
  EXPECT_EQ(log.live.at(12), b);
  EXPECT_EQ(log.next_id, 13u);
  EXPECT_EQ(log.bad, 4u);
  // VIPs outside the pool, or the same VIP both ends, are refused.
  EXPECT_FALSE(recovery::binding_from_json({14, 6, "h1", "h2", 32, 5, 1, 2}, dir, 32));
  EXPECT_FALSE(recovery::binding_from_json({14, 6, "h1", "h2", 5, 5, 1, 2}, dir, 32));
}

// ---- the pure diff --------------------------------------------------------------------------

ofp::FlowStats as_stats(const ofp::FlowMod& m) {
  ofp::FlowStats f;
  f.table_id = m.table_id;
  f.priority = m.priority;
  f.cookie = m.cookie;
  f.idle_timeout = m.idle_timeout;
  f.hard_timeout = m.hard_timeout;
  f.flags = m.flags;
  f.match = m.match;
  f.instructions = m.instructions;
  return f;
}

TEST(Resync, TheDiffKeepsExactRulesDeletesStaleAndDifferentOnesAndAddsWhatIsMissing) {
  CpamConfig cfg;
  cfg.pool_size = 64;
  const uint32_t real = pkt::ipv4(10, 0, 0, 1).value;
  const auto good = flows::vip_rule(cfg, 1, real, 0xaa, 3);
  auto reversed = as_stats(flows::vip_rule(cfg, 2, real, 0xaa, 3));
  std::reverse(reversed.match.fields.begin(), reversed.match.fields.end());  // switches reorder fields
  const auto moved = flows::vip_rule(cfg, 3, real, 0xaa, 4);                 // the host is on port 3 now
  const auto stale = flows::vip_rule(cfg, 4, real, 0xaa, 3);
  const auto unlocated = flows::vip_rule(cfg, 5, real, 0xbb, 1);
  auto other_table = as_stats(flows::vip_rule(cfg, 6, real, 0xaa, 3));
  other_table.table_id = 3;
  ofp::FlowStats unknown_kind = as_stats(stale);
  unknown_kind.cookie = kCookie | (uint64_t{9} << 52) | 1;
  flows::Session s{6, real, pkt::ipv4(10, 0, 0, 2).value, cfg.vip_ip(7), cfg.vip_ip(8), 0xaa, 0xbb, 40000, 80};
  topology::Hop h1{1, 3, 1}, h2{2, 1, 2};
  auto plan = flows::plan_session(cfg, s, {h1, h2}, {{2, 2, 1}, {1, 1, 3}}, 0, 42);
  std::vector<ofp::FlowStats> on_switch = {as_stats(good), reversed, as_stats(moved), as_stats(stale),
                                           as_stats(stale),  // two flows, one cookie: not one rule
                                           as_stats(unlocated), other_table, unknown_kind};
  for (const auto& b : plan.at(1).batch)
    if (const auto* fm = std::get_if<ofp::FlowMod>(&b); fm && cookie_kind(fm->cookie) != CookieKind::kVipRule)
      on_switch.push_back(as_stats(*fm));
  const uint32_t here[] = {1, 2, 3, 9};
  auto expect = [&](uint32_t v) {
    recovery::VipExpect e;
    if (v == 5) e.kind = recovery::VipExpect::kAny;
    for (uint32_t h : here)
      if (v == h) {
        e.kind = recovery::VipExpect::kExact;
        e.rule = flows::vip_rule(cfg, v, real, 0xaa, 3);
      }
    return e;
  };
  std::vector<ofp::FlowMod> wanted;
  for (uint32_t v : here) wanted.push_back(flows::vip_rule(cfg, v, real, 0xaa, 3));
  const auto d = recovery::diff_switch(cfg, on_switch, expect, wanted);
  EXPECT_EQ(d.kept, 3u);     // good, reversed, unlocated
  EXPECT_EQ(d.deleted, 5u);  // moved, stale x2, other table, unknown kind
  std::set<uint64_t> deleted, added;
  for (const auto& m : d.deletes) {
    EXPECT_EQ(m.command, ofp::FlowModCommand::kDelete);
    EXPECT_EQ(m.cookie_mask, ~uint64_t{0});
    deleted.insert(m.cookie);
  }
  for (const auto& m : d.adds) added.insert(cookie_id(m.cookie));
  EXPECT_EQ(deleted.size(), 4u);  // stale's two flows go with one delete
  EXPECT_TRUE(deleted.contains(moved.cookie) && deleted.contains(stale.cookie) && deleted.contains(other_table.cookie));
  EXPECT_EQ(added, (std::set<uint64_t>{3, 9}));  // the moved rule comes back right; 9 was missing
  ASSERT_EQ(d.sessions.size(), 1u);  // the first-hop flow (s1 is no transit hop of the reply)
  const auto& sf = d.sessions[0];
  EXPECT_EQ(sf.kind, static_cast<uint8_t>(CookieKind::kFirstFwd));
  EXPECT_EQ(sf.id, 42u);
  EXPECT_EQ(sf.src, s.c_real);
  EXPECT_EQ(sf.dst, s.vs);
  EXPECT_EQ(sf.set_src, s.vc);
  EXPECT_EQ(sf.sport, 40000);
  EXPECT_EQ(sf.dport, 80);
  // Nothing to do when the switch holds exactly what is wanted.
  const auto again = recovery::diff_switch(cfg, {as_stats(good)}, expect, {good});
  EXPECT_EQ(again.kept, 1u);
  EXPECT_TRUE(again.deletes.empty() && again.adds.empty());
}

// ---- the app on a fake campus ---------------------------------------------------------------

struct Host {
  std::string name;
  Mac mac;
  Ipv4Addr ip;
};

// s1 core; s2, s3 aggregation; s4..s7 edges on both aggs; 2 hosts per edge (ports 1-2). The
// same campus as cpam_test, with the data backends chosen by the test (SQLite for restarts).
class RecoveryFabric : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 1; n <= 8; ++n)
      hosts_.push_back({"h" + std::to_string(n), Mac{static_cast<uint64_t>(n)},
                        pkt::ipv4(10, 0, 0, static_cast<uint8_t>(n))});
    cfg_.rotation_interval = seconds(10);
    cfg_.pool_size = 64;
    cfg_.vip_prefix_len = 24;
    cfg_.batch_hosts = 3;
    cfg_.commit_off_loop = false;  // the fake fabric's manual clock: the commit waits on the loop
    cfg_.batch_delay = milliseconds(150);
    cfg_.recovery_hold = seconds(3);
    for (const auto& h : hosts_) cfg_.hosts.push_back({h.name, h.ip.value});
    dir_ = std::filesystem::temp_directory_path() / ("cpam-recovery-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    stop();
    std::filesystem::remove_all(dir_);
  }
  void stop() {
    fabric_.reset();
    svc_.reset();
    cpam_.clear();
    backends_.reset();
  }
  // A controller on the SQLite archive in dir_ (`archive`) or none; `on_up` runs between a
  // switch's creation and its flow-stats answer (what it kept from before the restart).
  void build(bool archive, const std::map<uint64_t, std::vector<emu::FlowEntry>>& kept = {}) {
    std::unique_ptr<data::Archive> ar;
    if (archive) {
      data::SqliteConfig sc;
      sc.path = (dir_ / "archive.db").string();
      sc.flush_interval = milliseconds(5);
      auto a = data::open_sqlite_archive(sc);
      ASSERT_TRUE(a) << a.error();
      ar = std::move(*a);
    }
    backends_ = std::make_shared<data::Backends>(data::make_inproc_updates(), std::move(ar));
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
    svc_ = std::make_shared<CpamService>(cfg_, cpam_due, nullptr);
    fabric_ = std::make_unique<FakeFabric>(2, [this, fwd_due](unsigned shard) {
      std::vector<std::unique_ptr<southbound::App>> v;
      v.push_back(std::make_unique<topology::Topology>(topo_, shard));
      auto c = std::make_unique<Cpam>(svc_, shard);
      cpam_[shard] = c.get();
      v.push_back(std::move(c));
      v.push_back(std::make_unique<FabricForwarding>(ForwardingConfig{}, fwd_due, nullptr));
      return v;
    });
    fabric_->start();
    auto add = [&](uint64_t d, std::vector<uint32_t> ports) {
      auto& sw = fabric_->add_switch(d, std::move(ports));
      if (auto it = kept.find(d); it != kept.end())
        for (const auto& e : it->second) sw.send(as_mod(e));
      answer_flow_stats(d);
    };
    add(1, {1, 2});
    add(2, {1, 2, 3, 4, 5});
    add(3, {1, 2, 3, 4, 5});
    fabric_->link(1, 1, 2, 5);
    fabric_->link(1, 2, 3, 5);
    int n = 0;
    for (uint64_t e = 4; e <= 7; ++e) {
      add(e, {1, 2, 3, 4});
      fabric_->link(e, 3, 2, static_cast<uint32_t>(e - 3));
      fabric_->link(e, 4, 3, static_cast<uint32_t>(e - 3));
      for (uint32_t p = 1; p <= 2; ++p) fabric_->attach(hosts_[static_cast<size_t>(n++)].name, e, p);
    }
    fabric_->advance(milliseconds(2000));
  }
  static ofp::FlowMod as_mod(const emu::FlowEntry& e) {
    ofp::FlowMod m;
    m.table_id = e.table_id;
    m.priority = e.priority;
    m.cookie = e.cookie;
    m.idle_timeout = e.idle_timeout;
    m.hard_timeout = e.hard_timeout;
    m.flags = e.flags;
    m.match = e.match;
    m.instructions = e.instructions;
    return m;
  }
  // The switch answers CPAM's flow-stats request from its table (in two parts, like a switch
  // with a long table), then everything posted runs.
  void answer_flow_stats(uint64_t d) {
    auto& sw = fabric_->sw(d);
    auto reqs = std::exchange(sw.requests(), {});
    for (auto& r : reqs) {
      const auto* mp = std::get_if<ofp::MultipartRequest>(&r.body);
      if (mp == nullptr || mp->type != ofp::MultipartType::kFlow) continue;
      const auto& fr = std::get<ofp::FlowStatsRequest>(mp->body);
      std::vector<ofp::FlowStats> all;
      for (const auto& e : sw.flows_in_cookie_range(fr.cookie, fr.cookie_mask)) all.push_back(as_stats(as_mod(e)));
      const size_t half = all.size() / 2;
      for (int part = 0; part < 2; ++part) {
        ofp::MultipartReply rep;
        rep.type = ofp::MultipartType::kFlow;
        rep.body = std::vector<ofp::FlowStats>(all.begin() + (part == 0 ? 0 : static_cast<long>(half)),
                                               part == 0 ? all.begin() + static_cast<long>(half) : all.end());
        ofp::Message m{1, rep};
        r.on_reply(&m, nullptr, part == 0);
      }
    }
    fabric_->run();
  }
  // Drops and restores a switch's controller connection: same switch, flows kept.
  void reconnect(uint64_t d) {
    const unsigned shard = fabric_->shard_of(d);
    for (auto& a : fabric_->apps(shard)) a->on_switch_down(d);
    fabric_->run();
    for (auto& a : fabric_->apps(shard)) a->on_switch_up(fabric_->sw(d));
    answer_flow_stats(d);
  }
  const Host& host(int n) const { return hosts_.at(static_cast<size_t>(n - 1)); }
  uint32_t vip(int n) {
    const auto snap = svc_->latest();
    return cfg_.vip_ip(snap->primary.at(static_cast<size_t>(n - 1)));
  }
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
  // Every host sends one ARP for the DNS address: topology learns where it is.
  void locate_all() {
    for (const auto& h : hosts_) {
      pkt::Bytes arp = pkt::arp_request(h.mac, h.ip, pkt::ipv4(10, 0, 255, 253));
      fabric_->send(h.name, arp);
    }
  }
  std::vector<emu::FlowEntry> cpam_flows(uint64_t d) { return fabric_->sw(d).flows_in_cookie_range(kCookie, kCookieMask); }
  std::map<uint64_t, std::vector<emu::FlowEntry>> all_cpam_flows() {
    std::map<uint64_t, std::vector<emu::FlowEntry>> out;
    for (uint64_t d = 1; d <= 7; ++d) out[d] = cpam_flows(d);
    return out;
  }
  // The source address `to` saw on the last IPv4 frame it received.
  std::optional<uint32_t> last_src(const std::string& to) {
    std::optional<uint32_t> out;
    for (const auto& [h, frame] : fabric_->deliveries()) {
      if (h != to) continue;
      if (auto p = pkt::parse(frame); p && p->ipv4) out = p->ipv4->src.value;
    }
    return out;
  }
  uint64_t counter(const char* name) { return svc_->stats_json()[name].get<uint64_t>(); }

  CpamConfig cfg_;
  std::filesystem::path dir_;
  std::shared_ptr<data::Backends> backends_;
  std::shared_ptr<topology::TopologyService> topo_;
  std::shared_ptr<CpamService> svc_;
  std::map<unsigned, Cpam*> cpam_;
  std::unique_ptr<FakeFabric> fabric_;
  std::vector<Host> hosts_;
};

TEST_F(RecoveryFabric, AReconnectedSwitchKeepsItsRightFlowsDeletesStaleOnesAndAddsWhatIsMissing) {
  build(false);
  locate_all();
  const uint32_t v8 = vip(8), v1 = vip(1);
  fabric_->send("h1", tcp(host(1), v8, 36000, 80, pkt::tcpflag::kSyn));
  const uint32_t vidx8 = v8 - cfg_.vip_base - 1;
  ASSERT_EQ(svc_->vips().load(vidx8).flows, 2u);
  // h8's access switch (s7) loses its controller connection mid-rotation; meanwhile someone
  // left junk in CPAM's range there.
  cpam_.at(0)->rotate_now();
  fabric_->run();
  ASSERT_TRUE(svc_->rotating());
  auto& s7 = fabric_->sw(7);
  // VIPs are drawn at random: take ones that are Free now (fixed indices were in use in about
  // one run of thirty, and the junk rule was then right and kept).
  auto free_vip = [&](uint32_t from) {
    while (svc_->vips().load(from).state != VipState::kFree) ++from;
    return from;
  };
  const uint32_t f1 = free_vip(0), f2 = free_vip(f1 + 1), f3 = free_vip(f2 + 1);
  ofp::FlowMod junk = flows::vip_rule(cfg_, f1, host(8).ip.value, 8, 2);  // a Free VIP
  s7.send(junk);
  ofp::FlowMod orphan = flows::vip_rule(cfg_, f2, host(8).ip.value, 8, 2);
  orphan.cookie = make_cookie(CookieKind::kFirstFwd, 1, 999);  // an unknown session, Free VIPs
  orphan.match = ofp::Match{};
  orphan.match.set(ofp::OxmField::kInPort, 2).set(ofp::OxmField::kEthType, 0x0800).set(ofp::OxmField::kIpProto, 6);
  orphan.match.set(ofp::OxmField::kIpv4Src, host(8).ip.value).set(ofp::OxmField::kIpv4Dst, cfg_.vip_ip(f3));
  orphan.priority = cfg_.session_priority;
  s7.send(orphan);
  const size_t kept_before = cpam_flows(7).size() - 2;
  const uint64_t resyncs0 = counter("resyncs"), kept0 = counter("resync_kept"), added0 = counter("resync_added");
  reconnect(7);
  ASSERT_TRUE(svc_->rotating()) << "the resync ran mid-rotation";
  EXPECT_EQ(counter("resyncs"), resyncs0 + 1);
  EXPECT_EQ(counter("resync_deleted"), 2u);  // the junk rule and the orphan
  // h7 and h8 left the topology with their switch and are not located again yet: their rules
  // are kept as they are (nothing to compare them with), none is added.
  EXPECT_EQ(counter("resync_added"), added0);
  EXPECT_EQ(counter("resync_kept"), kept0 + kept_before);
  EXPECT_EQ(counter("resync_adopted"), 0u);
  std::multiset<uint64_t> cookies;
  for (const auto& e : cpam_flows(7)) cookies.insert(e.cookie);
  for (uint64_t c : cookies) {  // one rule per cookie (a transit cookie covers both directions)
    if (cookie_kind(c) != CookieKind::kTransit) {
      EXPECT_EQ(cookies.count(c), 1u) << std::hex << c;
    }
  }
  EXPECT_FALSE(cookies.contains(junk.cookie));
  EXPECT_FALSE(cookies.contains(orphan.cookie));
  EXPECT_EQ(cookies.size(), kept_before);
  fabric_->advance(milliseconds(3000));  // the rotation publishes
  ASSERT_FALSE(svc_->rotating());
  // The binding got its flow reference back (s7 holds its server-side first hop): both again.
  EXPECT_EQ(svc_->vips().load(vidx8).flows, 2u);
  EXPECT_EQ(svc_->vips().load(vidx8).sessions, 1u);
  // A second resync of the same switch finds nothing to do.
  reconnect(7);
  EXPECT_EQ(counter("resync_deleted"), 2u);
  EXPECT_EQ(counter("resyncs"), resyncs0 + 2);
  // The session still flows both ways on the kept flows, under its pinned VIPs.
  fabric_->clear_deliveries();
  EXPECT_EQ(fabric_->send("h8", tcp(host(8), v1, 80, 36000)).packet_ins, 0u);
  EXPECT_EQ(last_src("h1"), v8);
  EXPECT_EQ(fabric_->send("h1", tcp(host(1), v8, 36000, 80)).packet_ins, 0u);
  EXPECT_EQ(last_src("h8"), v1);
  // The session ends; h8 has not been seen since its switch came back. Its retired VIP's rule
  // on s7 must still go at quarantine (no leak because the host is not located).
  const uint64_t rule8 = make_cookie(CookieKind::kVipRule, 0, vidx8);
  ASSERT_EQ(s7.flows_in_cookie_range(rule8, ~uint64_t{0}).size(), 1u);
  for (int i = 0; i < 40 && svc_->vips().load(vidx8).state != VipState::kQuarantine; ++i)
    fabric_->advance(milliseconds(1000));
  ASSERT_EQ(svc_->vips().load(vidx8).state, VipState::kQuarantine);
  fabric_->run();
  EXPECT_EQ(s7.flows_in_cookie_range(rule8, ~uint64_t{0}).size(), 0u);
}

TEST_F(RecoveryFabric, ARestartedControllerReloadsItsStateAdoptsLostBindingsAndNeverReusesAVipInUse) {
  cfg_.session_lease = seconds(60);
  build(true);
  locate_all();
  const uint32_t v8 = vip(8), v1 = vip(1);
  // Two sessions: h1 -> h8 in epoch 1 (archived by the next sweep), then a rotation, and h3 ->
  // h6 in epoch 2 right before the crash (its record was due at the next sweep: lost).
  fabric_->send("h1", tcp(host(1), v8, 36000, 80, pkt::tcpflag::kSyn));
  fabric_->advance(milliseconds(1100));
  cpam_.at(0)->rotate_now();
  fabric_->advance(milliseconds(2000));
  ASSERT_EQ(svc_->latest()->epoch, 2u);
  ASSERT_NE(vip(8), v8);
  const uint32_t v6 = vip(6), v3 = vip(3);
  fabric_->send("h3", tcp(host(3), v6, 37000, 443, pkt::tcpflag::kSyn));
  std::set<uint32_t> in_use = {v8, v1, v6, v3};
  for (int h = 1; h <= 8; ++h) in_use.insert(vip(h));
  ASSERT_TRUE(backends_->archive()->flush(seconds(5)));
  // kill -9: the second binding's record never reached the archive (written at the next sweep).
  auto kept = all_cpam_flows();
  {
    data::Query q;
    q.key = "network/cpam/sessions/*@cpam";
    auto recs = backends_->archive()->query(q);
    ASSERT_TRUE(recs) << recs.error();
    size_t n = 0;
    for (const auto& r : *recs) n += r.value.json()["bound"].size();
    ASSERT_EQ(n, 1u) << "the test needs h3 -> h6 unarchived";
  }
  fabric_.reset();  // no on_stop persistence matters: a killed process runs none
  svc_.reset();
  cpam_.clear();
  backends_.reset();

  build(true, kept);  // same archive; every switch kept its CPAM flows
  EXPECT_EQ(svc_->latest()->epoch, 2u) << "the epoch went on";
  EXPECT_EQ(counter("reloaded"), 1u);
  EXPECT_EQ(counter("reloaded_bindings"), 1u);
  EXPECT_EQ(counter("resync_adopted"), 1u) << "h3 -> h6 was rebuilt from its first-hop flow";
  EXPECT_EQ(counter("resync_deleted"), 0u) << "nothing installed before the crash was stale";
  EXPECT_EQ(counter("boot"), 1u);
  for (int h = 1; h <= 8; ++h) EXPECT_TRUE(in_use.contains(vip(h)));
  for (uint32_t v : {v8, v1, v6, v3}) {
    const auto s = svc_->vips().load(v - cfg_.vip_base - 1);
    EXPECT_EQ(s.state, v == v8 || v == v1 ? VipState::kGrace : VipState::kPrimary) << Ipv4Addr{v}.to_string();
    EXPECT_EQ(s.sessions, 1u) << Ipv4Addr{v}.to_string();
    EXPECT_EQ(s.flows, 2u) << Ipv4Addr{v}.to_string();
  }
  // Established sessions: their packets hit the kept flows (no PacketIn), same VIPs as before.
  locate_all();
  fabric_->clear_deliveries();
  auto d1 = fabric_->send("h1", tcp(host(1), v8, 36000, 80));
  EXPECT_EQ(d1.packet_ins, 0u);
  EXPECT_EQ(last_src("h8"), v1);
  auto d2 = fabric_->send("h6", tcp(host(6), v3, 443, 37000));
  EXPECT_EQ(d2.packet_ins, 0u);
  EXPECT_EQ(last_src("h3"), v6);
  // Past the hold, rotations go on: no VIP a session still uses is handed out again.
  for (int r = 0; r < 6; ++r) {
    cpam_.at(0)->rotate_now();
    fabric_->advance(milliseconds(2500));
    fabric_->send("h1", tcp(host(1), v8, 36000, 80));  // keep both sessions' flows busy
    fabric_->send("h3", tcp(host(3), v6, 37000, 443));
    for (int h = 1; h <= 8; ++h)
      for (uint32_t v : {v8, v1, v6, v3}) EXPECT_NE(vip(h), v) << "epoch " << svc_->latest()->epoch;
  }
  EXPECT_EQ(svc_->latest()->epoch, 8u);
  for (uint32_t v : {v8, v1, v6, v3}) EXPECT_EQ(svc_->vips().load(v - cfg_.vip_base - 1).state, VipState::kGrace);
  // New sessions work after the restart, on session ids of the new boot.
  fabric_->clear_deliveries();
  fabric_->send("h2", tcp(host(2), vip(7), 38000, 22, pkt::tcpflag::kSyn));
  EXPECT_EQ(last_src("h7"), vip(2));
  bool new_boot = false;
  for (const auto& e : cpam_flows(fabric_->sw(4).dpid()))
    if (cookie_kind(e.cookie) == CookieKind::kFirstFwd && (cookie_id(e.cookie) >> 36) == 1) new_boot = true;
  EXPECT_TRUE(new_boot);
}

}  // namespace
}  // namespace sdn::apps::cpam
