// The four fleet schedulers of the case study, as pure functions (fleet state, job batch) ->
// Decision: the Centralized-Baseline, Centralized-FCFS, LPT and the Centralized-Dynamic ILP.
// Every algorithm fills expected_makespan / expected_urgent_makespan with makespans() and
// solve_ms with the wall time of the call. Urgent jobs are always placed with front=true.
#pragma once

#include <cstddef>
#include <vector>

#include "apps/fleet/sched/model.hpp"

namespace sdn::fleet::sched {

// Centralized-Baseline: knows the fleet size only; distributes jobs uniformly (round-robin
// over ALL machines, starting at *cursor, which it advances), ignoring availability and
// state. A null cursor starts at 0. No machines: empty decision with a note.
Decision baseline(const std::vector<Machine>&, const std::vector<Job>&, std::size_t* cursor);

// Centralized-FCFS: jobs in arrival order, each to the available machine with the shortest
// queue (queue_len, counting jobs it placed in this decision; a busy machine counts its
// running job as one more), ties by lowest current_end then index.
Decision fcfs(const std::vector<Machine>&, const std::vector<Job>&);

// Longest processing time first: jobs sorted by print_min descending (stable), each to the
// available machine where it would finish earliest (ready_at + setup + print_min*speed,
// updated as it goes), ties by index. Urgent jobs are placed first with front=true using
// current_end-based finish (and then count against the machine). Placements are listed in
// that processing order.
Decision lpt(const std::vector<Machine>&, const std::vector<Job>&);

struct IlpOptions {
  double time_limit_ms = 100;          // the whole call's budget; CBC gets what is left
  double urgent_weight_epsilon = 0.01;
  bool warm_start = true;              // hand the warm start (below) to CBC as its MIP start
  // Stop when the incumbent is within this fraction of the bound (0: prove optimality).
  // A decision stopped on the gap has optimal=false.
  double relative_gap = 0;
  // Improve LPT's solution by local search (moves and swaps off the most loaded machine,
  // normal jobs only, <= 10% of the budget) before CBC starts. The polished solution then
  // replaces LPT's as the MIP start and as the fallback. Off by default, which keeps
  // dynamic() a pure ILP-vs-LPT comparison; note that on a 50-printer, 20-class batch CBC
  // 2.10 does not improve on LPT within 100 ms (it stalls at the LP bound, ~5% below LPT),
  // while the polish takes < 1 ms and gains ~3-4% (fleet_ilp_bench --polish).
  bool polish = false;
};

// Centralized-Dynamic: the integer linear program, solved with CBC. Jobs are grouped into
// classes of equal (print_min, urgent) -- copies of one order always share a class; orders
// with equal print times share one too, which changes nothing in the model -- and the
// integer variable n[i][k] counts class-k jobs sent to available machine i.
//   Normal jobs only: minimise C s.t. sum_i n[i][k] = N_k and
//     ready_at_i + sum_k n[i][k]*(setup_i + p_k*speed_i) <= C for every available machine.
//   Urgent jobs present (placed front=true): minimise C_u + eps*C, where C is as above over
//     all classes and C_u >= current_end_i*y_i + urgent load_i, with binary y_i >= n[i][k]/N_k
//     for urgent k: C_u is the end of the last urgent job, i.e. expected_urgent_makespan
//     (a machine that gets no urgent job does not bound it).
// Falls back to the warm start's placements -- LPT's, or polished LPT's with
// IlpOptions::polish -- (fell_back=true) when CBC errors, returns no solution, returns one
// worse than the warm start by the same objective, or stops (time limit) without either
// proving optimality or beating it. A proven optimum is taken even when it only ties LPT
// (optimal=true, fell_back=false). Models over 100,000 integer columns skip CBC (fell_back).
// Counts are mapped back onto the concrete jobs in input order; placements list the urgent
// jobs first. solve_ms covers the whole call; CBC is given the budget left after building
// the model less a margin, but cannot stop before its root LP is solved, which at 50
// machines x 200 classes takes ~0.4 s on the dev VM (the call then overruns its limit). CBC
// runs silently and under a process-wide mutex (its command-line driver keeps global
// state), so concurrent calls serialise.
Decision dynamic(const std::vector<Machine>&, const std::vector<Job>&, const IlpOptions& = {});

// The value dynamic() minimises, for any placements: makespans().all when no job is urgent,
// else makespans().urgent + eps * makespans().all.
double ilp_objective(const std::vector<Machine>&, const std::vector<Job>&, const std::vector<Placement>&,
                     double urgent_weight_epsilon);

}  // namespace sdn::fleet::sched
