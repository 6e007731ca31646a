// Static app registry.
#include "bin/app_registry.hpp"

#include <fmt/format.h>

#include "apps/forwarding/forwarding.hpp"

namespace sdn::bin {

std::vector<std::string> known_apps() { return {"forwarding"}; }

void AppSet::add_reporter(std::string app, std::function<nlohmann::json()> report) {
  std::lock_guard lock(mu_);
  reporters_.emplace_back(std::move(app), std::move(report));
}

nlohmann::json AppSet::stats() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [app, report] : reporters_) {
    nlohmann::json part = report();
    if (!out.contains(app)) out[app] = nlohmann::json::object();
    auto& sum = out[app];
    for (const auto& [k, v] : part.items()) {
      const uint64_t prev = sum.contains(k) ? sum[k].get<uint64_t>() : 0;
      sum[k] = prev + v.get<uint64_t>();
    }
  }
  return out;
}

Expected<std::shared_ptr<AppSet>, std::string> make_apps(core::Config& cfg, const std::vector<std::string>& names) {
  auto set = std::make_shared<AppSet>();
  std::vector<std::string> wanted = cfg.get_string_list("controller", "apps", {"forwarding"});
  if (!names.empty()) wanted = names;
  // Every app's section is read even when the app is off, so its keys are still validated.
  apps::ForwardingConfig fwd = apps::read_forwarding_config(cfg);
  for (const auto& name : wanted) {
    if (name == "forwarding") {
      std::weak_ptr<AppSet> weak = set;
      set->factories.push_back([fwd, weak](unsigned) -> std::unique_ptr<southbound::App> {
        auto app = std::make_unique<apps::Forwarding>(fwd);
        const apps::Forwarding* raw = app.get();
        if (auto s = weak.lock()) {
          s->add_reporter("forwarding", [raw] {
            auto c = raw->counters();
            return nlohmann::json{{"packet_ins", c.packet_ins},       {"floods", c.floods},
                                  {"flows_installed", c.flows_installed}, {"learned", c.learned},
                                  {"moves", c.moves},                 {"drops", c.drops},
                                  {"parse_errors", c.parse_errors},   {"ignored", c.ignored},
                                  {"mac_cap_exceeded", c.mac_cap_exceeded}, {"ports_down", c.ports_down},
                                  {"flows_removed", c.flows_removed}};
          });
        }
        return app;
      });
    } else {
      return unexpected(fmt::format("unknown app '{}' (known: {})", name, fmt::join(known_apps(), ", ")));
    }
  }
  return set;
}

}  // namespace sdn::bin
