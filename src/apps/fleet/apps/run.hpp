// One run of the fleet case study, and its replay: the emulated fleet (Machine Assets), the data
// driver, the twins, the job creator and one scheduler, wired only through DUE on the embedded
// backends (in-process bus, SQLite archive in the run's directory). A run ends when every job
// has printed to the end; its figures (makespan, PPE makespan, ...) are computed from the bus, and
// replay() computes the same figures again from the archive alone.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "apps/fleet/apps/creator.hpp"
#include "apps/fleet/apps/scheduler.hpp"

namespace sdn::data {
class Coordinator;
}

namespace sdn::fleet {

// Something to keep alive for a run, built on the run's backends once they exist (the binary
// uses it for the northbound API: this layer does not depend on it). Error stops the run.
using RunAttachment = std::function<Expected<std::shared_ptr<void>, std::string>(
    std::shared_ptr<data::Backends>, const data::Coordinator*)>;

struct RunConfig {
  std::size_t printers = 5;
  Algorithm algorithm = Algorithm::kDynamic;
  std::string scenario = "normal";  // normal | anomalies | ppe
  uint64_t seed = 1;
  double factor = 30000;            // simulated minutes per real minute
  double anomaly_probability = 0.15;  // per job, scenario "anomalies"
  double maintenance_min = 60;
  std::string dir;                  // the run's archive goes to dir/archive.db (required)
  std::chrono::seconds timeout{600};
  std::chrono::milliseconds poll_interval{2};
  double jobs_per_printer = 8;
  double ppe_at_min = 480;
  // CBC's budget per decision inside a run. Simulated time runs `factor` times faster, so a
  // 100 ms solve would cost 50 simulated minutes at 30000x; 30 ms keeps a decision's staleness
  // near what a real deployment sees. (fleet_ilp_bench measures the 100 ms case.)
  RunAttachment attach;             // optional
  std::chrono::seconds linger{0};   // keep everything up this long after the last job
  sched::IlpOptions ilp = [] {
    sched::IlpOptions o;
    o.time_limit_ms = 30;
    return o;
  }();
};

struct RunResult {
  bool ok = false;
  std::string error;
  RunConfig cfg;
  std::size_t jobs = 0, finished = 0, urgent_jobs = 0;
  double makespan = 0;       // sim minutes from 0 to the last finished print
  double ppe_makespan = 0;   // from the PPE order's release to its last finished print
  double regular_makespan = 0;  // last finished regular print
  uint64_t aborted = 0, anomalies = 0, maintenances = 0, decisions = 0, ilp_fallbacks = 0,
           ilp_optimal = 0, uploads = 0, http_requests = 0, http_failures = 0;
  double solve_ms_max = 0, solve_ms_mean = 0;
  double real_s = 0;
  nlohmann::json to_json() const;
};

RunResult run_once(const RunConfig& cfg);
// Reads dir's archive only (fleet/run, events, decisions, maintenance) and recomputes the
// figures; error when the archive is missing or holds no run.
Expected<nlohmann::json, std::string> replay(const std::string& archive_path);

}  // namespace sdn::fleet
