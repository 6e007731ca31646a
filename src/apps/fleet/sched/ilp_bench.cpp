// fleet_ilp_bench: times the Centralized-Dynamic ILP on random heterogeneous fleets and
// compares its makespan with LPT's (and FCFS / baseline for context). Prints a table and
// optionally writes every run as JSON.
//   fleet_ilp_bench --machines 50 --jobs 200 --orders 20 --repeat 20 --seed 1 --json out.json
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/fleet/sched/algorithms.hpp"

namespace {

using namespace sdn::fleet::sched;

struct Config {
  int machines = 50;
  int jobs = 200;
  int orders = 20;
  int urgent = 0;  // how many of the jobs (whole orders, taken first) are urgent
  int repeat = 20;
  unsigned long seed = 1;
  double time_limit_ms = 100;
  double gap = 0;
  bool no_warm_start = false;
  bool polish = false;
  std::string json;
};

struct Instance {
  std::vector<Machine> machines;
  std::vector<Job> jobs;
};

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * std::generate_canonical<double, 53>(rng);
}

// Triangular(lo, mode, hi) by inverting its CDF.
double triangular(std::mt19937_64& rng, double lo, double mode, double hi) {
  double u = std::generate_canonical<double, 53>(rng);
  double f = (mode - lo) / (hi - lo);
  if (u < f) return lo + std::sqrt(u * (hi - lo) * (mode - lo));
  return hi - std::sqrt((1 - u) * (hi - lo) * (hi - mode));
}

Instance make_instance(const Config& c, unsigned long seed) {
  std::mt19937_64 rng(seed);
  Instance in;
  for (int i = 0; i < c.machines; ++i) {
    Machine m;
    m.name = fmt::format("um3-{:02}", i);
    m.speed = uniform(rng, 0.8, 1.3);
    m.setup = uniform(rng, 10, 35);
    m.ready_at = uniform(rng, 0, 600);
    m.current_end = m.ready_at * uniform(rng, 0, 1);
    m.busy = m.current_end > 0;
    m.queue_len = m.ready_at > m.current_end ? static_cast<int>(uniform(rng, 1, 4)) : 0;
    in.machines.push_back(m);
  }
  const int orders = std::max(1, std::min(c.orders, c.jobs));
  std::vector<double> print(orders);
  for (double& p : print) p = triangular(rng, 48, 240, 600);
  for (int j = 0; j < c.jobs; ++j) {
    int o = static_cast<int>(static_cast<long>(j) * orders / c.jobs);  // contiguous, even split
    in.jobs.push_back({fmt::format("job-{:03}", j), fmt::format("order-{:03}", o), print[o], j < c.urgent});
  }
  return in;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"fleet_ilp_bench: the Centralized-Dynamic ILP on random fleets"};
  app.add_option("--machines", c.machines)->check(CLI::Range(1, 100000));
  app.add_option("--jobs", c.jobs)->check(CLI::Range(0, 1000000));
  app.add_option("--orders", c.orders, "distinct print times (classes)")->check(CLI::Range(1, 1000000));
  app.add_option("--urgent", c.urgent, "the first N jobs are urgent")->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", c.repeat)->check(CLI::Range(1, 100000));
  app.add_option("--seed", c.seed);
  app.add_option("--time-limit-ms", c.time_limit_ms)->check(CLI::PositiveNumber);
  app.add_option("--gap", c.gap, "relative gap at which CBC may stop (0: prove optimality)");
  app.add_flag("--no-warm-start", c.no_warm_start);
  app.add_flag("--polish", c.polish, "polish the LPT warm start by local search first (IlpOptions::polish)");
  app.add_option("--json", c.json, "write every run here");
  CLI11_PARSE(app, argc, argv);

  IlpOptions opt;
  opt.time_limit_ms = c.time_limit_ms;
  opt.relative_gap = c.gap;
  opt.warm_start = !c.no_warm_start;
  opt.polish = c.polish;

  std::vector<double> ms, ratio;
  int optimal = 0, fell_back = 0, better = 0;
  nlohmann::json runs = nlohmann::json::array();
  for (int r = 0; r < c.repeat; ++r) {
    Instance in = make_instance(c, c.seed * 1000003ul + static_cast<unsigned long>(r));
    std::size_t cursor = 0;
    Decision b = baseline(in.machines, in.jobs, &cursor);
    Decision f = fcfs(in.machines, in.jobs);
    Decision l = lpt(in.machines, in.jobs);
    Decision d = dynamic(in.machines, in.jobs, opt);
    double lo = ilp_objective(in.machines, in.jobs, l.placements, opt.urgent_weight_epsilon);
    double dob = ilp_objective(in.machines, in.jobs, d.placements, opt.urgent_weight_epsilon);
    ms.push_back(d.solve_ms);
    ratio.push_back(lo > 0 ? dob / lo : 1.0);
    optimal += d.optimal ? 1 : 0;
    fell_back += d.fell_back ? 1 : 0;
    better += dob < lo - 1e-6 ? 1 : 0;
    runs.push_back({{"run", r},
                    {"solve_ms", d.solve_ms},
                    {"optimal", d.optimal},
                    {"fell_back", d.fell_back},
                    {"note", d.note},
                    {"makespan", {{"baseline", b.expected_makespan}, {"fcfs", f.expected_makespan},
                                  {"lpt", l.expected_makespan}, {"dynamic", d.expected_makespan}}},
                    {"urgent_makespan", {{"lpt", l.expected_urgent_makespan},
                                         {"dynamic", d.expected_urgent_makespan}}},
                    {"objective", {{"lpt", lo}, {"dynamic", dob}}},
                    {"lpt_ms", l.solve_ms}});
  }

  double mean_ratio = 0;
  for (double x : ratio) mean_ratio += x;
  mean_ratio /= static_cast<double>(ratio.size());
  fmt::print("fleet_ilp_bench: {} machines x {} jobs, {} orders, {} urgent, {} runs, limit {} ms, gap {}, warm start {}, polish {}\n",
             c.machines, c.jobs, c.orders, c.urgent, c.repeat, c.time_limit_ms, c.gap, opt.warm_start ? "on" : "off",
             opt.polish ? "on" : "off");
  fmt::print("  dynamic solve ms   p50 {:8.2f}   p95 {:8.2f}   max {:8.2f}\n", percentile(ms, 0.5),
             percentile(ms, 0.95), percentile(ms, 1.0));
  fmt::print("  optimal {}/{}   fell_back {}/{}   better than lpt {}/{}\n", optimal, c.repeat, fell_back, c.repeat,
             better, c.repeat);
  fmt::print("  objective dynamic/lpt   mean {:.4f}   min {:.4f}   max {:.4f}\n", mean_ratio,
             *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()));
  fmt::print("  {:>4} {:>9} {:>9} {:>9} {:>9} {:>8}  {}\n", "run", "baseline", "fcfs", "lpt", "dynamic", "ms", "status");
  for (const auto& run : runs) {
    const auto& mk = run["makespan"];
    fmt::print("  {:>4} {:9.1f} {:9.1f} {:9.1f} {:9.1f} {:8.2f}  {}{}\n", run["run"].get<int>(),
               mk["baseline"].get<double>(), mk["fcfs"].get<double>(), mk["lpt"].get<double>(),
               mk["dynamic"].get<double>(), run["solve_ms"].get<double>(),
               run["optimal"].get<bool>() ? "optimal " : "", run["note"].get<std::string>());
  }

  if (!c.json.empty()) {
    nlohmann::json out = {
        {"config", {{"machines", c.machines}, {"jobs", c.jobs}, {"orders", c.orders}, {"urgent", c.urgent},
                    {"repeat", c.repeat}, {"seed", c.seed}, {"time_limit_ms", c.time_limit_ms}, {"gap", c.gap},
                    {"warm_start", opt.warm_start}, {"polish", opt.polish}}},
        {"summary", {{"solve_ms_p50", percentile(ms, 0.5)}, {"solve_ms_p95", percentile(ms, 0.95)},
                     {"solve_ms_max", percentile(ms, 1.0)}, {"optimal", optimal}, {"fell_back", fell_back},
                     {"better_than_lpt", better}, {"objective_ratio_mean", mean_ratio}}},
        {"runs", runs}};
    std::ofstream f(c.json);
    f << out.dump(2) << '\n';
    if (!f) {
      fmt::print(stderr, "fleet_ilp_bench: cannot write {}\n", c.json);
      return 1;
    }
  }
  return 0;
}
