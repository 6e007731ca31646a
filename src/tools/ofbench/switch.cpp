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
    : bench_(bench), io_(io), sock_(io), index_(index), dpid_(dpid),
      table_(bench.options().max_flows_per_switch) {
  in_.resize(256 * 1024);
}

EmuSwitch::~EmuSwitch() { close(); }

void EmuSwitch::connect(const asio::ip::tcp::endpoint& ep) {
  ep_ = ep;
  closing_ = false;
  const uint64_t gen = ++gen_;
  sock_.async_connect(ep, [this, gen](const asio::error_code& ec) {
    if (gen != gen_) return;
    if (ec) {
      lost("connect: " + ec.message());
      return;
    }
    asio::error_code ignore;
    sock_.set_option(asio::ip::tcp::no_delay(true), ignore);
    if (asio::ssl::context* ctx = bench_.tls()) {
      tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(sock_, *ctx);
      tls_->async_handshake(asio::ssl::stream_base::client, [this, gen](const asio::error_code& hec) {
        if (gen != gen_) return;
        if (hec) {
          lost("TLS handshake: " + hec.message());
          return;
        }
        connected_ = true;
        send(next_xid_++, ofp::Hello{});
        read_more();
      });
      return;
    }
    connected_ = true;
    send(next_xid_++, ofp::Hello{});
    read_more();
  });
}

// The session is gone (peer closed, error, framing): like Open vSwitch, keep the flow table
// and try again after a second, when the bench allows it.
void EmuSwitch::lost(const std::string& why) {
  if (closing_) return;
  ++gen_;  // handlers of the old socket see a new generation and stop
  const bool was_up = connected_;
  connected_ = false;
  asio::error_code ignore;
  sock_.close(ignore);
  in_len_ = 0;
  out_.clear();
  write_pending_ = false;
  buffers_.clear();
  buffer_order_.clear();
  by_data_.clear();
  bench_.on_disconnect(*this, why);
  if (!bench_.reconnect() || (!was_up && !features_sent_)) return;  // never came up: no retry
  ++c_.reconnects;
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(1));
  t->async_wait([this, t, gen = gen_](const asio::error_code& ec) {
    if (!ec && gen == gen_ && !closing_) {
      sock_ = asio::ip::tcp::socket(io_);
      connect(ep_);
    }
  });
}

void EmuSwitch::close() {
  closing_ = true;
  ++gen_;
  asio::error_code ignore;
  if (sock_.is_open()) sock_.close(ignore);
  connected_ = false;
}

void EmuSwitch::send(uint32_t xid, ofp::Body body) {
  const size_t before = out_.size();
  if (!ofp::encode(xid, std::move(body), out_)) return;
  c_.bytes_out += out_.size() - before;
  flush();
}

void EmuSwitch::send_bytes(const Bytes& b) {
  out_.insert(out_.end(), b.begin(), b.end());
  c_.bytes_out += b.size();
  flush();
}

size_t EmuSwitch::backlog() const { return out_.size() + writing_.size(); }

void EmuSwitch::flush() {
  if (write_pending_ || out_.empty() || !connected_) return;
  writing_.swap(out_);
  out_.clear();
  write_pending_ = true;
  auto done = [this, gen = gen_](const asio::error_code& ec, size_t) {
    if (gen != gen_) return;  // the socket it wrote to is gone
    write_pending_ = false;
    writing_.clear();
    if (ec) {
      lost("write: " + ec.message());
      return;
    }
    flush();
  };
  if (tls_) asio::async_write(*tls_, asio::buffer(writing_), std::move(done));
  else asio::async_write(sock_, asio::buffer(writing_), std::move(done));
}

void EmuSwitch::read_more() {
  if (in_len_ == in_.size()) in_.resize(in_.size() * 2);
  auto done = [this, gen = gen_](const asio::error_code& ec, size_t n) {
    if (gen != gen_) return;
    if (ec) {
      lost("read: " + ec.message());
      return;
    }
    on_bytes(n);
    if (connected_) read_more();
  };
  const auto buf = asio::buffer(in_.data() + in_len_, in_.size() - in_len_);
  if (tls_) tls_->async_read_some(buf, std::move(done));
  else sock_.async_read_some(buf, std::move(done));
}

void EmuSwitch::on_bytes(size_t n) {
  in_len_ += n;
  c_.bytes_in += n;
  size_t off = 0;
  while (in_len_ - off >= ofp::kHeaderLen) {
    std::span<const uint8_t> rest(in_.data() + off, in_len_ - off);
    auto h = ofp::decode_header(rest);
    if (!h) {  // framing error: nothing after it can be trusted (STYLE.md: close)
      ++c_.decode_errors;
      lost("framing error from the controller");
      return;
    }
    if (rest.size() < h->length) break;
    auto raw = rest.first(h->length);
    auto m = ofp::decode(raw);
    if (!m) {
      ++c_.decode_errors;
      send_error(m.error().ofp_type, m.error().ofp_code, raw);
    } else {
      handle(*m, raw);
    }
    off += h->length;
    if (!connected_) return;
  }
  classify_proactive();
  if (off > 0) {
    std::memmove(in_.data(), in_.data() + off, in_len_ - off);
    in_len_ -= off;
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

void EmuSwitch::send_error(uint16_t type, uint16_t code, std::span<const uint8_t> offending) {
  ofp::ErrorMsg e;
  e.type = type;
  e.code = code;
  const size_t n = std::min<size_t>(offending.size(), 64);
  e.data.assign(offending.begin(), offending.begin() + static_cast<std::ptrdiff_t>(n));
  uint32_t xid = 0;
  if (offending.size() >= 8) xid = pkt::load_be32(offending, 4);
  send(xid, std::move(e));
}

void EmuSwitch::handle(const ofp::Message& m, std::span<const uint8_t> raw) {
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, ofp::Hello>) {
          if (b.version_bitmap != 0 && (b.version_bitmap & (1u << ofp::kVersion)) == 0) {
            send_error(ofp::err::kHelloFailed, ofp::err::kHelloIncompatible, raw);
            bench_.on_disconnect(*this, "controller does not speak OpenFlow 1.3");
            close();  // no retry: it will not learn 1.3 in a second
          }
        } else if constexpr (std::is_same_v<T, ofp::FeaturesRequest>) {
          ofp::FeaturesReply r;
          r.datapath_id = dpid_;
          r.n_buffers = bench_.options().no_buffer ? 0 : kBuffers;
          r.n_tables = 254;
          r.capabilities = kCapabilities;
          send(m.xid, r);
          if (!features_sent_) {
            features_sent_ = true;
            handshake_s_ = bench_.now_s();
            bench_.on_ready(*this);
          }
        } else if constexpr (std::is_same_v<T, ofp::GetConfigRequest>) {
          send(m.xid, ofp::GetConfigReply{config_});
        } else if constexpr (std::is_same_v<T, ofp::SetConfig>) {
          config_ = b.config;
        } else if constexpr (std::is_same_v<T, ofp::EchoRequest>) {
          ++c_.echo_requests;
          send(m.xid, ofp::EchoReply{b.data});
        } else if constexpr (std::is_same_v<T, ofp::EchoReply>) {
          ++c_.echo_replies;
          if (echo_sent_s_ >= 0) echo_rtt_ms_ = (bench_.now_s() - echo_sent_s_) * 1e3;
          echo_sent_s_ = -1;
        } else if constexpr (std::is_same_v<T, ofp::BarrierRequest>) {
          ++c_.barriers;  // everything before it is already applied: we are synchronous
          send(m.xid, ofp::BarrierReply{});
        } else if constexpr (std::is_same_v<T, ofp::RoleRequest>) {
          ofp::RoleReply r;
          r.role = b.role;
          if (r.role.role == 0) r.role.role = 1;  // NOCHANGE: we are EQUAL
          send(m.xid, r);
        } else if constexpr (std::is_same_v<T, ofp::MultipartRequest>) {
          ++c_.multiparts;
          handle_multipart(m.xid, b);
        } else if constexpr (std::is_same_v<T, ofp::FlowMod>) {
          handle_flow_mod(m.xid, b, raw);
        } else if constexpr (std::is_same_v<T, ofp::PacketOut>) {
          ++c_.packet_outs;
          handle_packet_out(b);
        } else if constexpr (std::is_same_v<T, ofp::ErrorMsg>) {
          ++c_.errors_received;
        } else {
          ++c_.other;  // group/meter mods are accepted and not modelled
        }
      },
      m.body);
}

// A multipart reply in parts of `per` items, OFPMPF_REPLY_MORE on all but the last (7.3.5):
// a switch with thousands of ports or flows cannot answer in one 64 KiB message.
template <class Item>
void EmuSwitch::send_parts(uint32_t xid, ofp::MultipartType type, std::vector<Item> items, size_t per) {
  size_t i = 0;
  do {
    const size_t end = std::min(items.size(), i + per);
    ofp::MultipartReply part;
    part.type = type;
    part.flags = end < items.size() ? ofp::kMultipartMore : 0;
    part.body = std::vector<Item>(std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(i)),
                                  std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(end)));
    send(xid, std::move(part));
    i = end;
  } while (i < items.size());
}

void EmuSwitch::handle_multipart(uint32_t xid, const ofp::MultipartRequest& r) {
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
      send_parts(xid, MT::kPortDesc, std::move(ports), kPortsPerReply);
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
      send_parts(xid, MT::kFlow, std::move(all), kFlowStatsPerReply);
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
      send_parts(xid, MT::kPortStats, std::move(st), kPortsPerReply);
      return;
    }
    default: {
      Bytes req;
      (void)ofp::encode(xid, r, req);
      send_error(ofp::err::kBadRequest, ofp::err::kBrcBadMultipart, req);
      return;
    }
  }
  send(xid, std::move(rep));
}

void EmuSwitch::handle_flow_mod(uint32_t xid, const ofp::FlowMod& fm, std::span<const uint8_t> raw) {
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
    send_error(rej->type, rej->code, raw);
    return;
  }
  for (auto& fr : removed) {
    ++c_.flow_removed;
    send(0, std::move(fr));
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
    send_error(ofp::err::kBadRequest, kBrcBufferUnknown, raw);
    return;
  }
  Buffered b = std::move(it->second);
  buffers_.erase(it);
  if (b.event != 0) bench_.on_response(b.event, t);
  lookup_and_run(b.in_port, b.frame, 0);  // the buffered packet goes through the pipeline
}

void EmuSwitch::handle_packet_out(const ofp::PacketOut& po) {
  const double t = bench_.now_s();
  Bytes frame;
  if (po.buffer_id != ofp::kNoBuffer) {
    auto it = buffers_.find(po.buffer_id);
    if (it == buffers_.end()) {
      ++c_.buffer_unknown;
      Bytes raw;
      (void)ofp::encode(0, po, raw);
      send_error(ofp::err::kBadRequest, kBrcBufferUnknown, raw);
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

void EmuSwitch::packet_in(uint32_t in_port, const Bytes& frame, uint32_t event, uint8_t reason) {
  if (!connected_) return;
  ++c_.packet_ins;
  ofp::PacketIn pin;
  // OFPCML_NO_BUFFER (7.3.2) or a switch without buffers: the whole frame, no buffer.
  const bool whole = bench_.options().no_buffer || config_.miss_send_len == ofp::kControllerMaxLenNoBuffer;
  pin.buffer_id = whole ? ofp::kNoBuffer : buffer(in_port, frame, event);
  pin.total_len = static_cast<uint16_t>(frame.size());
  pin.reason = reason;
  pin.match.set(ofp::OxmField::kInPort, in_port);
  const size_t n = whole ? frame.size() : std::min<size_t>(frame.size(), config_.miss_send_len);
  pin.data = std::span<const uint8_t>(frame.data(), n);
  if (whole && event != 0) {
    if (by_data_.size() >= kByDataCap) by_data_.clear();  // old, unanswered: the bench timed them out
    by_data_[frame_hash(frame)] = event;
  }
  send(0, std::move(pin));
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
  send_bytes(b);
}

void EmuSwitch::echo_request() {
  echo_sent_s_ = bench_.now_s();
  send(next_xid_++, ofp::EchoRequest{});
}

void EmuSwitch::expire(emu::Clock::time_point now) {
  std::vector<ofp::FlowRemoved> removed;
  table_.expire(now, removed);
  for (auto& fr : removed) {
    ++c_.flow_removed;
    send(0, std::move(fr));
  }
}

}  // namespace sdn::ofbench
