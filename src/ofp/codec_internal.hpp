// Internal to the ofp codec: the per-family decode/encode entry points that message.cpp
// dispatches to, and the shared element codecs (match, actions, instructions, port, buckets).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ofp/message.hpp"
#include "ofp/wire.hpp"

namespace sdn::ofp::detail {

// ---- match_actions.cpp: OXM match (7.2.3), actions (7.2.5), instructions (7.2.4) ----

// kStrict rejects any OXM this codec does not model (OFPBMC_BAD_FIELD) and duplicates.
// kSkipUnknown is for PACKET_IN only: a switch describes the packet with whatever pipeline
// fields it has (OVS adds tunnel and register fields); well-formed fields we do not model are
// skipped, lengths are still checked.
enum class OxmPolicy : uint8_t { kStrict, kSkipUnknown };

// Reads one ofp_match (type OFPMT_OXM) including its padding to a multiple of 8.
Result<void> decode_match(wire::Reader& r, OxmPolicy policy, Match& out);
Result<void> encode_match(const Match& m, wire::Writer& w);

// Decodes a whole span of actions / instructions (the span is exactly the list).
Result<void> decode_actions(std::span<const uint8_t> b, ActionList& out);
Result<void> encode_actions(const ActionList& actions, wire::Writer& w);
Result<void> decode_instructions(std::span<const uint8_t> b, InstructionList& out);
Result<void> encode_instructions(const InstructionList& insts, wire::Writer& w);

// ---- msg_async.cpp: ofp_port (7.2.1), 64 bytes ----
inline constexpr size_t kPortLen = 64;
Result<void> decode_port(wire::Reader& r, Port& out);
Result<void> encode_port(const Port& p, wire::Writer& w);

// ---- msg_mods.cpp: ofp_bucket list (7.3.4.2) ----
Result<void> decode_buckets(std::span<const uint8_t> b, std::vector<Bucket>& out);
Result<void> encode_buckets(const std::vector<Bucket>& buckets, wire::Writer& w);

// ---- per-family body codecs. `body` is everything after the 8-byte header. ----
// msg_symmetric.cpp
Result<void> decode_hello(std::span<const uint8_t> body, Body& out);
Result<void> decode_error(std::span<const uint8_t> body, Body& out);
Result<void> decode_echo(Type t, std::span<const uint8_t> body, Body& out);
Result<void> decode_empty(Type t, std::span<const uint8_t> body, Body& out);
Result<void> decode_features_reply(std::span<const uint8_t> body, Body& out);
Result<void> decode_switch_config(Type t, std::span<const uint8_t> body, Body& out);
Result<void> decode_role(Type t, std::span<const uint8_t> body, Body& out);
Result<void> encode_body(const Hello& m, wire::Writer& w);
Result<void> encode_body(const ErrorMsg& m, wire::Writer& w);
Result<void> encode_body(const EchoRequest& m, wire::Writer& w);
Result<void> encode_body(const EchoReply& m, wire::Writer& w);
Result<void> encode_body(const FeaturesRequest& m, wire::Writer& w);
Result<void> encode_body(const FeaturesReply& m, wire::Writer& w);
Result<void> encode_body(const GetConfigRequest& m, wire::Writer& w);
Result<void> encode_body(const GetConfigReply& m, wire::Writer& w);
Result<void> encode_body(const SetConfig& m, wire::Writer& w);
Result<void> encode_body(const BarrierRequest& m, wire::Writer& w);
Result<void> encode_body(const BarrierReply& m, wire::Writer& w);
Result<void> encode_body(const RoleRequest& m, wire::Writer& w);
Result<void> encode_body(const RoleReply& m, wire::Writer& w);

// msg_async.cpp
Result<void> decode_packet_in(std::span<const uint8_t> body, Body& out);
Result<void> decode_flow_removed(std::span<const uint8_t> body, Body& out);
Result<void> decode_port_status(std::span<const uint8_t> body, Body& out);
Result<void> encode_body(const PacketIn& m, wire::Writer& w);
Result<void> encode_body(const FlowRemoved& m, wire::Writer& w);
Result<void> encode_body(const PortStatus& m, wire::Writer& w);

// msg_mods.cpp
Result<void> decode_packet_out(std::span<const uint8_t> body, Body& out);
Result<void> decode_flow_mod(std::span<const uint8_t> body, Body& out);
Result<void> decode_group_mod(std::span<const uint8_t> body, Body& out);
Result<void> decode_meter_mod(std::span<const uint8_t> body, Body& out);
Result<void> encode_body(const PacketOut& m, wire::Writer& w);
Result<void> encode_body(const FlowMod& m, wire::Writer& w);
Result<void> encode_body(const GroupMod& m, wire::Writer& w);
Result<void> encode_body(const MeterMod& m, wire::Writer& w);

// msg_multipart.cpp
Result<void> decode_multipart_request(std::span<const uint8_t> body, Body& out);
Result<void> decode_multipart_reply(std::span<const uint8_t> body, Body& out);
Result<void> encode_body(const MultipartRequest& m, wire::Writer& w);
Result<void> encode_body(const MultipartReply& m, wire::Writer& w);

}  // namespace sdn::ofp::detail
