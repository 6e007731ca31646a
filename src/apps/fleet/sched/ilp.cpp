// Centralized-Dynamic: builds the class-count ILP (see dynamic() in algorithms.hpp), hands it
// to CBC through its C API, maps the counts back onto job ids, and falls back to LPT when CBC
// has nothing better. CBC 2.10's Cbc_solve runs the cbc command-line driver (CbcMain1), which
// keeps global state, so solves are serialised by a process-wide mutex.
#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "apps/fleet/sched/algorithms.hpp"
#include "apps/fleet/sched/internal.hpp"

namespace sdn::fleet::sched {

double ilp_objective(const std::vector<Machine>& machines, const std::vector<Job>& jobs,
                     const std::vector<Placement>& placements, double urgent_weight_epsilon) {
  Makespans m = makespans(machines, jobs, placements);
  bool any_urgent = std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.urgent; });
  return any_urgent ? m.urgent + urgent_weight_epsilon * m.all : m.all;
}

namespace {

using detail::Stopwatch;

constexpr double kInf = std::numeric_limits<double>::max();
// An incumbent this much worse than LPT by the objective is "worse" (CBC's own tolerances
// are around 1e-7 relative; makespans are hundreds to thousands of minutes).
constexpr double kWorseBy = 1e-6;
// Budget split of IlpOptions::time_limit_ms: at most this share for polishing the warm
// start; CBC is told what is left less a margin (20% of it, at most 20 ms) for the work
// after its last clock check and for mapping its answer back.
constexpr double kPolishShare = 0.1;
constexpr double kCbcMarginShare = 0.2;
constexpr double kCbcMarginMaxMs = 20;
// Models with more integer columns than this are not handed to CBC (LPT / polished LPT is
// used): on the bench machine the root LP alone takes ~0.5 s at 10,000 columns, so this is a
// guard against int overflow and runaway memory, not a tuning knob.
constexpr std::size_t kMaxColumns = 100000;

struct JobClass {
  double print_min = 0;
  bool urgent = false;
  std::vector<std::size_t> jobs;  // indices into the job vector, input order
};

// Classes keyed by (urgent, print_min), in order of first appearance.
std::vector<JobClass> classes_of(const std::vector<Job>& jobs) {
  std::vector<JobClass> out;
  std::map<std::pair<bool, double>, std::size_t> index;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    auto [it, fresh] = index.try_emplace({jobs[j].urgent, jobs[j].print_min}, out.size());
    if (fresh) out.push_back({jobs[j].print_min, jobs[j].urgent, {}});
    out[it->second].jobs.push_back(j);
  }
  return out;
}

// Column and row numbering of the model.
struct Layout {
  std::size_t machines = 0;  // available machines (A)
  std::size_t classes = 0;   // K
  std::size_t urgent = 0;    // urgent classes (U), numbered 0..U-1 in class order
  int n(std::size_t a, std::size_t k) const { return static_cast<int>(a * classes + k); }
  int c() const { return static_cast<int>(machines * classes); }
  int cu() const { return c() + 1; }
  int y(std::size_t a) const { return c() + 2 + static_cast<int>(a); }
  int columns() const { return urgent ? y(machines) : c() + 1; }
  int demand_row(std::size_t k) const { return static_cast<int>(k); }
  int cap_row(std::size_t a) const { return static_cast<int>(classes + a); }
  int urgent_row(std::size_t a) const { return static_cast<int>(classes + machines + a); }
  int link_row(std::size_t a, std::size_t u) const {
    return static_cast<int>(classes + 2 * machines + a * urgent + u);
  }
  int rows() const { return urgent ? link_row(machines, 0) : static_cast<int>(classes + machines); }
};

struct ModelDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};
using ModelPtr = std::unique_ptr<Cbc_Model, ModelDeleter>;

std::mutex& cbc_mutex() {
  static std::mutex m;
  return m;
}

struct Outcome {
  bool has_solution = false;
  bool proven_optimal = false;
  std::vector<std::vector<long>> counts;  // [available machine][class]
  std::string note;
};

std::string status_text(int status, int secondary) {
  switch (secondary) {
    case 0: return "search completed";
    case 1: return "relaxation infeasible";
    case 2: return "stopped on gap";
    case 3: return "stopped on nodes";
    case 4: return "stopped on time";
    case 5: return "stopped on user event";
    case 6: return "stopped on solutions";
    case 7: return "relaxation unbounded";
    case 8: return "stopped on iterations";
    default: return fmt::format("status {} / {}", status, secondary);
  }
}

Outcome solve(const std::vector<Machine>& machines, const std::vector<std::size_t>& avail,
              const std::vector<JobClass>& classes, const std::vector<std::vector<long>>& start,
              const IlpOptions& opt, double seconds) {
  Layout L;
  L.machines = avail.size();
  L.classes = classes.size();
  std::vector<std::size_t> urgent_no(classes.size(), 0);  // class -> urgent number
  for (std::size_t k = 0; k < classes.size(); ++k) {
    if (classes[k].urgent) urgent_no[k] = L.urgent++;
  }
  const double eps = opt.urgent_weight_epsilon;

  // Column-major matrix; row indices increase within each column.
  const int ncols = L.columns();
  std::vector<CoinBigIndex> col_start;
  std::vector<int> row_index;
  std::vector<double> value;
  std::vector<double> col_lb(ncols, 0.0), col_ub(ncols, kInf), obj(ncols, 0.0);
  col_start.reserve(ncols + 1);
  auto entry = [&](int row, double v) {
    row_index.push_back(row);
    value.push_back(v);
  };
  for (std::size_t a = 0; a < L.machines; ++a) {
    const Machine& m = machines[avail[a]];
    for (std::size_t k = 0; k < L.classes; ++k) {
      col_start.push_back(static_cast<CoinBigIndex>(row_index.size()));
      double d = duration(m, classes[k].print_min);
      entry(L.demand_row(k), 1.0);
      entry(L.cap_row(a), d);
      if (classes[k].urgent) {
        entry(L.urgent_row(a), d);
        entry(L.link_row(a, urgent_no[k]), 1.0);
      }
      col_ub[L.n(a, k)] = static_cast<double>(classes[k].jobs.size());
    }
  }
  col_start.push_back(static_cast<CoinBigIndex>(row_index.size()));  // C
  for (std::size_t a = 0; a < L.machines; ++a) entry(L.cap_row(a), -1.0);
  obj[L.c()] = L.urgent ? eps : 1.0;
  col_lb[L.c()] = -kInf;
  if (L.urgent) {
    col_start.push_back(static_cast<CoinBigIndex>(row_index.size()));  // C_u
    for (std::size_t a = 0; a < L.machines; ++a) entry(L.urgent_row(a), -1.0);
    obj[L.cu()] = 1.0;
    col_lb[L.cu()] = -kInf;
    for (std::size_t a = 0; a < L.machines; ++a) {  // y_a
      col_start.push_back(static_cast<CoinBigIndex>(row_index.size()));
      double ce = machines[avail[a]].current_end;
      if (ce != 0) entry(L.urgent_row(a), ce);
      for (std::size_t k = 0; k < L.classes; ++k) {
        if (classes[k].urgent) entry(L.link_row(a, urgent_no[k]), -static_cast<double>(classes[k].jobs.size()));
      }
      col_ub[L.y(a)] = 1.0;
    }
  }
  col_start.push_back(static_cast<CoinBigIndex>(row_index.size()));

  const int nrows = L.rows();
  std::vector<double> row_lb(nrows, -kInf), row_ub(nrows, 0.0);
  for (std::size_t k = 0; k < L.classes; ++k) {
    row_lb[L.demand_row(k)] = row_ub[L.demand_row(k)] = static_cast<double>(classes[k].jobs.size());
  }
  for (std::size_t a = 0; a < L.machines; ++a) row_ub[L.cap_row(a)] = -machines[avail[a]].ready_at;

  Outcome out;
  std::lock_guard lock(cbc_mutex());
  ModelPtr model(Cbc_newModel());
  if (!model) {
    out.note = "cbc: could not create a model";
    return out;
  }
  Cbc_Model* m = model.get();
  Cbc_loadProblem(m, ncols, nrows, col_start.data(), row_index.data(), value.data(), col_lb.data(), col_ub.data(),
                  obj.data(), row_lb.data(), row_ub.data());
  Cbc_setObjSense(m, 1.0);
  std::vector<std::string> names(ncols);
  for (std::size_t a = 0; a < L.machines; ++a) {
    for (std::size_t k = 0; k < L.classes; ++k) names[L.n(a, k)] = fmt::format("n_{}_{}", a, k);
  }
  names[L.c()] = "C";
  if (L.urgent) {
    names[L.cu()] = "Cu";
    for (std::size_t a = 0; a < L.machines; ++a) names[L.y(a)] = fmt::format("y_{}", a);
  }
  // Row names too: with column names but none for rows, CLP's presolve (run inside its
  // Idiot crossover on larger models) reads past the empty row-name vector and crashes
  // (coin-or/Cbc#515).
  for (int row = 0; row < nrows; ++row) Cbc_setRowName(m, row, fmt::format("r{}", row).c_str());
  for (int col = 0; col < ncols; ++col) {
    Cbc_setColName(m, col, names[col].c_str());
    bool integer = col < L.c() || (L.urgent && col >= L.y(0));
    if (integer) Cbc_setInteger(m, col);
  }

  // Quiet: the C API's log level and the driver's own "-log 0" (which also turns off its
  // banner). Wall-clock time limit.
  Cbc_setLogLevel(m, 0);
  Cbc_setParameter(m, "log", "0");
  Cbc_setParameter(m, "slog", "0");
  Cbc_setParameter(m, "timeMode", "elapsed");
  // CGL's preprocessing crashed in CglPreProcess::postProcess when the time limit stopped a
  // 20-printer x 2-class model mid-search (a fleet run with anomalies, reproducible); our models
  // are small and already tight, so it is off.
  Cbc_setParameter(m, "preprocess", "off");
  Cbc_setMaximumSeconds(m, seconds);
  Cbc_setParameter(m, "sec", fmt::format("{:.6f}", seconds).c_str());
  if (opt.relative_gap > 0) {
    Cbc_setAllowableFractionGap(m, opt.relative_gap);
    Cbc_setParameter(m, "ratio", fmt::format("{}", opt.relative_gap).c_str());
  }

  if (!start.empty()) {
    std::vector<const char*> start_names;
    std::vector<double> start_values;
    for (std::size_t a = 0; a < L.machines; ++a) {
      bool urgent_here = false;
      for (std::size_t k = 0; k < L.classes; ++k) {
        if (start[a][k] == 0) continue;
        start_names.push_back(names[L.n(a, k)].c_str());
        start_values.push_back(static_cast<double>(start[a][k]));
        urgent_here = urgent_here || classes[k].urgent;
      }
      if (urgent_here) {
        start_names.push_back(names[L.y(a)].c_str());
        start_values.push_back(1.0);
      }
    }
    Cbc_setMIPStart(m, static_cast<int>(start_names.size()), start_names.data(), start_values.data());
  }

  int status = Cbc_solve(m);
  int secondary = Cbc_secondaryStatus(m);
  out.proven_optimal = Cbc_isProvenOptimal(m) != 0 && secondary != 2;
  out.note = "cbc: " + status_text(status, secondary);
  if (Cbc_isAbandoned(m) != 0) {
    out.note += ", abandoned";
    return out;
  }
  if (Cbc_bestSolution(m) == nullptr || Cbc_getNumCols(m) != ncols) return out;
  const double* x = Cbc_getColSolution(m);
  if (x == nullptr) return out;

  // Round and check the counts: demand met exactly, bounds respected.
  out.counts.assign(L.machines, std::vector<long>(L.classes, 0));
  std::vector<long> sum(L.classes, 0);
  for (std::size_t a = 0; a < L.machines; ++a) {
    for (std::size_t k = 0; k < L.classes; ++k) {
      double v = x[L.n(a, k)];
      if (!std::isfinite(v) || std::fabs(v - std::round(v)) > 1e-4) return out;
      long c = std::lround(v);
      if (c < 0) return out;
      out.counts[a][k] = c;
      sum[k] += c;
    }
  }
  for (std::size_t k = 0; k < L.classes; ++k) {
    if (sum[k] != static_cast<long>(classes[k].jobs.size())) return out;
  }
  out.has_solution = true;
  return out;
}

// Per available machine and class, how many jobs the placements send there.
std::vector<std::vector<long>> counts_of(const std::vector<Placement>& placements, const std::vector<Job>& jobs,
                                         const std::vector<JobClass>& classes,
                                         const std::vector<std::size_t>& avail, std::size_t n_machines) {
  std::vector<std::size_t> class_of(jobs.size(), 0);
  std::map<std::string, std::vector<std::size_t>> by_id;
  for (std::size_t k = 0; k < classes.size(); ++k) {
    for (std::size_t j : classes[k].jobs) class_of[j] = k;
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) by_id[jobs[j].id].push_back(j);
  std::vector<std::size_t> slot(n_machines, avail.size());
  for (std::size_t a = 0; a < avail.size(); ++a) slot[avail[a]] = a;
  std::vector<std::vector<long>> out(avail.size(), std::vector<long>(classes.size(), 0));
  for (const Placement& p : placements) {
    auto it = by_id.find(p.job);
    if (it == by_id.end() || it->second.empty() || p.machine >= n_machines || slot[p.machine] == avail.size()) continue;
    std::size_t j = it->second.front();
    it->second.erase(it->second.begin());
    ++out[slot[p.machine]][class_of[j]];
  }
  return out;
}

// Counts -> concrete placements: class members in input order fill the machines in order;
// placements list urgent jobs first, each group in input order.
std::vector<Placement> placements_of(const std::vector<std::vector<long>>& counts, const std::vector<Job>& jobs,
                                     const std::vector<JobClass>& classes, const std::vector<std::size_t>& avail) {
  std::vector<std::size_t> machine_of(jobs.size(), 0);
  for (std::size_t k = 0; k < classes.size(); ++k) {
    std::size_t next = 0;
    for (std::size_t a = 0; a < avail.size(); ++a) {
      for (long c = 0; c < counts[a][k]; ++c) machine_of[classes[k].jobs[next++]] = avail[a];
    }
  }
  std::vector<Placement> out;
  out.reserve(jobs.size());
  for (bool urgent : {true, false}) {
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].urgent == urgent) out.push_back({jobs[j].id, machine_of[j], urgent});
    }
  }
  return out;
}

// Improves a count matrix by local search on the normal classes (urgent counts stay put, so
// C_u is unchanged and only C can drop): repeatedly take the most loaded machine and apply
// the best move of one of its jobs to another machine, or else the best swap with a job of
// another machine, that leaves both machines below the current maximum. Every step lowers
// (makespan, number of machines at it) lexicographically, so it ends; it also stops at the
// deadline or after kMaxPolishSteps.
constexpr int kMaxPolishSteps = 20000;

void polish(std::vector<std::vector<long>>& counts, const std::vector<Machine>& machines,
            const std::vector<std::size_t>& avail, const std::vector<JobClass>& classes,
            Stopwatch::time_point deadline) {
  const std::size_t A = avail.size(), K = classes.size();
  std::vector<std::vector<double>> d(A, std::vector<double>(K));
  std::vector<double> load(A);
  for (std::size_t a = 0; a < A; ++a) {
    const Machine& m = machines[avail[a]];
    load[a] = m.ready_at;
    for (std::size_t k = 0; k < K; ++k) {
      d[a][k] = duration(m, classes[k].print_min);
      load[a] += static_cast<double>(counts[a][k]) * d[a][k];
    }
  }
  auto present = [&](std::size_t a) {
    std::vector<std::size_t> ks;
    for (std::size_t k = 0; k < K; ++k) {
      if (counts[a][k] > 0 && !classes[k].urgent) ks.push_back(k);
    }
    return ks;
  };
  std::vector<std::vector<std::size_t>> nz(A);
  for (std::size_t a = 0; a < A; ++a) nz[a] = present(a);
  for (int step = 0; step < kMaxPolishSteps; ++step) {
    if ((step & 63) == 0 && Stopwatch::now() >= deadline) return;
    std::size_t top = static_cast<std::size_t>(std::max_element(load.begin(), load.end()) - load.begin());
    const double M = load[top];
    const double tol = 1e-9 * std::max(1.0, std::fabs(M));
    // best candidate: (new max of the two machines, from-class, to-machine, back-class or K)
    double best = M - tol;
    std::size_t bk = K, bb = A, bl = K;
    for (std::size_t k : nz[top]) {
      for (std::size_t b = 0; b < A; ++b) {
        if (b == top) continue;
        double na = M - d[top][k], nb = load[b] + d[b][k];
        if (std::max(na, nb) < best) {
          best = std::max(na, nb);
          bk = k, bb = b, bl = K;
        }
      }
    }
    if (bk == K) {
      for (std::size_t k : nz[top]) {
        for (std::size_t b = 0; b < A; ++b) {
          if (b == top) continue;
          for (std::size_t l : nz[b]) {
            if (l == k) continue;
            double na = M - d[top][k] + d[top][l], nb = load[b] - d[b][l] + d[b][k];
            if (std::max(na, nb) < best) {
              best = std::max(na, nb);
              bk = k, bb = b, bl = l;
            }
          }
        }
      }
    }
    if (bk == K) return;
    --counts[top][bk];
    ++counts[bb][bk];
    load[top] -= d[top][bk];
    load[bb] += d[bb][bk];
    if (bl != K) {
      --counts[bb][bl];
      ++counts[top][bl];
      load[bb] -= d[bb][bl];
      load[top] += d[top][bl];
    }
    nz[top] = present(top);
    nz[bb] = present(bb);
  }
}

bool finite_inputs(const std::vector<Machine>& machines, const std::vector<Job>& jobs) {
  for (const Machine& m : machines) {
    if (m.available && !(std::isfinite(m.current_end) && std::isfinite(m.ready_at) && std::isfinite(m.setup) &&
                         std::isfinite(m.speed))) {
      return false;
    }
  }
  return std::all_of(jobs.begin(), jobs.end(), [](const Job& j) { return std::isfinite(j.print_min); });
}

}  // namespace

Decision dynamic(const std::vector<Machine>& machines, const std::vector<Job>& jobs, const IlpOptions& opt) {
  auto t0 = Stopwatch::now();
  Decision d;
  d.algorithm = "dynamic";
  auto finish = [&](Decision& out) -> Decision {
    detail::summarise(out, machines, jobs);
    out.solve_ms = detail::elapsed_ms(t0);
    return std::move(out);
  };
  std::vector<std::size_t> avail;
  for (std::size_t i = 0; i < machines.size(); ++i) {
    if (machines[i].available) avail.push_back(i);
  }
  if (avail.empty()) {
    d.note = "no machine available";
    return finish(d);
  }
  if (jobs.empty()) {
    d.optimal = true;
    d.note = "no jobs";
    return finish(d);
  }

  std::vector<Placement> fallback = detail::lpt_placements(machines, jobs);
  const double eps = opt.urgent_weight_epsilon;
  auto use_fallback = [&](std::string note) -> Decision {
    d.placements = fallback;
    d.fell_back = true;
    d.note = std::move(note);
    return finish(d);
  };
  if (!finite_inputs(machines, jobs) || !std::isfinite(eps) || !std::isfinite(opt.time_limit_ms)) {
    return use_fallback("non-finite input: lpt placements");
  }

  // One job or one machine: the exact answer by enumeration, without CBC (whose crunch step
  // asserts on such degenerate models: OsiClpSolverInterface::crunch, CBC 2.10.8).
  if (jobs.size() == 1 || avail.size() == 1) {
    std::vector<Placement> best;
    double best_obj = std::numeric_limits<double>::infinity();
    for (std::size_t i : jobs.size() == 1 ? avail : std::vector<std::size_t>{avail.front()}) {
      std::vector<Placement> p;
      for (const auto& j : jobs) p.push_back({j.id, i, j.urgent});
      double obj = ilp_objective(machines, jobs, p, eps);
      if (obj < best_obj) {
        best_obj = obj;
        best = std::move(p);
      }
    }
    d.placements = std::move(best);
    d.optimal = true;
    d.note = jobs.size() == 1 ? "one job: best machine by enumeration" : "one machine available";
    return finish(d);
  }

  std::vector<JobClass> classes = classes_of(jobs);
  // The warm start, which is also what we fall back to: LPT, optionally polished.
  std::vector<std::vector<long>> start = counts_of(fallback, jobs, classes, avail, machines.size());
  std::string start_name = "lpt";
  if (opt.polish) {
    auto budget = std::chrono::duration<double, std::milli>(opt.time_limit_ms * kPolishShare);
    polish(start, machines, avail, classes, t0 + std::chrono::duration_cast<Stopwatch::duration>(budget));
    std::vector<Placement> polished = placements_of(start, jobs, classes, avail);
    if (ilp_objective(machines, jobs, polished, eps) < ilp_objective(machines, jobs, fallback, eps)) {
      fallback = std::move(polished);
      start_name = "polished lpt";
    }
  }
  const double start_obj = ilp_objective(machines, jobs, fallback, eps);
  // CBC gets what is left of the budget less the margin, at least 1 ms.
  double left_ms = opt.time_limit_ms - detail::elapsed_ms(t0);
  left_ms = std::max(left_ms - std::min(left_ms * kCbcMarginShare, kCbcMarginMaxMs), 1.0);
  if (avail.size() * classes.size() > kMaxColumns) {
    return use_fallback(fmt::format("model too large ({} machines x {} classes): {} placements", avail.size(),
                                    classes.size(), start_name));
  }
  Outcome r;
  try {
    r = solve(machines, avail, classes, opt.warm_start ? start : std::vector<std::vector<long>>{}, opt,
              left_ms / 1000.0);
  } catch (const std::exception& e) {  // CBC is C++ behind its C API; keep its throws in here
    return use_fallback(fmt::format("cbc threw: {}: {} placements", e.what(), start_name));
  } catch (...) {
    return use_fallback(fmt::format("cbc threw: {} placements", start_name));
  }
  if (!r.has_solution) return use_fallback(fmt::format("{}, no usable solution: {} placements", r.note, start_name));

  std::vector<Placement> mine = placements_of(r.counts, jobs, classes, avail);
  double mine_obj = ilp_objective(machines, jobs, mine, eps);
  double tol = kWorseBy * std::max(1.0, std::fabs(start_obj));
  if (mine_obj > start_obj + tol || (!r.proven_optimal && mine_obj > start_obj - tol)) {
    return use_fallback(fmt::format("{}, incumbent {:.3f} not better than {} {:.3f}: {} placements", r.note,
                                    mine_obj, start_name, start_obj, start_name));
  }
  d.placements = std::move(mine);
  d.optimal = r.proven_optimal;
  d.note = r.proven_optimal ? r.note : fmt::format("{}, improved {} {:.3f} to {:.3f}", r.note, start_name,
                                                  start_obj, mine_obj);
  return finish(d);
}

}  // namespace sdn::fleet::sched
