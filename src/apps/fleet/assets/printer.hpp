// The model of one emulated Ultimaker 3: its state machine (booting, idle, the job states,
// maintenance), its two temperature sensors and anomalies. Pure: every call takes the sim time
// and first replays the transitions that happened since the previous call, so no ticking thread
// is needed and tests can drive it with a manual clock. Not thread-safe (the server locks).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "apps/fleet/assets/sim_rng.hpp"
#include "core/expected.hpp"

namespace sdn::fleet {

struct PrinterSpec {
  std::string name;          // e.g. "um3-01"
  double speed = 1.0;        // print-time multiplier (1.2 = 20% slower than the slicer estimate)
  double heat_min = 4;       // pre_print duration (heating, levelling)
  double post_min = 3;       // post_print (cooling)
  double cleanup_min = 12;   // wait_cleanup (bed clearing by the operator) before the printer is idle again
  double boot_min = 1;       // "booting" at start
};

// Printer status as Jedi names it (GET /api/v1/printer/status).
enum class PrinterStatus { kBooting, kIdle, kPrinting, kMaintenance, kError };
std::string_view to_string(PrinterStatus s);

// Print job state as Jedi names it (GET /api/v1/print_job/state).
enum class JobState { kPrePrint, kPrinting, kPaused, kPostPrint, kWaitCleanup };
std::string_view to_string(JobState s);

// Print job result: "" while running, then "Finished", "Aborted" or "Failed".
enum class JobResult { kNone, kFinished, kAborted, kFailed };
std::string_view to_string(JobResult r);

// The printer's two sensors.
enum class Sensor { kHotend, kBed };
std::string_view to_string(Sensor s);
std::optional<Sensor> sensor_from_string(std::string_view s);

enum class ModelError {
  kBusy,         // a job exists or the printer is not idle (Jedi answers 405)
  kNoJob,        // there is no print job (404)
  kNotAllowed,   // the transition is not allowed in the current state (405)
  kBadArgument,  // e.g. negative maintenance minutes (400)
};

// Model parameters (README.md lists them too).
inline constexpr double kAmbientC = 24.0;
inline constexpr double kHotendTargetC = 210.0;
inline constexpr double kBedTargetC = 60.0;
inline constexpr double kHotendCoolTauMin = 2.0;   // exponential cooling time constants
inline constexpr double kBedCoolTauMin = 6.0;
inline constexpr double kSensorNoiseSdC = 0.3;
inline constexpr double kAnomalyDriftCPerMin = 1.5;  // hotend drops, bed rises
inline constexpr double kMinSensorC = 0.0;           // readings are clamped to [0, 500] degC
inline constexpr double kMaxSensorC = 500.0;
// Slicer estimate when the G-code has no ;PRINT.TIME: triangular, in sim minutes.
inline constexpr double kTriMinMin = 48, kTriModeMin = 240, kTriMaxMin = 600;
inline constexpr std::size_t kHistoryCap = 100;  // finished jobs kept per printer

// A job as seen at one sim time. Times in sim minutes (datetimes) or sim seconds (durations).
struct JobView {
  std::string name;
  std::string uuid;
  JobState state = JobState::kPrePrint;
  double progress = 0;        // 0..1, of the printing phase
  double time_elapsed_s = 0;  // printing phase only; stops while paused
  double time_total_s = 0;    // estimate_s * speed
  double estimate_s = 0;      // slicer estimate (header or drawn)
  double started_min = 0;
  std::optional<double> finished_min;  // end of printing, or abort
  std::optional<double> cleaned_min;   // when the job was removed
  JobResult result = JobResult::kNone;
};

struct Temperature {
  double current = 0;
  double target = 0;
};

struct ModelCounters {
  uint64_t jobs_started = 0, jobs_finished = 0, jobs_failed = 0, jobs_aborted = 0, anomalies = 0;
};

class PrinterModel {
 public:
  // seed: the printer's own seed (fleet seed + index); t0: sim minute the printer powers on.
  PrinterModel(PrinterSpec spec, uint64_t seed, double anomaly_probability, double t0 = 0);

  const PrinterSpec& spec() const { return spec_; }
  PrinterStatus status(double now);

  // Starts a job. estimate_s: the slicer estimate of the printing phase in sim seconds, or
  // nullopt to draw one (triangular). kBusy unless idle.
  Expected<JobView, ModelError> start_job(std::string name, std::optional<double> estimate_s, double now);
  Expected<void, ModelError> pause(double now);   // only while printing
  Expected<void, ModelError> resume(double now);  // only while paused
  Expected<void, ModelError> abort(double now);   // any state before wait_cleanup
  // Maintenance for `minutes` (replaces a running one): allowed without a job or in wait_cleanup
  // (the job is cleared at once); clears every anomaly.
  Expected<void, ModelError> start_maintenance(double minutes, double now);
  // Starts an anomaly on `s` now; false if that sensor already drifts.
  bool inject_anomaly(Sensor s, double now);

  std::optional<JobView> job(double now);
  Temperature temperature(Sensor s, double now);          // with sensor noise
  Temperature nominal_temperature(Sensor s, double now);  // without noise (tests, twins' truth)
  std::optional<double> anomaly_since(Sensor s, double now);
  // Jobs removed from the printer, oldest first, at most kHistoryCap.
  const std::deque<JobView>& history(double now);
  const ModelCounters& counters() const { return counters_; }

 private:
  // Temperature of one heater: a linear ramp to its target while heating, exponential decay
  // to ambient after it is switched off.
  struct Thermal {
    double target = 0;
    double tau_min = 1;
    bool heating = false;
    double from_c = kAmbientC;
    double from_min = 0;
    double ramp_end_min = 0;
    double nominal(double t) const;
    void heat(double t, double target_c, double until);
    void cool(double t);
  };
  struct Job {
    JobView view;  // name, uuid, totals, datetimes, result; state
    double phase_start = 0;  // sim minute the current state was entered (or printing resumed)
    double elapsed_s = 0;    // printing seconds accumulated before phase_start
    bool failed = false;     // an anomaly was active when printing ended
    std::optional<double> anomaly_at_s;  // random anomaly: printing second at which it starts
    Sensor anomaly_sensor = Sensor::kHotend;
  };

  void advance(double now);
  double next_event(const Job& j) const;
  void fire(double t);
  void enter_printing(double t);
  void finish_printing(double t);
  void cleanup(double t);
  bool start_anomaly(Sensor s, double t);
  JobView view_of(const Job& j) const;
  Thermal& thermal(Sensor s) { return s == Sensor::kHotend ? hotend_ : bed_; }
  std::string make_uuid();

  PrinterSpec spec_;
  double anomaly_probability_;
  double now_;
  double boot_end_;
  std::optional<double> maintenance_until_;
  std::optional<Job> job_;
  std::optional<double> anomaly_start_[2];
  Thermal hotend_, bed_;
  std::deque<JobView> history_;
  ModelCounters counters_;
  SimRng job_rng_;      // triangular print-time draws
  SimRng anomaly_rng_;  // random anomaly decisions
  SimRng noise_rng_;    // sensor noise (drawn per read, so kept apart from the job draws)
  SimRng id_rng_;       // job uuids
};

}  // namespace sdn::fleet
