// SimClock: steady_clock scaled by a constant factor, and the sim-time -> ISO 8601 mapping.
#include "apps/fleet/assets/sim_clock.hpp"

#include <cmath>

#include <fmt/format.h>

namespace sdn::fleet {

namespace {
// Base epoch of simulated time: 2026-01-01T08:00:00 (no time zone; Jedi prints local time).
constexpr std::chrono::year_month_day kBaseDay{std::chrono::year{2026}, std::chrono::January,
                                               std::chrono::day{1}};
constexpr int64_t kBaseSecondOfDay = 8 * 3600;
// Beyond ~1000 years of simulated time the calendar maths stops being meaningful.
constexpr double kMaxAbsMinutes = 1000.0 * 366 * 24 * 60;
}  // namespace

SimClock::SimClock(double factor)
    : factor_(std::isfinite(factor) && factor > 0 ? factor : 1.0), start_(std::chrono::steady_clock::now()) {}

double SimClock::now_min() const {
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  const double secs = std::chrono::duration<double>(elapsed).count();
  return secs * factor_ / 60.0;
}

std::chrono::nanoseconds SimClock::real_for(double sim_min) const {
  if (!(sim_min > 0)) return std::chrono::nanoseconds{0};
  const double ns = sim_min * 60.0 / factor_ * 1e9;
  if (ns >= 9.2e18) return std::chrono::nanoseconds::max();
  return std::chrono::nanoseconds{static_cast<int64_t>(ns)};
}

std::string SimClock::iso(double sim_min) const {
  if (!std::isfinite(sim_min) || std::fabs(sim_min) > kMaxAbsMinutes) return {};
  const auto offset = static_cast<int64_t>(std::llround(sim_min * 60.0));
  const int64_t total = kBaseSecondOfDay + offset;
  int64_t days = total / 86400;
  int64_t sod = total % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  const std::chrono::year_month_day ymd{std::chrono::sys_days{kBaseDay} + std::chrono::days{days}};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), sod / 3600,
                     (sod / 60) % 60, sod % 60);
}

}  // namespace sdn::fleet
