// run_once and replay (run.hpp).
#include "apps/fleet/apps/run.hpp"

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/fleet/apps/driver.hpp"
#include "apps/fleet/apps/twins.hpp"
#include "data/coordinator.hpp"

namespace sdn::fleet {

namespace {
constexpr std::string_view kRunApp = "fleetrun";

Json config_json(const RunConfig& c) {
  return Json{{"printers", c.printers},     {"algorithm", to_string(c.algorithm)},
              {"scenario", c.scenario},     {"seed", c.seed},
              {"factor", c.factor},         {"anomaly_probability", c.anomaly_probability},
              {"maintenance_min", c.maintenance_min},
              {"jobs_per_printer", c.jobs_per_printer}, {"ppe_at_min", c.ppe_at_min},
              {"ilp_time_limit_ms", c.ilp.time_limit_ms}};
}

// Figures from job events (the same code for the live run and the replay).
struct Tally {
  std::map<std::string, double> finished;  // job -> sim minute its print finished
  std::set<std::string> urgent;
  double ppe_release = -1;
  uint64_t aborted = 0;
  void add(const Json& e) {
    std::string ev = e.value("event", "");
    if (!e.contains("job")) return;
    auto j = job_from_json(e["job"]);
    if (!j) return;
    if (j->urgent) {
      urgent.insert(j->id);
      if (ppe_release < 0 || j->released < ppe_release) ppe_release = j->released;
    }
    if (ev == "finished") finished[j->id] = e.value("sim_min", 0.0);
    if (ev == "aborted") ++aborted;
  }
  void fill(RunResult& r) const {
    r.finished = finished.size();
    r.aborted = aborted;
    for (const auto& [id, t] : finished) {
      r.makespan = std::max(r.makespan, t);
      if (urgent.count(id))
        r.ppe_makespan = std::max(r.ppe_makespan, t - ppe_release);
      else
        r.regular_makespan = std::max(r.regular_makespan, t);
    }
  }
};
}  // namespace

Json RunResult::to_json() const {
  Json j = config_json(cfg);
  j["ok"] = ok;
  if (!error.empty()) j["error"] = error;
  j["jobs"] = jobs;
  j["finished"] = finished;
  j["urgent_jobs"] = urgent_jobs;
  j["makespan_min"] = makespan;
  j["regular_makespan_min"] = regular_makespan;
  j["ppe_makespan_min"] = ppe_makespan;
  j["aborted"] = aborted;
  j["anomalies"] = anomalies;
  j["maintenances"] = maintenances;
  j["decisions"] = decisions;
  j["ilp_fallbacks"] = ilp_fallbacks;
  j["ilp_optimal"] = ilp_optimal;
  j["solve_ms_max"] = solve_ms_max;
  j["solve_ms_mean"] = solve_ms_mean;
  j["uploads"] = uploads;
  j["http_requests"] = http_requests;
  j["http_failures"] = http_failures;
  j["real_s"] = real_s;
  return j;
}

RunResult run_once(const RunConfig& cfg) {
  RunResult res;
  res.cfg = cfg;
  auto t0 = std::chrono::steady_clock::now();
  auto fail = [&](std::string e) {
    res.ok = false;
    res.error = std::move(e);
    return res;
  };
  if (cfg.dir.empty()) return fail("fleet run: no directory for the archive");
  if (cfg.scenario != "normal" && cfg.scenario != "anomalies" && cfg.scenario != "ppe")
    return fail(fmt::format("fleet run: unknown scenario '{}' (normal, anomalies, ppe)", cfg.scenario));
  std::error_code ec;
  std::filesystem::create_directories(cfg.dir, ec);
  std::string db = (std::filesystem::path(cfg.dir) / "archive.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix, ec);
  data::SqliteConfig sc;
  sc.path = db;
  auto archive = data::open_sqlite_archive(sc);
  if (!archive) return fail("fleet run: " + archive.error());
  auto backends = std::make_shared<data::Backends>(data::make_inproc_updates(), std::move(*archive));

  data::CoordinatorConfig cc;
  auto coordinator = std::make_unique<data::Coordinator>(backends, cc);
  if (auto s = coordinator->start(); !s) return fail("fleet run: coordinator: " + s.error());

  std::shared_ptr<void> attachment;
  if (cfg.attach) {
    auto a = cfg.attach(backends, coordinator.get());
    if (!a) return fail("fleet run: " + a.error());
    attachment = std::move(*a);
  }

  AssetsConfig ac;
  ac.printers = make_fleet(cfg.printers, cfg.seed);
  ac.factor = cfg.factor;
  ac.seed = cfg.seed;
  ac.anomaly_probability = cfg.scenario == "anomalies" ? cfg.anomaly_probability : 0.0;
  auto assets = MachineAssets::start(ac);
  if (!assets) return fail("fleet run: machine assets: " + assets.error());
  auto clock = (*assets)->clock_ptr();

  ScenarioConfig scn;
  scn.printers = cfg.printers;
  scn.jobs_per_printer = cfg.jobs_per_printer;
  scn.ppe = cfg.scenario == "ppe";
  scn.ppe_at_min = cfg.ppe_at_min;
  scn.seed = cfg.seed;
  std::vector<Order> orders = make_orders(scn);
  for (const auto& o : orders) {
    res.jobs += static_cast<std::size_t>(o.quantity);
    if (o.urgent) res.urgent_jobs += static_cast<std::size_t>(o.quantity);
  }

  // The run's own app: announces the run and watches job events until every job is done.
  data::Due run_due(backends);
  if (auto r = run_due.init(std::string(kRunApp), data::kProducer | data::kConsumer,
                            {{"fleet/*/events@fleetdriver", std::nullopt}},
                            {{"fleet/run", std::nullopt, false}});
      !r)
    return fail("fleet run: " + r.error());
  Json orders_j = Json::array();
  for (const auto& o : orders) orders_j.push_back(o.to_json());
  (void)run_due.write("fleet/run", Json{{"phase", "start"}, {"config", config_json(cfg)},
                                        {"jobs", res.jobs}, {"orders", orders_j}},
                      data::kNoWait);
  std::mutex mu;
  std::condition_variable cv;
  Tally tally;
  auto sub = run_due.observe("fleet/*/events@fleetdriver", [&](const data::RecordPtr& r) {
    if (!r->value.is_json()) return;
    std::lock_guard l(mu);
    tally.add(r->value.json());
    if (tally.finished.size() >= res.jobs) cv.notify_all();
  });
  if (!sub) return fail("fleet run: " + sub.error());

  SchedulerConfig schc;
  schc.algorithm = cfg.algorithm;
  schc.seed = cfg.seed;
  schc.ilp = cfg.ilp;
  auto scheduler = Scheduler::start(backends, schc, clock);
  if (!scheduler) return fail(scheduler.error());
  TwinConfig tc;
  for (const auto& p : ac.printers) tc.printers.push_back(p.name);
  tc.maintenance_min = cfg.maintenance_min;
  auto twins = Twins::start(backends, tc, clock);
  if (!twins) return fail(twins.error());
  DriverConfig dc;
  dc.printers = (*assets)->endpoints();
  dc.poll_interval = cfg.poll_interval;
  auto driver = Driver::start(backends, dc, clock);
  if (!driver) return fail(driver.error());
  auto creator = JobCreator::start(backends, orders, clock);
  if (!creator) return fail(creator.error());

  bool done;
  {
    std::unique_lock l(mu);
    done = cv.wait_for(l, cfg.timeout, [&] { return tally.finished.size() >= res.jobs; });
    tally.fill(res);
  }
  auto ds = (*driver)->stats();
  auto ss = (*scheduler)->stats();
  auto ts = (*twins)->stats();
  res.anomalies = ts.anomalies;
  res.maintenances = ds.maintenances;
  res.decisions = ss.decisions;
  res.ilp_fallbacks = ss.ilp_fallbacks;
  res.ilp_optimal = ss.ilp_optimal;
  res.solve_ms_max = ss.solve_ms_max;
  res.solve_ms_mean = ss.decisions ? ss.solve_ms_sum / static_cast<double>(ss.decisions) : 0;
  res.uploads = ds.uploads;
  res.http_requests = ds.requests;
  res.http_failures = ds.http_failures;
  res.real_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.ok = done;
  if (!done)
    res.error = fmt::format("timed out after {} s with {} of {} jobs finished", cfg.timeout.count(),
                            res.finished, res.jobs);
  (void)run_due.write("fleet/run", Json{{"phase", "end"}, {"result", res.to_json()}}, data::kNoWait);
  if (cfg.linger.count() > 0) std::this_thread::sleep_for(cfg.linger);
  // Stop producers before consumers: creator, driver, then the apps that react to them.
  creator->reset();
  driver->reset();
  twins->reset();
  scheduler->reset();
  sub->cancel();
  run_due.sync(std::chrono::milliseconds(5000));
  assets->reset();
  attachment.reset();
  coordinator->stop();
  return res;
}

Expected<Json, std::string> replay(const std::string& archive_path) {
  if (!std::filesystem::exists(archive_path))
    return unexpected(fmt::format("replay: no archive at {}", archive_path));
  data::SqliteConfig sc;
  sc.path = archive_path;
  auto archive = data::open_sqlite_archive(sc);
  if (!archive) return unexpected("replay: " + archive.error());
  auto query = [&](const std::string& key) -> Expected<std::vector<data::Record>, std::string> {
    data::Query q;
    q.key = key;
    return (*archive)->query(q);
  };
  auto runs = query("fleet/run@fleetrun");
  if (!runs) return unexpected("replay: " + runs.error());
  Json start, end;
  for (const auto& r : *runs) {
    if (!r.value.is_json()) continue;
    if (r.value.json().value("phase", "") == "start") start = r.value.json();
    if (r.value.json().value("phase", "") == "end") end = r.value.json();
  }
  if (start.is_null()) return unexpected(std::string("replay: the archive holds no fleet run"));
  auto events = query("fleet/*/events@fleetdriver");
  if (!events) return unexpected("replay: " + events.error());
  Tally tally;
  std::map<std::string, double> busy;  // printer -> minutes printing (started .. cleaned)
  std::map<std::string, double> started_at;
  for (const auto& r : *events) {
    if (!r.value.is_json()) continue;
    const Json& e = r.value.json();
    tally.add(e);
    std::string p = e.value("printer", "");
    std::string ev = e.value("event", "");
    if (ev == "started") started_at[p] = e.value("sim_min", 0.0);
    if (ev == "cleaned" && started_at.count(p)) busy[p] += e.value("sim_min", 0.0) - started_at[p];
  }
  RunResult rr;
  rr.jobs = start.value("jobs", 0);
  tally.fill(rr);
  auto decisions = query("fleet/decisions@jobscheduler");
  if (!decisions) return unexpected("replay: " + decisions.error());
  std::vector<double> solve;
  uint64_t fallbacks = 0;
  for (const auto& r : *decisions) {
    if (!r.value.is_json()) continue;
    if (r.value.json().contains("solve_ms")) solve.push_back(r.value.json().value("solve_ms", 0.0));
    if (r.value.json().value("fell_back", false)) ++fallbacks;
  }
  auto maint = query("fleet/maintenance@fleettwin");
  if (!maint) return unexpected("replay: " + maint.error());
  std::sort(solve.begin(), solve.end());
  Json util = Json::object();
  for (const auto& [p, b] : busy) util[p] = rr.makespan > 0 ? b / rr.makespan : 0.0;
  Json out{{"config", start.value("config", Json::object())},
           {"jobs", rr.jobs},
           {"finished", rr.finished},
           {"makespan_min", rr.makespan},
           {"regular_makespan_min", rr.regular_makespan},
           {"ppe_makespan_min", rr.ppe_makespan},
           {"aborted", rr.aborted},
           {"maintenances", maint->size()},
           {"decisions", decisions->size()},
           {"ilp_fallbacks", fallbacks},
           {"solve_ms_max", solve.empty() ? 0.0 : solve.back()},
           {"solve_ms_p50", solve.empty() ? 0.0 : solve[solve.size() / 2]},
           {"utilization", util},
           {"events", events->size()}};
  if (!end.is_null()) out["live_result"] = end.value("result", Json());
  return out;
}

}  // namespace sdn::fleet
