// EmuSwitch: one emulated OpenFlow 1.3 switch. It answers the controller as Open vSwitch
// would (handshake, echo, barrier, role, multipart), applies FlowMods to an emulated flow
// table (emu/), runs PacketOuts and buffered packets through it, and raises PacketIns on
// table misses and for frames the bench makes up. Frames leaving a port go to the Bench.
#include <netinet/tcp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pkt/bytes.hpp"
#include "tools/ofbench/bench.hpp"

namespace sdn::ofbench {

namespace {

constexpr uint32_t kBuffers = 65536;       // n_buffers advertised; the oldest is dropped past it
constexpr size_t kByDataCap = 262144;      // frame-hash correlations kept (no_buffer)
constexpr size_t kFlowStatsPerReply = 200; // flow stats per multipart reply (stays under 64 KiB)
constexpr size_t kPortsPerReply = 500;     // 64-byte ofp_port / 112-byte port stats: under 64 KiB
constexpr uint32_t kCapabilities = 0x1 | 0x2 | 0x4 | 0x8;  // FLOW/TABLE/PORT/GROUP_STATS (7.3.1)
constexpr uint16_t kBrcBufferUnknown = 8;  // OFPBRC_BUFFER_UNKNOWN (7.4.4)

uint64_t frame_hash(std::span<const uint8_t> b) {  // FNV-1a: correlation, not security
  uint64_t h = 1469598103934665603ULL;
  for (uint8_t x : b) h = (h ^ x) * 1099511628211ULL;
  return h;
}

}  // namespace

EmuSwitch::EmuSwitch(Bench& bench, asio::io_context& io, uint32_t index, uint64_t dpid)
    : bench_(bench), io_(io), index_(index), dpid_(dpid), table_(bench.options().max_flows_per_switch) {}

EmuSwitch::~EmuSwitch() { close(); }

void EmuSwitch::connect(const std::vector<asio::ip::tcp::endpoint>& eps) {
  closing_ = false;
  for (size_t i = ch_.size(); i < eps.size(); ++i) {
    ch_.push_back(std::make_unique<Channel>(io_, i));
    ch_.back()->in.resize(256 * 1024);
  }
  roles_ = SwitchRoles(ch_.size());
  for (size_t i = 0; i < eps.size(); ++i) {
    ch_[i]->ep = eps[i];
    connect(*ch_[i]);
  }
}

void EmuSwitch::connect(Channel& c) {
  const uint64_t gen = ++c.gen;
  c.sock.async_connect(c.ep, [this, &c, gen](const asio::error_code& ec) {
    if (gen != c.gen) return;
    if (ec) {
      lost(c, "connect: " + ec.message());
      return;
    }
    asio::error_code ignore;
    c.sock.set_option(asio::ip::tcp::no_delay(true), ignore);
    if (asio::ssl::context* ctx = bench_.tls()) {
      c.tls = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(c.sock, *ctx);
      c.tls->async_handshake(asio::ssl::stream_base::client, [this, &c, gen](const asio::error_code& hec) {
        if (gen != c.gen) return;
        if (hec) {
          lost(c, "TLS handshake: " + hec.message());
          return;
        }
        c.connected = c.ever_up = true;
        send(c, next_xid_++, ofp::Hello{});
        read_more(c);
      });
      return;
    }
    c.connected = c.ever_up = true;
    send(c, next_xid_++, ofp::Hello{});
    read_more(c);
  });
}

bool EmuSwitch::connected() const {
  for (const auto& c : ch_)
    if (c->connected) return true;
  return false;
}
bool EmuSwitch::connected(size_t ch) const { return ch < ch_.size() && ch_[ch]->connected; }
bool EmuSwitch::ready(size_t ch) const { return ch < ch_.size() && ch_[ch]->connected && ch_[ch]->handshaken; }

double EmuSwitch::last_echo_rtt_ms() const { return ch_.empty() ? -1 : ch_[0]->echo_rtt_ms; }

// A channel is gone (peer closed, error, framing): like Open vSwitch, keep the flow table and try
// again after a second, when the bench allows it. Its role is forgotten (a new connection starts
// EQUAL); the buffers go when no controller is left.
void EmuSwitch::lost(Channel& c, const std::string& why) {
  if (closing_) return;
  ++c.gen;  // handlers of the old socket see a new generation and stop
  const bool was_up = c.connected;
  const CtlRole role = roles_.role(c.index);
  c.connected = false;
  c.handshaken = false;
  asio::error_code ignore;
  c.sock.close(ignore);
  c.in_len = 0;
  c.out.clear();
  c.write_pending = false;
  roles_.reset(c.index);
  if (!connected()) {
    buffers_.clear();
    buffer_order_.clear();
    by_data_.clear();
  }
  bench_.on_disconnect(*this, why);
  if (was_up) bench_.on_channel_lost(*this, c.index, role);
  if (!bench_.reconnect() || !c.ever_up) return;  // never came up: no retry
  ++c_.reconnects;
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(1));
  t->async_wait([this, &c, t, gen = c.gen](const asio::error_code& ec) {
    if (!ec && gen == c.gen && !closing_) {
      c.sock = asio::ip::tcp::socket(io_);
      connect(c);
    }
  });
}

void EmuSwitch::close() {
  closing_ = true;
  for (auto& c : ch_) {
    ++c->gen;
    asio::error_code ignore;
    if (c->sock.is_open()) c->sock.close(ignore);
    c->connected = false;
  }
}

void EmuSwitch::send(Channel& c, uint32_t xid, ofp::Body body) {
  const size_t before = c.out.size();
  if (!ofp::encode(xid, std::move(body), c.out)) return;
  c_.bytes_out += c.out.size() - before;
  flush(c);
}

void EmuSwitch::send_async(const ofp::Body& body) {
  for (auto& c : ch_)
    if (c->connected && roles_.gets_async(c->index)) send(*c, 0, body);
}

void EmuSwitch::send_bytes(Channel& c, const Bytes& b) {
  c.out.insert(c.out.end(), b.begin(), b.end());
  c_.bytes_out += b.size();
  flush(c);
}

size_t EmuSwitch::backlog() const {
  size_t n = 0;
  for (const auto& c : ch_) n += c->out.size() + c->writing.size();
  return n;
}

void EmuSwitch::flush(Channel& c) {
  if (c.write_pending || c.out.empty() || !c.connected) return;
  c.writing.swap(c.out);
  c.out.clear();
  c.write_pending = true;
  auto done = [this, &c, gen = c.gen](const asio::error_code& ec, size_t) {
    if (gen != c.gen) return;  // the socket it wrote to is gone
    c.write_pending = false;
    c.writing.clear();
    if (ec) {
      lost(c, "write: " + ec.message());
      return;
    }
    flush(c);
  };
  if (c.tls) asio::async_write(*c.tls, asio::buffer(c.writing), std::move(done));
  else asio::async_write(c.sock, asio::buffer(c.writing), std::move(done));
}

void EmuSwitch::read_more(Channel& c) {
  if (c.in_len == c.in.size()) c.in.resize(c.in.size() * 2);
  auto done = [this, &c, gen = c.gen](const asio::error_code& ec, size_t n) {
    if (gen != c.gen) return;
    if (ec) {
      lost(c, "read: " + ec.message());
      return;
    }
    on_bytes(c, n);
    if (c.connected) read_more(c);
  };
  const auto buf = asio::buffer(c.in.data() + c.in_len, c.in.size() - c.in_len);
  if (c.tls) c.tls->async_read_some(buf, std::move(done));
  else c.sock.async_read_some(buf, std::move(done));
}

void EmuSwitch::on_bytes(Channel& c, size_t n) {
  c.in_len += n;
  c_.bytes_in += n;
  size_t off = 0;
  const uint64_t gen = c.gen;
  while (c.in_len - off >= ofp::kHeaderLen) {
    std::span<const uint8_t> rest(c.in.data() + off, c.in_len - off);
    auto h = ofp::decode_header(rest);
    if (!h) {  // framing error: nothing after it can be trusted (STYLE.md: close)
      ++c_.decode_errors;
      lost(c, "framing error from the controller");
      return;
    }
    if (rest.size() < h->length) break;
    auto raw = rest.first(h->length);
    auto m = ofp::decode(raw);
    if (!m) {
      ++c_.decode_errors;
      send_error(c, m.error().ofp_type, m.error().ofp_code, raw);
    } else {
      handle(c, *m, raw);
    }
    off += h->length;
    if (!c.connected || gen != c.gen) return;
  }
  classify_proactive();
  if (off > 0) {
    std::memmove(c.in.data(), c.in.data() + off, c.in_len - off);
    c.in_len -= off;
  }
}

// After a read: proactive candidates that came in the same read as a session rule (one with
// L4 ports) belong to that session's set-up (CPAM sends both ends' VIP rules with a session's
// first rules), not to a rotation. The others are the controller's own changes.
void EmuSwitch::classify_proactive() {
  if (read_session_dsts_.empty())
    for (const auto& c : pending_proactive_) bench_.on_unsolicited_flow_mod(c.priority, c.t);
  pending_proactive_.clear();
  read_session_dsts_.clear();
}

void EmuSwitch::send_error(Channel& c, uint16_t type, uint16_t code, std::span<const uint8_t> offending) {
  ofp::ErrorMsg e;
  e.type = type;
  e.code = code;
  const size_t n = std::min<size_t>(offending.size(), 64);
  e.data.assign(offending.begin(), offending.begin() + static_cast<std::ptrdiff_t>(n));
  uint32_t xid = 0;
  if (offending.size() >= 8) xid = pkt::load_be32(offending, 4);
  send(c, xid, std::move(e));
}

void EmuSwitch::handle(Channel& c, const ofp::Message& m, std::span<const uint8_t> raw) {
  // 6.3.6: a SLAVE may not change the switch; its writes are refused and not applied.
  const bool write = std::holds_alternative<ofp::FlowMod>(m.body) || std::holds_alternative<ofp::PacketOut>(m.body) ||
                     std::holds_alternative<ofp::GroupMod>(m.body) || std::holds_alternative<ofp::MeterMod>(m.body);
  if (write && !roles_.may_modify(c.index)) {
    ++c_.slave_writes_refused;
    send_error(c, ofp::err::kBadRequest, role_err::kBrcIsSlave, raw);
    bench_.on_slave_write(*this, c.index);
    return;
  }
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, ofp::Hello>) {
          if (b.version_bitmap != 0 && (b.version_bitmap & (1u << ofp::kVersion)) == 0) {
            send_error(c, ofp::err::kHelloFailed, ofp::err::kHelloIncompatible, raw);
            bench_.on_disconnect(*this, "controller does not speak OpenFlow 1.3");
            close();  // no retry: it will not learn 1.3 in a second
          }
        } else if constexpr (std::is_same_v<T, ofp::FeaturesRequest>) {
          ofp::FeaturesReply r;
          r.datapath_id = dpid_;
          r.n_buffers = bench_.options().no_buffer ? 0 : kBuffers;
          r.n_tables = 254;
          r.capabilities = kCapabilities;
          send(c, m.xid, r);
          const bool first_on_channel = !c.handshaken;
          c.handshaken = true;
          if (!features_sent_) {
            features_sent_ = true;
            handshake_s_ = bench_.now_s();
            bench_.on_ready(*this);
          }
          if (first_on_channel) bench_.on_channel_ready(*this, c.index);
        } else if constexpr (std::is_same_v<T, ofp::GetConfigRequest>) {
          send(c, m.xid, ofp::GetConfigReply{c.config});
        } else if constexpr (std::is_same_v<T, ofp::SetConfig>) {
          c.config = b.config;  // per connection (miss_send_len), as Open vSwitch does
        } else if constexpr (std::is_same_v<T, ofp::EchoRequest>) {
          ++c_.echo_requests;
          send(c, m.xid, ofp::EchoReply{b.data});
        } else if constexpr (std::is_same_v<T, ofp::EchoReply>) {
          ++c_.echo_replies;
          if (c.echo_sent_s >= 0) c.echo_rtt_ms = (bench_.now_s() - c.echo_sent_s) * 1e3;
          c.echo_sent_s = -1;
        } else if constexpr (std::is_same_v<T, ofp::BarrierRequest>) {
          ++c_.barriers;  // everything before it is already applied: we are synchronous
          send(c, m.xid, ofp::BarrierReply{});
        } else if constexpr (std::is_same_v<T, ofp::RoleRequest>) {
          handle_role(c, m.xid, b, raw);
        } else if constexpr (std::is_same_v<T, ofp::MultipartRequest>) {
          ++c_.multiparts;
          handle_multipart(c, m.xid, b);
        } else if constexpr (std::is_same_v<T, ofp::FlowMod>) {
          handle_flow_mod(c, m.xid, b, raw);
        } else if constexpr (std::is_same_v<T, ofp::PacketOut>) {
          ++c_.packet_outs;
          handle_packet_out(c, b);
        } else if constexpr (std::is_same_v<T, ofp::ErrorMsg>) {
          ++c_.errors_received;
        } else {
          ++c_.other;  // group/meter mods are accepted and not modelled
        }
      },
      m.body);
}

// ROLE_REQUEST (7.3.9, 6.3.6): answered with ROLE_REPLY, or OFPET_ROLE_REQUEST_FAILED when the
// generation is stale or the role unknown. A new MASTER demotes the old one to SLAVE (no message:
// ROLE_STATUS is OpenFlow 1.4).
void EmuSwitch::handle_role(Channel& c, uint32_t xid, const ofp::RoleRequest& r, std::span<const uint8_t> raw) {
  ++c_.role_requests;
  const SwitchRoles::Answer a = roles_.request(c.index, r.role.role, r.role.generation_id);
  if (!a.ok) {
    ++(a.error_code == role_err::kStale ? c_.role_stale : c_.role_bad);
    send_error(c, role_err::kRoleRequestFailed, a.error_code, raw);
    bench_.on_role(*this, c.index, static_cast<CtlRole>(r.role.role), r.role.generation_id, false);
    return;
  }
  ofp::RoleReply rep;
  rep.role.role = static_cast<uint32_t>(a.role);
  rep.role.generation_id = a.generation;
  send(c, xid, rep);
  bench_.on_role(*this, c.index, a.role, r.role.generation_id, true);
}

// A multipart reply in parts of `per` items, OFPMPF_REPLY_MORE on all but the last (7.3.5):
// a switch with thousands of ports or flows cannot answer in one 64 KiB message.
template <class Item>
void EmuSwitch::send_parts(Channel& c, uint32_t xid, ofp::MultipartType type, std::vector<Item> items, size_t per) {
  size_t i = 0;
  do {
    const size_t end = std::min(items.size(), i + per);
    ofp::MultipartReply part;
    part.type = type;
    part.flags = end < items.size() ? ofp::kMultipartMore : 0;
    part.body = std::vector<Item>(std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(i)),
                                  std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(end)));
    send(c, xid, std::move(part));
    i = end;
  } while (i < items.size());
}

void EmuSwitch::handle_multipart(Channel& c, uint32_t xid, const ofp::MultipartRequest& r) {
  using MT = ofp::MultipartType;
  ofp::MultipartReply rep;
  rep.type = r.type;
  switch (r.type) {
    case MT::kDesc:
      rep.body = ofp::Desc{"sdnator", "ofbench emulated switch", "ofbench", std::to_string(dpid_),
                           "ofbench s" + std::to_string(index_ + 1)};
      break;
    case MT::kPortDesc: {
      std::vector<ofp::Port> ports;
      for (uint32_t p : bench_.ports_of(index_)) {
        ofp::Port port;
        port.port_no = p;
        port.hw_addr = 0x020000000000ULL | ((dpid_ & 0xffffff) << 16) | (p & 0xffff);
        port.name = "s" + std::to_string(index_ + 1) + "-eth" + std::to_string(p);
        port.curr = port.advertised = port.supported = 0x40 | 0x800;  // 10GB_FD, COPPER
        port.curr_speed = port.max_speed = 10'000'000;                 // kbps
        ports.push_back(std::move(port));
      }
      send_parts(c, xid, MT::kPortDesc, std::move(ports), kPortsPerReply);
      return;
    }
    case MT::kFlow:
    case MT::kAggregate: {
      const auto* q = std::get_if<ofp::FlowStatsRequest>(&r.body);
      std::vector<ofp::FlowStats> all;
      ofp::AggregateStats agg;
      const auto now = emu::Clock::now();
      for (const auto& e : table_.entries()) {
        if (q != nullptr && !emu::FlowTable::selects(e, q->table_id, q->cookie, q->cookie_mask, q->out_port, q->match))
          continue;
        ++agg.flow_count;
        agg.packet_count += e.packet_count;
        agg.byte_count += e.byte_count;
        if (r.type == MT::kAggregate) continue;
        ofp::FlowStats s;
        s.table_id = e.table_id;
        const auto age = std::chrono::duration_cast<std::chrono::nanoseconds>(now - e.installed).count();
        s.duration_sec = static_cast<uint32_t>(age / 1'000'000'000);
        s.duration_nsec = static_cast<uint32_t>(age % 1'000'000'000);
        s.priority = e.priority;
        s.idle_timeout = e.idle_timeout;
        s.hard_timeout = e.hard_timeout;
        s.flags = e.flags;
        s.cookie = e.cookie;
        s.packet_count = e.packet_count;
        s.byte_count = e.byte_count;
        s.match = e.match;
        s.instructions = e.instructions;
        all.push_back(std::move(s));
      }
      if (r.type == MT::kAggregate) {
        rep.body = agg;
        break;
      }
      send_parts(c, xid, MT::kFlow, std::move(all), kFlowStatsPerReply);
      return;
    }
    case MT::kTable: {
      std::vector<ofp::TableStats> t(1);
      t[0].table_id = 0;
      t[0].active_count = static_cast<uint32_t>(table_.size());
      rep.body = std::move(t);
      break;
    }
    case MT::kPortStats: {
      std::vector<ofp::PortStats> st;
      for (uint32_t p : bench_.ports_of(index_)) {
        ofp::PortStats s;
        s.port_no = p;
        st.push_back(s);
      }
      send_parts(c, xid, MT::kPortStats, std::move(st), kPortsPerReply);
      return;
    }
    default: {
      Bytes req;
      (void)ofp::encode(xid, r, req);
      send_error(c, ofp::err::kBadRequest, ofp::err::kBrcBadMultipart, req);
      return;
    }
  }
  send(c, xid, std::move(rep));
}

void EmuSwitch::handle_flow_mod(Channel& c, uint32_t xid, const ofp::FlowMod& fm, std::span<const uint8_t> raw) {
  (void)xid;
  ++c_.flow_mods;
  const double t = bench_.now_s();
  using Cmd = ofp::FlowModCommand;
  // A proactive change: an ADD that no PacketIn asked for (no in_port, no L4 ports, no
  // buffer) and that creates an entry or changes one's actions. A re-sent identical rule is
  // not a change. CPAM's rotations show up as bursts of these (see Bench::windows_).
  bool proactive = false;
  if (fm.command == Cmd::kAdd && fm.buffer_id == ofp::kNoBuffer && fm.match.find(ofp::OxmField::kInPort) == nullptr &&
      fm.match.find(ofp::OxmField::kTcpSrc) == nullptr && fm.match.find(ofp::OxmField::kTcpDst) == nullptr &&
      fm.match.find(ofp::OxmField::kUdpSrc) == nullptr && fm.match.find(ofp::OxmField::kUdpDst) == nullptr) {
    const emu::FlowEntry* old = table_.find(fm.table_id, fm.priority, fm.match);
    proactive = old == nullptr || old->instructions != fm.instructions;
    static const bool trace = std::getenv("OFBENCH_TRACE_PROACTIVE") != nullptr;
    if (trace && proactive)
      std::fprintf(stderr, "proactive t=%.3f s%u prio=%u cookie=%llx %s fields=%zu\n", t, index_ + 1, fm.priority,
                   static_cast<unsigned long long>(fm.cookie), old ? "changed" : "new", fm.match.fields.size());
  }
  std::vector<ofp::FlowRemoved> removed;
  if (auto rej = table_.apply(fm, emu::Clock::now(), removed)) {
    ++c_.flow_mods_rejected;
    send_error(c, rej->type, rej->code, raw);
    return;
  }
  for (auto& fr : removed) {
    ++c_.flow_removed;
    send_async(std::move(fr));
  }
  if (proactive) {
    pending_proactive_.push_back({fm.match.get(ofp::OxmField::kIpv4Dst), fm.priority, t});
  } else if (fm.match.find(ofp::OxmField::kTcpSrc) || fm.match.find(ofp::OxmField::kTcpDst) ||
             fm.match.find(ofp::OxmField::kUdpSrc) || fm.match.find(ofp::OxmField::kUdpDst)) {
    if (auto d = fm.match.get(ofp::OxmField::kIpv4Dst)) read_session_dsts_.push_back(*d);
  }
  if (fm.command == Cmd::kDelete || fm.command == Cmd::kDeleteStrict) return;  // buffer_id ignored (7.3.4.1)
  if (fm.buffer_id == ofp::kNoBuffer) return;
  auto it = buffers_.find(fm.buffer_id);
  if (it == buffers_.end()) {
    ++c_.buffer_unknown;
    send_error(c, ofp::err::kBadRequest, kBrcBufferUnknown, raw);
    return;
  }
  Buffered b = std::move(it->second);
  buffers_.erase(it);
  if (b.event != 0) bench_.on_response(b.event, t);
  lookup_and_run(b.in_port, b.frame, 0);  // the buffered packet goes through the pipeline
}

void EmuSwitch::handle_packet_out(Channel& c, const ofp::PacketOut& po) {
  const double t = bench_.now_s();
  Bytes frame;
  if (po.buffer_id != ofp::kNoBuffer) {
    auto it = buffers_.find(po.buffer_id);
    if (it == buffers_.end()) {
      ++c_.buffer_unknown;
      Bytes raw;
      (void)ofp::encode(0, po, raw);
      send_error(c, ofp::err::kBadRequest, kBrcBufferUnknown, raw);
      return;
    }
    frame = std::move(it->second.frame);
    const uint32_t event = it->second.event;
    buffers_.erase(it);  // before the callback: it may buffer another packet
    if (event != 0) bench_.on_response(event, t);
  } else {
    frame.assign(po.data.begin(), po.data.end());
    if (!by_data_.empty()) {
      if (auto it = by_data_.find(frame_hash(frame)); it != by_data_.end()) {
        const uint32_t event = it->second;
        by_data_.erase(it);  // before the callback: it may add another
        bench_.on_response(event, t);
      }
    }
  }
  run(po.actions, frame, po.in_port, 0);
}

void EmuSwitch::run(const ofp::ActionList& actions, const Bytes& frame, uint32_t in_port, int depth) {
  emu::run_actions(
      actions, frame, [&](uint32_t port, const Bytes& f) { output(port, f, in_port, depth); },
      [&](std::string) { ++c_.other; });
}

void EmuSwitch::output(uint32_t port, const Bytes& frame, uint32_t in_port, int depth) {
  switch (port) {
    case ofp::port::kFlood:
    case ofp::port::kAll:
      for (uint32_t p : bench_.ports_of(index_))
        if (p != in_port) bench_.transmit(index_, p, frame, depth);
      return;
    case ofp::port::kInPort:
      bench_.transmit(index_, in_port, frame, depth);
      return;
    case ofp::port::kTable:
      if (depth < 8) lookup_and_run(in_port, frame, depth + 1);
      return;
    case ofp::port::kController:
      packet_in(in_port, frame, 0, 1);  // OFPR_ACTION
      bench_.on_packet_in_sent(*this, frame);
      return;
    case ofp::port::kLocal:
    case ofp::port::kNormal:
    case ofp::port::kAny:
      return;
    default:
      if (port == in_port) return;  // never back out of the ingress port without OFPP_IN_PORT
      bench_.transmit(index_, port, frame, depth);
  }
}

void EmuSwitch::lookup_and_run(uint32_t port, const Bytes& frame, int depth) {
  const emu::FlowEntry* e = table_.lookup(frame, port, emu::Clock::now());
  if (e == nullptr) {
    packet_in(port, frame, 0, 0);
    bench_.on_packet_in_sent(*this, frame);
    return;
  }
  const ofp::ActionList actions = e->actions();  // a copy: the table may change under us
  run(actions, frame, port, depth);
}

void EmuSwitch::ingress(uint32_t port, const Bytes& frame) { lookup_and_run(port, frame, 0); }

uint32_t EmuSwitch::buffer(uint32_t in_port, const Bytes& frame, uint32_t event) {
  const uint32_t id = next_buffer_++;
  if (next_buffer_ == ofp::kNoBuffer) next_buffer_ = 1;
  buffers_[id] = Buffered{in_port, frame, event};
  buffer_order_.push_back(id);
  while (buffer_order_.size() > kBuffers) {
    buffers_.erase(buffer_order_.front());
    buffer_order_.pop_front();
  }
  return id;
}

bool EmuSwitch::packet_in(uint32_t in_port, const Bytes& frame, uint32_t event, uint8_t reason) {
  // One PacketIn per MASTER/EQUAL channel (7.3.10's default asynchronous configuration); a
  // buffered packet is buffered once, whichever controller releases it.
  uint32_t buffer_id = ofp::kNoBuffer;
  bool sent = false;
  for (auto& cp : ch_) {
    Channel& c = *cp;
    if (!c.connected || !roles_.gets_async(c.index)) continue;
    ofp::PacketIn pin;
    // OFPCML_NO_BUFFER (7.3.2) or a switch without buffers: the whole frame, no buffer.
    const bool whole = bench_.options().no_buffer || c.config.miss_send_len == ofp::kControllerMaxLenNoBuffer;
    if (!whole && buffer_id == ofp::kNoBuffer) buffer_id = buffer(in_port, frame, event);
    pin.buffer_id = whole ? ofp::kNoBuffer : buffer_id;
    pin.total_len = static_cast<uint16_t>(frame.size());
    pin.reason = reason;
    pin.match.set(ofp::OxmField::kInPort, in_port);
    const size_t n = whole ? frame.size() : std::min<size_t>(frame.size(), c.config.miss_send_len);
    pin.data = std::span<const uint8_t>(frame.data(), n);
    if (whole && event != 0) {
      if (by_data_.size() >= kByDataCap) by_data_.clear();  // old, unanswered: the bench timed them out
      by_data_[frame_hash(frame)] = event;
    }
    if (!sent) ++c_.packet_ins;
    sent = true;
    send(c, 0, std::move(pin));
  }
  if (!sent && connected()) ++c_.packet_ins_undelivered;
  return sent;
}

EmuSwitch::Channel* EmuSwitch::first_async_channel() {
  for (auto& c : ch_)
    if (c->connected && roles_.gets_async(c->index)) return c.get();
  return nullptr;
}

void EmuSwitch::send_malformed(uint32_t which) {
  ++c_.malformed_sent;
  // Each keeps the header's length true to the bytes sent, so the controller can skip the
  // message; the rule it breaks is inside: a message error, answered with OFPT_ERROR (7.4.4).
  Bytes b;
  ofp::PacketIn pin;
  pin.match.set(ofp::OxmField::kInPort, 1);
  const uint8_t payload[60] = {};
  pin.data = payload;
  (void)ofp::encode(next_xid_++, pin, b);
  pkt::Writer w(b);
  switch (which % 4) {
    case 0:  // ofp_match.length runs past the message (7.2.3.1)
      w.put_be16_at(26, 0x0ff0);
      break;
    case 1:  // an unknown message type
      b.resize(8);
      b[1] = 0xee;
      w.put_be16_at(2, 8);
      break;
    case 2:  // PACKET_IN cut inside its fixed part (needs 32 bytes with the match header)
      b.resize(20);
      w.put_be16_at(2, 20);
      break;
    default:  // an OXM TLV whose length byte overruns the match (7.2.3.2)
      b[31] = 0x40;
      break;
  }
  if (Channel* c = first_async_channel()) send_bytes(*c, b);
}

void EmuSwitch::echo_request() {  // on the first channel (sessions mode: one controller)
  if (ch_.empty() || !ch_[0]->connected) return;
  ch_[0]->echo_sent_s = bench_.now_s();
  send(*ch_[0], next_xid_++, ofp::EchoRequest{});
}

void EmuSwitch::expire(emu::Clock::time_point now) {
  std::vector<ofp::FlowRemoved> removed;
  table_.expire(now, removed);
  for (auto& fr : removed) {
    ++c_.flow_removed;
    send_async(std::move(fr));
  }
}

}  // namespace sdn::ofbench
