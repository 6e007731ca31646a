// Metrics registry.
#include "core/metrics.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace sdn::core {

int Histogram::bucket_of(uint64_t ns) {
  if (ns < kSub) return static_cast<int>(ns);
  const int msb = 63 - __builtin_clzll(ns);           // >= 4
  const int shift = msb - 4;                          // log2(kSub) = 4
  const int sub = static_cast<int>((ns >> shift) & (kSub - 1));
  return (shift + 1) * kSub + sub;
}

uint64_t Histogram::upper_edge(int bucket) {
  if (bucket < kSub) return static_cast<uint64_t>(bucket);
  const int shift = bucket / kSub - 1;
  const uint64_t sub = static_cast<uint64_t>(bucket % kSub);
  return ((uint64_t{kSub} + sub + 1) << shift) - 1;
}

void Histogram::record(uint64_t ns) {
  buckets_[bucket_of(ns)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(ns, std::memory_order_relaxed);
  raise_max(max_, ns, std::memory_order_relaxed);
}

double Histogram::mean() const {
  const uint64_t n = count();
  return n ? static_cast<double>(sum_.load(std::memory_order_relaxed)) / static_cast<double>(n) : 0.0;
}

uint64_t Histogram::quantile(double q) const {
  const uint64_t n = count();
  if (n == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(q * static_cast<double>(n) + 0.5));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b].load(std::memory_order_relaxed);
    if (seen >= rank) return std::min(upper_edge(b), max());
  }
  return max();
}

std::vector<std::pair<uint64_t, uint64_t>> Histogram::buckets() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (int b = 0; b < kBuckets; ++b)
    if (const uint64_t n = buckets_[b].load(std::memory_order_relaxed)) out.emplace_back(upper_edge(b), n);
  return out;
}

Counter& Metrics::counter(std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = counters_.find(name);
  if (it == counters_.end()) it = counters_.emplace(std::string(name), std::make_unique<Counter>()).first;
  return *it->second;
}

Gauge& Metrics::gauge(std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = gauges_.find(name);
  if (it == gauges_.end()) it = gauges_.emplace(std::string(name), std::make_unique<Gauge>()).first;
  return *it->second;
}

Histogram& Metrics::histogram(std::string_view name) {
  std::lock_guard lock(mu_);
  auto it = histograms_.find(name);
  if (it == histograms_.end()) it = histograms_.emplace(std::string(name), std::make_unique<Histogram>()).first;
  return *it->second;
}

uint64_t Metrics::counter_value(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = counters_.find(name);
  return it == counters_.end() ? 0 : it->second->value();
}

int64_t Metrics::gauge_value(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = gauges_.find(name);
  return it == gauges_.end() ? 0 : it->second->value();
}

nlohmann::json Metrics::to_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json c = nlohmann::json::object(), g = nlohmann::json::object();
  for (const auto& [k, v] : counters_) c[k] = v->value();
  for (const auto& [k, v] : gauges_) g[k] = v->value();
  nlohmann::json h = nlohmann::json::object();
  auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  for (const auto& [k, v] : histograms_) {
    h[k] = {{"count", v->count()},           {"mean_us", v->mean() / 1000.0},
            {"p50_us", us(v->quantile(0.5))}, {"p90_us", us(v->quantile(0.9))},
            {"p99_us", us(v->quantile(0.99))}, {"p999_us", us(v->quantile(0.999))},
            {"max_us", us(v->max())}};
  }
  return {{"counters", c}, {"gauges", g}, {"histograms", h}};
}

void Metrics::each_counter(const std::function<void(const std::string&, uint64_t)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [k, v] : counters_) f(k, v->value());
}

void Metrics::each_gauge(const std::function<void(const std::string&, int64_t)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [k, v] : gauges_) f(k, v->value());
}

void Metrics::each_histogram(const std::function<void(const std::string&, const Histogram&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [k, v] : histograms_) f(k, *v);
}

void sum_json(nlohmann::json& sum, const nlohmann::json& part) {
  if (!sum.is_object()) sum = nlohmann::json::object();
  if (!part.is_object()) return;
  for (const auto& [k, v] : part.items()) {
    auto it = sum.find(k);
    if (v.is_number()) {
      if (it == sum.end() || !it->is_number()) {
        sum[k] = v;
      } else if (it->is_number_integer() && v.is_number_integer()) {
        const bool negative = it->get<int64_t>() < 0 && !it->is_number_unsigned();
        if (negative || (v.get<int64_t>() < 0 && !v.is_number_unsigned())) {
          *it = it->get<int64_t>() + v.get<int64_t>();
        } else {
          *it = it->get<uint64_t>() + v.get<uint64_t>();
        }
      } else {
        *it = it->get<double>() + v.get<double>();
      }
    } else if (v.is_object()) {
      if (it == sum.end() || !it->is_object()) sum[k] = nlohmann::json::object();
      sum_json(sum[k], v);
    } else {
      sum[k] = v;
    }
  }
}

}  // namespace sdn::core
