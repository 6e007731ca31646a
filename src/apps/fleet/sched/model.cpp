// Finish-time arithmetic shared by every algorithm and by the tests, and the JSON form of a
// decision (what the scheduler app logs and the experiment runner stores).
#include "apps/fleet/sched/model.hpp"

#include <algorithm>
#include <unordered_map>

namespace sdn::fleet::sched {

nlohmann::json Decision::to_json() const {
  nlohmann::json places = nlohmann::json::array();
  for (const auto& p : placements) {
    places.push_back({{"job", p.job}, {"machine", p.machine}, {"front", p.front}});
  }
  return {{"algorithm", algorithm},
          {"placements", std::move(places)},
          {"expected_makespan", expected_makespan},
          {"expected_urgent_makespan", expected_urgent_makespan},
          {"solve_ms", solve_ms},
          {"optimal", optimal},
          {"fell_back", fell_back},
          {"note", note}};
}

namespace {

// id -> indices of the jobs carrying it, consumed front to back so duplicate ids still map
// one placement to one job.
class JobIndex {
 public:
  explicit JobIndex(const std::vector<Job>& jobs) {
    for (std::size_t j = 0; j < jobs.size(); ++j) by_id_[jobs[j].id].list.push_back(j);
  }
  // The next unused job with this id, or `none` when there is none left.
  std::size_t take(const std::string& id, std::size_t none) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return none;
    Slot& s = it->second;
    if (s.next >= s.list.size()) return none;
    return s.list[s.next++];
  }

 private:
  struct Slot {
    std::vector<std::size_t> list;
    std::size_t next = 0;
  };
  std::unordered_map<std::string, Slot> by_id_;
};

struct Trace {
  Finish finish;
  std::vector<bool> placed;  // machine received at least one placement
};

Trace trace(const std::vector<Machine>& machines, const std::vector<Job>& jobs,
            const std::vector<Placement>& placements) {
  const std::size_t n = machines.size();
  std::vector<double> front(n, 0.0);
  std::vector<bool> front_urgent(n, false);
  std::vector<std::size_t> job_of(placements.size(), jobs.size());
  JobIndex index(jobs);
  Trace t;
  t.placed.assign(n, false);
  // Pass 1: the front blocks, which shift everything appended.
  for (std::size_t k = 0; k < placements.size(); ++k) {
    const Placement& p = placements[k];
    if (p.machine >= n) continue;
    std::size_t j = index.take(p.job, jobs.size());
    if (j == jobs.size()) continue;
    job_of[k] = j;
    t.placed[p.machine] = true;
    if (!p.front) continue;
    front[p.machine] += duration(machines[p.machine], jobs[j].print_min);
    if (jobs[j].urgent) front_urgent[p.machine] = true;
  }
  t.finish.all.resize(n);
  t.finish.urgent.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    t.finish.all[i] = machines[i].ready_at + front[i];
    if (front_urgent[i]) t.finish.urgent[i] = machines[i].current_end + front[i];
  }
  // Pass 2: appended jobs in placement order.
  for (std::size_t k = 0; k < placements.size(); ++k) {
    const Placement& p = placements[k];
    if (job_of[k] == jobs.size() || p.front) continue;
    const Job& job = jobs[job_of[k]];
    t.finish.all[p.machine] += duration(machines[p.machine], job.print_min);
    if (job.urgent) t.finish.urgent[p.machine] = std::max(t.finish.urgent[p.machine], t.finish.all[p.machine]);
  }
  return t;
}

}  // namespace

Finish finish_times(const std::vector<Machine>& machines, const std::vector<Job>& jobs,
                    const std::vector<Placement>& placements) {
  return trace(machines, jobs, placements).finish;
}

Makespans makespans(const std::vector<Machine>& machines, const std::vector<Job>& jobs,
                    const std::vector<Placement>& placements) {
  Trace t = trace(machines, jobs, placements);
  Makespans out;
  for (std::size_t i = 0; i < machines.size(); ++i) {
    if (machines[i].available || t.placed[i]) out.all = std::max(out.all, t.finish.all[i]);
    out.urgent = std::max(out.urgent, t.finish.urgent[i]);
  }
  return out;
}

}  // namespace sdn::fleet::sched
