// CPAM flow builders.
#include "apps/cpam/flows.hpp"

#include "apps/cpam/cpam.hpp"
#include "pkt/ethernet.hpp"

namespace sdn::apps::cpam::flows {
namespace {

using ofp::OxmField;
constexpr uint8_t kTcp = 6, kUdp = 17;

ofp::ActionSetField set(OxmField f, uint64_t v) { return ofp::ActionSetField{ofp::OxmTlv{f, v, std::nullopt}}; }

ofp::Match five_tuple(uint32_t in_port, uint8_t proto, uint32_t src, uint32_t dst, uint16_t sp, uint16_t dp) {
  ofp::Match m;
  m.set(OxmField::kInPort, in_port);
  m.set(OxmField::kEthType, pkt::ethertype::kIpv4);
  m.set(OxmField::kIpProto, proto);
  m.set(OxmField::kIpv4Src, src);
  m.set(OxmField::kIpv4Dst, dst);
  if (proto == kTcp) {
    m.set(OxmField::kTcpSrc, sp);
    m.set(OxmField::kTcpDst, dp);
  } else if (proto == kUdp) {
    m.set(OxmField::kUdpSrc, sp);
    m.set(OxmField::kUdpDst, dp);
  }
  return m;
}

ofp::FlowMod session_mod(const CpamConfig& cfg, uint8_t proto, uint64_t cookie, ofp::Match m, ofp::ActionList acts,
                         bool flow_rem) {
  ofp::FlowMod fm;
  fm.cookie = cookie;
  fm.table_id = cfg.table_id;
  fm.priority = cfg.session_priority;
  // TCP and ICMP sessions end when idle; UDP flows are re-checked every active timeout.
  if (proto == kUdp) {
    fm.hard_timeout = static_cast<uint16_t>(cfg.udp_active.count());
  } else {
    fm.idle_timeout = static_cast<uint16_t>(cfg.tcp_idle.count());
  }
  if (flow_rem) fm.flags = ofp::kFlowFlagSendFlowRem;
  fm.match = std::move(m);
  fm.instructions.push_back(ofp::InstrApplyActions{std::move(acts)});
  return fm;
}

uint32_t out_of(const topology::Hop& h) { return h.out_port == h.in_port ? ofp::port::kInPort : h.out_port; }

// One direction: `src_real` at the first hop becomes `src_vip`; the last hop's standing rule
// (added by the caller's plan) turns dst_vip into dst_real. A one-switch path does both.
void direction(const CpamConfig& cfg, Plan& plan, const std::vector<topology::Hop>& hops, uint8_t proto,
               uint32_t src_real, uint32_t src_vip, uint32_t dst_vip, uint32_t dst_real, uint64_t dst_mac,
               uint16_t sp, uint16_t dp, uint64_t first_cookie, uint64_t transit_cookie, uint8_t bit) {
  for (size_t i = 0; i < hops.size(); ++i) {
    const auto& h = hops[i];
    const bool first = i == 0, last = i + 1 == hops.size();
    if (first) {
      ofp::ActionList acts{set(OxmField::kIpv4Src, src_vip), set(OxmField::kEthSrc, virtual_mac(src_vip))};
      if (last) {
        acts.push_back(set(OxmField::kIpv4Dst, dst_real));
        acts.push_back(set(OxmField::kEthDst, dst_mac));
      }
      acts.push_back(ofp::ActionOutput{out_of(h), 0});
      SwitchBatch& sb = plan.at(h.dpid);
      sb.batch.emplace_back(session_mod(cfg, proto, first_cookie, five_tuple(h.in_port, proto, src_real, dst_vip, sp, dp),
                                        std::move(acts), true));
      sb.first_hop_bits |= bit;
    } else if (!last) {
      plan.at(h.dpid).batch.emplace_back(session_mod(cfg, proto, transit_cookie,
                                                     five_tuple(h.in_port, proto, src_vip, dst_vip, sp, dp),
                                                     ofp::ActionList{ofp::ActionOutput{out_of(h), 0}}, false));
    }
  }
}

}  // namespace

void SwitchBatch::attach_frame() {
  if (!frame) return;
  for (auto& b : batch)
    if (auto* po = std::get_if<ofp::PacketOut>(&b)) po->data = *frame;
}

void Plan::add_packet_out(uint64_t dpid, ofp::PacketOut po, std::span<const uint8_t> data) {
  SwitchBatch& sb = at(dpid);
  sb.frame = std::make_shared<const std::vector<uint8_t>>(data.begin(), data.end());
  sb.batch.emplace_back(std::move(po));
}

SwitchBatch& Plan::at(uint64_t dpid) {
  for (auto& s : switches)
    if (s.dpid == dpid) return s;
  SwitchBatch sb;
  sb.dpid = dpid;
  switches.push_back(std::move(sb));
  return switches.back();
}

ofp::FlowMod vip_rule(const CpamConfig& cfg, uint32_t vip_index, uint32_t real_ip, uint64_t real_mac, uint32_t port) {
  ofp::FlowMod fm;
  fm.cookie = make_cookie(CookieKind::kVipRule, 0, vip_index);
  fm.table_id = cfg.table_id;
  fm.priority = cfg.vip_priority;
  fm.match.set(OxmField::kEthType, pkt::ethertype::kIpv4);
  const uint32_t mask = ~uint32_t{0} << (32 - cfg.vip_prefix_len);
  fm.match.set_masked(OxmField::kIpv4Src, cfg.vip_base, mask);
  fm.match.set(OxmField::kIpv4Dst, cfg.vip_ip(vip_index));
  ofp::ActionList acts{set(OxmField::kIpv4Dst, real_ip), set(OxmField::kEthDst, real_mac), ofp::ActionOutput{port, 0}};
  fm.instructions.push_back(ofp::InstrApplyActions{std::move(acts)});
  return fm;
}

ofp::FlowMod vip_rule_delete(const CpamConfig& cfg, uint32_t vip_index) { return vip_rule_delete(cfg.table_id, vip_index); }

ofp::FlowMod vip_rule_delete(uint8_t table_id, uint32_t vip_index) {
  ofp::FlowMod fm;
  fm.command = ofp::FlowModCommand::kDelete;
  fm.table_id = table_id;
  fm.cookie = make_cookie(CookieKind::kVipRule, 0, vip_index);
  fm.cookie_mask = ~uint64_t{0};
  return fm;
}

Plan plan_session(const CpamConfig& cfg, const Session& s, const std::vector<topology::Hop>& fwd,
                  const std::vector<topology::Hop>& rev, unsigned owner_shard, uint64_t id) {
  Plan plan;
  const uint64_t transit = make_cookie(CookieKind::kTransit, owner_shard, id);
  // Standing rules first on each access switch: a packet racing the session rules to the
  // last hop then already finds its translation.
  if (fwd.size() > 1) {
    const uint32_t vs_index = s.vs - cfg.vip_base - 1;
    plan.at(fwd.back().dpid).batch.emplace_back(vip_rule(cfg, vs_index, s.s_real, s.s_mac, fwd.back().out_port));
  }
  if (rev.size() > 1) {
    const uint32_t vc_index = s.vc - cfg.vip_base - 1;
    plan.at(rev.back().dpid).batch.emplace_back(vip_rule(cfg, vc_index, s.c_real, s.c_mac, rev.back().out_port));
  }
  direction(cfg, plan, fwd, s.proto, s.c_real, s.vc, s.vs, s.s_real, s.s_mac, s.cport, s.sport,
            make_cookie(CookieKind::kFirstFwd, owner_shard, id), transit, 1);
  direction(cfg, plan, rev, s.proto, s.s_real, s.vs, s.vc, s.c_real, s.c_mac, s.sport, s.cport,
            make_cookie(CookieKind::kFirstRev, owner_shard, id), transit, 2);
  return plan;
}

Plan plan_repair(const CpamConfig& cfg, const pkt::Parsed& p, const std::vector<topology::Hop>& hops,
                 uint32_t dst_vip_index, uint32_t dst_real, uint64_t dst_mac, unsigned shard, uint64_t id,
                 std::span<const uint8_t> data, bool deliver) {
  Plan plan;
  const uint8_t proto = p.ipv4->protocol;
  const uint16_t sp = p.tcp ? p.tcp->src_port : p.udp ? p.udp->src_port : 0;
  const uint16_t dp = p.tcp ? p.tcp->dst_port : p.udp ? p.udp->dst_port : 0;
  const uint64_t cookie = make_cookie(CookieKind::kRepair, shard, id);
  for (size_t i = 0; i + 1 < hops.size(); ++i)
    plan.at(hops[i].dpid)
        .batch.emplace_back(session_mod(cfg, proto, cookie,
                                        five_tuple(hops[i].in_port, proto, p.ipv4->src.value, p.ipv4->dst.value, sp, dp),
                                        ofp::ActionList{ofp::ActionOutput{out_of(hops[i]), 0}}, false));
  const auto& last = hops.back();
  plan.at(last.dpid).batch.emplace_back(vip_rule(cfg, dst_vip_index, dst_real, dst_mac, last.out_port));
  if (!deliver) return plan;
  ofp::PacketOut po;
  po.in_port = ofp::port::kController;
  po.actions = {set(OxmField::kIpv4Dst, dst_real), set(OxmField::kEthDst, dst_mac), ofp::ActionOutput{last.out_port, 0}};
  plan.add_packet_out(last.dpid, std::move(po), data);
  return plan;
}

ofp::PacketOut deliver(const Session& s, bool from_client, uint32_t out_port) {
  ofp::PacketOut po;
  po.in_port = ofp::port::kController;
  po.buffer_id = ofp::kNoBuffer;
  const uint32_t src_vip = from_client ? s.vc : s.vs;
  const uint32_t dst_real = from_client ? s.s_real : s.c_real;
  const uint64_t dst_mac = from_client ? s.s_mac : s.c_mac;
  po.actions = {set(OxmField::kIpv4Src, src_vip), set(OxmField::kEthSrc, virtual_mac(src_vip)),
                set(OxmField::kIpv4Dst, dst_real), set(OxmField::kEthDst, dst_mac), ofp::ActionOutput{out_port, 0}};
  return po;
}

ofp::PacketOut onward(const Session& s, bool from_client, uint32_t out_port) {
  ofp::PacketOut po;
  po.in_port = ofp::port::kController;
  po.buffer_id = ofp::kNoBuffer;
  const uint32_t src_vip = from_client ? s.vc : s.vs;
  po.actions = {set(OxmField::kIpv4Src, src_vip), set(OxmField::kEthSrc, virtual_mac(src_vip)),
                ofp::ActionOutput{out_port, 0}};
  return po;
}

}  // namespace sdn::apps::cpam::flows
