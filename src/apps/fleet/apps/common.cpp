// Job records, Jedi datetimes and the per-app work queue (common.hpp).
#include "apps/fleet/apps/common.hpp"

#include <cstdio>
#include <ctime>
#include <map>

#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace sdn::fleet {

Json to_json(const JobSpec& j) {
  return Json{{"id", j.id}, {"order", j.order}, {"print_min", j.print_min},
              {"urgent", j.urgent}, {"released", j.released}};
}

std::optional<JobSpec> job_from_json(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  auto id = j.find("id");
  auto order = j.find("order");
  auto pm = j.find("print_min");
  if (id == j.end() || !id->is_string() || order == j.end() || !order->is_string() ||
      pm == j.end() || !pm->is_number() || !(pm->get<double>() > 0))
    return std::nullopt;
  JobSpec s;
  s.id = id->get<std::string>();
  s.order = order->get<std::string>();
  s.print_min = pm->get<double>();
  if (auto u = j.find("urgent"); u != j.end() && u->is_boolean()) s.urgent = u->get<bool>();
  if (auto r = j.find("released"); r != j.end() && r->is_number()) s.released = r->get<double>();
  return s;
}

namespace {
// Days from 1970-01-01 of a proleptic Gregorian date (civil calendar arithmetic).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}
std::optional<int64_t> epoch_seconds(std::string_view s) {
  int y, mo, d, h, mi;
  double sec;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6)
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61)
    return std::nullopt;
  return days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
         h * 3600 + mi * 60 + static_cast<int64_t>(sec);
}
}  // namespace

std::optional<double> sim_min_of_iso(std::string_view iso) {
  static const int64_t base = *epoch_seconds("2026-01-01T08:00:00");
  auto t = epoch_seconds(iso);
  if (!t) return std::nullopt;
  // Fractional seconds, if the printer sent them.
  double frac = 0;
  if (auto dot = iso.find('.'); dot != std::string_view::npos)
    frac = std::atof(std::string("0").append(iso.substr(dot)).c_str());
  return (static_cast<double>(*t - base) + frac) / 60.0;
}

WorkQueue::WorkQueue() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      auto now = Clock::now();
      while (!timed_.empty() && timed_.begin()->first <= now) {
        ready_.push_back(std::move(timed_.begin()->second));
        timed_.erase(timed_.begin());
      }
      if (!ready_.empty()) {
        auto fn = std::move(ready_.front());
        ready_.pop_front();
        lock.unlock();
        // A record of the wrong shape (nlohmann's value() throws on a type mismatch) costs that
        // one callback, counted and logged, never the app.
        try {
          fn();
        } catch (const std::exception& e) {
          errors_.fetch_add(1, std::memory_order_relaxed);
          SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet: a callback failed: {}", e.what());
        }
        lock.lock();
        continue;
      }
      if (timed_.empty()) {
        cv_.wait(lock);
      } else {
        // A copy: stop() may clear timed_ while we wait, and wait_until reads it on waking.
        const Clock::time_point until = timed_.begin()->first;
        cv_.wait_until(lock, until);
      }
    }
  });
}

WorkQueue::~WorkQueue() { stop(); }

void WorkQueue::post(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    ready_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void WorkQueue::post_after(std::chrono::nanoseconds delay, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    timed_.emplace(Clock::now() + delay, std::move(fn));
  }
  cv_.notify_one();
}

void WorkQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    ready_.clear();
    timed_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable() && !on_this_thread()) thread_.join();
}

}  // namespace sdn::fleet
