// Action and instruction parsing in ovs-actions(7) syntax. Bare actions form the
// Apply-Actions instruction; meter:, clear_actions, write_actions(...) and goto_table: are the
// other OpenFlow 1.3 instructions (7.2.4). Like ovs-ofctl with OpenFlow 1.1+, actions must be
// consistent with the match (7.2.5 set-field prerequisites, OFPBAC_MATCH_INCONSISTENT).
#include <cctype>

#include <fmt/format.h>

#include "northbound/flow_syntax_internal.hpp"

namespace sdn::northbound {
namespace {

using detail::info;
using detail::Proto;
using ofp::OxmField;

FieldError action_error(std::string message) { return FieldError{"actions", std::move(message)}; }

constexpr uint32_t kGroupMax = 0xffffff00;  // OFPG_MAX (7.3.4.2)
constexpr uint32_t kMeterMax = 0xffff0000;  // OFPM_MAX (7.3.4.4)
constexpr uint8_t kTableMax = 0xfe;         // OFPTT_MAX (7.2.4)

// Instruction execution order (5.9); ovs-ofctl requires the text to follow it.
enum class Stage : uint8_t { kMeter, kApply, kClear, kWrite, kGoto };
const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kMeter: return "meter";
    case Stage::kApply: return "actions";
    case Stage::kClear: return "clear_actions";
    case Stage::kWrite: return "write_actions";
    case Stage::kGoto: return "goto_table";
  }
  return "?";
}

struct Ctx {
  Proto proto;
  int tags = 0;             // 802.1Q tags known present (match, push_vlan, pop_vlan so far)
  bool action_set = false;  // inside write_actions: pop_vlan is not checked (ovs does not)
};

// Splits "name:arg" / "name(arg)" / "name". `name` comes back lower-case (ovs accepts any case).
struct Piece {
  std::string name;
  std::string_view arg;
  bool has_arg = false;
};
Piece split_piece(std::string_view text) {
  Piece p;
  const size_t pos = text.find_first_of(":(");
  p.name = detail::lower(text.substr(0, pos));
  if (pos != std::string_view::npos) {
    p.has_arg = true;
    p.arg = text.substr(pos + 1);
    if (text[pos] == '(') {
      if (p.arg.empty() || p.arg.back() != ')') p.arg = std::string_view{};  // reported by the caller
      else p.arg.remove_suffix(1);
    }
  }
  return p;
}

std::optional<std::string> number(std::string_view s, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (auto e = detail::parse_uint(s, hi, out)) return e;
  if (out < lo) return fmt::format("out of range ({}..{})", lo, hi);
  return std::nullopt;
}

ofp::ActionOutput output_to(uint32_t port, uint16_t max_len) {
  // ovs-ofctl sends max_len 0 except to the controller, where it means "bytes to send".
  return ofp::ActionOutput{port, port == ofp::port::kController ? max_len : uint16_t{0}};
}

Expected<void, FieldError> no_arg(std::string_view text, const Piece& p) {
  if (p.has_arg) return unexpected(action_error(fmt::format("{}: {} takes no argument", text, p.name)));
  return {};
}

// Appends set_field `f` = `value` after checking the match makes the field exist.
Expected<void, FieldError> push_set(std::string_view text, OxmField f, uint64_t value, Ctx& c, ofp::ActionList& out) {
  if (auto need = detail::missing_prereq(f, c.proto)) {
    return unexpected(action_error(fmt::format("{}: needs {} in the match ({})", text, need->what, need->hint)));
  }
  if ((f == OxmField::kVlanVid || f == OxmField::kVlanPcp) && c.tags == 0) {
    return unexpected(action_error(fmt::format("{}: needs a VLAN tag (match dl_vlan=N, or push_vlan first)", text)));
  }
  out.push_back(ofp::ActionSetField{{f, value, std::nullopt}});
  return {};
}

std::optional<OxmField> tp_field(const Proto& p, bool src) {
  if (!p.ip_any()) return std::nullopt;
  switch (p.ip_proto.value_or(0)) {
    case detail::kProtoTcp: return src ? OxmField::kTcpSrc : OxmField::kTcpDst;
    case detail::kProtoUdp: return src ? OxmField::kUdpSrc : OxmField::kUdpDst;
    case detail::kProtoSctp: return src ? OxmField::kSctpSrc : OxmField::kSctpDst;
    default: return std::nullopt;
  }
}

Expected<void, FieldError> set_field(std::string_view text, std::string_view arg, Ctx& c, ofp::ActionList& out) {
  const size_t arrow = arg.rfind("->");
  if (arrow == std::string_view::npos) {
    return unexpected(action_error(fmt::format("{}: expected set_field:VALUE->FIELD", text)));
  }
  const std::string_view value = arg.substr(0, arrow);
  const std::string_view name = arg.substr(arrow + 2);
  if (name == "tp_src" || name == "tp_dst") {
    if (!tp_field(c.proto, name == "tp_src")) {
      return unexpected(action_error(fmt::format("{}: needs tcp, udp or sctp in the match (nw_proto=6/17/132)", text)));
    }
  }
  if (name == "nw_tos") {
    return unexpected(action_error(fmt::format("{}: nw_tos is not an OXM field; use mod_nw_tos or ->ip_dscp", text)));
  }
  const auto f = detail::set_field_target(name, c.proto);
  if (!f || *f == OxmField::kInPhyPort) {
    return unexpected(action_error(fmt::format("{}: unknown field '{}'", text, name)));
  }
  if (!info(*f).writable) return unexpected(action_error(fmt::format("{}: {} is read-only", text, name)));
  if (value.find('/') != std::string_view::npos) {
    return unexpected(action_error(fmt::format("{}: a masked set_field is not OpenFlow 1.3", text)));
  }
  uint64_t v = 0;
  std::optional<uint64_t> mask;
  if (auto e = detail::parse_field_value(*f, value, v, mask)) {
    return unexpected(action_error(fmt::format("{}: {}", text, *e)));
  }
  if (*f == OxmField::kVlanVid && (v & ofp::kOfpVidPresent) == 0) {
    // 7.2.3.8: a set-field on VLAN_VID carries the OFPVID_PRESENT bit; ovs-ofctl writes the
    // raw OXM value, so "5" would be refused by the switch (OFPBAC_BAD_SET_ARGUMENT).
    return unexpected(action_error(fmt::format(
        "{}: the value must include OFPVID_PRESENT (4096), e.g. {} for VLAN {} (or use mod_vlan_vid:{})", text,
        v | ofp::kOfpVidPresent, v, v)));
  }
  return push_set(text, *f, v, c, out);
}

// mod_*:VALUE, the OpenFlow 1.0 names for set_field.
Expected<bool, FieldError> mod_action(std::string_view text, const Piece& p, Ctx& c, ofp::ActionList& out) {
  struct Mod {
    std::string_view name;
    OxmField field;
  };
  static constexpr Mod kMods[] = {
      {"mod_dl_src", OxmField::kEthSrc},   {"mod_dl_dst", OxmField::kEthDst},  {"mod_nw_src", OxmField::kIpv4Src},
      {"mod_nw_dst", OxmField::kIpv4Dst},  {"mod_nw_ecn", OxmField::kIpEcn},   {"mod_tp_src", OxmField::kTcpSrc},
      {"mod_tp_dst", OxmField::kTcpDst},   {"mod_nw_tos", OxmField::kIpDscp},  {"mod_vlan_vid", OxmField::kVlanVid},
      {"mod_vlan_pcp", OxmField::kVlanPcp},
  };
  const Mod* mod = nullptr;
  for (const auto& m : kMods)
    if (m.name == p.name) mod = &m;
  if (mod == nullptr) return false;
  if (!p.has_arg || p.arg.empty()) return unexpected(action_error(fmt::format("{}: missing value", text)));
  if (p.arg.find('/') != std::string_view::npos) {
    return unexpected(action_error(fmt::format("{}: {} takes no mask", text, p.name)));
  }
  OxmField f = mod->field;
  uint64_t v = 0;
  std::optional<std::string> e;
  if (p.name == "mod_tp_src" || p.name == "mod_tp_dst") {
    const auto tf = tp_field(c.proto, p.name == "mod_tp_src");
    if (!tf) return unexpected(action_error(fmt::format("{}: needs tcp, udp or sctp in the match (nw_proto=6/17/132)", text)));
    f = *tf;
    e = detail::parse_uint(p.arg, 0xffff, v);
  } else if (p.name == "mod_nw_tos") {
    e = detail::parse_uint(p.arg, 255, v);
    if (!e && v % 4 != 0) e = "must be a multiple of 4 (it sets the DSCP bits)";
    v >>= 2;
  } else if (p.name == "mod_vlan_vid") {
    e = detail::parse_uint(p.arg, 4095, v);
    v |= ofp::kOfpVidPresent;
  } else {
    std::optional<uint64_t> mask;
    e = detail::parse_field_value(f, p.arg, v, mask);
  }
  if (e) return unexpected(action_error(fmt::format("{}: {}", text, *e)));
  if ((f == OxmField::kVlanVid || f == OxmField::kVlanPcp) && c.tags == 0) {
    // As ovs-ofctl does for OpenFlow 1.1+: without a known tag, mod_vlan_* pushes one first.
    out.push_back(ofp::ActionPushVlan{0x8100});
    c.tags = 1;
  }
  if (auto r = push_set(text, f, v, c, out); !r) return unexpected(r.error());
  return true;
}

// One action (not an instruction) into `out`.
Expected<void, FieldError> action(std::string_view text, Ctx& c, ofp::ActionList& out) {
  const Piece p = split_piece(text);
  uint32_t port = 0;
  if (!p.has_arg && (p.name == "in_port" || p.name == "normal" || p.name == "flood" || p.name == "all" ||
                     p.name == "local" || p.name == "controller" || (!p.name.empty() && std::isdigit(static_cast<unsigned char>(p.name[0]))))) {
    if (auto e = detail::parse_port(text, port)) return unexpected(action_error(fmt::format("{}: {}", text, *e)));
    out.push_back(output_to(port, ofp::kControllerMaxLenNoBuffer));
    return {};
  }
  if (p.name == "output") {
    if (!p.has_arg || p.arg.empty()) return unexpected(action_error(fmt::format("{}: missing port", text)));
    if (auto e = detail::parse_port(p.arg, port)) return unexpected(action_error(fmt::format("{}: {}", text, *e)));
    if (port == ofp::port::kAny || port == ofp::port::kTable) {
      return unexpected(action_error(fmt::format("{}: not a valid output port in a flow", text)));
    }
    out.push_back(output_to(port, ofp::kControllerMaxLenNoBuffer));
    return {};
  }
  if (p.name == "controller") {
    uint64_t len = 0;
    if (auto e = number(p.arg, 0, 0xffff, len)) {
      return unexpected(action_error(fmt::format("{}: max_len: {}", text, *e)));
    }
    out.push_back(ofp::ActionOutput{ofp::port::kController, static_cast<uint16_t>(len)});
    return {};
  }
  if (p.name == "push_vlan") {
    uint64_t type = 0;
    if (detail::parse_uint(p.arg, 0xffff, type) || (type != 0x8100 && type != 0x88a8)) {
      return unexpected(action_error(fmt::format("{}: the ethertype must be 0x8100 or 0x88a8", text)));
    }
    out.push_back(ofp::ActionPushVlan{static_cast<uint16_t>(type)});
    ++c.tags;
    return {};
  }
  if (p.name == "pop_vlan" || p.name == "strip_vlan") {
    if (auto r = no_arg(text, p); !r) return r;
    if (c.tags == 0 && !c.action_set) {
      return unexpected(action_error(fmt::format("{}: needs a VLAN tag (match dl_vlan=N, or push_vlan first)", text)));
    }
    out.push_back(ofp::ActionPopVlan{});
    if (c.tags > 0) --c.tags;
    return {};
  }
  if (p.name == "dec_ttl") {
    if (auto r = no_arg(text, p); !r) return r;
    if (!c.proto.ip_any()) return unexpected(action_error(fmt::format("{}: needs ip in the match (dl_type=0x0800)", text)));
    out.push_back(ofp::ActionDecNwTtl{});
    return {};
  }
  if (p.name == "group") {
    uint64_t g = 0;
    if (auto e = number(p.arg, 0, kGroupMax, g)) return unexpected(action_error(fmt::format("{}: group id: {}", text, *e)));
    out.push_back(ofp::ActionGroup{static_cast<uint32_t>(g)});
    return {};
  }
  if (p.name == "set_field") return set_field(text, p.arg, c, out);
  auto mod = mod_action(text, p, c, out);
  if (!mod) return unexpected(mod.error());
  if (*mod) return {};
  if (p.name == "drop") return unexpected(action_error(fmt::format("{}: drop must be the only action", text)));
  if (p.name == "meter" || p.name == "clear_actions" || p.name == "write_actions" || p.name == "goto_table" ||
      p.name == "apply_actions") {
    return unexpected(action_error(fmt::format("{}: an instruction is not allowed inside write_actions", text)));
  }
  return unexpected(action_error(fmt::format("{}: unknown or unsupported action '{}'", text, p.name)));
}

}  // namespace

Expected<ofp::InstructionList, FieldError> parse_actions(std::string_view input, const ofp::Match& match) {
  const auto pieces = detail::split_list(input);
  if (pieces.empty()) return unexpected(action_error("no actions (write \"drop\" to drop)"));
  if (pieces.size() == 1 && detail::lower(pieces[0]) == "drop") return ofp::InstructionList{};

  Ctx ctx;
  ctx.proto = Proto::of(match);
  ctx.tags = detail::has_vlan_tag(match) ? 1 : 0;

  ofp::InstructionList out;
  ofp::ActionList apply;
  std::optional<Stage> last;
  std::optional<size_t> apply_at;  // where the Apply-Actions instruction goes
  for (auto text : pieces) {
    const Piece p = split_piece(text);
    Stage stage = Stage::kApply;
    if (p.name == "meter") stage = Stage::kMeter;
    else if (p.name == "clear_actions") stage = Stage::kClear;
    else if (p.name == "write_actions") stage = Stage::kWrite;
    else if (p.name == "goto_table") stage = Stage::kGoto;
    else if (p.name == "apply_actions") {
      return unexpected(action_error(fmt::format("{}: apply_actions is the default instruction; list the actions bare", text)));
    } else if (p.name == "drop") {
      return unexpected(action_error(fmt::format("{}: drop must be the only action", text)));
    }
    if (last && stage < *last) {
      return unexpected(action_error(fmt::format(
          "{}: {} must come before {} (OpenFlow 1.3 order: meter, actions, clear_actions, write_actions, goto_table)",
          text, stage_name(stage), stage_name(*last))));
    }
    if (last && stage == *last && stage != Stage::kApply) {
      return unexpected(action_error(fmt::format("{}: duplicate {} instruction", text, stage_name(stage))));
    }
    last = stage;
    switch (stage) {
      case Stage::kMeter: {
        uint64_t id = 0;
        if (auto e = number(p.arg, 1, kMeterMax, id)) return unexpected(action_error(fmt::format("{}: meter id: {}", text, *e)));
        out.push_back(ofp::InstrMeter{static_cast<uint32_t>(id)});
        break;
      }
      case Stage::kApply:
        if (!apply_at) apply_at = out.size();
        if (auto r = action(text, ctx, apply); !r) return unexpected(r.error());
        break;
      case Stage::kClear:
        if (auto r = no_arg(text, p); !r) return unexpected(r.error());
        out.push_back(ofp::InstrClearActions{});
        break;
      case Stage::kWrite: {
        if (text.find('(') == std::string_view::npos || text.back() != ')') {
          return unexpected(action_error(fmt::format("{}: expected write_actions(ACTION,...)", text)));
        }
        const std::string_view inner = text.substr(text.find('(') + 1, text.size() - text.find('(') - 2);
        Ctx set_ctx = ctx;
        set_ctx.action_set = true;
        ofp::InstrWriteActions w;
        for (auto a : detail::split_list(inner)) {
          if (auto r = action(a, set_ctx, w.actions); !r) return unexpected(r.error());
        }
        out.push_back(std::move(w));
        break;
      }
      case Stage::kGoto: {
        uint64_t t = 0;
        if (auto e = number(p.arg, 0, kTableMax, t)) return unexpected(action_error(fmt::format("{}: table: {}", text, *e)));
        out.push_back(ofp::InstrGotoTable{static_cast<uint8_t>(t)});
        break;
      }
    }
  }
  if (apply_at) out.insert(out.begin() + static_cast<std::ptrdiff_t>(*apply_at), ofp::InstrApplyActions{std::move(apply)});
  return out;
}

}  // namespace sdn::northbound
