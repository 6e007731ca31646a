// The Data Driver: the only app that talks to the printers. It pairs with each printer's Jedi
// API, polls it (GET /printer, /print_job) and publishes what it sees as data (state, job, sensor
// and event keys); it keeps each printer's job queue (a UM3 holds one job at a time) and turns
// commands from other apps (enqueue, maintenance) into Jedi calls: uploads, aborts, maintenance.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "apps/fleet/apps/common.hpp"
#include "apps/fleet/assets/assets.hpp"
#include "data/due.hpp"

namespace sdn::fleet {

struct DriverConfig {
  std::vector<PrinterEndpoint> printers;
  std::string host = "127.0.0.1";
  std::chrono::milliseconds poll_interval{2};    // pause between two polls of the whole fleet
  std::chrono::milliseconds http_timeout{2000};
  std::chrono::milliseconds pair_deadline{10000};
};

struct DriverStats {
  uint64_t polls = 0, requests = 0, http_failures = 0, uploads = 0, upload_rejects = 0,
           aborts = 0, maintenances = 0, bad_commands = 0, bad_replies = 0;
};

class Driver {
 public:
  // Pairs with every printer (error names the printer that failed), then starts polling.
  static Expected<std::unique_ptr<Driver>, std::string> start(
      std::shared_ptr<data::Backends> backends, DriverConfig cfg,
      std::shared_ptr<const SimClock> clock);
  ~Driver();
  DriverStats stats() const;

 private:
  struct Impl;
  explicit Driver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::fleet
