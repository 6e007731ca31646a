// Fabric forwarding: per PacketIn, parse; flood over the spanning tree, or install the whole
// shortest path to the destination host and deliver the packet at its last hop.
#include "apps/forwarding/fabric.hpp"

#include <algorithm>
#include <utility>

#include "apps/forwarding/flows.hpp"
#include "core/log.hpp"
#include "pkt/build.hpp"

namespace sdn::apps {

using southbound::SwitchContext;
using topology::Hop;
using topology::PortRef;
using topology::PortRole;

FabricForwarding::FabricForwarding(ForwardingConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics)
    : cfg_(cfg), due_(std::move(due)), path_setup_(metrics ? &metrics->histogram("forwarding.path_setup") : nullptr) {}

void FabricForwarding::on_start(southbound::Runtime& rt, unsigned shard) {
  rt_ = &rt;
  shard_ = shard;
  if (!due_) return;
  // Records arrive on the publisher's thread; the view is only touched on this shard's.
  auto* runtime = rt_;
  auto sub = due_->observe(
      topology::kTopologyPattern,
      [this](const data::RecordPtr& r) {
        if (!r->value.is_json()) {
          topology_errors_.inc();
          return;
        }
        apply_topology(r->key, r->value.json());
      },
      [runtime, shard](std::function<void()> fn) { runtime->post(shard, std::move(fn)); });
  if (!sub) {
    spdlog::error("forwarding: cannot subscribe to {}: {}", topology::kTopologyPattern, sub.error());
    return;
  }
  sub_ = std::move(*sub);
}

void FabricForwarding::on_stop() { sub_.cancel(); }

void FabricForwarding::apply_topology(std::string_view key, const nlohmann::json& value) {
  auto rec = view_.apply(key, value);
  if (!rec) {
    topology_errors_.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "forwarding: {}", rec.error());
    return;
  }
  if (!*rec) return;
  topology_records_.inc();
  react(**rec);
}

// Paths a topology change made wrong are deleted whole, on every hop, so the next packet of
// the flow misses at its real ingress and gets a new path from there. Every shard does this for
// the paths it installed.
void FabricForwarding::react(const topology::TopologyRecord& rec) {
  std::vector<uint64_t> doomed;
  if (const auto* l = std::get_if<topology::LinkRecord>(&rec); l && !l->up) {
    auto uses = [&](const Hop& h) {
      return (h.dpid == l->link.a.dpid && (h.out_port == l->link.a.port || h.in_port == l->link.a.port)) ||
             (h.dpid == l->link.b.dpid && (h.out_port == l->link.b.port || h.in_port == l->link.b.port));
    };
    for (const auto& [cookie, path] : paths_)
      if (std::any_of(path.hops.begin(), path.hops.end(), uses)) doomed.push_back(cookie);
  } else if (const auto* h = std::get_if<topology::HostRecord>(&rec); h && h->state != "up") {
    for (const auto& [cookie, path] : paths_)
      if (path.key.eth_src == h->mac || path.key.eth_dst == h->mac) doomed.push_back(cookie);
  }
  for (uint64_t c : doomed) remove_path(c);
  if (!doomed.empty()) reroutes_.inc(doomed.size());
}

uint64_t FabricForwarding::path_cookie(uint64_t id) const {
  // 0x01 (the app) | shard (8 bits) | path number (48 bits).
  return (cfg_.cookie & kForwardingCookieMask) | (uint64_t{shard_ & 0xff} << 48) | (id & 0xffff'ffff'ffffULL);
}

void FabricForwarding::remove_path(uint64_t cookie) {
  auto it = paths_.find(cookie);
  if (it == paths_.end()) return;
  ofp::FlowMod del = flows::delete_mod(cfg_);
  del.cookie = cookie;
  del.cookie_mask = ~uint64_t{0};
  if (rt_ != nullptr)
    for (const Hop& h : it->second.hops) rt_->with_switch(h.dpid, [del](SwitchContext& sw) { sw.send(del); });
  forget_path(it);
}

void FabricForwarding::forget_path(absl::flat_hash_map<uint64_t, InstalledPath>::iterator it) {
  by_flow_.erase(it->second.key);
  paths_.erase(it);
}

void FabricForwarding::on_switch_down(uint64_t dpid) {
  std::vector<uint64_t> gone;
  for (const auto& [cookie, path] : paths_)
    if (path.hops.front().dpid == dpid) gone.push_back(cookie);
  // Their flows went with the switch; the other hops expire (or their links go down).
  for (uint64_t c : gone) forget_path(paths_.find(c));
}

void FabricForwarding::on_switch_up(SwitchContext& sw) {
  if (cfg_.clear_flows_on_connect) sw.send(flows::delete_mod(cfg_));
}

FabricCounters FabricForwarding::counters() const {
  FabricCounters c;
  c.packet_ins = packet_ins_.get();
  c.floods = floods_.get();
  c.proxy_arps = proxy_arps_.get();
  c.flood_dead_ends = flood_dead_ends_.get();
  c.paths_installed = paths_ok_shared_.load(std::memory_order_relaxed);
  c.paths_failed = paths_failed_shared_.load(std::memory_order_relaxed);
  c.flows_installed = flows_installed_.get();
  c.drops = drops_.get();
  c.no_path = no_path_.get();
  c.not_ready = not_ready_.get();
  c.parse_errors = parse_errors_.get();
  c.ignored = ignored_.get();
  c.reroutes = reroutes_.get();
  c.cluster_handoffs = cluster_handoffs_.get();
  c.flows_removed = flows_removed_.get();
  c.topology_records = topology_records_.get();
  c.topology_errors = topology_errors_.get();
  return c;
}

void FabricForwarding::handle_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now) {
  packet_ins_.inc();
  const uint32_t in_port = pin.in_port();
  flows::Screened sc = flows::screen(sw.dpid(), pin);
  switch (sc.verdict) {
    case flows::Verdict::kForward: break;
    case flows::Verdict::kBadInPort: drops_.inc(); return;
    case flows::Verdict::kUnparsable: parse_errors_.inc(); flows::release_buffer(sw, pin, in_port); return;
    case flows::Verdict::kNotOurs: ignored_.inc(); flows::release_buffer(sw, pin, in_port); return;
    case flows::Verdict::kBadSource: drops_.inc(); flows::release_buffer(sw, pin, in_port); return;
  }
  const pkt::Parsed* parsed = &*sc.parsed;
  const pkt::Ethernet& eth = parsed->eth;
  const PortRef at{sw.dpid(), in_port};
  const auto role = view_.role(at);
  if (role != PortRole::kEdge && role != PortRole::kLink) {
    not_ready_.inc();  // not settled: flooding from here could loop before discovery ends
    flows::release_buffer(sw, pin, in_port);
    return;
  }
  if (role == PortRole::kEdge && cfg_.proxy_arp && proxy_arp(sw, pin, *parsed, in_port)) return;
  if (eth.dst.is_multicast()) {
    flood(sw, pin, in_port);
    return;
  }
  const topology::HostLocation* dst = view_.host(eth.dst.value);
  if (dst == nullptr) {
    if (cfg_.flood_unknown && role == PortRole::kEdge) {
      flood_to_edges(sw, pin, in_port);
    } else {
      drops_.inc();
      flows::release_buffer(sw, pin, in_port);
    }
    return;
  }
  if (dst->at == at) {  // a flow back out of the in_port would reflect the frame
    drops_.inc();
    flows::release_buffer(sw, pin, in_port);
    return;
  }
  auto hops = view_.paths().path(at, dst->at);
  if (!hops || hops->empty()) {
    no_path_.inc();
    flows::release_buffer(sw, pin, in_port);
    return;
  }
  provision(sw, pin, *parsed, *hops, now);
}

// Only requests entering on an edge port: the flooded copies that reach other switches over
// link ports must not be answered again.
bool FabricForwarding::proxy_arp(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, uint32_t in_port) {
  if (!p.arp || p.arp->op != pkt::kArpRequest) return false;
  const auto mac = view_.mac_of(p.arp->tpa.value);
  if (!mac || *mac == p.eth.src.value) return false;  // unknown, or a gratuitous ARP: flood it
  const pkt::Bytes reply = pkt::arp_reply_for(*p.arp, pkt::Mac{*mac});
  ofp::PacketOut po;
  po.in_port = ofp::port::kController;
  po.data = reply;  // encoded by send() before `reply` goes
  po.actions.push_back(ofp::ActionOutput{in_port});
  sw.send(std::move(po));
  flows::release_buffer(sw, pin, in_port);
  proxy_arps_.inc();
  return true;
}

void FabricForwarding::flood(SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port) {
  const auto ports = view_.flood_ports(sw.dpid(), in_port);
  if (ports.empty()) {
    flood_dead_ends_.inc();
    flows::release_buffer(sw, pin, in_port);
    return;
  }
  floods_.inc();
  ofp::PacketOut po = flows::packet_out(pin, in_port);
  for (uint32_t p : ports) po.actions.push_back(ofp::ActionOutput{p});
  sw.send(std::move(po));
}

// Unknown unicast is not flooded hop by hop over the tree: a copy reaching a switch whose view
// already knows the destination would install a path from there while other branches do the
// same, and the host would get the frame twice. The controller writes it straight out of every
// edge port of every switch instead (one copy each, no further PacketIn); no flow is installed.
void FabricForwarding::flood_to_edges(SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port) {
  floods_.inc();
  auto frame = std::make_shared<const std::vector<uint8_t>>(pin.data.begin(), pin.data.end());
  flows::release_buffer(sw, pin, in_port);  // a buffered original is dropped: the copies carry the data
  for (const auto& [dpid, all] : view_.edge_port_map()) {
    std::vector<uint32_t> edges = all;
    if (dpid == sw.dpid()) std::erase(edges, in_port);
    if (edges.empty()) continue;
    ofp::PacketOut po;
    po.in_port = dpid == sw.dpid() ? in_port : ofp::port::kController;
    for (uint32_t p : edges) po.actions.push_back(ofp::ActionOutput{p});
    auto send = [po = std::move(po), frame](SwitchContext& s) mutable {
      po.data = *frame;
      s.send(std::move(po));
    };
    if (dpid == sw.dpid()) {
      send(sw);
    } else if (rt_ != nullptr) {
      rt_->with_switch(dpid, std::move(send));
    }
  }
}

// One batch (FlowMod + barrier) per hop, each on its switch's own shard; the packet rides in the
// last hop's batch, out of the destination's port, so it never races the flows ahead of it. A
// buffered packet is released by the first hop's FlowMod instead (7.3.4.1).
void FabricForwarding::provision(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p,
                                 const std::vector<Hop>& hops, Clock::time_point now) {
  FlowKey key{sw.dpid(), p.eth.src.value, p.eth.dst.value, hops.front().in_port,
              p.ipv4 ? p.ipv4->src.value : 0, p.ipv4 ? p.ipv4->dst.value : 0, p.eth.ethertype,
              p.eth.outer_vlan() ? p.eth.outer_vlan()->vid : uint16_t{0xffff}};
  // Asked again (a packet that raced the flows): the old path's flows go first, then the new.
  if (auto old = by_flow_.find(key); old != by_flow_.end()) remove_path(old->second);
  // In a cluster the path is ours up to the first switch another instance masters: the packet
  // leaves our last switch towards it, misses there and that switch's master carries it on.
  size_t ours = hops.size();
  if (rt_ != nullptr)
    for (size_t i = 1; i < hops.size(); ++i)
      if (!rt_->is_up(hops[i].dpid)) {
        ours = i;
        cluster_handoffs_.inc();
        break;
      }
  const uint64_t cookie = path_cookie(++next_path_);
  paths_[cookie] = InstalledPath{key, std::vector<Hop>(hops.begin(), hops.begin() + static_cast<std::ptrdiff_t>(ours))};
  by_flow_[key] = cookie;

  auto job = std::make_shared<PathJob>();
  job->remaining = ours;
  job->started = now;
  const bool buffered = pin.buffer_id != ofp::kNoBuffer;
  auto frame = buffered ? nullptr : std::make_shared<const std::vector<uint8_t>>(pin.data.begin(), pin.data.end());
  for (size_t i = 0; i < ours; ++i) {
    const Hop& hop = hops[i];
    const bool first = i == 0, last = i + 1 == ours;
    // A packet that reached a transit switch and must go back the way it came (its upstream
    // path was cut) leaves by OFPP_IN_PORT: an output to the in_port itself is dropped (7.2.1).
    const uint32_t out = hop.out_port == hop.in_port ? ofp::port::kInPort : hop.out_port;
    ofp::FlowMod fm = flows::exact_flow(cfg_, p, hop.in_port, out, first ? pin.buffer_id : ofp::kNoBuffer);
    fm.cookie = cookie;
    flows_installed_.inc();
    // The last hop's PacketOut comes from the controller unless it is also the first switch.
    const uint32_t po_in_port = first ? hop.in_port : ofp::port::kController;
    std::vector<ofp::Body> batch;
    batch.emplace_back(std::move(fm));
    const auto hop_frame = last ? frame : nullptr;
    if (hop_frame) {
      ofp::PacketOut po;
      po.in_port = po_in_port;
      po.data = *hop_frame;
      po.actions.push_back(ofp::ActionOutput{out});
      batch.emplace_back(std::move(po));
    }
    // `done` keeps the PacketOut's bytes alive until the batch is encoded wherever it is.
    auto done = [this, job, hop_frame](const southbound::BatchResult& r) { hop_done(job, r.ok); };
    if (hop.dpid == sw.dpid()) {
      sw.send_batch(std::move(batch), southbound::Lane::kHigh, std::move(done));
    } else if (rt_ == nullptr || !rt_->send_batch_to(hop.dpid, std::move(batch), southbound::Lane::kHigh, std::move(done))) {
      hop_done(job, false);  // that switch is gone
    }
  }
}

void FabricForwarding::hop_done(const std::shared_ptr<PathJob>& job, bool ok) {
  if (!ok) job->failed.store(true, std::memory_order_relaxed);
  if (job->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (job->failed.load(std::memory_order_relaxed)) {
    paths_failed_shared_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  paths_ok_shared_.fetch_add(1, std::memory_order_relaxed);
  if (path_setup_) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - job->started).count();
    path_setup_->record(static_cast<uint64_t>(ns > 0 ? ns : 0));
  }
}

void FabricForwarding::on_flow_removed(SwitchContext& sw, const ofp::FlowRemoved& fr) {
  if ((fr.cookie & kForwardingCookieMask) != (cfg_.cookie & kForwardingCookieMask)) return;
  flows_removed_.inc();
  // The first hop's flow expired: the path is over (the others expire with it, same traffic).
  auto it = paths_.find(fr.cookie);
  if (it != paths_.end() && it->second.hops.front().dpid == sw.dpid()) forget_path(it);
}

}  // namespace sdn::apps
