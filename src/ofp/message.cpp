// The codec entry points: header peek, whole-message decode/encode dispatch to the family
// files, and the name/type helpers. The central length rule lives here: a message is exactly
// the header's length (OpenFlow 1.3.5 section 7.1).
#include <algorithm>
#include <array>

#include "ofp/codec_internal.hpp"

namespace sdn::ofp {

using wire::Reader;
using wire::Writer;

bool operator==(const PacketIn& a, const PacketIn& b) {
  return a.buffer_id == b.buffer_id && a.total_len == b.total_len && a.reason == b.reason &&
         a.table_id == b.table_id && a.cookie == b.cookie && a.match == b.match &&
         std::ranges::equal(a.data, b.data);
}

bool operator==(const PacketOut& a, const PacketOut& b) {
  return a.buffer_id == b.buffer_id && a.in_port == b.in_port && a.actions == b.actions &&
         std::ranges::equal(a.data, b.data);
}

const char* errc_name(Errc e) {
  switch (e) {
    case Errc::kTruncated: return "truncated";
    case Errc::kBadLength: return "bad_length";
    case Errc::kBadVersion: return "bad_version";
    case Errc::kBadType: return "bad_type";
    case Errc::kBadMultipart: return "bad_multipart";
    case Errc::kBadMatch: return "bad_match";
    case Errc::kBadAction: return "bad_action";
    case Errc::kBadInstruction: return "bad_instruction";
    case Errc::kBadValue: return "bad_value";
    case Errc::kTooLong: return "too_long";
  }
  return "unknown";
}

Type type_of(const Body& body) {
  // Indexed like the Body alternatives.
  static constexpr std::array<Type, std::variant_size_v<Body>> kTypes{
      Type::kHello,          Type::kError,          Type::kEchoRequest,      Type::kEchoReply,
      Type::kFeaturesRequest, Type::kFeaturesReply, Type::kGetConfigRequest, Type::kGetConfigReply,
      Type::kSetConfig,      Type::kPacketIn,       Type::kFlowRemoved,      Type::kPortStatus,
      Type::kPacketOut,      Type::kFlowMod,        Type::kGroupMod,         Type::kMeterMod,
      Type::kBarrierRequest, Type::kBarrierReply,   Type::kRoleRequest,      Type::kRoleReply,
      Type::kMultipartRequest, Type::kMultipartReply,
  };
  return kTypes[body.index()];
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kHello: return "OFPT_HELLO";
    case Type::kError: return "OFPT_ERROR";
    case Type::kEchoRequest: return "OFPT_ECHO_REQUEST";
    case Type::kEchoReply: return "OFPT_ECHO_REPLY";
    case Type::kExperimenter: return "OFPT_EXPERIMENTER";
    case Type::kFeaturesRequest: return "OFPT_FEATURES_REQUEST";
    case Type::kFeaturesReply: return "OFPT_FEATURES_REPLY";
    case Type::kGetConfigRequest: return "OFPT_GET_CONFIG_REQUEST";
    case Type::kGetConfigReply: return "OFPT_GET_CONFIG_REPLY";
    case Type::kSetConfig: return "OFPT_SET_CONFIG";
    case Type::kPacketIn: return "OFPT_PACKET_IN";
    case Type::kFlowRemoved: return "OFPT_FLOW_REMOVED";
    case Type::kPortStatus: return "OFPT_PORT_STATUS";
    case Type::kPacketOut: return "OFPT_PACKET_OUT";
    case Type::kFlowMod: return "OFPT_FLOW_MOD";
    case Type::kGroupMod: return "OFPT_GROUP_MOD";
    case Type::kPortMod: return "OFPT_PORT_MOD";
    case Type::kTableMod: return "OFPT_TABLE_MOD";
    case Type::kMultipartRequest: return "OFPT_MULTIPART_REQUEST";
    case Type::kMultipartReply: return "OFPT_MULTIPART_REPLY";
    case Type::kBarrierRequest: return "OFPT_BARRIER_REQUEST";
    case Type::kBarrierReply: return "OFPT_BARRIER_REPLY";
    case Type::kQueueGetConfigRequest: return "OFPT_QUEUE_GET_CONFIG_REQUEST";
    case Type::kQueueGetConfigReply: return "OFPT_QUEUE_GET_CONFIG_REPLY";
    case Type::kRoleRequest: return "OFPT_ROLE_REQUEST";
    case Type::kRoleReply: return "OFPT_ROLE_REPLY";
    case Type::kGetAsyncRequest: return "OFPT_GET_ASYNC_REQUEST";
    case Type::kGetAsyncReply: return "OFPT_GET_ASYNC_REPLY";
    case Type::kSetAsync: return "OFPT_SET_ASYNC";
    case Type::kMeterMod: return "OFPT_METER_MOD";
  }
  return "OFPT_UNKNOWN";
}

ErrorMsg error_reply(const Error& e, std::span<const uint8_t> offending) {
  // 7.4.4: data holds at least the first 64 bytes of the failed request.
  constexpr size_t kEcho = 64;
  ErrorMsg m;
  m.type = e.ofp_type;
  m.code = e.ofp_code;
  const auto n = std::min(offending.size(), kEcho);
  m.data.assign(offending.begin(), offending.begin() + static_cast<std::ptrdiff_t>(n));
  return m;
}

Result<Header> decode_header(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  Header h;
  uint8_t type = 0;
  if (!r.u8(h.version) || !r.u8(type) || !r.u16(h.length) || !r.u32(h.xid)) {
    return wire::truncated("header: fewer than 8 bytes");
  }
  h.type = static_cast<Type>(type);
  if (h.length < kHeaderLen) return wire::bad_len("header: length < 8");
  return h;
}

Result<Message> decode(std::span<const uint8_t> bytes) {
  auto hr = decode_header(bytes);
  if (!hr) return Unexpected<Error>{hr.error()};
  const Header& h = *hr;
  if (bytes.size() < h.length) return wire::truncated("message: fewer bytes than header length");
  if (bytes.size() > h.length) return wire::bad_len("message: more bytes than header length");
  // A HELLO of any version decodes, so the session can negotiate (7.5.1); nothing else does.
  if (h.version != kVersion && h.type != Type::kHello) {
    return wire::fail(Errc::kBadVersion, err::kBadRequest, err::kBrcBadVersion, "header: version is not 1.3");
  }
  Message msg;
  msg.xid = h.xid;
  const auto body = bytes.subspan(kHeaderLen);
  Result<void> r;
  switch (h.type) {
    case Type::kHello: r = detail::decode_hello(body, msg.body); break;
    case Type::kError: r = detail::decode_error(body, msg.body); break;
    case Type::kEchoRequest:
    case Type::kEchoReply: r = detail::decode_echo(h.type, body, msg.body); break;
    case Type::kFeaturesRequest:
    case Type::kGetConfigRequest:
    case Type::kBarrierRequest:
    case Type::kBarrierReply: r = detail::decode_empty(h.type, body, msg.body); break;
    case Type::kFeaturesReply: r = detail::decode_features_reply(body, msg.body); break;
    case Type::kGetConfigReply:
    case Type::kSetConfig: r = detail::decode_switch_config(h.type, body, msg.body); break;
    case Type::kRoleRequest:
    case Type::kRoleReply: r = detail::decode_role(h.type, body, msg.body); break;
    case Type::kPacketIn: r = detail::decode_packet_in(body, msg.body); break;
    case Type::kFlowRemoved: r = detail::decode_flow_removed(body, msg.body); break;
    case Type::kPortStatus: r = detail::decode_port_status(body, msg.body); break;
    case Type::kPacketOut: r = detail::decode_packet_out(body, msg.body); break;
    case Type::kFlowMod: r = detail::decode_flow_mod(body, msg.body); break;
    case Type::kGroupMod: r = detail::decode_group_mod(body, msg.body); break;
    case Type::kMeterMod: r = detail::decode_meter_mod(body, msg.body); break;
    case Type::kMultipartRequest: r = detail::decode_multipart_request(body, msg.body); break;
    case Type::kMultipartReply: r = detail::decode_multipart_reply(body, msg.body); break;
    case Type::kExperimenter:
      return wire::fail(Errc::kBadType, err::kBadRequest, err::kBrcBadExperimenter, "experimenter messages unsupported");
    default:
      return wire::fail(Errc::kBadType, err::kBadRequest, err::kBrcBadType, "message type unsupported");
  }
  if (!r) return Unexpected<Error>{r.error()};
  return msg;
}

Result<void> encode(const Message& msg, Bytes& out) {
  const size_t start = out.size();
  Writer w(out);
  w.u8(kVersion);
  w.u8(static_cast<uint8_t>(type_of(msg.body)));
  w.u16(0);  // length, patched below
  w.u32(msg.xid);
  Result<void> r = std::visit([&w](const auto& b) { return detail::encode_body(b, w); }, msg.body);
  if (!r) {
    out.resize(start);
    return r;
  }
  const size_t len = out.size() - start;
  if (len > kMaxMessageLen) {
    out.resize(start);
    return wire::fail(Errc::kTooLong, err::kBadRequest, err::kBrcBadLen, "encode: message exceeds 65535 bytes");
  }
  w.patch16(start + 2, len);
  return {};
}

}  // namespace sdn::ofp
