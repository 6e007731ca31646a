// Logging set-up and the log rate limiter.
#include "core/log.hpp"

namespace sdn::core {

bool set_log_level(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") return false;
  spdlog::set_level(lvl);
  return true;
}

bool RateLimiter::allow() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t start = window_start_.load(std::memory_order_relaxed);
  if (now - start >= period_ns_) {
    if (window_start_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
      count_.store(0, std::memory_order_relaxed);
    }
  }
  if (count_.fetch_add(1, std::memory_order_relaxed) < burst_) return true;
  suppressed_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace sdn::core
