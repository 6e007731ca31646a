// Where a protected host is, and the ARP probes that teach topology about a host nobody has
// seen yet. Probes are the one piece of CPAM whose cost grows with hosts x switches (one
// PacketOut per switch with edge ports per probe), so they are paced: per host by a backoff,
// and by a budget of PacketOuts per second for the whole controller.
#include <algorithm>

#include "apps/cpam/cpam.hpp"
#include "pkt/build.hpp"

namespace sdn::apps::cpam {

using southbound::SwitchContext;

std::optional<Cpam::Loc> Cpam::locate(uint32_t host, Clock::time_point now) {
  const uint32_t ip = svc_->dir_.hosts[host].ip;
  if (auto mac = view_.mac_of(ip)) {
    if (const auto* h = view_.host(*mac)) {
      if (!probed_.empty()) probed_.erase(ip);  // seen: a later loss starts the backoff afresh
      return Loc{h->at, *mac};
    }
  }
  // Never seen: ask for it; its reply teaches topology.
  if (may_probe(ip, now)) probe(ip);
  return std::nullopt;
}

// A host is asked again after 500 ms, then 1 s, 2 s, ... up to probe_backoff_max; and the
// controller sends at most probe_budget PacketOuts a second (a probe costs one per switch with
// edge ports), each shard its share: more shards do not mean more probes. A probe that does not
// fit is not queued: the next locate() of that host asks again.
bool Cpam::may_probe(uint32_t ip, Clock::time_point now) {
  auto& st = probed_[ip];
  if (st.next != Clock::time_point{} && now < st.next) return false;
  const double cost = static_cast<double>(std::max<size_t>(view_.edge_switch_count(), 1));
  const unsigned shards = rt_ != nullptr ? std::max(1u, rt_->shard_count()) : 1u;
  const double rate = std::max(1.0, static_cast<double>(cfg_.probe_budget) / shards);
  if (probe_refill_ == Clock::time_point{}) probe_refill_ = now, probe_tokens_ = rate;
  const double dt = std::chrono::duration<double>(now - probe_refill_).count();
  probe_tokens_ = std::min(rate, probe_tokens_ + dt * rate);
  probe_refill_ = now;
  // A network with more edge switches than one second's budget still gets one probe a second.
  if (probe_tokens_ < std::min(cost, rate)) {
    if (st.deferred != now) probes_deferred_.inc();  // once per packet that needed it, not per lookup
    st.deferred = now;
    return false;
  }
  probe_tokens_ -= std::min(cost, rate);
  st.backoff = st.backoff == Clock::duration{} ? std::chrono::milliseconds(500)
                                               : std::min<Clock::duration>(st.backoff * 2, cfg_.probe_backoff_max);
  st.next = now + st.backoff;
  probes_.inc();
  return true;
}

void Cpam::probe(uint32_t ip) {
  auto frame = std::make_shared<const pkt::Bytes>(
      pkt::arp_request(pkt::Mac{virtual_mac(cfg_.dns_ip)}, pkt::Ipv4Addr{cfg_.dns_ip}, pkt::Ipv4Addr{ip}));
  if (rt_ == nullptr) return;
  for (const auto& [dpid, edges] : view_.edge_port_map()) {
    ofp::PacketOut po;
    po.actions.reserve(edges.size());
    for (uint32_t port : edges) po.actions.push_back(ofp::ActionOutput{port});
    rt_->with_switch(dpid, [po = std::move(po), frame](SwitchContext& s) mutable {
      po.data = *frame;
      s.send(std::move(po), southbound::Lane::kLow);
    });
  }
}

}  // namespace sdn::apps::cpam
