// The three list schedulers: Centralized-Baseline (round-robin), Centralized-FCFS (shortest
// queue) and LPT (longest processing time first, earliest finish). LPT is also the ILP's
// warm start and fallback.
#include <algorithm>
#include <chrono>
#include <numeric>

#include "apps/fleet/sched/algorithms.hpp"
#include "apps/fleet/sched/internal.hpp"

namespace sdn::fleet::sched {

namespace detail {

double elapsed_ms(Stopwatch::time_point since) {
  return std::chrono::duration<double, std::milli>(Stopwatch::now() - since).count();
}

void summarise(Decision& d, const std::vector<Machine>& machines, const std::vector<Job>& jobs) {
  Makespans m = makespans(machines, jobs, d.placements);
  d.expected_makespan = m.all;
  d.expected_urgent_makespan = m.urgent;
}

bool any_available(const std::vector<Machine>& machines) {
  return std::any_of(machines.begin(), machines.end(), [](const Machine& m) { return m.available; });
}

std::vector<Placement> lpt_placements(const std::vector<Machine>& machines, const std::vector<Job>& jobs) {
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Urgent first, then longest first; stable keeps arrival order among equals.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (jobs[a].urgent != jobs[b].urgent) return jobs[a].urgent;
    return jobs[a].print_min > jobs[b].print_min;
  });
  std::vector<double> front(machines.size(), 0.0);  // urgent load inserted at the front
  std::vector<double> back(machines.size(), 0.0);   // normal load appended
  std::vector<Placement> out;
  out.reserve(jobs.size());
  for (std::size_t j : order) {
    const Job& job = jobs[j];
    std::size_t best = machines.size();
    double best_end = 0;
    for (std::size_t i = 0; i < machines.size(); ++i) {
      const Machine& m = machines[i];
      if (!m.available) continue;
      double start = job.urgent ? m.current_end + front[i] : m.ready_at + front[i] + back[i];
      double end = start + duration(m, job.print_min);
      if (best == machines.size() || end < best_end) {
        best = i;
        best_end = end;
      }
    }
    if (best == machines.size()) return {};
    (job.urgent ? front : back)[best] += duration(machines[best], job.print_min);
    out.push_back({job.id, best, job.urgent});
  }
  return out;
}

}  // namespace detail

using detail::Stopwatch;

Decision baseline(const std::vector<Machine>& machines, const std::vector<Job>& jobs, std::size_t* cursor) {
  auto t0 = Stopwatch::now();
  Decision d;
  d.algorithm = "baseline";
  if (machines.empty()) {
    d.note = "no machines";
  } else {
    std::size_t next = cursor ? *cursor % machines.size() : 0;
    d.placements.reserve(jobs.size());
    for (const Job& job : jobs) {
      d.placements.push_back({job.id, next, job.urgent});
      next = (next + 1) % machines.size();
    }
    if (cursor) *cursor = next;
  }
  detail::summarise(d, machines, jobs);
  d.solve_ms = detail::elapsed_ms(t0);
  return d;
}

Decision fcfs(const std::vector<Machine>& machines, const std::vector<Job>& jobs) {
  auto t0 = Stopwatch::now();
  Decision d;
  d.algorithm = "fcfs";
  if (!detail::any_available(machines)) {
    d.note = "no machine available";
  } else {
    std::vector<long> queue(machines.size());
    for (std::size_t i = 0; i < machines.size(); ++i) {
      queue[i] = machines[i].queue_len + (machines[i].busy ? 1 : 0);
    }
    d.placements.reserve(jobs.size());
    for (const Job& job : jobs) {
      std::size_t best = machines.size();
      for (std::size_t i = 0; i < machines.size(); ++i) {
        if (!machines[i].available) continue;
        if (best == machines.size() || queue[i] < queue[best] ||
            (queue[i] == queue[best] && machines[i].current_end < machines[best].current_end)) {
          best = i;
        }
      }
      ++queue[best];
      d.placements.push_back({job.id, best, job.urgent});
    }
  }
  detail::summarise(d, machines, jobs);
  d.solve_ms = detail::elapsed_ms(t0);
  return d;
}

Decision lpt(const std::vector<Machine>& machines, const std::vector<Job>& jobs) {
  auto t0 = Stopwatch::now();
  Decision d;
  d.algorithm = "lpt";
  if (!detail::any_available(machines)) {
    d.note = "no machine available";
  } else {
    d.placements = detail::lpt_placements(machines, jobs);
  }
  detail::summarise(d, machines, jobs);
  d.solve_ms = detail::elapsed_ms(t0);
  return d;
}

}  // namespace sdn::fleet::sched
