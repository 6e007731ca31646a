// OXM match, action and instruction codecs (OpenFlow 1.3.5 sections 7.2.3, 7.2.4, 7.2.5).
// Every TLV length is checked against its type's fixed size and against the bytes present.
#include <array>

#include "ofp/codec_internal.hpp"

namespace sdn::ofp::detail {
namespace {

using wire::Reader;
using wire::Writer;

constexpr uint16_t kOxmClassBasic = 0x8000;  // OFPXMC_OPENFLOW_BASIC (7.2.3.3)
constexpr uint16_t kMatchTypeOxm = 1;        // OFPMT_OXM (7.2.3.1)
constexpr uint8_t kOxmFieldCount = 26;       // we model fields 0..25 (in_port .. arp_tha)

struct OxmInfo {
  uint8_t width;  // value bytes (7.2.3.7, table 12)
  bool maskable;
};
constexpr std::array<OxmInfo, kOxmFieldCount> kOxmInfo{{
    {4, false}, {4, false}, {8, true},  {6, true},  {6, true},  {2, false}, {2, true},
    {1, false}, {1, false}, {1, false}, {1, false}, {4, true},  {4, true},  {2, false},
    {2, false}, {2, false}, {2, false}, {2, false}, {2, false}, {1, false}, {1, false},
    {2, false}, {4, true},  {4, true},  {6, true},  {6, true},
}};

uint64_t width_mask(uint8_t width) { return width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1; }

Unexpected<Error> match_err(Errc c, uint16_t code, const char* detail) {
  return wire::fail(c, err::kBadMatch, code, detail);
}
Unexpected<Error> action_err(Errc c, uint16_t code, const char* detail) {
  return wire::fail(c, err::kBadAction, code, detail);
}
Unexpected<Error> inst_err(Errc c, uint16_t code, const char* detail) {
  return wire::fail(c, err::kBadInstruction, code, detail);
}

// Checks that a domain OXM can be written: known field, mask only where maskable, value and
// mask within the field's width.
Result<void> check_oxm(const OxmTlv& t) {
  const auto f = static_cast<uint8_t>(t.field);
  if (f >= kOxmFieldCount) return wire::bad_value("oxm: field not supported by the codec");
  const OxmInfo& info = kOxmInfo[f];
  if (t.mask && !info.maskable) return wire::bad_value("oxm: mask on a non-maskable field");
  const uint64_t m = width_mask(info.width);
  if ((t.value & ~m) != 0) return wire::bad_value("oxm: value wider than the field");
  if (t.mask && (*t.mask & ~m) != 0) return wire::bad_value("oxm: mask wider than the field");
  return {};
}

void put_oxm(const OxmTlv& t, Writer& w) {
  const auto f = static_cast<uint8_t>(t.field);
  const uint8_t width = kOxmInfo[f].width;
  w.u16(kOxmClassBasic);
  w.u8(static_cast<uint8_t>((f << 1) | (t.mask ? 1 : 0)));
  w.u8(static_cast<uint8_t>(t.mask ? 2 * width : width));
  w.uint_n(t.value, width);
  if (t.mask) w.uint_n(*t.mask, width);
}

}  // namespace

// ---- match (7.2.3) ------------------------------------------------------------------------

Result<void> decode_match(Reader& r, OxmPolicy policy, Match& out) {
  uint16_t type = 0;
  uint16_t len = 0;
  if (!r.peek_u16(0, type) || !r.peek_u16(2, len)) {
    return match_err(Errc::kTruncated, err::kBmcBadLen, "match: header truncated");
  }
  if (type != kMatchTypeOxm) return match_err(Errc::kBadMatch, err::kBmcBadType, "match: type is not OFPMT_OXM");
  if (len < 4) return match_err(Errc::kBadLength, err::kBmcBadLen, "match: length < 4");
  // ofp_match.length excludes the padding to 8 that follows it (7.2.3.1).
  std::span<const uint8_t> whole;
  if (!r.try_pull(wire::round_up8(len), whole)) {
    return match_err(Errc::kTruncated, err::kBmcBadLen, "match: length (with padding) exceeds message");
  }
  Reader m(whole.subspan(4, len - 4));
  out.fields.clear();
  while (!m.empty()) {
    uint16_t cls = 0;
    uint8_t fh = 0;
    uint8_t plen = 0;
    if (!m.u16(cls) || !m.u8(fh) || !m.u8(plen)) {
      return match_err(Errc::kTruncated, err::kBmcBadLen, "oxm: header truncated");
    }
    std::span<const uint8_t> payload;
    if (!m.try_pull(plen, payload)) return match_err(Errc::kTruncated, err::kBmcBadLen, "oxm: length exceeds match");
    const uint8_t field = fh >> 1;
    const bool hasmask = (fh & 1) != 0;
    if (cls != kOxmClassBasic || field >= kOxmFieldCount) {
      if (policy == OxmPolicy::kSkipUnknown) continue;
      return match_err(Errc::kBadMatch, err::kBmcBadField, "oxm: unsupported class or field");
    }
    const OxmInfo& info = kOxmInfo[field];
    if (hasmask && !info.maskable) return match_err(Errc::kBadMatch, err::kBmcBadMask, "oxm: mask on a non-maskable field");
    if (plen != (hasmask ? 2 * info.width : info.width)) {
      return match_err(Errc::kBadLength, err::kBmcBadLen, "oxm: length does not fit the field type");
    }
    OxmTlv t;
    t.field = static_cast<OxmField>(field);
    Reader p(payload);
    (void)p.uint_n(info.width, t.value);  // cannot fail: plen checked above
    if (hasmask) {
      uint64_t mask = 0;
      (void)p.uint_n(info.width, mask);
      t.mask = mask;
    }
    if (policy == OxmPolicy::kStrict && out.find(t.field) != nullptr) {
      return match_err(Errc::kBadMatch, err::kBmcDupField, "oxm: duplicate field");
    }
    out.fields.push_back(t);
  }
  return {};
}

Result<void> encode_match(const Match& m, Writer& w) {
  for (const auto& t : m.fields) SDN_OFP_TRY(check_oxm(t));
  const size_t start = w.pos();
  w.u16(kMatchTypeOxm);
  w.u16(0);  // length, patched below
  for (const auto& t : m.fields) put_oxm(t, w);
  w.patch16(start + 2, w.pos() - start);
  w.pad8_from(start);
  return {};
}

// ---- actions (7.2.5) ----------------------------------------------------------------------

namespace {
enum : uint16_t {
  kAtOutput = 0,
  kAtPushVlan = 17,
  kAtPopVlan = 18,
  kAtGroup = 22,
  kAtDecNwTtl = 24,
  kAtSetField = 25,
};

Result<void> decode_set_field(Reader& a, uint16_t len, ActionList& out) {
  // ofp_action_set_field: type, len, then one OXM TLV, padded to 8 (7.2.5).
  uint16_t cls = 0;
  uint8_t fh = 0;
  uint8_t plen = 0;
  if (!a.u16(cls) || !a.u8(fh) || !a.u8(plen)) {
    return action_err(Errc::kBadLength, err::kBacBadSetLen, "set_field: no room for the OXM header");
  }
  const uint8_t field = fh >> 1;
  if (cls != kOxmClassBasic || field >= kOxmFieldCount) {
    return action_err(Errc::kBadAction, err::kBacBadSetType, "set_field: unsupported field");
  }
  if ((fh & 1) != 0) return action_err(Errc::kBadAction, err::kBacBadSetArgument, "set_field: masked (not allowed in 1.3)");
  const uint8_t width = kOxmInfo[field].width;
  if (plen != width || len != wire::round_up8(4 + 4 + size_t{width})) {
    return action_err(Errc::kBadLength, err::kBacBadSetLen, "set_field: length does not fit the field");
  }
  ActionSetField sf;
  sf.field.field = static_cast<OxmField>(field);
  (void)a.uint_n(width, sf.field.value);  // cannot fail: len checked above
  out.push_back(sf);
  return {};
}
}  // namespace

Result<void> decode_actions(std::span<const uint8_t> b, ActionList& out) {
  out.clear();
  Reader r(b);
  while (!r.empty()) {
    uint16_t type = 0;
    uint16_t len = 0;
    if (!r.peek_u16(0, type) || !r.peek_u16(2, len)) {
      return action_err(Errc::kTruncated, err::kBacBadLen, "action: header truncated");
    }
    // Every action is a multiple of 8 bytes and at least its 8-byte fixed part (7.2.5).
    if (len < 8 || len % 8 != 0) return action_err(Errc::kBadLength, err::kBacBadLen, "action: length < 8 or not a multiple of 8");
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return action_err(Errc::kTruncated, err::kBacBadLen, "action: length exceeds list");
    Reader a(one);
    (void)a.skip(4);
    switch (type) {
      case kAtOutput: {
        if (len != 16) return action_err(Errc::kBadLength, err::kBacBadLen, "output: length != 16");
        ActionOutput o;
        (void)a.u32(o.port);
        (void)a.u16(o.max_len);
        out.push_back(o);
        break;
      }
      case kAtPushVlan: {
        if (len != 8) return action_err(Errc::kBadLength, err::kBacBadLen, "push_vlan: length != 8");
        ActionPushVlan p;
        (void)a.u16(p.ethertype);
        out.push_back(p);
        break;
      }
      case kAtPopVlan:
        if (len != 8) return action_err(Errc::kBadLength, err::kBacBadLen, "pop_vlan: length != 8");
        out.push_back(ActionPopVlan{});
        break;
      case kAtGroup: {
        if (len != 8) return action_err(Errc::kBadLength, err::kBacBadLen, "group: length != 8");
        ActionGroup g;
        (void)a.u32(g.group_id);
        out.push_back(g);
        break;
      }
      case kAtDecNwTtl:
        if (len != 8) return action_err(Errc::kBadLength, err::kBacBadLen, "dec_nw_ttl: length != 8");
        out.push_back(ActionDecNwTtl{});
        break;
      case kAtSetField:
        SDN_OFP_TRY(decode_set_field(a, len, out));
        break;
      default:
        return action_err(Errc::kBadAction, err::kBacBadType, "action: unsupported type");
    }
  }
  return {};
}

namespace {
struct ActionEncoder {
  Writer& w;
  Result<void> operator()(const ActionOutput& o) {
    w.u16(kAtOutput);
    w.u16(16);
    w.u32(o.port);
    w.u16(o.max_len);
    w.zeros(6);
    return {};
  }
  Result<void> operator()(const ActionPushVlan& p) {
    w.u16(kAtPushVlan);
    w.u16(8);
    w.u16(p.ethertype);
    w.zeros(2);
    return {};
  }
  Result<void> operator()(const ActionPopVlan&) {
    w.u16(kAtPopVlan);
    w.u16(8);
    w.zeros(4);
    return {};
  }
  Result<void> operator()(const ActionGroup& g) {
    w.u16(kAtGroup);
    w.u16(8);
    w.u32(g.group_id);
    return {};
  }
  Result<void> operator()(const ActionDecNwTtl&) {
    w.u16(kAtDecNwTtl);
    w.u16(8);
    w.zeros(4);
    return {};
  }
  Result<void> operator()(const ActionSetField& s) {
    SDN_OFP_TRY(check_oxm(s.field));
    if (s.field.mask) return wire::bad_value("set_field: masked set_field is not OpenFlow 1.3");
    const size_t start = w.pos();
    w.u16(kAtSetField);
    w.u16(0);
    put_oxm(s.field, w);
    w.pad8_from(start);
    w.patch16(start + 2, w.pos() - start);
    return {};
  }
};
}  // namespace

Result<void> encode_actions(const ActionList& actions, Writer& w) {
  for (const auto& a : actions) SDN_OFP_TRY(std::visit(ActionEncoder{w}, a));
  return {};
}

// ---- instructions (7.2.4) -----------------------------------------------------------------

namespace {
enum : uint16_t {
  kItGotoTable = 1,
  kItWriteActions = 3,
  kItApplyActions = 4,
  kItClearActions = 5,
  kItMeter = 6,
};
}  // namespace

Result<void> decode_instructions(std::span<const uint8_t> b, InstructionList& out) {
  out.clear();
  Reader r(b);
  while (!r.empty()) {
    uint16_t type = 0;
    uint16_t len = 0;
    if (!r.peek_u16(0, type) || !r.peek_u16(2, len)) {
      return inst_err(Errc::kTruncated, err::kBicBadLen, "instruction: header truncated");
    }
    if (len < 8 || len % 8 != 0) {
      return inst_err(Errc::kBadLength, err::kBicBadLen, "instruction: length < 8 or not a multiple of 8");
    }
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return inst_err(Errc::kTruncated, err::kBicBadLen, "instruction: length exceeds list");
    Reader in(one);
    (void)in.skip(4);
    switch (type) {
      case kItGotoTable: {
        if (len != 8) return inst_err(Errc::kBadLength, err::kBicBadLen, "goto_table: length != 8");
        InstrGotoTable g;
        (void)in.u8(g.table_id);
        out.push_back(g);
        break;
      }
      case kItWriteActions:
      case kItApplyActions: {
        // ofp_instruction_actions: type, len, pad[4], then actions (7.2.4).
        ActionList actions;
        SDN_OFP_TRY(decode_actions(one.subspan(8), actions));
        if (type == kItWriteActions) {
          out.push_back(InstrWriteActions{std::move(actions)});
        } else {
          out.push_back(InstrApplyActions{std::move(actions)});
        }
        break;
      }
      case kItClearActions:
        if (len != 8) return inst_err(Errc::kBadLength, err::kBicBadLen, "clear_actions: length != 8");
        out.push_back(InstrClearActions{});
        break;
      case kItMeter: {
        if (len != 8) return inst_err(Errc::kBadLength, err::kBicBadLen, "meter: length != 8");
        InstrMeter m;
        (void)in.u32(m.meter_id);
        out.push_back(m);
        break;
      }
      default:
        return inst_err(Errc::kBadInstruction, err::kBicUnknownInst, "instruction: unsupported type");
    }
  }
  return {};
}

namespace {
struct InstructionEncoder {
  Writer& w;
  Result<void> operator()(const InstrGotoTable& g) {
    w.u16(kItGotoTable);
    w.u16(8);
    w.u8(g.table_id);
    w.zeros(3);
    return {};
  }
  Result<void> actions(uint16_t type, const ActionList& list) {
    const size_t start = w.pos();
    w.u16(type);
    w.u16(0);
    w.zeros(4);
    SDN_OFP_TRY(encode_actions(list, w));
    w.patch16(start + 2, w.pos() - start);
    return {};
  }
  Result<void> operator()(const InstrWriteActions& i) { return actions(kItWriteActions, i.actions); }
  Result<void> operator()(const InstrApplyActions& i) { return actions(kItApplyActions, i.actions); }
  Result<void> operator()(const InstrClearActions&) {
    w.u16(kItClearActions);
    w.u16(8);
    w.zeros(4);
    return {};
  }
  Result<void> operator()(const InstrMeter& m) {
    w.u16(kItMeter);
    w.u16(8);
    w.u32(m.meter_id);
    return {};
  }
};
}  // namespace

Result<void> encode_instructions(const InstructionList& insts, Writer& w) {
  for (const auto& i : insts) SDN_OFP_TRY(std::visit(InstructionEncoder{w}, i));
  return {};
}

}  // namespace sdn::ofp::detail
