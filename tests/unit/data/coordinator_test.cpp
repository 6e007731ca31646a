// The Coordinator runner on real DUEs over the in-process bus and an SQLite archive: assignments
// reach producers, a crashed active is replaced by its standby within a second, a goodbye fails
// over at once, and a restarted Coordinator loses no registration (from its archived checkpoint,
// or from the re-registrations its hello asks for when there is no archive).
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "data/coordinator.hpp"
#include "fakes/eventually.hpp"

namespace sdn::data {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using test::eventually;

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override { backends_ = make_backends(true); }
  void TearDown() override {
    backends_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::shared_ptr<Backends> make_backends(bool with_archive) {
    std::unique_ptr<Archive> archive;
    if (with_archive) {
      std::random_device rd;
      dir_ = std::filesystem::temp_directory_path() /
             ("sdnator-coord-" + std::to_string(rd()) + std::to_string(rd()));
      std::filesystem::create_directories(dir_);
      SqliteConfig sc;
      sc.path = (dir_ / "archive.db").string();
      sc.flush_interval = 5ms;
      auto a = open_sqlite_archive(sc);
      EXPECT_TRUE(a) << a.error();
      if (a) archive = std::move(*a);
    }
    return std::make_shared<Backends>(make_inproc_updates(), std::move(archive));
  }

  static CoordinatorConfig coord_cfg() {
    CoordinatorConfig c;
    c.missed_beats = 3;
    c.check_interval = 20ms;
    c.checkpoint_interval = 1000ms;
    return c;
  }

  std::unique_ptr<Due> make_due(const std::string& app, std::chrono::milliseconds hb,
                                std::vector<Interest> interests,
                                std::vector<Capability> caps, bool goodbye = true) {
    DueConfig dc;
    dc.heartbeat_interval = hb;
    dc.send_goodbye = goodbye;
    auto d = std::make_unique<Due>(backends_, dc);
    unsigned roles = (caps.empty() ? 0u : unsigned{kProducer}) |
                     (interests.empty() ? 0u : unsigned{kConsumer});
    auto r = d->init(app, roles, std::move(interests), std::move(caps));
    EXPECT_TRUE(r) << r.error();
    return d;
  }

  static const Json* find_instance(const Json& state, const std::string& inst) {
    for (const auto& i : state["instances"])
      if (i["instance"] == inst) return &i;
    return nullptr;
  }

  static bool online(const Coordinator& c, const std::string& inst) {
    Json s = c.state();
    const Json* i = find_instance(s, inst);
    return i && (*i)["status"] == "online";
  }

  // Publishes like a DUE would, from the test: an instance nobody can ask to re-register.
  void publish_raw(const std::string& key, Json v, const std::string& app,
                   const std::string& inst) {
    auto r = std::make_shared<Record>();
    r->key = key;
    r->value = std::move(v);
    r->app_id = app;
    r->instance = inst;
    r->ts_ns = wall_ns();
    r->seq = ++raw_seq_;
    backends_->updates().publish(r);
    backends_->updates().flush();
  }

  std::filesystem::path dir_;
  std::shared_ptr<Backends> backends_;
  uint64_t raw_seq_ = 0;
};

const std::vector<Capability> kSensorCaps{Capability{"env/*/temp@sensor", 10.0, false}};
const std::vector<Interest> kUiInterests{Interest{"env/*/temp", 2.0}};

TEST_F(CoordinatorTest, CrashedActiveIsReplacedByItsStandbyWithinOneSecond) {
  Coordinator coord(backends_, coord_cfg());
  ASSERT_TRUE(coord.start());

  auto a = make_due("sensor", 50ms, {}, kSensorCaps, /*goodbye=*/false);
  ASSERT_TRUE(eventually([&] { return online(coord, a->instance()); }));
  auto b = make_due("sensor", 50ms, {}, kSensorCaps);
  auto ui = make_due("ui", 50ms, kUiInterests, {});

  ASSERT_TRUE(eventually([&] {
    auto sa = a->assignments(), sb = b->assignments();
    return sa.active && sa.items.size() == 1 && !sb.active && sb.items.size() == 1;
  }));
  EXPECT_EQ(a->assigned_freq("env/room1/temp@sensor"), 2.0);
  EXPECT_EQ(b->assignments().items[0].consumers, std::vector<std::string>{"ui"});

  // Crash: no goodbye, the heartbeats just stop.
  auto killed = Clock::now();
  std::string dead = a->instance();
  a.reset();
  ASSERT_TRUE(eventually([&] { return b->active(); }, 1000ms))
      << "standby not active within 1 s; state: " << coord.state().dump();
  auto took = Clock::now() - killed;
  EXPECT_LT(took, 1000ms);
  EXPECT_EQ(b->assigned_freq("env/room1/temp@sensor"), 2.0);
  Json s = coord.state();
  ASSERT_NE(find_instance(s, dead), nullptr);
  EXPECT_EQ((*find_instance(s, dead))["status"], "offline");
  EXPECT_EQ((*find_instance(s, b->instance()))["active"], true);
  std::printf("failover after crash: %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
}

TEST_F(CoordinatorTest, GoodbyeFailsOverAtOnce) {
  Coordinator coord(backends_, coord_cfg());
  ASSERT_TRUE(coord.start());
  // Heartbeats every 2 s: a timeout would take 6 s, so only the goodbye explains a quick switch.
  auto a = make_due("sensor", 2000ms, {}, kSensorCaps);
  ASSERT_TRUE(eventually([&] { return online(coord, a->instance()); }));
  auto b = make_due("sensor", 2000ms, {}, kSensorCaps);
  auto ui = make_due("ui", 2000ms, kUiInterests, {});
  ASSERT_TRUE(eventually([&] {
    auto sb = b->assignments();
    return !sb.active && sb.items.size() == 1;
  }));

  auto left = Clock::now();
  a.reset();
  ASSERT_TRUE(eventually([&] { return b->active(); }, 1000ms));
  EXPECT_LT(Clock::now() - left, 500ms);
  EXPECT_EQ(b->assigned_freq("env/room1/temp@sensor"), 2.0);
}

TEST_F(CoordinatorTest, RestartRestoresFromTheArchivedCheckpoint) {
  auto coord = std::make_unique<Coordinator>(backends_, coord_cfg());
  ASSERT_TRUE(coord->start());

  // A producer outside DUE that never answers a hello: after the restart only the checkpoint
  // knows about it.
  const std::string ghost = "ghost-1";
  Json reg = {{"app_id", "ghostly"},
              {"instance", ghost},
              {"roles", {"producer"}},
              {"capabilities", {{{"key", "env/*/temp@ghostly"}, {"freq", 1}}}},
              {"heartbeat_ms", 5000}};
  publish_raw(keys::registration("ghostly", ghost), reg, "ghostly", ghost);
  auto a = make_due("sensor", 100ms, {}, kSensorCaps);
  ASSERT_TRUE(eventually([&] { return online(*coord, a->instance()); }));
  auto b = make_due("sensor", 100ms, {}, kSensorCaps);
  auto ui = make_due("ui", 100ms, kUiInterests, {});
  ASSERT_TRUE(eventually([&] {
    return online(*coord, ghost) && online(*coord, b->instance()) &&
           online(*coord, ui->instance()) && b->assignments().items.size() == 1;
  }));
  Json before = coord->state();
  auto a_epoch = a->assignments().epoch;

  coord.reset();  // stop(): last checkpoint archived, goodbye
  std::atomic<int> hellos{0};
  std::string hello_instance;
  std::mutex mu;
  auto watcher = make_due("watcher", 1000ms, {}, {});
  auto sub = watcher->observe(keys::kCoordinatorHello, [&](const RecordPtr& r) {
    std::lock_guard lock(mu);
    hello_instance = r->value.json().value("instance", "");
    ++hellos;
  });
  ASSERT_TRUE(sub);

  coord = std::make_unique<Coordinator>(backends_, coord_cfg());
  ASSERT_TRUE(coord->start());
  // Right after start, before any re-registration could matter: the checkpoint alone.
  Json after = coord->state();
  for (const auto& inst : before["instances"]) {
    if (inst["app_id"] == "coordinator") continue;  // the old Coordinator said goodbye
    const Json* i = find_instance(after, inst["instance"]);
    ASSERT_NE(i, nullptr) << inst.dump();
    EXPECT_EQ((*i)["registration"], inst["registration"]);
    EXPECT_EQ((*i)["active"], inst["active"]);
    EXPECT_EQ((*i)["status"], "online");
  }
  EXPECT_GE(after["epoch"].get<uint64_t>(), before["epoch"].get<uint64_t>());
  EXPECT_TRUE(find_instance(after, ghost));
  ASSERT_EQ(hellos.load(), 1);
  {
    std::lock_guard lock(mu);
    EXPECT_FALSE(hello_instance.empty());
  }

  // The DUEs answer the hello; nothing fails over and the active keeps its assignment.
  auto watcher_inst = watcher->instance();
  ASSERT_TRUE(eventually([&] { return online(*coord, watcher_inst); }));
  EXPECT_TRUE(a->active());
  EXPECT_FALSE(b->active());
  EXPECT_EQ(a->assigned_freq("env/room1/temp@sensor"), 2.0);
  EXPECT_GE(a->assignments().epoch, a_epoch);
  // The ghost still times out in time (5 s heartbeats are not waited for here).
  EXPECT_TRUE(online(*coord, ghost));
}

TEST_F(CoordinatorTest, RestartWithoutArchiveRebuildsFromRegistrations) {
  backends_ = make_backends(false);
  auto coord = std::make_unique<Coordinator>(backends_, coord_cfg());
  ASSERT_TRUE(coord->start());
  auto a = make_due("sensor", 100ms, {}, kSensorCaps);
  auto ui = make_due("ui", 100ms, kUiInterests, {});
  ASSERT_TRUE(eventually([&] { return a->assignments().items.size() == 1; }));

  coord.reset();
  coord = std::make_unique<Coordinator>(backends_, coord_cfg());
  ASSERT_TRUE(coord->start());
  ASSERT_TRUE(eventually([&] {
    return online(*coord, a->instance()) && online(*coord, ui->instance());
  }, 1000ms));
  Json s = coord.get()->state();
  const Json* ai = find_instance(s, a->instance());
  ASSERT_NE(ai, nullptr);
  EXPECT_EQ((*ai)["registration"]["capabilities"][0]["key"], "env/*/temp@sensor");
  EXPECT_EQ((*ai)["active"], true);
  // The new Coordinator's set reaches the DUE even though its epochs started afresh.
  ASSERT_TRUE(eventually([&] { return a->assigned_freq("env/room1/temp@sensor") == 2.0; }));
}

TEST_F(CoordinatorTest, UnknownHeartbeatBringsAHello) {
  Coordinator coord(backends_, coord_cfg());
  std::atomic<int> hellos{0};
  auto watcher = make_due("watcher", 1000ms, {}, {});
  auto sub = watcher->observe(keys::kCoordinatorHello, [&](const RecordPtr&) { ++hellos; });
  ASSERT_TRUE(sub);
  ASSERT_TRUE(coord.start());
  EXPECT_EQ(hellos.load(), 1);
  auto inst = watcher->instance();
  ASSERT_TRUE(eventually([&] { return online(coord, inst); }));

  // An instance nobody registered keeps beating: the Coordinator asks everyone to register
  // again, at most once a second.
  auto t0 = Clock::now();
  ASSERT_TRUE(eventually([&] {
    publish_raw(keys::heartbeat("nobody", "n1"), Json{{"seq", 1}, {"heartbeat_ms", 50}},
                "nobody", "n1");
    std::this_thread::sleep_for(20ms);
    return hellos.load() >= 2;
  }, 3000ms));
  EXPECT_GE(Clock::now() - t0, 900ms);  // the start hello counts against the rate limit
  EXPECT_EQ(hellos.load(), 2);
  Json s = coord.state();
  EXPECT_EQ(find_instance(s, "n1"), nullptr);  // a heartbeat registers nobody
  // The Coordinator lists itself, an app like the others.
  EXPECT_NE(std::find(s["apps"].begin(), s["apps"].end(), Json("coordinator")), s["apps"].end());
}

TEST_F(CoordinatorTest, StopLeavesTheRegistryAndStartsAgain) {
  Coordinator coord(backends_, coord_cfg());
  ASSERT_TRUE(coord.start());
  EXPECT_FALSE(coord.start());  // already running
  auto a = make_due("sensor", 100ms, {}, kSensorCaps);
  ASSERT_TRUE(eventually([&] { return online(coord, a->instance()); }));
  coord.stop();
  coord.stop();  // idempotent
  // The last checkpoint does not list the stopped Coordinator itself.
  Query q;
  q.key = std::string(keys::kCoordinatorState);
  q.latest = 1;
  auto recs = a->get(q);
  ASSERT_TRUE(recs) << recs.error();
  ASSERT_EQ(recs->size(), 1u);
  const Json& cp = recs->back().value.json();
  for (const auto& i : cp["instances"]) EXPECT_NE(i["app_id"], "coordinator") << i.dump();
  EXPECT_NE(find_instance(cp, a->instance()), nullptr);

  ASSERT_TRUE(coord.start());
  EXPECT_TRUE(online(coord, a->instance()));
}

}  // namespace
}  // namespace sdn::data
