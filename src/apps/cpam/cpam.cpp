// CPAM: the reactive side (ARP, DNS, session setup, repair, FLOW_REMOVED) of every shard.
// The rotation engine is in rotation.cpp, the flow builders in flows.cpp.
#include "apps/cpam/cpam.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "apps/cpam/flows.hpp"
#include "apps/cpam/guard.hpp"
#include "core/log.hpp"
#include "pkt/build.hpp"
#include "pkt/dns.hpp"

namespace sdn::apps::cpam {

using southbound::Disposition;
using southbound::SwitchContext;
using topology::Hop;
using topology::PortRef;
using topology::PortRole;

namespace {
void release(SwitchContext& sw, const ofp::PacketIn& pin) {
  if (pin.buffer_id == ofp::kNoBuffer) return;
  ofp::PacketOut po;
  po.buffer_id = pin.buffer_id;
  po.in_port = pin.in_port();
  sw.send(std::move(po));
}
}  // namespace

uint64_t make_cookie(CookieKind k, unsigned shard, uint64_t id) {
  if (k == CookieKind::kVipRule) return kCookie | (uint64_t{static_cast<uint8_t>(k)} << 52) | (id & 0xffff'ffff);
  return kCookie | (uint64_t{static_cast<uint8_t>(k)} << 52) | (uint64_t{shard & 0xff} << 44) |
         (id & ((uint64_t{1} << 44) - 1));
}

// ---- instance ----------------------------------------------------------------------------

Cpam::Cpam(std::shared_ptr<CpamService> svc, unsigned shard) : svc_(std::move(svc)), cfg_(svc_->cfg_), shard_(shard) {}

Cpam::~Cpam() {
  if (svc_->instance(shard_) == this) svc_->detach(shard_);
}

void Cpam::on_start(southbound::Runtime& rt, unsigned shard) {
  rt_ = &rt;
  shard_ = shard;
  svc_->attach(shard_, this);
  snap_ = svc_->latest();
  if (svc_->due_) {
    auto* runtime = rt_;
    auto sub = svc_->due_->observe(
        topology::kTopologyPattern,
        [this](const data::RecordPtr& r) {
          if (r->value.is_json()) apply_topology(r->key, r->value.json());
        },
        [runtime, shard](std::function<void()> fn) { runtime->post(shard, std::move(fn)); });
    if (!sub) {
      spdlog::error("cpam: cannot subscribe to {}: {}", topology::kTopologyPattern, sub.error());
    } else {
      sub_ = std::move(*sub);
    }
  }
  restore_sessions();
  rt_->call_after(shard_, std::chrono::seconds(1), [this] { sweep_now(); });
  if (shard_ == 0) engine_start();
}

void Cpam::on_stop() {
  stopped_ = true;
  // Cluster: no more renewals; this instance's records expire with their TTL.
  if (shard_ == 0 && svc_->link_ != nullptr) svc_->link_->stop();
  sub_.cancel();
  if (!samples_.empty()) svc_->write_samples(samples_);
  samples_.clear();
  if (shard_ == 0 && cfg_.commit_off_loop) svc_->committer_->wait_idle();  // the records queued there are written before the stop
}

void Cpam::apply_topology(std::string_view key, const nlohmann::json& value) {
  auto rec = view_.apply(key, value);
  if (!rec) {
    SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: {}", rec.error());
    return;
  }
  if (!*rec) return;
  guard_topology(**rec);
  if (const auto* l = std::get_if<topology::LinkRecord>(&**rec); l && !l->up) link_gone(l->link, l->reason == "switch_down");
}

void Cpam::link_gone(const topology::Link& l, bool switch_down) {
  auto down = [&](uint64_t dpid) { return std::find(down_.begin(), down_.end(), dpid) != down_.end(); };
  auto uses = [&](const Hop& h) {
    return (h.dpid == l.a.dpid && (h.out_port == l.a.port || h.in_port == l.a.port)) ||
           (h.dpid == l.b.dpid && (h.out_port == l.b.port || h.in_port == l.b.port));
  };
  std::vector<std::pair<uint64_t, std::vector<Hop>>> doomed;  // (cookie, hops)
  for (auto& [key, b] : sessions_) {
    bool hit = false;
    if (b.hops[0].empty() && b.hops[1].empty()) continue;
    if (switch_down && (down(b.edge[0]) || down(b.edge[1]))) continue;
    for (const auto& dir : b.hops) hit = hit || std::any_of(dir.begin(), dir.end(), uses);
    if (!hit) continue;
    std::vector<Hop> all = b.hops[0];
    all.insert(all.end(), b.hops[1].begin(), b.hops[1].end());
    doomed.emplace_back(kCookie | (uint64_t{b.owner & 0xff} << 44) | (b.id & ((uint64_t{1} << 44) - 1)), all);
    b.hops[0].clear();
    b.hops[1].clear();
  }
  if (rt_ == nullptr) return;
  for (const auto& [cookie, hops] : doomed) {
    ofp::FlowMod del;
    del.command = ofp::FlowModCommand::kDelete;
    del.table_id = cfg_.table_id;
    del.cookie = cookie;
    del.cookie_mask = 0xff0f'ffff'ffff'ffffULL;  // every kind of this session's rules
    std::vector<uint64_t> done;
    for (const Hop& h : hops) {
      if (std::find(done.begin(), done.end(), h.dpid) != done.end()) continue;
      done.push_back(h.dpid);
      rt_->with_switch(h.dpid, [del](SwitchContext& s) { s.send(del); });
    }
  }
  reroutes_.inc(doomed.size());
}

Disposition Cpam::on_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now) {
  auto parsed = pkt::parse(pin.data, pkt::ParseOptions{.allow_truncated = true});
  if (!parsed) return Disposition::kContinue;  // forwarding counts and logs it
  const pkt::Parsed& p = *parsed;
  const auto role = view_.role(PortRef{sw.dpid(), pin.in_port()}).value_or(PortRole::kPending);
  if (snap_ == nullptr) snap_ = svc_->latest();  // started before the first epoch reached this shard
  if (role == PortRole::kEdge && !p.lldp && guard_check(sw, pin, p)) {
    release(sw, pin);
    return Disposition::kStop;
  }
  if (p.arp) return handle_arp(sw, pin, p, role);
  if (p.ipv4) return handle_ipv4(sw, pin, p, role, now);
  return Disposition::kContinue;
}

Disposition Cpam::handle_arp(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, PortRole role) {
  const pkt::Arp& a = *p.arp;
  const uint32_t tpa = a.tpa.value;
  const bool ours = svc_->in_pool(tpa) || tpa == cfg_.dns_ip;
  if (a.op == pkt::kArpReply && p.eth.dst.value == virtual_mac(cfg_.dns_ip)) {
    packet_ins_.inc();
    release(sw, pin);
    return Disposition::kStop;  // the answer to a locate probe: topology has seen the host
  }
  // Real addresses of protected hosts are not reachable: nobody resolves them, nobody rewrites
  // a host's cache entry for them, and a host's own announcement of one is not spread (the
  // switches drop all of it by rule; this catches what reached the controller first).
  if (cfg_.block_real && !ours && svc_->dir_.find_ip(tpa) && !allowed_source(a.spa.value)) {
    packet_ins_.inc();
    real_blocked_.inc();
    release(sw, pin);
    return Disposition::kStop;
  }
  if (a.op != pkt::kArpRequest || !ours) return Disposition::kContinue;
  packet_ins_.inc();
  if (role != PortRole::kEdge) {  // a copy flooded by someone else: the edge answers
    release(sw, pin);
    return Disposition::kStop;
  }
  bool live = tpa == cfg_.dns_ip;
  if (!live) {
    const auto v = svc_->vips().load(svc_->vip_index(tpa));
    live = v.state == VipState::kPrimary || v.state == VipState::kGrace;
  }
  if (!live) {
    arp_refused_.inc();  // free, reserved or quarantined: the address does not exist
    release(sw, pin);
    return Disposition::kStop;
  }
  const pkt::Bytes reply = pkt::arp_reply_for(a, pkt::Mac{virtual_mac(tpa)});
  ofp::PacketOut po;
  po.in_port = ofp::port::kController;
  po.data = reply;
  po.actions.push_back(ofp::ActionOutput{pin.in_port()});
  sw.send(std::move(po));
  release(sw, pin);
  arp_answered_.inc();
  return Disposition::kStop;
}

Disposition Cpam::handle_ipv4(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, PortRole role,
                              Clock::time_point rx) {
  const uint32_t src = p.ipv4->src.value, dst = p.ipv4->dst.value;
  const bool to_vip = svc_->in_pool(dst), from_vip = svc_->in_pool(src);
  const bool to_dns = dst == cfg_.dns_ip;
  // Whatever the source (listed, unlisted, spoofed), except real_allowed_from.
  const bool to_real = cfg_.block_real && src != dst && svc_->dir_.find_ip(dst).has_value() && !allowed_source(src);
  if (!to_vip && !from_vip && !to_dns && !to_real) return Disposition::kContinue;
  packet_ins_.inc();
  auto drop = [&](Stat& why) {
    why.inc();
    release(sw, pin);
    return Disposition::kStop;
  };
  if (to_real) return drop(real_blocked_);
  if (role == PortRole::kLink) {
    if (from_vip && to_vip) {
      repair(sw, pin, p, rx);
      return Disposition::kStop;
    }
    return drop(not_ready_);
  }
  if (role != PortRole::kEdge) return drop(not_ready_);
  if (from_vip) return drop(spoofed_);  // hosts never own a VIP: someone forged it
  if (to_dns) {
    if (p.udp && p.udp->dst_port == pkt::kDnsPort) {
      answer_dns(sw, p, pin.in_port());
      release(sw, pin);
      return Disposition::kStop;
    }
    return drop(dns_errors_);
  }
  setup(sw, pin, p, rx);
  return Disposition::kStop;
}

void Cpam::answer_dns(SwitchContext& sw, const pkt::Parsed& p, uint32_t in_port) {
  auto q = pkt::parse_dns_query(p.udp->payload);
  if (!q) {
    dns_errors_.inc();
    SDN_LOG_RATELIMITED(spdlog::level::debug, "cpam: bad DNS query: {}", pkt::to_string(q.error()));
    return;
  }
  uint8_t rcode = pkt::dnsrcode::kNoError;
  std::vector<pkt::Ipv4Addr> answers;
  uint32_t ttl = 0;
  const std::string suffix = "." + cfg_.zone;
  const std::string& name = q->name;
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    rcode = pkt::dnsrcode::kRefused;  // not our zone: we are no recursive resolver
    dns_refused_.inc();
  } else if (auto it = svc_->dir_.by_name.find(name.substr(0, name.size() - suffix.size()));
             it == svc_->dir_.by_name.end() || snap_ == nullptr || snap_->primary[it->second] == kNone) {
    rcode = pkt::dnsrcode::kNxDomain;
    dns_nxdomain_.inc();
  } else {
    if (q->qtype == pkt::dnstype::kA || q->qtype == pkt::dnstype::kAny)
      answers.push_back(pkt::Ipv4Addr{cfg_.vip_ip(snap_->primary[it->second])});
    // No longer than the rest of the epoch: a cached answer never outlives its VIP's term.
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(snap_->next_rotation - rt_->now()).count();
    const auto term = std::chrono::duration_cast<std::chrono::seconds>(snap_->next_rotation - snap_->published).count();
    ttl = static_cast<uint32_t>(std::clamp<int64_t>(left, 0, std::max<int64_t>(term, 0)));
    dns_answered_.inc();
  }
  const pkt::Bytes msg = pkt::build_dns_response(*q, rcode, answers, ttl);
  pkt::EthSpec eth;
  eth.dst = p.eth.src;
  eth.src = pkt::Mac{virtual_mac(cfg_.dns_ip)};
  pkt::Ipv4Spec ip;
  ip.src = pkt::Ipv4Addr{cfg_.dns_ip};
  ip.dst = p.ipv4->src;
  const pkt::Bytes frame = pkt::build_udp(eth, ip, pkt::kDnsPort, p.udp->src_port, msg);
  ofp::PacketOut po;
  po.in_port = ofp::port::kController;
  po.data = frame;
  po.actions.push_back(ofp::ActionOutput{in_port});
  sw.send(std::move(po));
}

// The first packet of a session from a protected host to a VIP (Algorithm 1, OnPacketIn).
void Cpam::setup(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, Clock::time_point rx, bool asked) {
  auto fail = [&](Stat& why) {
    why.inc();
    setup_failed_.inc();
    release(sw, pin);
  };
  const auto from = svc_->dir_.find_ip(p.ipv4->src.value);
  if (!from) return fail(unprotected_src_);
  const uint32_t vd = svc_->vip_index(p.ipv4->dst.value);
  const auto dv = svc_->vips().load(vd);
  if (dv.owner == kNone || (dv.state != VipState::kPrimary && dv.state != VipState::kGrace) || dv.owner == *from)
    return fail(stale_vip_);
  uint16_t sp = 0, dp = 0;
  if (p.tcp) {
    sp = p.tcp->src_port;
    dp = p.tcp->dst_port;
  } else if (p.udp) {
    sp = p.udp->src_port;
    dp = p.udp->dst_port;
  } else if (p.icmp && p.icmp->type != pkt::icmptype::kEchoRequest && p.icmp->type != pkt::icmptype::kEchoReply) {
    return fail(parse_errors_);  // ICMP errors ride on the session's flows, never start one
  }
  const uint8_t proto = p.ipv4->protocol;
  const uint32_t a = *from, b = dv.owner;
  const Key key{proto, a, vd, sp, dp};

  if (park(key, pin, sw.dpid(), rx)) return;  // its hand-off is on its way: it goes with it
  if (auto it = sessions_.find(key); it != sessions_.end()) {
    Binding& bd = it->second;
    reused_.inc();  // pinned: later packets and later epochs use the same pair
    // Packets of a session installed a moment ago still miss while the switch's datapath
    // cache catches up with the new rules: deliver them, do not reprogram the path.
    // (hops are cleared when a link of the path goes down: then it is reinstalled at once).
    const bool fresh = !bd.hops[0].empty() && rx - bd.installed < std::chrono::milliseconds(500);
    if (!install(bd, pin, bd.client == a, rx, !fresh)) setup_failed_.inc();
    return;
  }
  // Cluster: the other end is on a peer's switch, so this may answer a session the peer bound.
  // A TCP SYN without ACK opens a connection and answers nothing: no need to ask.
  const bool opening =
      p.tcp && (p.tcp->flags & pkt::tcpflag::kSyn) != 0 && (p.tcp->flags & pkt::tcpflag::kAck) == 0;
  if (!asked && !opening && remote_host(b, rx) && ask_peer(key, pin, sw.dpid(), rx)) return;
  if (sessions_.size() >= cfg_.max_sessions_per_shard) return fail(sessions_full_);
  if (snap_ == nullptr || snap_->primary[a] == kNone) return fail(not_ready_);
  const uint32_t vc = snap_->primary[a];
  auto& vips = svc_->vips();
  if (!vips.acquire_session(vd, rx, cfg_.grace_accept)) return fail(stale_vip_);  // retired too long ago
  if (!vips.acquire_session(vc, rx, cfg_.grace_accept)) {
    vips.release_session(vd);
    return fail(stale_vip_);
  }
  Binding bd;
  bd.client = a;
  bd.server = b;
  bd.vc = vc;
  bd.vs = vd;
  bd.cport = sp;
  bd.sport = dp;
  bd.proto = proto;
  bd.id = ++next_id_;
  bd.owner = shard_;
  bd.flowless_since = rx;
  sessions_.emplace(key, bd);
  by_id_.emplace(bd.id, key);
  live_sessions_.store(by_id_.size(), std::memory_order_relaxed);
  bound_.inc();
  // The server side's shard gets the reverse key first, so a reply that misses finds the pin.
  // When that shard is this one, with_switch runs it right here and the insert may rehash
  // sessions_: look the binding up again afterwards, never keep a reference across it.
  if (auto sl = locate(b, rx)) replicate(server_key(bd), bd, sl->at.dpid);
  auto slot = sessions_.find(key);
  if (slot != sessions_.end() && remote_host(b, rx) && hand_off(key, slot->second, pin, sw.dpid(), rx)) return;
  if (slot == sessions_.end() || !install(slot->second, pin, true, rx)) setup_failed_.inc();
}

void Cpam::replicate(const Key& k, const Binding& b, uint64_t server_dpid) {
  if (rt_ == nullptr) return;
  // Bookkeeping, not in front of the reply: on another shard it goes after this turn's writes.
  // The server's own PacketIn cannot come sooner: its switch gets the path's FlowMods before
  // the PacketOut that delivers the first packet, on the same connection.
  rt_->with_switch_soon(server_dpid, [svc = svc_, rt = rt_, k, b](SwitchContext&) {
    Cpam* t = svc->instance(rt->current_shard());
    if (t != nullptr) t->sessions_.try_emplace(k, b);
  });
}

bool Cpam::install(Binding& b, const ofp::PacketIn& pin, bool from_client, Clock::time_point rx, bool flows) {
  const auto lc = locate(b.client, rx);
  const auto ls = locate(b.server, rx);
  if (!lc || !ls) {
    unlocated_.inc();
    return false;
  }
  auto fwd = view_.paths().path(lc->at, ls->at);
  auto rev = view_.paths().path(ls->at, lc->at);
  if (!fwd || !rev || fwd->empty() || rev->empty()) {
    no_path_.inc();
    return false;
  }
  const auto& hosts = svc_->dir_.hosts;
  const flows::Session s{b.proto,
                         hosts[b.client].ip,
                         hosts[b.server].ip,
                         cfg_.vip_ip(b.vc),
                         cfg_.vip_ip(b.vs),
                         lc->mac,
                         ls->mac,
                         b.cport,
                         b.sport};
  flows::Plan plan = flows ? flows::plan_session(cfg_, s, *fwd, *rev, b.owner, b.id) : flows::Plan{};
  // The triggering packet, translated, out of its destination's port at the last hop.
  const auto& path = from_client ? *fwd : *rev;
  if (rt_ == nullptr || rt_->is_up(path.back().dpid)) {
    plan.add_packet_out(path.back().dpid, flows::deliver(s, from_client, path.back().out_port), pin.data);
  } else {
    // The path leaves this instance's switches (cluster): the packet goes on from the last one
    // it masters, as the fabric carries it; the peer's VIP rule or repair takes it from there.
    size_t last = 0;
    while (last + 1 < path.size() && rt_->is_up(path[last + 1].dpid)) ++last;
    plan.add_packet_out(path[last].dpid, flows::onward(s, from_client, path[last].out_port), pin.data);
    onward_.inc();
  }
  if (flows) {
    setups_.inc();
    b.installed = rx;
    b.edge[0] = lc->at.dpid;
    b.edge[1] = ls->at.dpid;
    b.hops[0] = *fwd;
    b.hops[1] = *rev;
  } else {
    delivered_only_.inc();
  }
  const bool rotating = svc_->rotating();
  auto left = std::make_shared<std::atomic<size_t>>(plan.switches.size());
  auto unconfirmed = std::make_shared<std::atomic<size_t>>(plan.switches.size());
  auto svc = svc_;
  const unsigned owner = b.owner;
  const uint64_t id = b.id;
  // Run to completion: every switch's batch goes out from this thread, the switches of other
  // shards included (Runtime::send_batch_to); the confirm is bookkeeping, posted to the owner
  // after the barrier reply, never in front of the reply.
  for (auto& sb : plan.switches) {
    const uint8_t bits = sb.first_hop_bits;
    sb.attach_frame();
    auto done = [svc, unconfirmed, rx, owner, id, bits, rt = rt_, frame = sb.frame](const southbound::BatchResult& r) {
      if (r.ok && bits != 0 && rt != nullptr)
        rt->post_soon(owner, [svc, owner, id, bits] {
          if (Cpam* t = svc->instance(owner)) t->confirm(id, bits);
        });
      if (unconfirmed->fetch_sub(1, std::memory_order_acq_rel) == 1) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - rx).count();
        svc->setup_confirmed_->record(static_cast<uint64_t>(std::max<int64_t>(ns, 0)));
      }
    };
    // RPPT: the last FlowMod/PacketOut of this event is on the wire or queued for its switch's
    // next write.
    auto queued = [svc, left, rx, rotating, rt = rt_] {
      if (left->fetch_sub(1, std::memory_order_acq_rel) == 1)
        svc->record_rppt(rx, "setup", rotating,
                         svc->samples_ != nullptr && rt != nullptr ? svc->instance(rt->current_shard()) : nullptr);
    };
    if (rt_ == nullptr ||
        !rt_->send_batch_to(sb.dpid, std::move(sb.batch), southbound::Lane::kHigh, std::move(done), std::move(queued))) {
      left->fetch_sub(1);
      unconfirmed->fetch_sub(1);
    }
  }
  return true;
}

// A packet between two VIPs missed on a transit switch (its session's transit flow expired or
// its path changed under it): the rest of the path is installed from here, statelessly.
void Cpam::repair(SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, Clock::time_point rx) {
  auto& vips = svc_->vips();
  const uint32_t vs = svc_->vip_index(p.ipv4->dst.value);
  const auto dv = vips.load(vs);
  const auto sv = vips.load(svc_->vip_index(p.ipv4->src.value));
  auto live = [this](const VipTable::View& v) { return svc_->in_use(v); };
  if (dv.owner == kNone || !live(dv) || !live(sv)) {
    stale_vip_.inc();
    release(sw, pin);
    return;
  }
  const auto ld = locate(dv.owner, rx);
  if (!ld) {
    unlocated_.inc();
    release(sw, pin);
    return;
  }
  auto hops = view_.paths().path(PortRef{sw.dpid(), pin.in_port()}, ld->at);
  if (!hops || hops->empty()) {
    no_path_.inc();
    release(sw, pin);
    return;
  }
  // Cluster: a path that ends on a peer's switch is repaired up to the last switch this instance
  // masters, and the packet goes on from there unchanged; the peer's rules take it.
  size_t last = hops->size() - 1;
  const bool remote_end = rt_ != nullptr && !rt_->is_up((*hops)[last].dpid);
  flows::Plan plan = flows::plan_repair(cfg_, p, *hops, vs, svc_->dir_.hosts[dv.owner].ip, ld->mac, shard_,
                                        ++next_id_, pin.data, !remote_end);
  if (remote_end) {
    last = 0;
    while (last + 1 < hops->size() && rt_->is_up((*hops)[last + 1].dpid)) ++last;
    ofp::PacketOut po;
    po.in_port = ofp::port::kController;
    po.actions = {ofp::ActionOutput{(*hops)[last].out_port, 0}};
    plan.add_packet_out((*hops)[last].dpid, std::move(po), pin.data);
    onward_.inc();
  }
  repairs_.inc();
  for (auto& sb : plan.switches) {
    sb.attach_frame();
    auto done = [frame = sb.frame](const southbound::BatchResult&) {};  // keeps the PacketOut's bytes
    if (sb.dpid == sw.dpid()) {
      sw.send_batch(std::move(sb.batch), southbound::Lane::kHigh, std::move(done));
    } else if (rt_ != nullptr) {
      rt_->send_batch_to(sb.dpid, std::move(sb.batch), southbound::Lane::kHigh, std::move(done));  // from this thread
    }
  }
  record_rppt(rx, "repair");
}

void Cpam::record_rppt(Clock::time_point rx, const char* kind) { svc_->record_rppt(rx, kind, svc_->rotating(), this); }

// Into the histograms; and into `t`'s sample buffer (its shard's, flushed by its sweep) when
// samples are on.
void CpamService::record_rppt(Clock::time_point rx, const char* kind, bool rotating, Cpam* t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - rx).count();
  const uint64_t v = static_cast<uint64_t>(std::max<int64_t>(ns, 0));
  rppt_->record(v);
  (rotating ? rppt_rotating_ : rppt_quiet_)->record(v);
  if (samples_ != nullptr && t != nullptr) {
    const auto rx_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(rx.time_since_epoch()).count();
    t->samples_.push_back(fmt::format("{},{},{},{},{},{}\n", rx_ns, v, kind, rotating ? 1 : 0,
                                      t->snap_ ? t->snap_->epoch : 0, t->shard_));
  }
}

void Cpam::confirm(uint64_t id, uint8_t bits) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  auto bit = sessions_.find(it->second);
  if (bit == sessions_.end()) return;
  Binding& b = bit->second;
  for (uint8_t m : {uint8_t{1}, uint8_t{2}}) {
    if ((bits & m) == 0 || (b.live & m) != 0) continue;
    b.live |= m;
    svc_->vips().add_flow(b.vc);
    svc_->vips().add_flow(b.vs);
  }
}

void Cpam::flow_gone(uint64_t id, uint8_t bit, Clock::time_point now) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  auto bi = sessions_.find(it->second);
  if (bi == sessions_.end()) return;
  Binding& b = bi->second;
  if ((b.live & bit) == 0) return;
  b.live &= static_cast<uint8_t>(~bit);
  svc_->vips().drop_flow(b.vc);
  svc_->vips().drop_flow(b.vs);
  if (b.live == 0) b.flowless_since = now;
}

void Cpam::on_flow_removed(SwitchContext& sw, const ofp::FlowRemoved& fr) {
  if ((fr.cookie & guard::kCookieMask) == guard::kCookie) guard_flow_removed(sw.dpid(), fr);
  if ((fr.cookie & kCookieMask) != kCookie) return;
  flows_removed_.inc();
  const CookieKind k = cookie_kind(fr.cookie);
  if (k != CookieKind::kFirstFwd && k != CookieKind::kFirstRev) return;
  const uint8_t bit = k == CookieKind::kFirstFwd ? 1 : 2;
  const uint64_t id = cookie_id(fr.cookie);
  const unsigned owner = cookie_shard(fr.cookie);
  if (owner == shard_) {
    flow_gone(id, bit, rt_ ? rt_->now() : Clock::now());
  } else if (rt_ != nullptr && owner < rt_->shard_count()) {
    auto* rt = rt_;
    rt_->post_soon(owner, [svc = svc_, owner, id, bit, rt] {
      if (Cpam* t = svc->instance(owner)) t->flow_gone(id, bit, rt->now());
    });
  }
}

void Cpam::erase_binding(const Key& k, bool release_refs) {
  auto it = sessions_.find(k);
  if (it == sessions_.end()) return;
  const Binding b = it->second;
  sessions_.erase(it);
  if (b.owner != shard_) return;
  by_id_.erase(b.id);
  if (cfg_.recovery && svc_->due_) ended_.push_back(b.id);  // archived by the next sweep
  live_sessions_.store(by_id_.size(), std::memory_order_relaxed);
  if (release_refs) {
    for (uint8_t m : {uint8_t{1}, uint8_t{2}})
      if ((b.live & m) != 0) {
        svc_->vips().drop_flow(b.vc);
        svc_->vips().drop_flow(b.vs);
      }
    svc_->vips().release_session(b.vc);
    svc_->vips().release_session(b.vs);
  }
  // The reverse key lives on the server's access switch's shard (maybe this one).
  if (rt_ != nullptr)
    for (unsigned s = 0; s < rt_->shard_count(); ++s)
      rt_->post_soon(s, [svc = svc_, s, k = server_key(b), id = b.id, owner = shard_] {
        Cpam* t = svc->instance(s);
        if (t == nullptr) return;
        auto r = t->sessions_.find(k);
        if (r != t->sessions_.end() && r->second.owner == owner && r->second.id == id) t->sessions_.erase(r);
      });
}

void Cpam::sweep(Clock::time_point now) {
  std::vector<Key> done;
  for (const auto& [id, key] : by_id_) {
    auto it = sessions_.find(key);
    if (it != sessions_.end() && it->second.live == 0 && now - it->second.flowless_since >= cfg_.session_linger)
      done.push_back(key);
  }
  for (const Key& k : done) erase_binding(k, true);
  expired_.inc(done.size());
  // Cluster: a host that never spoke since its port settled is known to nobody, and this
  // instance's locate probes reach only its own switches: every instance's shard 0 asks for
  // the protected hosts nobody located yet on its own edges (paced as locate() paces them), so
  // the master of a silent host's switch learns it before a session needs it.
  if (shard_ == 0 && svc_->clustered() && rt_ != nullptr) {
    size_t asked = 0;
    for (uint32_t h = 0; h < svc_->dir_.hosts.size() && asked < kSilentProbes; ++h) {
      const uint32_t ip = svc_->dir_.hosts[h].ip;
      if (view_.host_of_ip(ip) != nullptr) continue;
      if (!may_probe(ip, now)) continue;
      probe(ip);
      ++asked;
    }
  }
  // Hand-off records live as long as their bindings (renewed at half their TTL).
  for (const auto& [id, key] : by_id_) {
    auto it = sessions_.find(key);
    if (it == sessions_.end() || it->second.handed == Clock::time_point{}) continue;
    if (now - it->second.handed >= handoff_ttl(it->second.proto) / 2) write_handoff(it->second, now, [](bool) {});
  }
  persist_sessions(now);
  if (!samples_.empty()) {
    svc_->write_samples(samples_);
    samples_.clear();
  }
}

void Cpam::sweep_now() {
  if (stopped_) return;
  sweep(rt_ ? rt_->now() : Clock::now());
  guard_poll();
  if (rt_ != nullptr) rt_->call_after(shard_, std::chrono::seconds(1), [this] { sweep_now(); });
}

// A switch that goes away takes its flows without FLOW_REMOVED: the bindings whose first-hop
// flows were there (on any shard) drop those references, so their VIPs can still be reclaimed.
void Cpam::on_switch_down(uint64_t dpid) {
  guard_switch_down(dpid);
  if (rt_ == nullptr) return;
  for (unsigned s = 0; s < rt_->shard_count(); ++s)
    rt_->post(s, [svc = svc_, s, dpid] {
      if (Cpam* t = svc->instance(s)) t->switch_gone(dpid);
    });
}

void Cpam::switch_gone(uint64_t dpid) {
  const auto now = rt_ ? rt_->now() : Clock::now();
  if (std::find(down_.begin(), down_.end(), dpid) == down_.end()) down_.push_back(dpid);
  std::vector<std::pair<uint64_t, uint8_t>> gone;
  for (const auto& [id, key] : by_id_) {
    auto it = sessions_.find(key);
    if (it == sessions_.end()) continue;
    for (uint8_t i = 0; i < 2; ++i)
      if (it->second.edge[i] == dpid) gone.emplace_back(id, static_cast<uint8_t>(1u << i));
  }
  for (auto [id, bit] : gone) flow_gone(id, bit, now);
}

}  // namespace sdn::apps::cpam

namespace sdn::apps::cpam {

nlohmann::json Cpam::sessions_json(size_t limit) const {
  nlohmann::json out = nlohmann::json::array();
  const auto now = rt_ ? rt_->now() : Clock::now();
  const auto& hosts = svc_->dir_.hosts;
  auto name = [&](uint32_t h) { return h < hosts.size() ? hosts[h].name : std::string("?"); };
  auto vip = [&](uint32_t v) { return v == kNone ? std::string() : pkt::Ipv4Addr{cfg_.vip_ip(v)}.to_string(); };
  for (const auto& [id, key] : by_id_) {
    if (out.size() >= limit) break;
    auto it = sessions_.find(key);
    if (it == sessions_.end()) continue;
    const Binding& b = it->second;
    out.push_back({{"id", b.id},
                   {"proto", b.proto == 6 ? "tcp" : b.proto == 17 ? "udp" : b.proto == 1 ? "icmp" : std::to_string(b.proto)},
                   {"client", name(b.client)},
                   {"server", name(b.server)},
                   {"client_vip", vip(b.vc)},
                   {"server_vip", vip(b.vs)},
                   {"client_port", b.cport},
                   {"server_port", b.sport},
                   {"live", (b.live & 1 ? 1 : 0) + (b.live & 2 ? 1 : 0)},
                   {"shard", b.owner},
                   {"age_s", std::chrono::duration<double>(now - b.installed).count()}});
  }
  return out;
}

}  // namespace sdn::apps::cpam
