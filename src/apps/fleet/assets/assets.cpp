// MachineAssets: config checks, the fleet generator, and the lifetime of one JediServer per printer.
#include "apps/fleet/assets/assets.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/fleet/assets/jedi_server.hpp"
#include "apps/fleet/assets/sim_rng.hpp"

namespace sdn::fleet {

namespace {

constexpr uint64_t kFleetStream = 0xF1EE7;
constexpr std::size_t kMaxNameBytes = 64;
constexpr std::size_t kMaxThreadsPerPrinter = 64;

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0; }

MachineAssets::Stats to_stats(const PrinterStats& p) {
  MachineAssets::Stats s;
  s.requests = p.requests;
  s.client_errors = p.client_errors;
  s.auth_failures = p.auth_failures;
  s.server_errors = p.server_errors;
  s.jobs_started = p.model.jobs_started;
  s.jobs_finished = p.model.jobs_finished;
  s.jobs_failed = p.model.jobs_failed;
  s.jobs_aborted = p.model.jobs_aborted;
  s.anomalies = p.model.anomalies;
  return s;
}

}  // namespace

std::vector<PrinterSpec> make_fleet(std::size_t n, uint64_t seed) {
  SimRng rng(seed, kFleetStream);
  std::vector<PrinterSpec> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    PrinterSpec p;
    p.name = fmt::format("um3-{:02d}", i + 1);
    p.speed = rng.uniform(0.8, 1.3);
    p.heat_min = rng.uniform(3, 6);
    p.post_min = rng.uniform(2, 4);
    p.cleanup_min = rng.uniform(5, 25);
    out.push_back(std::move(p));
  }
  return out;
}

Expected<void, std::string> validate(const AssetsConfig& cfg) {
  if (cfg.printers.empty()) return unexpected(std::string("assets: no printers configured"));
  if (cfg.printers.size() > kMaxPrinters) {
    return unexpected(fmt::format("assets: {} printers, at most {}", cfg.printers.size(), kMaxPrinters));
  }
  if (!(std::isfinite(cfg.factor) && cfg.factor > 0)) {
    return unexpected(fmt::format("assets: factor must be > 0 (got {})", cfg.factor));
  }
  if (!(cfg.anomaly_probability >= 0 && cfg.anomaly_probability <= 1)) {
    return unexpected(fmt::format("assets: anomaly_probability must be in [0, 1] (got {})", cfg.anomaly_probability));
  }
  if (!std::isfinite(cfg.authorize_after_min)) return unexpected(std::string("assets: authorize_after_min must be finite"));
  if (cfg.bind.empty()) return unexpected(std::string("assets: empty bind address"));
  if (cfg.max_upload_bytes == 0) return unexpected(std::string("assets: max_upload_bytes must be > 0"));
  if (cfg.threads_per_printer == 0 || cfg.threads_per_printer > kMaxThreadsPerPrinter) {
    return unexpected(fmt::format("assets: threads_per_printer must be in [1, {}]", kMaxThreadsPerPrinter));
  }
  if (cfg.base_port != 0 && cfg.base_port + cfg.printers.size() - 1 > 65535) {
    return unexpected(fmt::format("assets: base_port {} + {} printers runs past port 65535", cfg.base_port,
                                  cfg.printers.size()));
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < cfg.printers.size(); ++i) {
    const PrinterSpec& p = cfg.printers[i];
    if (p.name.empty() || p.name.size() > kMaxNameBytes) {
      return unexpected(fmt::format("assets: printer #{} needs a name of 1..{} bytes", i, kMaxNameBytes));
    }
    if (!names.insert(p.name).second) return unexpected(fmt::format("assets: duplicate printer name '{}'", p.name));
    if (!(std::isfinite(p.speed) && p.speed > 0)) {
      return unexpected(fmt::format("assets: printer '{}': speed must be > 0 (got {})", p.name, p.speed));
    }
    const std::pair<const char*, double> durations[] = {
        {"heat_min", p.heat_min}, {"post_min", p.post_min}, {"cleanup_min", p.cleanup_min}, {"boot_min", p.boot_min}};
    for (const auto& [field, v] : durations) {
      if (!finite_nonneg(v)) {
        return unexpected(fmt::format("assets: printer '{}': {} must be a duration >= 0 (got {})", p.name, field, v));
      }
    }
  }
  return {};
}

Expected<std::unique_ptr<MachineAssets>, std::string> MachineAssets::start(AssetsConfig cfg) {
  if (auto ok = validate(cfg); !ok) return unexpected(ok.error());
  std::unique_ptr<MachineAssets> fleet(new MachineAssets());
  fleet->clock_ = std::make_shared<SimClock>(cfg.factor);
  for (std::size_t i = 0; i < cfg.printers.size(); ++i) {
    JediServerOptions opt;
    opt.seed = cfg.seed + i;
    opt.anomaly_probability = cfg.anomaly_probability;
    opt.authorize_after_min = cfg.authorize_after_min;
    opt.max_upload_bytes = cfg.max_upload_bytes;
    opt.threads = cfg.threads_per_printer;
    auto server = std::make_unique<JediServer>(cfg.printers[i], fleet->clock_, opt);
    const uint16_t want = cfg.base_port == 0 ? 0 : static_cast<uint16_t>(cfg.base_port + i);
    auto port = server->bind(cfg.bind, want);
    if (!port) return unexpected(port.error());  // ~MachineAssets stops the servers started so far
    // Run at once: a bound server that never ran could not be stopped (cpp-httplib 0.11).
    if (auto ran = server->run(); !ran) return unexpected(ran.error());
    fleet->endpoints_.push_back(PrinterEndpoint{cfg.printers[i].name, *port});
    fleet->servers_.push_back(std::move(server));
  }
  spdlog::info("machine assets: {} emulated printers on {} (ports {}..{}), sim factor {}", fleet->endpoints_.size(),
               cfg.bind, fleet->endpoints_.front().port, fleet->endpoints_.back().port, cfg.factor);
  return fleet;
}

MachineAssets::~MachineAssets() {
  for (auto& s : servers_) s->stop();
}

MachineAssets::Stats MachineAssets::stats() const {
  Stats sum;
  for (const auto& s : servers_) {
    const Stats one = to_stats(s->stats());
    sum.requests += one.requests;
    sum.client_errors += one.client_errors;
    sum.auth_failures += one.auth_failures;
    sum.server_errors += one.server_errors;
    sum.jobs_started += one.jobs_started;
    sum.jobs_finished += one.jobs_finished;
    sum.jobs_failed += one.jobs_failed;
    sum.jobs_aborted += one.jobs_aborted;
    sum.anomalies += one.anomalies;
  }
  return sum;
}

std::optional<MachineAssets::Stats> MachineAssets::stats(const std::string& printer) const {
  for (const auto& s : servers_) {
    if (s->name() == printer) return to_stats(s->stats());
  }
  return std::nullopt;
}

bool MachineAssets::inject_anomaly(const std::string& printer, const std::string& sensor) {
  const auto s = sensor_from_string(sensor);
  if (!s) return false;
  for (auto& srv : servers_) {
    if (srv->name() == printer) {
      srv->inject_anomaly(*s);
      return true;
    }
  }
  return false;
}

}  // namespace sdn::fleet
