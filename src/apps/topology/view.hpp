// A consumer's replica of the topology, rebuilt from the records the topology app publishes on
// network/topology/** (wire.hpp): port roles, links (in a PathEngine, for paths and the
// broadcast tree) and host attachment points. Single-threaded: each owner (e.g. one forwarding
// instance per shard) feeds its own copy on its own thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <nlohmann/json.hpp>

#include "apps/topology/paths.hpp"
#include "apps/topology/wire.hpp"
#include "core/expected.hpp"

namespace sdn::apps::topology {

struct HostLocation {
  PortRef at;
  uint32_t ipv4 = 0;
};

class TopologyView {
 public:
  // Applies one record; returns it decoded (nullopt for keys the view does not use, such as
  // the summary), or the decoding error.
  Expected<std::optional<TopologyRecord>, std::string> apply(std::string_view key, const nlohmann::json& value);
  void apply(const TopologyRecord& r);

  const PathEngine& paths() const { return paths_; }
  std::optional<PortRole> role(PortRef p) const;
  bool is_edge(PortRef p) const { return role(p) == PortRole::kEdge; }
  // Ports a flooded frame that came in on `in_port` leaves by: every edge port and every
  // spanning-tree link port of the switch, except in_port. Empty when in_port is a link port off
  // the tree (a copy that must die there) or is not settled yet.
  std::vector<uint32_t> flood_ports(uint64_t dpid, uint32_t in_port) const;
  // The settled edge ports of a switch, sorted.
  std::vector<uint32_t> edge_ports(uint64_t dpid) const;
  const HostLocation* host(uint64_t mac) const;
  // The hosts located on one switch, by MAC (from a per-switch index: a switch's (re)connect
  // costs its own hosts, not every host of the fabric).
  std::vector<std::pair<uint64_t, HostLocation>> hosts_on(uint64_t dpid) const;
  // The MAC of the host last seen with this IPv4 address (for proxy ARP), if any.
  std::optional<uint64_t> mac_of(uint32_t ipv4) const;
  // Where the host last seen with this IPv4 address is (mac_of, then host); nullptr if nobody.
  const HostLocation* host_of_ip(uint32_t ipv4) const;
  size_t host_count() const { return hosts_.size(); }
  std::vector<uint64_t> switches() const;
  // Switches with at least one settled edge port, and their edge ports (sorted): kept as
  // records arrive, so a probe out of every host port does not walk every port of the fabric.
  size_t edge_switch_count() const { return edges_.size(); }
  const absl::flat_hash_map<uint64_t, std::vector<uint32_t>>& edge_port_map() const { return edges_; }
  uint64_t records_applied() const { return applied_; }

 private:
  std::map<uint64_t, std::map<uint32_t, PortRole>> ports_;
  PathEngine paths_;
  absl::flat_hash_map<uint64_t, HostLocation> hosts_;
  absl::flat_hash_map<uint32_t, uint64_t> by_ip_;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> edges_;
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>> by_switch_;  // dpid -> MACs located there
  uint64_t applied_ = 0;
  void unindex(uint64_t mac, uint64_t dpid);
};

}  // namespace sdn::apps::topology
