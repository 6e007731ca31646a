// Match parsing in ovs-fields(7) syntax, and the field table, prerequisite rules and value
// parsers the rest of the flow syntax shares. Prerequisites follow OpenFlow 1.3.5 7.2.3.6
// (table 12); the canonical field order is the one ovs-ofctl encodes, which puts every
// prerequisite before the fields that depend on it.
#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "northbound/flow_syntax_internal.hpp"

namespace sdn::northbound {
namespace detail {

using ofp::OxmField;

namespace {
constexpr uint64_t kMac48 = 0xffffffffffffULL;
constexpr uint64_t kAll64 = ~uint64_t{0};

// Indexed by OxmField (in_port = 0 .. arp_tha = 25). Widths and maskability: table 12.
constexpr std::array<FieldInfo, 26> kFields{{
    // OpenFlow forbids set_field on in_port (OVS answers OFPBAC_BAD_SET_ARGUMENT): read-only.
    {"in_port", "in_port", Kind::kPort, 0xffffffff, false, false, 0},
    {"in_phy_port", "in_phy_port", Kind::kPort, 0xffffffff, false, false, 1},
    {"metadata", "metadata", Kind::kHex, kAll64, true, true, 25},
    {"eth_dst", "eth_dst", Kind::kMac, kMac48, true, true, 3},
    {"eth_src", "eth_src", Kind::kMac, kMac48, true, true, 2},
    {"eth_type", "eth_type", Kind::kHex, 0xffff, false, false, 4},
    {"vlan_vid", "vlan_vid", Kind::kHex, 0x1fff, true, true, 5},
    {"vlan_pcp", "vlan_pcp", Kind::kDec, 7, false, true, 6},
    {"ip_dscp", "ip_dscp", Kind::kDec, 63, false, true, 9},
    {"ip_ecn", "nw_ecn", Kind::kDec, 3, false, true, 10},
    {"ip_proto", "ip_proto", Kind::kDec, 255, false, false, 11},
    {"ipv4_src", "ip_src", Kind::kIpv4, 0xffffffff, true, true, 7},
    {"ipv4_dst", "ip_dst", Kind::kIpv4, 0xffffffff, true, true, 8},
    {"tcp_src", "tcp_src", Kind::kDec, 0xffff, false, true, 12},
    {"tcp_dst", "tcp_dst", Kind::kDec, 0xffff, false, true, 13},
    {"udp_src", "udp_src", Kind::kDec, 0xffff, false, true, 14},
    {"udp_dst", "udp_dst", Kind::kDec, 0xffff, false, true, 15},
    {"sctp_src", "sctp_src", Kind::kDec, 0xffff, false, true, 16},
    {"sctp_dst", "sctp_dst", Kind::kDec, 0xffff, false, true, 17},
    {"icmpv4_type", "icmp_type", Kind::kDec, 255, false, true, 18},
    {"icmpv4_code", "icmp_code", Kind::kDec, 255, false, true, 19},
    {"arp_op", "arp_op", Kind::kDec, 0xffff, false, true, 20},
    {"arp_spa", "arp_spa", Kind::kIpv4, 0xffffffff, true, true, 21},
    {"arp_tpa", "arp_tpa", Kind::kIpv4, 0xffffffff, true, true, 22},
    {"arp_sha", "arp_sha", Kind::kMac, kMac48, true, true, 23},
    {"arp_tha", "arp_tha", Kind::kMac, kMac48, true, true, 24},
}};

struct Alias {
  std::string_view name;
  OxmField field;
};
// Names that mean one OXM field whatever the context: the OXM names and ovs's aliases.
// nw_src, nw_dst, nw_proto, tp_src, tp_dst, dl_vlan and nw_tos are context-dependent and
// handled by their callers.
constexpr Alias kAliases[] = {
    {"in_port", OxmField::kInPort},       {"metadata", OxmField::kMetadata},
    {"eth_dst", OxmField::kEthDst},       {"dl_dst", OxmField::kEthDst},
    {"eth_src", OxmField::kEthSrc},       {"dl_src", OxmField::kEthSrc},
    {"eth_type", OxmField::kEthType},     {"dl_type", OxmField::kEthType},
    {"vlan_vid", OxmField::kVlanVid},     {"vlan_pcp", OxmField::kVlanPcp},
    {"dl_vlan_pcp", OxmField::kVlanPcp},  {"ip_dscp", OxmField::kIpDscp},
    {"ip_ecn", OxmField::kIpEcn},         {"nw_ecn", OxmField::kIpEcn},
    {"ip_proto", OxmField::kIpProto},     {"ipv4_src", OxmField::kIpv4Src},
    {"ip_src", OxmField::kIpv4Src},       {"ipv4_dst", OxmField::kIpv4Dst},
    {"ip_dst", OxmField::kIpv4Dst},       {"tcp_src", OxmField::kTcpSrc},
    {"tcp_dst", OxmField::kTcpDst},       {"udp_src", OxmField::kUdpSrc},
    {"udp_dst", OxmField::kUdpDst},       {"sctp_src", OxmField::kSctpSrc},
    {"sctp_dst", OxmField::kSctpDst},     {"icmp_type", OxmField::kIcmpv4Type},
    {"icmpv4_type", OxmField::kIcmpv4Type}, {"icmp_code", OxmField::kIcmpv4Code},
    {"icmpv4_code", OxmField::kIcmpv4Code}, {"arp_op", OxmField::kArpOp},
    {"arp_spa", OxmField::kArpSpa},       {"arp_tpa", OxmField::kArpTpa},
    {"arp_sha", OxmField::kArpSha},       {"arp_tha", OxmField::kArpTha},
    {"in_phy_port", OxmField::kInPhyPort},
};

struct PortName {
  std::string_view name;
  uint32_t port;
};
constexpr std::array<PortName, 9> kPortNames{{
    {"in_port", ofp::port::kInPort}, {"table", ofp::port::kTable}, {"normal", ofp::port::kNormal},
    {"flood", ofp::port::kFlood},    {"all", ofp::port::kAll},     {"controller", ofp::port::kController},
    {"local", ofp::port::kLocal},    {"any", ofp::port::kAny},     {"none", ofp::port::kAny},
}};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

const FieldInfo& info(OxmField f) { return kFields[static_cast<uint8_t>(f)]; }
bool known(OxmField f) { return static_cast<uint8_t>(f) < kFields.size(); }

std::optional<OxmField> oxm_by_name(std::string_view name) {
  for (const auto& a : kAliases)
    if (a.name == name) return a.field;
  return std::nullopt;
}

Proto Proto::of(const ofp::Match& m) {
  Proto p;
  if (const auto* t = m.find(OxmField::kEthType); t && !t->mask) p.eth_type = static_cast<uint16_t>(t->value);
  if (const auto* t = m.find(OxmField::kIpProto); t && !t->mask) p.ip_proto = static_cast<uint8_t>(t->value);
  return p;
}

std::optional<Need> missing_prereq(OxmField f, const Proto& p) {
  auto l4 = [&](uint8_t proto, std::string_view what, std::string_view hint) -> std::optional<Need> {
    if (p.ip_any() && p.ip_proto == proto) return std::nullopt;
    return Need{what, hint};
  };
  switch (f) {
    case OxmField::kIpDscp:
    case OxmField::kIpEcn:
    case OxmField::kIpProto:
      if (p.ip_any()) return std::nullopt;
      return Need{"ip", "dl_type=0x0800"};
    case OxmField::kIpv4Src:
    case OxmField::kIpv4Dst:
      if (p.ipv4()) return std::nullopt;
      return Need{"ip", "dl_type=0x0800"};
    case OxmField::kTcpSrc:
    case OxmField::kTcpDst:
      return l4(kProtoTcp, "tcp", "nw_proto=6");
    case OxmField::kUdpSrc:
    case OxmField::kUdpDst:
      return l4(kProtoUdp, "udp", "nw_proto=17");
    case OxmField::kSctpSrc:
    case OxmField::kSctpDst:
      return l4(kProtoSctp, "sctp", "nw_proto=132");
    case OxmField::kIcmpv4Type:
    case OxmField::kIcmpv4Code:
      if (p.ipv4() && p.ip_proto == kProtoIcmp) return std::nullopt;
      return Need{"icmp", "nw_proto=1"};
    case OxmField::kArpOp:
    case OxmField::kArpSpa:
    case OxmField::kArpTpa:
    case OxmField::kArpSha:
    case OxmField::kArpTha:
      if (p.arp()) return std::nullopt;
      return Need{"arp", "dl_type=0x0806"};
    default:
      return std::nullopt;
  }
}

bool has_vlan_tag(const ofp::Match& m) {
  const auto* t = m.find(OxmField::kVlanVid);
  if (t == nullptr) return false;
  const uint64_t mask = t->mask.value_or(0xffff);
  return (t->value & ofp::kOfpVidPresent) != 0 && (mask & ofp::kOfpVidPresent) != 0;
}

ofp::Match canonical(ofp::Match m) {
  for (auto& t : m.fields) {
    if (!known(t.field) || !t.mask) continue;
    const uint64_t max = info(t.field).max;
    if ((*t.mask & max) == max) {
      t.mask.reset();
    } else {
      t.value &= *t.mask;
    }
  }
  std::stable_sort(m.fields.begin(), m.fields.end(), [](const ofp::OxmTlv& a, const ofp::OxmTlv& b) {
    const int ra = known(a.field) ? info(a.field).rank : 100 + static_cast<int>(a.field);
    const int rb = known(b.field) ? info(b.field).rank : 100 + static_cast<int>(b.field);
    return ra < rb;
  });
  return m;
}

// ---- value parsers --------------------------------------------------------------------

std::optional<std::string> parse_uint(std::string_view s, uint64_t max, uint64_t& out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return "not a number";
  uint64_t v = 0;
  for (char c : s) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return "not a number";
    if (v > (kAll64 - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
      return fmt::format("out of range (0..{})", max);
    }
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (v > max) return fmt::format("out of range (0..{})", max);
  out = v;
  return std::nullopt;
}

std::optional<std::string> parse_mac(std::string_view s, uint64_t& out) {
  uint64_t v = 0;
  int groups = 0;
  size_t i = 0;
  while (groups < 6) {
    int digits = 0;
    uint64_t g = 0;
    while (i < s.size() && digits < 2 && std::isxdigit(static_cast<unsigned char>(s[i]))) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
      g = g * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
      ++digits;
      ++i;
    }
    if (digits == 0) break;
    v = (v << 8) | g;
    ++groups;
    if (groups < 6) {
      if (i >= s.size() || s[i] != ':') break;
      ++i;
    }
  }
  if (groups != 6 || i != s.size()) return "not a MAC address (xx:xx:xx:xx:xx:xx)";
  out = v;
  return std::nullopt;
}

std::optional<std::string> parse_ipv4(std::string_view s, uint64_t& out) {
  uint64_t v = 0;
  size_t i = 0;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (i >= s.size() || s[i] != '.') return "not an IPv4 address (a.b.c.d)";
      ++i;
    }
    int digits = 0;
    uint64_t o = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 3) {
      o = o * 10 + static_cast<uint64_t>(s[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0 || o > 255) return "not an IPv4 address (a.b.c.d)";
    v = (v << 8) | o;
  }
  if (i != s.size()) return "not an IPv4 address (a.b.c.d)";
  out = v;
  return std::nullopt;
}

std::optional<std::string> parse_port(std::string_view s, uint32_t& out) {
  const std::string l = lower(s);
  for (const auto& p : kPortNames) {
    if (p.name == l) {
      out = p.port;
      return std::nullopt;
    }
  }
  uint64_t v = 0;
  if (auto e = parse_uint(s, ofp::port::kMax, v)) {
    if (*e == "not a number") return "not a port (a number, or IN_PORT, NORMAL, FLOOD, ALL, CONTROLLER, LOCAL, ANY)";
    return fmt::format("{}; reserved ports go by name (LOCAL, CONTROLLER, ...)", *e);
  }
  out = static_cast<uint32_t>(v);
  return std::nullopt;
}

namespace {
std::optional<std::string> parse_one(const FieldInfo& fi, std::string_view s, uint64_t& out) {
  switch (fi.kind) {
    case Kind::kPort: {
      uint32_t p = 0;
      if (auto e = parse_port(s, p)) return e;
      out = p;
      return std::nullopt;
    }
    case Kind::kMac:
      return parse_mac(s, out);
    case Kind::kIpv4:
      return parse_ipv4(s, out);
    case Kind::kHex:
    case Kind::kDec:
      return parse_uint(s, fi.max, out);
  }
  return "unparseable";
}
}  // namespace

std::optional<std::string> parse_field_value(OxmField f, std::string_view s, uint64_t& value,
                                             std::optional<uint64_t>& mask) {
  const FieldInfo& fi = info(f);
  mask.reset();
  const size_t slash = s.find('/');
  if (auto e = parse_one(fi, s.substr(0, slash), value)) return e;
  if (slash == std::string_view::npos) return std::nullopt;
  if (!fi.maskable) return fmt::format("{} is not maskable in OpenFlow 1.3", fi.oxm_name);
  const std::string_view ms = s.substr(slash + 1);
  uint64_t m = 0;
  if (fi.kind == Kind::kIpv4 && ms.find('.') == std::string_view::npos) {
    uint64_t bits = 0;
    if (parse_uint(ms, 32, bits)) return "bad prefix length (/0../32 or /a.b.c.d)";
    m = bits == 0 ? 0 : (0xffffffffULL << (32 - bits)) & 0xffffffffULL;
  } else if (auto e = parse_one(fi, ms, m)) {
    return fmt::format("mask: {}", *e);
  }
  mask = m;
  return std::nullopt;
}

std::optional<OxmField> set_field_target(std::string_view name, const Proto& p) {
  if (name == "nw_src") return p.arp() ? OxmField::kArpSpa : OxmField::kIpv4Src;
  if (name == "nw_dst") return p.arp() ? OxmField::kArpTpa : OxmField::kIpv4Dst;
  if (name == "nw_proto") return OxmField::kIpProto;
  if (name == "tp_src" || name == "tp_dst") {
    const bool src = name == "tp_src";
    switch (p.ip_proto.value_or(0)) {
      case kProtoUdp: return src ? OxmField::kUdpSrc : OxmField::kUdpDst;
      case kProtoSctp: return src ? OxmField::kSctpSrc : OxmField::kSctpDst;
      default: return src ? OxmField::kTcpSrc : OxmField::kTcpDst;  // prereq check reports non-tcp
    }
  }
  return oxm_by_name(name);
}

std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size();
    const char c = end ? ',' : text[i];
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (end || (depth == 0 && (c == ',' || is_space(c)))) {
      if (i > start) out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace detail

// ---- parse_match ----------------------------------------------------------------------

namespace {

using detail::info;
using detail::Proto;
using ofp::OxmField;

FieldError match_error(std::string message) { return FieldError{"match", std::move(message)}; }

struct ProtoShorthand {
  std::string_view name;
  uint16_t eth_type;
  std::optional<uint8_t> ip_proto;
};
constexpr std::array<ProtoShorthand, 6> kShorthands{{
    {"ip", detail::kEthIpv4, std::nullopt},
    {"icmp", detail::kEthIpv4, detail::kProtoIcmp},
    {"tcp", detail::kEthIpv4, detail::kProtoTcp},
    {"udp", detail::kEthIpv4, detail::kProtoUdp},
    {"sctp", detail::kEthIpv4, detail::kProtoSctp},
    {"arp", detail::kEthArp, std::nullopt},
}};
constexpr std::array<std::string_view, 10> kUnsupportedShorthands{
    "ipv6", "tcp6", "udp6", "sctp6", "icmp6", "rarp", "mpls", "mplsm", "ip6", "nsh"};
// ovs-ofctl flow keywords that are not match fields: in our API they are request fields.
constexpr std::array<std::string_view, 10> kFlowKeywords{
    "priority", "table", "cookie", "idle_timeout", "hard_timeout", "actions",
    "out_port", "out_group", "send_flow_rem", "check_overlap"};

struct Token {
  std::string_view text;  // the whole piece, for messages
  std::string_view key;
  std::string_view value;
  bool has_value = false;
};

// Collects fields, remembering which token set each one (for duplicate messages).
class Builder {
 public:
  Expected<void, FieldError> put(const Token& tok, ofp::OxmTlv t) {
    auto& slot = by_field_[static_cast<uint8_t>(t.field)];
    if (!slot.empty()) {
      return unexpected(match_error(fmt::format("{}: {} is already set by '{}'", tok.text, info(t.field).oxm_name, slot)));
    }
    slot = std::string(tok.text);
    // An all-zero mask matches everything: the field is left out, as ovs-ofctl does.
    if (!(t.mask && (*t.mask & info(t.field).max) == 0)) m_.fields.push_back(t);
    return {};
  }
  const ofp::Match& match() const { return m_; }
  const std::string& source(OxmField f) const { return by_field_[static_cast<uint8_t>(f)]; }
  Proto proto() const { return Proto::of(m_); }

 private:
  std::array<std::string, 26> by_field_;
  ofp::Match m_;
};

Expected<ofp::OxmTlv, FieldError> value_of(const Token& tok, OxmField f) {
  ofp::OxmTlv t;
  t.field = f;
  if (auto e = detail::parse_field_value(f, tok.value, t.value, t.mask)) {
    return unexpected(match_error(fmt::format("{}: {}", tok.text, *e)));
  }
  return t;
}

Expected<void, FieldError> check_prereq(const Token& tok, OxmField f, const Proto& p) {
  if (auto need = detail::missing_prereq(f, p)) {
    return unexpected(match_error(fmt::format("{}: needs {} first ({})", tok.key, need->what, need->hint)));
  }
  return {};
}

// Stage 0: shorthands and dl_type/eth_type fix the Ethernet type (and maybe ip_proto).
Expected<bool, FieldError> stage_ethertype(const Token& tok, Builder& b) {
  if (!tok.has_value) {
    for (const auto& s : kShorthands) {
      if (s.name != tok.key) continue;
      if (auto r = b.put(tok, {OxmField::kEthType, s.eth_type, std::nullopt}); !r) return unexpected(r.error());
      if (s.ip_proto) {
        if (auto r = b.put(tok, {OxmField::kIpProto, *s.ip_proto, std::nullopt}); !r) return unexpected(r.error());
      }
      return true;
    }
    return false;
  }
  if (tok.key != "dl_type" && tok.key != "eth_type") return false;
  auto t = value_of(tok, OxmField::kEthType);
  if (!t) return unexpected(t.error());
  if (auto r = b.put(tok, *t); !r) return unexpected(r.error());
  return true;
}

// Stage 1: nw_proto/ip_proto (for ARP, nw_proto is the opcode, as in ovs-fields(7)).
Expected<bool, FieldError> stage_proto(const Token& tok, Builder& b) {
  if (!tok.has_value || (tok.key != "nw_proto" && tok.key != "ip_proto")) return false;
  const Proto p = b.proto();
  const OxmField f = (tok.key == "nw_proto" && p.arp()) ? OxmField::kArpOp : OxmField::kIpProto;
  if (f == OxmField::kIpProto && !p.ip_any()) {
    const bool nw = tok.key == "nw_proto";
    return unexpected(match_error(fmt::format("{}: needs {} first ({})", tok.key, nw ? "ip or arp" : "ip",
                                              nw ? "dl_type=0x0800/0x0806" : "dl_type=0x0800")));
  }
  auto t = value_of(tok, f);
  if (!t) return unexpected(t.error());
  if (auto r = b.put(tok, *t); !r) return unexpected(r.error());
  return true;
}

// Stage 2: every other field, with the protocol context now known.
Expected<void, FieldError> stage_field(const Token& tok, Builder& b) {
  const Proto p = b.proto();
  std::optional<OxmField> f;
  if (tok.key == "nw_src" || tok.key == "nw_dst") {
    const bool src = tok.key == "nw_src";
    if (p.arp()) {
      f = src ? OxmField::kArpSpa : OxmField::kArpTpa;
    } else if (p.ipv4()) {
      f = src ? OxmField::kIpv4Src : OxmField::kIpv4Dst;
    } else {
      return unexpected(match_error(fmt::format("{}: needs ip or arp first (dl_type=0x0800/0x0806)", tok.key)));
    }
  } else if (tok.key == "tp_src" || tok.key == "tp_dst") {
    const bool src = tok.key == "tp_src";
    if (p.ip_any() && p.ip_proto == detail::kProtoTcp) f = src ? OxmField::kTcpSrc : OxmField::kTcpDst;
    else if (p.ip_any() && p.ip_proto == detail::kProtoUdp) f = src ? OxmField::kUdpSrc : OxmField::kUdpDst;
    else if (p.ip_any() && p.ip_proto == detail::kProtoSctp) f = src ? OxmField::kSctpSrc : OxmField::kSctpDst;
    else return unexpected(match_error(fmt::format("{}: needs tcp, udp or sctp first (nw_proto=6/17/132)", tok.key)));
  } else if (tok.key == "dl_vlan") {
    // OpenFlow 1.0 style: a VLAN id 0..4095 (tagged), or 0xffff for "no tag" (ovs-fields(7)).
    uint64_t v = 0;
    if (tok.value.find('/') != std::string_view::npos) {
      return unexpected(match_error(fmt::format("{}: dl_vlan is not maskable (use vlan_vid=value/mask)", tok.text)));
    }
    if (detail::parse_uint(tok.value, 0xffff, v) || (v > 4095 && v != 0xffff)) {
      return unexpected(match_error(fmt::format("{}: out of range (0..4095, or 0xffff for no VLAN tag)", tok.text)));
    }
    return b.put(tok, {OxmField::kVlanVid, v == 0xffff ? 0 : (v | ofp::kOfpVidPresent), std::nullopt});
  } else if (tok.key == "nw_tos") {
    // The ToS byte; OpenFlow 1.3 matches its DSCP bits (ip_dscp = tos >> 2).
    uint64_t v = 0;
    if (auto e = detail::parse_uint(tok.value, 255, v)) {
      return unexpected(match_error(fmt::format("{}: {}", tok.text, *e)));
    }
    if (v % 4 != 0) {
      return unexpected(match_error(fmt::format("{}: must be a multiple of 4 (the DSCP bits; nw_ecn matches the low two)", tok.text)));
    }
    if (auto r = check_prereq(tok, OxmField::kIpDscp, p); !r) return r;
    return b.put(tok, {OxmField::kIpDscp, v >> 2, std::nullopt});
  } else {
    f = detail::oxm_by_name(tok.key);
    if (!f || *f == OxmField::kInPhyPort) {
      return unexpected(match_error(fmt::format("{}: unknown or unsupported match field '{}'", tok.text, tok.key)));
    }
  }
  if (auto r = check_prereq(tok, *f, p); !r) return r;
  auto t = value_of(tok, *f);
  if (!t) return unexpected(t.error());
  return b.put(tok, *t);
}

}  // namespace

Expected<ofp::Match, FieldError> parse_match(std::string_view text) {
  std::vector<Token> tokens;
  for (auto piece : detail::split_list(text)) {
    Token t;
    t.text = piece;
    const size_t eq = piece.find('=');
    t.key = piece.substr(0, eq);
    if (eq != std::string_view::npos) {
      t.value = piece.substr(eq + 1);
      t.has_value = true;
    }
    for (auto kw : kFlowKeywords) {
      if (t.key == kw) {
        return unexpected(match_error(fmt::format("{}: not a match field; use the request's \"{}\" field", piece, kw)));
      }
    }
    if (!t.has_value) {
      for (auto u : kUnsupportedShorthands) {
        if (t.key == u) return unexpected(match_error(fmt::format("{}: not supported (IPv4 and ARP only)", piece)));
      }
      const bool shorthand = std::any_of(kShorthands.begin(), kShorthands.end(),
                                         [&](const ProtoShorthand& s) { return s.name == t.key; });
      if (!shorthand) {
        return unexpected(match_error(fmt::format("{}: unknown keyword (fields are written name=value)", piece)));
      }
    } else if (t.value.empty()) {
      return unexpected(match_error(fmt::format("{}: missing value", piece)));
    }
    tokens.push_back(t);
  }

  Builder b;
  std::vector<bool> done(tokens.size(), false);
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto r = stage_ethertype(tokens[i], b);
    if (!r) return unexpected(r.error());
    done[i] = *r;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (done[i]) continue;
    auto r = stage_proto(tokens[i], b);
    if (!r) return unexpected(r.error());
    done[i] = *r;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (done[i]) continue;
    if (auto r = stage_field(tokens[i], b); !r) return unexpected(r.error());
  }

  ofp::Match m = b.match();
  // vlan_pcp needs VLAN_VID != NONE (table 12); like ovs-ofctl, dl_vlan_pcp alone means
  // "any tagged packet with this priority": vlan_vid=0x1000/0x1000 is added.
  if (m.find(OxmField::kVlanPcp) != nullptr) {
    if (m.find(OxmField::kVlanVid) == nullptr) {
      m.set_masked(OxmField::kVlanVid, ofp::kOfpVidPresent, ofp::kOfpVidPresent);
    } else if (!detail::has_vlan_tag(m)) {
      return unexpected(match_error(fmt::format("{}: needs a VLAN tag, but '{}' also matches untagged packets",
                                                b.source(OxmField::kVlanPcp), b.source(OxmField::kVlanVid))));
    }
  }
  return detail::canonical(std::move(m));
}

}  // namespace sdn::northbound
