// `sdnator fleet printers|run|experiment|replay` (cli.hpp).
#include "apps/fleet/apps/cli.hpp"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/fleet/apps/run.hpp"
#include "apps/fleet/assets/assets.hpp"

namespace sdn::fleet {

namespace {

struct Opts {
  CLI::App* printers = nullptr;
  CLI::App* run = nullptr;
  CLI::App* experiment = nullptr;
  CLI::App* replay = nullptr;
  // printers
  std::size_t count = 5;
  uint16_t port = 0;
  double anomaly_probability = 0;
  // run / experiment
  RunConfig rc;
  std::string algorithm = "dynamic";
  std::string json_out;
  std::vector<std::size_t> sizes{5, 10, 20, 50};
  std::vector<uint64_t> seeds{1, 2, 3};
  std::vector<std::string> scenarios{"normal", "anomalies", "ppe"};
  std::vector<std::string> algorithms{"decentralized", "baseline", "fcfs", "dynamic"};
  double sim_min_per_poll = 0;  // experiment: factor chosen per fleet size (0 = use --factor)
  std::string archive;
  std::string api;
  int linger_s = 0;
  ApiFactory api_factory;
};
Opts& opts() {
  static Opts o;
  return o;
}

int serve_printers(const Opts& o) {
  AssetsConfig ac;
  ac.printers = make_fleet(o.count, o.rc.seed);
  ac.factor = o.rc.factor;
  ac.seed = o.rc.seed;
  ac.base_port = o.port;
  ac.anomaly_probability = o.anomaly_probability;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the servers' threads start
  auto assets = MachineAssets::start(ac);
  if (!assets) {
    std::fprintf(stderr, "sdnator fleet printers: %s\n", assets.error().c_str());
    return 2;
  }
  for (const auto& e : (*assets)->endpoints())
    std::printf("%s http://127.0.0.1:%u/api/v1\n", e.name.c_str(), e.port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}

void print_result(const RunResult& r) {
  std::printf("%-13s %-9s %3zu printers seed %-3llu  makespan %7.0f min  ppe %6.0f min  jobs %zu/%zu  "
              "anomalies %llu  decisions %llu (max %.1f ms, %llu fallbacks)  %.1f s%s%s\n",
              std::string(to_string(r.cfg.algorithm)).c_str(), r.cfg.scenario.c_str(),
              r.cfg.printers, static_cast<unsigned long long>(r.cfg.seed), r.makespan,
              r.ppe_makespan, r.finished, r.jobs, static_cast<unsigned long long>(r.anomalies),
              static_cast<unsigned long long>(r.decisions), r.solve_ms_max,
              static_cast<unsigned long long>(r.ilp_fallbacks), r.real_s, r.ok ? "" : "  FAILED: ",
              r.ok ? "" : r.error.c_str());
  std::fflush(stdout);
}

bool write_json(const std::string& path, const Json& j) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

int run_one(Opts& o) {
  auto a = algorithm_from(o.algorithm);
  if (!a) {
    std::fprintf(stderr, "unknown scheduler '%s' (decentralized, baseline, fcfs, dynamic)\n",
                 o.algorithm.c_str());
    return 2;
  }
  o.rc.algorithm = *a;
  if (!o.api.empty()) {
    if (!o.api_factory) {
      std::fprintf(stderr, "this binary has no northbound API\n");
      return 2;
    }
    o.rc.attach = o.api_factory(o.api);
  }
  o.rc.linger = std::chrono::seconds(o.linger_s);
  RunResult r = run_once(o.rc);
  print_result(r);
  if (!write_json(o.json_out, r.to_json())) return 2;
  return r.ok ? 0 : 1;
}

int run_experiment(Opts& o) {
  Json all = Json::array();
  int failures = 0;
  std::vector<Algorithm> algs;
  for (const auto& s : o.algorithms) {
    auto a = algorithm_from(s);
    if (!a) {
      std::fprintf(stderr, "unknown scheduler '%s'\n", s.c_str());
      return 2;
    }
    algs.push_back(*a);
  }
  for (std::size_t n : o.sizes)
    for (const auto& scn : o.scenarios)
      for (uint64_t seed : o.seeds)
        for (Algorithm a : algs) {
          RunConfig rc = o.rc;
          rc.printers = n;
          rc.scenario = scn;
          rc.seed = seed;
          rc.algorithm = a;
          rc.dir = fmt::format("{}/{}-{}-{}-{}", o.rc.dir, n, scn, seed, to_string(a));
          RunResult r = run_once(rc);
          print_result(r);
          if (!r.ok) ++failures;
          all.push_back(r.to_json());
          if (!write_json(o.json_out, Json{{"runs", all}})) return 2;  // kept current as it goes
        }
  return failures ? 1 : 0;
}

}  // namespace

void add_fleet_subcommands(CLI::App& app) {
  Opts& o = opts();
  auto* fleet = app.add_subcommand("fleet", "the additive-manufacturing fleet case study");
  fleet->require_subcommand(1);

  o.printers = fleet->add_subcommand("printers", "serve an emulated Ultimaker 3 fleet (Jedi API) until Ctrl-C");
  o.printers->add_option("-n,--count", o.count, "printers")->check(CLI::Range(1, 500));
  o.printers->add_option("--port", o.port, "first port (printer i on port+i; default ephemeral)");
  o.printers->add_option("--factor", o.rc.factor, "simulated time speed-up")->check(CLI::PositiveNumber);
  o.printers->add_option("--seed", o.rc.seed, "seed of the fleet's specs and draws");
  o.printers->add_option("--anomaly-probability", o.anomaly_probability, "chance of a sensor anomaly per job")
      ->check(CLI::Range(0.0, 1.0));

  auto add_run_opts = [&](CLI::App* c) {
    c->add_option("--factor", o.rc.factor, "simulated minutes per real minute")->check(CLI::PositiveNumber);
    c->add_option("--dir", o.rc.dir, "directory for the run's archive (archive.db)")->required();
    c->add_option("--json", o.json_out, "write the result(s) as JSON here");
    c->add_option("--timeout", o.rc.timeout, "give up after this many real seconds per run");
    c->add_option("--anomaly-probability", o.rc.anomaly_probability, "per job, scenario anomalies")
        ->check(CLI::Range(0.0, 1.0));
    c->add_option("--maintenance-min", o.rc.maintenance_min, "maintenance after an anomaly");
    c->add_option("--jobs-per-printer", o.rc.jobs_per_printer, "regular copies per printer")
        ->check(CLI::PositiveNumber);
    c->add_option("--ppe-at", o.rc.ppe_at_min, "sim minute the PPE order arrives");
    c->add_option("--ilp-ms", o.rc.ilp.time_limit_ms, "CBC time limit per decision")->check(CLI::PositiveNumber);
  };
  o.run = fleet->add_subcommand("run", "one run: fleet, driver, twins, job creator, one scheduler");
  o.run->add_option("-n,--printers", o.rc.printers, "fleet size")->check(CLI::Range(1, 500));
  o.run->add_option("--scheduler", o.algorithm, "decentralized | baseline | fcfs | dynamic");
  o.run->add_option("--scenario", o.rc.scenario, "normal | anomalies | ppe");
  o.run->add_option("--seed", o.rc.seed, "seed");
  o.run->add_option("--api", o.api, "serve the REST API and dashboard (fleet panel) on HOST:PORT during the run");
  o.run->add_option("--linger", o.linger_s, "keep the fleet up this many seconds after the last job")
      ->check(CLI::Range(0, 3600));
  add_run_opts(o.run);

  o.experiment = fleet->add_subcommand("experiment", "every scheduler x scenario x fleet size x seed");
  o.experiment->add_option("--sizes", o.sizes, "fleet sizes")->delimiter(',');
  o.experiment->add_option("--seeds", o.seeds, "seeds")->delimiter(',');
  o.experiment->add_option("--scenarios", o.scenarios, "scenarios")->delimiter(',');
  o.experiment->add_option("--schedulers", o.algorithms, "schedulers")->delimiter(',');
  add_run_opts(o.experiment);

  o.replay = fleet->add_subcommand("replay", "recompute a run's figures from its archive alone");
  o.replay->add_option("archive", o.archive, "the run's archive.db")->required();
}

void set_api_factory(ApiFactory f) { opts().api_factory = std::move(f); }

int run_fleet_cli() {
  Opts& o = opts();
  if (!o.printers) return -1;
  if (o.printers->parsed()) return serve_printers(o);
  if (o.run->parsed()) return run_one(o);
  if (o.experiment->parsed()) return run_experiment(o);
  if (o.replay->parsed()) {
    auto r = replay(o.archive);
    if (!r) {
      std::fprintf(stderr, "sdnator fleet replay: %s\n", r.error().c_str());
      return 2;
    }
    std::printf("%s\n", r->dump(2).c_str());
    return 0;
  }
  return -1;
}

}  // namespace sdn::fleet
