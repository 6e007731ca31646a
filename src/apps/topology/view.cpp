// Topology replica fed from Data Updates.
#include "apps/topology/view.hpp"

#include <algorithm>
#include <type_traits>

namespace sdn::apps::topology {

Expected<std::optional<TopologyRecord>, std::string> TopologyView::apply(std::string_view key,
                                                                          const nlohmann::json& value) {
  auto rec = decode(key, value);
  if (rec && *rec) apply(**rec);
  return rec;
}

void TopologyView::apply(const TopologyRecord& r) {
  ++applied_;
  std::visit(
      [this](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, SwitchRecord>) {
          if (!x.up) {
            ports_.erase(x.dpid);
            edges_.erase(x.dpid);
            paths_.remove_switch(x.dpid);
            if (auto on = by_switch_.find(x.dpid); on != by_switch_.end()) {
              for (uint64_t mac : on->second) {
                auto it = hosts_.find(mac);
                if (it == hosts_.end()) continue;
                if (auto ip = by_ip_.find(it->second.ipv4); ip != by_ip_.end() && ip->second == mac) by_ip_.erase(ip);
                hosts_.erase(it);
              }
              by_switch_.erase(on);
            }
            return;
          }
          auto& ports = ports_[x.dpid];
          ports.clear();
          std::vector<uint32_t> edges;
          for (const auto& [p, role] : x.ports) {
            ports[p] = role;
            if (role == PortRole::kEdge) edges.push_back(p);
          }
          if (edges.empty()) {
            edges_.erase(x.dpid);
          } else {
            std::sort(edges.begin(), edges.end());
            edges_[x.dpid] = std::move(edges);
          }
          paths_.add_switch(x.dpid);
          // A port that is no longer a link port has no link (a record may have been missed).
          for (const auto& [p, role] : x.ports)
            if (role != PortRole::kLink) paths_.remove_port(PortRef{x.dpid, p});
        } else if constexpr (std::is_same_v<T, LinkRecord>) {
          if (x.up) {
            paths_.add_link(x.link);
          } else {
            paths_.remove_link(x.link);
          }
        } else {
          if (x.state == "gone") {
            if (auto it = hosts_.find(x.mac); it != hosts_.end() && it->second.at == x.at) {
              if (auto ip = by_ip_.find(it->second.ipv4); ip != by_ip_.end() && ip->second == x.mac) by_ip_.erase(ip);
              unindex(x.mac, it->second.at.dpid);
              hosts_.erase(it);
            }
          } else {
            auto [it, fresh] = hosts_.try_emplace(x.mac);
            HostLocation& loc = it->second;
            if (!fresh && loc.ipv4 != x.ipv4)
              if (auto ip = by_ip_.find(loc.ipv4); ip != by_ip_.end() && ip->second == x.mac) by_ip_.erase(ip);
            if (!fresh && loc.at.dpid != x.at.dpid) unindex(x.mac, loc.at.dpid);
            by_switch_[x.at.dpid].insert(x.mac);
            loc = HostLocation{x.at, x.ipv4};
            if (x.ipv4 != 0) by_ip_[x.ipv4] = x.mac;
          }
        }
      },
      r);
}

std::optional<PortRole> TopologyView::role(PortRef p) const {
  auto s = ports_.find(p.dpid);
  if (s == ports_.end()) return std::nullopt;
  auto it = s->second.find(p.port);
  if (it == s->second.end()) return std::nullopt;
  return it->second;
}

std::vector<uint32_t> TopologyView::flood_ports(uint64_t dpid, uint32_t in_port) const {
  std::vector<uint32_t> out;
  auto s = ports_.find(dpid);
  if (s == ports_.end()) return out;
  auto in = s->second.find(in_port);
  if (in == s->second.end()) return out;
  const PortRef in_ref{dpid, in_port};
  if (in->second == PortRole::kLink ? !paths_.is_tree_port(in_ref) : in->second != PortRole::kEdge) return out;
  for (const auto& [p, role] : s->second) {
    if (p == in_port) continue;
    if (role == PortRole::kEdge || (role == PortRole::kLink && paths_.is_tree_port(PortRef{dpid, p}))) out.push_back(p);
  }
  return out;
}

std::vector<uint32_t> TopologyView::edge_ports(uint64_t dpid) const {
  auto it = edges_.find(dpid);
  return it == edges_.end() ? std::vector<uint32_t>{} : it->second;
}

const HostLocation* TopologyView::host(uint64_t mac) const {
  auto it = hosts_.find(mac);
  return it == hosts_.end() ? nullptr : &it->second;
}

std::vector<std::pair<uint64_t, HostLocation>> TopologyView::hosts_on(uint64_t dpid) const {
  std::vector<std::pair<uint64_t, HostLocation>> out;
  auto on = by_switch_.find(dpid);
  if (on == by_switch_.end()) return out;
  out.reserve(on->second.size());
  for (uint64_t mac : on->second)
    if (auto it = hosts_.find(mac); it != hosts_.end()) out.emplace_back(mac, it->second);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

void TopologyView::unindex(uint64_t mac, uint64_t dpid) {
  auto on = by_switch_.find(dpid);
  if (on == by_switch_.end()) return;
  on->second.erase(mac);
  if (on->second.empty()) by_switch_.erase(on);
}

std::optional<uint64_t> TopologyView::mac_of(uint32_t ipv4) const {
  auto it = by_ip_.find(ipv4);
  if (it == by_ip_.end()) return std::nullopt;
  return it->second;
}

const HostLocation* TopologyView::host_of_ip(uint32_t ipv4) const {
  const auto mac = mac_of(ipv4);
  return mac ? host(*mac) : nullptr;
}

std::vector<uint64_t> TopologyView::switches() const {
  std::vector<uint64_t> out;
  out.reserve(ports_.size());
  for (const auto& [d, _] : ports_) out.push_back(d);
  return out;
}

}  // namespace sdn::apps::topology
