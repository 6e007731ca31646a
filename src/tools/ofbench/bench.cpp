// Bench: topology, the event loop, and the cbench-style modes (latency, throughput,
// loss-free rate, control sessions capacity, forwarding table capacity). The host-driven
// modes (path, cpam) are in hosts.cpp, the JSON in results.cpp.
#include "tools/ofbench/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "pkt/build.hpp"
#include "pkt/parse.hpp"

namespace sdn::ofbench {

namespace {
void run_sleep(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }
}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kPacketIn: return "packet_in";
    case Kind::kLearn: return "learn";
    case Kind::kFlood: return "flood";
    case Kind::kPath: return "path";
    case Kind::kDns: return "dns";
    case Kind::kArp: return "arp";
    case Kind::kRppt: return "rppt";
    case Kind::kConnect: return "connect";
  }
  return "?";
}

std::optional<asio::ip::tcp::endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  asio::error_code ec;
  auto addr = asio::ip::make_address_v4(text.substr(0, colon), ec);
  if (ec) {
    asio::io_context io;
    asio::ip::tcp::resolver r(io);
    auto res = r.resolve(asio::ip::tcp::v4(), text.substr(0, colon), text.substr(colon + 1), ec);
    if (ec || res.empty()) return std::nullopt;
    return res.begin()->endpoint();
  }
  char* end = nullptr;
  const long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535) return std::nullopt;
  return asio::ip::tcp::endpoint(addr, static_cast<uint16_t>(port));
}

Bench::Bench(Options o) : o_(std::move(o)) {
  rng_.seed(o_.seed != 0 ? o_.seed : std::random_device{}());
  ios_.push_back(std::make_unique<asio::io_context>());
  auto ip = asio::ip::make_address_v4(o_.dns_ip);
  dns_ip_ = ip.to_uint();
  build_topology();
  if (!o_.tls_cert.empty()) {
    tls_.emplace(asio::ssl::context::tls_client);
    tls_->use_certificate_chain_file(o_.tls_cert);  // throws: main prints the reason
    tls_->use_private_key_file(o_.tls_key, asio::ssl::context::pem);
    if (!o_.tls_ca.empty()) {
      tls_->load_verify_file(o_.tls_ca);
      tls_->set_verify_mode(asio::ssl::verify_peer);
    }
  }
}

Bench::~Bench() {
  for (auto& s : switches_) s->close();
  for (auto& io : ios_) io->run_for(std::chrono::milliseconds(50));
}

// ---- topology ----------------------------------------------------------------------------

void Bench::build_topology() {
  auto add_switch = [&] {
    const auto i = static_cast<uint32_t>(ports_.size());
    ports_.emplace_back();
    peers_.emplace_back();
    seq_.push_back(0);
    outstanding_.emplace_back();
    return i;
  };
  auto add_port = [&](uint32_t sw, Peer p) {
    const auto port = static_cast<uint32_t>(ports_[sw].size() + 1);
    ports_[sw].push_back(port);
    peers_[sw][port] = p;
    return port;
  };
  if (o_.topology == "independent") {
    for (uint32_t i = 0; i < o_.switches; ++i) {
      const uint32_t sw = add_switch();
      for (uint32_t h = 0; h < o_.macs_per_switch; ++h) add_port(sw, Peer{});
    }
  } else if (o_.topology == "campus") {
    if (o_.cores == 0 || o_.aggs == 0 || o_.edges == 0) throw std::invalid_argument("campus needs cores, aggs, edges >= 1");
    if (o_.dual_homed && o_.aggs < 2) throw std::invalid_argument("--dual-homed needs --aggs >= 2");
    o_.switches = o_.cores + o_.aggs + o_.edges;
    for (uint32_t i = 0; i < o_.switches; ++i) add_switch();
    const uint32_t base_ip = asio::ip::make_address_v4(o_.host_base).to_uint();
    // Hosts first (ports 1..k on each edge), contiguous blocks, as scripts/testbed.sh does.
    uint32_t n = 0;
    for (uint32_t e = 0; e < o_.edges; ++e) {
      const uint32_t sw = o_.cores + o_.aggs + e;
      edge_of_.push_back(sw);
      const uint32_t cnt = o_.hosts / o_.edges + (e < o_.hosts % o_.edges ? 1 : 0);
      for (uint32_t j = 0; j < cnt; ++j) {
        Host h;
        h.id = ++n;
        h.name = "h" + std::to_string(h.id);
        h.ip = base_ip + (((h.id - 1) / 250) << 8) + (h.id - 1) % 250 + 1;
        h.mac = 0x000000000000ULL | h.id;  // 00:00:00:HH:MM:LL, as the testbed's hosts
        h.sw = sw;
        h.port = add_port(sw, Peer{0, 0, h.id});
        hosts_.push_back(std::move(h));
      }
    }
    auto link = [&](uint32_t a, uint32_t b) {
      const uint32_t pa = static_cast<uint32_t>(ports_[a].size() + 1);
      const uint32_t pb = static_cast<uint32_t>(ports_[b].size() + 1);
      add_port(a, Peer{b, pb, 0});
      add_port(b, Peer{a, pa, 0});
      links_.push_back({a, pa});
      links_.push_back({b, pb});
    };
    for (uint32_t c = 0; c < o_.cores; ++c)
      for (uint32_t a = 0; a < o_.aggs; ++a) link(c, o_.cores + a);
    for (uint32_t e = 0; e < o_.edges; ++e) {
      link(o_.cores + e % o_.aggs, o_.cores + o_.aggs + e);
      if (o_.dual_homed) link(o_.cores + (e + 1) % o_.aggs, o_.cores + o_.aggs + e);
    }
  } else {
    throw std::invalid_argument("unknown topology '" + o_.topology + "' (independent | campus)");
  }
  for (uint32_t i = 0; i < ports_.size(); ++i)
    switches_.push_back(std::make_unique<EmuSwitch>(*this, *ios_[0], i, uint64_t{i} + 1));
}

void Bench::write_hosts_file() const {
  std::ofstream out(o_.hosts_file);
  if (!out) throw std::runtime_error("cannot write " + o_.hosts_file);
  for (const auto& h : hosts_) out << h.name << ' ' << asio::ip::address_v4(h.ip).to_string() << '\n';
}

bool Bench::is_link_port(uint32_t sw, uint32_t port) const {
  auto it = peers_[sw].find(port);
  return it != peers_[sw].end() && it->second.host == 0 && o_.topology == "campus";
}

void Bench::transmit(uint32_t sw, uint32_t port, const Bytes& frame, int depth) {
  auto it = peers_[sw].find(port);
  if (it == peers_[sw].end() || depth > 64) return;
  const Peer p = it->second;
  if (p.host != 0) {
    asio::post(*ios_[0], [this, h = p.host, f = frame] { host_rx(h, f); });
    return;
  }
  if (o_.topology != "campus") return;  // independent switches: nothing behind a port
  if (frame.size() >= 14 && frame[12] == 0x88 && frame[13] == 0xcc) {
    const uint64_t key = (uint64_t{sw} << 32) | port;
    if (!lldp_seen_.contains(key)) lldp_seen_[key] = now_s();
  }
  asio::post(*ios_[0], [this, p, f = frame, depth] {
    (void)depth;
    switches_[p.sw]->ingress(p.port, f);
  });
}

// ---- event loop ---------------------------------------------------------------------------

bool Bench::run_until(const std::function<bool()>& done, double timeout_s) {
  auto guard = asio::make_work_guard(*ios_[0]);
  const double deadline = now_s() + timeout_s;
  while (!done()) {
    if (now_s() >= deadline) return false;
    ios_[0]->run_for(std::chrono::milliseconds(5));
  }
  return true;
}

void Bench::tick_every(double s, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(*ios_[0]);
  auto period = std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
  auto step = std::make_shared<std::function<void()>>();
  *step = [timer, period, fn = std::move(fn), w = std::weak_ptr<std::function<void()>>(step)] {
    timer->expires_after(period);
    timer->async_wait([fn, w](const asio::error_code& ec) {
      if (ec) return;  // cancelled by stop_ticks()
      auto self = w.lock();
      if (!self) return;
      fn();
      (*self)();
    });
  };
  ticks_.push_back({timer, step});
  (*step)();
}

void Bench::stop_ticks() {
  // Cancel every timer, then let the aborted handlers run: none may call into a mode's
  // locals after the mode has returned.
  for (auto& t : ticks_) t.timer->cancel();
  ticks_.clear();
  run_until([] { return false; }, 0.01);
}

uint32_t Bench::new_event(Kind k, uint32_t sw) {
  events_.push_back(Event{now_s(), -1, k, sw});
  return static_cast<uint32_t>(events_.size());  // ids are 1-based: 0 = none
}

void Bench::complete(uint32_t event, double t) {
  if (event == 0 || event > events_.size()) return;
  Event& e = events_[event - 1];
  if (e.t1 >= 0) return;  // answered twice (FlowMod + PacketOut): the first counts
  e.t1 = t;
  if (on_complete_) on_complete_(event);
}

void Bench::on_response(uint32_t event, double t) { complete(event, t); }

void Bench::on_ready(EmuSwitch& /*sw*/) {
  ++ready_count_;
  if (first_ready_s_ < 0) first_ready_s_ = now_s();
  if (ready_count_ == switches_.size()) all_ready_s_ = now_s();
}

void Bench::on_disconnect(EmuSwitch& sw, const std::string& why) {
  ++disconnects_;
  last_disconnect_ = fmt::format("s{}: {}", sw.index() + 1, why);
  if (!o_.quiet && disconnects_ <= 5) fmt::print(stderr, "ofbench: {}\n", last_disconnect_);
}

void Bench::on_unsolicited_flow_mod(uint16_t priority, double t) {
  ++unsolicited_by_priority_[priority];
  if (!windows_.empty() && t - windows_.back().end <= o_.rotation_gap_ms / 1e3) {
    windows_.back().end = t;
    ++windows_.back().flow_mods;
  } else {
    windows_.push_back(Window{t, t, 1});
  }
}

void Bench::connect_all() {
  const auto eps = endpoints();
  for (auto& s : switches_) s->connect(eps);
}

bool Bench::wait_connected(double timeout_s) {
  return run_until([&] { return ready_count_ == switches_.size() || disconnects_ > 0; }, timeout_s) &&
         ready_count_ == switches_.size();
}

bool Bench::wait_discovery(double timeout_s) {
  const bool ok = run_until([&] { return lldp_seen_.size() >= links_.size(); }, timeout_s);
  if (ok) {
    double last = 0;
    for (const auto& [k, t] : lldp_seen_) last = std::max(last, t);
    discovery_done_s_ = last;
  }
  return ok;
}

// ---- cbench modes -----------------------------------------------------------------------

// The k-th frame of switch `sw`: UDP from host src to host dst (both behind this switch),
// a new (src, dst) pair each time until the pairs run out, then again. With fresh_ip, the
// addresses change too (every frame a new flow for a controller matching on IPv4).
Bytes Bench::cbench_frame(uint32_t sw, uint64_t k, bool fresh_ip) {
  const uint32_t m = std::max<uint32_t>(o_.macs_per_switch, 2);
  const uint32_t src = static_cast<uint32_t>(k % m);
  const uint32_t dst = (src + 1 + static_cast<uint32_t>((k / m) % (m - 1))) % m;
  const uint64_t base = o_.unique_macs ? (uint64_t{sw} + 1) << 24 : 0;
  pkt::EthSpec eth;
  eth.src = pkt::Mac{base | (src + 1)};
  eth.dst = pkt::Mac{base | (dst + 1)};
  pkt::Ipv4Spec ip;
  const uint32_t salt = fresh_ip ? static_cast<uint32_t>(k / m) : 0;
  ip.src = pkt::Ipv4Addr{(10u << 24) | ((sw & 0xff) << 16) | ((src + 1 + salt * 977) & 0xffff)};
  ip.dst = pkt::Ipv4Addr{(11u << 24) | ((sw & 0xff) << 16) | ((dst + 1 + salt * 131) & 0xffff)};
  uint8_t payload[8];
  for (int i = 0; i < 8; ++i) payload[i] = static_cast<uint8_t>(k >> (8 * (7 - i)));  // unique bytes
  return pkt::build_udp(eth, ip, static_cast<uint16_t>(1024 + k % 60000), 9, payload);
}

void Bench::cbench_send(uint32_t sw, Kind kind, bool fresh_ip, uint32_t in_port) {
  EmuSwitch& s = *switches_[sw];
  if (!s.connected()) return;
  if (o_.malformed > 0 && std::uniform_real_distribution<>(0, 1)(rng_) < o_.malformed)
    s.send_malformed(static_cast<uint32_t>(malformed_counter()));
  const uint64_t k = seq_[sw]++;
  const Bytes frame = cbench_frame(sw, k, fresh_ip);
  const uint32_t m = std::max<uint32_t>(o_.macs_per_switch, 2);
  const uint32_t ev = new_event(kind, sw);
  if (kind == Kind::kPacketIn) outstanding_[sw].push_back(ev);
  s.packet_in(in_port ? in_port : static_cast<uint32_t>(k % m) + 1, frame, ev);
}

void Bench::learn_phase() {
  // Every host says who it is once (a broadcast ARP request), so a learning controller
  // knows each MAC's port before the measured unicast frames (cbench's warm-up loop).
  const uint32_t m = o_.macs_per_switch;
  uint32_t sent = 0, first = static_cast<uint32_t>(events_.size());
  for (uint32_t sw = 0; sw < switches_.size(); ++sw) {
    if (!switches_[sw]->connected()) continue;
    const uint64_t base = o_.unique_macs ? (uint64_t{sw} + 1) << 24 : 0;
    for (uint32_t h = 0; h < m; ++h) {
      const pkt::Mac mac{base | (h + 1)};
      const Bytes f = pkt::arp_request(mac, pkt::Ipv4Addr{(10u << 24) | ((sw & 0xff) << 16) | (h + 1)},
                                       pkt::Ipv4Addr{(10u << 24) | ((sw & 0xff) << 16) | 0xfffe});
      switches_[sw]->packet_in(h + 1, f, new_event(Kind::kLearn, sw));
      ++sent;
      if (sent % 500 == 0) run_until([] { return false; }, 0.005);  // let the controller read
    }
  }
  run_until(
      [&] {
        for (size_t i = first; i < events_.size(); ++i)
          if (events_[i].t1 < 0) return false;
        return true;
      },
      3.0);
}

// Keeps `per_switch` PacketIns in flight on each switch from `first_sw` on: an answer or a
// timeout (a lost request) sends the next one while `sending`. Installs on_complete_ and a
// tick; the caller clears both (stop_ticks, on_complete_ = nullptr) before `sending` dies.
void Bench::keep_windows_full(uint32_t first_sw, uint32_t per_switch, bool fresh_ip, const bool& sending) {
  on_complete_ = [this, fresh_ip, &sending](uint32_t ev) {
    const Event& e = events_[ev - 1];
    if (e.kind != Kind::kPacketIn) return;
    const uint32_t sw = e.sw;
    auto& q = outstanding_[sw];
    if (auto it = std::find(q.begin(), q.end(), ev); it != q.end()) q.erase(it);
    if (sending) cbench_send(sw, Kind::kPacketIn, fresh_ip);
  };
  for (uint32_t sw = first_sw; sw < switches_.size(); ++sw)
    for (uint32_t i = 0; i < per_switch; ++i) cbench_send(sw, Kind::kPacketIn, fresh_ip);
  tick_every(0.05, [this, first_sw, fresh_ip, &sending] {
    const double cutoff = now_s() - o_.timeout_ms / 1e3;
    for (uint32_t sw = first_sw; sw < switches_.size(); ++sw) {
      auto& q = outstanding_[sw];
      while (!q.empty() && events_[q.front() - 1].t0 < cutoff) {
        q.pop_front();
        if (sending) cbench_send(sw, Kind::kPacketIn, fresh_ip);
      }
    }
  });
}

void Bench::mode_cbench(bool throughput) {
  connect_all();
  if (!wait_connected(o_.handshake_timeout_ms / 1e3)) throw std::runtime_error("switches did not connect: " + last_disconnect_);
  learn_phase();
  const uint32_t per_switch = throughput ? std::max<uint32_t>(o_.window, 1) : 1;
  const bool dos = o_.dos_rate > 0;
  const uint32_t first_driver = dos ? 1 : 0;
  bool sending = true;
  keep_windows_full(first_driver, per_switch, false, sending);
  uint64_t flood_made = 0;
  const double flood_t0 = now_s();
  if (dos) {
    // Switch 1 floods: fresh flows at dos_rate (by elapsed time, so timer drift does not lower
    // it), from one port with --dos-port, as long as its socket keeps up: what the socket does
    // not take is not sent (the report's flood_sent is what was).
    tick_every(0.002, [&] {
      EmuSwitch& s = *switches_[0];
      const auto due = static_cast<uint64_t>(o_.dos_rate * (now_s() - flood_t0));
      for (; flood_made < due; ++flood_made)
        if (s.backlog() < (4u << 20)) cbench_send(0, Kind::kFlood, true, o_.dos_port);
    });
  }
  run_until([] { return false; }, o_.warmup_s);
  measure_begin_ = now_s();
  measuring_ = true;
  run_until([] { return false; }, o_.duration_s);
  measure_end_ = now_s();
  measuring_ = false;
  sending = false;
  run_until([&] {
    for (uint32_t sw = first_driver; sw < switches_.size(); ++sw)
      if (!outstanding_[sw].empty()) return false;
    return true;
  }, o_.timeout_ms / 1e3);
  stop_ticks();
  on_complete_ = nullptr;
  main_kind_ = Kind::kPacketIn;
}

void Bench::mode_lossfree() {
  connect_all();
  if (!wait_connected(o_.handshake_timeout_ms / 1e3)) throw std::runtime_error("switches did not connect: " + last_disconnect_);
  learn_phase();
  nlohmann::json trials = nlohmann::json::array();
  bool generator_limited = false;
  auto trial = [&](double rate) {
    const size_t first = events_.size();
    uint64_t made = 0;
    uint32_t next_sw = 0;
    const double t0 = now_s();
    tick_every(0.001, [&] {  // by elapsed time: timer drift must not lower the offered rate
      const auto due = static_cast<uint64_t>(rate * (now_s() - t0));
      for (; made < due; ++made) {
        cbench_send(next_sw, Kind::kPacketIn);
        next_sw = (next_sw + 1) % static_cast<uint32_t>(switches_.size());
      }
    });
    run_until([] { return false; }, o_.trial_s);
    const double t1 = now_s();
    stop_ticks();
    run_until([&] {
      for (size_t i = first; i < events_.size(); ++i)
        if (events_[i].t1 < 0) return false;
      return true;
    }, o_.timeout_ms / 1e3);
    size_t sent = 0, answered = 0;
    for (size_t i = first; i < events_.size(); ++i) {
      if (events_[i].kind != Kind::kPacketIn) continue;
      ++sent;
      if (events_[i].t1 >= 0 && events_[i].t1 - events_[i].t0 <= o_.timeout_ms / 1e3) ++answered;
    }
    for (auto& q : outstanding_) q.clear();
    trials.push_back({{"offered_per_s", rate}, {"sent", sent}, {"answered", answered},
                      {"achieved_per_s", static_cast<double>(sent) / (t1 - t0)}});
    if (!o_.quiet) fmt::print(stderr, "ofbench: lossfree trial {:.0f}/s: {} sent, {} answered\n", rate, sent, answered);
    // Passed: nothing lost AND the offered rate was really sent (else ofbench was the limit).
    const double achieved = static_cast<double>(sent) / (t1 - t0);
    if (achieved < 0.95 * rate) generator_limited = true;
    return sent > 0 && answered == sent && achieved >= 0.95 * rate;
  };
  double good = 0, bad = 0;
  for (double r = o_.rate_lo; r <= o_.rate_hi; r *= 2) {
    if (trial(r)) {
      good = r;
    } else {
      bad = r;
      break;
    }
  }
  for (int i = 0; i < 4 && bad > 0 && bad - good > good * 0.05; ++i) {
    const double mid = (good + bad) / 2;
    (trial(mid) ? good : bad) = mid;
  }
  extra_["trials"] = trials;
  extra_["generator_limited"] = generator_limited;  // some trial could not offer its rate
  extra_["rfc8456"]["async_message_processing_loss_free_rate_per_s"] = good;
  extra_["rfc8456"]["async_message_processing_first_lossy_rate_per_s"] = bad > 0 ? nlohmann::json(bad) : nlohmann::json();
  measure_begin_ = 0;
  measure_end_ = now_s();
  main_kind_ = Kind::kPacketIn;
}

void Bench::mode_sessions() {
  // Control sessions capacity (RFC 8456 5.2.1): connect switches in steps; a step counts
  // when every session so far has finished its handshake and answers an echo.
  auto ep = parse_endpoint(o_.controller);
  if (!ep) throw std::invalid_argument("bad --controller '" + o_.controller + "'");
  uint32_t good = 0;
  nlohmann::json steps = nlohmann::json::array();
  std::string why;
  for (uint32_t n = std::min(o_.session_step, o_.switches); n <= o_.switches;) {
    const double t0 = now_s();
    for (uint32_t i = good; i < n; ++i) switches_[i]->connect(*ep);
    const bool hs = run_until([&] { return ready_count_ >= n; }, o_.handshake_timeout_ms / 1e3);
    const double hs_ms = (now_s() - t0) * 1e3;
    uint32_t alive = 0;
    if (hs) {
      for (uint32_t i = 0; i < n; ++i) switches_[i]->echo_request();
      const uint64_t before = [&] {
        uint64_t s = 0;
        for (uint32_t i = 0; i < n; ++i) s += switches_[i]->counters().echo_replies;
        return s;
      }();
      (void)before;
      run_until([&] {
        uint32_t a = 0;
        for (uint32_t i = 0; i < n; ++i) a += switches_[i]->connected() && switches_[i]->last_echo_rtt_ms() >= 0 ? 1 : 0;
        return a == n;
      }, o_.handshake_timeout_ms / 1e3);
      for (uint32_t i = 0; i < n; ++i) alive += switches_[i]->connected() && switches_[i]->last_echo_rtt_ms() >= 0 ? 1 : 0;
    }
    steps.push_back({{"sessions", n}, {"handshaken", ready_count_}, {"alive", alive}, {"handshake_ms", hs_ms}});
    if (!o_.quiet) fmt::print(stderr, "ofbench: sessions {}: {} handshaken, {} answer echo ({:.0f} ms)\n", n, ready_count_, alive, hs_ms);
    if (!hs || alive < n) {
      why = !hs ? "handshake timeout" : "echo unanswered";
      break;
    }
    good = n;
    if (n == o_.switches) break;
    n = std::min(o_.switches, n + o_.session_step);
  }
  extra_["steps"] = steps;
  extra_["rfc8456"]["control_sessions_capacity"] = good;
  extra_["capacity_limited_by"] = good == o_.switches ? "switches offered (--switches)" : why;
  measure_begin_ = 0;
  measure_end_ = now_s();
  main_kind_ = Kind::kPacketIn;
}

void Bench::mode_table() {
  // Forwarding table capacity (RFC 8456 5.2.3): new flows until the tables stop growing.
  connect_all();
  if (!wait_connected(o_.handshake_timeout_ms / 1e3)) throw std::runtime_error("switches did not connect: " + last_disconnect_);
  learn_phase();
  const uint32_t per_switch = std::max<uint32_t>(o_.window, 1);
  bool sending = true;
  keep_windows_full(0, per_switch, true, sending);
  measure_begin_ = now_s();
  uint64_t best = 0;
  double best_at = now_s();
  std::string why = "time limit (--duration)";
  nlohmann::json growth = nlohmann::json::array();
  run_until([&] {
    uint64_t total = 0, rejected = 0;
    for (auto& s : switches_) {
      total += s->table().size();
      rejected += s->counters().flow_mods_rejected;
    }
    if (total > best) {
      best = total;
      best_at = now_s();
    }
    if (growth.empty() || now_s() - growth.back()["t_s"].get<double>() - measure_begin_ >= 1.0)
      growth.push_back({{"t_s", now_s() - measure_begin_}, {"flows", total}});
    if (total >= o_.max_flows) {
      why = "flow limit (--max-flows)";
      return true;
    }
    if (rejected > 0) {
      why = "switch table full";
      return true;
    }
    if (now_s() - best_at >= o_.plateau_s) {
      why = "tables stopped growing";
      return true;
    }
    return false;
  }, o_.duration_s);
  measure_end_ = now_s();
  sending = false;
  stop_ticks();
  on_complete_ = nullptr;
  extra_["rfc8456"]["forwarding_table_capacity"] = best;
  extra_["capacity_limited_by"] = why;
  extra_["growth"] = growth;
  main_kind_ = Kind::kPacketIn;
}

void Bench::mode_discovery() {
  // Network topology discovery time (RFC 8456 5.1.4): first switch up -> every link has
  // carried the controller's LLDP probe in both directions.
  connect_all();
  const bool up = run_until([&] { return ready_count_ == switches_.size(); }, o_.handshake_timeout_ms / 1e3);
  const bool ok = up && wait_discovery(o_.duration_s);
  nlohmann::json d;
  d["links"] = links_.size() / 2;
  d["directed_links_seen"] = lldp_seen_.size();
  d["complete"] = ok;
  if (ok) {
    d["from_first_switch_ms"] = (discovery_done_s_ - first_ready_s_) * 1e3;
    d["from_last_switch_ms"] = (discovery_done_s_ - all_ready_s_) * 1e3;
  }
  extra_["discovery"] = d;
  extra_["rfc8456"]["network_topology_discovery_time_ms"] = ok ? d["from_first_switch_ms"] : nlohmann::json();
  measure_begin_ = 0;
  measure_end_ = now_s();
  main_kind_ = Kind::kPacketIn;
}

// sdnator's --stats-file (rewritten every second: retry a torn read): its histograms, and
// the CPAM RPPT ones under the names the report uses. Not black-box: only for sdnator.
nlohmann::json read_controller_stats(const std::string& path) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::ifstream in(path);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("metrics")) {
      run_sleep(0.1);
      continue;
    }
    nlohmann::json out;
    const auto& h = j["metrics"].value("histograms", nlohmann::json::object());
    out["histograms"] = h;
    auto conv = [&](const char* name) -> nlohmann::json {
      if (!h.contains(name)) return nullptr;
      nlohmann::json s;
      s["count"] = h[name].value("count", 0);
      for (const char* k : {"min", "mean", "p50", "p90", "p99", "p999", "max"}) {
        const std::string key = std::string(k) + "_us";
        s[k] = h[name].contains(key) ? h[name][key] : nlohmann::json();
      }
      return s;
    };
    out["rppt_us"] = {{"all", conv("cpam.rppt")}, {"rotating", conv("cpam.rppt_rotating")}, {"quiet", conv("cpam.rppt_quiet")}};
    out["path_setup_us"] = conv("forwarding.path_setup");
    if (j.contains("apps") && j["apps"].contains("cpam")) out["cpam"] = j["apps"]["cpam"];
    return out;
  }
  return nlohmann::json{{"error", "cannot read " + path}};
}

nlohmann::json Bench::run() {
  if (!o_.hosts_file.empty()) {
    write_hosts_file();
    return nlohmann::json{{"hosts_file", o_.hosts_file}, {"hosts", hosts_.size()}};
  }
  std::unique_ptr<ResourceSampler> sampler;
  if (o_.pid > 0) {
    sampler = std::make_unique<ResourceSampler>(o_.pid, std::chrono::milliseconds(500));
    sampler->start();
  }
  const double started_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (o_.mode == "latency") {
    mode_cbench(false);
  } else if (o_.mode == "throughput") {
    mode_cbench(true);
  } else if (o_.mode == "lossfree") {
    mode_lossfree();
  } else if (o_.mode == "sessions") {
    mode_sessions();
  } else if (o_.mode == "table") {
    mode_table();
  } else if (o_.mode == "discovery") {
    mode_discovery();
  } else if (o_.mode == "path") {
    mode_path();
  } else if (o_.mode == "cpam") {
    mode_cpam();
  } else if (o_.mode == "failover") {
    mode_failover();
  } else {
    throw std::invalid_argument("unknown --mode '" + o_.mode + "'");
  }
  nlohmann::json j = result_json(measure_begin_, measure_end_);
  j["started_unix"] = started_unix;
  if (!o_.controller_stats.empty()) j["controller_stats"] = read_controller_stats(o_.controller_stats);
  if (sampler) {
    sampler->stop();
    j["resources"] = sampler->to_json();
  } else {
    j["resources"] = nullptr;
  }
  return j;
}

}  // namespace sdn::ofbench
