// The ids case study's routes: the detector's state and recent scores (/api/v1/ids...), and the
// mitigation app's blocks and action history (/api/v1/mitigation/...): list, block, unblock.
#include <fmt/format.h>

#include "data/archive.hpp"
#include "data/due.hpp"
#include "northbound/server_internal.hpp"

namespace sdn::northbound {
namespace {

// Records of an archive query as {key, ts_ns, value}.
Expected<Json, ApiError> history(Server::Impl& s, const std::string& key, size_t latest) {
  auto* archive = s.src.backends ? s.src.backends->archive() : nullptr;
  if (!archive) return unexpected(ApiError{409, "Data Archives are off: no history"});
  data::Query q;
  q.key = key;
  q.latest = latest;
  auto recs = archive->query(q);
  if (!recs) return unexpected(ApiError{503, "Data Archives: " + recs.error()});
  Json out = Json::array();
  for (const auto& r : *recs) out.push_back({{"key", r.key}, {"ts_ns", r.ts_ns}, {"value", r.value.is_json() ? r.value.json() : Json()}});
  return out;
}

// GET ?limit=N (default 100, at most 10,000): the newest N archived records of `key`.
httplib::Server::Handler history_route(Server::Impl& s, std::string key) {
  return [&s, key = std::move(key)](const httplib::Request& req, httplib::Response& res) {
    if (auto ok = only_params(req, {"limit"}); !ok) return reply_error(res, ok.error());
    auto limit = uint_param(req, "limit", 100, 1, 10000);
    if (!limit) return reply_error(res, limit.error());
    auto h = history(s, key, *limit);
    if (!h) return reply_error(res, h.error());
    reply_json(res, 200, *h);
  };
}

bool need_mitigation(Server::Impl& s, httplib::Response& res) {
  if (s.src.ids.blocks) return true;
  reply_error(res, ApiError{409, "the mitigation app is not running (add it to [controller] apps)"});
  return false;
}

}  // namespace

void add_ids_routes(Server::Impl& s) {
  auto& http = s.http;

  http.Get("/api/v1/ids", [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.src.ids.detector && !s.src.ids.sampler)
      return reply_error(res, ApiError{409, "the ids and sampler apps are not running (add them to [controller] apps)"});
    Json suspects = Json::array();
    for (const auto& r : s.cached("network/ids/suspect/"))
      if (r->value.is_json()) suspects.push_back(r->value.json());
    reply_json(res, 200,
               {{"detector", s.src.ids.detector ? s.src.ids.detector() : Json(nullptr)},
                {"sampler", s.src.ids.sampler ? s.src.ids.sampler() : Json(nullptr)},
                {"suspects", suspects}});
  });
  http.Get("/api/v1/ids/scores", history_route(s, "network/ids/score"));

  http.Get("/api/v1/mitigation/blocks", [&s](const httplib::Request&, httplib::Response& res) {
    if (need_mitigation(s, res)) reply_json(res, 200, s.src.ids.blocks());
  });
  http.Post("/api/v1/mitigation/blocks", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_mitigation(s, res)) return;
    auto body = body_object(req);
    if (!body) return reply_error(res, body.error());
    std::string mac, ip;
    std::optional<uint32_t> duration;
    for (const auto& [k, v] : body->items()) {
      if (k == "mac" && v.is_string()) mac = v.get<std::string>();
      else if (k == "ip" && v.is_string()) ip = v.get<std::string>();
      else if (k == "duration_s" && v.is_number_unsigned()) duration = static_cast<uint32_t>(std::min<uint64_t>(v.get<uint64_t>(), 1u << 20));
      else if (k == "mac" || k == "ip" || k == "duration_s")
        return reply_error(res, ApiError{400, fmt::format("{}: wrong type", k), k});
      else return reply_error(res, ApiError{400, fmt::format("unknown field '{}'", k), k});
    }
    if (mac.empty()) return reply_error(res, ApiError{400, "mac: required", "mac"});
    auto r = s.src.ids.block(mac, ip, duration);
    if (!r) return reply_error(res, r.error());
    reply_json(res, 201, *r);
  });
  http.Delete(R"(/api/v1/mitigation/blocks/([^/]+))", [&s](const httplib::Request& req, httplib::Response& res) {
    if (!need_mitigation(s, res)) return;
    auto r = s.src.ids.unblock(req.matches[1]);
    if (!r) return reply_error(res, r.error());
    reply_json(res, 200, *r);
  });
  http.Get("/api/v1/mitigation/actions", history_route(s, "network/mitigation/action/**"));
}

}  // namespace sdn::northbound
