// Symmetric and configuration messages: HELLO (with its version-bitmap element), ERROR, ECHO,
// FEATURES, GET/SET_CONFIG, BARRIER, ROLE (OpenFlow 1.3.5 sections 7.3.1-7.3.3, 7.3.9, 7.4.4,
// 7.5). All but HELLO/ERROR/ECHO are fixed-size: the body length must match exactly.
#include "ofp/codec_internal.hpp"

namespace sdn::ofp::detail {
namespace {

using wire::Reader;
using wire::Writer;

constexpr uint16_t kHelloElemVersionBitmap = 1;  // OFPHET_VERSIONBITMAP (7.5.1)
constexpr size_t kFeaturesReplyBody = 24;        // ofp_switch_features minus header (7.3.1)
constexpr size_t kSwitchConfigBody = 4;          // ofp_switch_config minus header (7.3.2)
constexpr size_t kRoleBody = 16;                 // ofp_role_request minus header (7.3.9)

}  // namespace

// ---- HELLO (7.5.1) ------------------------------------------------------------------------
// Elements are TLVs padded to 8 (the length excludes the padding). Unknown element types are
// skipped, as the spec requires; of the version bitmap we keep the first 32-bit word
// (versions 0..31).
Result<void> decode_hello(std::span<const uint8_t> body, Body& out) {
  Hello& h = out.emplace<Hello>();
  h.version_bitmap = 0;
  bool have_bitmap = false;
  Reader r(body);
  while (!r.empty()) {
    uint16_t type = 0;
    uint16_t len = 0;
    if (!r.peek_u16(0, type) || !r.peek_u16(2, len)) return wire::truncated("hello: element header truncated");
    if (len < 4) return wire::bad_len("hello: element length < 4");
    std::span<const uint8_t> elem;
    if (!r.try_pull(wire::round_up8(len), elem)) {
      return wire::truncated("hello: element length (with padding) exceeds message");
    }
    if (type != kHelloElemVersionBitmap) continue;
    if ((len - 4) % 4 != 0) return wire::bad_len("hello: version bitmap length not 4 + 4n");
    if (len >= 8 && !have_bitmap) {
      Reader e(elem.subspan(4));
      (void)e.u32(h.version_bitmap);
    }
    have_bitmap = true;
  }
  return {};
}

Result<void> encode_body(const Hello& m, Writer& w) {
  if (m.version_bitmap == 0) return {};
  w.u16(kHelloElemVersionBitmap);
  w.u16(8);
  w.u32(m.version_bitmap);
  return {};
}

// ---- ERROR (7.4.4) ------------------------------------------------------------------------
// For OFPET_EXPERIMENTER (0xffff) `code` carries exp_type and `data` starts with the
// experimenter id, so the struct round-trips either layout.
Result<void> decode_error(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  ErrorMsg& e = out.emplace<ErrorMsg>();
  if (!r.u16(e.type) || !r.u16(e.code)) return wire::truncated("error: body shorter than type+code");
  const auto rest = r.rest();
  e.data.assign(rest.begin(), rest.end());
  return {};
}

Result<void> encode_body(const ErrorMsg& m, Writer& w) {
  w.u16(m.type);
  w.u16(m.code);
  w.bytes(m.data);
  return {};
}

// ---- ECHO (7.5.2, 7.5.3) ------------------------------------------------------------------
Result<void> decode_echo(Type t, std::span<const uint8_t> body, Body& out) {
  if (t == Type::kEchoRequest) {
    out.emplace<EchoRequest>().data.assign(body.begin(), body.end());
  } else {
    out.emplace<EchoReply>().data.assign(body.begin(), body.end());
  }
  return {};
}
Result<void> encode_body(const EchoRequest& m, Writer& w) {
  w.bytes(m.data);
  return {};
}
Result<void> encode_body(const EchoReply& m, Writer& w) {
  w.bytes(m.data);
  return {};
}

// ---- header-only messages: FEATURES_REQUEST, GET_CONFIG_REQUEST, BARRIER_* ----------------
Result<void> decode_empty(Type t, std::span<const uint8_t> body, Body& out) {
  if (!body.empty()) return wire::bad_len("header-only message has a body");
  switch (t) {
    case Type::kFeaturesRequest: out.emplace<FeaturesRequest>(); break;
    case Type::kGetConfigRequest: out.emplace<GetConfigRequest>(); break;
    case Type::kBarrierRequest: out.emplace<BarrierRequest>(); break;
    default: out.emplace<BarrierReply>(); break;
  }
  return {};
}
Result<void> encode_body(const FeaturesRequest&, Writer&) { return {}; }
Result<void> encode_body(const GetConfigRequest&, Writer&) { return {}; }
Result<void> encode_body(const BarrierRequest&, Writer&) { return {}; }
Result<void> encode_body(const BarrierReply&, Writer&) { return {}; }

// ---- FEATURES_REPLY (7.3.1) ---------------------------------------------------------------
Result<void> decode_features_reply(std::span<const uint8_t> body, Body& out) {
  if (body.size() < kFeaturesReplyBody) return wire::truncated("features_reply: body < 24");
  if (body.size() > kFeaturesReplyBody) return wire::bad_len("features_reply: body > 24");
  Reader r(body);
  FeaturesReply& f = out.emplace<FeaturesReply>();
  (void)r.u64(f.datapath_id);
  (void)r.u32(f.n_buffers);
  (void)r.u8(f.n_tables);
  (void)r.u8(f.auxiliary_id);
  (void)r.skip(2);
  (void)r.u32(f.capabilities);
  // the last 4 bytes are `reserved`
  return {};
}
Result<void> encode_body(const FeaturesReply& m, Writer& w) {
  w.u64(m.datapath_id);
  w.u32(m.n_buffers);
  w.u8(m.n_tables);
  w.u8(m.auxiliary_id);
  w.zeros(2);
  w.u32(m.capabilities);
  w.u32(0);
  return {};
}

// ---- GET_CONFIG_REPLY / SET_CONFIG (7.3.2) ------------------------------------------------
Result<void> decode_switch_config(Type t, std::span<const uint8_t> body, Body& out) {
  if (body.size() < kSwitchConfigBody) return wire::truncated("switch_config: body < 4");
  if (body.size() > kSwitchConfigBody) return wire::bad_len("switch_config: body > 4");
  Reader r(body);
  SwitchConfig c;
  (void)r.u16(c.flags);
  (void)r.u16(c.miss_send_len);
  if (t == Type::kGetConfigReply) {
    out.emplace<GetConfigReply>().config = c;
  } else {
    out.emplace<SetConfig>().config = c;
  }
  return {};
}
namespace {
void put_config(const SwitchConfig& c, Writer& w) {
  w.u16(c.flags);
  w.u16(c.miss_send_len);
}
}  // namespace
Result<void> encode_body(const GetConfigReply& m, Writer& w) {
  put_config(m.config, w);
  return {};
}
Result<void> encode_body(const SetConfig& m, Writer& w) {
  put_config(m.config, w);
  return {};
}

// ---- ROLE_REQUEST / ROLE_REPLY (7.3.9) ----------------------------------------------------
Result<void> decode_role(Type t, std::span<const uint8_t> body, Body& out) {
  if (body.size() < kRoleBody) return wire::truncated("role: body < 16");
  if (body.size() > kRoleBody) return wire::bad_len("role: body > 16");
  Reader r(body);
  RoleMsg m;
  (void)r.u32(m.role);
  (void)r.skip(4);
  (void)r.u64(m.generation_id);
  if (t == Type::kRoleRequest) {
    out.emplace<RoleRequest>().role = m;
  } else {
    out.emplace<RoleReply>().role = m;
  }
  return {};
}
namespace {
void put_role(const RoleMsg& m, Writer& w) {
  w.u32(m.role);
  w.zeros(4);
  w.u64(m.generation_id);
}
}  // namespace
Result<void> encode_body(const RoleRequest& m, Writer& w) {
  put_role(m.role, w);
  return {};
}
Result<void> encode_body(const RoleReply& m, Writer& w) {
  put_role(m.role, w);
  return {};
}

}  // namespace sdn::ofp::detail
