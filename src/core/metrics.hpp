// Metrics registry: named counters and gauges, cheap to bump from any shard (relaxed
// atomics), exported as JSON and, by the northbound layer, in the Prometheus text format. Names are dotted, e.g.
// "southbound.rx.packet_in"; a name is registered once and its address never changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <functional>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sdn::core {

// Raises `a` to `v` if `v` is larger (a largest-seen figure written from several threads; the
// compare-exchange checks the value the first load read, so that load may be relaxed).
template <class T>
void raise_max(std::atomic<T>& a, T v, std::memory_order order = std::memory_order_seq_cst) {
  T m = a.load(std::memory_order_relaxed);
  while (v > m && !a.compare_exchange_weak(m, v, order)) {
  }
}

// An app counter with a single writer (its shard) and any reader: relaxed load + store, no
// read-modify-write on the hot path.
struct ShardStat {
  std::atomic<uint64_t> v{0};
  void inc(uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

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

// Latency histogram in nanoseconds: log2 buckets with 16 linear sub-buckets each (about 6 %
// relative error), lock-free recording from any thread.
class Histogram {
 public:
  static constexpr int kSub = 16;
  static constexpr int kBuckets = 64 * kSub;
  void record(uint64_t ns);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  double mean() const;
  uint64_t sum() const { return sum_.load(std::memory_order_relaxed); }
  // The non-empty buckets, lowest first: (upper edge in ns, count).
  std::vector<std::pair<uint64_t, uint64_t>> buckets() const;
  // Upper edge of the bucket holding quantile q (0..1); 0 when empty.
  uint64_t quantile(double q) const;
  static int bucket_of(uint64_t ns);
  static uint64_t upper_edge(int bucket);

 private:
  std::atomic<uint64_t> buckets_[kBuckets] = {};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

class Metrics {
 public:
  // Returns the counter/gauge of that name, creating it on first use. Call at set-up and
  // keep the reference; lookups take a lock.
  Counter& counter(std::string_view name);
  Gauge& gauge(std::string_view name);
  Histogram& histogram(std::string_view name);

  uint64_t counter_value(std::string_view name) const;  // 0 if absent
  int64_t gauge_value(std::string_view name) const;     // 0 if absent

  // {"counters": {name: n...}, "gauges": {name: n...},
  //  "histograms": {name: {count, mean_us, p50_us, p90_us, p99_us, p999_us, max_us}}}
  nlohmann::json to_json() const;

  // Every metric, in name order (for exposition formats); the registry lock is held meanwhile.
  void each_counter(const std::function<void(const std::string&, uint64_t)>& f) const;
  void each_gauge(const std::function<void(const std::string&, int64_t)>& f) const;
  void each_histogram(const std::function<void(const std::string&, const Histogram&)>& f) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>, std::less<>> counters_;
  std::map<std::string, std::unique_ptr<Gauge>, std::less<>> gauges_;
  std::map<std::string, std::unique_ptr<Histogram>, std::less<>> histograms_;
};

// Adds `part` into `sum` (the stats of several instances of one app, e.g. one per shard):
// numbers are summed (integers stay integers, unsigned when not negative; with a fraction they
// become doubles), objects are merged key by key the same way, anything else (strings, arrays,
// null) takes the newer value.
void sum_json(nlohmann::json& sum, const nlohmann::json& part);

}  // namespace sdn::core
