// Static app registry.
#include "bin/app_registry.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/cpam/cpam.hpp"
#include "apps/forwarding/fabric.hpp"
#include "apps/forwarding/forwarding.hpp"
#include "apps/ids/detector.hpp"
#include "apps/ids/sampler.hpp"
#include "apps/mitigation/mitigation.hpp"
#include "apps/topology/topology.hpp"
#include "apps/topology/wire.hpp"
#include "core/metrics.hpp"

namespace sdn::bin {

std::vector<std::string> known_apps() { return {"topology", "cpam", "forwarding", "sampler", "ids", "mitigation"}; }

void AppSet::add_reporter(std::string app, std::function<nlohmann::json()> report) {
  std::lock_guard lock(mu_);
  reporters_.emplace_back(std::move(app), std::move(report));
}

nlohmann::json AppSet::stats() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [app, report] : reporters_) {
    // Not only counters: CPAM in a cluster reports a "cluster" object (summing it as a number
    // threw, and ended the process, on the first stats write).
    core::sum_json(out[app], report());
  }
  return out;
}

std::shared_ptr<data::Due> AppSet::due_for(const std::string& app_id, unsigned roles,
                                           std::vector<data::Interest> interests,
                                           std::vector<data::Capability> capabilities) {
  std::lock_guard lock(mu_);
  if (!backends) return nullptr;
  auto& due = dues_[app_id];
  if (!due) {
    due = std::make_shared<data::Due>(backends, due_config);
    if (auto r = due->init(app_id, roles, std::move(interests), std::move(capabilities)); !r)
      spdlog::error("{}: DUE init failed: {}", app_id, r.error());
  }
  return due;
}

namespace {

nlohmann::json learning_stats(const apps::ForwardingCounters& c) {
  return {{"packet_ins", c.packet_ins},         {"floods", c.floods},
          {"flows_installed", c.flows_installed}, {"learned", c.learned},
          {"moves", c.moves},                   {"drops", c.drops},
          {"parse_errors", c.parse_errors},     {"ignored", c.ignored},
          {"mac_cap_exceeded", c.mac_cap_exceeded}, {"ports_down", c.ports_down},
          {"flows_removed", c.flows_removed}};
}

nlohmann::json fabric_stats(const apps::FabricCounters& c) {
  return {{"packet_ins", c.packet_ins},       {"floods", c.floods},       {"proxy_arps", c.proxy_arps},
          {"flood_dead_ends", c.flood_dead_ends}, {"paths_installed", c.paths_installed},
          {"paths_failed", c.paths_failed},   {"flows_installed", c.flows_installed},
          {"drops", c.drops},                 {"no_path", c.no_path},
          {"not_ready", c.not_ready},         {"parse_errors", c.parse_errors},
          {"ignored", c.ignored},             {"reroutes", c.reroutes}, {"cluster_handoffs", c.cluster_handoffs},
          {"flows_removed", c.flows_removed}, {"topology_records", c.topology_records},
          {"topology_errors", c.topology_errors}};
}

// An app that is a service of its own (a thread, a subscription) rather than a switch handler:
// shard 0's instance starts it and stops it with the runtime.
class ServiceApp : public southbound::App {
 public:
  ServiceApp(std::string name, unsigned shard, std::function<void()> start, std::function<void()> stop)
      : name_(std::move(name)), shard_(shard), start_(std::move(start)), stop_(std::move(stop)) {}
  std::string_view name() const override { return name_; }
  void on_start(southbound::Runtime&, unsigned) override {
    if (shard_ == 0 && start_) start_();
  }
  void on_stop() override {
    if (shard_ == 0 && stop_) stop_();
  }

 private:
  std::string name_;
  unsigned shard_;
  std::function<void()> start_, stop_;
};

}  // namespace

Expected<std::shared_ptr<AppSet>, std::string> make_apps(core::Config& cfg, const std::vector<std::string>& names) {
  auto set = std::make_shared<AppSet>();
  std::vector<std::string> wanted = cfg.get_string_list("controller", "apps", {"topology", "forwarding"});
  if (!names.empty()) wanted = names;
  // Every app's section is read even when the app is off, so its keys are still validated.
  apps::ForwardingConfig fwd = apps::read_forwarding_config(cfg);
  apps::topology::TopologyConfig topo = apps::topology::read_topology_config(cfg);
  apps::cpam::CpamConfig cpam = apps::cpam::read_cpam_config(cfg);
  apps::ids::SamplerConfig sampler = apps::ids::read_sampler_config(cfg);
  apps::ids::DetectorConfig detector = apps::ids::read_detector_config(cfg);
  apps::mitigation::MitigationConfig mitigation = apps::mitigation::read_mitigation_config(cfg);
  const bool has_topology = std::find(wanted.begin(), wanted.end(), "topology") != wanted.end();
  std::weak_ptr<AppSet> weak = set;
  for (const auto& name : wanted) {
    if (name == "topology") {
      auto svc = std::make_shared<std::shared_ptr<apps::topology::TopologyService>>();
      set->factories.push_back([topo, weak, svc](unsigned shard) -> std::unique_ptr<southbound::App> {
        auto s = weak.lock();
        if (!*svc) {
          // In a cluster it also follows the switch records of every instance (a takeover
          // starts from the port roles the previous master published).
          const bool cluster = s && s->remote_switch;
          auto due = s ? s->due_for("topology", cluster ? data::kProducer | data::kConsumer : data::kProducer,
                                    cluster ? std::vector<data::Interest>{{"network/topology/switch/*@topology", std::nullopt}}
                                            : std::vector<data::Interest>{},
                                    {{std::string(apps::topology::kTopologyPattern), std::nullopt}})
                       : nullptr;
          apps::topology::TopologyConfig tc = topo;
          if (s && s->remote_switch) tc.remote_switch = s->remote_switch;
          *svc = std::make_shared<apps::topology::TopologyService>(tc, std::move(due));
        }
        auto app = std::make_unique<apps::topology::Topology>(*svc, shard);
        if (s && shard == apps::topology::kHomeShard) {
          std::weak_ptr<apps::topology::TopologyService> ws = *svc;
          s->add_reporter("topology", [ws] { return ws.lock() ? ws.lock()->stats_json() : nlohmann::json::object(); });
        }
        return app;
      });
    } else if (name == "cpam") {
      if (!has_topology) return unexpected(std::string("the cpam app needs the topology app in [controller] apps"));
      const auto at = std::find(wanted.begin(), wanted.end(), "cpam") - wanted.begin();
      const auto fw = std::find(wanted.begin(), wanted.end(), "forwarding") - wanted.begin();
      if (fw < at)
        return unexpected(std::string("[controller] apps: cpam must come before forwarding (it answers for the "
                                      "VIPs and the DNS address before forwarding would flood them)"));
      if (cpam.hosts.empty()) return unexpected(std::string("cpam: no protected hosts ([cpam] hosts or hosts_file)"));
      if (cpam.mode == apps::cpam::RuntimeMode::kCooperative) set->single_shard = true;
      auto svc = std::make_shared<std::shared_ptr<apps::cpam::CpamService>>();
      set->factories.push_back([cpam, weak, svc](unsigned shard) -> std::unique_ptr<southbound::App> {
        auto s = weak.lock();
        if (!*svc) {
          auto due = s ? s->due_for("cpam", data::kProducer | data::kConsumer,
                                    {{std::string(apps::topology::kTopologyPattern), std::nullopt}},
                                    {{"network/cpam/**", std::nullopt}})
                       : nullptr;
          *svc = s && s->cluster
                     ? std::make_shared<apps::cpam::CpamService>(cpam, std::move(due), s->metrics, s->cluster)
                     : std::make_shared<apps::cpam::CpamService>(cpam, std::move(due), s ? s->metrics : nullptr);
          if (s) {
            s->cpam = *svc;
            std::weak_ptr<apps::cpam::CpamService> ws = *svc;
            s->add_reporter("cpam", [ws] { return ws.lock() ? ws.lock()->stats_json() : nlohmann::json::object(); });
          }
        }
        return std::make_unique<apps::cpam::Cpam>(*svc, shard);
      });
    } else if (name == "forwarding" && fwd.mode == apps::ForwardingMode::kFabric) {
      if (!has_topology)
        return unexpected(std::string("forwarding.mode = \"fabric\" needs the topology app in [controller] apps "
                                      "(or use mode = \"learning\")"));
      set->factories.push_back([fwd, weak](unsigned) -> std::unique_ptr<southbound::App> {
        auto s = weak.lock();
        auto due = s ? s->due_for("forwarding", data::kConsumer,
                                  {{std::string(apps::topology::kTopologyPattern), std::nullopt}}, {})
                     : nullptr;
        // In a cluster a switch this instance takes over keeps the previous master's paths:
        // only a switch no instance ever mastered is cleared (the runtime does that when fresh).
        apps::ForwardingConfig f = fwd;
        if (s && s->cluster) f.clear_flows_on_connect = false;
        auto app = std::make_unique<apps::FabricForwarding>(f, std::move(due), s ? s->metrics : nullptr);
        const apps::FabricForwarding* raw = app.get();
        if (s) s->add_reporter("forwarding", [raw] { return fabric_stats(raw->counters()); });
        return app;
      });
    } else if (name == "forwarding") {
      set->factories.push_back([fwd, weak](unsigned) -> std::unique_ptr<southbound::App> {
        apps::ForwardingConfig f = fwd;
        if (auto s = weak.lock(); s && s->cluster) f.clear_flows_on_connect = false;  // as above
        auto app = std::make_unique<apps::Forwarding>(f);
        const apps::Forwarding* raw = app.get();
        if (auto s = weak.lock()) s->add_reporter("forwarding", [raw] { return learning_stats(raw->counters()); });
        return app;
      });
    } else if (name == "sampler") {
      if (sampler.interfaces.empty())
        return unexpected(std::string("sampler: no capture interfaces ([sampler] interfaces)"));
      set->factories.push_back([sampler, weak](unsigned shard) -> std::unique_ptr<southbound::App> {
        auto s = weak.lock();
        if (s && !s->sampler) {
          auto due = s->due_for("sampler", data::kProducer, {},
                                {{std::string(apps::ids::kTrafficPattern), sampler.max_freq}});
          s->sampler = std::make_shared<apps::ids::Sampler>(sampler, std::move(due));
          std::weak_ptr<apps::ids::Sampler> ws = s->sampler;
          s->add_reporter("sampler", [ws] { return ws.lock() ? ws.lock()->stats_json() : nlohmann::json::object(); });
        }
        std::shared_ptr<apps::ids::Sampler> svc = s ? s->sampler : nullptr;
        return std::make_unique<ServiceApp>(
            "sampler", shard, [svc] { if (svc) svc->start(); }, [svc] { if (svc) svc->stop(); });
      });
    } else if (name == "ids") {
      set->factories.push_back([detector, weak](unsigned shard) -> std::unique_ptr<southbound::App> {
        auto s = weak.lock();
        if (s && !s->detector) {
          auto due = s->due_for("ids", data::kProducer | data::kConsumer,
                                {{std::string(apps::ids::kTrafficPattern), detector.traffic_freq}},
                                {{std::string(apps::ids::kIdsPattern), std::nullopt}});
          s->detector = std::make_shared<apps::ids::Detector>(detector, std::move(due));
          std::weak_ptr<apps::ids::Detector> wd = s->detector;
          s->add_reporter("ids", [wd] { return wd.lock() ? wd.lock()->stats_json() : nlohmann::json::object(); });
        }
        std::shared_ptr<apps::ids::Detector> svc = s ? s->detector : nullptr;
        return std::make_unique<ServiceApp>(
            "ids", shard,
            [svc] {
              if (!svc) return;
              if (auto r = svc->start(); !r) spdlog::error("ids: {}", r.error());
            },
            [svc] { if (svc) svc->stop(); });
      });
    } else if (name == "mitigation") {
      set->factories.push_back([mitigation, weak](unsigned shard) -> std::unique_ptr<southbound::App> {
        auto s = weak.lock();
        if (s && !s->mitigation) {
          auto due = s->due_for("mitigation", data::kProducer | data::kConsumer,
                                {{std::string(apps::mitigation::kSuspectPattern), std::nullopt}},
                                {{std::string(apps::mitigation::kMitigationPattern), std::nullopt}});
          s->mitigation = std::make_shared<apps::mitigation::MitigationService>(mitigation, std::move(due));
          std::weak_ptr<apps::mitigation::MitigationService> wm = s->mitigation;
          s->add_reporter("mitigation", [wm] { return wm.lock() ? wm.lock()->stats_json() : nlohmann::json::object(); });
        }
        auto svc = s ? s->mitigation : std::make_shared<apps::mitigation::MitigationService>(mitigation, nullptr);
        return std::make_unique<apps::mitigation::Mitigation>(std::move(svc), shard);
      });
    } else {
      return unexpected(fmt::format("unknown app '{}' (known: {})", name, fmt::join(known_apps(), ", ")));
    }
  }
  return set;
}

}  // namespace sdn::bin
