// Topology state machine: switches, port roles, LLDP links, hosts.
#include "apps/topology/topology_core.hpp"

#include <algorithm>
#include <utility>

#include "pkt/addr.hpp"

namespace sdn::apps::topology {

namespace {

// Physical and logical ports only: LOCAL and the reserved numbers carry no links or hosts.
bool fabric_port(uint32_t p) { return p != 0 && p <= ofp::port::kMax; }

}  // namespace

TopologyCore::TopologyCore(TopologyConfig cfg) : cfg_(cfg) {}

bool TopologyCore::port_is_up(const ofp::Port& p) {
  return (p.state & ofp::kPortStateLinkDown) == 0 && (p.config & ofp::kPortConfigPortDown) == 0;
}

const TopologyCore::PortState* TopologyCore::port(PortRef p) const {
  auto s = switches_.find(p.dpid);
  if (s == switches_.end()) return nullptr;
  auto it = s->second.ports.find(p.port);
  return it == s->second.ports.end() ? nullptr : &it->second;
}

TopologyCore::PortState* TopologyCore::port(PortRef p) {
  return const_cast<PortState*>(std::as_const(*this).port(p));
}

void TopologyCore::changed_switch(uint64_t dpid) {
  ++fig_.version;
  if (std::find(changes_.switches.begin(), changes_.switches.end(), dpid) == changes_.switches.end())
    changes_.switches.push_back(dpid);
}

void TopologyCore::set_role(PortRef p, PortState& ps, PortRole role, Clock::time_point now) {
  if (ps.role == role) return;
  --ports_in(ps.role);
  ++ports_in(role);
  if (role == PortRole::kPending) ps.since = now;
  // An edge port that turns into anything else no longer has hosts behind it.
  const bool was_edge = ps.role == PortRole::kEdge;
  ps.role = role;
  if (was_edge) remove_hosts_where(p, false, role == PortRole::kLink ? "link_port" : "port_down");
  changed_switch(p.dpid);
}

// Link and pending ports every round; settled edge ports never (edge_probe_rounds 0, the default
// since issue [runtime]: at 100,000 host ports every 5th round was 20,000 LLDP PacketOuts a
// second), or every edge_probe_rounds-th round when set:
// a cable plugged into an edge port brings the far port up, and that port's own probe (sent at
// once) reports the link, so edges need no fast probing, and at 500 hosts most ports are edges.
void TopologyCore::queue_probes(uint64_t dpid, SwitchState& s, bool all) {
  for (const auto& [no, ps] : s.ports)
    if (ps.role != PortRole::kDown && (all || ps.role != PortRole::kEdge)) probes_.push_back(PortRef{dpid, no});
}

void TopologyCore::switch_up(uint64_t dpid, const std::vector<ofp::Port>& ports, Clock::time_point now,
                             const std::vector<std::pair<uint32_t, PortRole>>* settled) {
  if (switches_.contains(dpid)) switch_down(dpid, now);  // a reconnect starts from scratch
  // Links we knew with this switch as a remote end (a cluster peer mastered it; now we do):
  // dropped, without a record, and rediscovered by the probes below, so that they are published
  // again after the previous master's switch_down record for them.
  for (auto it = links_.begin(); it != links_.end();)
    it = (it->first.a.dpid == dpid || it->first.b.dpid == dpid) ? links_.erase(it) : std::next(it);
  if (switches_.empty()) {
    first_up_ = now;
    last_link_added_.reset();
  }
  SwitchState& s = switches_[dpid];
  for (const ofp::Port& p : ports) {
    if (!fabric_port(p.port_no)) continue;
    auto [slot, fresh] = s.ports.try_emplace(p.port_no);
    PortState& ps = slot->second;
    if (!fresh) --ports_in(ps.role);  // a port listed twice counts once
    ps.hw_addr = p.hw_addr;
    ps.role = port_is_up(p) ? PortRole::kPending : PortRole::kDown;
    ps.since = now;
    if (ps.role == PortRole::kPending && settled != nullptr) {
      for (const auto& [no, role] : *settled) {
        if (no != p.port_no) continue;
        if (role == PortRole::kEdge) {
          ps.role = PortRole::kEdge;
          ++fig_.edges_taken_over;
        } else if (role == PortRole::kLink) {
          ps.role = PortRole::kLink;
          provisional_[PortRef{dpid, p.port_no}] = now + cfg_.link_timeout;
          ++fig_.links_taken_over;
        }
      }
    }
    ++ports_in(ps.role);
  }
  // Probe at once: a peer that is already up reports the link within one round trip.
  queue_probes(dpid, s, true);
  s.next_probe = now + cfg_.lldp_interval;
  changed_switch(dpid);
}

void TopologyCore::switch_down(uint64_t dpid, Clock::time_point now) {
  auto s = switches_.find(dpid);
  if (s == switches_.end()) return;
  for (auto it = links_.begin(); it != links_.end();) {
    const Link l = it->first;
    ++it;
    if (l.a.dpid == dpid || l.b.dpid == dpid) remove_link(l, "switch_down", now);
  }
  remove_hosts_where(PortRef{dpid, 0}, true, "switch_down");
  for (auto it = provisional_.begin(); it != provisional_.end();)
    it = it->first.dpid == dpid ? provisional_.erase(it) : std::next(it);
  for (const auto& [_, ps] : s->second.ports)
    --ports_in(ps.role);
  switches_.erase(s);
  changed_switch(dpid);
}

void TopologyCore::forget_switch(uint64_t dpid) {
  auto s = switches_.find(dpid);
  if (s == switches_.end()) return;
  for (auto it = links_.begin(); it != links_.end();)
    it = (it->first.a.dpid == dpid || it->first.b.dpid == dpid) ? links_.erase(it) : std::next(it);
  std::vector<uint64_t> gone;
  for (const auto& [mac, h] : hosts_)
    if (h.at.dpid == dpid) gone.push_back(mac);
  for (uint64_t mac : gone) erase_host(mac);
  for (auto it = provisional_.begin(); it != provisional_.end();)
    it = it->first.dpid == dpid ? provisional_.erase(it) : std::next(it);
  for (const auto& [_, ps] : s->second.ports)
    --ports_in(ps.role);
  switches_.erase(s);
  ++fig_.switches_handed_over;
  ++fig_.version;
}

void TopologyCore::port_status(uint64_t dpid, const ofp::Port& desc, bool deleted, Clock::time_point now) {
  auto s = switches_.find(dpid);
  if (s == switches_.end() || !fabric_port(desc.port_no)) return;
  const PortRef ref{dpid, desc.port_no};
  const bool up = !deleted && port_is_up(desc);
  auto it = s->second.ports.find(desc.port_no);
  if (it == s->second.ports.end()) {
    if (deleted) return;
    it = s->second.ports.emplace(desc.port_no, PortState{PortRole::kDown, now, desc.hw_addr}).first;
    ++ports_in(PortRole::kDown);
    changed_switch(dpid);
  }
  PortState& ps = it->second;
  ps.hw_addr = desc.hw_addr;
  if (!up) {
    remove_links_on(ref, "port_status", now);
    set_role(ref, ps, PortRole::kDown, now);
    if (deleted) {
      --ports_in(PortRole::kDown);
      s->second.ports.erase(it);
      changed_switch(dpid);
    }
    return;
  }
  if (ps.role == PortRole::kDown) {
    set_role(ref, ps, PortRole::kPending, now);
    probes_.push_back(ref);
  }
}

void TopologyCore::lldp_received(PortRef from, PortRef at, Clock::time_point now) {
  PortState* src = port(from);
  PortState* dst = port(at);
  // A cluster peer's switch (not ours, but connected to us as a slave): a link whose far end
  // has no local port state.
  const bool remote = src == nullptr && dst != nullptr && !switches_.contains(from.dpid) &&
                      cfg_.remote_switch && cfg_.remote_switch(from.dpid);
  if ((src == nullptr && !remote) || dst == nullptr || from == at) {
    ++fig_.lldp_foreign;
    return;
  }
  ++fig_.lldp_received;
  if (remote) ++fig_.lldp_remote;
  if ((src != nullptr && src->role == PortRole::kDown) || dst->role == PortRole::kDown) return;  // a late probe
  const Link l = make_link(from, at);
  provisional_.erase(from);
  provisional_.erase(at);
  if (auto it = links_.find(l); it != links_.end()) {
    it->second.last_seen = now;
    return;
  }
  // A port carries one link: a probe showing another peer replaces what we had (recabling).
  remove_links_on(from, "replaced", now);
  remove_links_on(at, "replaced", now);
  links_[l] = LinkState{now};
  if (PortState* f = port(from)) set_role(from, *f, PortRole::kLink, now);
  set_role(at, *port(at), PortRole::kLink, now);
  changes_.links.push_back(LinkRecord{l, true, "lldp", 0});
  ++fig_.links_added;
  ++fig_.version;
  last_link_added_ = now;
}

void TopologyCore::remove_link(const Link& l, std::string reason, Clock::time_point now) {
  auto it = links_.find(l);
  if (it == links_.end()) return;
  const double detect = ms(now - it->second.last_seen);
  links_.erase(it);
  ++fig_.links_removed;
  ++fig_.version;
  if (reason == "lldp_timeout") ++fig_.link_timeouts;
  changes_.links.push_back(LinkRecord{l, false, std::move(reason), detect});
  // Both ends settle again before they flood or learn hosts (a port that went down is then set
  // to kDown by the caller).
  for (PortRef end : {l.a, l.b}) {
    PortState* ps = port(end);
    if (ps != nullptr && ps->role == PortRole::kLink) set_role(end, *ps, PortRole::kPending, now);
  }
}

void TopologyCore::remove_links_on(PortRef p, const std::string& reason, Clock::time_point now) {
  std::vector<Link> doomed;
  for (const auto& [l, _] : links_)
    if (l.a == p || l.b == p) doomed.push_back(l);
  for (const Link& l : doomed) remove_link(l, reason, now);
}

void TopologyCore::remove_hosts_where(PortRef p, bool whole_switch, const std::string& reason) {
  std::vector<uint64_t> gone;
  for (const auto& [mac, h] : hosts_)
    if (h.at.dpid == p.dpid && (whole_switch || h.at.port == p.port)) gone.push_back(mac);
  std::sort(gone.begin(), gone.end());
  for (uint64_t mac : gone) {
    const HostEntry h = hosts_[mac];
    erase_host(mac);
    ++fig_.hosts_removed;
    ++fig_.version;
    changes_.hosts.push_back(HostRecord{mac, h.ipv4, h.at, "gone", std::nullopt, reason});
  }
}

void TopologyCore::host_seen(uint64_t mac, uint32_t ipv4, PortRef at, Clock::time_point now) {
  const pkt::Mac m{mac};
  if (m.is_multicast() || m.is_zero()) return;
  PortState* ps = port(at);
  if (ps == nullptr || ps->role != PortRole::kEdge) {
    ++fig_.hosts_ignored;
    return;
  }
  // Bindings are not taken by whoever claims them (docs/threat-model.md): an address another
  // present host holds stays with it, so a frame claiming it teaches nothing.
  if (ipv4 != 0)
    if (auto o = by_ip_.find(ipv4); o != by_ip_.end() && o->second != mac) {
      ++fig_.ip_claims_refused;
      return;
    }
  auto it = hosts_.find(mac);
  if (it == hosts_.end()) {
    if (hosts_.size() >= cfg_.max_hosts) {
      ++fig_.host_cap_exceeded;
      return;
    }
    hosts_.emplace(mac, HostEntry{mac, ipv4, at, now, now});
    if (ipv4 != 0) by_ip_[ipv4] = mac;
    ++fig_.hosts_added;
    ++fig_.version;
    changes_.hosts.push_back(HostRecord{mac, ipv4, at, "up", std::nullopt, ""});
    return;
  }
  HostEntry& h = it->second;
  if (h.at != at) {
    // Its MAC on another edge port while the port it was learned on is still an edge: a claim
    // (or a copy), not a move. A host that really moves loses its old port first (unplugged:
    // port down, and the host with it), then is learned where it appears.
    if (const PortState* old = port(h.at); old != nullptr && old->role == PortRole::kEdge) {
      ++fig_.host_claims_refused;
      return;
    }
    const PortRef old = h.at;
    h.at = at;
    h.last_seen = now;
    if (ipv4 != 0 && h.ipv4 == 0) {
      h.ipv4 = ipv4;
      by_ip_[ipv4] = mac;
    }
    ++fig_.host_moves;
    ++fig_.version;
    changes_.hosts.push_back(HostRecord{mac, h.ipv4, at, "moved", old, ""});
    return;
  }
  h.last_seen = now;
  if (ipv4 != 0 && ipv4 != h.ipv4) {
    // A host keeps the first address it was learned with while it is present: another source
    // address from it (an address added by hand, a router's forwarded traffic) is not its own.
    if (h.ipv4 != 0) {
      ++fig_.ip_changes_refused;
      return;
    }
    h.ipv4 = ipv4;
    by_ip_[ipv4] = mac;
    ++fig_.version;
    changes_.hosts.push_back(HostRecord{mac, ipv4, at, "up", std::nullopt, ""});
  }
}

void TopologyCore::erase_host(uint64_t mac) {
  auto it = hosts_.find(mac);
  if (it == hosts_.end()) return;
  if (auto ip = by_ip_.find(it->second.ipv4); ip != by_ip_.end() && ip->second == mac) by_ip_.erase(ip);
  hosts_.erase(it);
}

void TopologyCore::tick(Clock::time_point now) {
  // Liveness counts only time the controller could listen. A tick that comes late means this
  // loop was busy (a run-to-completion rotation in the cooperative mode takes seconds): the LLDP
  // replies of that time are still unread in the sockets, so the links' and the pending ports'
  // clocks are moved on by the gap instead of declaring every link dead.
  if (last_tick_ != Clock::time_point{} && now - last_tick_ > 2 * cfg_.tick + cfg_.lldp_interval) {
    const auto gap = now - last_tick_ - cfg_.tick;
    ++fig_.late_ticks;
    fig_.late_tick_max_ms = std::max(fig_.late_tick_max_ms, std::chrono::duration<double, std::milli>(gap).count());
    for (auto& [_, st] : links_) st.last_seen += gap;
    for (auto& [_, deadline] : provisional_) deadline += gap;
    for (auto& [_, s] : switches_)
      for (auto& [no, ps] : s.ports)
        if (ps.role == PortRole::kPending) ps.since += gap;
  }
  last_tick_ = now;
  for (auto& [dpid, s] : switches_) {
    if (now < s.next_probe) continue;
    ++s.rounds;
    queue_probes(dpid, s, cfg_.edge_probe_rounds != 0 && s.rounds % cfg_.edge_probe_rounds == 0);
    s.next_probe = now + cfg_.lldp_interval;
  }
  std::vector<Link> expired;
  for (const auto& [l, st] : links_)
    if (now - st.last_seen > cfg_.link_timeout) expired.push_back(l);
  for (const Link& l : expired) remove_link(l, "lldp_timeout", now);
  // Provisional link ports of a taken-over switch that no probe confirmed: pending again.
  for (auto it = provisional_.begin(); it != provisional_.end();) {
    if (now < it->second) {
      ++it;
      continue;
    }
    PortState* ps = port(it->first);
    if (ps != nullptr && ps->role == PortRole::kLink) set_role(it->first, *ps, PortRole::kPending, now);
    it = provisional_.erase(it);
  }
  if (ports_in(PortRole::kPending) == 0) return;
  for (auto& [dpid, s] : switches_)
    for (auto& [no, ps] : s.ports)
      if (ps.role == PortRole::kPending && now - ps.since >= cfg_.port_settle)
        set_role(PortRef{dpid, no}, ps, PortRole::kEdge, now);
}

Changes TopologyCore::take_changes() { return std::exchange(changes_, Changes{}); }

std::vector<uint64_t> TopologyCore::switch_ids() const {
  std::vector<uint64_t> v;
  v.reserve(switches_.size());
  for (const auto& [dpid, _] : switches_) v.push_back(dpid);
  return v;
}

Changes TopologyCore::full_state() {
  Changes c;
  c.switches = switch_ids();
  for (const auto& [l, _] : links_) c.links.push_back(LinkRecord{l, true, "refresh", 0});
  for (const auto& [mac, h] : hosts_) c.hosts.push_back(HostRecord{mac, h.ipv4, h.at, "up", std::nullopt, ""});
  fig_.republished += c.switches.size() + c.links.size() + c.hosts.size();
  return c;
}

std::vector<PortRef> TopologyCore::take_probes() {
  fig_.lldp_sent += probes_.size();
  return std::exchange(probes_, {});
}

std::optional<PortRole> TopologyCore::role(PortRef p) const {
  const PortState* ps = port(p);
  return ps ? std::optional(ps->role) : std::nullopt;
}

std::optional<uint64_t> TopologyCore::port_hw_addr(PortRef p) const {
  const PortState* ps = port(p);
  return ps ? std::optional(ps->hw_addr) : std::nullopt;
}

std::vector<Link> TopologyCore::links() const {
  std::vector<Link> out;
  out.reserve(links_.size());
  for (const auto& [l, _] : links_) out.push_back(l);
  return out;
}

std::optional<HostEntry> TopologyCore::host(uint64_t mac) const {
  auto it = hosts_.find(mac);
  if (it == hosts_.end()) return std::nullopt;
  return it->second;
}

std::vector<HostEntry> TopologyCore::hosts() const {
  std::vector<HostEntry> out;
  out.reserve(hosts_.size());
  for (const auto& [_, h] : hosts_) out.push_back(h);
  std::sort(out.begin(), out.end(), [](const HostEntry& a, const HostEntry& b) { return a.mac < b.mac; });
  return out;
}

SwitchRecord TopologyCore::switch_record(uint64_t dpid) const {
  SwitchRecord r;
  r.dpid = dpid;
  auto s = switches_.find(dpid);
  if (s == switches_.end()) {
    r.up = false;
    return r;
  }
  for (const auto& [no, ps] : s->second.ports) r.ports.emplace_back(no, ps.role);
  return r;
}

Figures TopologyCore::figures() const {
  Figures f = fig_;
  f.switches = switches_.size();
  f.links = links_.size();
  f.hosts = hosts_.size();
  // Counted as roles change: a walk over every port here cost O(ports) per learned host (at
  // 100,000 hosts, 80 % of shard 0 while hosts were being learned).
  f.pending_ports = ports_in(PortRole::kPending);
  f.edge_ports = ports_in(PortRole::kEdge);
  f.link_ports = ports_in(PortRole::kLink);
  if (first_up_ && last_link_added_) f.discovery = *last_link_added_ - *first_up_;
  return f;
}

}  // namespace sdn::apps::topology
