// DUE on the embedded backends (in-process bus + a real SQLite archive in a temp dir): init
// validation, writes and subscriptions, PUB_ONLY and NO_WAIT, history queries, registration,
// heartbeats, goodbye, re-registration on a Coordinator hello, assignments and pacing.
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "data/due.hpp"
#include "fakes/eventually.hpp"

namespace sdn::data {
namespace {

using namespace std::chrono_literals;

using test::eventually;

class DueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sdnator-due-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    SqliteConfig sc;
    sc.path = (dir_ / "archive.db").string();
    sc.flush_interval = 5ms;
    auto a = open_sqlite_archive(sc);
    ASSERT_TRUE(a) << a.error();
    backends_ = std::make_shared<Backends>(make_inproc_updates(), std::move(*a));
  }
  void TearDown() override {
    backends_.reset();
    std::filesystem::remove_all(dir_);
  }
  DueConfig fast() {
    DueConfig c;
    c.heartbeat_interval = 20ms;
    return c;
  }
  std::filesystem::path dir_;
  std::shared_ptr<Backends> backends_;
};

TEST_F(DueTest, InitValidatesEverything) {
  Due d(backends_);
  auto e1 = d.init("bad app", kProducer);
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().find("bad app id"), std::string::npos);
  Due d2(backends_);
  auto e2 = d2.init("app", kConsumer, {{"net//x", std::nullopt}});
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().find("interest: bad key 'net//x': segment 2 is empty"), std::string::npos);
  Due d3(backends_);
  auto e3 = d3.init("app", kProducer, {}, {{"a/b@other", std::nullopt, false}});
  ASSERT_FALSE(e3);
  EXPECT_NE(e3.error().find("names app 'other'"), std::string::npos);
  Due d4(backends_);
  auto e4 = d4.init("app", kConsumer, {{"a/b", -1.0}});
  ASSERT_FALSE(e4);
  EXPECT_NE(e4.error().find("freq must be > 0"), std::string::npos);
  Due d5(backends_);
  ASSERT_TRUE(d5.init("app", kProducer));
  EXPECT_FALSE(d5.init("app", kProducer));
}

TEST_F(DueTest, WritesAreStampedDeliveredAndCheckedBeforeTheyLeave) {
  Due prod(backends_), cons(backends_);
  EXPECT_FALSE(prod.write("a/b", 1));  // before init
  ASSERT_TRUE(prod.init("sensor", kProducer));
  ASSERT_TRUE(cons.init("viewer", kConsumer));
  std::vector<RecordPtr> got;
  std::mutex mu;
  auto sub = cons.observe("fleet/*/temp", [&](const RecordPtr& r) {
    std::lock_guard lock(mu);
    got.push_back(r);
  });
  ASSERT_TRUE(sub);
  ASSERT_TRUE(prod.write("fleet/p1/temp", 20.5));
  ASSERT_TRUE(prod.write("fleet/p1/temp@sensor", Json{{"c", 21}}));
  ASSERT_TRUE(prod.write("fleet/p2/temp", Bytes{"\x01\x02"}));
  EXPECT_FALSE(prod.write("fleet/*/temp", 1));           // wildcard
  EXPECT_FALSE(prod.write("fleet/p1/temp@viewer", 1));   // someone else's app id
  EXPECT_FALSE(prod.write("fleet//temp", 1));            // malformed
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]->key, "fleet/p1/temp@sensor");
  EXPECT_EQ(got[0]->app_id, "sensor");
  EXPECT_EQ(got[0]->instance, prod.instance());
  EXPECT_EQ(got[0]->seq, 1u);
  EXPECT_EQ(got[1]->seq, 2u);  // per key: the second write to fleet/p1/temp
  EXPECT_EQ(got[2]->seq, 1u);  // first write to fleet/p2/temp
  EXPECT_EQ(got[1]->value.json()["c"], 21);
  EXPECT_TRUE(got[2]->value.is_bytes());
  EXPECT_GT(got[0]->ts_ns, 0);
  EXPECT_EQ(prod.stats().rejected, 4u);
  sub->cancel();
  ASSERT_TRUE(prod.write("fleet/p1/temp", 22));
  EXPECT_EQ(got.size(), 3u);
}

TEST_F(DueTest, ArchiveKeepsWhatIsNotPubOnlyAndAnswersQueries) {
  Due prod(backends_);
  ASSERT_TRUE(prod.init("stats", kProducer));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(prod.write("net/s1/port/" + std::to_string(i % 2) + "/rx", i));
  ASSERT_TRUE(prod.write("net/s1/port/0/rx", 99, kPubOnly));
  ASSERT_TRUE(prod.write("net/s1/port/0/rx", 100, kNoWait));
  ASSERT_TRUE(prod.sync(5s));
  auto all = prod.get("net/s1/port/*/rx");
  ASSERT_TRUE(all) << all.error();
  EXPECT_EQ(all->size(), 11u);
  for (const auto& r : *all) EXPECT_NE(r.value.json(), 99);
  for (std::size_t i = 1; i < all->size(); ++i) EXPECT_LE((*all)[i - 1].ts_ns, (*all)[i].ts_ns);
  Query q;
  q.key = "net/s1/port/0/rx@stats";
  q.latest = 2;
  auto latest = prod.get(q);
  ASSERT_TRUE(latest) << latest.error();
  ASSERT_EQ(latest->size(), 2u);
  EXPECT_EQ((*latest)[0].value.json(), 8);
  EXPECT_EQ((*latest)[1].value.json(), 100);
  EXPECT_EQ(prod.stats().archived, 11u + 1u);        // + the registration
  EXPECT_EQ(prod.stats().published, 12u + 1u + 1u);  // + the registration and first heartbeat
}

TEST_F(DueTest, GetWithoutArchivesIsAClearError) {
  auto b = std::make_shared<Backends>(make_inproc_updates(), nullptr);
  Due d(b);
  ASSERT_TRUE(d.init("x", kConsumer));
  auto r = d.get("a/b");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("Data Archives are off"), std::string::npos);
  ASSERT_TRUE(d.write("a/b", 1));  // writes still work, archive skipped
}

TEST_F(DueTest, RegistersHeartbeatsAndSaysGoodbye) {
  Due watcher(backends_);
  ASSERT_TRUE(watcher.init("watcher", kConsumer));
  std::mutex mu;
  std::vector<RecordPtr> seen;
  auto sub = watcher.observe("sdnator/apps/**", [&](const RecordPtr& r) {
    std::lock_guard lock(mu);
    seen.push_back(r);
  });
  ASSERT_TRUE(sub);
  auto count = [&](std::string_view leaf) {
    std::lock_guard lock(mu);
    int n = 0;
    for (auto& r : seen)
      if (r->app_id == "sensor" && r->key.find(std::string("/") + std::string(leaf) + "@") != std::string::npos) ++n;
    return n;
  };
  {
    Due app(backends_, fast());
    ASSERT_TRUE(app.init("sensor", kProducer | kConsumer, {{"fleet/**", 2.0}},
                         {{"fleet/*/temp", 10.0, true}}));
    ASSERT_TRUE(eventually([&] { return count("heartbeat") >= 3; }));
    EXPECT_EQ(count("register"), 1);
    std::lock_guard lock(mu);
    for (auto& r : seen) {
      if (r->key == keys::registration("sensor", app.instance())) {
        const Json& j = r->value.json();
        EXPECT_EQ(j["app_id"], "sensor");
        EXPECT_EQ(j["roles"], Json::array({"producer", "consumer"}));
        EXPECT_EQ(j["interests"][0]["key"], "fleet/**");
        EXPECT_EQ(j["interests"][0]["freq"], 2.0);
        EXPECT_EQ(j["capabilities"][0]["freq"], 10.0);
        EXPECT_EQ(j["capabilities"][0]["index"], true);
        EXPECT_EQ(j["heartbeat_ms"], 20);
      }
    }
  }
  EXPECT_EQ(count("goodbye"), 1);
  int beats = count("heartbeat");
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(count("heartbeat"), beats);  // no heartbeat after destruction
  // Heartbeats are PUB_ONLY; registrations are archived.
  ASSERT_TRUE(watcher.sync(5s));
  auto hb = watcher.get("sdnator/apps/sensor/*/heartbeat@sensor");
  ASSERT_TRUE(hb);
  EXPECT_TRUE(hb->empty());
  auto reg = watcher.get("sdnator/apps/sensor/*/register@sensor");
  ASSERT_TRUE(reg);
  EXPECT_EQ(reg->size(), 1u);
}

TEST_F(DueTest, CrashLeavesNoGoodbye) {
  Due watcher(backends_);
  ASSERT_TRUE(watcher.init("watcher", kConsumer));
  std::atomic<int> byes{0};
  auto sub = watcher.observe("sdnator/apps/*/*/goodbye", [&](const RecordPtr&) { ++byes; });
  {
    DueConfig c = fast();
    c.send_goodbye = false;
    Due app(backends_, c);
    ASSERT_TRUE(app.init("sensor", kProducer));
  }
  EXPECT_EQ(byes.load(), 0);
}

TEST_F(DueTest, ReRegistersWhenACoordinatorSaysHello) {
  Due coord(backends_), app(backends_, fast());
  ASSERT_TRUE(coord.init(std::string(keys::kCoordinatorId), kProducer | kConsumer));
  std::atomic<int> regs{0};
  auto sub = coord.observe("sdnator/apps/sensor/*/register", [&](const RecordPtr&) { ++regs; });
  ASSERT_TRUE(app.init("sensor", kProducer));
  EXPECT_EQ(regs.load(), 1);
  ASSERT_TRUE(coord.write("sdnator/coordinator/hello", Json{{"instance", coord.instance()}}));
  EXPECT_TRUE(eventually([&] { return regs.load() == 2; }));
}

// A hello makes the timer thread re-register the app; destroying the app while that registration
// is still being written must wait for it (the write touches the app's state after it publishes),
// and no later timer callback may reach the destroyed app.
TEST_F(DueTest, DestroyingADueWaitsForItsRunningTimerCallback) {
  Due coord(backends_);
  ASSERT_TRUE(coord.init(std::string(keys::kCoordinatorId), kProducer | kConsumer));
  auto app = std::make_unique<Due>(backends_, fast());
  std::atomic<int> regs{0};
  std::atomic<bool> in_flight{false}, finished{false};
  auto sub = coord.observe("sdnator/apps/sensor/*/register", [&](const RecordPtr&) {
    if (++regs < 2) return;
    in_flight = true;
    std::this_thread::sleep_for(100ms);
    finished = true;
  });
  ASSERT_TRUE(app->init("sensor", kProducer));
  ASSERT_TRUE(coord.write("sdnator/coordinator/hello", Json{{"instance", coord.instance()}}));
  ASSERT_TRUE(eventually([&] { return in_flight.load(); }));
  app.reset();
  EXPECT_TRUE(finished.load());
  // Heartbeats were due every 20 ms; none runs for the destroyed app.
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(regs.load(), 2);
}

class Assigned : public DueTest {
 protected:
  void assign(Due& coord, const Due& app, uint64_t epoch, Json items, bool active = true) {
    Json j{{"epoch", epoch}, {"active", active}, {"assignments", std::move(items)}};
    ASSERT_TRUE(coord.write(keys::assignment(app.app_id(), app.instance()), j, kNoWait));
  }
};

TEST_F(Assigned, AssignmentsAreAppliedInEpochOrder) {
  Due coord(backends_), app(backends_, fast());
  ASSERT_TRUE(coord.init(std::string(keys::kCoordinatorId), kProducer));
  ASSERT_TRUE(app.init("sensor", kProducer, {}, {{"fleet/*/temp", 50.0, false}}));
  std::atomic<int> callbacks{0};
  app.on_assignment([&](const AssignmentSet&) { ++callbacks; });
  EXPECT_FALSE(app.wanted("fleet/p1/temp"));
  assign(coord, app, 2,
         Json::array({Json{{"key", "fleet/*/temp@sensor"}, {"freq", 10.0}, {"consumers", {"twin"}}}}));
  EXPECT_TRUE(app.wanted("fleet/p1/temp"));
  EXPECT_FALSE(app.wanted("fleet/p1/humidity"));
  EXPECT_EQ(app.assigned_freq("fleet/p1/temp"), 10.0);
  EXPECT_TRUE(app.active());
  auto set = app.assignments();
  EXPECT_EQ(set.epoch, 2u);
  ASSERT_EQ(set.items.size(), 1u);
  EXPECT_EQ(set.items[0].consumers, std::vector<std::string>{"twin"});
  // An older epoch from the same Coordinator is ignored; a newer one applies.
  assign(coord, app, 1, Json::array());
  EXPECT_TRUE(app.wanted("fleet/p1/temp"));
  assign(coord, app, 3, Json::array(), /*active=*/false);
  EXPECT_FALSE(app.wanted("fleet/p1/temp"));
  EXPECT_FALSE(app.active());
  EXPECT_TRUE(eventually([&] { return callbacks.load() == 2; }));
  // Malformed assignments are ignored.
  ASSERT_TRUE(coord.write(keys::assignment(app.app_id(), app.instance()), Json{{"epoch", "x"}}));
  EXPECT_EQ(app.assignments().epoch, 3u);
}

TEST_F(Assigned, FrequencyBoundKeysArePacedLatestValueWins) {
  Due coord(backends_), app(backends_, fast()), cons(backends_);
  ASSERT_TRUE(coord.init(std::string(keys::kCoordinatorId), kProducer));
  ASSERT_TRUE(app.init("sensor", kProducer, {}, {{"fleet/*/temp", std::nullopt, false}}));
  ASSERT_TRUE(cons.init("twin", kConsumer));
  std::mutex mu;
  std::vector<RecordPtr> got;
  auto sub = cons.observe("fleet/**", [&](const RecordPtr& r) {
    std::lock_guard lock(mu);
    got.push_back(r);
  });
  assign(coord, app, 1, Json::array({Json{{"key", "fleet/*/temp@sensor"}, {"freq", 10.0}}}));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(app.write("fleet/p1/temp", i));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(app.write("fleet/p1/humidity", i));  // not bound
  auto burst = std::chrono::steady_clock::now() - t0;
  ASSERT_LT(burst, 100ms) << "the burst itself must not block on pacing";
  // The first temp goes out at once, the last one at the next 100 ms slot, nothing in between.
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return !got.empty() && got.back()->key == "fleet/p1/temp@sensor" && got.back()->value.json() == 199;
  }));
  std::lock_guard lock(mu);
  std::vector<int> temps;
  int hum = 0;
  for (auto& r : got) {
    if (r->key == "fleet/p1/temp@sensor") temps.push_back(r->value.json().get<int>());
    else ++hum;
  }
  EXPECT_EQ(temps, (std::vector<int>{0, 199}));
  EXPECT_EQ(hum, 5);
  EXPECT_EQ(app.stats().paced_coalesced, 198u);
  // Sequence numbers stay gap-free for what was actually produced.
  EXPECT_EQ(got.back()->seq, 2u);
}

}  // namespace
}  // namespace sdn::data

namespace sdn::data {
namespace {

TEST(BackendsOpen, PostgresUnreachableFallsBackToSqliteWithANote) {
  auto dir = std::filesystem::temp_directory_path() / ("sdnator-fallback-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  DataConfig cfg;
  cfg.archive = "postgres";
  cfg.postgres.dsn = "host=127.0.0.1 port=1 dbname=nothing";  // nothing listens on port 1
  cfg.postgres.connect_timeout = std::chrono::milliseconds(500);
  cfg.sqlite.path = (dir / "fallback.db").string();
  {
    auto b = Backends::open(cfg);
    ASSERT_TRUE(b) << b.error();
    ASSERT_NE((*b)->archive(), nullptr);
    EXPECT_EQ((*b)->archive()->name(), "sqlite");
    ASSERT_EQ((*b)->notes().size(), 1u);
    EXPECT_NE((*b)->notes()[0].find("postgres"), std::string::npos) << (*b)->notes()[0];
    EXPECT_NE((*b)->notes()[0].find("falling back"), std::string::npos);
    // The embedded default works end to end.
    Due d(*b);
    ASSERT_TRUE(d.init("app", kProducer));
    ASSERT_TRUE(d.write("x/y", 1));
    ASSERT_TRUE(d.sync(std::chrono::seconds(5)));
    auto rows = d.get("x/y");
    ASSERT_TRUE(rows) << rows.error();
    EXPECT_EQ(rows->size(), 1u);
  }
  cfg.archive_fallback = false;
  auto b2 = Backends::open(cfg);
  ASSERT_FALSE(b2);
  EXPECT_NE(b2.error().find("postgres"), std::string::npos) << b2.error();
  std::filesystem::remove_all(dir);
}

TEST(BackendsOpen, UnknownBackendNamesAreErrors) {
  DataConfig cfg;
  cfg.updates = "kafka";
  auto b = Backends::open(cfg);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().find("unknown backend 'kafka'"), std::string::npos);
}

}  // namespace
}  // namespace sdn::data
