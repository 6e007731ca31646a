// The topology app: per-shard instances feed one TopologyCore on the home shard.
#include "apps/topology/topology.hpp"

#include <utility>

#include <spdlog/spdlog.h>

#include "core/config.hpp"
#include "core/log.hpp"
#include "pkt/build.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::topology {

using southbound::SwitchContext;

TopologyConfig read_topology_config(core::Config& cfg, std::string_view s) {
  TopologyConfig c;
  c.lldp_interval = std::chrono::milliseconds(cfg.get_int(s, "lldp_interval_ms", c.lldp_interval.count(), 100, 60000));
  c.link_timeout = std::chrono::milliseconds(cfg.get_int(s, "link_timeout_ms", c.link_timeout.count(), 200, 600000));
  c.port_settle = std::chrono::milliseconds(cfg.get_int(s, "port_settle_ms", c.port_settle.count(), 0, 60000));
  c.edge_probe_rounds =
      static_cast<uint32_t>(cfg.get_int(s, "edge_probe_rounds", c.edge_probe_rounds, 0, 1000));
  c.max_hosts = static_cast<size_t>(cfg.get_int(s, "max_hosts", static_cast<int64_t>(c.max_hosts), 1, 10'000'000));
  c.republish = std::chrono::milliseconds(cfg.get_int(s, "cluster_republish_ms", c.republish.count(), 0, 3'600'000));
  if (c.link_timeout <= c.lldp_interval)
    cfg.add_problem(std::string(s) + ".link_timeout_ms: must be longer than lldp_interval_ms");
  return c;
}

// ---------------------------------------------------------------- service

TopologyService::TopologyService(TopologyConfig cfg, std::shared_ptr<data::Due> due)
    : core_(cfg), due_(std::move(due)) {
  // In a cluster (remote_switch set), follow every instance's switch records: a switch taken
  // over from a peer starts from the port roles that peer published (the last "up" record).
  if (!due_ || !core_.config().remote_switch) return;
  auto sub = due_->observe("network/topology/switch/*@topology", [this](const data::RecordPtr& r) {
    auto rec = decode(r->key, r->value.json());
    if (!rec || !*rec) return;
    const auto* sw = std::get_if<SwitchRecord>(&**rec);
    if (sw == nullptr || !sw->up || sw->ports.empty()) return;
    std::lock_guard lock(roles_mu_);
    published_roles_[sw->dpid] = sw->ports;
  });
  if (sub) {
    roles_sub_ = std::move(*sub);
  } else {
    spdlog::warn("topology: cannot follow the cluster's switch records: {}", sub.error());
  }
}

std::vector<std::pair<uint32_t, PortRole>> TopologyService::published_roles(uint64_t dpid) const {
  std::lock_guard lock(roles_mu_);
  auto it = published_roles_.find(dpid);
  return it == published_roles_.end() ? std::vector<std::pair<uint32_t, PortRole>>{} : it->second;
}

void TopologyService::publish(std::string_view key, nlohmann::json value) {
  if (!due_) return;
  if (auto r = due_->write(key, data::Value(std::move(value)), data::kNoWait); !r) {
    publish_errors_.fetch_add(1, std::memory_order_relaxed);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "topology: cannot publish {}: {}", key, r.error());
  }
}

void TopologyService::flush(southbound::Runtime& rt, bool refresh_figures) {
  Changes ch = core_.take_changes();
  // Cluster: the periodic republish (TopologyConfig::republish), after this round's changes.
  if (core_.config().remote_switch && core_.config().republish.count() > 0 && refresh_figures) {
    const auto now = rt.now();
    if (now - last_republish_ >= core_.config().republish) {
      last_republish_ = now;
      Changes all = core_.full_state();
      for (uint64_t dpid : all.switches) publish(switch_key(dpid), to_json(core_.switch_record(dpid)));
      for (const LinkRecord& l : all.links) publish(link_key(l.link), to_json(l));
      for (const HostRecord& h : all.hosts) publish(host_key(h.mac), to_json(h));
    }
  }
  for (uint64_t dpid : ch.switches) publish(switch_key(dpid), to_json(core_.switch_record(dpid)));
  for (const LinkRecord& l : ch.links) {
    spdlog::info("topology: link {:016x}:{} - {:016x}:{} {} ({}{})", l.link.a.dpid, l.link.a.port, l.link.b.dpid,
                 l.link.b.port, l.up ? "up" : "down", l.reason,
                 l.up ? std::string() : fmt::format(", last confirmed {:.0f} ms before", l.detect_ms));
    publish(link_key(l.link), to_json(l));
  }
  for (const HostRecord& h : ch.hosts) publish(host_key(h.mac), to_json(h));
  const bool changed = !ch.empty();

  // Probes go out on the low lane: background work never delays a reactive reply.
  std::vector<PortRef> probes = core_.take_probes();
  for (size_t i = 0; i < probes.size();) {
    const uint64_t dpid = probes[i].dpid;
    std::vector<ofp::Body> batch;
    std::vector<std::shared_ptr<const pkt::Bytes>> frames;
    for (; i < probes.size() && probes[i].dpid == dpid; ++i) {
      const uint64_t hw = core_.port_hw_addr(probes[i]).value_or(0);
      frames.push_back(std::make_shared<const pkt::Bytes>(pkt::lldp_probe(dpid, probes[i].port, pkt::Mac{hw})));
      ofp::PacketOut po;
      po.in_port = ofp::port::kController;
      po.data = *frames.back();
      po.actions.push_back(ofp::ActionOutput{probes[i].port});
      batch.emplace_back(std::move(po));
    }
    rt.with_switch(dpid, [batch = std::move(batch), frames = std::move(frames)](SwitchContext& sw) {
      for (const auto& b : batch) sw.send(b, southbound::Lane::kLow);
    });
  }

  // The snapshot walks every port: refresh it on a change or on the periodic tick, not per probe.
  if (!changed && !refresh_figures) return;
  Figures f = core_.figures();
  {
    std::lock_guard lock(fig_mu_);
    fig_ = f;
  }
  if (changed) {
    nlohmann::json sum = {{"switches", f.switches}, {"links", f.links},     {"hosts", f.hosts},
                          {"pending_ports", f.pending_ports}, {"version", f.version}};
    sum["discovery_ms"] = f.discovery ? nlohmann::json(ms(*f.discovery)) : nlohmann::json(nullptr);
    publish(kSummaryKey, std::move(sum));
  }
}

Figures TopologyService::figures() const {
  std::lock_guard lock(fig_mu_);
  return fig_;
}

nlohmann::json TopologyService::stats_json() const {
  const Figures f = figures();
  return nlohmann::json{{"switches", f.switches},
                        {"links", f.links},
                        {"hosts", f.hosts},
                        {"pending_ports", f.pending_ports},
                        {"edge_ports", f.edge_ports},
                        {"link_ports", f.link_ports},
                        {"lldp_sent", f.lldp_sent},
                        {"lldp_received", f.lldp_received},
                        {"lldp_foreign", f.lldp_foreign},
                        {"lldp_remote", f.lldp_remote},
                        {"edges_taken_over", f.edges_taken_over},
                        {"links_taken_over", f.links_taken_over},
                        {"republished", f.republished},
                        {"switches_handed_over", f.switches_handed_over},
                        {"links_added", f.links_added},
                        {"links_removed", f.links_removed},
                        {"link_timeouts", f.link_timeouts},
                        {"late_ticks", f.late_ticks},
                        {"late_tick_max_ms", f.late_tick_max_ms},
                        {"hosts_added", f.hosts_added},
                        {"host_moves", f.host_moves},
                        {"hosts_removed", f.hosts_removed},
                        {"hosts_ignored", f.hosts_ignored},
                        {"host_cap_exceeded", f.host_cap_exceeded},
                        {"host_claims_refused", f.host_claims_refused},
                        {"ip_claims_refused", f.ip_claims_refused},
                        {"ip_changes_refused", f.ip_changes_refused},
                        {"publish_errors", publish_errors()},
                        {"version", f.version},
                        {"discovery_us", f.discovery ? static_cast<uint64_t>(
                                                           std::chrono::duration_cast<std::chrono::microseconds>(
                                                               *f.discovery).count())
                                                     : 0}};
}

// ---------------------------------------------------------------- per-shard app

Topology::Topology(std::shared_ptr<TopologyService> svc, unsigned shard) : svc_(std::move(svc)), shard_(shard) {}

template <class F>
void Topology::to_home(F&& fn) {
  if (rt_ == nullptr) return;
  auto svc = svc_;
  auto* rt = rt_;
  // Bookkeeping for the home shard: after this turn's replies are written (Runtime::post_soon).
  rt_->post_soon(kHomeShard, [svc, rt, fn = std::forward<F>(fn)]() mutable {
    fn(svc->core());
    svc->flush(*rt);
  });
}

void Topology::on_start(southbound::Runtime& rt, unsigned shard) {
  rt_ = &rt;
  shard_ = shard;
  if (shard_ == kHomeShard) tick();
}

void Topology::tick() {
  if (stopped_ || rt_ == nullptr) return;
  svc_->core().tick(rt_->now());
  svc_->flush(*rt_, true);
  rt_->call_after(kHomeShard, svc_->core().config().tick, [this] { tick(); });
}

void Topology::on_switch_up(SwitchContext& sw) {
  const auto now = rt_ ? rt_->now() : Clock::now();
  auto settled = svc_->core().config().remote_switch ? svc_->published_roles(sw.dpid())
                                                      : std::vector<std::pair<uint32_t, PortRole>>{};
  to_home([dpid = sw.dpid(), ports = sw.ports(), now, settled = std::move(settled)](TopologyCore& c) {
    c.switch_up(dpid, ports, now, settled.empty() ? nullptr : &settled);
  });
}

void Topology::on_switch_down(uint64_t dpid) {
  absl::erase_if(reported_, [dpid](const auto& kv) { return kv.second.at.dpid == dpid; });
  const auto now = rt_ ? rt_->now() : Clock::now();
  // Demoted in a cluster (the switch is still connected here, as a slave): quietly.
  const auto& remote = svc_->core().config().remote_switch;
  const bool handed_over = remote && remote(dpid);
  to_home([dpid, now, handed_over](TopologyCore& c) {
    if (handed_over)
      c.forget_switch(dpid);
    else
      c.switch_down(dpid, now);
  });
}

void Topology::on_port_status(SwitchContext& sw, const ofp::PortStatus& ps) {
  constexpr uint8_t kReasonDelete = 1;  // OFPPR_DELETE (7.4.3)
  const auto now = rt_ ? rt_->now() : Clock::now();
  to_home([dpid = sw.dpid(), desc = ps.desc, deleted = ps.reason == kReasonDelete, now](TopologyCore& c) {
    c.port_status(dpid, desc, deleted, now);
  });
}

void Topology::handle_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now) {
  const uint32_t in_port = pin.in_port();
  if (in_port == 0 || in_port > ofp::port::kMax) return;
  const pkt::ParseOptions opt{pin.data.size() < pin.total_len};
  auto parsed = pkt::parse(pin.data, opt);
  if (!parsed) {
    parse_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const PortRef at{sw.dpid(), in_port};
  if (parsed->lldp) {
    auto probe = pkt::decode_probe(*parsed->lldp);
    if (!probe) return;  // someone else's LLDP (a host's lldpd): not a link of ours
    to_home([from = PortRef{probe->dpid, probe->port_no}, at, now](TopologyCore& c) { c.lldp_received(from, at, now); });
    return;
  }
  const pkt::Mac src = parsed->eth.src;
  if (src.is_multicast() || src.is_zero()) return;
  uint32_t ip = 0;
  if (parsed->arp) {
    ip = parsed->arp->spa.value;
  } else if (parsed->ipv4) {
    ip = parsed->ipv4->src.value;
  } else {
    return;  // hosts are learned from ARP and IPv4 only
  }
  if (reported_.size() >= svc_->core().config().max_hosts) reported_.clear();  // a MAC flood: forget, re-report
  auto [it, fresh] = reported_.try_emplace(src.value);
  Reported& r = it->second;
  if (!fresh && r.at == at && r.ipv4 == ip && now - r.when < std::chrono::seconds(1)) return;
  r = Reported{at, ip, now};
  to_home([mac = src.value, ip, at, now](TopologyCore& c) { c.host_seen(mac, ip, at, now); });
}

}  // namespace sdn::apps::topology
