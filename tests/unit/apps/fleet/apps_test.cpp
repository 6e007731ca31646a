// The fleet apps wired through DUE on the embedded backends against emulated printers: orders
// from the creator are deterministic; an anomaly mid-print ends in maintenance and the job
// printed elsewhere; a whole small experiment runs end to end for every scheduler and its
// archive alone gives the same figures again.
#include <filesystem>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "apps/fleet/apps/driver.hpp"
#include "apps/fleet/apps/run.hpp"
#include "apps/fleet/apps/twins.hpp"
#include "fakes/eventually.hpp"

namespace sdn::fleet {
namespace {

using namespace std::chrono_literals;
using test::eventually;

std::string temp_dir(const std::string& name) {
  std::random_device rd;
  auto d = std::filesystem::temp_directory_path() /
           ("sdnator-fleet-" + name + "-" + std::to_string(rd()));
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(FleetOrders, DeterministicTriangularAndPpe) {
  ScenarioConfig c;
  c.printers = 10;
  c.seed = 4;
  c.ppe = true;
  auto a = make_orders(c), b = make_orders(c);
  ASSERT_EQ(a.size(), b.size());
  int regular = 0, urgent = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].to_json(), b[i].to_json());
    if (a[i].urgent) {
      urgent += a[i].quantity;
      EXPECT_EQ(a[i].print_min, 90);
      EXPECT_EQ(a[i].at_min, 480);
    } else {
      regular += a[i].quantity;
      EXPECT_GE(a[i].print_min, 48);
      EXPECT_LE(a[i].print_min, 600);
      EXPECT_LE(a[i].quantity, c.max_quantity);
    }
    if (i) {
      EXPECT_LE(a[i - 1].at_min, a[i].at_min);
    }
  }
  EXPECT_EQ(regular, 80);
  EXPECT_EQ(urgent, 30);
  c.seed = 5;
  EXPECT_NE(make_orders(c)[0].to_json(), a[0].to_json());
  // The inverse CDF hits the bounds and the mode.
  EXPECT_DOUBLE_EQ(triangular(48, 240, 600, 0), 48);
  EXPECT_NEAR(triangular(48, 240, 600, (240.0 - 48) / (600 - 48)), 240, 1e-9);
  EXPECT_NEAR(triangular(48, 240, 600, 0.999999999), 600, 0.1);
}

TEST(FleetIso, SimClockTimesRoundTrip) {
  SimClock c(1);
  for (double m : {0.0, 1.5, 59.0, 1440.0, 100000.25}) {
    auto back = sim_min_of_iso(c.iso(m));
    ASSERT_TRUE(back) << c.iso(m);
    EXPECT_NEAR(*back, m, 1.0 / 60 + 1e-9) << c.iso(m);
  }
  EXPECT_FALSE(sim_min_of_iso("yesterday"));
  EXPECT_FALSE(sim_min_of_iso("2026-13-01T00:00:00"));
}

// Collects every record under a pattern.
struct Tap {
  std::mutex mu;
  std::vector<data::Record> recs;
  data::Due::Subscription sub;
  Tap(data::Due& d, const std::string& pattern) {
    auto s = d.observe(pattern, [this](const data::RecordPtr& r) {
      std::lock_guard l(mu);
      recs.push_back(*r);
    });
    EXPECT_TRUE(s) << s.error();
    if (s) sub = std::move(*s);
  }
  std::vector<data::Record> get() {
    std::lock_guard l(mu);
    return recs;
  }
  bool any(const std::function<bool(const Json&)>& f) {
    for (const auto& r : get())
      if (r.value.is_json() && f(r.value.json())) return true;
    return false;
  }
};

TEST(FleetApps, AnAnomalyMidPrintEndsInMaintenanceAndTheJobPrintsElsewhere) {
  std::string dir = temp_dir("anomaly");
  data::SqliteConfig sc;
  sc.path = dir + "/archive.db";
  auto archive = data::open_sqlite_archive(sc);
  ASSERT_TRUE(archive) << archive.error();
  auto backends = std::make_shared<data::Backends>(data::make_inproc_updates(), std::move(*archive));
  AssetsConfig ac;
  ac.printers = make_fleet(2, 7);
  ac.factor = 60000;  // 1 sim minute per real millisecond
  auto assets = MachineAssets::start(ac);
  ASSERT_TRUE(assets) << assets.error();
  auto clock = (*assets)->clock_ptr();

  data::Due probe(backends);
  ASSERT_TRUE(probe.init("probe", data::kConsumer | data::kProducer));
  Tap events(probe, "fleet/*/events@fleetdriver");
  Tap maint(probe, "fleet/maintenance@fleettwin");
  Tap returned(probe, "fleet/jobs/returned@fleettwin");
  Tap decisions(probe, "fleet/decisions@jobscheduler");

  SchedulerConfig schc;
  schc.algorithm = Algorithm::kDynamic;
  auto scheduler = Scheduler::start(backends, schc, clock);
  ASSERT_TRUE(scheduler) << scheduler.error();
  TwinConfig tc;
  for (const auto& p : ac.printers) tc.printers.push_back(p.name);
  tc.maintenance_min = 120;
  auto twins = Twins::start(backends, tc, clock);
  ASSERT_TRUE(twins) << twins.error();
  DriverConfig dc;
  dc.printers = (*assets)->endpoints();
  auto driver = Driver::start(backends, dc, clock);
  ASSERT_TRUE(driver) << driver.error();
  // One long job (400 sim minutes), released now.
  Order o;
  o.id = "o1";
  o.print_min = 400;
  o.quantity = 1;
  auto creator = JobCreator::start(backends, {o}, clock);
  ASSERT_TRUE(creator) << creator.error();

  std::string first;
  ASSERT_TRUE(eventually([&] {
    for (const auto& r : events.get())
      if (r.value.json().value("event", "") == "printing") first = r.value.json()["printer"];
    return !first.empty();
  }, 10s));
  ASSERT_TRUE((*assets)->inject_anomaly(first, "hotend"));

  ASSERT_TRUE(eventually([&] { return !maint.get().empty(); }, 10s));
  const Json m = maint.get().front().value.json();
  EXPECT_EQ(m["printer"], first);
  EXPECT_EQ(m["sensor"], "hotend");
  EXPECT_LT(m["residual"].get<double>(), -5.0);
  ASSERT_TRUE(eventually([&] { return !returned.get().empty(); }, 5s));
  EXPECT_EQ(returned.get().front().value.json()["job"]["id"], "o1-1");
  // The driver aborted the print and put the printer into maintenance.
  EXPECT_TRUE(eventually([&] {
    return events.any([&](const Json& e) { return e["event"] == "aborted" && e["printer"] == first; }) &&
           events.any([&](const Json& e) { return e["event"] == "maintenance_start" && e["printer"] == first; });
  }, 10s));
  // The dynamic scheduler placed the returned job on the other printer, where it finishes.
  ASSERT_TRUE(eventually([&] {
    return events.any([&](const Json& e) { return e["event"] == "finished"; });
  }, 20s));
  std::string second;
  for (const auto& r : events.get())
    if (r.value.json()["event"] == "finished") second = r.value.json()["printer"];
  EXPECT_NE(second, first);
  EXPECT_TRUE(decisions.any([](const Json& d) { return d.value("trigger", "") == "returned"; }));
  EXPECT_EQ((*twins)->stats().anomalies, 1u);
  creator->reset();
  driver->reset();
  twins->reset();
  scheduler->reset();
  std::filesystem::remove_all(dir);
}

TEST(FleetApps, SmallExperimentEndToEndAndReplayFromTheArchive) {
  std::string dir = temp_dir("run");
  for (Algorithm a : {Algorithm::kDecentralized, Algorithm::kBaseline, Algorithm::kFcfs,
                      Algorithm::kDynamic}) {
    RunConfig rc;
    rc.printers = 3;
    rc.algorithm = a;
    rc.scenario = "ppe";
    rc.jobs_per_printer = 3;
    rc.ppe_at_min = 100;
    rc.factor = 60000;
    rc.seed = 2;
    rc.timeout = 60s;
    rc.dir = dir + "/" + std::string(to_string(a));
    RunResult r = run_once(rc);
    ASSERT_TRUE(r.ok) << to_string(a) << ": " << r.error;
    EXPECT_EQ(r.finished, r.jobs);
    EXPECT_EQ(r.urgent_jobs, 9u);
    EXPECT_GT(r.makespan, 100);
    EXPECT_GT(r.ppe_makespan, 0);
    EXPECT_GT(r.decisions, 0u);
    EXPECT_EQ(r.http_failures, 0u);
    auto rep = replay(rc.dir + "/archive.db");
    ASSERT_TRUE(rep) << rep.error();
    EXPECT_EQ((*rep)["finished"], r.jobs);
    EXPECT_DOUBLE_EQ((*rep)["makespan_min"].get<double>(), r.makespan);
    EXPECT_DOUBLE_EQ((*rep)["ppe_makespan_min"].get<double>(), r.ppe_makespan);
    EXPECT_EQ((*rep)["config"]["algorithm"], to_string(a));
    EXPECT_EQ((*rep)["decisions"].get<uint64_t>(), r.decisions);
  }
  auto missing = replay(dir + "/nothing.db");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no archive"), std::string::npos);
  std::filesystem::remove_all(dir);
}


TEST(FleetApps, BadRecordsAreCountedAndTheAppsKeepWorking) {
  auto backends = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
  AssetsConfig ac;
  ac.printers = make_fleet(1, 3);
  ac.factor = 60000;
  auto assets = MachineAssets::start(ac);
  ASSERT_TRUE(assets) << assets.error();
  auto clock = (*assets)->clock_ptr();
  data::Due probe(backends);
  ASSERT_TRUE(probe.init("probe", data::kConsumer));
  Tap events(probe, "fleet/*/events@fleetdriver");
  SchedulerConfig schc;
  schc.algorithm = Algorithm::kFcfs;
  auto scheduler = Scheduler::start(backends, schc, clock);
  ASSERT_TRUE(scheduler) << scheduler.error();
  TwinConfig tc;
  tc.printers = {ac.printers[0].name};
  auto twins = Twins::start(backends, tc, clock);
  ASSERT_TRUE(twins) << twins.error();
  DriverConfig dc;
  dc.printers = (*assets)->endpoints();
  auto driver = Driver::start(backends, dc, clock);
  ASSERT_TRUE(driver) << driver.error();
  const std::string p = ac.printers[0].name;
  // Garbage under every key the apps read, from impostors with the right app ids.
  data::Due fake_driver(backends), fake_creator(backends), fake_sched(backends);
  ASSERT_TRUE(fake_driver.init("fleetdriver", data::kProducer));
  ASSERT_TRUE(fake_creator.init("jobcreator", data::kProducer));
  ASSERT_TRUE(fake_sched.init("jobscheduler", data::kProducer));
  ASSERT_TRUE(fake_driver.write("fleet/" + p + "/state", Json{{"status", 5}, {"job", "x"}}));
  ASSERT_TRUE(fake_driver.write("fleet/" + p + "/queue", Json{{"jobs", "x"}}));
  ASSERT_TRUE(fake_driver.write("fleet/" + p + "/events", Json{{"event", 3}, {"job", {{"id", 1}}}}));
  ASSERT_TRUE(fake_driver.write("fleet/" + p + "/sensors/bed", Json("hot")));
  ASSERT_TRUE(fake_creator.write("fleet/orders", Json{{"orders", {{{"jobs", {{{"id", 1}}}}}}}}));
  ASSERT_TRUE(fake_creator.write("fleet/orders", Json::array()));
  ASSERT_TRUE(fake_sched.write("fleet/" + p + "/command", Json{{"op", "enqueue"}, {"jobs", {{{"id", "z"}}}}}));
  ASSERT_TRUE(fake_sched.write("fleet/" + p + "/command", Json{{"op", "dance"}}));
  ASSERT_TRUE(fake_sched.write("fleet/" + p + "/command", data::Bytes{"\x01\x02"}));
  EXPECT_TRUE(eventually([&] { return (*driver)->stats().bad_commands >= 3; }, 5s));
  EXPECT_TRUE(eventually([&] { return (*scheduler)->stats().bad_records >= 2; }, 5s));
  // A real order still goes through.
  Order o;
  o.id = "ok";
  o.print_min = 30;
  auto creator = JobCreator::start(backends, {o}, clock);
  ASSERT_TRUE(creator) << creator.error();
  EXPECT_TRUE(eventually([&] {
    return events.any([](const Json& e) { return e.contains("event") && e["event"] == "finished"; });
  }, 20s));
  EXPECT_GE(backends->updates().stats().handler_errors, 1u);  // the impostors' records, counted
  creator->reset();
  driver->reset();
  twins->reset();
  scheduler->reset();
}

TEST(FleetApps, BadConfigIsAnError) {
  RunConfig rc;
  rc.dir = temp_dir("bad");
  rc.scenario = "weekend";
  auto r = run_once(rc);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("unknown scenario 'weekend'"), std::string::npos);
  Order o;
  o.id = "x";
  o.quantity = 0;
  o.print_min = 10;
  auto b = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
  auto c = JobCreator::start(b, {o}, std::make_shared<SimClock>(1.0));
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("bad order 'x'"), std::string::npos);
  std::filesystem::remove_all(rc.dir);
}

}  // namespace
}  // namespace sdn::fleet
