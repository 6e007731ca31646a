// Redis Sentinel against real processes: the resolver asks the sentinels in turn and checks ROLE;
// when the master is killed, Sentinel promotes the replica and the Cluster (and the data layer's
// Redis backend) follow it, with fencing generations that never go back.
#include <gtest/gtest.h>

#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>

#include "cluster/cluster.hpp"
#include "data/sentinel.hpp"
#include "data/updates.hpp"
#include "fakes/eventually.hpp"
#include "fakes/sentinel.hpp"

namespace sdn::cluster {
namespace {

using southbound::Role;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class Sink : public southbound::RoleSink {
 public:
  void set_role(uint64_t dpid, Role role, uint64_t gen, bool) override {
    std::lock_guard l(mu_);
    cur_[dpid] = {role, gen};
    if (role == Role::kMaster) {
      auto& h = master_gens_[dpid];
      h.push_back(gen);
    }
  }
  std::pair<Role, uint64_t> get(uint64_t d) const {
    std::lock_guard l(mu_);
    auto it = cur_.find(d);
    return it == cur_.end() ? std::pair<Role, uint64_t>{Role::kEqual, 0} : it->second;
  }
  std::map<uint64_t, std::vector<uint64_t>> master_gens() const {
    std::lock_guard l(mu_);
    return master_gens_;
  }

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, std::pair<Role, uint64_t>> cur_;
  std::map<uint64_t, std::vector<uint64_t>> master_gens_;
};

std::string dead_address() { return "127.0.0.1:" + std::to_string(test::free_loopback_port()); }

TEST(Sentinel, ResolverAsksEachSentinelInTurnAndChecksRole) {
  test::SentinelSetup s;
  ASSERT_TRUE(s.start()) << s.error();
  const std::vector<std::string> list{dead_address(), s.sentinel(0).address()};
  auto a = data::sentinel_master_addr(list, s.name(), milliseconds(200));
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->master.port, s.master().port());
  EXPECT_EQ(a->sentinel_index, 1u);

  auto unknown = data::sentinel_master_addr(list, "no-such-master", milliseconds(200));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("no-such-master"), std::string::npos) << unknown.error();
  auto none = data::sentinel_master_addr({dead_address()}, s.name(), milliseconds(200));
  EXPECT_FALSE(none);

  data::RedisEndpoint ep;
  ep.sentinels = list;
  ep.sentinel_master = s.name();
  std::string err;
  data::HostPort where;
  redisContext* c = data::open_redis_master(ep, err, &where);
  ASSERT_NE(c, nullptr) << err;
  EXPECT_EQ(where.port, s.master().port());
  EXPECT_EQ(data::redis_role(c).value(), "master");
  redisFree(c);

  // ROLE tells a replica apart.
  redisContext* r = redisConnect("127.0.0.1", s.replica().port());
  ASSERT_TRUE(r != nullptr && r->err == 0);
  EXPECT_EQ(data::redis_role(r).value(), "slave");
  redisFree(r);
}

TEST(Sentinel, ClusterAndUpdatesFollowAFailover) {
  test::SentinelSetup s;
  ASSERT_TRUE(s.start()) << s.error();
  const std::vector<std::string> list{dead_address(), s.sentinel(0).address()};

  std::vector<std::unique_ptr<Sink>> sinks;
  std::vector<std::unique_ptr<Cluster>> cs;
  for (const char* id : {"a", "b"}) {
    ClusterConfig k;
    k.name = "sent";
    k.instance_id = id;
    k.redis = list;
    k.sentinel_master = s.name();
    sinks.push_back(std::make_unique<Sink>());
    cs.push_back(std::make_unique<Cluster>(k));
    cs.back()->attach(sinks.back().get());
    ASSERT_TRUE(cs.back()->start());
    EXPECT_TRUE(cs.back()->redis_connected());
    EXPECT_EQ(cs.back()->redis_address(), "127.0.0.1:" + std::to_string(s.master().port()));
    for (uint64_t d = 1; d <= 4; ++d) cs.back()->switch_connected(d);
  }
  auto masters_of = [&](uint64_t d, uint64_t* gen) {
    int n = 0;
    for (auto& sk : sinks)
      if (sk->get(d).first == Role::kMaster) {
        ++n;
        if (gen != nullptr) *gen = sk->get(d).second;
      }
    return n;
  };
  auto settled = [&] {
    for (uint64_t d = 1; d <= 4; ++d)
      if (masters_of(d, nullptr) != 1) return false;
    return true;
  };
  ASSERT_TRUE(test::eventually(settled, milliseconds(5000)));
  std::map<uint64_t, uint64_t> before;
  for (uint64_t d = 1; d <= 4; ++d) masters_of(d, &before[d]);

  // The data layer's Redis backend through Sentinel.
  data::RedisConfig rc;
  rc.sentinels = list;
  rc.sentinel_master = s.name();
  rc.reconnect_max = milliseconds(200);
  auto up = data::make_redis_updates(rc);
  ASSERT_TRUE(up) << up.error();
  auto& updates = **up;
  EXPECT_TRUE(updates.stats().connected);
  auto got = std::make_shared<std::atomic<int>>(0);
  auto key = data::Key::parse("cluster/failover@test");
  ASSERT_TRUE(key);
  auto sub = updates.subscribe(*key, [got](const data::RecordPtr&) { ++*got; });
  auto publish = [&](uint64_t seq) {
    auto r = std::make_shared<data::Record>();
    r->key = "cluster/failover@test";
    r->value = data::Value(nlohmann::json{{"seq", seq}});
    r->app_id = "test";
    r->instance = "t";
    r->seq = seq;
    updates.publish(r);
    updates.flush();
  };
  publish(1);
  ASSERT_TRUE(test::eventually([&] { return got->load() >= 1; }));

  const auto t0 = Clock::now();
  s.master().stop(/*kill_hard=*/true);
  const std::string new_master = "127.0.0.1:" + std::to_string(s.replica().port());
  ASSERT_TRUE(test::eventually([&] { return s.named_master_port() == s.replica().port(); },
                               milliseconds(20000)))
      << "Sentinel did not fail over (see " << s.dir() << ")";
  const double failover_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  ASSERT_TRUE(test::eventually([&] {
    for (auto& c : cs)
      if (!c->redis_connected() || c->redis_address() != new_master) return false;
    return settled();
  }, milliseconds(10000)));
  const double follow_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("sentinel: failover named the replica %.0f ms after SIGKILL of the master; both "
              "cluster instances on it with one master per switch at %.0f ms\n",
              failover_ms, follow_ms);
  for (auto& c : cs) {
    EXPECT_GE(c->counters().reconnects, 1u);
    EXPECT_GE(c->counters().sentinel_lookups, 2u);
  }
  // Generations never went back: per switch, over every MASTER any instance was told.
  std::map<uint64_t, uint64_t> after;
  for (uint64_t d = 1; d <= 4; ++d) {
    masters_of(d, &after[d]);
    EXPECT_GE(after[d], before[d]) << "switch " << d;
    std::printf("  switch %llu: generation %llu -> %llu\n", static_cast<unsigned long long>(d),
                static_cast<unsigned long long>(before[d]), static_cast<unsigned long long>(after[d]));
  }
  for (auto& sk : sinks)
    for (const auto& e : sk->master_gens())
      for (std::size_t i = 1; i < e.second.size(); ++i) EXPECT_GT(e.second[i], e.second[i - 1]);

  // Data Updates reconnected to the promoted replica too.
  ASSERT_TRUE(test::eventually([&] {
    publish(2);
    return got->load() >= 2;
  }, milliseconds(10000)));
  EXPECT_GE(updates.stats().reconnects, 1u);
  updates.unsubscribe(sub);
}

}  // namespace
}  // namespace sdn::cluster
