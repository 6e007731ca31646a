// The scheduling model of the 3D-printer fleet: what the scheduler knows about each printer
// (Machine) and each print job (Job), what it decides (Placement, Decision), and the expected
// per-printer finish times a set of placements leads to. Times are absolute sim minutes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sdn::fleet::sched {

struct Machine {
  std::string name;
  bool available = true;     // false: in maintenance, error or otherwise not accepting jobs
  double current_end = 0;    // sim minute (absolute) at which the machine's current job (incl. its setup and cleanup) ends; == now when idle
  double ready_at = 0;       // sim minute at which everything already queued on it is expected to be done (queue twin's finish time); >= current_end
  double setup = 0;          // per-job overhead in minutes (pre_print + post_print + bed cleanup)
  double speed = 1.0;        // print-time multiplier: a job of print_min takes print_min*speed here
  int queue_len = 0;         // jobs queued (not counting the running one)
  bool busy = false;         // running a job right now (fcfs counts it as one more in the queue)
};

struct Job {
  std::string id;
  std::string order;         // jobs of one order are copies of one part: same print_min
  double print_min = 0;      // slicer estimate
  bool urgent = false;       // PPE: goes to the front of a queue
};

struct Placement {
  std::string job;
  std::size_t machine = 0;   // index into the machines vector
  bool front = false;        // insert at the front of the machine's queue (after its running job)
};

struct Decision {
  std::string algorithm;                // "baseline", "fcfs", "lpt", "dynamic"
  std::vector<Placement> placements;    // one per job, every job placed (unless no machine is available: then empty + note)
  double expected_makespan = 0;         // max over machines of expected finish after applying the placements (absolute sim minute)
  double expected_urgent_makespan = 0;  // same for the urgent jobs only (0 if none)
  double solve_ms = 0;                  // wall time of the decision
  bool optimal = false;                 // dynamic: CBC proved optimality
  bool fell_back = false;               // dynamic: CBC failed/timed out without a better solution; placements are LPT's
  std::string note;                     // e.g. CBC status text
  nlohmann::json to_json() const;
};

// Time a job occupies machine m: its setup plus the print scaled by the machine's speed.
inline double duration(const Machine& m, double print_min) { return m.setup + print_min * m.speed; }

// Expected finish times per machine (absolute sim minutes) after the placements: normal jobs
// are appended after ready_at; front (urgent) jobs are inserted after current_end and push the
// machine's queue back by their duration (setup + print_min*speed each).
//   all[i]    = ready_at + front load + appended load (== ready_at when nothing was placed)
//   urgent[i] = when machine i's last urgent job ends, 0 if it got none: an urgent job in the
//               front block counts as ending with the block (current_end + front load), one
//               appended (front=false) ends at its place in the queue, in placement order
// Placements naming an unknown job or an out-of-range machine are ignored. Jobs are matched to
// placements by id; duplicate ids are consumed in order.
struct Finish {
  std::vector<double> all;
  std::vector<double> urgent;
};
Finish finish_times(const std::vector<Machine>&, const std::vector<Job>&, const std::vector<Placement>&);

// The two summary figures of a set of placements. The makespan is taken over the machines
// that are available or received a placement (an unavailable idle printer's stale ready_at
// is not part of the batch's schedule); 0 when there is no such machine.
struct Makespans {
  double all = 0;
  double urgent = 0;
};
Makespans makespans(const std::vector<Machine>&, const std::vector<Job>&, const std::vector<Placement>&);

}  // namespace sdn::fleet::sched
