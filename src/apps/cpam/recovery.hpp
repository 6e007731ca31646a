// CPAM fault recovery (docs/faults-cpam.md): the records that let a restarted controller reload
// its VIP states and session bindings from Data Archives, and the pure diff that resynchronises a
// switch that (re)connects from its flow stats instead of clearing and re-installing it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/cpam/config.hpp"
#include "apps/cpam/vips.hpp"
#include "core/expected.hpp"
#include "ofp/message.hpp"

namespace sdn::apps::cpam::recovery {

// Keys (the app id is appended by DUE): the engine's state after every change that matters, and
// one record per shard per sweep with the bindings it bound or renewed and those that ended.
inline constexpr std::string_view kVipsKey = "network/cpam/vips";
inline constexpr std::string_view kSessionsPrefix = "network/cpam/sessions/";

// {"format": 2, "epoch", "boot", "time_ms", "next_rotation_ms", "phase", "hosts": [name],
//  "primary": [vip|null], "next": [vip|null] (one per listed host),
//  "retired": {"vip": [vip], "state": "gq..." (one letter a VIP: grace, quarantine),
//              "owner": [index into hosts|null], "since_ms": [ms]}}
// (VIPs as pool indices, null for none). Hosts are named so a reordered host list reloads
// right; listed are those with a VIP or owning a retired one.
nlohmann::json vips_to_json(const PersistedVips& p, const HostDirectory& dir, std::string_view phase);
// The inverse, also of format 1 (no "format"; before 2026-12-07): "hosts": {name: [primary,
// next]}, "retired": [[vip, "grace"|"quarantine", owner name|null, since_ms]]. VIPs outside the pool are an error, hosts no longer configured lose their VIPs to
// quarantine (their primary and reservation become retired Quarantine VIPs: never reused early).
Expected<PersistedVips, std::string> vips_from_json(const nlohmann::json& j, const HostDirectory& dir, uint32_t pool);

// One binding as archived: [id, proto, client, server, vc, vs, cport, sport] (hosts by name).
struct PersistedBinding {
  uint64_t id = 0;
  uint8_t proto = 0;
  uint32_t client = kNone, server = kNone, vc = kNone, vs = kNone;
  uint16_t cport = 0, sport = 0;
  bool operator==(const PersistedBinding&) const = default;
};
nlohmann::json binding_to_json(const PersistedBinding& b, const HostDirectory& dir);
std::optional<PersistedBinding> binding_from_json(const nlohmann::json& j, const HostDirectory& dir, uint32_t pool);

// The live bindings of one shard, replayed from its records (oldest first): "bound" adds or
// renews, "ended" removes. `bad` counts entries that do not parse (skipped, never fatal).
struct SessionLog {
  std::map<uint64_t, PersistedBinding> live;
  uint64_t next_id = 0;
  uint64_t bad = 0;
  void apply(const nlohmann::json& record, const HostDirectory& dir, uint32_t pool);
};

// ---- resync ------------------------------------------------------------------------------

// What a switch should hold of one VIP's standing rule.
struct VipExpect {
  enum Kind : uint8_t {
    kStale,  // the VIP is not live (or not owned by a host on this switch): delete its rule
    kAny,    // live, but its host's location is not known yet: keep whatever is there
    kExact,  // live, host located here: exactly `rule`
  } kind = kStale;
  ofp::FlowMod rule;
};

// A session-kind flow (first hop, transit or repair) as flow stats show it.
struct SessionFlow {
  uint64_t cookie = 0;
  uint8_t kind = 0;    // CookieKind
  unsigned owner = 0;  // shard in the cookie
  uint64_t id = 0;
  uint8_t proto = 0;
  uint32_t src = 0, dst = 0;        // match ipv4_src/dst (real or VIP by kind)
  uint16_t sport = 0, dport = 0;
  std::optional<uint32_t> set_src;  // first hop: the VIP the source is rewritten to
};
std::optional<SessionFlow> parse_session_flow(const ofp::FlowStats& f);

struct Diff {
  std::vector<ofp::FlowMod> deletes;  // by exact cookie in the CPAM table
  std::vector<ofp::FlowMod> adds;
  uint64_t kept = 0, deleted = 0;     // flows (a delete by cookie may remove several)
  std::vector<SessionFlow> sessions;  // for their owner shards to judge
};

// The VIP-rule part of a resync: every CPAM flow of the switch is either a VIP rule (judged by
// `expect`: kept when it is exactly what is expected, or anything while its host is unlocated;
// deleted when stale, duplicated or different, and then re-added when expected), a session flow
// (handed on in `sessions`), or unknown / in another table (deleted). Every rule of `wanted`
// (the standing rules this switch should hold) that is absent is added.
Diff diff_switch(const CpamConfig& cfg, const std::vector<ofp::FlowStats>& flows,
                 const std::function<VipExpect(uint32_t vip)>& expect, const std::vector<ofp::FlowMod>& wanted);

// Same priority, table, match (any field order) and apply-actions (output max_len ignored):
// the flow is the rule.
bool same_rule(const ofp::FlowStats& f, const ofp::FlowMod& m);
// The DELETE of every flow with exactly `cookie` in the CPAM table.
ofp::FlowMod delete_cookie(const CpamConfig& cfg, uint64_t cookie);

}  // namespace sdn::apps::cpam::recovery
