// The JSON bodies (and query strings) of the flow routes -> FlowMod / FlowFilter, and the
// filter's conversions to OFPMP_FLOW requests and OFPFC_DELETE(_STRICT) (7.3.4.1, 7.3.5.2).
// Query-string values arrive as strings, so numbers and booleans are accepted as strings too.
#include <algorithm>

#include <fmt/format.h>

#include "northbound/flow_syntax_internal.hpp"

namespace sdn::northbound {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kAll64 = ~uint64_t{0};

FieldError err(std::string_view field, std::string message) { return FieldError{std::string(field), std::move(message)}; }

std::string shown(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

Expected<uint64_t, FieldError> get_uint(const Json& v, std::string_view name, uint64_t max) {
  uint64_t out = 0;
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
  } else if (v.is_number_integer() && v.get<int64_t>() >= 0) {  // built in C++ from an int
    out = static_cast<uint64_t>(v.get<int64_t>());
  } else if (v.is_number_integer() || v.is_number_float()) {
    return unexpected(err(name, fmt::format("{}={}: must be a whole number 0..{}", name, v.dump(), max)));
  } else if (v.is_string()) {
    if (auto e = detail::parse_uint(v.get<std::string>(), kAll64, out)) {
      return unexpected(err(name, fmt::format("{}={}: {}", name, shown(v), *e)));
    }
  } else {
    return unexpected(err(name, fmt::format("{}: must be a number or a numeric string, not {}", name, v.type_name())));
  }
  if (out > max) return unexpected(err(name, fmt::format("{}={}: out of range (0..{})", name, shown(v), max)));
  return out;
}

Expected<bool, FieldError> get_bool(const Json& v, std::string_view name) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const std::string s = detail::lower(v.get<std::string>());
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
    return unexpected(err(name, fmt::format("{}={}: must be true or false", name, shown(v))));
  }
  return unexpected(err(name, fmt::format("{}: must be a boolean, not {}", name, v.type_name())));
}

Expected<std::string, FieldError> get_string(const Json& v, std::string_view name) {
  if (!v.is_string()) return unexpected(err(name, fmt::format("{}: must be a string, not {}", name, v.type_name())));
  return v.get<std::string>();
}

// Checks the body is an object with only `allowed` keys; JSON null counts as absent.
Expected<void, FieldError> check_keys(const Json& body, std::initializer_list<std::string_view> allowed) {
  if (!body.is_object()) return unexpected(err("body", "the body must be a JSON object"));
  for (const auto& [k, v] : body.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      return unexpected(err(k, fmt::format("unknown field '{}'", k)));
    }
  }
  return {};
}

const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

// `uint` fields in one go: if present, parsed into `out` (narrowed) or the error returned.
template <class T>
Expected<void, FieldError> opt_uint(const Json& body, const char* name, uint64_t max, T& out) {
  if (const Json* v = field(body, name)) {
    auto n = get_uint(*v, name, max);
    if (!n) return unexpected(n.error());
    out = static_cast<T>(*n);
  }
  return {};
}

Expected<ofp::Match, FieldError> opt_match(const Json& body) {
  const Json* v = field(body, "match");
  if (v == nullptr) return ofp::Match{};
  auto s = get_string(*v, "match");
  if (!s) return unexpected(s.error());
  return parse_match(*s);
}

}  // namespace

Expected<ofp::FlowMod, FieldError> flow_add_from_json(const Json& body) {
  if (auto r = check_keys(body, {"match", "actions", "priority", "table", "idle_timeout", "hard_timeout", "cookie",
                                 "send_flow_rem", "check_overlap"});
      !r) {
    return unexpected(r.error());
  }
  ofp::FlowMod fm;
  fm.command = ofp::FlowModCommand::kAdd;
  fm.buffer_id = ofp::kNoBuffer;
  fm.priority = detail::kDefaultPriority;
  auto match = opt_match(body);
  if (!match) return unexpected(match.error());
  fm.match = std::move(*match);

  const Json* actions = field(body, "actions");
  if (actions == nullptr) return unexpected(err("actions", "actions is required (\"drop\" for none)"));
  auto text = get_string(*actions, "actions");
  if (!text) return unexpected(text.error());
  auto insts = parse_actions(*text, fm.match);
  if (!insts) return unexpected(insts.error());
  fm.instructions = std::move(*insts);

  if (auto r = opt_uint(body, "priority", 0xffff, fm.priority); !r) return unexpected(r.error());
  if (auto r = opt_uint(body, "table", 0xfe, fm.table_id); !r) return unexpected(r.error());  // OFPTT_MAX
  if (auto r = opt_uint(body, "idle_timeout", 0xffff, fm.idle_timeout); !r) return unexpected(r.error());
  if (auto r = opt_uint(body, "hard_timeout", 0xffff, fm.hard_timeout); !r) return unexpected(r.error());
  if (auto r = opt_uint(body, "cookie", kAll64, fm.cookie); !r) return unexpected(r.error());
  static constexpr std::pair<const char*, uint16_t> kFlags[] = {
      {"send_flow_rem", ofp::kFlowFlagSendFlowRem}, {"check_overlap", ofp::kFlowFlagCheckOverlap}};
  for (const auto& [name, bit] : kFlags) {
    if (const Json* v = field(body, name)) {
      auto b = get_bool(*v, name);
      if (!b) return unexpected(b.error());
      if (*b) fm.flags |= bit;
    }
  }
  return fm;
}

Expected<FlowFilter, FieldError> flow_filter_from_json(const Json& body) {
  if (auto r = check_keys(body, {"match", "table", "cookie", "out_port", "priority", "strict"}); !r) {
    return unexpected(r.error());
  }
  FlowFilter f;
  auto match = opt_match(body);
  if (!match) return unexpected(match.error());
  f.match = std::move(*match);

  if (const Json* v = field(body, "table")) {
    if (v->is_string() && detail::lower(v->get<std::string>()) == "all") {
      f.table_id = ofp::kTableAll;
    } else if (auto r = opt_uint(body, "table", 0xfe, f.table_id); !r) {
      return unexpected(err("table", r.error().message + " (or \"all\")"));
    }
  }
  if (const Json* v = field(body, "cookie")) {
    // "value/mask" as in ovs-ofctl's cookie=0x10/0xff; a bare value must match exactly.
    f.cookie_mask = kAll64;
    if (v->is_string() && v->get<std::string>().find('/') != std::string::npos) {
      const std::string s = v->get<std::string>();
      const size_t slash = s.find('/');
      if (detail::parse_uint(s.substr(0, slash), kAll64, f.cookie) ||
          detail::parse_uint(s.substr(slash + 1), kAll64, f.cookie_mask)) {
        return unexpected(err("cookie", fmt::format("cookie={}: expected VALUE or VALUE/MASK (decimal or 0x-hex)", s)));
      }
    } else {
      auto c = get_uint(*v, "cookie", kAll64);
      if (!c) return unexpected(c.error());
      f.cookie = *c;
    }
  }
  if (const Json* v = field(body, "out_port")) {
    if (v->is_string()) {
      if (auto e = detail::parse_port(v->get<std::string>(), f.out_port)) {
        return unexpected(err("out_port", fmt::format("out_port={}: {}", shown(*v), *e)));
      }
    } else {
      auto p = get_uint(*v, "out_port", 0xffffffff);
      if (!p) return unexpected(p.error());
      f.out_port = static_cast<uint32_t>(*p);
    }
  }
  if (const Json* v = field(body, "priority")) {
    auto p = get_uint(*v, "priority", 0xffff);
    if (!p) return unexpected(p.error());
    f.priority = static_cast<uint16_t>(*p);
  }
  if (const Json* v = field(body, "strict")) {
    auto s = get_bool(*v, "strict");
    if (!s) return unexpected(s.error());
    f.strict = *s;
  }
  if (f.strict && !f.priority) {
    return unexpected(err("strict", "strict needs a priority (OFPFC_DELETE_STRICT matches match and priority exactly)"));
  }
  return f;
}

ofp::FlowStatsRequest FlowFilter::to_stats_request() const {
  ofp::FlowStatsRequest r;
  r.table_id = table_id;
  r.out_port = out_port;
  r.out_group = ofp::kGroupAny;
  r.cookie = cookie;
  r.cookie_mask = cookie_mask;
  r.match = match;
  return r;
}

ofp::FlowMod FlowFilter::to_delete() const {
  ofp::FlowMod fm;
  fm.command = strict ? ofp::FlowModCommand::kDeleteStrict : ofp::FlowModCommand::kDelete;
  fm.table_id = table_id;
  fm.cookie = cookie;
  fm.cookie_mask = cookie_mask;
  fm.out_port = out_port;
  fm.out_group = ofp::kGroupAny;
  fm.buffer_id = ofp::kNoBuffer;
  // Only DELETE_STRICT reads the priority; ovs-ofctl sends the default otherwise.
  fm.priority = priority.value_or(detail::kDefaultPriority);
  fm.match = match;
  return fm;
}

bool FlowFilter::accepts(const ofp::FlowStats& f) const {
  if (table_id != ofp::kTableAll && f.table_id != table_id) return false;
  if ((f.cookie & cookie_mask) != (cookie & cookie_mask)) return false;
  if (priority && f.priority != *priority) return false;
  if (strict && detail::canonical(f.match) != detail::canonical(match)) return false;
  return true;
}

}  // namespace sdn::northbound
