// Builds the northbound server's Sources from this binary's runtime, data layer and apps.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "bin/app_registry.hpp"
#include "northbound/server.hpp"

namespace sdn::southbound {
class Controller;
}
namespace sdn::data {
class Coordinator;
}

namespace sdn::bin {

// `apps` must outlive the server (the CPAM hooks and app stats read it).
northbound::Sources northbound_sources(southbound::Controller& ctl, core::Metrics& metrics,
                                       std::shared_ptr<data::Backends> backends, const data::Coordinator* coordinator,
                                       const AppSet& apps, std::chrono::milliseconds timeout,
                                       std::function<nlohmann::json()> data_stats,
                                       std::function<nlohmann::json()> process_stats);

}  // namespace sdn::bin
