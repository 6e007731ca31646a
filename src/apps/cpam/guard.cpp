// CPAM's edge guard: the rule builders (guard.hpp) and Cpam's side of it: the rules a switch
// gets when it connects, the VIP-source drops of its edge ports as topology settles them, the
// source guard's check of every PacketIn from an edge port, and the flow-stats poll that counts
// what the switches dropped.
#include "apps/cpam/guard.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "apps/cpam/cpam.hpp"
#include "core/log.hpp"
#include "pkt/addr.hpp"
#include "pkt/ethernet.hpp"

namespace sdn::apps::cpam {
namespace guard {
namespace {

using ofp::OxmField;

ofp::FlowMod add(const CpamConfig& cfg, uint64_t ck, uint16_t priority, ofp::Match m) {
  ofp::FlowMod fm;
  fm.cookie = ck;
  fm.table_id = cfg.table_id;
  fm.priority = priority;
  fm.match = std::move(m);
  return fm;  // no instruction: drop
}

uint32_t mask_of(uint8_t len) { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }

}  // namespace

uint64_t cookie(Kind k, uint64_t low) {
  return kCookie | (uint64_t{static_cast<uint8_t>(k)} << 52) | (low & ((uint64_t{1} << 52) - 1));
}

std::vector<Prefix> cover(std::vector<uint32_t> ips) {
  std::sort(ips.begin(), ips.end());
  ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
  std::vector<Prefix> out;
  size_t i = 0;
  while (i < ips.size()) {
    // The largest aligned block starting at ips[i] whose every address follows in the list.
    const uint32_t a = ips[i];
    uint8_t len = 32;
    while (len > 0) {
      const uint8_t l = static_cast<uint8_t>(len - 1);
      const uint64_t size = uint64_t{1} << (32 - l);
      if ((a & ~mask_of(l)) != 0) break;           // a is not aligned to a block that big
      if (i + size - 1 >= ips.size()) break;       // not that many addresses left
      if (ips[i + size - 1] != a + size - 1) break;  // sorted and unique: a run iff the ends match
      len = l;
    }
    out.push_back({a, len});
    i += size_t{1} << (32 - len);
  }
  return out;
}

std::vector<ofp::FlowMod> real_rules(const CpamConfig& cfg, const Prefix& p, uint64_t low) {
  std::vector<ofp::FlowMod> out;
  const uint32_t mask = mask_of(p.len);
  auto dst = [&](uint16_t type, OxmField f) {
    ofp::Match m;
    m.set(OxmField::kEthType, type);
    if (p.len == 32) {
      m.set(f, p.base);
    } else {
      m.set_masked(f, p.base, mask);
    }
    return m;
  };
  out.push_back(add(cfg, cookie(Kind::kRealDrop, low), cfg.real_block_priority, dst(pkt::ethertype::kIpv4, OxmField::kIpv4Dst)));
  out.push_back(add(cfg, cookie(Kind::kRealDrop, low), cfg.real_block_priority, dst(pkt::ethertype::kArp, OxmField::kArpTpa)));
  for (uint32_t a : cfg.real_allowed_from) {
    // Same match plus the allowed source, one above: to the controller, whose forwarding app
    // then installs its own exact flows (priority above this) for that conversation.
    ofp::Match ip = dst(pkt::ethertype::kIpv4, OxmField::kIpv4Dst);
    ip.set(OxmField::kIpv4Src, a);
    ofp::Match arp = dst(pkt::ethertype::kArp, OxmField::kArpTpa);
    arp.set(OxmField::kArpSpa, a);
    for (ofp::Match* m : {&ip, &arp}) {
      ofp::FlowMod fm = add(cfg, cookie(Kind::kRealAllow, low), static_cast<uint16_t>(cfg.real_block_priority + 1), *m);
      fm.instructions.push_back(ofp::InstrApplyActions{ofp::ActionList{ofp::ActionOutput{ofp::port::kController}}});
      out.push_back(std::move(fm));
    }
  }
  return out;
}

std::vector<ofp::FlowMod> real_delete(const CpamConfig& cfg, uint64_t low) {
  std::vector<ofp::FlowMod> out;
  for (Kind k : {Kind::kRealDrop, Kind::kRealAllow}) {
    ofp::FlowMod fm;
    fm.command = ofp::FlowModCommand::kDelete;
    fm.table_id = cfg.table_id;
    fm.cookie = cookie(k, low);
    fm.cookie_mask = ~uint64_t{0};
    out.push_back(std::move(fm));
  }
  return out;
}

size_t rules_per_prefix(const CpamConfig& cfg) { return 2 * (1 + cfg.real_allowed_from.size()); }

std::vector<ofp::FlowMod> switch_rules(const CpamConfig& cfg, std::span<const Prefix> real) {
  std::vector<ofp::FlowMod> out;
  if (cfg.ipv6 == Ipv6Policy::kBlock) {
    ofp::Match m;
    m.set(OxmField::kEthType, pkt::ethertype::kIpv6);
    out.push_back(add(cfg, cookie(Kind::kIpv6), cfg.guard_priority, std::move(m)));
  }
  if (!cfg.block_real) return out;
  uint64_t n = 0;
  for (const Prefix& p : real)
    for (auto& fm : real_rules(cfg, p, n++)) out.push_back(std::move(fm));
  return out;
}

ofp::FlowMod vip_source_drop(const CpamConfig& cfg, uint32_t port) {
  ofp::Match m;
  m.set(OxmField::kInPort, port);
  m.set(OxmField::kEthType, pkt::ethertype::kIpv4);
  m.set_masked(OxmField::kIpv4Src, cfg.vip_base, mask_of(cfg.vip_prefix_len));
  ofp::FlowMod fm = add(cfg, cookie(Kind::kVipSource, port), cfg.guard_priority, std::move(m));
  fm.flags = ofp::kFlowFlagSendFlowRem;  // its count when deleted (guard_flow_removed)
  return fm;
}

ofp::FlowMod vip_source_delete(const CpamConfig& cfg, uint32_t port) {
  ofp::FlowMod fm;
  fm.command = ofp::FlowModCommand::kDelete;
  fm.table_id = cfg.table_id;
  fm.cookie = cookie(Kind::kVipSource, port);
  fm.cookie_mask = ~uint64_t{0};
  return fm;
}

ofp::FlowMod spoof_drop(const CpamConfig& cfg, uint32_t in_port, const Offence& o) {
  ofp::Match m;
  m.set(OxmField::kInPort, in_port);
  switch (o.what) {
    case Offence::kMac: m.set(OxmField::kEthSrc, o.value); break;
    case Offence::kIpv4Src:
      m.set(OxmField::kEthType, pkt::ethertype::kIpv4);
      m.set(OxmField::kIpv4Src, o.value);
      break;
    case Offence::kArpSpa:
      m.set(OxmField::kEthType, pkt::ethertype::kArp);
      m.set(OxmField::kArpSpa, o.value);
      break;
  }
  ofp::FlowMod fm = add(cfg, cookie(Kind::kSpoof, in_port), cfg.guard_priority, std::move(m));
  fm.hard_timeout = static_cast<uint16_t>(std::clamp<int64_t>(cfg.spoof_drop.count(), 1, 0xffff));
  fm.flags = ofp::kFlowFlagSendFlowRem;  // its count when it expires (guard_flow_removed)
  return fm;
}

}  // namespace guard

// ---- Cpam's side -------------------------------------------------------------------------

bool Cpam::allowed_source(uint32_t ip) const {
  const auto& a = cfg_.real_allowed_from;
  return std::find(a.begin(), a.end(), ip) != a.end();
}

void Cpam::guard_switch_up(southbound::SwitchContext& sw) {
  const uint64_t dpid = sw.dpid();
  guarded_edges_[dpid].clear();
  std::vector<ofp::Body> batch;
  const bool per_host = svc_->real_per_host_;
  for (auto& fm : guard::switch_rules(cfg_, per_host ? std::span<const guard::Prefix>{} : svc_->real_blocks_))
    batch.emplace_back(std::move(fm));
  if (per_host)  // hosts the view already places here (a reconnect)
    for (const auto& [mac, loc] : view_.hosts_on(dpid))
      if (auto idx = svc_->dir_.find_ip(loc.ipv4))
        for (auto& fm : guard::real_rules(cfg_, guard::Prefix{loc.ipv4, 32}, guard::kHostLow | *idx))
          batch.emplace_back(std::move(fm));
  // Edge ports the view already knows (a reconnect): their VIP-source drops at once.
  if (cfg_.source_guard)
    for (uint32_t port : view_.edge_ports(dpid)) {
      batch.emplace_back(guard::vip_source_drop(cfg_, port));
      guarded_edges_[dpid].insert(port);
    }
  if (batch.empty()) return;
  const size_t n = batch.size();
  sw.send_batch(std::move(batch), southbound::Lane::kHigh, [this, dpid, n](const southbound::BatchResult& r) {
    if (r.ok) {
      guard_rules_.inc(n);
      return;
    }
    guard_errors_.inc();
    if (!r.disconnected)
      SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: switch {:016x} refused a guard rule (error type {} code {})", dpid,
                          r.error.type, r.error.code);
  });
}

void Cpam::guard_switch_down(uint64_t dpid) {
  guarded_edges_.erase(dpid);
  if (auto it = dropped_.find(dpid); it != dropped_.end()) {  // its counts end with the connection
    for (int k = 0; k < guard::kKinds; ++k) dropped_gone_.by_kind[k] += it->second.by_kind[k];
    dropped_.erase(it);
  }
}

void Cpam::guard_topology(const topology::TopologyRecord& rec) {
  if (const auto* h = std::get_if<topology::HostRecord>(&rec)) {
    auto drop_at = [&](topology::PortRef p) {
      if (auto it = edge_bound_.find(p); it != edge_bound_.end() && it->second.mac == h->mac) edge_bound_.erase(it);
    };
    const auto idx = svc_->dir_.find_ip(h->ipv4);
    // Per-host real-address drops (past real_block_max_rules), on the shard of the switch.
    auto place = [&](uint64_t dpid, bool add) {
      if (!svc_->real_per_host_ || !idx || rt_ == nullptr || !guarded_edges_.contains(dpid)) return;
      auto rules = add ? guard::real_rules(cfg_, guard::Prefix{h->ipv4, 32}, guard::kHostLow | *idx)
                       : guard::real_delete(cfg_, guard::kHostLow | *idx);
      rt_->with_switch(dpid, [rules = std::move(rules)](southbound::SwitchContext& sw) mutable {
        for (auto& m : rules) sw.send(std::move(m));
      });
    };
    if (h->from) {
      drop_at(*h->from);
      if (h->from->dpid != h->at.dpid) place(h->from->dpid, false);
    }
    if (h->state == "gone") {
      drop_at(h->at);
      place(h->at.dpid, false);
      return;
    }
    if (idx) edge_bound_[h->at] = Bound{*idx, h->mac};
    place(h->at.dpid, true);
    return;
  }
  const auto* s = std::get_if<topology::SwitchRecord>(&rec);
  if (s == nullptr || !cfg_.source_guard || rt_ == nullptr) return;
  auto it = guarded_edges_.find(s->dpid);
  if (it == guarded_edges_.end()) return;  // not one of this shard's switches
  auto& guarded = it->second;
  std::vector<ofp::Body> batch;
  absl::flat_hash_set<uint32_t> edges;
  for (const auto& [port, role] : s->ports)
    if (role == topology::PortRole::kEdge) edges.insert(port);
  for (uint32_t port : edges)
    if (guarded.insert(port).second) batch.emplace_back(guard::vip_source_drop(cfg_, port));
  for (auto g = guarded.begin(); g != guarded.end();) {
    if (edges.contains(*g)) {
      ++g;
      continue;
    }
    batch.emplace_back(guard::vip_source_delete(cfg_, *g));  // now a link (or down): VIPs may cross it
    guarded.erase(g++);
  }
  if (batch.empty()) return;
  rt_->with_switch(s->dpid, [b = std::move(batch)](southbound::SwitchContext& sw) mutable {
    for (auto& m : b) sw.send(std::move(m));
  });
}

// The source guard (RFC 7039's idea): a frame on an edge port must not claim a MAC or address
// bound elsewhere, and on a protected host's port it must carry that host's MAC and address.
bool Cpam::guard_check(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p) {
  if (!cfg_.source_guard) return false;
  const topology::PortRef at{sw.dpid(), pin.in_port()};
  const uint64_t mac = p.eth.src.value;
  std::optional<guard::Offence> off;
  std::optional<uint32_t> ip;  // the IPv4 source it claims
  if (p.ipv4) ip = p.ipv4->src.value;
  if (p.arp) ip = p.arp->spa.value;
  const auto what_ip = p.arp ? guard::Offence::kArpSpa : guard::Offence::kIpv4Src;
  // Bound elsewhere: a MAC topology places on another edge port that is still an edge (a host
  // that really moved loses its old port first), or a protected address located elsewhere.
  auto elsewhere = [&](const topology::HostLocation* h) {
    return h != nullptr && h->at != at && view_.role(h->at) == topology::PortRole::kEdge;
  };
  if (elsewhere(view_.host(mac))) {
    off = guard::Offence{guard::Offence::kMac, mac};
  } else if (ip && *ip != 0 && svc_->dir_.find_ip(*ip)) {
    // A protected address located with another MAC (on any port, this one included).
    if (auto owner = view_.mac_of(*ip); owner && *owner != mac && view_.host(*owner) != nullptr)
      off = guard::Offence{what_ip, *ip};
  }
  if (!off)
    if (auto b = edge_bound_.find(at); b != edge_bound_.end()) {
      const uint32_t real = svc_->dir_.hosts[b->second.host].ip;
      if (mac != b->second.mac) {
        off = guard::Offence{guard::Offence::kMac, mac};
      } else if (ip && *ip != real) {
        off = guard::Offence{what_ip, *ip};  // a self-chosen address (ip addr add), or 0.0.0.0
      }
    }
  if (!off) return false;
  packet_ins_.inc();
  spoofed_src_.inc();
  SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: source guard: switch {:016x} port {}: {} {} is not bound there; dropped",
                      sw.dpid(), pin.in_port(), off->what == guard::Offence::kMac ? "MAC" : "address",
                      off->what == guard::Offence::kMac ? pkt::Mac{off->value}.to_string()
                                                        : pkt::Ipv4Addr{static_cast<uint32_t>(off->value)}.to_string());
  sw.send(guard::spoof_drop(cfg_, pin.in_port(), *off));
  guard_rules_.inc();
  return true;  // the caller releases the switch's buffer, as for every other drop
}

void Cpam::guard_poll() {
  if (rt_ == nullptr) return;
  for (const auto& entry : guarded_edges_) {
    const uint64_t dpid = entry.first;  // (a structured binding cannot be captured before C++20 in clang 14)
    rt_->with_switch(dpid, [this, dpid](southbound::SwitchContext& sw) {
      ofp::MultipartRequest req;
      req.type = ofp::MultipartType::kFlow;
      auto& fr = req.body.emplace<ofp::FlowStatsRequest>();
      fr.table_id = ofp::kTableAll;
      fr.cookie = guard::kCookie;
      fr.cookie_mask = guard::kCookieMask;
      auto acc = std::make_shared<guard::Dropped>();
      sw.send_request(std::move(req), [this, dpid, acc](const ofp::Message* reply, const ofp::ErrorMsg*, bool more) {
        if (reply != nullptr)
          if (const auto* mp = std::get_if<ofp::MultipartReply>(&reply->body))
            if (const auto* fs = std::get_if<std::vector<ofp::FlowStats>>(&mp->body))
              for (const auto& f : *fs) {
                const auto k = static_cast<size_t>(guard::kind_of(f.cookie));
                if (k < guard::kKinds) acc->by_kind[k] += f.packet_count;
              }
        if (more || reply == nullptr || stopped_) return;
        acc->by_kind[static_cast<int>(guard::Kind::kSpoof)] = 0;  // counted when each one expires
        dropped_[dpid] = *acc;
        publish_dropped();
      });
    });
  }
}

void Cpam::guard_flow_removed(uint64_t dpid, const ofp::FlowRemoved& fr) {
  const auto k = static_cast<size_t>(guard::kind_of(fr.cookie));
  if (k >= guard::kKinds) return;
  // An expired spoof drop, or a standing rule of a switch still here deleted (an edge port
  // became a link): its count moves to the total.
  if (guard::kind_of(fr.cookie) == guard::Kind::kSpoof || dropped_.contains(dpid)) dropped_gone_.by_kind[k] += fr.packet_count;
  publish_dropped();
}

void Cpam::publish_dropped() {
  guard::Dropped sum = dropped_gone_;
  for (const auto& [_, d] : dropped_)
    for (int k = 0; k < guard::kKinds; ++k) sum.by_kind[k] += d.by_kind[k];
  for (int k = 0; k < guard::kKinds; ++k) switch_dropped_[k].v.store(sum.by_kind[k], std::memory_order_relaxed);
}

}  // namespace sdn::apps::cpam
