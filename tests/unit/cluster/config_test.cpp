// [cluster] and [redis] sentinel keys: values read, every error names its key; placement spreads
// switches evenly and deterministically.
#include <gtest/gtest.h>

#include "cluster/cluster.hpp"
#include "cluster/placement.hpp"
#include "data/config.hpp"
#include "data/sentinel.hpp"

namespace sdn::cluster {
namespace {

std::vector<std::string> problems(const std::string& toml) {
  auto c = core::Config::parse(toml);
  EXPECT_TRUE(c) << (c ? "" : c.error());
  if (!c) return {"parse"};
  cluster_config_from(*c);
  return c->finish();
}

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

TEST(ClusterConfig, ReadsEveryKey) {
  auto c = core::Config::parse(R"(
[cluster]
enabled = true
name = "lab"
instance_id = "c1"
redis = ["10.0.0.1:26379", "10.0.0.2:26379"]
sentinel_master = "sdn"
user = "u"
password = "p"
lease_ms = 900
renew_interval_ms = 200
check_interval_ms = 50
claim_delay_ms = 300
balance = false
)");
  ASSERT_TRUE(c);
  auto k = cluster_config_from(*c);
  EXPECT_TRUE(c->finish().empty());
  EXPECT_TRUE(k.enabled);
  EXPECT_EQ(k.name, "lab");
  EXPECT_EQ(k.instance_id, "c1");
  EXPECT_EQ(k.redis.size(), 2u);
  EXPECT_EQ(k.sentinel_master, "sdn");
  EXPECT_EQ(k.user, "u");
  EXPECT_EQ(k.password, "p");
  EXPECT_EQ(k.lease.count(), 900);
  EXPECT_EQ(k.renew_interval.count(), 200);
  EXPECT_EQ(k.check_interval.count(), 50);
  EXPECT_EQ(k.claim_delay.count(), 300);
  EXPECT_FALSE(k.balance);
  EXPECT_TRUE(check_cluster_config(k));
}

TEST(ClusterConfig, DefaultsAreValid) {
  EXPECT_TRUE(problems("").empty());
  EXPECT_TRUE(check_cluster_config(ClusterConfig{}));
}

TEST(ClusterConfig, ErrorsNameTheKey) {
  auto p = problems("[cluster]\nlease_ms = 300\nrenew_interval_ms = 150\n");
  EXPECT_TRUE(any_contains(p, "cluster.lease_ms")) << ::testing::PrintToString(p);
  p = problems("[cluster]\nredis = [\"redis-without-port\"]\n");
  EXPECT_TRUE(any_contains(p, "cluster.redis")) << ::testing::PrintToString(p);
  p = problems("[cluster]\nredis = [\"h:99999\"]\n");
  EXPECT_TRUE(any_contains(p, "cluster.redis")) << ::testing::PrintToString(p);
  p = problems("[cluster]\nredis = []\n");
  EXPECT_TRUE(any_contains(p, "cluster.redis")) << ::testing::PrintToString(p);
  p = problems("[cluster]\ninstance_id = \"a b\"\n");
  EXPECT_TRUE(any_contains(p, "cluster.instance_id")) << ::testing::PrintToString(p);
  p = problems("[cluster]\nname = \"a:b\"\n");
  EXPECT_TRUE(any_contains(p, "cluster.name")) << ::testing::PrintToString(p);
  p = problems("[cluster]\ncheck_interval_ms = 700\n");
  EXPECT_TRUE(any_contains(p, "cluster.check_interval_ms")) << ::testing::PrintToString(p);
  p = problems("[cluster]\nlease_msec = 700\n");  // a typo is an unknown key
  EXPECT_TRUE(any_contains(p, "lease_msec")) << ::testing::PrintToString(p);

  ClusterConfig k;
  k.lease = std::chrono::milliseconds(200);
  auto r = check_cluster_config(k);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("cluster.lease_ms"), std::string::npos) << r.error();
}

TEST(ClusterConfig, BadConfigFailsStart) {
  ClusterConfig k;
  k.redis = {"nope"};
  Cluster c(k);
  auto r = c.start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("cluster.redis"), std::string::npos) << r.error();
}

TEST(RedisSentinelConfig, ReadAndChecked) {
  auto c = core::Config::parse(
      "[redis]\nsentinels = [\"127.0.0.1:26379\", \"[::1]:26380\"]\nsentinel_master = \"m\"\n");
  ASSERT_TRUE(c);
  auto d = data::data_config_from(*c);
  EXPECT_TRUE(c->finish().empty());
  EXPECT_EQ(d.redis.sentinels.size(), 2u);
  EXPECT_EQ(d.redis.sentinel_master, "m");

  auto bad = core::Config::parse("[redis]\nsentinels = [\"x\"]\nsentinel_master = \"m\"\n");
  ASSERT_TRUE(bad);
  data::data_config_from(*bad);
  EXPECT_TRUE(any_contains(bad->finish(), "redis.sentinels"));
  auto none = core::Config::parse("[redis]\nsentinel_master = \"m\"\n");
  ASSERT_TRUE(none);
  data::data_config_from(*none);
  EXPECT_TRUE(any_contains(none->finish(), "redis.sentinel_master"));
}

TEST(HostPort, Parses) {
  auto a = data::parse_host_port("127.0.0.1:6379");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 6379);
  auto b = data::parse_host_port("[::1]:1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_FALSE(data::parse_host_port("host"));
  EXPECT_FALSE(data::parse_host_port(":1"));
  EXPECT_FALSE(data::parse_host_port("h:"));
  EXPECT_FALSE(data::parse_host_port("h:0"));
  EXPECT_FALSE(data::parse_host_port("h:65536"));
  EXPECT_FALSE(data::parse_host_port("h:12x"));
}

TEST(Placement, BoundedRendezvousSpreadsEvenly) {
  const std::vector<std::string> m{"a", "b", "c"};
  std::map<uint64_t, std::vector<std::string>> cand;
  for (uint64_t d = 1; d <= 12; ++d) cand[d] = m;
  auto t = assign(cand);
  std::map<std::string, int> load;
  for (const auto& e : t) ++load[e.second];
  EXPECT_EQ(load["a"], 4);
  EXPECT_EQ(load["b"], 4);
  EXPECT_EQ(load["c"], 4);
  // The same answer whatever order the candidates come in.
  for (auto& e : cand) std::reverse(e.second.begin(), e.second.end());
  EXPECT_EQ(assign(cand), t);
  // 13 switches: 5/4/4 at most 5 each.
  cand[13] = m;
  load.clear();
  for (const auto& e : assign(cand)) ++load[e.second];
  for (const auto& e : load) EXPECT_LE(e.second, 5);
}

TEST(Placement, LoadsDifferByAtMostOneWhenEveryMemberCanTakeEverySwitch) {
  // Capped at ceil(n / m) alone, 4 switches over 3 members could come out 2/2/0.
  for (const std::vector<std::string>& m :
       {std::vector<std::string>{"a", "b", "c"}, std::vector<std::string>{"i1", "i2", "i3"},
        std::vector<std::string>{"a", "b", "c", "d", "e"}}) {
    for (uint64_t n = 1; n <= 40; ++n) {
      for (uint64_t first : {uint64_t{1}, uint64_t{100}}) {
        std::map<uint64_t, std::vector<std::string>> cand;
        for (uint64_t d = first; d < first + n; ++d) cand[d] = m;
        std::map<std::string, uint64_t> load;
        for (const auto& mm : m) load[mm] = 0;
        for (const auto& e : assign(cand)) ++load[e.second];
        uint64_t lo = n, hi = 0;
        for (const auto& e : load) {
          lo = std::min(lo, e.second);
          hi = std::max(hi, e.second);
        }
        EXPECT_LE(hi - lo, 1u) << n << " switches from " << first << " over " << m.size() << " members";
      }
    }
  }
}

TEST(Placement, OnlyCandidatesAndStableOwner) {
  std::map<uint64_t, std::vector<std::string>> cand{{1, {"b"}}, {2, {"a", "b"}}, {3, {}}};
  auto t = assign(cand);
  EXPECT_EQ(t[1], "b");
  EXPECT_EQ(t.count(3), 0u);
  // Rendezvous: removing a member only moves that member's switches.
  const std::vector<std::string> abc{"a", "b", "c"}, ab{"a", "b"};
  for (uint64_t d = 0; d < 200; ++d) {
    auto o = rendezvous_owner(d, abc);
    if (o != "c") {
      EXPECT_EQ(rendezvous_owner(d, ab), o);
    }
  }
}

}  // namespace
}  // namespace sdn::cluster
