// core: config parsing and validation, metrics, rate limiter, shards and timers.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <asio/steady_timer.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/log.hpp"
#include "core/metrics.hpp"
#include "core/shard.hpp"

namespace sdn::core {
namespace {

using namespace std::chrono_literals;

TEST(Config, TypedGettersWithDefaults) {
  auto c = Config::parse(R"(
[controller]
listen = "127.0.0.1:7000"
shards = 3
verbose = true
ratio = 0.5
apps = ["forwarding", "stats"]
)");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->get_string("controller", "listen", "x"), "127.0.0.1:7000");
  EXPECT_EQ(c->get_int("controller", "shards", 0), 3);
  EXPECT_TRUE(c->get_bool("controller", "verbose", false));
  EXPECT_DOUBLE_EQ(c->get_double("controller", "ratio", 0), 0.5);
  EXPECT_EQ(c->get_string_list("controller", "apps", {}), (std::vector<std::string>{"forwarding", "stats"}));
  EXPECT_EQ(c->get_int("controller", "absent", 42), 42);
  EXPECT_EQ(c->get_int("nosection", "absent", 7), 7);
  EXPECT_TRUE(c->finish().empty());
}

TEST(Config, UnknownKeysAndSectionsAreReported) {
  auto c = Config::parse("[controller]\nshards = 1\nshardz = 2\n[typo]\nx = 1\n");
  ASSERT_TRUE(c);
  (void)c->get_int("controller", "shards", 0);
  auto problems = c->finish();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("controller.shardz"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("[typo]"), std::string::npos) << problems[1];
}

TEST(Config, WrongTypesAndRangesAreReported) {
  auto c = Config::parse("[s]\nport = \"six\"\nn = 99999\nflag = 1\nlist = [1, 2]\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get_int("s", "port", 5), 5);
  EXPECT_EQ(c->get_int("s", "n", 5, 0, 100), 5);
  EXPECT_FALSE(c->get_bool("s", "flag", false));
  EXPECT_TRUE(c->get_string_list("s", "list", {}).empty());
  auto problems = c->finish();
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_NE(problems[0].find("s.port: expected an integer"), std::string::npos);
  EXPECT_NE(problems[1].find("out of range"), std::string::npos);
}

TEST(Config, SyntaxErrorNamesLine) {
  auto c = Config::parse("[a]\nb = = 3\n", "test.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("test.toml:2"), std::string::npos) << c.error();
}

TEST(Config, MissingFileIsAnError) {
  auto c = Config::load_file("/nonexistent/sdnator.toml");
  EXPECT_FALSE(c);
}

// The stats of several instances of one app: counters add up, nested objects (CPAM's "cluster")
// merge the same way, text takes the newer value; nothing throws whatever the shapes.
TEST(Metrics, SumJsonAddsCountersMergesObjectsAndNeverThrows) {
  nlohmann::json sum;
  sum_json(sum, {{"packet_ins", 3}, {"max_ms", 1.5}, {"cluster", {{"leading", 1}, {"instance", "i1"}}}});
  sum_json(sum, {{"packet_ins", 4}, {"max_ms", 2}, {"cluster", {{"leading", 0}, {"instance", "i1"}}}, {"new", 1}});
  EXPECT_EQ(sum["packet_ins"], 7u);
  EXPECT_TRUE(sum["packet_ins"].is_number_unsigned());
  EXPECT_DOUBLE_EQ(sum["max_ms"].get<double>(), 3.5);
  EXPECT_EQ(sum["cluster"]["leading"], 1u);
  EXPECT_EQ(sum["cluster"]["instance"], "i1");
  EXPECT_EQ(sum["new"], 1u);
  // Mismatched shapes: the newer value wins, and a part that is no object adds nothing.
  sum_json(sum, {{"cluster", 5}, {"packet_ins", {{"x", 1}}}, {"neg", -2}});
  EXPECT_EQ(sum["cluster"], 5u);
  EXPECT_EQ(sum["packet_ins"]["x"], 1u);
  sum_json(sum, {{"neg", 1}});
  EXPECT_DOUBLE_EQ(sum["neg"].get<double>(), -1.0);
  sum_json(sum, nlohmann::json::array({1, 2}));
  EXPECT_EQ(sum["new"], 1u);
}

TEST(Metrics, CountersGaugesAndJson) {
  Metrics m;
  auto& c = m.counter("a.b");
  c.inc();
  c.inc(4);
  EXPECT_EQ(&c, &m.counter("a.b"));
  m.gauge("g").set(-3);
  EXPECT_EQ(m.counter_value("a.b"), 5u);
  EXPECT_EQ(m.counter_value("missing"), 0u);
  auto j = m.to_json();
  EXPECT_EQ(j["counters"]["a.b"], 5);
  EXPECT_EQ(j["gauges"]["g"], -3);
}

TEST(Histogram, BucketsCoverEveryValueMonotonically) {
  int prev = -1;
  for (uint64_t v : {0ull, 1ull, 15ull, 16ull, 17ull, 31ull, 32ull, 1000ull, 123456789ull, ~0ull >> 1}) {
    int b = Histogram::bucket_of(v);
    EXPECT_GE(b, prev);
    EXPECT_LT(b, Histogram::kBuckets);
    EXPECT_GE(Histogram::upper_edge(b), v) << v;
    if (b > 0) {
      EXPECT_LT(Histogram::upper_edge(b - 1), v) << v;
    }
    prev = b;
  }
}

TEST(Histogram, QuantilesWithinSixPercent) {
  Histogram h;
  for (uint64_t i = 1; i <= 10000; ++i) h.record(i * 1000);  // 1 us .. 10 ms
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_EQ(h.max(), 10'000'000u);
  EXPECT_NEAR(static_cast<double>(h.quantile(0.5)), 5'000'000.0, 5'000'000.0 * 0.07);
  EXPECT_NEAR(static_cast<double>(h.quantile(0.99)), 9'900'000.0, 9'900'000.0 * 0.07);
  EXPECT_EQ(h.quantile(1.0), 10'000'000u);
  EXPECT_NEAR(h.mean(), 5'000'500.0, 1.0);
  Histogram empty;
  EXPECT_EQ(empty.quantile(0.5), 0u);
}

TEST(RateLimiter, AllowsBurstThenSuppresses) {
  RateLimiter rl(3, 10s);
  EXPECT_TRUE(rl.allow());
  EXPECT_TRUE(rl.allow());
  EXPECT_TRUE(rl.allow());
  EXPECT_FALSE(rl.allow());
  EXPECT_EQ(rl.suppressed(), 1u);
}

TEST(Shard, PostRunsOnShardThreadInOrder) {
  ShardPool pool(2);
  pool.start();
  std::promise<std::vector<int>> p;
  auto f = p.get_future();
  auto order = std::make_shared<std::vector<int>>();
  Shard& s = pool.at(1);
  for (int i = 0; i < 5; ++i)
    s.post([order, i, &s] {
      EXPECT_TRUE(s.on_shard());
      EXPECT_EQ(Shard::current(), &s);
      order->push_back(i);
    });
  s.post([order, &p] { p.set_value(*order); });
  ASSERT_EQ(f.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(f.get(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(s.on_shard());
  EXPECT_EQ(Shard::current(), nullptr);
  pool.stop();
  pool.join();
}

// [controller] shard_nice: each shard's thread sets its own nice value; the thread that made
// the pool keeps its own. One above the current value, which needs no privilege.
TEST(Shard, NiceIsSetOnTheShardThreadsOnly) {
  errno = 0;
  const int mine = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  ASSERT_EQ(errno, 0);
  const int want = std::min(mine + 1, 19);
  ShardPool pool(2);
  pool.set_nice(want);
  pool.start();
  std::promise<int> p;
  auto f = p.get_future();
  pool.at(1).post([&p] { p.set_value(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()))); });
  ASSERT_EQ(f.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(f.get(), want);
  EXPECT_TRUE(pool.at(0).nice_applied());
  EXPECT_TRUE(pool.at(1).nice_applied());
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), mine);
  pool.stop();
  pool.join();
}

TEST(Shard, TimerFiresOnShard) {
  ShardPool pool(1);
  pool.start();
  std::promise<std::chrono::steady_clock::duration> p;
  auto start = std::chrono::steady_clock::now();
  asio::steady_timer t(pool.at(0).context(), 30ms);
  t.async_wait([&](const std::error_code& ec) {
    EXPECT_FALSE(ec);
    p.set_value(std::chrono::steady_clock::now() - start);
  });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(2s), std::future_status::ready);
  EXPECT_GE(f.get(), 30ms);
  pool.stop();
  pool.join();
}

TEST(ShardPool, RoundRobinAndDefaultSize) {
  ShardPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  EXPECT_EQ(pool.next().index(), 0u);
  EXPECT_EQ(pool.next().index(), 1u);
  EXPECT_EQ(pool.next().index(), 2u);
  EXPECT_EQ(pool.next().index(), 0u);
  ShardPool def(0);
  EXPECT_GE(def.size(), 1u);
}

}  // namespace
}  // namespace sdn::core
