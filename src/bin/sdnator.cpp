// sdnator: the controller daemon. `sdnator run` starts the OpenFlow 1.3 runtime with the
// configured apps; `sdnator --version` prints the version.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "apps/fleet/apps/cli.hpp"
#include "bin/app_registry.hpp"
#include "bin/ctl.hpp"
#include "bin/northbound_wiring.hpp"
#include "bin/data_cli.hpp"
#include "bin/fleet_wiring.hpp"
#include "cluster/cluster.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "data/config.hpp"
#include "data/coordinator.hpp"
#include "data/due.hpp"
#include "northbound/server.hpp"
#include "southbound/config.hpp"
#include "southbound/controller.hpp"

#ifndef SDNATOR_VERSION
#define SDNATOR_VERSION "0.0.0"
#endif

namespace {

// Resident set size and thread count of this process, from /proc/self/status.
std::pair<uint64_t, uint64_t> self_rss_threads() {
  std::ifstream in("/proc/self/status");
  std::string line;
  uint64_t rss = 0, threads = 0;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stoull(line.substr(6)) * 1024;
    if (line.rfind("Threads:", 0) == 0) threads = std::stoull(line.substr(8));
  }
  return {rss, threads};
}

nlohmann::json data_stats_json(sdn::data::Backends& b, const sdn::data::Coordinator* coord) {
  nlohmann::json j;
  auto u = b.updates().stats();
  j["updates"] = {{"backend", std::string(b.updates().name())},
                  {"published", u.published},
                  {"sent", u.sent},
                  {"delivered", u.delivered},
                  {"dropped", u.dropped},
                  {"gaps", u.gaps},
                  {"decode_errors", u.decode_errors},
                  {"reconnects", u.reconnects},
                  {"acl_denied", u.acl_denied},
                  {"buffered", u.buffered},
                  {"batches", u.batches},
                  {"connected", u.connected},
                  {"last_error", u.last_error}};
  if (auto* a = b.archive()) {
    auto s = a->stats();
    j["archive"] = {{"backend", std::string(a->name())},
                    {"appended", s.appended},
                    {"written", s.written},
                    {"batches", s.batches},
                    {"failed_batches", s.failed_batches},
                    {"dropped", s.dropped},
                    {"queued", s.queued},
                    {"retention_deleted", s.retention_deleted},
                    {"full_errors", s.full_errors},
                    {"spooled", s.spooled},
                    {"replayed", s.replayed},
                    {"spool_records", s.spool_records},
                    {"spool_bytes", s.spool_bytes},
                    {"spool_corrupt", s.spool_corrupt},
                    {"spool_errors", s.spool_errors},
                    {"spool_path", s.spool_path},
                    {"connected", s.connected},
                    {"last_error", s.last_error}};
  } else {
    j["archive"] = nullptr;
  }
  j["notes"] = b.notes();
  if (coord) j["coordinator"] = coord->state();
  return j;
}

// RFC 8456 reactive path provisioning rate, from the paths-installed counter between two stats
// writes: the last interval's rate and the highest seen (paths/s).
void add_path_rate(nlohmann::json& apps) {
  static std::optional<std::pair<uint64_t, std::chrono::steady_clock::time_point>> prev;
  static double peak = 0;
  if (!apps.contains("forwarding") || !apps["forwarding"].contains("paths_installed")) return;
  const uint64_t n = apps["forwarding"]["paths_installed"].get<uint64_t>();
  const auto now = std::chrono::steady_clock::now();
  double rate = 0;
  if (prev && now > prev->second && n >= prev->first)
    rate = static_cast<double>(n - prev->first) / std::chrono::duration<double>(now - prev->second).count();
  prev = {n, now};
  peak = std::max(peak, rate);
  apps["forwarding"]["path_rate_per_s"] = static_cast<uint64_t>(rate + 0.5);
  apps["forwarding"]["path_rate_peak_per_s"] = static_cast<uint64_t>(peak + 0.5);
}

nlohmann::json stats_json(sdn::southbound::Controller& ctl, const sdn::bin::AppSet& apps,
                          const asio::ip::tcp::endpoint& ep, std::chrono::steady_clock::time_point started,
                          unsigned shards) {
  nlohmann::json j;
  j["version"] = SDNATOR_VERSION;
  j["pid"] = ::getpid();
  j["listen"] = ep.address().to_string() + ":" + std::to_string(ep.port());
  j["shards"] = shards;
  j["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  auto [rss, threads] = self_rss_threads();
  j["rss_bytes"] = rss;
  j["threads"] = threads;
  nlohmann::json sw = nlohmann::json::array();
  for (const auto& s : ctl.switches())
    sw.push_back({{"dpid", fmt::format("{:016x}", s.dpid)}, {"shard", s.shard}, {"peer", s.peer}, {"ports", s.ports},
                  {"role", sdn::southbound::role_name(s.role)}, {"generation", s.generation}, {"up", s.up}});
  j["switches"] = sw;
  j["metrics"] = ctl.metrics().to_json();
  j["apps"] = apps.stats();
  add_path_rate(j["apps"]);
  return j;
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text << '\n';
    if (!out) {
      SDN_LOG_RATELIMITED(spdlog::level::warn, "cannot write stats file {}", tmp);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) SDN_LOG_RATELIMITED(spdlog::level::warn, "cannot rename stats file to {}: {}", path, ec.message());
}

struct RunOptions {
  std::string config_path;
  std::string listen;
  int shards = -1;
  std::string log_level;
  std::string stats_file;
  std::vector<std::string> apps;
  std::string sqlite_path;
  std::string api_listen;
  std::string api_token;
  bool no_api = false;
};

int run(const RunOptions& opt) {
  sdn::core::Config cfg;
  if (!opt.config_path.empty()) {
    auto loaded = sdn::core::Config::load_file(opt.config_path);
    if (!loaded) {
      fmt::print(stderr, "sdnator: bad config: {}\n", loaded.error());
      return 2;
    }
    cfg = std::move(*loaded);
  }
  std::string level = cfg.get_string("controller", "log_level", "info");
  if (!opt.log_level.empty()) level = opt.log_level;
  std::string stats_file = cfg.get_string("controller", "stats_file", "");
  if (!opt.stats_file.empty()) stats_file = opt.stats_file;
  auto sb = sdn::southbound::southbound_config_from(cfg);
  if (!opt.listen.empty()) {
    if (auto r = sdn::southbound::set_listen(sb, opt.listen); !r) {
      fmt::print(stderr, "sdnator: --listen: {}\n", r.error());
      return 2;
    }
  }
  if (opt.shards >= 0) sb.shards = static_cast<unsigned>(opt.shards);
  auto apps = sdn::bin::make_apps(cfg, opt.apps);
  auto data_cfg = sdn::data::data_config_from(cfg);
  auto cluster_cfg = sdn::cluster::cluster_config_from(cfg);
  // An address the user chose must work; the default one may be taken by another instance on
  // this machine (tests, the evaluation), and then the API is off with a warning.
  const bool api_explicit = !opt.api_listen.empty() || cfg.has("northbound", "listen") || cfg.has("northbound", "tls_cert");
  auto nb_cfg = sdn::northbound::northbound_config_from(cfg);
  if (!opt.api_listen.empty()) {
    if (auto r = sdn::northbound::set_listen(nb_cfg, opt.api_listen); !r) {
      fmt::print(stderr, "sdnator: --api: {}\n", r.error());
      return 2;
    }
  }
  if (!opt.api_token.empty()) nb_cfg.token = opt.api_token;
  if (const char* t = std::getenv("SDNATOR_TOKEN"); t && nb_cfg.token.empty()) nb_cfg.token = t;
  if (opt.no_api) nb_cfg.enabled = false;
  if (!opt.sqlite_path.empty()) data_cfg.sqlite.path = opt.sqlite_path;
  auto problems = cfg.finish();
  if (!apps) problems.push_back(apps.error());
  if (!problems.empty()) {
    for (const auto& p : problems) fmt::print(stderr, "sdnator: config error: {}\n", p);
    return 2;
  }
  if (!sdn::core::set_log_level(level)) {
    fmt::print(stderr, "sdnator: unknown log level '{}'\n", level);
    return 2;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");

  // The data layer: Data Updates + Data Archives shared by every app in this process, and the
  // Coordinator (unless it runs elsewhere: [coordinator] enabled = false).
  auto backends = sdn::data::Backends::open(data_cfg);
  if (!backends) {
    spdlog::error("{}", backends.error());
    return 1;
  }
  // The cluster (docs/cluster.md): member heartbeat, switch mastership, leaders. Started before
  // the listener, so that the first switch already finds its arbiter.
  std::shared_ptr<sdn::cluster::Cluster> cluster;
  if (cluster_cfg.enabled) {
    cluster = std::make_shared<sdn::cluster::Cluster>(cluster_cfg);  // started once it has its sink
  }
  // In a cluster one Coordinator serves every instance (they share Data Updates on Redis): the
  // instance leading "coordinator" runs it, and a successor starts its own when that one goes
  // (its hello makes every DUE register again). The others run none.
  std::mutex coord_mu;  // guards `coordinator` while the cluster's thread may swap it
  std::unique_ptr<sdn::data::Coordinator> coordinator;
  if (cluster && data_cfg.coordinator.enabled) {
    sdn::cluster::LeaderEvents ev;
    ev.gained = [&coord_mu, &coordinator, &backends, &data_cfg](uint64_t gen) {
      auto c = std::make_unique<sdn::data::Coordinator>(*backends, data_cfg.coordinator, data_cfg.due);
      if (auto r = c->start(); !r) {
        spdlog::error("coordinator (cluster leader, generation {}): {}", gen, r.error());
        return;
      }
      spdlog::info("coordinator: this instance leads (generation {})", gen);
      std::lock_guard lock(coord_mu);
      coordinator = std::move(c);
    };
    ev.lost = [&coord_mu, &coordinator] {
      std::unique_ptr<sdn::data::Coordinator> c;
      {
        std::lock_guard lock(coord_mu);
        c = std::move(coordinator);
      }
      if (c) {
        spdlog::warn("coordinator: leadership lost, stopping it here");
        c->stop();
      }
    };
    cluster->lead("coordinator", std::move(ev));
  } else if (data_cfg.coordinator.enabled) {
    coordinator = std::make_unique<sdn::data::Coordinator>(*backends, data_cfg.coordinator, data_cfg.due);
    if (auto r = coordinator->start(); !r) {
      spdlog::error("coordinator: {}", r.error());
      return 1;
    }
  }
  spdlog::info("data layer: updates={} archive={} coordinator={}", (*backends)->updates().name(),
               (*backends)->archive() ? (*backends)->archive()->name() : std::string_view("none"),
               cluster ? "cluster leader" : coordinator ? "on" : "off");

  if ((*apps)->single_shard && sb.shards != 1) {
    spdlog::info("cpam.runtime = \"cooperative\": running one shard (was {})", sb.shards);
    sb.shards = 1;
  }
  sdn::core::Metrics metrics;
  (*apps)->backends = *backends;
  (*apps)->due_config = data_cfg.due;
  (*apps)->metrics = &metrics;
  // The topology's links to a peer's switches: a switch connected here (as a slave) counts.
  auto ctl_ref = std::make_shared<std::atomic<sdn::southbound::Controller*>>(nullptr);
  if (cluster) {
    (*apps)->cluster = cluster;
    (*apps)->remote_switch = [ctl_ref](uint64_t dpid) {
      auto* c = ctl_ref->load(std::memory_order_acquire);
      return c != nullptr && c->connected(dpid);
    };
  }
  sdn::core::ShardPool pool(sb.shards);
  pool.set_nice(sb.shard_nice);
  sdn::southbound::Controller ctl(pool, sb, metrics, (*apps)->factories);
  ctl_ref->store(&ctl, std::memory_order_release);
  pool.start();
  if (cluster) {
    ctl.set_role_arbiter(cluster);  // attaches the controller as the cluster's RoleSink
    if (auto r = cluster->start(); !r) {
      spdlog::error("cluster: {}", r.error());
      pool.stop();
      pool.join();
      return 1;
    }
    spdlog::info("cluster '{}': instance {} (redis {}{})", cluster_cfg.name, cluster->instance_id(),
                 fmt::join(cluster_cfg.redis, ","),
                 cluster_cfg.sentinel_master.empty() ? "" : " via sentinel master " + cluster_cfg.sentinel_master);
  }
  auto ep = ctl.listen();
  if (!ep) {
    spdlog::error("{}", ep.error());
    pool.stop();
    pool.join();
    return 1;
  }
  const auto started = std::chrono::steady_clock::now();
  spdlog::info("sdnator {} listening on {}:{} with {} shard(s)", SDNATOR_VERSION, ep->address().to_string(), ep->port(),
               pool.size());

  // The northbound API (REST, dashboard, /metrics): after the listener, before any switch can
  // have published much; it sees every Data Updates record from here on.
  std::unique_ptr<sdn::northbound::Server> api;
  if (nb_cfg.enabled) {
    auto data_stats = [&] {
      std::lock_guard lock(coord_mu);
      return data_stats_json(**backends, coordinator.get());
    };
    auto process_stats = [&] {
      auto [rss, threads] = self_rss_threads();
      return nlohmann::json{{"rss_bytes", rss},
                            {"threads", threads},
                            {"uptime_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
                            {"shards", pool.size()}};
    };
    // In a cluster the Coordinator comes and goes with its leadership: the API does not hold it.
    auto sources = sdn::bin::northbound_sources(ctl, metrics, *backends, cluster ? nullptr : coordinator.get(), **apps,
                                                nb_cfg.request_timeout, data_stats, process_stats);
    if (cluster) sources.cluster = [cluster] { return cluster->state(); };
    sources.version = SDNATOR_VERSION;
    api = std::make_unique<sdn::northbound::Server>(nb_cfg, std::move(sources));
    auto port = api->start();
    if (!port && api_explicit) {
      spdlog::error("{}", port.error());
      api.reset();
      ctl.stop();
      pool.stop();
      pool.join();
      return 1;
    }
    if (!port) {
      spdlog::warn("{} (the default address is taken): the API and dashboard are off; set [northbound] listen or --api",
                   port.error());
      api.reset();
    } else {
      spdlog::info("northbound API and dashboard on {}://{}:{}/ ({})", nb_cfg.tls_cert.empty() ? "http" : "https",
                   nb_cfg.host, *port,
                   nb_cfg.token.empty() ? "no token" : "bearer token required");
    }
  }

  asio::io_context main_ctx(1);
  asio::signal_set signals(main_ctx, SIGINT, SIGTERM);
  asio::steady_timer stats_timer(main_ctx);
  std::function<void()> write_stats = [&] {
    if (stats_file.empty()) return;
    auto j = stats_json(ctl, **apps, *ep, started, pool.size());
    {
      std::lock_guard lock(coord_mu);
      j["data"] = data_stats_json(**backends, coordinator.get());
    }
    if (cluster) j["cluster"] = cluster->state();
    write_atomically(stats_file, j.dump(1));
  };
  std::function<void()> arm = [&] {
    stats_timer.expires_after(std::chrono::seconds(1));
    stats_timer.async_wait([&](const std::error_code& ec) {
      if (ec) return;
      write_stats();
      arm();
    });
  };
  write_stats();
  arm();
  signals.async_wait([&](const std::error_code&, int sig) {
    spdlog::info("signal {} received, shutting down", sig);
    stats_timer.cancel();
  });
  main_ctx.run();

  if (api) api->stop();
  // Leases released while the switches are still connected (the peers take them over at once;
  // this instance is told SLAVE first), and the Coordinator stops with its leadership.
  if (cluster) cluster->stop();
  ctl.stop();
  pool.stop();
  pool.join();
  {
    std::lock_guard lock(coord_mu);
    if (coordinator) coordinator->stop();
  }
  write_stats();
  const auto& c = ctl.counters();
  spdlog::info("shutdown: {} connections accepted, {} messages in, {} out in {} writes", c.accepted.value(),
               c.rx_msgs.value(), c.tx_msgs.value(), c.writes.value());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sdnator: an OpenFlow 1.3 controller framework"};
  app.set_version_flag("--version", std::string("sdnator ") + SDNATOR_VERSION);
  app.require_subcommand(1);
  RunOptions opt;
  auto* run_cmd = app.add_subcommand("run", "run the controller");
  run_cmd->add_option("-c,--config", opt.config_path, "TOML configuration file")->check(CLI::ExistingFile);
  run_cmd->add_option("-l,--listen", opt.listen, "OpenFlow listen address HOST:PORT (default 127.0.0.1:6653)");
  run_cmd->add_option("-s,--shards", opt.shards, "event-loop shards (0 = one per core)")->check(CLI::Range(0, 256));
  run_cmd->add_option("--log-level", opt.log_level, "trace, debug, info, warn, error, critical, off");
  run_cmd->add_option("--stats-file", opt.stats_file, "write counters as JSON to this file every second");
  run_cmd->add_option("--archive-path", opt.sqlite_path, "SQLite archive file (overrides [sqlite] path)");
  run_cmd->add_option("--app", opt.apps, "apps to run (default: from [controller] apps, else forwarding)");
  run_cmd->add_option("--api", opt.api_listen, "REST API / dashboard address HOST:PORT (default 127.0.0.1:8080)");
  run_cmd->add_option("--api-token", opt.api_token, "bearer token the API requires (or env SDNATOR_TOKEN)");
  run_cmd->add_flag("--no-api", opt.no_api, "do not serve the REST API and dashboard");
  sdn::bin::add_data_subcommands(app);
  sdn::bin::add_ctl_subcommand(app);
  sdn::fleet::add_fleet_subcommands(app);
  sdn::bin::install_fleet_api(SDNATOR_VERSION);
  CLI11_PARSE(app, argc, argv);
  if (run_cmd->parsed()) return run(opt);
  if (int status = sdn::bin::run_data_cli(); status >= 0) return status;
  if (int status = sdn::bin::run_ctl(); status >= 0) return status;
  if (int status = sdn::fleet::run_fleet_cli(); status >= 0) return status;
  return 0;
}
