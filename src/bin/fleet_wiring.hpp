// Wires the northbound API into `sdnator fleet run --api` (fleet_wiring.cpp).
#pragma once

#include <string>

namespace sdn::bin {
void install_fleet_api(std::string version);
}  // namespace sdn::bin
