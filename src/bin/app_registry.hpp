// Static app registry: maps app names to factories, built from the configuration.
#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/expected.hpp"
#include "southbound/app.hpp"

namespace sdn::bin {

// Names the apps this binary knows.
std::vector<std::string> known_apps();

// Reads [controller] apps (overridden by `names` when non-empty) and each app's section.
Expected<std::vector<southbound::AppFactory>, std::string> make_apps(core::Config& cfg,
                                                                     const std::vector<std::string>& names);

}  // namespace sdn::bin
