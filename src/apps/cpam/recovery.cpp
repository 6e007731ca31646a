// CPAM recovery records (JSON both ways) and the switch resync diff.
#include "apps/cpam/recovery.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "apps/cpam/cpam.hpp"

namespace sdn::apps::cpam::recovery {
namespace {

using Json = nlohmann::json;

Json vip_or_null(uint32_t v) { return v == kNone ? Json() : Json(v); }

// A non-negative integer (parsed JSON has them unsigned, built JSON may have them signed).
std::optional<uint64_t> as_u64(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

std::optional<uint32_t> vip_of(const Json& j, uint32_t pool) {
  if (j.is_null()) return kNone;
  const auto v = as_u64(j);
  if (!v || *v >= pool) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::optional<uint32_t> host_of(const Json& j, const HostDirectory& dir) {
  if (!j.is_string()) return std::nullopt;
  auto it = dir.by_name.find(j.get<std::string>());
  if (it == dir.by_name.end()) return std::nullopt;
  return it->second;
}

Json host_name(uint32_t h, const HostDirectory& dir) { return h < dir.hosts.size() ? Json(dir.hosts[h].name) : Json(); }

}  // namespace

Json vips_to_json(const PersistedVips& p, const HostDirectory& dir, std::string_view phase) {
  Json hosts = Json::object();
  for (size_t h = 0; h < dir.hosts.size(); ++h) {
    const uint32_t pv = h < p.primary.size() ? p.primary[h] : kNone;
    const uint32_t nv = h < p.next.size() ? p.next[h] : kNone;
    if (pv != kNone || nv != kNone) hosts[dir.hosts[h].name] = Json::array({vip_or_null(pv), vip_or_null(nv)});
  }
  Json retired = Json::array();
  for (const auto& r : p.retired)
    retired.push_back(Json::array({r.vip, state_name(r.state), host_name(r.owner, dir), r.since_ms}));
  return Json{{"epoch", p.epoch},
              {"boot", p.boot},
              {"time_ms", p.time_ms},
              {"next_rotation_ms", p.next_rotation_ms},
              {"phase", phase},
              {"hosts", std::move(hosts)},
              {"retired", std::move(retired)}};
}

Expected<PersistedVips, std::string> vips_from_json(const Json& j, const HostDirectory& dir, uint32_t pool) {
  if (!j.is_object()) return unexpected(std::string("not an object"));
  for (const char* k : {"epoch", "boot", "time_ms", "next_rotation_ms"})
    if (!j.contains(k) || !j[k].is_number_integer()) return unexpected(fmt::format("{}: missing or not an integer", k));
  if (!j.contains("hosts") || !j["hosts"].is_object()) return unexpected(std::string("hosts: missing or not an object"));
  if (!j.contains("retired") || !j["retired"].is_array()) return unexpected(std::string("retired: missing or not an array"));
  PersistedVips p;
  p.epoch = j["epoch"].get<uint64_t>();
  p.boot = j["boot"].get<uint64_t>();
  p.time_ms = j["time_ms"].get<int64_t>();
  p.next_rotation_ms = j["next_rotation_ms"].get<int64_t>();
  p.primary.assign(dir.hosts.size(), kNone);
  p.next.assign(dir.hosts.size(), kNone);
  for (const auto& [name, pair] : j["hosts"].items()) {
    if (!pair.is_array() || pair.size() != 2) return unexpected(fmt::format("hosts.{}: not [primary, next]", name));
    const auto pv = vip_of(pair[0], pool), nv = vip_of(pair[1], pool);
    if (!pv || !nv) return unexpected(fmt::format("hosts.{}: a VIP outside the pool of {}", name, pool));
    auto it = dir.by_name.find(name);
    if (it == dir.by_name.end()) {  // no longer protected: its VIPs wait out a quarantine
      for (uint32_t v : {*pv, *nv})
        if (v != kNone) p.retired.push_back({v, VipState::kQuarantine, kNone, p.time_ms});
      continue;
    }
    p.primary[it->second] = *pv;
    p.next[it->second] = *nv;
  }
  for (const auto& r : j["retired"]) {
    if (!r.is_array() || r.size() != 4 || !r[1].is_string() || !r[3].is_number_integer())
      return unexpected(std::string("retired: an entry is not [vip, state, owner, since_ms]"));
    const auto v = vip_of(r[0], pool);
    if (!v || *v == kNone) return unexpected(fmt::format("retired: a VIP outside the pool of {}", pool));
    const std::string st = r[1].get<std::string>();
    if (st != "grace" && st != "quarantine") return unexpected(fmt::format("retired: state '{}'", st));
    PersistedVips::Retired e;
    e.vip = *v;
    e.state = st == "grace" ? VipState::kGrace : VipState::kQuarantine;
    e.owner = host_of(r[2], dir).value_or(kNone);
    e.since_ms = r[3].get<int64_t>();
    p.retired.push_back(e);
  }
  return p;
}

Json binding_to_json(const PersistedBinding& b, const HostDirectory& dir) {
  return Json::array({b.id, b.proto, host_name(b.client, dir), host_name(b.server, dir), b.vc, b.vs, b.cport, b.sport});
}

std::optional<PersistedBinding> binding_from_json(const Json& j, const HostDirectory& dir, uint32_t pool) {
  if (!j.is_array() || j.size() != 8) return std::nullopt;
  const auto id = as_u64(j[0]), proto = as_u64(j[1]), cp = as_u64(j[6]), sp = as_u64(j[7]);
  if (!id || !proto || !cp || !sp || *proto > 255 || *cp > 0xffff || *sp > 0xffff) return std::nullopt;
  PersistedBinding b;
  b.id = *id;
  b.proto = static_cast<uint8_t>(*proto);
  auto c = host_of(j[2], dir), s = host_of(j[3], dir);
  auto vc = vip_of(j[4], pool), vs = vip_of(j[5], pool);
  if (!c || !s || !vc || !vs || *vc == kNone || *vs == kNone || *vc == *vs) return std::nullopt;
  b.client = *c;
  b.server = *s;
  b.vc = *vc;
  b.vs = *vs;
  b.cport = static_cast<uint16_t>(*cp);
  b.sport = static_cast<uint16_t>(*sp);
  return b;
}

void SessionLog::apply(const Json& record, const HostDirectory& dir, uint32_t pool) {
  if (!record.is_object()) {
    ++bad;
    return;
  }
  if (auto it = record.find("next_id"); it != record.end())
    if (auto v = as_u64(*it)) next_id = std::max(next_id, *v);
  if (auto it = record.find("bound"); it != record.end() && it->is_array())
    for (const auto& e : *it) {
      if (auto b = binding_from_json(e, dir, pool)) {
        live[b->id] = *b;
      } else {
        ++bad;
      }
    }
  if (auto it = record.find("ended"); it != record.end() && it->is_array())
    for (const auto& e : *it) {
      if (auto v = as_u64(e)) {
        live.erase(*v);
      } else {
        ++bad;
      }
    }
}

// ---- resync ------------------------------------------------------------------------------

namespace {

std::vector<ofp::OxmTlv> sorted_fields(const ofp::Match& m) {
  std::vector<ofp::OxmTlv> v(m.fields.begin(), m.fields.end());
  std::sort(v.begin(), v.end(), [](const ofp::OxmTlv& a, const ofp::OxmTlv& b) {
    return a.field != b.field ? a.field < b.field : a.value < b.value;
  });
  return v;
}

std::vector<ofp::Action> apply_actions(const ofp::InstructionList& l) {
  std::vector<ofp::Action> out;
  for (const auto& i : l)
    if (const auto* a = std::get_if<ofp::InstrApplyActions>(&i))
      for (auto act : a->actions) {
        if (auto* o = std::get_if<ofp::ActionOutput>(&act)) o->max_len = 0;
        out.push_back(act);
      }
  return out;
}

}  // namespace

bool same_rule(const ofp::FlowStats& f, const ofp::FlowMod& m) {
  return f.priority == m.priority && f.table_id == m.table_id && f.cookie == m.cookie &&
         sorted_fields(f.match) == sorted_fields(m.match) && apply_actions(f.instructions) == apply_actions(m.instructions);
}

ofp::FlowMod delete_cookie(const CpamConfig& cfg, uint64_t cookie) {
  ofp::FlowMod fm;
  fm.command = ofp::FlowModCommand::kDelete;
  fm.table_id = cfg.table_id;
  fm.cookie = cookie;
  fm.cookie_mask = ~uint64_t{0};
  return fm;
}

std::optional<SessionFlow> parse_session_flow(const ofp::FlowStats& f) {
  const auto kind = cookie_kind(f.cookie);
  if (kind != CookieKind::kFirstFwd && kind != CookieKind::kFirstRev && kind != CookieKind::kTransit &&
      kind != CookieKind::kRepair)
    return std::nullopt;
  SessionFlow s;
  s.cookie = f.cookie;
  s.kind = static_cast<uint8_t>(kind);
  s.owner = cookie_shard(f.cookie);
  s.id = cookie_id(f.cookie);
  const auto proto = f.match.get(ofp::OxmField::kIpProto);
  const auto src = f.match.get(ofp::OxmField::kIpv4Src), dst = f.match.get(ofp::OxmField::kIpv4Dst);
  if (!proto || !src || !dst) return std::nullopt;
  s.proto = static_cast<uint8_t>(*proto);
  s.src = static_cast<uint32_t>(*src);
  s.dst = static_cast<uint32_t>(*dst);
  using F = ofp::OxmField;
  s.sport = static_cast<uint16_t>(f.match.get(F::kTcpSrc).value_or(f.match.get(F::kUdpSrc).value_or(0)));
  s.dport = static_cast<uint16_t>(f.match.get(F::kTcpDst).value_or(f.match.get(F::kUdpDst).value_or(0)));
  for (const auto& a : apply_actions(f.instructions))
    if (const auto* sf = std::get_if<ofp::ActionSetField>(&a); sf && sf->field.field == F::kIpv4Src)
      s.set_src = static_cast<uint32_t>(sf->field.value);
  return s;
}

Diff diff_switch(const CpamConfig& cfg, const std::vector<ofp::FlowStats>& flows,
                 const std::function<VipExpect(uint32_t vip)>& expect, const std::vector<ofp::FlowMod>& wanted) {
  Diff d;
  // Flows by cookie: a cookie is one VIP rule or one session's rules of one kind.
  std::map<uint64_t, std::vector<const ofp::FlowStats*>> by_cookie;
  for (const auto& f : flows)
    if ((f.cookie & kCookieMask) == kCookie) by_cookie[f.cookie].push_back(&f);
  std::set<uint64_t> present;  // VIP-rule cookies that stay
  for (const auto& [cookie, fs] : by_cookie) {
    const bool other_table = std::any_of(fs.begin(), fs.end(), [&](const auto* f) { return f->table_id != cfg.table_id; });
    const auto kind = cookie_kind(cookie);
    if (kind == CookieKind::kVipRule && !other_table) {
      const uint64_t idx = cookie_id(cookie);
      const VipExpect e = cookie == make_cookie(CookieKind::kVipRule, 0, idx) && idx < cfg.pool_size
                              ? expect(static_cast<uint32_t>(idx))
                              : VipExpect{};
      const bool good = fs.size() == 1 && (e.kind == VipExpect::kAny || (e.kind == VipExpect::kExact && same_rule(*fs[0], e.rule)));
      if (good) {
        ++d.kept;
        present.insert(cookie);
        continue;
      }
      d.deletes.push_back(delete_cookie(cfg, cookie));
      d.deleted += fs.size();
      continue;  // an expected rule comes back through `wanted`
    }
    if (!other_table) {
      bool all = true;
      std::vector<SessionFlow> parsed;
      for (const auto* f : fs) {
        auto s = parse_session_flow(*f);
        if (!s) {
          all = false;
          break;
        }
        parsed.push_back(*s);
      }
      if (all && !parsed.empty()) {
        for (auto& s : parsed) d.sessions.push_back(s);
        continue;
      }
    }
    // Unknown kind, unparsable, or outside CPAM's table: not ours to keep.
    for (const auto* f : fs) {
      ofp::FlowMod del = delete_cookie(cfg, cookie);
      del.table_id = f->table_id;
      if (std::find(d.deletes.begin(), d.deletes.end(), del) == d.deletes.end()) d.deletes.push_back(del);
    }
    d.deleted += fs.size();
  }
  for (const auto& w : wanted)
    if (!present.contains(w.cookie)) {
      d.adds.push_back(w);
      present.insert(w.cookie);
    }
  return d;
}

}  // namespace sdn::apps::cpam::recovery
