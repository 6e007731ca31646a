// [cluster] -> ClusterConfig, and the checks Cluster::start() repeats.
#include <cctype>

#include <fmt/format.h>

#include "cluster/cluster.hpp"
#include "data/sentinel.hpp"

namespace sdn::cluster {
namespace {

// Every rule, each problem prefixed by its key; shared by the file reader and start().
std::vector<std::string> problems_of(const ClusterConfig& c) {
  std::vector<std::string> p;
  if (c.name.empty()) p.push_back("cluster.name: must not be empty");
  for (char ch : c.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) {
      p.push_back(fmt::format("cluster.name: '{}' must be letters, digits, '-', '_' or '.'", c.name));
      break;
    }
  for (char ch : c.instance_id)
    if (std::isspace(static_cast<unsigned char>(ch)) || std::iscntrl(static_cast<unsigned char>(ch))) {
      p.push_back(fmt::format("cluster.instance_id: '{}' must not contain spaces", c.instance_id));
      break;
    }
  if (c.redis.empty())
    p.push_back(c.sentinel_master.empty() ? "cluster.redis: needs the Redis server's host:port"
                                          : "cluster.redis: needs the sentinels' host:port");
  for (const auto& r : c.redis)
    if (auto hp = data::parse_host_port(r); !hp) p.push_back("cluster.redis: " + hp.error());
  if (c.renew_interval.count() <= 0) p.push_back("cluster.renew_interval_ms: must be positive");
  if (c.check_interval.count() <= 0) p.push_back("cluster.check_interval_ms: must be positive");
  if (c.claim_delay.count() < 0) p.push_back("cluster.claim_delay_ms: must not be negative");
  if (c.lease <= 2 * c.renew_interval)
    p.push_back(fmt::format("cluster.lease_ms: {} must exceed 2 * renew_interval_ms ({})",
                            c.lease.count(), c.renew_interval.count()));
  if (c.check_interval >= c.lease)
    p.push_back(fmt::format("cluster.check_interval_ms: {} must be below lease_ms ({})",
                            c.check_interval.count(), c.lease.count()));
  return p;
}

}  // namespace

Expected<void, std::string> check_cluster_config(const ClusterConfig& cfg) {
  auto p = problems_of(cfg);
  if (p.empty()) return {};
  std::string all;
  for (const auto& s : p) all += (all.empty() ? "" : "; ") + s;
  return unexpected(std::move(all));
}

ClusterConfig cluster_config_from(core::Config& c) {
  ClusterConfig k;
  const char* s = "cluster";
  k.enabled = c.get_bool(s, "enabled", k.enabled);
  k.name = c.get_string(s, "name", k.name);
  k.instance_id = c.get_string(s, "instance_id", k.instance_id);
  k.redis = c.get_string_list(s, "redis", k.redis);
  k.sentinel_master = c.get_string(s, "sentinel_master", k.sentinel_master);
  k.user = c.get_string(s, "user", k.user);
  k.password = c.get_string(s, "password", k.password);
  k.lease = std::chrono::milliseconds(c.get_int(s, "lease_ms", k.lease.count(), 10, 3'600'000));
  k.renew_interval = std::chrono::milliseconds(
      c.get_int(s, "renew_interval_ms", k.renew_interval.count(), 1, 3'600'000));
  k.check_interval = std::chrono::milliseconds(
      c.get_int(s, "check_interval_ms", k.check_interval.count(), 1, 3'600'000));
  k.claim_delay = std::chrono::milliseconds(
      c.get_int(s, "claim_delay_ms", k.claim_delay.count(), 0, 3'600'000));
  k.balance = c.get_bool(s, "balance", k.balance);
  for (auto& p : problems_of(k)) c.add_problem(std::move(p));
  return k;
}

}  // namespace sdn::cluster
