// The data-driven part of the API: topology (from the topology app's records on Data Updates),
// CPAM (through its hooks), apps and the Coordinator, data keys (latest values from the cache,
// history from Data Archives with DUE's query options) and the metrics registry.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data/archive.hpp"
#include "data/coordinator.hpp"
#include "data/due.hpp"
#include "data/key.hpp"
#include "northbound/server_internal.hpp"

namespace sdn::northbound {

namespace {

Json record_json(const data::Record& r) {
  Json v = r.value.is_json() ? r.value.json() : Json{{"bytes", r.value.bytes().size()}};
  return {{"key", r.key}, {"app_id", r.app_id}, {"instance", r.instance}, {"ts_ns", r.ts_ns}, {"seq", r.seq},
          {"value", std::move(v)}};
}

// The API lists a switch's ports as [{"port", "role"}] sorted by port; the data key groups them
// by role ({"edge": [1, 2], ...}, src/apps/topology/README.md). Records archived before that
// change carry the list already.
Json port_list(const Json& ports) {
  if (!ports.is_object()) return ports.is_array() ? ports : Json::array();
  std::vector<std::pair<uint64_t, std::string>> all;
  for (const auto& [role, list] : ports.items()) {
    if (!list.is_array()) continue;
    for (const auto& p : list)
      if (p.is_number_unsigned()) all.emplace_back(p.get<uint64_t>(), role);
  }
  std::sort(all.begin(), all.end());
  Json out = Json::array();
  for (auto& [port, role] : all) out.push_back({{"port", port}, {"role", std::move(role)}});
  return out;
}

Json topology_json(Server::Impl& s) {
  Json switches = Json::array(), links = Json::array(), hosts = Json::array();
  for (const auto& r : s.cached("network/topology/")) {
    if (!r->value.is_json() || !r->value.json().is_object()) continue;
    const Json& v = r->value.json();
    const std::string_view key = std::string_view(r->key).substr(0, r->key.find('@'));
    if (key.starts_with("network/topology/switch/")) {
      switches.push_back({{"dpid", v.value("dpid", "")},
                          {"up", v.value("state", "") == "up"},
                          {"state", v.value("state", "")},
                          {"ports", port_list(v.value("ports", Json::array()))}});
    } else if (key.starts_with("network/topology/link/")) {
      Json l{{"a", v.value("a", Json::object())}, {"b", v.value("b", Json::object())},
             {"up", v.value("state", "") == "up"}, {"state", v.value("state", "")}, {"reason", v.value("reason", "")}};
      links.push_back(std::move(l));
    } else if (key.starts_with("network/topology/host/")) {
      hosts.push_back({{"mac", v.value("mac", "")},
                       {"ipv4", v.value("ip", Json())},
                       {"at", v.value("at", Json::object())},
                       {"state", v.value("state", "")}});
    }
  }
  uint64_t version;
  {
    std::lock_guard lock(s.lvc_mu);
    version = s.topology_version;
  }
  return {{"switches", std::move(switches)}, {"links", std::move(links)}, {"hosts", std::move(hosts)}, {"version", version}};
}

// 409 when CPAM is not in [controller] apps.
bool need_cpam(Server::Impl& s, httplib::Response& res) {
  if (s.src.cpam) return true;
  reply_error(res, ApiError{409, "the cpam app is not running (add it to [controller] apps)"});
  return false;
}

Expected<data::Query, ApiError> history_query(const httplib::Request& req) {
  Json q;
  if (req.method == "POST") {
    auto body = body_object(req);
    if (!body) return unexpected(body.error());
    q = *body;
  } else {
    q = Json::object();
    for (const auto& [k, v] : req.params) {
      if (k == "access_token") continue;
      if (k == "key" || k == "app_id") {
        q[k] = v;
        continue;
      }
      try {
        size_t used = 0;
        const long long n = std::stoll(v, &used, 10);
        if (used != v.size()) throw std::invalid_argument(k);
        if (n >= 0) q[k] = static_cast<uint64_t>(n);
        else q[k] = n;
      } catch (const std::exception&) {
        return unexpected(ApiError{400, fmt::format("{}: '{}' is not an integer", k, v), k});
      }
    }
  }
  auto parsed = data::Query::from_json(q);
  if (!parsed) {
    // from_json names the field in quotes: "query: field 'limit' must ...".
    const std::string& msg = parsed.error();
    std::string field;
    if (const auto a = msg.find('\''); a != std::string::npos)
      if (const auto b = msg.find('\'', a + 1); b != std::string::npos) field = msg.substr(a + 1, b - a - 1);
    return unexpected(ApiError{400, msg, field});
  }
  if (!parsed->limit || *parsed->limit > 10000) parsed->limit = std::min<size_t>(parsed->limit.value_or(1000), 10000);
  return *parsed;
}

}  // namespace

void add_data_routes(Server::Impl& s) {
  auto& http = s.http;

  http.Get("/api/v1/topology", [&s](const httplib::Request&, httplib::Response& res) { reply_json(res, 200, topology_json(s)); });

  // ---- CPAM ----
  http.Get("/api/v1/cpam", [&s](const httplib::Request&, httplib::Response& res) {
    if (need_cpam(s, res)) reply_json(res, 200, s.src.cpam->status());
  });
  http.Get("/api/v1/cpam/mapping", [&s](const httplib::Request&, httplib::Response& res) {
    if (need_cpam(s, res)) reply_json(res, 200, s.src.cpam->mapping());
  });
  http.Get("/api/v1/cpam/vips", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_cpam(s, res)) return;
    if (auto ok = only_params(req, {"state", "limit"}); !ok) return reply_error(res, ok.error());
    auto limit = uint_param(req, "limit", 1000, 1, 1000000);
    if (!limit) return reply_error(res, limit.error());
    const std::string state = req.get_param_value("state");
    static const std::vector<std::string> kStates = {"", "free", "reserved", "primary", "grace", "quarantine"};
    if (std::find(kStates.begin(), kStates.end(), state) == kStates.end())
      return reply_error(res, ApiError{400, fmt::format("state: '{}' is not free, reserved, primary, grace or quarantine", state), "state"});
    reply_json(res, 200, s.src.cpam->vips(state, *limit));
  });
  http.Get("/api/v1/cpam/sessions", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_cpam(s, res)) return;
    if (auto ok = only_params(req, {"limit"}); !ok) return reply_error(res, ok.error());
    auto limit = uint_param(req, "limit", 1000, 1, 1000000);
    if (!limit) return reply_error(res, limit.error());
    auto r = s.src.cpam->sessions(*limit);
    if (!r) return reply_error(res, r.error());
    reply_json(res, 200, *r);
  });
  http.Get("/api/v1/cpam/rotations", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_cpam(s, res)) return;
    if (auto ok = only_params(req, {"limit", "from_ms", "to_ms"}); !ok) return reply_error(res, ok.error());
    auto limit = uint_param(req, "limit", 50, 1, 10000);
    auto from = uint_param(req, "from_ms", 0, 0, uint64_t{1} << 52);
    auto to = uint_param(req, "to_ms", 0, 0, uint64_t{1} << 52);
    for (auto* r : {&limit, &from, &to})
      if (!*r) return reply_error(res, r->error());
    auto* archive = s.src.backends ? s.src.backends->archive() : nullptr;
    if (!archive) return reply_error(res, ApiError{409, "Data Archives are off: no rotation history"});
    data::Query q;
    q.key = "network/cpam/rotation@cpam";
    q.latest = *limit;
    if (*from) q.from_ns = static_cast<int64_t>(*from) * 1'000'000;
    if (*to) q.to_ns = static_cast<int64_t>(*to) * 1'000'000;
    auto recs = archive->query(q);
    if (!recs) return reply_error(res, ApiError{503, "Data Archives: " + recs.error()});
    Json out = Json::array();
    for (const auto& r : *recs) out.push_back({{"key", r.key}, {"ts_ns", r.ts_ns}, {"value", r.value.is_json() ? r.value.json() : Json()}});
    reply_json(res, 200, out);
  });
  http.Post("/api/v1/cpam/rotate", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_cpam(s, res)) return;
    auto body = body_object(req);
    if (!body) return reply_error(res, body.error());
    if (!body->empty()) return reply_error(res, ApiError{400, fmt::format("unknown field '{}'", body->begin().key()), body->begin().key()});
    auto r = s.src.cpam->rotate();
    if (!r) return reply_error(res, r.error());
    reply_json(res, 202, *r);
  });
  http.Get("/api/v1/cpam/config", [&s](const httplib::Request&, httplib::Response& res) {
    if (need_cpam(s, res)) reply_json(res, 200, s.src.cpam->config());
  });
  http.Patch("/api/v1/cpam/config", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_cpam(s, res)) return;
    auto body = body_object(req);
    if (!body) return reply_error(res, body.error());
    auto r = s.src.cpam->update_config(*body);
    if (!r) return reply_error(res, r.error());
    reply_json(res, 200, *r);
  });

  // ---- apps and the Coordinator ----
  http.Get("/api/v1/apps", [&s](const httplib::Request&, httplib::Response& res) {
    Json apps = Json::array();
    const Json stats = s.src.app_stats ? s.src.app_stats() : Json::object();
    for (const auto& [name, counters] : stats.items()) apps.push_back({{"name", name}, {"counters", counters}});
    reply_json(res, 200, {{"apps", apps}, {"coordinator", s.src.coordinator ? s.src.coordinator->state() : Json()}});
  });
  http.Get("/api/v1/coordinator", [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.src.coordinator) return reply_error(res, ApiError{409, "the Coordinator runs elsewhere ([coordinator] enabled = false)"});
    reply_json(res, 200, s.src.coordinator->state());
  });

  // ---- data keys ----
  http.Get("/api/v1/keys", [&s](const httplib::Request& req, httplib::Response& res) {
    if (auto ok = only_params(req, {"pattern", "limit"}); !ok) return reply_error(res, ok.error());
    auto limit = uint_param(req, "limit", 1000, 1, 100000);
    if (!limit) return reply_error(res, limit.error());
    const std::string text = req.has_param("pattern") ? req.get_param_value("pattern") : "**";
    auto pattern = data::Key::parse(text);
    if (!pattern) return reply_error(res, ApiError{400, "pattern: " + pattern.error(), "pattern"});
    std::vector<std::pair<std::string, Server::Impl::LvcEntry>> hits;
    {
      std::lock_guard lock(s.lvc_mu);
      for (const auto& [k, e] : s.lvc) {
        if (hits.size() >= *limit) break;
        auto key = data::Key::parse(k);
        if (key && pattern->matches(*key)) hits.emplace_back(k, e);
      }
    }
    Json out = Json::array();
    for (const auto& [k, e] : hits) out.push_back(record_json(*Server::Impl::unpack(k, e)));  // outside the lock
    reply_json(res, 200, out);
  });
  http.Get("/api/v1/keys/latest", [&s](const httplib::Request& req, httplib::Response& res) {
    if (auto ok = only_params(req, {"key"}); !ok) return reply_error(res, ok.error());
    if (!req.has_param("key")) return reply_error(res, ApiError{400, "key: required", "key"});
    const std::string text = req.get_param_value("key");
    auto key = data::Key::parse_concrete(text);
    if (!key) return reply_error(res, ApiError{400, "key: " + key.error(), "key"});
    std::optional<std::pair<std::string, Server::Impl::LvcEntry>> best;
    {
      std::lock_guard lock(s.lvc_mu);
      // Without "@app" the newest record of any producer of that key.
      for (auto it = s.lvc.lower_bound(text); it != s.lvc.end() && std::string_view(it->first).starts_with(text); ++it)
        if (it->first == text || it->first[text.size()] == '@')
          if (!best || it->second.rec->ts_ns > best->second.rec->ts_ns) best.emplace(it->first, it->second);
    }
    if (best) return reply_json(res, 200, record_json(*Server::Impl::unpack(best->first, best->second)));
    // Not seen since start: the archive may hold it.
    if (auto* archive = s.src.backends ? s.src.backends->archive() : nullptr) {
      data::Query q;
      q.key = text;
      q.latest = 1;
      auto recs = archive->query(q);
      if (recs && !recs->empty()) return reply_json(res, 200, record_json(recs->back()));
    }
    reply_error(res, ApiError{404, fmt::format("no value of '{}' was seen", text), "key"});
  });
  auto history = [&s](const httplib::Request& req, httplib::Response& res) {
    auto q = history_query(req);
    if (!q) return reply_error(res, q.error());
    auto* archive = s.src.backends ? s.src.backends->archive() : nullptr;
    if (!archive) return reply_error(res, ApiError{409, "Data Archives are off"});
    auto recs = archive->query(*q);
    if (!recs) return reply_error(res, ApiError{503, "Data Archives: " + recs.error()});
    Json out = Json::array();
    for (const auto& r : *recs) out.push_back(record_json(r));
    reply_json(res, 200, out);
  };
  http.Get("/api/v1/history", history);
  http.Post("/api/v1/history", history);

  // ---- metrics ----
  http.Get("/api/v1/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    Json j = s.src.metrics ? s.src.metrics->to_json() : Json::object();
    if (s.src.data_stats) j["data"] = s.src.data_stats();
    if (s.src.process_stats) j["process"] = s.src.process_stats();
    reply_json(res, 200, j);
  });
  http.Get("/api/v1/tick", [&s](const httplib::Request&, httplib::Response& res) {
    bool streaming;
    {
      std::lock_guard lock(s.ev_mu);
      streaming = s.streams > 0;
    }
    if (!streaming) s.refresh_flow_counts();  // else the ticker keeps them fresh
    reply_json(res, 200, s.tick_json());
  });
  http.Get("/api/v1/metrics/rppt", [&s](const httplib::Request&, httplib::Response& res) {
    reply_json(res, 200, s.rppt_json());
  });
}

}  // namespace sdn::northbound
