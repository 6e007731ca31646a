// ovs-ofctl(8) flow syntax <-> OpenFlow 1.3 structs, for the REST API: match strings as in
// ovs-fields(7), action strings as in ovs-actions(7), dump-flows lines, and the JSON bodies of
// the flow routes. Pure functions, no I/O; every rejection names the input field and token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "ofp/message.hpp"
#include "ofp/types.hpp"

namespace sdn::northbound {

// `field` is the input field at fault ("match", "actions", "priority", ...); `message` names
// the offending token, e.g. "tp_dst: needs tcp, udp or sctp first (nw_proto=6/17/132)".
struct FieldError {
  std::string field;
  std::string message;
  bool operator==(const FieldError&) const = default;
};

// A match in ovs-ofctl syntax (fields separated by commas and/or spaces). The result holds
// the fields in canonical order (prerequisites first, the order ovs-ofctl encodes them in), so
// equal matches compare equal however the text ordered them. Errors use field "match".
Expected<ofp::Match, FieldError> parse_match(std::string_view text);

// Actions and instructions in ovs-actions syntax. `match` is the flow's match: it decides
// what mod_tp_src means (tcp/udp/sctp) and lets set_field prerequisites be checked
// (OpenFlow 1.3 7.2.5, OFPBAC_MATCH_INCONSISTENT). "drop" is the empty list. Errors use
// field "actions".
Expected<ofp::InstructionList, FieldError> parse_actions(std::string_view text, const ofp::Match& match);

// ovs-ofctl style text, canonical order, parseable by parse_match/parse_actions (and by
// ovs-ofctl). format_match gives "" for match-all; format_actions gives "drop" when empty.
std::string format_match(const ofp::Match& m);
std::string format_actions(const ofp::InstructionList& i);

// One `ovs-ofctl dump-flows` line, e.g. "cookie=0x0, duration=1.234s, table=0, n_packets=0,
// n_bytes=0, idle_timeout=10, priority=100,tcp,nw_dst=10.0.0.2,tp_dst=80 actions=output:2"
// (zero timeouts and the default priority 32768 omitted, as ovs does).
std::string format_flow(const ofp::FlowStats& f);

// The body of POST .../flows: match (string, default ""), actions (string, required),
// priority (0..65535, default 32768), table (0..254), idle_timeout, hard_timeout (0..65535),
// cookie (u64), send_flow_rem, check_overlap (bool). Numbers may be JSON numbers or strings
// (decimal or 0x-hex). Unknown fields and wrong types are errors naming the field.
Expected<ofp::FlowMod, FieldError> flow_add_from_json(const nlohmann::json& body);

// Which flows a list/delete request selects.
struct FlowFilter {
  uint8_t table_id = ofp::kTableAll;
  ofp::Match match;
  uint64_t cookie = 0;
  uint64_t cookie_mask = 0;
  uint32_t out_port = ofp::port::kAny;
  std::optional<uint16_t> priority;
  bool strict = false;  // flow_filter_from_json guarantees priority when strict

  ofp::FlowStatsRequest to_stats_request() const;
  // OFPFC_DELETE, or OFPFC_DELETE_STRICT (with the priority) when strict.
  ofp::FlowMod to_delete() const;
  // What the switch cannot filter on: the priority, and for strict the exact match (same
  // fields and values, in any order). Table and cookie are re-checked too (cheap, exact);
  // the non-strict match and out_port are left to the switch.
  bool accepts(const ofp::FlowStats& f) const;
};

// Fields: match (string), table (0..254 or "all"), cookie ("0x10", "0x10/0xff", or a number:
// mask all ones), out_port (number or a name such as LOCAL, CONTROLLER), priority, strict
// (bool; strict needs priority, else an error on "strict").
Expected<FlowFilter, FieldError> flow_filter_from_json(const nlohmann::json& body);

}  // namespace sdn::northbound
