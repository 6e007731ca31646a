// Reactive L2 learning + exact-match IPv4 flows. Every PacketIn: parse, learn the source,
// then flood (broadcast/multicast/unknown), drop (destination behind the in_port), or
// install an exact-match flow and release the triggering packet along it.
#include "apps/forwarding/forwarding.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include <absl/container/flat_hash_map.h>

#include "apps/forwarding/flows.hpp"
#include "core/config.hpp"
#include "core/log.hpp"

namespace sdn::apps {

using ofp::OxmField;
using southbound::SwitchContext;

using flows::packet_out;
using flows::valid_in_port;

namespace flows {

Screened screen(uint64_t dpid, const ofp::PacketIn& pin) {
  Screened out;
  const uint32_t in_port = pin.in_port();
  if (!valid_in_port(in_port)) {
    out.verdict = Verdict::kBadInPort;
    return out;
  }
  // A switch may cut the data at max_len; total_len still says how long the frame was.
  const pkt::ParseOptions opt{pin.data.size() < pin.total_len};
  auto parsed = pkt::parse(pin.data, opt);
  if (!parsed) {
    SDN_LOG_RATELIMITED(spdlog::level::debug, "forwarding: dpid {:016x} port {}: unparsable frame: {}", dpid, in_port,
                        pkt::to_string(parsed.error()));
    out.verdict = Verdict::kUnparsable;
    return out;
  }
  const pkt::Ethernet& eth = parsed->eth;
  // 802.1D reserved groups (STP, LACP, LLDP) are never bridged; LLDP belongs to topology.
  if (eth.dst.is_link_local() || eth.ethertype == pkt::ethertype::kLldp) {
    out.verdict = Verdict::kNotOurs;
  } else if (eth.src.is_multicast() || eth.src.is_zero()) {  // not a station address: do not learn
    out.verdict = Verdict::kBadSource;
  }
  out.parsed = *parsed;
  return out;
}

ofp::FlowMod exact_flow(const ForwardingConfig& cfg, const pkt::Parsed& p, uint32_t in_port, uint32_t out_port,
                        uint32_t buffer_id) {
  const pkt::Ethernet& eth = p.eth;
  ofp::FlowMod fm;
  fm.cookie = cfg.cookie;
  fm.table_id = cfg.table_id;
  fm.command = ofp::FlowModCommand::kAdd;
  fm.idle_timeout = seconds16(cfg.idle_timeout);
  fm.hard_timeout = seconds16(cfg.hard_timeout);
  fm.priority = cfg.priority;
  fm.flags = ofp::kFlowFlagSendFlowRem;
  // With a buffered packet the switch runs it through the new flow (7.3.4.1): no PacketOut.
  fm.buffer_id = buffer_id;
  fm.match.set(OxmField::kInPort, in_port);
  if (const pkt::VlanTag* v = eth.outer_vlan()) fm.match.set(OxmField::kVlanVid, v->vid | ofp::kOfpVidPresent);
  const bool typed = eth.is_ethernet_ii() && eth.vlan_count < 2;
  if (typed) fm.match.set(OxmField::kEthType, eth.ethertype);
  fm.match.set(OxmField::kEthSrc, eth.src.value);
  fm.match.set(OxmField::kEthDst, eth.dst.value);
  if (typed && p.ipv4) {
    fm.match.set(OxmField::kIpv4Src, p.ipv4->src.value);
    fm.match.set(OxmField::kIpv4Dst, p.ipv4->dst.value);
  }
  ofp::InstrApplyActions apply;
  apply.actions.push_back(ofp::ActionOutput{out_port});
  fm.instructions.push_back(std::move(apply));
  return fm;
}

}  // namespace flows

ForwardingConfig read_forwarding_config(core::Config& cfg, std::string_view s) {
  ForwardingConfig c;
  c.idle_timeout = std::chrono::seconds(cfg.get_int(s, "idle_timeout", c.idle_timeout.count(), 0, 0xffff));
  c.hard_timeout = std::chrono::seconds(cfg.get_int(s, "hard_timeout", c.hard_timeout.count(), 0, 0xffff));
  c.priority = static_cast<uint16_t>(cfg.get_int(s, "priority", c.priority, 0, 0xffff));
  const int64_t cookie = cfg.get_int(s, "cookie", static_cast<int64_t>(c.cookie), 0, INT64_MAX);
  if ((static_cast<uint64_t>(cookie) & kForwardingCookieMask) != kForwardingCookie) {
    cfg.add_problem(std::string(s) + ".cookie: top byte must be 0x01 (the forwarding cookie range)");
  } else {
    c.cookie = static_cast<uint64_t>(cookie);
  }
  c.table_id = static_cast<uint8_t>(cfg.get_int(s, "table", c.table_id, 0, 254));
  c.flood_unknown = cfg.get_bool(s, "flood_unknown", c.flood_unknown);
  c.proxy_arp = cfg.get_bool(s, "proxy_arp", c.proxy_arp);
  c.max_macs_per_switch =
      static_cast<size_t>(cfg.get_int(s, "max_macs_per_switch", static_cast<int64_t>(c.max_macs_per_switch), 1,
                                      10'000'000));
  c.clear_flows_on_connect = cfg.get_bool(s, "clear_flows_on_connect", c.clear_flows_on_connect);
  const std::string mode = cfg.get_string(s, "mode", "fabric");
  if (mode == "fabric") {
    c.mode = ForwardingMode::kFabric;
  } else if (mode == "learning") {
    c.mode = ForwardingMode::kLearning;
  } else {
    cfg.add_problem(std::string(s) + ".mode: '" + mode + "' is not fabric or learning");
  }
  return c;
}

Forwarding::Forwarding(ForwardingConfig cfg) : cfg_(cfg) {}

southbound::AppFactory Forwarding::factory(ForwardingConfig cfg) {
  return [cfg](unsigned /*shard*/) { return std::make_unique<Forwarding>(cfg); };
}

ForwardingCounters Forwarding::counters() const {
  ForwardingCounters c;
  c.packet_ins = packet_ins_.get();
  c.floods = floods_.get();
  c.flows_installed = flows_installed_.get();
  c.learned = learned_.get();
  c.moves = moves_.get();
  c.drops = drops_.get();
  c.parse_errors = parse_errors_.get();
  c.ignored = ignored_.get();
  c.mac_cap_exceeded = mac_cap_exceeded_.get();
  c.ports_down = ports_down_.get();
  c.flows_removed = flows_removed_.get();
  return c;
}

std::optional<uint32_t> Forwarding::port_of(uint64_t dpid, pkt::Mac mac) const {
  auto s = switches_.find(dpid);
  if (s == switches_.end()) return std::nullopt;
  auto m = s->second.macs.find(mac.value);
  if (m == s->second.macs.end()) return std::nullopt;
  return m->second;
}

size_t Forwarding::mac_count(uint64_t dpid) const {
  auto s = switches_.find(dpid);
  return s == switches_.end() ? 0 : s->second.macs.size();
}

ofp::FlowMod Forwarding::delete_mod() const { return flows::delete_mod(cfg_); }

void Forwarding::on_switch_up(SwitchContext& sw) {
  switches_[sw.dpid()].macs.clear();
  // Our MAC table starts empty, so flows from a previous session would be unexplained.
  if (cfg_.clear_flows_on_connect) sw.send(delete_mod());
}

void Forwarding::on_switch_down(uint64_t dpid) { switches_.erase(dpid); }

void Forwarding::handle_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point /*now*/) {
  packet_ins_.inc();
  const uint32_t in_port = pin.in_port();
  flows::Screened sc = flows::screen(sw.dpid(), pin);
  switch (sc.verdict) {
    case flows::Verdict::kForward: break;
    case flows::Verdict::kBadInPort: drops_.inc(); return;
    case flows::Verdict::kUnparsable: parse_errors_.inc(); drop(sw, pin, in_port); return;
    case flows::Verdict::kNotOurs: ignored_.inc(); drop(sw, pin, in_port); return;
    case flows::Verdict::kBadSource: drops_.inc(); drop(sw, pin, in_port); return;
  }
  const pkt::Parsed* parsed = &*sc.parsed;
  const pkt::Ethernet& eth = parsed->eth;

  SwitchTable& table = switches_[sw.dpid()];
  learn(sw, table, eth.src, in_port);

  if (eth.dst.is_multicast()) {  // broadcast included
    flood(sw, pin, in_port);
    return;
  }
  auto dst = table.macs.find(eth.dst.value);
  if (dst == table.macs.end()) {
    if (cfg_.flood_unknown) {
      flood(sw, pin, in_port);
    } else {
      drops_.inc();
      drop(sw, pin, in_port);
    }
    return;
  }
  if (dst->second == in_port) {
    // The destination is behind the port the frame came from (a hub, or a frame the
    // switch should not have sent us): a flow out the in_port would reflect it. Drop.
    drops_.inc();
    drop(sw, pin, in_port);
    return;
  }
  install(sw, pin, *parsed, in_port, dst->second);
}

void Forwarding::learn(SwitchContext& sw, SwitchTable& t, pkt::Mac src, uint32_t in_port) {
  auto it = t.macs.find(src.value);
  if (it == t.macs.end()) {
    if (t.macs.size() >= cfg_.max_macs_per_switch) {
      mac_cap_exceeded_.inc();
      return;
    }
    t.macs.emplace(src.value, in_port);
    learned_.inc();
    return;
  }
  if (it->second == in_port) return;
  // Host move: flows towards the old port (eth_dst) and from it (eth_src) are stale.
  it->second = in_port;
  moves_.inc();
  ofp::FlowMod to = delete_mod();
  to.match.set(OxmField::kEthDst, src.value);
  sw.send(std::move(to));
  ofp::FlowMod from = delete_mod();
  from.match.set(OxmField::kEthSrc, src.value);
  sw.send(std::move(from));
}

void Forwarding::flood(SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port) {
  floods_.inc();
  ofp::PacketOut po = packet_out(pin, in_port);
  po.actions.push_back(ofp::ActionOutput{ofp::port::kFlood});  // FLOOD excludes the in_port
  sw.send(std::move(po));
}

void Forwarding::drop(SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port) {
  flows::release_buffer(sw, pin, in_port);
}

void Forwarding::install(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, uint32_t in_port,
                         uint32_t out_port) {
  ofp::FlowMod fm = flows::exact_flow(cfg_, p, in_port, out_port, pin.buffer_id);
  sw.send(std::move(fm));
  flows_installed_.inc();

  if (pin.buffer_id == ofp::kNoBuffer) {  // the first packet is never lost
    ofp::PacketOut po = packet_out(pin, in_port);
    po.actions.push_back(ofp::ActionOutput{out_port});
    sw.send(std::move(po));
  }
}

void Forwarding::on_port_status(SwitchContext& sw, const ofp::PortStatus& ps) {
  constexpr uint8_t kReasonDelete = 1;  // OFPPR_DELETE (7.4.3)
  const bool down = ps.reason == kReasonDelete || (ps.desc.state & ofp::kPortStateLinkDown) != 0 ||
                    (ps.desc.config & ofp::kPortConfigPortDown) != 0;
  if (!down) return;
  const uint32_t port = ps.desc.port_no;
  ports_down_.inc();
  if (auto s = switches_.find(sw.dpid()); s != switches_.end())
    absl::erase_if(s->second.macs, [port](const auto& kv) { return kv.second == port; });
  // Flows out of the port (towards the forgotten hosts) and into it (from them).
  ofp::FlowMod out = delete_mod();
  out.out_port = port;
  sw.send(std::move(out));
  ofp::FlowMod in = delete_mod();
  in.match.set(OxmField::kInPort, port);
  sw.send(std::move(in));
}

void Forwarding::on_flow_removed(SwitchContext& /*sw*/, const ofp::FlowRemoved& fr) {
  if ((fr.cookie & kForwardingCookieMask) == (cfg_.cookie & kForwardingCookieMask)) flows_removed_.inc();
}

}  // namespace sdn::apps
