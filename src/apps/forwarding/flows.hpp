// Flow and packet building blocks shared by the two forwarding modes (learning and fabric): the
// exact-match flow of a frame, the cookie-filtered delete, the PacketOut of a PacketIn.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "apps/forwarding/forwarding.hpp"
#include "ofp/message.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::flows {

inline uint16_t seconds16(std::chrono::seconds s) {
  return static_cast<uint16_t>(std::clamp<int64_t>(s.count(), 0, 0xffff));
}

// Port numbers a PacketIn may legitimately arrive on (7.2.1): physical/logical ports and
// LOCAL. Anything else (0, reserved numbers) is a switch bug we do not act on.
inline bool valid_in_port(uint32_t p) { return (p != 0 && p <= ofp::port::kMax) || p == ofp::port::kLocal; }

// The frame's data goes into a PacketOut only when the switch did not buffer it (7.3.7).
inline ofp::PacketOut packet_out(const ofp::PacketIn& pin, uint32_t in_port) {
  ofp::PacketOut po;
  po.buffer_id = pin.buffer_id;
  po.in_port = in_port;
  if (pin.buffer_id == ofp::kNoBuffer) po.data = pin.data;
  return po;
}

// Frees a buffered packet (a PacketOut with no actions drops it); nothing to send otherwise.
inline void release_buffer(southbound::SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port) {
  if (pin.buffer_id == ofp::kNoBuffer) return;
  ofp::PacketOut po;
  po.buffer_id = pin.buffer_id;
  po.in_port = in_port;
  sw.send(std::move(po));
}

// What every forwarding mode checks before it looks at a frame's destination.
enum class Verdict : uint8_t {
  kForward,      // a station's frame to act on (`parsed` is set)
  kBadInPort,    // a reserved/zero in_port: a switch bug, nothing to release
  kUnparsable,   // pkt::parse refused it (logged at debug, rate-limited)
  kNotOurs,      // LLDP or an 802.1D link-local group frame (never bridged; topology's)
  kBadSource,    // multicast or zero source address: not a station
};
struct Screened {
  Verdict verdict = Verdict::kForward;
  std::optional<pkt::Parsed> parsed;  // views pin.data
};
Screened screen(uint64_t dpid, const ofp::PacketIn& pin);

// A non-strict DELETE limited to the app's table and cookie range; callers add match/out_port.
inline ofp::FlowMod delete_mod(const ForwardingConfig& cfg) {
  ofp::FlowMod fm;
  fm.command = ofp::FlowModCommand::kDelete;
  fm.table_id = cfg.table_id;
  fm.cookie = cfg.cookie;
  fm.cookie_mask = kForwardingCookieMask;
  return fm;
}

// ADD of the exact-match flow for this frame entering at in_port, out of out_port: in_port,
// [vlan_vid], eth_type, eth_src, eth_dst, plus ipv4_src/dst for IPv4 (eth_type left out for
// 802.3/LLC and double-tagged frames, whose OXM eth_type would be the inner TPID).
ofp::FlowMod exact_flow(const ForwardingConfig& cfg, const pkt::Parsed& p, uint32_t in_port, uint32_t out_port,
                        uint32_t buffer_id);

}  // namespace sdn::apps::flows
