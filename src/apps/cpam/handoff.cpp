// CPAM: sessions across cluster instances (hand-off records in Redis, parking a session's
// packets while a peer is asked). The rest of the reactive side is in cpam.cpp.
#include "apps/cpam/cpam.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "apps/cpam/flows.hpp"
#include "apps/cpam/guard.hpp"
#include "core/log.hpp"
#include "pkt/build.hpp"
#include "pkt/dns.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::cpam {

using southbound::SwitchContext;

std::chrono::milliseconds Cpam::handoff_ttl(uint8_t proto) const {
  const auto life = proto == 17 ? std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.udp_active)
                                : std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.tcp_idle);
  return 2 * life + cfg_.session_linger;
}

// The host's access switch is known and another instance masters it.
bool Cpam::remote_host(uint32_t host, Clock::time_point now) {
  if (!svc_->clustered() || svc_->link_ == nullptr || rt_ == nullptr) return false;
  const auto l = locate(host, now);
  return l && !rt_->is_up(l->at.dpid);
}

// A packet of a session waiting on Redis joins the first one (dropped past the cap).
bool Cpam::park(const Key& k, const ofp::PacketIn& pin, uint64_t /*dpid*/, Clock::time_point /*rx*/) {
  auto it = parked_.find(k);
  if (it == parked_.end()) return false;
  if (it->second.frames.size() < kParkedFrames) {
    it->second.frames.emplace_back(pin.data.begin(), pin.data.end());
  } else {
    handoff_dropped_.inc();
  }
  return true;
}

bool Cpam::ask_peer(const Key& k, const ofp::PacketIn& pin, uint64_t dpid, Clock::time_point rx) {
  // A switch-buffered packet may be truncated; it is bound here as before.
  if (pin.buffer_id != ofp::kNoBuffer) return false;
  if (parked_.size() >= kParkedKeys) {
    handoff_dropped_.inc();
    return false;
  }
  const auto key = shared::handoff_key(k.proto, svc_->dir_.hosts[k.src_host].ip, cfg_.vip_ip(k.dst_vip), k.sport,
                                       k.dport);
  auto* rt = rt_;
  const bool queued = svc_->link_->handoff_get(
      key, [svc = svc_, rt, shard = shard_, k](std::optional<std::string> v) {
        rt->post(shard, [svc, shard, k, v = std::move(v)]() mutable {
          if (Cpam* t = svc->instance(shard)) t->peer_answered(k, std::move(v));
        });
      });
  if (!queued) {
    handoff_errors_.inc();
    return false;
  }
  Parked& p = parked_[k];
  p.dpid = dpid;
  p.in_port = pin.in_port();
  p.rx = rx;
  p.frames.emplace_back(pin.data.begin(), pin.data.end());
  return true;
}

// The peer's answer (on this shard): its binding is taken over if it still holds (the same
// session, its VIPs still live and still the hosts'), then the parked packets go through
// set-up again, without asking.
void Cpam::peer_answered(const Key& k, std::optional<std::string> record) {
  auto it = parked_.find(k);
  if (it == parked_.end()) return;
  Parked p = std::move(it->second);
  parked_.erase(it);
  if (stopped_ || rt_ == nullptr) return;
  const auto now = rt_->now();
  std::optional<shared::Handoff> h;
  if (record) {
    auto d = shared::decode_handoff(*record, svc_->dir_, cfg_.pool_size);
    if (!d) {
      handoff_errors_.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: a session hand-off record is unusable: {}", d.error());
    } else {
      auto& vips = svc_->vips();
      const auto vc = vips.load(d->vc), vs = vips.load(d->vs);
      auto live = [this](const VipTable::View& v) { return svc_->in_use(v); };
      if (d->proto == k.proto && d->server == k.src_host && d->vc == k.dst_vip && d->sport == k.sport &&
          d->cport == k.dport && vc.owner == d->client && vs.owner == d->server && live(vc) && live(vs))
        h = *d;
    }
  }
  if (!h) handoff_misses_.inc();
  if (h && !sessions_.contains(k) && sessions_.size() < cfg_.max_sessions_per_shard) {
    Binding bd;
    bd.client = h->client;
    bd.server = h->server;
    bd.vc = h->vc;
    bd.vs = h->vs;
    bd.cport = h->cport;
    bd.sport = h->sport;
    bd.proto = h->proto;
    bd.id = ++next_id_;
    bd.owner = shard_;
    bd.flowless_since = now;
    svc_->vips().add_session(bd.vc);  // the peer accepted the session: whatever the window now
    svc_->vips().add_session(bd.vs);
    sessions_.emplace(k, bd);
    by_id_.emplace(bd.id, k);
    live_sessions_.store(by_id_.size(), std::memory_order_relaxed);
    handoffs_in_.inc();
  }
  // On this shard only: a switch that reconnected meanwhile may be another shard's now, and
  // with_switch would then run this later, there; its packets are dropped instead.
  for (auto& f : p.frames) {
    rt_->with_switch(p.dpid, [this, frame = std::move(f), in_port = p.in_port, rx = p.rx](SwitchContext& sw) {
      if (rt_->current_shard() != shard_ || stopped_) {
        handoff_dropped_.inc();
        return;
      }
      ofp::PacketIn pin;
      pin.match.set(ofp::OxmField::kInPort, in_port);
      pin.data = frame;
      pin.total_len = static_cast<uint16_t>(std::min<size_t>(frame.size(), 0xffff));
      auto parsed = pkt::parse(pin.data, pkt::ParseOptions{.allow_truncated = true});
      if (parsed && parsed->ipv4) setup(sw, pin, *parsed, rx, true);
    });
  }
}

void Cpam::write_handoff(Binding& b, Clock::time_point now, std::function<void(bool)> done) {
  const auto& hosts = svc_->dir_.hosts;
  shared::Handoff h{b.proto, b.client, b.server, b.vc, b.vs, b.cport, b.sport, svc_->link_->instance()};
  b.handed = now;
  if (!svc_->link_->handoff_put(shared::handoff_key(b.proto, hosts[b.server].ip, cfg_.vip_ip(b.vc), b.sport, b.cport),
                                shared::encode_handoff(h, svc_->dir_), handoff_ttl(b.proto), std::move(done))) {
    handoff_errors_.inc();
    b.handed = Clock::time_point{};
  }
}

// A new binding whose server is on a peer's switch: its record is written first; the packet
// (and any that follow meanwhile) goes on once Redis has it, so the server's reply finds it.
bool Cpam::hand_off(const Key& k, Binding& b, const ofp::PacketIn& pin, uint64_t dpid, Clock::time_point rx) {
  if (pin.buffer_id != ofp::kNoBuffer || parked_.size() >= kParkedKeys) return false;
  auto* rt = rt_;
  write_handoff(b, rx, [svc = svc_, rt, shard = shard_, k](bool ok) {
    rt->post(shard, [svc, shard, k, ok] {
      if (Cpam* t = svc->instance(shard)) t->handed_off(k, ok);
    });
  });
  if (b.handed == Clock::time_point{}) return false;  // not queued: installed at once, the peer may bind anew
  Parked& p = parked_[k];
  p.dpid = dpid;
  p.in_port = pin.in_port();
  p.rx = rx;
  p.frames.emplace_back(pin.data.begin(), pin.data.end());
  return true;
}

void Cpam::handed_off(const Key& k, bool ok) {
  auto it = parked_.find(k);
  if (it == parked_.end()) return;
  Parked p = std::move(it->second);
  parked_.erase(it);
  if (stopped_) return;
  // A failed write is counted; the session is installed anyway and the peer binds the reply
  // anew (under the server's current VIP).
  (ok ? handoffs_out_ : handoff_errors_).inc();
  bool first = true;
  for (const auto& f : p.frames) {
    auto s = sessions_.find(k);
    if (s == sessions_.end()) return;  // ended meanwhile
    ofp::PacketIn pin;
    pin.match.set(ofp::OxmField::kInPort, p.in_port);
    pin.data = f;
    pin.total_len = static_cast<uint16_t>(std::min<size_t>(f.size(), 0xffff));
    if (!install(s->second, pin, true, p.rx, first)) setup_failed_.inc();
    first = false;
  }
}

}  // namespace sdn::apps::cpam
