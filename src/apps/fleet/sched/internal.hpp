// Helpers the algorithm files share; not part of the library's interface.
#pragma once

#include <chrono>
#include <vector>

#include "apps/fleet/sched/model.hpp"

namespace sdn::fleet::sched::detail {

using Stopwatch = std::chrono::steady_clock;
double elapsed_ms(Stopwatch::time_point since);

// Sets expected_makespan and expected_urgent_makespan from makespans().
void summarise(Decision& d, const std::vector<Machine>& machines, const std::vector<Job>& jobs);

bool any_available(const std::vector<Machine>& machines);

// LPT's placements (see lpt() in algorithms.hpp); empty when no machine is available.
std::vector<Placement> lpt_placements(const std::vector<Machine>& machines, const std::vector<Job>& jobs);

}  // namespace sdn::fleet::sched::detail
