// PrinterModel: lazy, event-by-event replay of the printer's state machine up to "now".
#include "apps/fleet/assets/printer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace sdn::fleet {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint64_t kJobStream = 1, kAnomalyStream = 2, kNoiseStream = 3, kIdStream = 4;

std::size_t idx(Sensor s) { return s == Sensor::kHotend ? 0 : 1; }
}  // namespace

std::string_view to_string(PrinterStatus s) {
  switch (s) {
    case PrinterStatus::kBooting: return "booting";
    case PrinterStatus::kIdle: return "idle";
    case PrinterStatus::kPrinting: return "printing";
    case PrinterStatus::kMaintenance: return "maintenance";
    case PrinterStatus::kError: return "error";
  }
  return "error";
}

std::string_view to_string(JobState s) {
  switch (s) {
    case JobState::kPrePrint: return "pre_print";
    case JobState::kPrinting: return "printing";
    case JobState::kPaused: return "paused";
    case JobState::kPostPrint: return "post_print";
    case JobState::kWaitCleanup: return "wait_cleanup";
  }
  return "none";
}

std::string_view to_string(JobResult r) {
  switch (r) {
    case JobResult::kNone: return "";
    case JobResult::kFinished: return "Finished";
    case JobResult::kAborted: return "Aborted";
    case JobResult::kFailed: return "Failed";
  }
  return "";
}

std::string_view to_string(Sensor s) { return s == Sensor::kHotend ? "hotend" : "bed"; }

std::optional<Sensor> sensor_from_string(std::string_view s) {
  if (s == "hotend") return Sensor::kHotend;
  if (s == "bed") return Sensor::kBed;
  return std::nullopt;
}

// ---- Thermal ----

double PrinterModel::Thermal::nominal(double t) const {
  if (heating) {
    if (t >= ramp_end_min || ramp_end_min <= from_min) return target;
    const double f = std::clamp((t - from_min) / (ramp_end_min - from_min), 0.0, 1.0);
    return from_c + (target - from_c) * f;
  }
  const double dt = std::max(0.0, t - from_min);
  return kAmbientC + (from_c - kAmbientC) * std::exp(-dt / tau_min);
}

void PrinterModel::Thermal::heat(double t, double target_c, double until) {
  from_c = nominal(t);
  from_min = t;
  ramp_end_min = until;
  target = target_c;
  heating = true;
}

void PrinterModel::Thermal::cool(double t) {
  from_c = nominal(t);
  from_min = t;
  heating = false;
}

// ---- PrinterModel ----

PrinterModel::PrinterModel(PrinterSpec spec, uint64_t seed, double anomaly_probability, double t0)
    : spec_(std::move(spec)),
      anomaly_probability_(std::clamp(std::isfinite(anomaly_probability) ? anomaly_probability : 0.0, 0.0, 1.0)),
      now_(t0),
      boot_end_(t0 + spec_.boot_min),
      job_rng_(seed, kJobStream),
      anomaly_rng_(seed, kAnomalyStream),
      noise_rng_(seed, kNoiseStream),
      id_rng_(seed, kIdStream) {
  hotend_.tau_min = kHotendCoolTauMin;
  bed_.tau_min = kBedCoolTauMin;
  hotend_.from_min = bed_.from_min = t0;
}

double PrinterModel::next_event(const Job& j) const {
  switch (j.view.state) {
    case JobState::kPrePrint: return j.phase_start + spec_.heat_min;
    case JobState::kPrinting: {
      double end = j.phase_start + (j.view.time_total_s - j.elapsed_s) / 60.0;
      if (j.anomaly_at_s && *j.anomaly_at_s >= j.elapsed_s) {
        end = std::min(end, j.phase_start + (*j.anomaly_at_s - j.elapsed_s) / 60.0);
      }
      return end;
    }
    case JobState::kPaused: return kInf;
    case JobState::kPostPrint: return j.phase_start + spec_.post_min;
    case JobState::kWaitCleanup: return j.phase_start + spec_.cleanup_min;
  }
  return kInf;
}

void PrinterModel::advance(double now) {
  // Requests of different threads read the clock before taking the lock, so "now" may step
  // back by a hair; time never runs backwards for the model (and NaN is ignored).
  if (!(now >= now_)) now = now_;
  // Each step removes one event; a job has a handful, so this terminates quickly.
  while (job_) {
    const double t = next_event(*job_);
    if (t > now) break;
    fire(t);
  }
  now_ = now;
}

void PrinterModel::fire(double t) {
  Job& j = *job_;
  switch (j.view.state) {
    case JobState::kPrePrint: enter_printing(t); return;
    case JobState::kPrinting: {
      const double end = j.phase_start + (j.view.time_total_s - j.elapsed_s) / 60.0;
      if (j.anomaly_at_s && *j.anomaly_at_s >= j.elapsed_s) {
        const double at = j.phase_start + (*j.anomaly_at_s - j.elapsed_s) / 60.0;
        if (at <= end) {
          j.anomaly_at_s.reset();
          start_anomaly(j.anomaly_sensor, at);
          return;
        }
      }
      finish_printing(t);
      return;
    }
    case JobState::kPaused: return;  // never scheduled
    case JobState::kPostPrint:
      j.view.state = JobState::kWaitCleanup;
      j.phase_start = t;
      j.view.result = j.failed ? JobResult::kFailed : JobResult::kFinished;
      ++(j.failed ? counters_.jobs_failed : counters_.jobs_finished);
      return;
    case JobState::kWaitCleanup: cleanup(t); return;
  }
}

void PrinterModel::enter_printing(double t) {
  Job& j = *job_;
  j.view.state = JobState::kPrinting;
  j.phase_start = t;
  j.elapsed_s = 0;
  // Always draw the coin, so whether job k gets an anomaly does not depend on earlier outcomes.
  const double coin = anomaly_rng_.uniform();
  const double where = anomaly_rng_.uniform_open();
  const double which = anomaly_rng_.uniform();
  if (coin < anomaly_probability_) {
    j.anomaly_at_s = where * j.view.time_total_s;
    j.anomaly_sensor = which < 0.5 ? Sensor::kHotend : Sensor::kBed;
  }
}

void PrinterModel::finish_printing(double t) {
  Job& j = *job_;
  j.elapsed_s = j.view.time_total_s;
  j.view.finished_min = t;
  // An anomaly nobody stopped spoils the part: the print ends but its result is "Failed".
  j.failed = anomaly_start_[0].has_value() || anomaly_start_[1].has_value();
  j.view.state = JobState::kPostPrint;
  j.phase_start = t;
  j.anomaly_at_s.reset();
  hotend_.cool(t);
  bed_.cool(t);
}

void PrinterModel::cleanup(double t) {
  Job& j = *job_;
  j.view.cleaned_min = t;
  JobView v = view_of(j);
  history_.push_back(std::move(v));
  while (history_.size() > kHistoryCap) history_.pop_front();
  job_.reset();
}

bool PrinterModel::start_anomaly(Sensor s, double t) {
  auto& a = anomaly_start_[idx(s)];
  if (a) return false;
  a = t;
  ++counters_.anomalies;
  return true;
}

JobView PrinterModel::view_of(const Job& j) const {
  JobView v = j.view;
  double elapsed = j.elapsed_s;
  if (j.view.state == JobState::kPrinting) elapsed += (now_ - j.phase_start) * 60.0;
  elapsed = std::clamp(elapsed, 0.0, v.time_total_s);
  v.time_elapsed_s = elapsed;
  if (v.time_total_s > 0) {
    v.progress = elapsed / v.time_total_s;
  } else {
    v.progress = (v.state == JobState::kPrePrint) ? 0.0 : 1.0;
  }
  return v;
}

std::string PrinterModel::make_uuid() {
  // RFC 4122 version 4 layout, from the printer's id stream (reproducible for a seed).
  const uint64_t hi = id_rng_.next(), lo = id_rng_.next();
  const uint64_t a = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  const uint64_t b = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFFF, b >> 48,
                     b & 0xFFFFFFFFFFFFULL);
}

PrinterStatus PrinterModel::status(double now) {
  advance(now);
  if (maintenance_until_ && now_ < *maintenance_until_) return PrinterStatus::kMaintenance;
  if (job_) return PrinterStatus::kPrinting;
  if (now_ < boot_end_) return PrinterStatus::kBooting;
  return PrinterStatus::kIdle;
}

Expected<JobView, ModelError> PrinterModel::start_job(std::string name, std::optional<double> estimate_s,
                                                      double now) {
  if (status(now) != PrinterStatus::kIdle) return unexpected(ModelError::kBusy);
  if (estimate_s && !(std::isfinite(*estimate_s) && *estimate_s >= 0)) return unexpected(ModelError::kBadArgument);
  const double estimate = estimate_s ? *estimate_s : job_rng_.triangular(kTriMinMin, kTriModeMin, kTriMaxMin) * 60.0;
  Job j;
  j.view.name = std::move(name);
  j.view.uuid = make_uuid();
  j.view.state = JobState::kPrePrint;
  j.view.estimate_s = estimate;
  j.view.time_total_s = estimate * spec_.speed;
  j.view.started_min = now_;
  j.phase_start = now_;
  job_ = std::move(j);
  ++counters_.jobs_started;
  hotend_.heat(now_, kHotendTargetC, now_ + spec_.heat_min);
  bed_.heat(now_, kBedTargetC, now_ + spec_.heat_min);
  advance(now_);  // a zero-length pre_print moves on at once
  return view_of(*job_);
}

Expected<void, ModelError> PrinterModel::pause(double now) {
  advance(now);
  if (!job_) return unexpected(ModelError::kNoJob);
  Job& j = *job_;
  if (j.view.state != JobState::kPrinting) return unexpected(ModelError::kNotAllowed);
  j.elapsed_s = std::min(j.view.time_total_s, j.elapsed_s + (now_ - j.phase_start) * 60.0);
  j.view.state = JobState::kPaused;
  j.phase_start = now_;
  return {};
}

Expected<void, ModelError> PrinterModel::resume(double now) {
  advance(now);
  if (!job_) return unexpected(ModelError::kNoJob);
  Job& j = *job_;
  if (j.view.state != JobState::kPaused) return unexpected(ModelError::kNotAllowed);
  j.view.state = JobState::kPrinting;
  j.phase_start = now_;
  return {};
}

Expected<void, ModelError> PrinterModel::abort(double now) {
  advance(now);
  if (!job_) return unexpected(ModelError::kNoJob);
  Job& j = *job_;
  switch (j.view.state) {
    case JobState::kWaitCleanup: return unexpected(ModelError::kNotAllowed);
    case JobState::kPrinting:
      j.elapsed_s = std::min(j.view.time_total_s, j.elapsed_s + (now_ - j.phase_start) * 60.0);
      [[fallthrough]];
    case JobState::kPrePrint:
    case JobState::kPaused:
      hotend_.cool(now_);
      bed_.cool(now_);
      break;
    case JobState::kPostPrint: break;  // heaters already off
  }
  if (!j.view.finished_min) j.view.finished_min = now_;
  j.view.result = JobResult::kAborted;
  j.view.state = JobState::kWaitCleanup;
  j.phase_start = now_;
  j.anomaly_at_s.reset();
  ++counters_.jobs_aborted;
  return {};
}

Expected<void, ModelError> PrinterModel::start_maintenance(double minutes, double now) {
  if (!(std::isfinite(minutes) && minutes >= 0)) return unexpected(ModelError::kBadArgument);
  advance(now);
  if (job_ && job_->view.state != JobState::kWaitCleanup) return unexpected(ModelError::kBusy);
  if (job_) cleanup(now_);
  maintenance_until_ = now_ + minutes;
  anomaly_start_[0].reset();
  anomaly_start_[1].reset();
  return {};
}

bool PrinterModel::inject_anomaly(Sensor s, double now) {
  advance(now);
  return start_anomaly(s, now_);
}

std::optional<JobView> PrinterModel::job(double now) {
  advance(now);
  if (!job_) return std::nullopt;
  return view_of(*job_);
}

Temperature PrinterModel::nominal_temperature(Sensor s, double now) {
  advance(now);
  const Thermal& th = thermal(s);
  Temperature out;
  out.target = th.heating ? th.target : 0.0;
  out.current = th.nominal(now_);
  if (const auto& a = anomaly_start_[idx(s)]) {
    const double drift = kAnomalyDriftCPerMin * std::max(0.0, now_ - *a);
    out.current += (s == Sensor::kHotend) ? -drift : drift;
  }
  out.current = std::clamp(out.current, kMinSensorC, kMaxSensorC);
  return out;
}

Temperature PrinterModel::temperature(Sensor s, double now) {
  Temperature t = nominal_temperature(s, now);
  t.current = std::clamp(t.current + noise_rng_.gaussian(kSensorNoiseSdC), kMinSensorC, kMaxSensorC);
  t.current = std::round(t.current * 100.0) / 100.0;  // Jedi reports a couple of decimals
  return t;
}

std::optional<double> PrinterModel::anomaly_since(Sensor s, double now) {
  advance(now);
  return anomaly_start_[idx(s)];
}

const std::deque<JobView>& PrinterModel::history(double now) {
  advance(now);
  return history_;
}

}  // namespace sdn::fleet
