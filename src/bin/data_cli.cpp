// `sdnator coordinator` runs the Coordinator on shared backends (Redis + an archive) for apps in
// other processes; `sdnator data write|observe|get` publish, watch and query data keys, printing
// records as JSON lines (the envelope format of docs/data-wire.md).
#include "bin/data_cli.hpp"

#include <csignal>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bin/app_registry.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "data/coordinator.hpp"
#include "data/due.hpp"
#include "data/wire.hpp"
#include "southbound/config.hpp"

namespace sdn::bin {
namespace {

struct Opts {
  std::string config_path;
  std::string log_level = "warn";
  std::string key;
  std::string value;
  std::string app_id = "cli";
  bool raw = false;
  bool pub_only = false;
  int count = 0;
  double timeout_s = 0;
  std::optional<int64_t> from_ns, to_ns;
  std::optional<std::size_t> latest, limit;
  std::string producer;
};
Opts g_opts;
CLI::App* g_coord = nullptr;
CLI::App* g_write = nullptr;
CLI::App* g_observe = nullptr;
CLI::App* g_get = nullptr;
CLI::App* g_acl_password = nullptr;
volatile std::sig_atomic_t g_stop = 0;

Expected<data::DataConfig, std::string> load_data_config() {
  core::Config cfg;
  if (!g_opts.config_path.empty()) {
    auto loaded = core::Config::load_file(g_opts.config_path);
    if (!loaded) return unexpected(loaded.error());
    cfg = std::move(*loaded);
  }
  auto d = data::data_config_from(cfg);
  // One config file serves `sdnator run` too: read its other sections so that their keys are
  // validated rather than reported as unknown.
  (void)southbound::southbound_config_from(cfg);
  (void)cfg.get_string("controller", "log_level", "info");
  (void)cfg.get_string("controller", "stats_file", "");
  auto apps = make_apps(cfg, {});
  auto problems = cfg.finish();
  if (!apps) problems.push_back(apps.error());
  if (!problems.empty()) return unexpected(fmt::format("{}", fmt::join(problems, "; ")));
  return d;
}

// Loads the config and opens its backends; on failure prints why, sets `status` (2: config,
// 1: backend) and returns null. `cfg_out`, when given, receives the data config.
std::shared_ptr<data::Backends> open_backends(int& status, data::DataConfig* cfg_out = nullptr) {
  auto d = load_data_config();
  if (!d) {
    fmt::print(stderr, "sdnator: config error: {}\n", d.error());
    status = 2;
    return nullptr;
  }
  auto b = data::Backends::open(*d);
  if (!b) {
    fmt::print(stderr, "sdnator: {}\n", b.error());
    status = 1;
    return nullptr;
  }
  if (cfg_out) *cfg_out = *d;
  return *b;
}

int run_coordinator() {
  int status = 0;
  data::DataConfig d;
  auto b = open_backends(status, &d);
  if (!b) return status;
  data::Coordinator coord(b, d.coordinator, d.due);
  if (auto r = coord.start(); !r) {
    fmt::print(stderr, "sdnator: coordinator: {}\n", r.error());
    return 1;
  }
  spdlog::info("coordinator running (updates={}, archive={})", b->updates().name(),
               b->archive() ? b->archive()->name() : std::string_view("none"));
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  coord.stop();
  fmt::print("{}\n", coord.state().dump());
  return 0;
}

int run_write() {
  int status = 0;
  auto b = open_backends(status);
  if (!b) return status;
  data::Value v;
  if (g_opts.raw) {
    v = data::Value(data::Bytes{g_opts.value});
  } else {
    auto j = data::Json::parse(g_opts.value, nullptr, false);
    if (j.is_discarded()) {
      fmt::print(stderr, "sdnator: value is not JSON (use --raw for bytes): {}\n", g_opts.value);
      return 2;
    }
    v = data::Value(std::move(j));
  }
  data::DueConfig dc;
  data::Due due(b, dc);
  // The key written is the one capability: with [data] acl = "enforce" that is the grant.
  if (auto r = due.init(g_opts.app_id, data::kProducer, {}, {data::Capability{g_opts.key, {}, false}}); !r) {
    fmt::print(stderr, "sdnator: {}\n", r.error());
    return 2;
  }
  if (auto r = due.write(g_opts.key, std::move(v), data::kNoWait | (g_opts.pub_only ? unsigned{data::kPubOnly} : 0u)); !r) {
    fmt::print(stderr, "sdnator: {}\n", r.error());
    return 2;
  }
  if (!due.sync(std::chrono::seconds(10))) {
    fmt::print(stderr, "sdnator: the write was not confirmed within 10 s\n");
    return 1;
  }
  return 0;
}

int run_observe() {
  int status = 0;
  auto b = open_backends(status);
  if (!b) return status;
  if (b->updates().name() == "inproc") {
    fmt::print(stderr, "sdnator: observe needs a shared Data Updates backend (data.updates = \"redis\")\n");
    return 2;
  }
  auto k = data::Key::parse(g_opts.key);
  if (!k) {
    fmt::print(stderr, "sdnator: {}\n", k.error());
    return 2;
  }
  std::atomic<int> seen{0};
  std::mutex mu;
  auto id = b->updates().subscribe(*k, [&](const data::RecordPtr& r) {
    std::lock_guard lock(mu);
    std::string line = data::encode_envelope(*r);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    ++seen;
  });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(g_opts.timeout_s);
  while (!g_stop && (g_opts.count <= 0 || seen.load() < g_opts.count) &&
         (g_opts.timeout_s <= 0 || std::chrono::steady_clock::now() < deadline))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  b->updates().unsubscribe(id);
  return g_opts.count > 0 && seen.load() < g_opts.count ? 1 : 0;
}

int run_get() {
  int status = 0;
  auto b = open_backends(status);
  if (!b) return status;
  if (!b->archive()) {
    fmt::print(stderr, "sdnator: Data Archives are off (data.archive = \"none\")\n");
    return 2;
  }
  data::Query q;
  q.key = g_opts.key;
  q.from_ns = g_opts.from_ns;
  q.to_ns = g_opts.to_ns;
  if (!g_opts.producer.empty()) q.app_id = g_opts.producer;
  q.latest = g_opts.latest;
  q.limit = g_opts.limit;
  if (!q.key.empty()) {
    if (auto k = data::Key::parse(q.key); !k) {
      fmt::print(stderr, "sdnator: {}\n", k.error());
      return 2;
    }
  }
  auto rows = b->archive()->query(q);
  if (!rows) {
    fmt::print(stderr, "sdnator: {}\n", rows.error());
    return 1;
  }
  for (const auto& r : *rows) fmt::print("{}\n", data::encode_envelope(r));
  return 0;
}

// The Redis password of an app's ACL user (docs/acl.md), for the operator to put in that app's
// [redis] password: HMAC-SHA256 of the app id under [acl] secret; nothing goes over the network.
int run_acl_password() {
  auto d = load_data_config();
  if (!d) {
    fmt::print(stderr, "sdnator: config error: {}\n", d.error());
    return 2;
  }
  if (d->acl.secret.empty()) {
    fmt::print(stderr, "sdnator: [acl] secret is not set\n");
    return 2;
  }
  auto k = data::Key::parse_concrete(g_opts.app_id);
  if (!k || k->segments().size() != 1 || !k->app_id().empty()) {
    fmt::print(stderr, "sdnator: bad app id '{}'\n", g_opts.app_id);
    return 2;
  }
  fmt::print("user = \"{}{}\"\npassword = \"{}\"\n", d->acl.user_prefix, g_opts.app_id,
             data::app_password(d->acl.secret, g_opts.app_id));
  return 0;
}

void common(CLI::App* c) {
  c->add_option("-c,--config", g_opts.config_path, "TOML configuration file ([data], [redis], [sqlite], [postgres])")
      ->check(CLI::ExistingFile);
  c->add_option("--log-level", g_opts.log_level, "trace, debug, info, warn, error, critical, off");
}

}  // namespace

void add_data_subcommands(CLI::App& app) {
  g_coord = app.add_subcommand("coordinator", "run the Coordinator alone (apps in other processes, on Redis)");
  common(g_coord);
  auto* data = app.add_subcommand("data", "publish, watch and query data keys");
  data->require_subcommand(1);
  g_write = data->add_subcommand("write", "write one value (published and archived)");
  common(g_write);
  g_write->add_option("key", g_opts.key, "concrete key")->required();
  g_write->add_option("value", g_opts.value, "JSON value (or bytes with --raw)")->required();
  g_write->add_option("--app", g_opts.app_id, "producer app id (default cli)");
  g_write->add_flag("--raw", g_opts.raw, "the value is raw bytes, not JSON");
  g_write->add_flag("--pub-only", g_opts.pub_only, "publish only, do not archive");
  g_observe = data->add_subcommand("observe", "print records published on a pattern as JSON lines");
  common(g_observe);
  g_observe->add_option("pattern", g_opts.key, "key or pattern")->required();
  g_observe->add_option("-n,--count", g_opts.count, "exit after N records (status 1 if fewer by the timeout)");
  g_observe->add_option("-t,--timeout", g_opts.timeout_s, "exit after S seconds");
  g_get = data->add_subcommand("get", "query Data Archives; records as JSON lines, oldest first");
  common(g_get);
  g_get->add_option("key", g_opts.key, "key or pattern (empty = all)");
  g_get->add_option("--from-ns", g_opts.from_ns, "timestamp >= (ns since the epoch)");
  g_get->add_option("--to-ns", g_opts.to_ns, "timestamp < (ns since the epoch)");
  g_get->add_option("--app", g_opts.producer, "producer app id");
  g_get->add_option("--latest", g_opts.latest, "only the newest N");
  g_get->add_option("--limit", g_opts.limit, "at most N");
  g_acl_password = data->add_subcommand(
      "acl-password", "print an app's Redis ACL user and password ([redis] user/password of its process)");
  common(g_acl_password);
  g_acl_password->add_option("app", g_opts.app_id, "app id")->required();
}

int run_data_cli() {
  CLI::App* chosen = nullptr;
  for (auto* c : {g_coord, g_write, g_observe, g_get, g_acl_password})
    if (c && c->parsed()) chosen = c;
  if (!chosen) return -1;
  if (!core::set_log_level(g_opts.log_level)) {
    fmt::print(stderr, "sdnator: unknown log level '{}'\n", g_opts.log_level);
    return 2;
  }
  if (chosen == g_coord) return run_coordinator();
  if (chosen == g_write) return run_write();
  if (chosen == g_observe) return run_observe();
  if (chosen == g_acl_password) return run_acl_password();
  return run_get();
}

}  // namespace sdn::bin
