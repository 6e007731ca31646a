// Accelerated simulated time shared by every emulated printer of a fleet, so that a print
// of several hours passes in milliseconds while all printers and their clients agree on "now".
#pragma once

#include <chrono>
#include <string>

namespace sdn::fleet {

// Simulated time, accelerated: sim minutes = real elapsed * factor / 60 s. Thread-safe
// (immutable after construction), monotonic (steady_clock).
class SimClock {
 public:
  explicit SimClock(double factor);  // factor 1 = real time; e.g. 30000; <= 0 or NaN -> 1
  double now_min() const;            // simulated minutes since construction
  double factor() const { return factor_; }
  // Real duration of sim_min simulated minutes (0 for negative or NaN input).
  std::chrono::nanoseconds real_for(double sim_min) const;
  // ISO 8601 "2026-01-01T08:00:00" for a sim time: the fixed base epoch 2026-01-01T08:00:00
  // plus sim_min minutes, rounded to whole seconds; "" for a non-finite or absurd value.
  std::string iso(double sim_min) const;

 private:
  double factor_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sdn::fleet
