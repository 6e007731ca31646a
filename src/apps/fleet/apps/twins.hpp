// The Digital Twins app: per printer a machine-state twin (status, availability, when the current
// job ends, the printer's learned speed and per-job setup time), a queue twin (finish time,
// length, average wait, history) and an anomaly-detection twin (the two temperature sensors
// against their targets); and one fleet twin that, on an anomaly, schedules maintenance (the
// driver aborts the job) and hands the job back to the scheduler. Built only from the driver's
// data keys; publishes fleet/<p>/twin/{machine,queue,anomaly}, fleet/twin/fleet,
// fleet/maintenance and fleet/jobs/returned.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/fleet/apps/common.hpp"
#include "apps/fleet/assets/sim_clock.hpp"
#include "data/due.hpp"

namespace sdn::fleet {

struct TwinConfig {
  std::vector<std::string> printers;
  double anomaly_threshold_c = 5.0;  // |current - target| above this while printing ...
  int anomaly_samples = 2;           // ... in this many consecutive sensor samples
  double maintenance_min = 60;       // maintenance the fleet twin schedules on an anomaly
  double prior_setup_min = 20;       // per-job overhead before one job was observed
  double prior_speed = 1.0;
};

struct TwinStats {
  uint64_t anomalies = 0, maintenances = 0, returned = 0, bad_records = 0;
};

class Twins {
 public:
  static Expected<std::unique_ptr<Twins>, std::string> start(std::shared_ptr<data::Backends> b,
                                                             TwinConfig cfg,
                                                             std::shared_ptr<const SimClock> clock);
  ~Twins();
  TwinStats stats() const;

 private:
  struct Impl;
  explicit Twins(std::unique_ptr<Impl> i);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::fleet
