// Topology records: keys and JSON, both directions.
#include "apps/topology/wire.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "pkt/addr.hpp"

namespace sdn::apps::topology {

using nlohmann::json;

namespace {

constexpr std::string_view kSwitchPrefix = "network/topology/switch/";
constexpr std::string_view kLinkPrefix = "network/topology/link/";
constexpr std::string_view kHostPrefix = "network/topology/host/";

std::optional<uint64_t> parse_hex64(std::string_view s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

json port_ref_json(const PortRef& p) { return json{{"dpid", dpid_hex(p.dpid)}, {"port", p.port}}; }

// Throws json::exception on a wrong type (caught by decode()).
PortRef port_ref_from(const json& j, std::string_view what) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("{} is not an object", what));
  auto dpid = parse_hex64(j.at("dpid").get<std::string>());
  if (!dpid) throw std::invalid_argument(fmt::format("{}.dpid is not a hex datapath id", what));
  return PortRef{*dpid, j.at("port").get<uint32_t>()};
}

}  // namespace

std::string_view to_string(PortRole r) {
  switch (r) {
    case PortRole::kPending: return "pending";
    case PortRole::kEdge: return "edge";
    case PortRole::kLink: return "link";
    case PortRole::kDown: return "down";
  }
  return "?";
}

std::optional<PortRole> port_role_from(std::string_view s) {
  for (PortRole r : {PortRole::kPending, PortRole::kEdge, PortRole::kLink, PortRole::kDown})
    if (to_string(r) == s) return r;
  return std::nullopt;
}

std::string dpid_hex(uint64_t dpid) { return fmt::format("{:016x}", dpid); }
std::string switch_key(uint64_t dpid) { return fmt::format("{}{:016x}", kSwitchPrefix, dpid); }
std::string link_key(const Link& l) {
  return fmt::format("{}{:016x}.{}-{:016x}.{}", kLinkPrefix, l.a.dpid, l.a.port, l.b.dpid, l.b.port);
}
std::string host_key(uint64_t mac) {
  std::string m = pkt::Mac{mac}.to_string();
  for (char& c : m) c = c == ':' ? '-' : c;
  return std::string(kHostPrefix) + m;
}

// Ports grouped by role ({"edge": [1, 2], "link": [3]}; empty roles left out): a port costs one
// number, not an object of two strings. An aggregation switch has hundreds of ports and each
// link change republishes its record (docs/runtime.md, heap profile at 100,000 hosts).
json to_json(const SwitchRecord& r) {
  json ports = json::object();
  for (const auto& [p, role] : r.ports) {
    json& list = ports[std::string(to_string(role))];
    if (list.is_null()) list = json::array();
    list.push_back(p);
  }
  return json{{"dpid", dpid_hex(r.dpid)}, {"state", r.up ? "up" : "down"}, {"ports", std::move(ports)}};
}

json to_json(const LinkRecord& r) {
  json j{{"a", port_ref_json(r.link.a)}, {"b", port_ref_json(r.link.b)}, {"state", r.up ? "up" : "down"},
         {"reason", r.reason}};
  if (!r.up) j["detect_ms"] = r.detect_ms;
  return j;
}

json to_json(const HostRecord& r) {
  json j{{"mac", pkt::Mac{r.mac}.to_string()}, {"at", port_ref_json(r.at)}, {"state", r.state}};
  j["ip"] = r.ipv4 ? json(pkt::Ipv4Addr{r.ipv4}.to_string()) : json(nullptr);
  if (r.from) j["from"] = port_ref_json(*r.from);
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

Expected<std::optional<TopologyRecord>, std::string> decode(std::string_view key, const json& v) {
  if (auto at = key.find('@'); at != std::string_view::npos) key = key.substr(0, at);
  auto bad = [&](std::string_view why) { return unexpected(fmt::format("topology record {}: {}", key, why)); };
  try {
    if (key.starts_with(kSwitchPrefix)) {
      SwitchRecord r;
      auto dpid = parse_hex64(key.substr(kSwitchPrefix.size()));
      if (!dpid) return bad("the key does not end in a datapath id");
      r.dpid = *dpid;
      const std::string state = v.at("state").get<std::string>();
      if (state != "up" && state != "down") return bad("state must be up or down");
      r.up = state == "up";
      const json& ports = v.at("ports");
      if (ports.is_object()) {
        for (const auto& [name, list] : ports.items()) {
          auto role = port_role_from(name);
          if (!role) return bad("unknown port role");
          if (!list.is_array()) return bad("a port role's value must be a list of port numbers");
          for (const auto& p : list) r.ports.emplace_back(p.get<uint32_t>(), *role);
        }
      } else if (ports.is_array()) {  // the form written before 2026-12-07 (archives keep it)
        for (const auto& p : ports) {
          auto role = port_role_from(p.at("role").get<std::string>());
          if (!role) return bad("unknown port role");
          r.ports.emplace_back(p.at("port").get<uint32_t>(), *role);
        }
      } else {
        return bad("ports must be an object of port lists by role");
      }
      std::sort(r.ports.begin(), r.ports.end());
      for (size_t i = 1; i < r.ports.size(); ++i)
        if (r.ports[i].first == r.ports[i - 1].first) return bad("a port is listed twice");
      return std::optional<TopologyRecord>(std::move(r));
    }
    if (key.starts_with(kLinkPrefix)) {
      LinkRecord r;
      r.link = make_link(port_ref_from(v.at("a"), "a"), port_ref_from(v.at("b"), "b"));
      const std::string state = v.at("state").get<std::string>();
      if (state != "up" && state != "down") return bad("state must be up or down");
      r.up = state == "up";
      if (v.contains("reason")) r.reason = v.at("reason").get<std::string>();
      if (v.contains("detect_ms")) r.detect_ms = v.at("detect_ms").get<double>();
      return std::optional<TopologyRecord>(std::move(r));
    }
    if (key.starts_with(kHostPrefix)) {
      HostRecord r;
      auto mac = pkt::Mac::parse(v.at("mac").get<std::string>());
      if (!mac) return bad("mac is not a MAC address");
      r.mac = mac->value;
      if (!v.at("ip").is_null()) {
        auto ip = pkt::Ipv4Addr::parse(v.at("ip").get<std::string>());
        if (!ip) return bad("ip is not a dotted quad");
        r.ipv4 = ip->value;
      }
      r.at = port_ref_from(v.at("at"), "at");
      r.state = v.at("state").get<std::string>();
      if (r.state != "up" && r.state != "moved" && r.state != "gone") return bad("state must be up, moved or gone");
      if (v.contains("from")) r.from = port_ref_from(v.at("from"), "from");
      if (v.contains("reason")) r.reason = v.at("reason").get<std::string>();
      return std::optional<TopologyRecord>(std::move(r));
    }
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  return std::optional<TopologyRecord>();
}

}  // namespace sdn::apps::topology
