// The topology app's data keys and JSON records (network/topology/...): one place that writes
// them (the topology app) and reads them back (TopologyView in every consumer), so producer
// and consumers cannot drift apart. Format documented in README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/topology/paths.hpp"
#include "core/expected.hpp"

namespace sdn::apps::topology {

// A switch port as topology sees it. kPending: up, but not yet known to be an edge port (no
// LLDP seen on it for port_settle); kEdge: hosts live here (no link); kLink: a switch-to-switch
// link was discovered on it; kDown: link down or administratively down.
enum class PortRole : uint8_t { kPending, kEdge, kLink, kDown };
std::string_view to_string(PortRole r);
std::optional<PortRole> port_role_from(std::string_view s);

inline constexpr std::string_view kTopologyPattern = "network/topology/**";
inline constexpr std::string_view kSummaryKey = "network/topology/summary";

std::string dpid_hex(uint64_t dpid);  // 16 lower-case hex digits
std::string switch_key(uint64_t dpid);                 // network/topology/switch/<dpid>
std::string link_key(const Link& l);                   // network/topology/link/<a>.<ap>-<b>.<bp>
std::string host_key(uint64_t mac);                    // network/topology/host/00-00-00-00-00-01

struct SwitchRecord {
  uint64_t dpid = 0;
  bool up = true;
  std::vector<std::pair<uint32_t, PortRole>> ports;    // sorted by port number
};
struct LinkRecord {
  Link link;
  bool up = true;
  std::string reason;       // lldp, port_status, lldp_timeout, switch_down, replaced
  double detect_ms = 0;     // down: time since the link was last confirmed
};
struct HostRecord {
  uint64_t mac = 0;
  uint32_t ipv4 = 0;        // 0 = not seen yet
  PortRef at;
  std::string state;        // up, moved, gone
  std::optional<PortRef> from;  // moved: the previous attachment point
  std::string reason;       // gone: port_down, switch_down, link_port, ...
};
using TopologyRecord = std::variant<SwitchRecord, LinkRecord, HostRecord>;

nlohmann::json to_json(const SwitchRecord& r);
nlohmann::json to_json(const LinkRecord& r);
nlohmann::json to_json(const HostRecord& r);

// Reads a record written under `key` (with or without "@app"). The summary key and keys outside
// network/topology/ give nullopt; a malformed value under a known prefix is an error naming it.
Expected<std::optional<TopologyRecord>, std::string> decode(std::string_view key, const nlohmann::json& value);

}  // namespace sdn::apps::topology
