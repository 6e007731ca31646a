// Data Archives: the same query, batching, flush and retention suite on SQLite and PostgreSQL,
// plus each backend's own failure cases (bad path, unreachable server, killed connection,
// dropped table) and Query's JSON form.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "data/archive.hpp"

// Queries and options below are written with designated initializers naming only the fields a
// case sets; GCC's -Wextra would flag every omitted (defaulted) member.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace sdn::data {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // a fixed "now" for query tests

const char* pg_dsn() {
  const char* d = std::getenv("SDNATOR_PG_DSN");
  return (d && *d) ? d : nullptr;
}

bool services_required() {
  const char* r = std::getenv("SDNATOR_REQUIRE_SERVICES");
  return r && std::string(r) == "1";
}

// Runs SQL on the test's own PostgreSQL connection; returns the first cell, if any.
std::string pg_exec(const std::string& sql) {
  PGconn* c = PQconnectdb(pg_dsn());
  std::string out;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

std::string unique_suffix() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d_%d_%08x", static_cast<int>(::getpid()), counter++, rd());
  return buf;
}

std::string app_of(const std::string& key) {
  auto at = key.find('@');
  return at == std::string::npos ? "" : key.substr(at + 1);
}

RecordPtr rec(const std::string& key, int64_t ts, Value v = Value(Json(1)), std::string app = "",
              uint64_t seq = 1) {
  auto r = std::make_shared<Record>();
  r->key = key;
  r->value = std::move(v);
  r->app_id = app.empty() ? app_of(key) : std::move(app);
  r->instance = "inst-1";
  r->ts_ns = ts;
  r->seq = seq;
  return r;
}

std::vector<int64_t> ts_of(const std::vector<Record>& rs) {
  std::vector<int64_t> out;
  for (const auto& r : rs) out.push_back(r.ts_ns - kT0);
  return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v(static_cast<std::size_t>(to - from));
  std::iota(v.begin(), v.end(), from);
  return v;
}

struct Opts {
  std::size_t batch_size = 1000;
  std::chrono::milliseconds flush_interval{20};
  std::size_t max_queued = 1000000;
  Retention retention;
};

class ArchiveSuite : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (pg()) {
      if (!pg_dsn()) {
        if (services_required()) FAIL() << "SDNATOR_PG_DSN unset and SDNATOR_REQUIRE_SERVICES=1";
        GTEST_SKIP() << "SDNATOR_PG_DSN unset (run scripts/services.sh up)";
      }
      table_ = "archive_test_" + unique_suffix();
    } else {
      dir_ = std::filesystem::temp_directory_path() / ("sdnator-archive-" + unique_suffix());
      std::filesystem::create_directories(dir_);
    }
  }

  void TearDown() override {
    archives_.clear();
    if (!table_.empty()) pg_exec("DROP TABLE IF EXISTS \"" + table_ + "\"");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool pg() const { return GetParam() == "postgres"; }

  Archive& open(const Opts& o = {}) {
    Expected<std::unique_ptr<Archive>, std::string> a = unexpected(std::string("unset"));
    if (pg()) {
      PostgresConfig c;
      c.dsn = pg_dsn();
      c.table = table_;
      c.batch_size = o.batch_size;
      c.flush_interval = o.flush_interval;
      c.max_queued = o.max_queued;
      c.retention = o.retention;
      a = open_postgres_archive(c);
    } else {
      SqliteConfig c;
      c.path = (dir_ / "archive.db").string();
      c.batch_size = o.batch_size;
      c.flush_interval = o.flush_interval;
      c.max_queued = o.max_queued;
      c.retention = o.retention;
      a = open_sqlite_archive(c);
    }
    EXPECT_TRUE(a) << a.error();
    if (!a) std::abort();
    archives_.push_back(std::move(*a));
    return *archives_.back();
  }

  std::vector<Record> q(Archive& a, Query query) {
    auto r = a.query(query);
    EXPECT_TRUE(r) << r.error();
    return r ? std::move(*r) : std::vector<Record>{};
  }

  std::vector<Record> qk(Archive& a, const std::string& key) {
    Query query;
    query.key = key;
    return q(a, query);
  }

  std::string table_;
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<Archive>> archives_;
};

TEST_P(ArchiveSuite, ExactKeyAndAnyProducer) {
  auto& a = open();
  a.append(rec("a/b@x", kT0 + 1));
  a.append(rec("a/b@x", kT0 + 2));
  a.append(rec("a/b@y", kT0 + 3));
  a.append(rec("a/c@x", kT0 + 4));
  a.append(rec("a/b/c@x", kT0 + 5));
  a.append(rec("a/b@x", kT0 + 6));
  ASSERT_TRUE(a.flush(10s));
  EXPECT_EQ(ts_of(qk(a, "a/b@x")), (std::vector<int64_t>{1, 2, 6}));
  EXPECT_EQ(ts_of(qk(a, "a/b")), (std::vector<int64_t>{1, 2, 3, 6}));  // no app id: any producer
  EXPECT_TRUE(qk(a, "a/b@z").empty());
  EXPECT_EQ(ts_of(qk(a, "")), range(1, 7));
  auto bad = a.query(Query{.key = "a//b"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("key"), std::string::npos) << bad.error();
}

TEST_P(ArchiveSuite, Patterns) {
  auto& a = open();
  const std::vector<std::string> keys = {
      "net/s1/stats@st",        // 1
      "net/s2/stats@st",        // 2
      "net/s1/stats@other",     // 3
      "net/s1/port/1/stats@st", // 4
      "net/s1@st",              // 5
      "netx/s1/stats@st",       // 6
      "other/s1/stats@st",      // 7
      "net/s1/stats@st_",       // 8: '_' must not act as a LIKE wildcard anywhere
  };
  for (std::size_t i = 0; i < keys.size(); ++i) a.append(rec(keys[i], kT0 + 1 + static_cast<int64_t>(i)));
  ASSERT_TRUE(a.flush(10s));
  using V = std::vector<int64_t>;
  EXPECT_EQ(ts_of(qk(a, "net/*/stats")), (V{1, 2, 3, 8}));
  EXPECT_EQ(ts_of(qk(a, "net/*/stats@st")), (V{1, 2}));
  EXPECT_EQ(ts_of(qk(a, "net/*/stats@*")), (V{1, 2, 3, 8}));
  EXPECT_EQ(ts_of(qk(a, "net/**")), (V{1, 2, 3, 4, 5, 8}));
  EXPECT_EQ(ts_of(qk(a, "net/**@st")), (V{1, 2, 4, 5}));
  EXPECT_EQ(ts_of(qk(a, "*/s1/stats")), (V{1, 3, 6, 7, 8}));
  EXPECT_EQ(ts_of(qk(a, "*/s1/stats@st")), (V{1, 6, 7}));
  EXPECT_EQ(ts_of(qk(a, "net/s1/*/*/stats@st")), (V{4}));
  EXPECT_EQ(ts_of(qk(a, "**@other")), (V{3}));
  EXPECT_TRUE(qk(a, "nope/**").empty());
}

TEST_P(ArchiveSuite, TimeRange) {
  auto& a = open();
  for (int i = 0; i < 10; ++i) a.append(rec("t/k@x", kT0 + i));
  ASSERT_TRUE(a.flush(10s));
  EXPECT_EQ(ts_of(q(a, {.key = "t/k@x", .from_ns = kT0 + 3, .to_ns = kT0 + 7})), range(3, 7));
  EXPECT_EQ(ts_of(q(a, {.from_ns = kT0 + 8})), range(8, 10));
  EXPECT_EQ(ts_of(q(a, {.to_ns = kT0 + 2})), range(0, 2));
  EXPECT_TRUE(q(a, {.from_ns = kT0 + 5, .to_ns = kT0 + 5}).empty());
}

TEST_P(ArchiveSuite, AppIdFilter) {
  auto& a = open();
  a.append(rec("x/y@a", kT0 + 1, Json(1), "a"));
  a.append(rec("x/y@a", kT0 + 2, Json(1), "b"));  // written by another producer on a's channel
  a.append(rec("x/z@b", kT0 + 3, Json(1), "b"));
  a.append(rec("x/z@a", kT0 + 4, Json(1), "a"));
  ASSERT_TRUE(a.flush(10s));
  using V = std::vector<int64_t>;
  EXPECT_EQ(ts_of(q(a, {.app_id = "a"})), (V{1, 4}));
  EXPECT_EQ(ts_of(q(a, {.app_id = "b"})), (V{2, 3}));
  EXPECT_EQ(ts_of(q(a, {.key = "x/*", .app_id = "b"})), (V{2, 3}));
  EXPECT_EQ(ts_of(q(a, {.key = "x/y@a", .app_id = "b"})), (V{2}));
  EXPECT_TRUE(q(a, {.app_id = "c"}).empty());
}

TEST_P(ArchiveSuite, LatestAndLimit) {
  auto& a = open();
  for (int i = 0; i < 10; ++i) a.append(rec("l/k@x", kT0 + i));
  a.append(rec("l/other@x", kT0 + 100));
  ASSERT_TRUE(a.flush(10s));
  const std::string k = "l/k@x";
  using V = std::vector<int64_t>;
  EXPECT_EQ(ts_of(q(a, {.key = k, .latest = 3})), (V{7, 8, 9}));
  EXPECT_EQ(ts_of(q(a, {.key = k, .latest = 20})), range(0, 10));
  EXPECT_TRUE(q(a, {.key = k, .latest = 0}).empty());
  EXPECT_EQ(ts_of(q(a, {.key = k, .limit = 4})), range(0, 4));
  EXPECT_TRUE(q(a, {.key = k, .limit = 0}).empty());
  // limit applies after latest: the oldest `limit` of the newest `latest`.
  EXPECT_EQ(ts_of(q(a, {.key = k, .latest = 5, .limit = 2})), (V{5, 6}));
  EXPECT_EQ(ts_of(q(a, {.key = k, .latest = 2, .limit = 5})), (V{8, 9}));
  EXPECT_EQ(ts_of(q(a, {.key = k, .from_ns = kT0 + 2, .to_ns = kT0 + 6, .latest = 3})), (V{3, 4, 5}));
  EXPECT_EQ(ts_of(q(a, {.latest = 1})), (V{100}));
}

// A pattern is post-filtered with Key::matches after SQL narrowed it; latest/limit must still
// count only matching rows, across pages.
TEST_P(ArchiveSuite, PatternLatestAndLimitAcrossPages) {
  auto& a = open();
  for (int i = 0; i < 6000; ++i) {
    // Same prefix, so SQL cannot tell them apart: only every 100th has two segments after "p/".
    const std::string key = i % 100 == 0 ? "p/" + std::to_string(i) + "/hit@x" : "p/" + std::to_string(i) + "@x";
    a.append(rec(key, kT0 + i));
  }
  ASSERT_TRUE(a.flush(30s));
  using V = std::vector<int64_t>;
  EXPECT_EQ(ts_of(q(a, {.key = "p/*/hit"})).size(), 60u);
  EXPECT_EQ(ts_of(q(a, {.key = "p/*/hit", .latest = 3})), (V{5700, 5800, 5900}));
  EXPECT_EQ(ts_of(q(a, {.key = "p/*/hit", .limit = 3})), (V{0, 100, 200}));
  EXPECT_EQ(ts_of(q(a, {.key = "p/*/hit", .latest = 4, .limit = 2})), (V{5600, 5700}));
  EXPECT_EQ(ts_of(q(a, {.key = "p/*/hit", .from_ns = kT0 + 1000, .latest = 100})).size(), 50u);
  EXPECT_EQ(q(a, {.key = "p/*"}).size(), 5940u);
  EXPECT_EQ(ts_of(q(a, {.key = "p/*", .latest = 2})), (V{5998, 5999}));
  // Many rows, exact key, no filter needed: latest + limit deep in the table.
  EXPECT_EQ(ts_of(q(a, {.latest = 3000, .limit = 2})), (V{3000, 3001}));
}

TEST_P(ArchiveSuite, TimestampOrderWhateverTheWriteOrder) {
  auto& a = open({.batch_size = 7});
  std::vector<int64_t> ts = range(0, 200);
  std::mt19937 rng(42);
  std::shuffle(ts.begin(), ts.end(), rng);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    a.append(rec("o/k@x", kT0 + ts[i], Json(ts[i])));
    if (i % 50 == 49) {
      ASSERT_TRUE(a.flush(10s));  // land in separate batches and transactions
    }
  }
  ASSERT_TRUE(a.flush(10s));
  EXPECT_GE(a.stats().batches, 200u / 7);
  auto all = qk(a, "o/k@x");
  EXPECT_EQ(ts_of(all), range(0, 200));
  for (const auto& r : all) EXPECT_EQ(r.value.json().get<int64_t>(), r.ts_ns - kT0);
  EXPECT_EQ(ts_of(q(a, {.key = "o/k@x", .latest = 3})), (std::vector<int64_t>{197, 198, 199}));
  // Equal timestamps keep the order they were written in.
  for (uint64_t s = 1; s <= 5; ++s) a.append(rec("o/same@x", kT0 + 7, Json(s), "", s));
  ASSERT_TRUE(a.flush(10s));
  auto same = qk(a, "o/same@x");
  ASSERT_EQ(same.size(), 5u);
  for (uint64_t s = 0; s < 5; ++s) EXPECT_EQ(same[s].seq, s + 1);
}

TEST_P(ArchiveSuite, ValuesRoundTripExactly) {
  auto& a = open();
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  std::string big(65536, '\0');
  std::mt19937 rng(7);
  for (auto& ch : big) ch = static_cast<char>(rng());
  const std::vector<Value> values = {
      Value(Json()),
      Value(Json(true)),
      Value(Json(0)),
      Value(Json(-1)),
      Value(Json(std::numeric_limits<int64_t>::min())),
      Value(Json(std::numeric_limits<uint64_t>::max())),
      Value(Json(1.5)),
      Value(Json(0.1)),
      Value(Json(2.0)),
      Value(Json(1e300)),
      Value(Json(-2.5e-300)),
      Value(Json("")),
      Value(Json("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x8e\x89")),
      Value(Json("tab\t \"quote\" back\\slash\nnewline")),
      Value(Json(std::string("nul\0inside", 10))),
      Value(Json::parse(R"({"a": [1, 2, {"b": null}], "c": {"d": "e"}, "": 0})")),
      Value(Json::object()),
      Value(Json::array()),
      Value(Bytes{""}),
      Value(Bytes{all_bytes}),
      Value(Bytes{std::string("\0\0\0", 3)}),
      Value(Bytes{"{\"looks\": \"like json\"}"}),
      Value(Bytes{big}),
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto r = std::make_shared<Record>();
    r->key = "v/" + std::to_string(i) + "@prod";
    r->value = values[i];
    r->app_id = "prod";
    r->instance = "5d0c-uuid-" + std::to_string(i);
    r->ts_ns = kT0 + static_cast<int64_t>(i);
    r->seq = i == 3 ? std::numeric_limits<uint64_t>::max() : i + 1;
    a.append(r);
  }
  ASSERT_TRUE(a.flush(10s));
  auto got = qk(a, "v/*@prod");
  ASSERT_EQ(got.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "value " << i);
    EXPECT_EQ(got[i].key, "v/" + std::to_string(i) + "@prod");
    EXPECT_EQ(got[i].app_id, "prod");
    EXPECT_EQ(got[i].instance, "5d0c-uuid-" + std::to_string(i));
    EXPECT_EQ(got[i].ts_ns, kT0 + static_cast<int64_t>(i));
    EXPECT_EQ(got[i].seq, i == 3 ? std::numeric_limits<uint64_t>::max() : i + 1);
    EXPECT_EQ(got[i].value.is_bytes(), values[i].is_bytes());
    EXPECT_TRUE(got[i].value == values[i])
        << (values[i].is_json() ? values[i].json().dump() : "bytes") << " came back as "
        << (got[i].value.is_json() ? got[i].value.json().dump() : "bytes");
  }
  EXPECT_EQ(a.stats().dropped, 0u);
}

TEST_P(ArchiveSuite, TwelveThousandRecordsInBatches) {
  auto& a = open({.batch_size = 1000});
  constexpr int kN = 12345;
  for (int i = 0; i < kN; ++i) {
    a.append(rec("bulk/k" + std::to_string(i % 50) + "@x", kT0 + i, Json{{"i", i}}));
  }
  ASSERT_TRUE(a.flush(60s));
  const auto s = a.stats();
  EXPECT_EQ(s.appended, static_cast<uint64_t>(kN));
  EXPECT_EQ(s.written, static_cast<uint64_t>(kN));
  EXPECT_GE(s.batches, 13u);
  EXPECT_LE(s.batches, static_cast<uint64_t>(kN));
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.failed_batches, 0u);
  auto all = qk(a, "");
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kN));
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(),
                             [](const Record& x, const Record& y) { return x.ts_ns < y.ts_ns; }));
  EXPECT_EQ(qk(a, "bulk/k7@x").size(), static_cast<std::size_t>(kN / 50 + (7 < kN % 50)));
  EXPECT_EQ(qk(a, "bulk/*").size(), static_cast<std::size_t>(kN));
}

TEST_P(ArchiveSuite, FlushAndKick) {
  auto& a = open({.batch_size = 1000, .flush_interval = 1h});
  EXPECT_TRUE(a.flush(1s));  // nothing appended: done at once
  for (int i = 0; i < 10; ++i) a.append(rec("f/k@x", kT0 + i));
  ASSERT_TRUE(a.flush(10s));
  auto s = a.stats();
  EXPECT_EQ(s.written, 10u);
  EXPECT_EQ(s.batches, 1u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(qk(a, "f/k@x").size(), 10u);

  for (int i = 10; i < 15; ++i) a.append(rec("f/k@x", kT0 + i));
  a.kick();  // the interval is an hour: only the kick makes the writer commit
  const auto deadline = Clock::now() + 10s;
  while (a.stats().written < 15 && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(a.stats().written, 15u);

  // A full batch goes without a kick.
  for (int i = 0; i < 1000; ++i) a.append(rec("f/full@x", kT0 + i));
  const auto deadline2 = Clock::now() + 10s;
  while (a.stats().written < 1015 && Clock::now() < deadline2) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(a.stats().written, 1015u);
}

TEST_P(ArchiveSuite, QueueCapDropsAndCounts) {
  auto& a = open({.batch_size = 1000, .flush_interval = 1h, .max_queued = 10});
  for (int i = 0; i < 25; ++i) a.append(rec("c/k@x", kT0 + i));
  auto s = a.stats();
  EXPECT_EQ(s.appended, 10u);
  EXPECT_EQ(s.dropped, 15u);
  EXPECT_EQ(s.queued, 10u);
  ASSERT_TRUE(a.flush(10s));
  EXPECT_EQ(a.stats().written, 10u);
  EXPECT_EQ(ts_of(qk(a, "c/k@x")), range(0, 10));
}

TEST_P(ArchiveSuite, RetentionByAge) {
  Retention ret;
  ret.max_age = 60s;
  ret.interval = 1h;  // only enforce_retention() runs it here
  auto& a = open({.retention = ret});
  const int64_t now = wall_ns();
  for (int i = 0; i < 5; ++i) a.append(rec("r/k@x", now - 7200'000'000'000 + i));
  for (int i = 0; i < 4; ++i) a.append(rec("r/k@x", now + i));
  ASSERT_TRUE(a.flush(10s));
  auto n = a.enforce_retention();
  ASSERT_TRUE(n) << n.error();
  EXPECT_EQ(*n, 5u);
  auto left = qk(a, "r/k@x");
  ASSERT_EQ(left.size(), 4u);
  EXPECT_EQ(left.front().ts_ns, now);
  EXPECT_EQ(a.stats().retention_deleted, 5u);
}

TEST_P(ArchiveSuite, RetentionByCount) {
  Retention ret;
  ret.max_per_key = 3;
  ret.interval = 1h;
  auto& a = open({.retention = ret});
  for (int i = 0; i < 10; ++i) a.append(rec("r/a@x", kT0 + i));
  for (int i = 0; i < 2; ++i) a.append(rec("r/b@x", kT0 + i));
  for (int i = 0; i < 4; ++i) a.append(rec("r/c@x", kT0 + 5));  // equal timestamps: by id
  ASSERT_TRUE(a.flush(10s));
  auto n = a.enforce_retention();
  ASSERT_TRUE(n) << n.error();
  EXPECT_EQ(*n, 8u);
  EXPECT_EQ(ts_of(qk(a, "r/a@x")), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(qk(a, "r/b@x").size(), 2u);
  EXPECT_EQ(qk(a, "r/c@x").size(), 3u);
  auto again = a.enforce_retention();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(a.stats().retention_deleted, 8u);
}

TEST_P(ArchiveSuite, RetentionByTheWriterThread) {
  Retention ret;
  ret.max_per_key = 2;
  ret.interval = 20ms;
  auto& a = open({.retention = ret});
  for (int i = 0; i < 10; ++i) a.append(rec("w/k@x", kT0 + i));
  ASSERT_TRUE(a.flush(10s));
  // The writer counts the deleted rows after its transaction commits: a reader can see them
  // gone a moment before the counter moves, so wait for both.
  const auto deadline = Clock::now() + 10s;
  while ((qk(a, "w/k@x").size() > 2 || a.stats().retention_deleted < 8) && Clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(ts_of(qk(a, "w/k@x")), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(a.stats().retention_deleted, 8u);
}

// append() only queues: 100k appends return long before the writer has committed them.
TEST_P(ArchiveSuite, AppendNeverBlocksOnTheDatabase) {
  auto& a = open({.batch_size = 1000});
  constexpr int kN = 100000;
  std::vector<RecordPtr> recs;
  recs.reserve(kN);
  for (int i = 0; i < kN; ++i) {
    recs.push_back(rec("speed/s" + std::to_string(i % 100) + "/stats@st", kT0 + i,
                       Json{{"rx", i}, {"tx", i * 2}}));
  }
  const auto t0 = Clock::now();
  for (auto& r : recs) a.append(std::move(r));
  const auto t1 = Clock::now();
  const auto after_append = a.stats();
  ASSERT_TRUE(a.flush(120s));
  const auto t2 = Clock::now();
  EXPECT_EQ(after_append.appended, static_cast<uint64_t>(kN));
  EXPECT_LT(after_append.written, static_cast<uint64_t>(kN));  // returned before the commits
  EXPECT_EQ(a.stats().written, static_cast<uint64_t>(kN));
  const double append_s = std::chrono::duration<double>(t1 - t0).count();
  const double total_s = std::chrono::duration<double>(t2 - t0).count();
  std::printf("[ figures  ] %s: %d appends in %.3f s; all committed after %.3f s = %.0f records/s "
              "(batch 1000, %llu batches)\n",
              GetParam().c_str(), kN, append_s, total_s, kN / total_s,
              static_cast<unsigned long long>(a.stats().batches));
  EXPECT_EQ(q(a, {.key = "speed/s42/stats@st", .latest = 1}).size(), 1u);
}

// Queries run on their own connection while the writer is busy.
TEST_P(ArchiveSuite, QueriesWhileWriting) {
  auto& a = open({.batch_size = 500});
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 20000; ++i) a.append(rec("cw/k" + std::to_string(i % 10) + "@x", kT0 + i));
    done = true;
  });
  std::size_t last = 0;
  int queries = 0;
  while (!done || queries < 5) {
    auto r = a.query(Query{.key = "cw/*@x", .latest = 10});
    ASSERT_TRUE(r) << r.error();
    EXPECT_LE(r->size(), 10u);
    auto all = a.query(Query{.key = "cw/k3@x"});
    ASSERT_TRUE(all) << all.error();
    EXPECT_GE(all->size(), last);  // never goes backwards
    last = all->size();
    ++queries;
  }
  writer.join();
  ASSERT_TRUE(a.flush(30s));
  EXPECT_EQ(qk(a, "cw/k3@x").size(), 2000u);
}

INSTANTIATE_TEST_SUITE_P(Backends, ArchiveSuite, ::testing::Values("sqlite", "postgres"),
                         [](const auto& param_info) { return param_info.param; });

// ---------------------------------------------------------------------------------------------
// Query JSON

TEST(ArchiveQuery, JsonRoundTrip) {
  Query q{.key = "network/*/stats@stats", .from_ns = 1, .to_ns = 2, .app_id = "x", .latest = 5,
          .limit = 10};
  auto j = q.to_json();
  EXPECT_EQ(j, Json::parse(R"({"key": "network/*/stats@stats", "from_ns": 1, "to_ns": 2,
                               "app_id": "x", "latest": 5, "limit": 10})"));
  auto back = Query::from_json(j);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->to_json(), j);
  auto empty = Query::from_json(Json::object());
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->key, "");
  EXPECT_FALSE(empty->limit);
  EXPECT_EQ(Query{}.to_json(), Json::object());
  auto nulls = Query::from_json(Json::parse(R"({"to_ns": null, "app_id": null})"));
  ASSERT_TRUE(nulls);
  EXPECT_FALSE(nulls->to_ns);
  auto negative_ts = Query::from_json(Json::parse(R"({"from_ns": -5})"));
  ASSERT_TRUE(negative_ts);
  EXPECT_EQ(*negative_ts->from_ns, -5);
}

TEST(ArchiveQuery, JsonErrorsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"key": 5})", "'key'"},
      {R"({"key": "a//b"})", "'key'"},
      {R"({"key": "a/**/b"})", "'key'"},
      {R"({"from_ns": "1"})", "'from_ns'"},
      {R"({"to_ns": 1.5})", "'to_ns'"},
      {R"({"from_ns": 18446744073709551615})", "'from_ns'"},
      {R"({"app_id": ["a"]})", "'app_id'"},
      {R"({"latest": -1})", "'latest'"},
      {R"({"limit": 2.0})", "'limit'"},
      {R"({"limit": true})", "'limit'"},
      {R"({"bogus": 1})", "'bogus'"},
      {R"([1, 2])", "object"},
  };
  for (const auto& [text, want] : cases) {
    auto r = Query::from_json(Json::parse(text));
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().find(want), std::string::npos) << text << " -> " << r.error();
  }
}

// ---------------------------------------------------------------------------------------------
// SQLite specifics

TEST(SqliteArchive, MemoryPathRefused) {
  SqliteConfig c;
  c.path = ":memory:";
  auto a = open_sqlite_archive(c);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().find(":memory:"), std::string::npos) << a.error();
  EXPECT_EQ(a.error().rfind("sqlite:", 0), 0u) << a.error();
}

TEST(SqliteArchive, BadPathNamesThePath) {
  SqliteConfig c;
  c.path = "/nonexistent-sdnator-dir/sub/archive.db";
  auto a = open_sqlite_archive(c);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().find("sqlite: cannot open /nonexistent-sdnator-dir/sub/archive.db"),
            std::string::npos)
      << a.error();

  // A file that is not a database.
  auto dir = std::filesystem::temp_directory_path() / ("sdnator-archive-bad-" + unique_suffix());
  std::filesystem::create_directories(dir);
  const auto junk = (dir / "junk.db").string();
  {
    FILE* f = std::fopen(junk.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::string text(4096, 'x');
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  c.path = junk;
  auto b = open_sqlite_archive(c);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().find("sqlite: cannot open " + junk), std::string::npos) << b.error();
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL specifics

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

TEST(PostgresArchive, UnreachableAtStartIsAClearErrorAndSqliteStillWorks) {
  const int port = free_port();
  PostgresConfig pc;
  pc.dsn = "host=127.0.0.1 port=" + std::to_string(port) + " dbname=sdnator user=sdnator";
  pc.connect_timeout = 2000ms;
  const auto t0 = Clock::now();
  auto p = open_postgres_archive(pc);
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("postgres: cannot connect (host=127.0.0.1 port=" + std::to_string(port) + "): "),
            std::string::npos)
      << p.error();
  EXPECT_LT(took, 2000ms + 1000ms);

  auto dir = std::filesystem::temp_directory_path() / ("sdnator-archive-" + unique_suffix());
  std::filesystem::create_directories(dir);
  {
    SqliteConfig sc;
    sc.path = (dir / "a.db").string();
    auto s = open_sqlite_archive(sc);
    ASSERT_TRUE(s) << s.error();
    (*s)->append(rec("still/works@x", kT0));
    ASSERT_TRUE((*s)->flush(10s));
    auto got = (*s)->query(Query{.key = "still/works@x"});
    ASSERT_TRUE(got) << got.error();
    EXPECT_EQ(got->size(), 1u);
  }
  std::filesystem::remove_all(dir);
}

// A server that accepts TCP but never answers: the connect gives up at connect_timeout.
TEST(PostgresArchive, SilentServerTimesOut) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  PostgresConfig pc;
  pc.dsn = "host=127.0.0.1 port=" + std::to_string(ntohs(sa.sin_port)) + " dbname=x user=x sslmode=disable";
  pc.connect_timeout = 300ms;
  const auto t0 = Clock::now();
  auto p = open_postgres_archive(pc);
  const auto took = Clock::now() - t0;
  ::close(fd);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("timed out after 300 ms"), std::string::npos) << p.error();
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2000ms);
}

TEST(PostgresArchive, BadTableNameRefused) {
  PostgresConfig pc;
  pc.dsn = "host=127.0.0.1 port=1";
  pc.table = "x; DROP TABLE y";
  auto p = open_postgres_archive(pc);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("bad table name"), std::string::npos) << p.error();
}

class PostgresLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pg_dsn()) {
      if (services_required()) FAIL() << "SDNATOR_PG_DSN unset and SDNATOR_REQUIRE_SERVICES=1";
      GTEST_SKIP() << "SDNATOR_PG_DSN unset (run scripts/services.sh up)";
    }
    table_ = "archive_live_" + unique_suffix();
    PostgresConfig pc;
    pc.dsn = pg_dsn();
    pc.table = table_;
    pc.flush_interval = 10ms;
    pc.reconnect_max = 200ms;
    auto a = open_postgres_archive(pc);
    ASSERT_TRUE(a) << a.error();
    archive_ = std::move(*a);
  }
  void TearDown() override {
    archive_.reset();
    if (!table_.empty()) pg_exec("DROP TABLE IF EXISTS \"" + table_ + "\"");
  }
  std::size_t count(const std::string& key) {
    auto r = archive_->query(Query{.key = key});
    EXPECT_TRUE(r) << r.error();
    return r ? r->size() : 0;
  }
  std::string table_;
  std::unique_ptr<Archive> archive_;
};

// The writer's connection is killed under it: the batch fails, is kept, and goes in after the
// reconnect; the query connection recovers the same way.
TEST_F(PostgresLive, WriterReconnectsAndRetries) {
  for (int i = 0; i < 100; ++i) archive_->append(rec("k/a@x", kT0 + i));
  ASSERT_TRUE(archive_->flush(10s));
  const std::string killed = pg_exec(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
      "'sdnator:" + table_ + ":w'");
  EXPECT_EQ(killed, "1");
  for (int i = 100; i < 200; ++i) archive_->append(rec("k/a@x", kT0 + i));
  ASSERT_TRUE(archive_->flush(20s));
  const auto s = archive_->stats();
  EXPECT_GE(s.failed_batches, 1u);
  EXPECT_FALSE(s.last_error.empty());
  EXPECT_TRUE(s.connected);
  EXPECT_EQ(s.written, 200u);
  EXPECT_EQ(count("k/a@x"), 200u);

  pg_exec("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
          "'sdnator:" + table_ + ":q'");
  EXPECT_EQ(count("k/a@x"), 200u);
}

// Someone drops the table: the writer puts the schema back and the batch still goes in.
TEST_F(PostgresLive, DroppedTableIsRecreated) {
  archive_->append(rec("d/a@x", kT0));
  ASSERT_TRUE(archive_->flush(10s));
  pg_exec("DROP TABLE \"" + table_ + "\"");
  for (int i = 1; i <= 10; ++i) archive_->append(rec("d/a@x", kT0 + i));
  ASSERT_TRUE(archive_->flush(20s));
  EXPECT_GE(archive_->stats().failed_batches, 1u);
  EXPECT_EQ(count("d/a@x"), 10u);
}

// A record the server refuses (text with a NUL byte in a JSON key would be fine; a key with
// invalid UTF-8 is scrubbed) never blocks the batch it is in.
TEST_F(PostgresLive, OddTextDoesNotPoisonABatch) {
  archive_->append(rec("u/a@x", kT0));
  auto odd = std::make_shared<Record>(*rec("u/a@x", kT0 + 1));
  odd->instance = std::string("bad\xff\0utf8", 9);
  archive_->append(odd);
  archive_->append(rec("u/a@x", kT0 + 2));
  ASSERT_TRUE(archive_->flush(10s));
  EXPECT_EQ(count("u/a@x"), 3u);
  EXPECT_EQ(archive_->stats().failed_batches, 0u);
}

}  // namespace
}  // namespace sdn::data
