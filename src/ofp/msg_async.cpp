// Asynchronous switch-to-controller messages: PACKET_IN, FLOW_REMOVED, PORT_STATUS
// (OpenFlow 1.3.5 section 7.4), and the ofp_port structure they share with PORT_DESC (7.2.1).
#include <algorithm>

#include "ofp/codec_internal.hpp"

namespace sdn::ofp::detail {
namespace {

using wire::Reader;
using wire::Writer;

constexpr size_t kPortNameLen = 16;      // OFP_MAX_PORT_NAME_LEN
constexpr size_t kPacketInFixed = 16;    // buffer_id .. cookie (7.4.1)
constexpr size_t kFlowRemovedFixed = 40; // cookie .. byte_count (7.4.2)
constexpr size_t kPortStatusBody = 8 + kPortLen;
constexpr uint64_t kMac48 = 0xffffffffffffULL;

}  // namespace

// ---- ofp_port (7.2.1) ---------------------------------------------------------------------
// The name is NUL-terminated within 16 bytes. A name without a NUL is cut at 15 characters
// (as Open vSwitch does) rather than rejecting the whole port list of a sloppy switch.
Result<void> decode_port(Reader& r, Port& p) {
  std::span<const uint8_t> raw;
  if (!r.try_pull(kPortLen, raw)) return wire::truncated("port: fewer than 64 bytes");
  Reader s(raw);
  (void)s.u32(p.port_no);
  (void)s.skip(4);
  (void)s.uint_n(6, p.hw_addr);
  (void)s.skip(2);
  std::span<const uint8_t> name;
  (void)s.try_pull(kPortNameLen, name);
  const auto nul = std::find(name.begin(), name.begin() + (kPortNameLen - 1), uint8_t{0});
  p.name.assign(name.begin(), nul);
  (void)s.u32(p.config);
  (void)s.u32(p.state);
  (void)s.u32(p.curr);
  (void)s.u32(p.advertised);
  (void)s.u32(p.supported);
  (void)s.u32(p.peer);
  (void)s.u32(p.curr_speed);
  (void)s.u32(p.max_speed);
  return {};
}

Result<void> encode_port(const Port& p, Writer& w) {
  if (p.name.size() >= kPortNameLen) return wire::bad_value("port: name longer than 15 characters");
  if (p.name.find('\0') != std::string::npos) return wire::bad_value("port: name contains NUL");
  if (p.hw_addr > kMac48) return wire::bad_value("port: hw_addr wider than 48 bits");
  w.u32(p.port_no);
  w.zeros(4);
  w.uint_n(p.hw_addr, 6);
  w.zeros(2);
  w.str(p.name, kPortNameLen);
  w.u32(p.config);
  w.u32(p.state);
  w.u32(p.curr);
  w.u32(p.advertised);
  w.u32(p.supported);
  w.u32(p.peer);
  w.u32(p.curr_speed);
  w.u32(p.max_speed);
  return {};
}

// ---- PACKET_IN (7.4.1) --------------------------------------------------------------------
// Fixed part, ofp_match (padded to 8), 2 bytes of pad, then the frame up to the end.
Result<void> decode_packet_in(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  PacketIn& p = out.emplace<PacketIn>();
  if (r.remaining() < kPacketInFixed) return wire::truncated("packet_in: body shorter than fixed part");
  (void)r.u32(p.buffer_id);
  (void)r.u16(p.total_len);
  (void)r.u8(p.reason);
  (void)r.u8(p.table_id);
  (void)r.u64(p.cookie);
  SDN_OFP_TRY(decode_match(r, OxmPolicy::kSkipUnknown, p.match));
  if (!r.skip(2)) return wire::truncated("packet_in: missing 2-byte pad after match");
  p.data = r.rest();
  return {};
}

Result<void> encode_body(const PacketIn& m, Writer& w) {
  w.u32(m.buffer_id);
  w.u16(m.total_len);
  w.u8(m.reason);
  w.u8(m.table_id);
  w.u64(m.cookie);
  SDN_OFP_TRY(encode_match(m.match, w));
  w.zeros(2);
  w.bytes(m.data);
  return {};
}

// ---- FLOW_REMOVED (7.4.2) -----------------------------------------------------------------
Result<void> decode_flow_removed(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  FlowRemoved& f = out.emplace<FlowRemoved>();
  if (r.remaining() < kFlowRemovedFixed) return wire::truncated("flow_removed: body shorter than fixed part");
  (void)r.u64(f.cookie);
  (void)r.u16(f.priority);
  (void)r.u8(f.reason);
  (void)r.u8(f.table_id);
  (void)r.u32(f.duration_sec);
  (void)r.u32(f.duration_nsec);
  (void)r.u16(f.idle_timeout);
  (void)r.u16(f.hard_timeout);
  (void)r.u64(f.packet_count);
  (void)r.u64(f.byte_count);
  SDN_OFP_TRY(decode_match(r, OxmPolicy::kStrict, f.match));
  if (!r.empty()) return wire::bad_len("flow_removed: bytes after the match");
  return {};
}

Result<void> encode_body(const FlowRemoved& m, Writer& w) {
  w.u64(m.cookie);
  w.u16(m.priority);
  w.u8(m.reason);
  w.u8(m.table_id);
  w.u32(m.duration_sec);
  w.u32(m.duration_nsec);
  w.u16(m.idle_timeout);
  w.u16(m.hard_timeout);
  w.u64(m.packet_count);
  w.u64(m.byte_count);
  return encode_match(m.match, w);
}

// ---- PORT_STATUS (7.4.3) ------------------------------------------------------------------
Result<void> decode_port_status(std::span<const uint8_t> body, Body& out) {
  if (body.size() < kPortStatusBody) return wire::truncated("port_status: body < 72");
  if (body.size() > kPortStatusBody) return wire::bad_len("port_status: body > 72");
  Reader r(body);
  PortStatus& s = out.emplace<PortStatus>();
  (void)r.u8(s.reason);
  (void)r.skip(7);
  return decode_port(r, s.desc);
}

Result<void> encode_body(const PortStatus& m, Writer& w) {
  w.u8(m.reason);
  w.zeros(7);
  return encode_port(m.desc, w);
}

}  // namespace sdn::ofp::detail
