// The files the controller serves as they are: the dashboard (web/) and the OpenAPI document,
// compiled in by embed.cmake.
#pragma once

#include <string_view>
#include <vector>

namespace sdn::northbound {

struct Asset {
  std::string_view name;  // file name without directory: "index.html", "openapi.json"
  std::string_view data;
};

const std::vector<Asset>& assets();

}  // namespace sdn::northbound
