// Cluster instances in one process against a private redis-server: one master per switch,
// balance, hand-over on stop, takeover after a frozen member's leases expire, fencing
// generations that only grow, leader election and fenced writes, Redis down at start.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include "cluster/cluster.hpp"
#include "fakes/eventually.hpp"
#include "fakes/redis_server.hpp"
#include "fakes/sentinel.hpp"  // redis_call

namespace sdn::cluster {
namespace {

using southbound::Role;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class RecordingSink : public southbound::RoleSink {
 public:
  struct Entry {
    Role role = Role::kEqual;
    uint64_t gen = 0;
    bool fresh = false;
  };
  void set_role(uint64_t dpid, Role role, uint64_t gen, bool fresh) override {
    std::lock_guard l(mu_);
    cur_[dpid] = Entry{role, gen, fresh};
    history_.push_back({dpid, Entry{role, gen, fresh}});
  }
  // The switch's connection to this instance closed: what the sink said of it is void.
  void forget(uint64_t dpid) {
    std::lock_guard l(mu_);
    cur_.erase(dpid);
  }
  Entry get(uint64_t dpid) const {
    std::lock_guard l(mu_);
    auto it = cur_.find(dpid);
    return it == cur_.end() ? Entry{} : it->second;
  }
  std::vector<std::pair<uint64_t, Entry>> history() const {
    std::lock_guard l(mu_);
    return history_;
  }

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> cur_;
  std::vector<std::pair<uint64_t, Entry>> history_;
};

struct Node {
  RecordingSink sink;
  std::unique_ptr<Cluster> c;
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(redis_.start()) << redis_.error(); }

  ClusterConfig config(const std::string& id) const {
    ClusterConfig k;
    k.enabled = true;
    k.name = "t";
    k.instance_id = id;
    k.redis = {"127.0.0.1:" + std::to_string(redis_.port())};
    return k;  // lease 600, renew 150, check 100, claim 200
  }

  Node& add(const std::string& id, bool balance = true) {
    auto k = config(id);
    k.balance = balance;
    nodes_.push_back(std::make_unique<Node>());
    auto& n = *nodes_.back();
    n.c = std::make_unique<Cluster>(k);
    n.c->attach(&n.sink);
    EXPECT_TRUE(n.c->start());
    return n;
  }

  void connect_all(uint64_t first, uint64_t count) {
    for (auto& n : nodes_)
      for (uint64_t d = first; d < first + count; ++d) n->c->switch_connected(d);
  }

  // Exactly one sink says MASTER for each switch, and every other says SLAVE with the
  // master's generation. Nodes whose cluster is stopped are left out.
  bool one_master_each(uint64_t first, uint64_t count) const {
    for (uint64_t d = first; d < first + count; ++d) {
      int masters = 0;
      uint64_t gen = 0;
      for (const auto& n : nodes_) {
        if (!n->c) continue;
        auto e = n->sink.get(d);
        if (e.role == Role::kMaster) {
          ++masters;
          gen = e.gen;
        }
      }
      if (masters != 1) return false;
      for (const auto& n : nodes_) {
        if (!n->c) continue;
        auto e = n->sink.get(d);
        if (e.role != Role::kMaster && (e.role != Role::kSlave || e.gen != gen)) return false;
      }
    }
    return true;
  }

  int master_of(uint64_t d) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i]->c && nodes_[i]->sink.get(d).role == Role::kMaster) return static_cast<int>(i);
    return -1;
  }

  // Leases acquired by all nodes during `window`: a window for flapping to show, not a wait.
  uint64_t leases_taken_during(milliseconds window) const {
    auto total = [&] {
      uint64_t sum = 0;
      for (const auto& n : nodes_)
        if (n->c) sum += n->c->counters().leases_acquired;
      return sum;
    };
    const uint64_t before = total();
    std::this_thread::sleep_for(window);
    return total() - before;
  }

  test::RedisServer redis_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(ClusterTest, EachSwitchGetsExactlyOneMaster) {
  add("a");
  add("b");
  add("c");
  connect_all(1, 12);
  ASSERT_TRUE(test::eventually([&] { return one_master_each(1, 12); }, milliseconds(5000)));
  // The instances agree with their sinks, and the masters() sets are disjoint.
  std::set<uint64_t> all;
  for (auto& n : nodes_)
    for (const auto& m : n->c->masters()) {
      EXPECT_TRUE(all.insert(m.first).second) << "switch " << m.first << " mastered twice";
      EXPECT_EQ(n->sink.get(m.first).gen, m.second);
    }
  EXPECT_EQ(all.size(), 12u);
  // A first master of a switch is fresh (clear_flows_on_connect applies); nothing else is.
  for (uint64_t d = 1; d <= 12; ++d) {
    int fresh = 0;
    for (auto& n : nodes_)
      for (const auto& h : n->sink.history())
        if (h.first == d && h.second.fresh) ++fresh;
    EXPECT_LE(fresh, 1) << "switch " << d;
  }
  EXPECT_TRUE(test::eventually([&] { return nodes_[0]->c->members().size() == 3; }));
  auto st = nodes_[0]->c->state();
  EXPECT_EQ(st["instance_id"], "a");
  EXPECT_EQ(st["members"].size(), 3u);
  EXPECT_EQ(st["masters"].size(), nodes_[0]->c->masters().size());
  EXPECT_EQ(st["switches"].size(), 12u);
  EXPECT_TRUE(st["redis"]["connected"].get<bool>());
}

TEST_F(ClusterTest, BalanceSpreadsTwelveSwitchesFourFourFour) {
  // "a" starts alone and takes everything; b and c join; the switches spread out.
  auto& a = add("a");
  connect_all(1, 12);
  ASSERT_TRUE(test::eventually([&] { return a.c->masters().size() == 12; }));
  add("b");
  add("c");
  for (std::size_t i = 1; i < 3; ++i)
    for (uint64_t d = 1; d <= 12; ++d) nodes_[i]->c->switch_connected(d);
  const auto t0 = Clock::now();
  bool spread = test::eventually(
      [&] {
        for (auto& n : nodes_)
          if (n->c->masters().size() != 4) return false;
        return one_master_each(1, 12);
      },
      milliseconds(8000));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("balance: 12 switches at 4/4/4 after %.0f ms (lease 600 ms)\n", ms);
  for (auto& n : nodes_) std::printf("  %s masters %zu\n", n->c->instance_id().c_str(), n->c->masters().size());
  ASSERT_TRUE(spread);
  EXPECT_EQ(a.c->counters().handovers, 8u);
  // Stable: no switch moves again.
  EXPECT_EQ(leases_taken_during(milliseconds(1500)), 0u);
  for (auto& n : nodes_) EXPECT_EQ(n->c->masters().size(), 4u);
}

TEST_F(ClusterTest, BalanceBreaksATwoOneZeroChain) {
  // Three switches whose placement over a, b, c is 2 -> b, 3 -> a, 30 -> c. "a" holds 2 and 3,
  // "b" holds 30, "c" holds nothing. No single move narrows a gap by more than one (a's extra
  // switch belongs to b, which holds one; b's belongs to c), yet 1/1/1 is the balance.
  auto& a = add("a");
  a.c->switch_connected(2);
  a.c->switch_connected(3);
  ASSERT_TRUE(test::eventually([&] { return a.c->masters().size() == 2; }));
  auto& b = add("b");
  b.c->switch_connected(30);
  ASSERT_TRUE(test::eventually([&] { return b.c->masters().size() == 1; }));
  auto& c = add("c");
  for (uint64_t d : {2, 3, 30}) c.c->switch_connected(d);
  a.c->switch_connected(30);
  b.c->switch_connected(2);
  b.c->switch_connected(3);
  const auto t0 = Clock::now();
  const bool spread = test::eventually(
      [&] {
        for (auto& n : nodes_)
          if (n->c->masters().size() != 1) return false;
        return one_master_each(2, 2) && one_master_each(30, 1);
      },
      milliseconds(8000));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("balance: 2/1/0 to 1/1/1 after %.0f ms (lease 600 ms)\n", ms);
  for (auto& n : nodes_) std::printf("  %s masters %zu\n", n->c->instance_id().c_str(), n->c->masters().size());
  ASSERT_TRUE(spread);
  EXPECT_EQ(master_of(2), 1);  // every switch on its placement target
  EXPECT_EQ(master_of(3), 0);
  EXPECT_EQ(master_of(30), 2);
  EXPECT_EQ(a.c->counters().handovers, 1u);
  EXPECT_EQ(b.c->counters().handovers, 1u);
  EXPECT_EQ(c.c->counters().handovers, 0u);
  EXPECT_EQ(leases_taken_during(milliseconds(1500)), 0u);
}

TEST_F(ClusterTest, StopHandsSwitchesOverAtOnce) {
  add("a");
  add("b");
  add("c");
  connect_all(1, 12);
  ASSERT_TRUE(test::eventually([&] { return one_master_each(1, 12); }, milliseconds(5000)));
  // Stop the instance with the most switches.
  std::size_t victim = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->c->masters().size() > nodes_[victim]->c->masters().size()) victim = i;
  auto theirs = nodes_[victim]->c->masters();
  ASSERT_FALSE(theirs.empty());
  const auto t0 = Clock::now();
  nodes_[victim]->c->stop();
  // Its sink was told SLAVE for what it held.
  for (const auto& m : theirs) EXPECT_EQ(nodes_[victim]->sink.get(m.first).role, Role::kSlave);
  nodes_[victim]->c.reset();
  ASSERT_TRUE(test::eventually([&] {
    for (const auto& m : theirs)
      if (master_of(m.first) < 0) return false;
    return true;
  }, milliseconds(5000)));
  const double mastered_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  ASSERT_TRUE(test::eventually([&] { return one_master_each(1, 12); }, milliseconds(5000)));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("stop: %zu switches have a new master after %.0f ms, every slave told after %.0f ms "
              "(check interval 100, claim delay 200)\n", theirs.size(), mastered_ms, ms);
  // Released leases are taken without waiting for them to expire.
  EXPECT_LT(ms, 600.0);
  for (const auto& m : theirs) {
    const int now = master_of(m.first);
    ASSERT_GE(now, 0);
    EXPECT_GT(nodes_[static_cast<std::size_t>(now)]->sink.get(m.first).gen, m.second);
  }
}

TEST_F(ClusterTest, FrozenMemberLosesItsLeasesAfterTheLease) {
  auto& a = add("a", /*balance=*/false);
  connect_all(1, 6);
  ASSERT_TRUE(test::eventually([&] { return a.c->masters().size() == 6; }));
  auto& b = add("b", false);
  for (uint64_t d = 1; d <= 6; ++d) b.c->switch_connected(d);
  ASSERT_TRUE(test::eventually([&] { return one_master_each(1, 6); }));
  const auto before = a.c->masters();
  ASSERT_EQ(before.size(), 6u);

  const auto t0 = Clock::now();
  a.c->freeze_for_test(true);
  bool taken = test::eventually([&] {
    for (uint64_t d = 1; d <= 6; ++d)
      if (b.sink.get(d).role != Role::kMaster) return false;
    return true;
  }, milliseconds(5000));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("takeover after a frozen master: %.0f ms (lease 600, renew 150, check 100, claim 200)\n", ms);
  ASSERT_TRUE(taken);
  // Not before the lease could have run out, and not much after: lease + check + claim + slack.
  EXPECT_GE(ms, 600.0 - 150.0 - 20.0);
  EXPECT_LT(ms, 600.0 + 100.0 + 200.0 + 250.0);
  for (const auto& m : before) EXPECT_GT(b.sink.get(m.first).gen, m.second) << "switch " << m.first;

  // Thawed, "a" notices on its own (local deadline long past) and its sink goes SLAVE with the
  // new generation once it reads the leases.
  a.c->freeze_for_test(false);
  ASSERT_TRUE(test::eventually([&] {
    for (uint64_t d = 1; d <= 6; ++d) {
      auto e = a.sink.get(d);
      if (e.role != Role::kSlave || e.gen != b.sink.get(d).gen) return false;
    }
    return a.c->masters().empty();
  }));
  EXPECT_EQ(a.c->counters().self_demotions, 6u);
  EXPECT_TRUE(one_master_each(1, 6));
}

TEST_F(ClusterTest, GenerationsStrictlyGrowAcrossTakeovers) {
  add("a", false);
  add("b", false);
  connect_all(7, 1);
  std::vector<uint64_t> gens;
  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(test::eventually([&] { return one_master_each(7, 1); }, milliseconds(5000)));
    const int m = master_of(7);
    ASSERT_GE(m, 0);
    gens.push_back(nodes_[static_cast<std::size_t>(m)]->sink.get(7).gen);
    // Depose the master: the switch disconnects from it and comes back.
    nodes_[static_cast<std::size_t>(m)]->c->switch_disconnected(7);
    nodes_[static_cast<std::size_t>(m)]->sink.forget(7);
    ASSERT_TRUE(test::eventually([&] {
      const int now = master_of(7);
      return now >= 0 && now != m && nodes_[static_cast<std::size_t>(now)]->sink.get(7).gen > gens.back();
    }));
    nodes_[static_cast<std::size_t>(m)]->c->switch_connected(7);
  }
  for (std::size_t i = 1; i < gens.size(); ++i) EXPECT_GT(gens[i], gens[i - 1]);
  // Generations are time based (unix ms * 1000): far above a plain counter.
  EXPECT_GT(gens.front(), uint64_t{1'600'000'000'000'000});
}

TEST_F(ClusterTest, GenerationsStayExactBeyondDoublePrecisionAndSurviveLostKeys) {
  // 2^53 + 1 cannot be a double: the script must not pass it through a Lua number.
  auto r = test::redis_call(redis_.port(), {"SET", "sdnator:cluster:t:gen:0000000000000009", "9007199254740993"});
  ASSERT_TRUE(r);
  auto& a = add("a");
  a.c->switch_connected(9);
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(9).role == Role::kMaster; }));
  EXPECT_EQ(a.sink.get(9).gen, uint64_t{9007199254740994});
  EXPECT_FALSE(a.sink.get(9).fresh);  // a generation existed: not the first master
  auto lease = test::redis_call(redis_.port(), {"GET", "sdnator:cluster:t:master:0000000000000009"});
  ASSERT_TRUE(lease && lease->type == REDIS_REPLY_STRING);
  EXPECT_EQ(std::string(lease->str, lease->len), "a 9007199254740994");

  // Redis loses everything (a failover to a replica that missed the writes): "a" takes the
  // switch back with a generation that is still larger.
  a.c->switch_connected(10);
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(10).role == Role::kMaster; }));
  const uint64_t g10 = a.sink.get(10).gen;
  EXPECT_TRUE(a.sink.get(10).fresh);
  test::redis_call(redis_.port(), {"FLUSHALL"});
  ASSERT_TRUE(test::eventually([&] {
    auto e = a.sink.get(10);
    return e.role == Role::kMaster && e.gen > g10;
  }));
  EXPECT_FALSE(a.sink.get(10).fresh);  // this instance saw it mastered: not fresh again
  EXPECT_TRUE(test::eventually([&] { return a.c->masters().size() == 2; }));
  // 9's stored generation was lost too, and the time-based proposal is below 2^53 + 2: "a"
  // still takes it back above what it held (its own generation + 1 is the floor).
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(9).gen == uint64_t{9007199254740995}; }));
  EXPECT_EQ(a.sink.get(9).role, Role::kMaster);
  // The switch reports a newer generation than ours (another controller's, unknown to Redis):
  // "a" takes one above it, so its ROLE_REQUEST is no longer stale.
  a.c->mastership_refused(9, uint64_t{9007199254740999});
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(9).gen == uint64_t{9007199254741000}; }));
  EXPECT_EQ(a.sink.get(9).role, Role::kMaster);
  EXPECT_EQ(a.c->masters().at(9), uint64_t{9007199254741000});
}

// A sink that, whenever it is told a role, reads masters() from its own instance: an app
// that asks the cluster what it masters right after being told must get the same answer.
class AgreeingSink : public southbound::RoleSink {
 public:
  void set_role(uint64_t dpid, Role role, uint64_t gen, bool) override {
    const auto m = cluster->masters();
    const auto it = m.find(dpid);
    const bool agrees = role == Role::kMaster ? it != m.end() && it->second == gen : it == m.end();
    std::lock_guard l(mu);
    ++told;
    if (!agrees)
      disagreements.push_back(std::to_string(dpid) + (role == Role::kMaster ? " master " : " slave ") +
                              std::to_string(gen) + " but masters() says " +
                              (it == m.end() ? "none" : std::to_string(it->second)));
  }
  Cluster* cluster = nullptr;
  std::mutex mu;
  int told = 0;
  std::vector<std::string> disagreements;
};

TEST_F(ClusterTest, MastersAgreesWithTheSinkWhenTheSinkIsTold) {
  AgreeingSink sa, sb;
  auto ka = config("a"), kb = config("b");
  Cluster a(ka), b(kb);
  sa.cluster = &a;
  sb.cluster = &b;
  a.attach(&sa);
  b.attach(&sb);
  ASSERT_TRUE(a.start());
  for (uint64_t d = 1; d <= 6; ++d) a.switch_connected(d);
  ASSERT_TRUE(test::eventually([&] { return a.masters().size() == 6; }));
  // b joins: balance hands three over (a told SLAVE, b told MASTER); a refusal from a switch
  // makes a take a newer generation; then a stops and b takes the rest.
  ASSERT_TRUE(b.start());
  for (uint64_t d = 1; d <= 6; ++d) b.switch_connected(d);
  ASSERT_TRUE(test::eventually([&] { return a.masters().size() == 3 && b.masters().size() == 3; },
                               milliseconds(5000)));
  const auto mine = a.masters();
  a.mastership_refused(mine.begin()->first, mine.begin()->second + 7);
  ASSERT_TRUE(test::eventually([&] {
    auto m = a.masters();
    return m.count(mine.begin()->first) != 0 && m.at(mine.begin()->first) >= mine.begin()->second + 8;
  }));
  a.stop();
  ASSERT_TRUE(test::eventually([&] { return b.masters().size() == 6; }, milliseconds(5000)));
  b.stop();
  std::lock_guard la(sa.mu), lb(sb.mu);
  EXPECT_GE(sa.told, 6 + 3 + 1 + 3);
  EXPECT_GE(sb.told, 3 + 3);
  for (const auto& d : sa.disagreements) ADD_FAILURE() << "a: " << d;
  for (const auto& d : sb.disagreements) ADD_FAILURE() << "b: " << d;
}

TEST_F(ClusterTest, RefusedMastershipRereadsTheLease) {
  auto& a = add("a", false);
  a.c->switch_connected(3);
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(3).role == Role::kMaster; }));
  const uint64_t g = a.sink.get(3).gen;
  // Someone else holds it now (written behind a's back), with a newer generation.
  test::redis_call(redis_.port(), {"SET", "sdnator:cluster:t:master:0000000000000003",
                                   "other " + std::to_string(g + 5), "PX", "5000"});
  a.c->mastership_refused(3, g + 5);
  ASSERT_TRUE(test::eventually([&] {
    auto e = a.sink.get(3);
    return e.role == Role::kSlave && e.gen == g + 5;
  }));
  EXPECT_TRUE(a.c->masters().empty());
  EXPECT_GE(a.c->counters().leases_lost, 1u);
}

TEST_F(ClusterTest, ExactlyOneLeaderAndFencedWrites) {
  struct Log {
    std::mutex mu;
    std::vector<std::pair<std::string, uint64_t>> gained;
    std::atomic<int> lost{0};
  };
  // Shared with the callbacks: the instances outlive this body (they stop in the fixture).
  auto shared_log = std::make_shared<Log>();
  Log& log = *shared_log;
  for (const char* id : {"a", "b", "c"}) {
    auto& n = add(id);
    std::string who = id;
    n.c->lead("rotation", LeaderEvents{[shared_log, who](uint64_t g) {
                                         std::lock_guard l(shared_log->mu);
                                         shared_log->gained.emplace_back(who, g);
                                       },
                                       [shared_log] { ++shared_log->lost; }});
  }
  auto leaders = [&] {
    int n = 0;
    for (auto& x : nodes_)
      if (x->c && x->c->is_leader("rotation")) ++n;
    return n;
  };
  ASSERT_TRUE(test::eventually([&] { return leaders() == 1; }));
  std::size_t first = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->c->is_leader("rotation")) first = i;
  auto& L = *nodes_[first]->c;
  EXPECT_TRUE(L.fenced_set("rotation", "cpam/epoch", "1"));
  EXPECT_EQ(L.get("cpam/epoch"), "1");
  // A non-leader's fenced write is refused.
  auto& other = *nodes_[(first + 1) % 3]->c;
  EXPECT_FALSE(other.fenced_set("rotation", "cpam/epoch", "x"));

  // Freeze the leader: it still believes it leads, but once deposed its writes are refused.
  std::atomic<bool> watching{true};
  std::atomic<int> max_seen{0};
  std::thread watcher([&] {
    while (watching) {
      int n = 0;
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (i != first && nodes_[i]->c->is_leader("rotation")) ++n;
      if (n > max_seen) max_seen = n;
      std::this_thread::sleep_for(milliseconds(1));
    }
  });
  L.freeze_for_test(true);
  std::size_t next = first;
  ASSERT_TRUE(test::eventually([&] {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (i != first && nodes_[i]->c->is_leader("rotation")) {
        next = i;
        return true;
      }
    return false;
  }));
  EXPECT_TRUE(L.is_leader("rotation"));  // frozen: has not noticed
  EXPECT_FALSE(L.fenced_set("rotation", "cpam/epoch", "stale"));
  EXPECT_GE(L.counters().fenced_writes_refused, 1u);
  EXPECT_TRUE(nodes_[next]->c->fenced_set("rotation", "cpam/epoch", "2"));
  EXPECT_EQ(L.get("cpam/epoch"), "2");
  L.freeze_for_test(false);
  ASSERT_TRUE(test::eventually([&] { return !L.is_leader("rotation"); }));
  EXPECT_EQ(L.counters().self_demotions, 1u);
  EXPECT_EQ(leaders(), 1);
  watching = false;
  watcher.join();
  EXPECT_EQ(max_seen.load(), 1);  // never two leaders among the live ones
  // is_leader turns false before `lost` runs (the app must not act after it), so wait for it.
  EXPECT_TRUE(test::eventually([&] { return log.lost.load() >= 1; }));
  std::lock_guard l(log.mu);
  ASSERT_GE(log.gained.size(), 2u);
  for (std::size_t i = 1; i < log.gained.size(); ++i) EXPECT_GT(log.gained[i].second, log.gained[i - 1].second);
}

TEST_F(ClusterTest, GetSetWithTtl) {
  auto& a = add("a");
  EXPECT_FALSE(a.c->get("nothing"));
  EXPECT_TRUE(a.c->set("k", "v"));
  EXPECT_EQ(a.c->get("k"), "v");
  EXPECT_TRUE(a.c->set("short", "v", milliseconds(50)));
  EXPECT_TRUE(test::eventually([&] { return !a.c->get("short"); }));
  auto r = test::redis_call(redis_.port(), {"GET", "sdnator:cluster:t:k"});
  ASSERT_TRUE(r && r->type == REDIS_REPLY_STRING);
}

TEST_F(ClusterTest, RedisDownAtStartIsNotAnErrorAndCounted) {
  redis_.stop(true);
  auto& a = add("a");  // start() succeeded (checked in add)
  EXPECT_FALSE(a.c->redis_connected());
  EXPECT_GE(a.c->counters().redis_errors, 1u);
  a.c->switch_connected(5);
  EXPECT_FALSE(a.c->get("k"));
  EXPECT_FALSE(a.c->set("k", "v"));
  ASSERT_TRUE(redis_.start()) << redis_.error();
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(5).role == Role::kMaster; }));
  EXPECT_TRUE(a.c->redis_connected());
  EXPECT_EQ(a.c->counters().reconnects, 0u);  // a first connection, not a re-connection
  EXPECT_EQ(a.c->state()["counters"]["redis_errors"].get<uint64_t>(), a.c->counters().redis_errors);
}

TEST_F(ClusterTest, RedisGoneMasterDemotesItselfAtItsDeadline) {
  auto& a = add("a");
  a.c->switch_connected(5);
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(5).role == Role::kMaster; }));
  const auto t0 = Clock::now();
  redis_.pause();  // a hung Redis: accepts bytes, never answers
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(5).role == Role::kSlave; }));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("self-demotion with Redis hung: %.0f ms after the hang (lease 600)\n", ms);
  EXPECT_LT(ms, 600.0 + 200.0 + 150.0);  // deadline + one blocked call (lease / 3) + slack
  EXPECT_EQ(a.c->counters().self_demotions, 1u);
  EXPECT_GE(a.c->counters().renew_failures, 1u);
  redis_.resume();
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(5).role == Role::kMaster; }));
  EXPECT_GE(a.c->counters().reconnects, 1u);
}

TEST_F(ClusterTest, AfterRedisComesBackEmptyTheSwitchesSpreadAgain) {
  // Redis restarted with nothing in it (no replica, no persistence): every lease, member and
  // generation is gone. Whoever reconnects first may take everything; balance spreads it again.
  add("a");
  add("b");
  add("c");
  connect_all(1, 6);
  auto spread = [&] {
    for (auto& n : nodes_)
      if (n->c->masters().size() != 2) return false;
    return one_master_each(1, 6);
  };
  ASSERT_TRUE(test::eventually(spread, milliseconds(8000)));
  redis_.stop(true);
  std::this_thread::sleep_for(milliseconds(1000));  // every master demotes itself at its deadline
  ASSERT_TRUE(redis_.start()) << redis_.error();
  const auto t0 = Clock::now();
  bool ok = test::eventually(spread, milliseconds(10000));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("after Redis came back empty: 6 switches at 2/2/2 again after %.0f ms\n", ms);
  for (auto& n : nodes_) std::printf("  %s masters %zu\n", n->c->instance_id().c_str(), n->c->masters().size());
  EXPECT_TRUE(ok);
}

TEST_F(ClusterTest, DisconnectedSwitchGoesToAnotherAtOnce) {
  auto& a = add("a", false);
  a.c->switch_connected(1);
  ASSERT_TRUE(test::eventually([&] { return a.sink.get(1).role == Role::kMaster; }));
  auto& b = add("b", false);
  b.c->switch_connected(1);
  ASSERT_TRUE(test::eventually([&] { return b.sink.get(1).role == Role::kSlave; }));
  const auto t0 = Clock::now();
  a.c->switch_disconnected(1);
  ASSERT_TRUE(test::eventually([&] { return b.sink.get(1).role == Role::kMaster; }));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 500.0);  // released, not expired
  EXPECT_TRUE(a.c->masters().empty());
}

}  // namespace
}  // namespace sdn::cluster
