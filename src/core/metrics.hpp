// Metrics registry: named counters and gauges, cheap to bump from any shard (relaxed
// atomics), exported as JSON (and later Prometheus). Names are dotted, e.g.
// "southbound.rx.packet_in"; a name is registered once and its address never changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace sdn::core {

class Counter {
 public:
  void inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void add(int64_t d) { v_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

class Metrics {
 public:
  // Returns the counter/gauge of that name, creating it on first use. Call at set-up and
  // keep the reference; lookups take a lock.
  Counter& counter(std::string_view name);
  Gauge& gauge(std::string_view name);

  uint64_t counter_value(std::string_view name) const;  // 0 if absent
  int64_t gauge_value(std::string_view name) const;     // 0 if absent

  // {"counters": {name: n...}, "gauges": {name: n...}}
  nlohmann::json to_json() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>, std::less<>> counters_;
  std::map<std::string, std::unique_ptr<Gauge>, std::less<>> gauges_;
};

}  // namespace sdn::core
