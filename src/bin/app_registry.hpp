// Static app registry: maps app names to factories built from the configuration, and
// collects each app instance's counters for the stats file.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/expected.hpp"
#include "core/metrics.hpp"
#include "data/config.hpp"
#include "data/due.hpp"
#include "southbound/app.hpp"

namespace sdn::apps::cpam {
class CpamService;
}
namespace sdn::cluster {
class Cluster;
}
namespace sdn::apps::ids {
class Sampler;
class Detector;
}  // namespace sdn::apps::ids
namespace sdn::apps::mitigation {
class MitigationService;
}

namespace sdn::bin {

class AppSet {
 public:
  std::vector<southbound::AppFactory> factories;
  // Set by the caller before the first factory runs: apps open their DUE clients on these
  // backends and register histograms in `metrics`.
  std::shared_ptr<data::Backends> backends;
  data::DueConfig due_config;
  core::Metrics* metrics = nullptr;
  // Set by make_apps when an app needs the whole controller on one event loop (CPAM's
  // cooperative runtime mode): the caller then runs one shard.
  bool single_shard = false;
  // Set by the caller when [cluster] is on (docs/cluster.md), before the first factory runs:
  // the cluster (CPAM's shared state and rotation leader), and whether a switch this instance
  // does not master is connected to it (the topology's links to a peer's switches).
  std::shared_ptr<cluster::Cluster> cluster;
  std::function<bool(uint64_t dpid)> remote_switch;
  // The CPAM service once its first instance exists (null when cpam is not configured): what
  // the northbound API's CPAM hooks reach.
  std::shared_ptr<apps::cpam::CpamService> cpam;
  // The ids case study's services when configured (null otherwise): what the northbound API's
  // ids and mitigation hooks reach.
  std::shared_ptr<apps::ids::Sampler> sampler;
  std::shared_ptr<apps::ids::Detector> detector;
  std::shared_ptr<apps::mitigation::MitigationService> mitigation;

  // Counters of every app instance created so far, summed per app name.
  nlohmann::json stats() const;

  // Called by factories as instances are created (on the controller's set-up thread).
  void add_reporter(std::string app, std::function<nlohmann::json()> report);

  // One DUE client per app id, created on first use (every shard's instance shares it);
  // null when no backends were set.
  std::shared_ptr<data::Due> due_for(const std::string& app_id, unsigned roles, std::vector<data::Interest> interests,
                                     std::vector<data::Capability> capabilities);

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::function<nlohmann::json()>>> reporters_;
  std::map<std::string, std::shared_ptr<data::Due>> dues_;
};

// Names the apps this binary knows.
std::vector<std::string> known_apps();

// Reads [controller] apps (overridden by `names` when non-empty) and each app's section.
Expected<std::shared_ptr<AppSet>, std::string> make_apps(core::Config& cfg, const std::vector<std::string>& names);

}  // namespace sdn::bin
