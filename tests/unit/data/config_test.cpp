// [data], [redis], [sqlite], [postgres], [coordinator]: defaults, values, and problems reported by
// key (unknown backend names, ranges, a typo'd key).
#include <gtest/gtest.h>

#include "data/config.hpp"

namespace sdn::data {
namespace {

std::pair<DataConfig, std::vector<std::string>> read(std::string_view text) {
  auto c = core::Config::parse(text);
  EXPECT_TRUE(c) << (c ? "" : c.error());
  DataConfig d = data_config_from(*c);
  return {d, c->finish()};
}

TEST(DataConfig, DefaultsAreTheEmbeddedBackends) {
  auto [d, problems] = read("");
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(d.updates, "inproc");
  EXPECT_EQ(d.archive, "sqlite");
  EXPECT_TRUE(d.archive_fallback);
  EXPECT_EQ(d.redis.batch_size, 100u);
  EXPECT_EQ(d.sqlite.batch_size, 1000u);
  EXPECT_TRUE(d.coordinator.enabled);
  EXPECT_EQ(d.coordinator.missed_beats, 3);
}

TEST(DataConfig, ReadsEverySection) {
  auto [d, problems] = read(R"(
[data]
updates = "redis"
archive = "postgres"
heartbeat_ms = 250
[redis]
port = 7000
batch_size = 10
flush_interval_us = 50
max_tracked_keys = 5
[sqlite]
path = "/tmp/x.db"
retention_max_per_key = 7
[postgres]
dsn = "host=127.0.0.1"
table = "t1"
retention_max_age_s = 60
[coordinator]
missed_beats = 5
)");
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(d.updates, "redis");
  EXPECT_EQ(d.archive, "postgres");
  EXPECT_EQ(d.due.heartbeat_interval.count(), 250);
  EXPECT_EQ(d.redis.port, 7000);
  EXPECT_EQ(d.redis.batch_size, 10u);
  EXPECT_EQ(d.redis.flush_interval.count(), 50);
  EXPECT_EQ(d.redis.max_tracked_keys, 5u);
  EXPECT_EQ(d.sqlite.path, "/tmp/x.db");
  EXPECT_EQ(d.sqlite.retention.max_per_key, 7u);
  EXPECT_EQ(d.postgres.table, "t1");
  EXPECT_EQ(d.postgres.retention.max_age.count(), 60);
  EXPECT_EQ(d.coordinator.missed_beats, 5);
}

TEST(DataConfig, ProblemsNameTheKey) {
  auto [d, problems] = read(R"(
[data]
updates = "kafka"
archive = "postgres"
[redis]
port = 70000
batch_size = 0
reconnect_min_ms = 500
reconnect_max_ms = 100
[sqlite]
path = ":memory:"
[postgres]
table = "x; drop"
tpyo = 1
)");
  auto has = [&](std::string_view s) {
    for (auto& p : problems)
      if (p.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("data.updates: 'kafka'"));
  EXPECT_TRUE(has("redis.port"));
  EXPECT_TRUE(has("redis.batch_size"));
  EXPECT_TRUE(has("redis.reconnect_max_ms"));
  EXPECT_TRUE(has("sqlite.path"));
  EXPECT_TRUE(has("postgres.table"));
  EXPECT_TRUE(has("postgres.dsn: required"));
  EXPECT_TRUE(has("postgres.tpyo"));
}

}  // namespace
}  // namespace sdn::data
