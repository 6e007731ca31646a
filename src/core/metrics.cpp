// Metrics registry.
#include "core/metrics.hpp"

#include <nlohmann/json.hpp>

namespace sdn::core {

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
  return {{"counters", c}, {"gauges", g}};
}

}  // namespace sdn::core
