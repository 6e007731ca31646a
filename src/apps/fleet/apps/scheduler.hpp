// The Job Scheduler app: takes orders from the Job Creator and jobs handed back by the fleet
// twin, and places them on printers with one of the paper's four algorithms. Each algorithm
// subscribes to a different amount of the fleet's data:
//   decentralized  each printer's own state only: an idle printer with an empty queue claims the
//                  next whole order (urgent first); a returned job is reprinted where it was
//   baseline       the fleet size only (fleet/printers): jobs round-robin over all printers
//   fcfs           + machine and queue twins: each job to the available printer with the
//                  shortest queue
//   dynamic        + everything the twins know: the ILP (sched::dynamic, CBC) on availability,
//                  setup time, speed and expected queue finish time; urgent jobs pre-empt
// Every decision is archived on fleet/decisions; placements go to the driver as commands.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/fleet/apps/common.hpp"
#include "apps/fleet/assets/sim_clock.hpp"
#include "apps/fleet/sched/algorithms.hpp"
#include "data/due.hpp"

namespace sdn::fleet {

enum class Algorithm { kDecentralized, kBaseline, kFcfs, kDynamic };
std::string_view to_string(Algorithm a);
std::optional<Algorithm> algorithm_from(std::string_view s);

struct SchedulerConfig {
  Algorithm algorithm = Algorithm::kDynamic;
  uint64_t seed = 1;  // decentralized: which idle printer looks at the board first
  sched::IlpOptions ilp;
};

struct SchedulerStats {
  uint64_t decisions = 0, jobs_placed = 0, returned = 0, ilp_fallbacks = 0, ilp_optimal = 0,
           bad_records = 0;
  double solve_ms_max = 0, solve_ms_sum = 0;
};

class Scheduler {
 public:
  static Expected<std::unique_ptr<Scheduler>, std::string> start(
      std::shared_ptr<data::Backends> b, SchedulerConfig cfg,
      std::shared_ptr<const SimClock> clock);
  ~Scheduler();
  SchedulerStats stats() const;

 private:
  struct Impl;
  explicit Scheduler(std::unique_ptr<Impl> i);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::fleet
