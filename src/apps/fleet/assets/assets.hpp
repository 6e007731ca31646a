// The "Machine Assets" app: a fleet of emulated Ultimaker 3 printers, each serving the
// printer's own REST API (Jedi, /api/v1) on its own loopback port, all on one accelerated
// SimClock. See README.md for the endpoints and the model.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/fleet/assets/printer.hpp"
#include "apps/fleet/assets/sim_clock.hpp"
#include "core/expected.hpp"

namespace sdn::fleet {

class JediServer;

struct AssetsConfig {
  std::vector<PrinterSpec> printers;
  double factor = 30000;            // SimClock factor (shared by all printers of this fleet)
  uint64_t seed = 1;                // everything random (triangular print times, sensor noise, random anomalies) is drawn from this, per printer seeded from seed+index
  double anomaly_probability = 0;   // chance that a job develops a sensor anomaly, at a uniform point of its printing phase
  double authorize_after_min = 0.5; // pairing: an /auth/request becomes "authorized" this many sim minutes later (the emulated button press); <0 never
  std::string bind = "127.0.0.1";
  uint16_t base_port = 0;           // 0: each printer on its own ephemeral port; else base_port + index
  std::size_t max_upload_bytes = 64 << 20;
  std::size_t threads_per_printer = 2;  // cpp-httplib worker threads per printer, 1..64
};

struct PrinterEndpoint {
  std::string name;
  uint16_t port;
};

// Most printers one MachineAssets runs (each costs three threads and a socket).
inline constexpr std::size_t kMaxPrinters = 1000;

// Generates n printers "um3-01".."um3-NN" with heterogeneous specs drawn from seed: speed uniform [0.8,1.3], heat_min [3,6], post_min [2,4], cleanup_min [5,25]. Deterministic for a seed.
std::vector<PrinterSpec> make_fleet(std::size_t n, uint64_t seed);

// Checks a config the way start() does; the error names the offending field.
Expected<void, std::string> validate(const AssetsConfig& cfg);

class MachineAssets {
 public:
  static Expected<std::unique_ptr<MachineAssets>, std::string> start(AssetsConfig cfg);  // all servers listening when it returns; error if a port cannot be bound
  ~MachineAssets();  // stops every server and thread
  MachineAssets(const MachineAssets&) = delete;
  MachineAssets& operator=(const MachineAssets&) = delete;

  const std::vector<PrinterEndpoint>& endpoints() const { return endpoints_; }
  const SimClock& clock() const { return *clock_; }
  std::shared_ptr<const SimClock> clock_ptr() const { return clock_; }

  struct Stats {
    uint64_t requests = 0, client_errors = 0, auth_failures = 0, jobs_started = 0, jobs_finished = 0,
             jobs_aborted = 0, anomalies = 0;
    uint64_t jobs_failed = 0;    // added: result "Failed" (jobs_finished counts "Finished" only)
    uint64_t server_errors = 0;  // added: 5xx answers (handler exceptions)
  };
  Stats stats() const;  // summed over printers
  std::optional<Stats> stats(const std::string& printer) const;  // one printer; nullopt if unknown

  // Test/experiment hooks (also reachable over HTTP, see README.md). false for an unknown
  // printer or sensor; true also when the sensor already drifts.
  bool inject_anomaly(const std::string& printer, const std::string& sensor /*"hotend"|"bed"*/);

 private:
  MachineAssets() = default;

  std::shared_ptr<const SimClock> clock_;
  std::vector<std::unique_ptr<JediServer>> servers_;
  std::vector<PrinterEndpoint> endpoints_;
};

}  // namespace sdn::fleet
