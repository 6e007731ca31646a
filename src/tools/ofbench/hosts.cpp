// The host-driven modes. `path`: hosts on a campus send first packets to each other and the
// time to delivery is the reactive path provisioning time. `cpam`: hosts resolve a peer's
// name through the controller's DNS, ARP for the address, and open a TCP connection (SYN ->
// SYN-ACK) as a Poisson process while the controller rotates addresses. The emulated hosts
// answer ARP for their own address and SYNs to their service port, like a real stack would.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "pkt/build.hpp"
#include "pkt/parse.hpp"
#include "tools/ofbench/bench.hpp"

namespace sdn::ofbench {

namespace {

constexpr double kArpCacheS = 60;  // Linux keeps a reachable entry about this long
constexpr uint16_t kPathPort = 9;  // discard: path-mode first packets

void after(asio::io_context& io, double s, std::function<void()> fn) {
  auto t = std::make_shared<asio::steady_timer>(io);
  t->expires_after(std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s)));
  t->async_wait([t, fn = std::move(fn)](const asio::error_code& ec) {
    if (!ec) fn();
  });
}

}  // namespace

void Bench::host_send(const Host& h, const Bytes& frame) { switches_[h.sw]->ingress(h.port, frame); }

void Bench::host_arp(Host& h, uint32_t ip, std::function<void(uint64_t)> then) {
  if (auto it = h.arp.find(ip); it != h.arp.end() && it->second.second > now_s()) {
    then(it->second.first);
    return;
  }
  auto& waiting = h.arp_waiting[ip];
  waiting.push_back(std::move(then));
  if (waiting.size() > 1) return;  // a request is already out
  const uint32_t hid = h.id;
  auto ask = std::make_shared<std::function<void(int)>>();
  *ask = [this, hid, ip, w = std::weak_ptr<std::function<void(int)>>(ask)](int tries) {
    Host& host = hosts_[hid - 1];
    auto it = host.arp_waiting.find(ip);
    if (it == host.arp_waiting.end() || it->second.empty()) return;
    if (tries >= 3) {  // unanswered: give up; the waiters hear mac 0 (a connection then times out)
      auto waiters = std::move(it->second);
      host.arp_waiting.erase(it);
      ++arp_failures_;
      for (auto& waiter : waiters) waiter(0);
      return;
    }
    host_send(host, pkt::arp_request(pkt::Mac{host.mac}, pkt::Ipv4Addr{host.ip}, pkt::Ipv4Addr{ip}));
    after(*ios_[0], 1.0, [f = w.lock(), tries] {  // the pending timer keeps the retry alive
      if (f) (*f)(tries + 1);
    });
  };
  (*ask)(0);
}

void Bench::host_rx(uint32_t hid, const Bytes& frame) {
  Host& h = hosts_[hid - 1];
  auto p = pkt::parse(frame);
  if (!p) return;
  if (p->eth.dst.value != h.mac && p->eth.dst != pkt::Mac::broadcast()) {
    ++stray_frames_;
    return;
  }
  if (p->arp) {
    const auto& a = *p->arp;
    if (a.op == pkt::kArpRequest && a.tpa.value == h.ip) {
      host_send(h, pkt::arp_reply(pkt::Mac{h.mac}, pkt::Ipv4Addr{h.ip}, a.sha, a.spa));
    } else if (a.op == pkt::kArpReply && a.tha.value == h.mac) {
      h.arp[a.spa.value] = {a.sha.value, now_s() + kArpCacheS};
      if (auto it = h.arp_waiting.find(a.spa.value); it != h.arp_waiting.end()) {
        auto waiters = std::move(it->second);
        h.arp_waiting.erase(it);
        for (auto& w : waiters) w(a.sha.value);
      }
    }
    return;
  }
  if (!p->ipv4 || p->ipv4->dst.value != h.ip) {
    if (p->ipv4) ++stray_frames_;
    return;
  }
  if (p->udp && p->udp->src_port == 53) {
    auto ans = parse_dns_answer(p->udp->payload);
    if (!ans) return;
    auto it = dns_pending_.find((uint64_t{hid} << 16) | ans->id);
    if (it == dns_pending_.end()) return;
    const uint32_t cid = it->second;
    dns_pending_.erase(it);
    Conn& c = conns_[cid - 1];
    if (c.done || c.failed) return;
    complete(c.ev_dns, now_s());
    if (!ans->address || ans->rcode != 0) {
      fail_connection(cid, "dns_no_address");
      return;
    }
    c.vip = *ans->address;
    if (auto lv = last_vip_.find(c.server); lv != last_vip_.end() && lv->second != c.vip) {
      ++dns_changes_;
      dns_change_times_.push_back(now_s());
    }
    last_vip_[c.server] = c.vip;
    if (ans->ttl > 0) h.dns[c.server] = {c.vip, now_s() + ans->ttl};
    resolve_mac(cid);
    return;
  }
  if (p->udp && p->udp->dst_port == kPathPort && p->udp->payload.size() >= 4) {
    const uint32_t ev = pkt::load_be32(p->udp->payload, 0);
    if (auto it = path_dst_.find(ev); it != path_dst_.end() && it->second == hid) {
      path_dst_.erase(it);
      complete(ev, now_s());
    }
    return;
  }
  if (p->tcp) {
    const auto& t = *p->tcp;
    const bool syn = (t.flags & pkt::tcpflag::kSyn) != 0, ack = (t.flags & pkt::tcpflag::kAck) != 0;
    if (syn && !ack && t.dst_port == o_.service_port) {
      const uint32_t cid = t.seq;
      if (cid == 0 || cid > conns_.size() || conns_[cid - 1].server != hid) {
        ++misdelivered_;
        return;
      }
      Conn& c = conns_[cid - 1];
      complete(c.ev_rppt, now_s());
      // Answer as a listening socket would: to the address the SYN came from (the
      // client's VIP under CPAM), resolving its MAC first.
      const uint32_t peer_ip = p->ipv4->src.value;
      const uint16_t sport = t.src_port, dport = t.dst_port;
      const uint32_t seq = t.seq;
      host_arp(h, peer_ip, [this, hid, peer_ip, sport, dport, seq](uint64_t mac) {
        if (mac == 0) return;
        const Host& srv = hosts_[hid - 1];
        pkt::EthSpec eth{pkt::Mac{mac}, pkt::Mac{srv.mac}};
        pkt::Ipv4Spec ip;
        ip.src = pkt::Ipv4Addr{srv.ip};
        ip.dst = pkt::Ipv4Addr{peer_ip};
        pkt::TcpSpec tcp;
        tcp.src_port = dport;
        tcp.dst_port = sport;
        tcp.seq = 7;
        tcp.ack = seq + 1;
        tcp.flags = pkt::tcpflag::kSyn | pkt::tcpflag::kAck;
        host_send(srv, pkt::build_tcp(eth, ip, tcp));
      });
    } else if (syn && ack) {
      const uint32_t cid = t.ack - 1;
      if (cid == 0 || cid > conns_.size() || conns_[cid - 1].client != hid) {
        ++misdelivered_;
        return;
      }
      Conn& c = conns_[cid - 1];
      if (c.done || c.failed) return;
      c.done = true;
      complete(c.ev_connect, now_s());
    }
  }
}

void Bench::on_packet_in_sent(EmuSwitch& sw, const Bytes& frame) {
  if (o_.mode != "cpam" || frame.size() < 54 || frame[12] != 0x08 || frame[13] != 0x00 || frame[23] != 6) return;
  auto p = pkt::parse(frame);
  if (!p || !p->tcp || (p->tcp->flags & pkt::tcpflag::kSyn) == 0 || (p->tcp->flags & pkt::tcpflag::kAck) != 0) return;
  const uint32_t cid = p->tcp->seq;
  if (cid == 0 || cid > conns_.size()) return;
  Conn& c = conns_[cid - 1];
  if (c.ev_rppt == 0 && hosts_[c.client - 1].sw == sw.index()) c.ev_rppt = new_event(Kind::kRppt, sw.index());
}

// ---- connections (cpam) -------------------------------------------------------------------

void Bench::start_connection() {
  if (hosts_.size() < 2) return;
  std::uniform_int_distribution<uint32_t> pick(1, static_cast<uint32_t>(hosts_.size()));
  const uint32_t client = pick(rng_);
  uint32_t server = pick(rng_);
  while (server == client) server = pick(rng_);
  Conn c;
  c.client = client;
  c.server = server;
  c.sport = next_sport_;
  next_sport_ = next_sport_ == 65535 ? 1024 : static_cast<uint16_t>(next_sport_ + 1);
  c.ev_connect = new_event(Kind::kConnect, hosts_[client - 1].sw);
  conns_.push_back(std::move(c));
  const uint32_t cid = static_cast<uint32_t>(conns_.size());
  pending_conns_.push_back(cid);
  Host& h = hosts_[client - 1];
  if (auto it = h.dns.find(server); it != h.dns.end() && it->second.second > now_s()) {
    conns_[cid - 1].vip = it->second.first;
    resolve_mac(cid);
    return;
  }
  send_dns(cid, 0);
}

void Bench::send_dns(uint32_t cid, int tries) {
  Conn& c = conns_[cid - 1];
  if (c.done || c.failed || (tries > 0 && c.vip != 0)) return;
  if (c.ev_dns == 0) c.ev_dns = new_event(Kind::kDns, hosts_[c.client - 1].sw);
  if (tries == 0) {
    c.dns_id = next_dns_id_++;
    dns_pending_[(uint64_t{c.client} << 16) | c.dns_id] = cid;
  }
  Host& h = hosts_[c.client - 1];
  host_arp(h, dns_ip_, [this, cid](uint64_t mac) {
    if (mac == 0) return;
    const Conn& cc = conns_[cid - 1];
    const Host& hh = hosts_[cc.client - 1];
    pkt::EthSpec eth{pkt::Mac{mac}, pkt::Mac{hh.mac}};
    pkt::Ipv4Spec ip;
    ip.src = pkt::Ipv4Addr{hh.ip};
    ip.dst = pkt::Ipv4Addr{dns_ip_};
    const Bytes q = dns_query(cc.dns_id, hosts_[cc.server - 1].name + "." + o_.zone);
    host_send(hh, pkt::build_udp(eth, ip, cc.sport, 53, q));
  });
  if (tries < 2) after(*ios_[0], 1.0, [this, cid, tries] { send_dns(cid, tries + 1); });
}

void Bench::resolve_mac(uint32_t cid) {
  Conn& c = conns_[cid - 1];
  Host& h = hosts_[c.client - 1];
  if (auto it = h.arp.find(c.vip); it == h.arp.end() || it->second.second <= now_s())
    c.ev_arp = new_event(Kind::kArp, h.sw);
  host_arp(h, c.vip, [this, cid](uint64_t mac) {
    if (mac == 0) return;
    Conn& cc = conns_[cid - 1];
    complete(cc.ev_arp, now_s());
    cc.vip_mac = mac;
    send_syn(cid);
  });
}

void Bench::send_syn(uint32_t cid) {
  Conn& c = conns_[cid - 1];
  if (c.done || c.failed) return;
  const Host& h = hosts_[c.client - 1];
  pkt::EthSpec eth{pkt::Mac{c.vip_mac}, pkt::Mac{h.mac}};
  pkt::Ipv4Spec ip;
  ip.src = pkt::Ipv4Addr{h.ip};
  ip.dst = pkt::Ipv4Addr{c.vip};
  pkt::TcpSpec tcp;
  tcp.src_port = c.sport;
  tcp.dst_port = o_.service_port;
  tcp.seq = cid;
  tcp.flags = pkt::tcpflag::kSyn;
  host_send(h, pkt::build_tcp(eth, ip, tcp));
  // Retransmit as a TCP stack would (1 s, then 2 s later) while unanswered.
  const int tries = ++c.syn_tries;
  if (tries < 3) after(*ios_[0], tries == 1 ? 1.0 : 2.0, [this, cid] { send_syn(cid); });
}

void Bench::fail_connection(uint32_t cid, const char* why) {
  Conn& c = conns_[cid - 1];
  if (c.done || c.failed) return;
  c.failed = true;
  ++fail_reasons_[why];
}

void Bench::warm_hosts(uint32_t target_of(const Bench&, uint32_t), double timeout_s) {
  // Each host ARPs once (for `target_of(host)`), a few hundred at a time: the controller
  // learns where every host is before anything is measured. A host whose three requests go
  // unanswered counts as done (unanswered), so a few lost requests cannot stall the rest.
  // The counts live on the heap: an answer may arrive after this returns.
  struct Warm {
    size_t inflight = 0, answered = 0, unanswered = 0;
  };
  auto w = std::make_shared<Warm>();
  size_t next = 0;
  const size_t n = hosts_.size();
  auto launch = [&] {
    while (w->inflight < 200 && next < n) {
      Host& h = hosts_[next++];
      ++w->inflight;
      host_arp(h, target_of(*this, h.id), [w](uint64_t mac) {
        --w->inflight;
        ++(mac != 0 ? w->answered : w->unanswered);
      });
    }
  };
  launch();
  run_until([&] {
    launch();
    return w->answered + w->unanswered == n;
  }, timeout_s);
  warm_answered_ = w->answered;
  warm_unanswered_ = w->unanswered;
  warm_unasked_ = n - next;
  if (!o_.quiet)
    fmt::print(stderr, "ofbench: {} of {} hosts warmed up ({} unanswered, {} not asked in {} s)\n", w->answered, n,
               w->unanswered, n - next, timeout_s);
}

void Bench::campus_setup() {
  connect_all();
  if (!wait_connected(o_.handshake_timeout_ms / 1e3)) throw std::runtime_error("switches did not connect: " + last_disconnect_);
  tick_every(0.5, [this] {
    for (auto& s : switches_) s->expire(emu::Clock::now());
  });
  const bool discovered = wait_discovery(30);
  extra_["discovery"] = {{"complete", discovered},
                         {"from_first_switch_ms", discovered ? (discovery_done_s_ - first_ready_s_) * 1e3 : -1}};
  if (!discovered && !o_.quiet) fmt::print(stderr, "ofbench: warning: not every link carried LLDP within 30 s\n");
  run_until([] { return false; }, 2.5);  // ports settle (topology's port_settle_ms) before hosts talk
}

void Bench::mode_path() {
  if (o_.topology != "campus") throw std::invalid_argument("--mode path needs --topology campus");
  campus_setup();
  warm_hosts([](const Bench& b, uint32_t id) { return b.hosts_[id % b.hosts_.size()].ip; }, 20);
  run_until([] { return false; }, o_.warmup_s);
  absl::flat_hash_set<uint64_t> used;
  std::uniform_int_distribution<uint32_t> pick(1, static_cast<uint32_t>(hosts_.size()));
  std::deque<uint32_t> inflight;
  bool sending = true;
  auto send_one = [&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      const uint32_t a = pick(rng_), b = pick(rng_);
      if (a == b || (o_.edges > 1 && hosts_[a - 1].sw == hosts_[b - 1].sw)) continue;
      if (!used.insert((uint64_t{a} << 32) | b).second) continue;
      const Host& s = hosts_[a - 1];
      const Host& d = hosts_[b - 1];
      const uint32_t ev = new_event(Kind::kPath, s.sw);
      path_dst_[ev] = b;
      pkt::EthSpec eth{pkt::Mac{d.mac}, pkt::Mac{s.mac}};
      pkt::Ipv4Spec ip;
      ip.src = pkt::Ipv4Addr{s.ip};
      ip.dst = pkt::Ipv4Addr{d.ip};
      uint8_t id[4] = {static_cast<uint8_t>(ev >> 24), static_cast<uint8_t>(ev >> 16), static_cast<uint8_t>(ev >> 8),
                       static_cast<uint8_t>(ev)};
      inflight.push_back(ev);
      host_send(s, pkt::build_udp(eth, ip, 40000, kPathPort, id));
      return;
    }
  };
  on_complete_ = [&](uint32_t ev) {
    if (events_[ev - 1].kind != Kind::kPath) return;
    if (auto it = std::find(inflight.begin(), inflight.end(), ev); it != inflight.end()) inflight.erase(it);
    if (sending) asio::post(*ios_[0], [&] { if (sending) send_one(); });
  };
  measure_begin_ = now_s();
  for (uint32_t i = 0; i < o_.pairs_window; ++i) send_one();
  tick_every(0.05, [&] {
    const double cutoff = now_s() - o_.timeout_ms / 1e3;
    while (!inflight.empty() && events_[inflight.front() - 1].t0 < cutoff) {
      path_dst_.erase(inflight.front());
      inflight.pop_front();
      if (sending) send_one();
    }
  });
  run_until([] { return false; }, o_.duration_s);
  measure_end_ = now_s();
  sending = false;
  run_until([&] { return inflight.empty(); }, o_.timeout_ms / 1e3);
  stop_ticks();
  on_complete_ = nullptr;
  main_kind_ = Kind::kPath;
}

void Bench::mode_cpam() {
  if (o_.topology != "campus") throw std::invalid_argument("--mode cpam needs --topology campus");
  campus_setup();
  warm_hosts([](const Bench& b, uint32_t) { return b.dns_ip_; }, 30);
  run_until([] { return false; }, o_.warmup_s);
  // Start in a quiet moment: the rules the controller installs as it locates hosts come as
  // one proactive burst, which must not pass for the first rotation.
  // (If the controller installs nothing proactive within 30 s, start anyway.)
  run_until([&] { return !windows_.empty() && now_s() - windows_.back().end > o_.rotation_gap_ms / 1e3; }, 30);
  // Poisson arrivals: exponential gaps of mean 1/lambda.
  std::exponential_distribution<double> gap(std::max(o_.lambda, 1e-3));
  bool arriving = true;
  auto timer = std::make_shared<asio::steady_timer>(*ios_[0]);
  auto next = std::make_shared<std::function<void()>>();
  *next = [&, timer, w = std::weak_ptr<std::function<void()>>(next)] {
    timer->expires_after(std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(gap(rng_))));
    timer->async_wait([&, w](const asio::error_code& ec) {
      if (ec || !arriving) return;
      start_connection();
      if (auto f = w.lock()) (*f)();
    });
  };
  tick_every(0.1, [&] {
    const double cutoff = now_s() - o_.connect_timeout_ms / 1e3;
    while (!pending_conns_.empty()) {
      const uint32_t cid = pending_conns_.front();
      Conn& c = conns_[cid - 1];
      if (c.done || c.failed) {
        pending_conns_.pop_front();
        continue;
      }
      if (events_[c.ev_connect - 1].t0 >= cutoff) break;
      fail_connection(cid, c.vip == 0 ? "timeout_dns" : c.vip_mac == 0 ? "timeout_arp" : c.ev_rppt == 0 ? "timeout_syn_no_packet_in" : "timeout_syn");
      pending_conns_.pop_front();
    }
  });
  measure_begin_ = now_s();
  (*next)();
  run_until([] { return false; }, o_.duration_s);
  measure_end_ = now_s();
  arriving = false;
  timer->cancel();
  run_until([&] { return pending_conns_.empty(); }, o_.connect_timeout_ms / 1e3 + 0.5);
  stop_ticks();
  main_kind_ = Kind::kRppt;
}

}  // namespace sdn::ofbench
