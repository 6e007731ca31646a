// libFuzzer target for configuration files: the text is parsed as TOML by core::Config, then
// every section reader the controller runs at start-up reads it (runtime, data, northbound and
// each app), then finish() lists the problems. Readers must turn any value into a default plus
// a problem naming the key, never throw or crash. Aborts on a broken invariant: the same text
// gives the same problems twice, and every problem is non-empty text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "apps/cpam/config.hpp"
#include "apps/forwarding/forwarding.hpp"
#include "apps/ids/config.hpp"
#include "apps/mitigation/mitigation.hpp"
#include "apps/topology/topology.hpp"
#include "core/config.hpp"
#include "data/config.hpp"
#include "northbound/server.hpp"
#include "southbound/config.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

// What `sdnator run` reads, in its order; returns the problems (or the parse error).
std::vector<std::string> read_all(std::string_view text) {
  auto parsed = sdn::core::Config::parse(text, "fuzz.toml");
  if (!parsed) return {"parse: " + parsed.error()};
  sdn::core::Config& cfg = *parsed;
  (void)cfg.get_string("controller", "log_level", "info");
  (void)cfg.get_string("controller", "stats_file", "");
  (void)cfg.get_string_list("controller", "apps", {"topology", "forwarding"});
  (void)sdn::southbound::southbound_config_from(cfg);
  (void)sdn::apps::read_forwarding_config(cfg);
  (void)sdn::apps::topology::read_topology_config(cfg);
  (void)sdn::apps::cpam::read_cpam_config(cfg);
  (void)sdn::apps::ids::read_sampler_config(cfg);
  (void)sdn::apps::ids::read_detector_config(cfg);
  (void)sdn::apps::mitigation::read_mitigation_config(cfg);
  (void)sdn::data::data_config_from(cfg);
  (void)sdn::northbound::northbound_config_from(cfg);
  return cfg.finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto first = read_all(text);
  for (const auto& p : first) require(!p.empty());
  require(read_all(text) == first);
  return 0;
}
