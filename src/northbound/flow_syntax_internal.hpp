// Internal to the flow syntax: the OXM field table (value kind, mask rules, names, canonical
// order), prerequisite checks (OpenFlow 1.3.5 7.2.3.6, table 12), and the value parsers and
// printers that flow_syntax*.cpp share. Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "northbound/flow_syntax.hpp"

namespace sdn::northbound::detail {

// How a field's value is written in ovs syntax.
enum class Kind : uint8_t {
  kPort,   // in_port: number or a reserved port name
  kMac,    // xx:xx:xx:xx:xx:xx
  kIpv4,   // a.b.c.d
  kHex,    // number, printed 0x.. (metadata, eth_type, vlan_vid in a match)
  kDec,    // number, printed in decimal
};

struct FieldInfo {
  std::string_view oxm_name;  // the OXM name ("tcp_dst"), accepted everywhere
  std::string_view set_name;  // the name ovs-ofctl prints in set_field ("ip_src", "nw_ecn")
  Kind kind;
  uint64_t max;               // largest value (and mask)
  bool maskable;              // OpenFlow 1.3 table 12
  bool writable;              // set_field allowed (ovs treats eth_type, ip_proto as read-only)
  uint8_t rank;               // canonical position: the order ovs-ofctl encodes OXMs in
};

const FieldInfo& info(ofp::OxmField f);
bool known(ofp::OxmField f);  // modelled by the codec (in_port .. arp_tha)

// The protocol context prerequisites are judged in: eth_type and ip_proto as the match
// fixes them (exactly), absent when the match leaves them open.
struct Proto {
  std::optional<uint16_t> eth_type;
  std::optional<uint8_t> ip_proto;
  static Proto of(const ofp::Match& m);
  bool ipv4() const { return eth_type == 0x0800; }
  bool ip_any() const { return eth_type == 0x0800 || eth_type == 0x86dd; }
  bool arp() const { return eth_type == 0x0806; }
};
inline constexpr uint16_t kDefaultPriority = 0x8000;  // OFP_DEFAULT_PRIORITY, as ovs-ofctl
inline constexpr uint16_t kEthIpv4 = 0x0800;
inline constexpr uint16_t kEthArp = 0x0806;
inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoSctp = 132;

// What a field still needs: `what` ("tcp") and a hint how to get it ("nw_proto=6").
struct Need {
  std::string_view what;
  std::string_view hint;
};
// What `f` still needs in context `p`, or nullopt when satisfied. vlan_pcp's "a VLAN tag"
// rule is left to the callers (it depends on vlan_vid's mask and, in actions, on push_vlan).
std::optional<Need> missing_prereq(ofp::OxmField f, const Proto& p);

// True when `m` guarantees an 802.1Q tag: vlan_vid matched with OFPVID_PRESENT set in
// both value and mask.
bool has_vlan_tag(const ofp::Match& m);

// Sorts into canonical order, drops all-ones masks (exact match) and clears value bits
// outside the mask, so that equal matches compare equal.
ofp::Match canonical(ofp::Match m);

// ---- value parsing: each returns the reason on failure, without the token ----
// Unsigned decimal or 0x-hex, at most `max`.
std::optional<std::string> parse_uint(std::string_view s, uint64_t max, uint64_t& out);
std::optional<std::string> parse_mac(std::string_view s, uint64_t& out);
std::optional<std::string> parse_ipv4(std::string_view s, uint64_t& out);
// A reserved port name (in_port, table, normal, flood, all, controller, local, any; any case)
// or a number 0..0xffffff00.
std::optional<std::string> parse_port(std::string_view s, uint32_t& out);
// value[/mask] for field `f`; without a mask `mask` is nullopt. IPv4 masks may be /NN.
std::optional<std::string> parse_field_value(ofp::OxmField f, std::string_view s, uint64_t& value,
                                             std::optional<uint64_t>& mask);

// ---- value printing ----
std::string mac_text(uint64_t mac);
std::string ipv4_text(uint64_t ip);
std::string port_text(uint32_t port);  // reserved ports by upper-case name, others decimal
// The value (and mask) of `t` the way ovs-ofctl prints it in a match ("10.0.0.0/8").
std::string match_value_text(const ofp::OxmTlv& t);
// The value of a set_field the way ovs-ofctl prints it (vlan_vid and numbers in decimal).
std::string set_value_text(const ofp::OxmTlv& t);

// The OXM field a context-free name means: OXM names and ovs aliases (dl_src, ip_src, ...).
std::optional<ofp::OxmField> oxm_by_name(std::string_view name);

// The field names a set_field may target, resolved to an OXM field; nullopt when unknown.
// tp_src/tp_dst resolve by `p.ip_proto` (tcp/udp/sctp); nw_src/nw_dst by ip vs arp.
std::optional<ofp::OxmField> set_field_target(std::string_view name, const Proto& p);

// Splits `text` at commas and whitespace outside parentheses; empty pieces are skipped.
std::vector<std::string_view> split_list(std::string_view text);

std::string lower(std::string_view s);

}  // namespace sdn::northbound::detail
