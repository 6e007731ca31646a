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

// Format 2: columns of numbers (a VIP costs a number, not an array of four values with two
// strings); the hosts named once, a retired VIP's owner as an index into them. Format 1 (before
// 2026-12-07) named the owner in every retired entry: at 100,000 hosts and a pool of 600,000 its
// JSON value was 83 MB at the heap's peak (docs/runtime.md).
Json vips_to_json(const PersistedVips& p, const HostDirectory& dir, std::string_view phase) {
  std::vector<int64_t> slot(dir.hosts.size(), -1);  // host index -> position in "hosts"
  Json names = Json::array(), primary = Json::array(), next = Json::array();
  auto add = [&](size_t h) {
    slot[h] = static_cast<int64_t>(names.size());
    names.push_back(dir.hosts[h].name);
    primary.push_back(vip_or_null(h < p.primary.size() ? p.primary[h] : kNone));
    next.push_back(vip_or_null(h < p.next.size() ? p.next[h] : kNone));
  };
  for (size_t h = 0; h < dir.hosts.size(); ++h) {
    const uint32_t pv = h < p.primary.size() ? p.primary[h] : kNone;
    const uint32_t nv = h < p.next.size() ? p.next[h] : kNone;
    if (pv != kNone || nv != kNone) add(h);
  }
  Json vip = Json::array(), owner = Json::array(), since = Json::array();
  std::string state;
  state.reserve(p.retired.size());
  for (const auto& r : p.retired) {
    vip.push_back(r.vip);
    state.push_back(r.state == VipState::kGrace ? 'g' : 'q');
    if (r.owner < dir.hosts.size()) {
      if (slot[r.owner] < 0) add(r.owner);
      owner.push_back(slot[r.owner]);
    } else {
      owner.push_back(nullptr);
    }
    since.push_back(r.since_ms);
  }
  return Json{{"format", 2},
              {"epoch", p.epoch},
              {"boot", p.boot},
              {"time_ms", p.time_ms},
              {"next_rotation_ms", p.next_rotation_ms},
              {"phase", phase},
              {"hosts", std::move(names)},
              {"primary", std::move(primary)},
              {"next", std::move(next)},
              {"retired", Json{{"vip", std::move(vip)}, {"state", std::move(state)}, {"owner", std::move(owner)},
                               {"since_ms", std::move(since)}}}};
}

namespace {

// A host's [primary, next] from the record: kept when the host is still protected, else its VIPs
// wait out a quarantine.
void place_host(PersistedVips& p, const HostDirectory& dir, const std::string& name, uint32_t pv, uint32_t nv) {
  auto it = dir.by_name.find(name);
  if (it == dir.by_name.end()) {
    for (uint32_t v : {pv, nv})
      if (v != kNone) p.retired.push_back({v, VipState::kQuarantine, kNone, p.time_ms});
    return;
  }
  p.primary[it->second] = pv;
  p.next[it->second] = nv;
}

Expected<void, std::string> hosts_v1(PersistedVips& p, const Json& j, const HostDirectory& dir, uint32_t pool) {
  if (!j.contains("retired") || !j["retired"].is_array()) return unexpected(std::string("retired: missing or not an array"));
  for (const auto& [name, pair] : j["hosts"].items()) {
    if (!pair.is_array() || pair.size() != 2) return unexpected(fmt::format("hosts.{}: not [primary, next]", name));
    const auto pv = vip_of(pair[0], pool), nv = vip_of(pair[1], pool);
    if (!pv || !nv) return unexpected(fmt::format("hosts.{}: a VIP outside the pool of {}", name, pool));
    place_host(p, dir, name, *pv, *nv);
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
  return {};
}

Expected<void, std::string> hosts_v2(PersistedVips& p, const Json& j, const HostDirectory& dir, uint32_t pool) {
  const Json& names = j["hosts"];
  const auto pr = j.find("primary"), nx = j.find("next"), rt = j.find("retired");
  if (pr == j.end() || nx == j.end() || !pr->is_array() || !nx->is_array() || pr->size() != names.size() ||
      nx->size() != names.size())
    return unexpected(std::string("primary, next: missing or not one entry per host"));
  std::vector<uint32_t> index(names.size(), kNone);  // position in "hosts" -> host index
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string()) return unexpected(fmt::format("hosts[{}]: not a name", i));
    const std::string& name = names[i].get_ref<const std::string&>();
    const auto pv = vip_of((*pr)[i], pool), nv = vip_of((*nx)[i], pool);
    if (!pv || !nv) return unexpected(fmt::format("hosts.{}: a VIP outside the pool of {}", name, pool));
    place_host(p, dir, name, *pv, *nv);
    if (auto it = dir.by_name.find(name); it != dir.by_name.end()) index[i] = it->second;
  }
  if (rt == j.end() || !rt->is_object()) return unexpected(std::string("retired: missing or not an object"));
  const auto vip = rt->find("vip"), state = rt->find("state"), owner = rt->find("owner"), since = rt->find("since_ms");
  if (vip == rt->end() || state == rt->end() || owner == rt->end() || since == rt->end() || !vip->is_array() ||
      !state->is_string() || !owner->is_array() || !since->is_array())
    return unexpected(std::string("retired: not {vip, state, owner, since_ms}"));
  const std::string& st = state->get_ref<const std::string&>();
  const size_t n = vip->size();
  if (st.size() != n || owner->size() != n || since->size() != n)
    return unexpected(std::string("retired: vip, state, owner and since_ms differ in length"));
  for (size_t i = 0; i < n; ++i) {
    const auto v = vip_of((*vip)[i], pool);
    if (!v || *v == kNone) return unexpected(fmt::format("retired: a VIP outside the pool of {}", pool));
    if (st[i] != 'g' && st[i] != 'q') return unexpected(fmt::format("retired: state '{}'", st[i]));
    if (!(*since)[i].is_number_integer()) return unexpected(std::string("retired: since_ms not an integer"));
    PersistedVips::Retired e;
    e.vip = *v;
    e.state = st[i] == 'g' ? VipState::kGrace : VipState::kQuarantine;
    if (!(*owner)[i].is_null()) {
      const auto o = as_u64((*owner)[i]);
      if (!o || *o >= names.size()) return unexpected(fmt::format("retired: owner {} is not a listed host", (*owner)[i].dump()));
      e.owner = index[*o];
    }
    e.since_ms = (*since)[i].get<int64_t>();
    p.retired.push_back(e);
  }
  return {};
}

}  // namespace

Expected<PersistedVips, std::string> vips_from_json(const Json& j, const HostDirectory& dir, uint32_t pool) {
  if (!j.is_object()) return unexpected(std::string("not an object"));
  for (const char* k : {"epoch", "boot", "time_ms", "next_rotation_ms"})
    if (!j.contains(k) || !j[k].is_number_integer()) return unexpected(fmt::format("{}: missing or not an integer", k));
  const auto format = j.find("format");
  const bool v2 = format != j.end() && *format == 2;
  if (format != j.end() && !v2) return unexpected(fmt::format("format {} is not one this version reads (2)", format->dump()));
  if (!j.contains("hosts") || (v2 ? !j["hosts"].is_array() : !j["hosts"].is_object()))
    return unexpected(fmt::format("hosts: missing or not {}", v2 ? "a list of names" : "an object"));
  PersistedVips p;
  p.epoch = j["epoch"].get<uint64_t>();
  p.boot = j["boot"].get<uint64_t>();
  p.time_ms = j["time_ms"].get<int64_t>();
  p.next_rotation_ms = j["next_rotation_ms"].get<int64_t>();
  p.primary.assign(dir.hosts.size(), kNone);
  p.next.assign(dir.hosts.size(), kNone);
  if (auto r = v2 ? hosts_v2(p, j, dir, pool) : hosts_v1(p, j, dir, pool); !r) return unexpected(r.error());
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
