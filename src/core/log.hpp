// Logging set-up (spdlog) and a rate limiter for logs triggered by wire input, so a peer
// that sends garbage cannot flood the log (STYLE.md: rate-limited logs).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include <spdlog/spdlog.h>

namespace sdn::core {

// Sets the default logger's level from a name ("trace".."off"); false if unknown.
bool set_log_level(std::string_view level);

// Allows at most `burst` events per `period`; thread-safe, lock-free.
class RateLimiter {
 public:
  explicit RateLimiter(uint32_t burst = 10, std::chrono::milliseconds period = std::chrono::seconds(1))
      : burst_(burst), period_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(period).count()) {}
  bool allow();
  uint64_t suppressed() const { return suppressed_.load(std::memory_order_relaxed); }

 private:
  uint32_t burst_;
  int64_t period_ns_;
  std::atomic<int64_t> window_start_{0};
  std::atomic<uint32_t> count_{0};
  std::atomic<uint64_t> suppressed_{0};
};

}  // namespace sdn::core

// Log at most 10 lines a second from this call site.
#define SDN_LOG_RATELIMITED(level, ...)                                   \
  do {                                                                    \
    static ::sdn::core::RateLimiter sdn_rl_;                              \
    if (sdn_rl_.allow()) ::spdlog::log(level, __VA_ARGS__);               \
  } while (0)
