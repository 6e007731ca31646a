// The northbound server: configuration, the HTTP server's life, authentication, the dashboard
// assets, Server-Sent Events, /metrics, and the switch round trip the route files use.
#include "northbound/server.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <future>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/config.hpp"
#include "core/log.hpp"
#include "data/due.hpp"
#include "data/key.hpp"
#include "northbound/assets.hpp"
#include "northbound/prometheus.hpp"
#include "northbound/server_internal.hpp"
#include "pkt/addr.hpp"
#include "southbound/controller.hpp"

namespace sdn::northbound {

// ---- configuration ----------------------------------------------------------------------

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

Expected<void, std::string> set_listen(NorthboundConfig& cfg, const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return unexpected(fmt::format("'{}' is not HOST:PORT", listen));
  const std::string host = listen.substr(0, colon), port = listen.substr(colon + 1);
  unsigned long p = 0;
  try {
    size_t used = 0;
    p = std::stoul(port, &used);
    if (used != port.size() || p > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return unexpected(fmt::format("'{}': the port must be 0..65535", listen));
  }
  in_addr a{};
  if (host != "localhost" && inet_pton(AF_INET, host.c_str(), &a) != 1)
    return unexpected(fmt::format("'{}': the host must be an IPv4 address or localhost", listen));
  cfg.host = host == "localhost" ? "127.0.0.1" : host;
  cfg.port = static_cast<uint16_t>(p);
  return {};
}

NorthboundConfig northbound_config_from(core::Config& cfg) {
  NorthboundConfig c;
  const char* s = "northbound";
  c.enabled = cfg.get_bool(s, "enabled", c.enabled);
  if (auto r = set_listen(c, cfg.get_string(s, "listen", "127.0.0.1:8080")); !r) cfg.add_problem("northbound.listen: " + r.error());
  c.token = cfg.get_string(s, "token", "");
  c.cors_origin = cfg.get_string(s, "cors_origin", "");
  c.request_timeout = std::chrono::milliseconds(cfg.get_int(s, "request_timeout_ms", c.request_timeout.count(), 10, 600000));
  c.max_cached_keys = static_cast<size_t>(cfg.get_int(s, "max_cached_keys", static_cast<int64_t>(c.max_cached_keys), 1, 10000000));
  c.threads = static_cast<unsigned>(cfg.get_int(s, "threads", c.threads, 2, 256));
  c.max_event_streams = static_cast<unsigned>(cfg.get_int(s, "max_event_streams", c.max_event_streams, 0, 1024));
  read_https_settings(cfg, c);
  if (c.max_event_streams + 1 >= c.threads)
    cfg.add_problem("northbound.max_event_streams must be below threads - 1 (each stream holds a thread)");
  return c;
}

// ---- helpers ------------------------------------------------------------------------------

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string dpid_hex(uint64_t dpid) { return fmt::format("{:016x}", dpid); }

std::string mac_string(uint64_t m) { return pkt::Mac{m}.to_string(); }

std::optional<uint64_t> parse_dpid(std::string_view s) {
  std::string hex;
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  for (char ch : s)
    if (ch != ':') hex.push_back(ch);
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char ch : hex) {
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

std::string ofp_error_text(const ofp::ErrorMsg& e) {
  static const char* kTypes[] = {"HELLO_FAILED", "BAD_REQUEST", "BAD_ACTION", "BAD_INSTRUCTION", "BAD_MATCH",
                                 "FLOW_MOD_FAILED", "GROUP_MOD_FAILED", "PORT_MOD_FAILED", "TABLE_MOD_FAILED",
                                 "QUEUE_OP_FAILED", "SWITCH_CONFIG_FAILED", "ROLE_REQUEST_FAILED", "METER_MOD_FAILED",
                                 "TABLE_FEATURES_FAILED"};
  const std::string type = e.type < std::size(kTypes) ? fmt::format("OFPET_{}", kTypes[e.type]) : fmt::format("type {}", e.type);
  return fmt::format("{} code {}", type, e.code);
}

void reply_json(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) {
  Json j{{"error", e.message}};
  if (!e.field.empty()) j["field"] = e.field;
  reply_json(res, e.status, j);
}

Expected<Json, ApiError> body_object(const httplib::Request& req) {
  if (req.body.empty()) return Json::object();
  Json j = Json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return unexpected(ApiError{400, "the body is not valid JSON", "body"});
  if (!j.is_object()) return unexpected(ApiError{400, "the body must be a JSON object", "body"});
  return j;
}

Json query_object(const httplib::Request& req) {
  Json j = Json::object();
  for (const auto& [k, v] : req.params)
    if (k != "access_token") j[k] = v;
  return j;
}

Expected<void, ApiError> only_params(const httplib::Request& req, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : req.params)
    if (k != "access_token" && std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      return unexpected(ApiError{400, fmt::format("unknown query parameter '{}'", k), k});
  return {};
}

Expected<uint64_t, ApiError> uint_param(const httplib::Request& req, const char* name, uint64_t def, uint64_t lo,
                                        uint64_t hi) {
  if (!req.has_param(name)) return def;
  const std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    const uint64_t n = std::stoull(v, &used, 0);
    if (used == v.size() && !v.empty() && v[0] != '-' && n >= lo && n <= hi) return n;
  } catch (const std::exception&) {
  }
  return unexpected(ApiError{400, fmt::format("{}: '{}' is not an integer in {}..{}", name, v, lo, hi), name});
}

// ---- state --------------------------------------------------------------------------------

Server::Impl::Impl(NorthboundConfig c, Sources s)
    : cfg(std::move(c)), src(std::move(s)), http_owner(make_http_server(cfg, tls_error)), http(*http_owner) {
  if (src.metrics) {
    requests = &src.metrics->counter("northbound.requests");
    client_errors = &src.metrics->counter("northbound.errors.client");
    server_errors = &src.metrics->counter("northbound.errors.server");
    unauthorized = &src.metrics->counter("northbound.errors.unauthorized");
    lvc_evicted = &src.metrics->counter("northbound.cache.evicted");
    lvc_packed = &src.metrics->counter("northbound.cache.packed");
  }
}

void Server::Impl::on_record(const data::RecordPtr& r) {
  std::string_view key = r->key;
  const auto at = key.find('@');
  const std::string_view bare = key.substr(0, at);
  bool topo = false, rotation = false;
  {
    std::lock_guard lock(lvc_mu);
    auto it = lvc.find(key);
    if (it == lvc.end()) {
      if (lvc.size() >= cfg.max_cached_keys) {
        lvc.erase(lvc.begin());  // keeps memory bounded; counted
        if (lvc_evicted) lvc_evicted->inc();
      }
      it = lvc.emplace(std::string(key), LvcEntry{}).first;
    }
    LvcEntry& e = it->second;
    e.rec = r;
    e.packed = false;
    if (!e.queued && r->value.is_json()) {
      e.queued = true;
      lvc_fresh.emplace_back(key);
    }
    if (bare.starts_with("network/topology/") && bare != "network/topology/summary") {
      ++topology_version;
      topo = true;
    }
    rotation = bare == "network/cpam/rotation";
  }
  if (rotation && r->value.is_json()) push_event("rotation", Json{{"key", r->key}, {"ts_ns", r->ts_ns}, {"value", r->value.json()}});
  if (topo) {
    std::lock_guard lock(ev_mu);
    ev_cv.notify_all();  // the stream sends a coalesced topology event (see the provider)
  }
}

namespace {
// `r` with another value (and key), without copying r's value.
data::RecordPtr with_value(const data::Record& r, std::string key, data::Value v) {
  auto out = std::make_shared<data::Record>();
  out->key = std::move(key);
  out->value = std::move(v);
  out->app_id = r.app_id;
  out->instance = r.instance;
  out->ts_ns = r.ts_ns;
  out->seq = r.seq;
  return out;
}
}  // namespace

data::RecordPtr Server::Impl::unpack(std::string_view key, const LvcEntry& e) {
  if (!e.packed) return e.rec;
  const std::string& b = e.rec->value.bytes();
  return with_value(*e.rec, std::string(key), Json::from_cbor(b.begin(), b.end()));
}

size_t Server::Impl::pack_fresh() {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(lvc_mu);
    keys.swap(lvc_fresh);
  }
  size_t packed = 0;
  for (const auto& key : keys) {
    data::RecordPtr r;
    {
      std::lock_guard lock(lvc_mu);
      auto it = lvc.find(key);
      if (it == lvc.end()) continue;  // evicted meanwhile
      it->second.queued = false;
      if (it->second.packed || !it->second.rec->value.is_json()) continue;
      r = it->second.rec;
    }
    // Encoded outside the lock: publishers never wait on it.
    const auto cbor = Json::to_cbor(r->value.json());
    auto p = with_value(*r, std::string(), data::Bytes{std::string(cbor.begin(), cbor.end())});
    std::lock_guard lock(lvc_mu);
    auto it = lvc.find(key);
    if (it == lvc.end() || it->second.rec != r) continue;  // replaced meanwhile: queued again
    it->second.rec = std::move(p);
    it->second.packed = true;
    ++packed;
  }
  if (lvc_packed != nullptr && packed > 0) lvc_packed->inc(packed);
  return packed;
}

std::vector<data::RecordPtr> Server::Impl::cached(std::string_view prefix) {
  std::vector<std::pair<std::string, LvcEntry>> hits;
  {
    std::lock_guard lock(lvc_mu);
    for (auto it = lvc.lower_bound(prefix); it != lvc.end() && std::string_view(it->first).starts_with(prefix); ++it)
      hits.emplace_back(it->first, it->second);
  }
  std::vector<data::RecordPtr> out;
  out.reserve(hits.size());
  for (const auto& [k, e] : hits) out.push_back(unpack(k, e));  // decoded outside the lock
  return out;
}

void Server::Impl::push_event(std::string_view name, const Json& data) {
  std::string text = fmt::format("event: {}\ndata: {}\n\n", name, data.dump(-1, ' ', false, Json::error_handler_t::replace));
  std::lock_guard lock(ev_mu);
  events.emplace_back(++ev_seq, std::move(text));
  while (events.size() > 64) events.pop_front();
  ev_cv.notify_all();
}

Json Server::Impl::rppt_json() {
  Json rppt = Json::object();
  if (!src.metrics) return rppt;
  src.metrics->each_histogram([&](const std::string& name, const core::Histogram& h) {
    if (name != "cpam.rppt" && name != "southbound.packet_in.service") return;
    Json b = Json::array();
    for (const auto& [edge, n] : h.buckets()) b.push_back({static_cast<double>(edge) / 1000.0, n});
    rppt[name] = {{"count", h.count()}, {"buckets", std::move(b)}};
  });
  return rppt;
}

Json Server::Impl::tick_json() {
  Json j{{"time_ms", unix_ms()}};
  {
    std::lock_guard lock(lvc_mu);
    j["topology_version"] = topology_version;
  }
  j["epoch"] = nullptr;
  if (src.cpam) {
    const Json st = src.cpam->status();
    j["epoch"] = st.value("epoch", Json());
    j["rotating"] = st.value("rotating", false);
    j["next_rotation_ms"] = st.value("next_rotation_ms", Json());
  }
  j["switches"] = src.controller ? src.controller->switch_count() : 0;
  Json flows = Json::object();
  {
    std::lock_guard lock(fc_mu);
    for (const auto& [dpid, n] : flow_counts) flows[dpid_hex(dpid)] = n;
  }
  j["flows"] = std::move(flows);
  if (src.metrics) j["rx_packet_in"] = src.metrics->counter_value("southbound.rx.packet_in");
  j["rppt"] = rppt_json();
  j["apps"] = src.app_stats ? src.app_stats() : Json::object();
  return j;
}

void Server::Impl::refresh_flow_counts() {
  if (!src.controller) return;
  std::map<uint64_t, uint64_t> counts;
  for (const auto& sw : src.controller->switches()) {
    ofp::MultipartRequest mp;
    mp.type = ofp::MultipartType::kAggregate;
    mp.body = ofp::FlowStatsRequest{};
    auto r = round_trip(sw.dpid, mp);
    if (!r) continue;
    for (const auto& m : *r)
      if (const auto* rep = std::get_if<ofp::MultipartReply>(&m.body))
        if (const auto* agg = std::get_if<ofp::AggregateStats>(&rep->body)) counts[sw.dpid] = agg->flow_count;
  }
  std::lock_guard lock(fc_mu);
  flow_counts = std::move(counts);
}

void Server::Impl::tick_loop() {
  while (!stopping.load()) {
    bool watched;
    {
      std::unique_lock lock(ev_mu);
      ev_cv.wait_for(lock, std::chrono::seconds(1), [&] { return stopping.load(); });
      watched = streams > 0;
    }
    if (stopping.load()) break;
    pack_fresh();
    if (!watched) continue;  // on demand: nothing is computed while no dashboard watches
    refresh_flow_counts();
    push_event("tick", tick_json());
  }
}

Expected<std::vector<ofp::Message>, ApiError> Server::Impl::round_trip(uint64_t dpid, ofp::Body request) {
  struct State {
    std::mutex mu;
    std::vector<ofp::Message> replies;
    std::optional<ApiError> error;
    std::promise<void> done;
    bool settled = false;
  };
  auto st = std::make_shared<State>();
  auto fut = st->done.get_future();
  if (!src.controller)
    return unexpected(ApiError{503, "no switch runtime"});
  const bool up = src.controller->with_switch(dpid, [st, request = std::move(request)](southbound::SwitchContext& sw) mutable {
    sw.send_request(std::move(request), [st](const ofp::Message* reply, const ofp::ErrorMsg* err, bool more) {
      std::lock_guard lock(st->mu);
      if (st->settled) return;
      if (reply) st->replies.push_back(*reply);
      if (err) st->error = ApiError{400, "the switch answered " + ofp_error_text(*err)};
      else if (!reply) st->error = ApiError{502, "the switch disconnected before answering"};
      if (!reply || !more) {
        st->settled = true;
        st->done.set_value();
      }
    });
  });
  if (!up) return unexpected(ApiError{404, fmt::format("no switch {} is connected", dpid_hex(dpid)), "dpid"});
  if (fut.wait_for(cfg.request_timeout) != std::future_status::ready)
    return unexpected(ApiError{504, fmt::format("switch {} did not answer within {} ms", dpid_hex(dpid), cfg.request_timeout.count())});
  std::lock_guard lock(st->mu);
  if (st->error) return unexpected(*st->error);
  return std::move(st->replies);
}

Expected<void, ApiError> Server::Impl::send_batch(uint64_t dpid, std::vector<ofp::Body> batch) {
  auto done = std::make_shared<std::promise<southbound::BatchResult>>();
  auto fut = done->get_future();
  if (!src.controller) return unexpected(ApiError{503, "no switch runtime"});
  const bool up = src.controller->with_switch(dpid, [done, batch = std::move(batch)](southbound::SwitchContext& sw) mutable {
    sw.send_batch(std::move(batch), southbound::Lane::kHigh, [done](const southbound::BatchResult& r) { done->set_value(r); });
  });
  if (!up) return unexpected(ApiError{404, fmt::format("no switch {} is connected", dpid_hex(dpid)), "dpid"});
  if (fut.wait_for(cfg.request_timeout) != std::future_status::ready)
    return unexpected(ApiError{504, fmt::format("switch {} did not confirm within {} ms", dpid_hex(dpid), cfg.request_timeout.count())});
  const auto r = fut.get();
  if (r.disconnected) return unexpected(ApiError{502, "the switch disconnected before confirming"});
  if (!r.ok) return unexpected(ApiError{400, "the switch refused it: " + ofp_error_text(r.error)});
  return {};
}

// ---- server -------------------------------------------------------------------------------

Server::Server(NorthboundConfig cfg, Sources src) : impl_(std::make_unique<Impl>(std::move(cfg), std::move(src))) {}

Server::~Server() { stop(); }

namespace {

const Asset* find_asset(std::string_view name) {
  for (const auto& a : assets())
    if (a.name == name) return &a;
  return nullptr;
}

void serve_asset(httplib::Server& http, const std::string& path, std::string_view name, const char* type) {
  http.Get(path, [name, type](const httplib::Request&, httplib::Response& res) {
    const Asset* a = find_asset(name);
    if (!a) return reply_error(res, ApiError{404, "asset missing from this build"});
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(a->data), type);
  });
}

// The Authorization header, or (RFC 6750 2.3) an access_token query parameter: what the
// dashboard's EventSource uses, since it cannot set headers.
bool token_ok(const httplib::Request& req, const std::string& token) {
  std::string auth = req.get_header_value("Authorization");
  if (auth.empty() && req.has_param("access_token")) auth = "Bearer " + req.get_param_value("access_token");
  const std::string want = "Bearer " + token;
  if (auth.size() != want.size()) return false;
  unsigned diff = 0;  // constant time in the token's length
  for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned>(auth[i] ^ want[i]);
  return diff == 0;
}

std::string url_decode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    auto hex = [](char ch) { return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1; };
    if (in[i] == '%' && i + 2 < in.size() && hex(in[i + 1]) >= 0 && hex(in[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(in[i + 1]) * 16 + hex(in[i + 2])));
      i += 2;
    } else {
      out.push_back(in[i] == '+' ? ' ' : in[i]);
    }
  }
  return out;
}

// cpp-httplib splits a query parameter at every '=' and keeps the last piece, so
// ?match=tcp,nw_dst=10.0.0.2 would arrive as "10.0.0.2". The ovs-ofctl syntax is full of '=',
// and users type it unencoded: split at the first '=' only, from the raw request target.
void reparse_query(httplib::Request& req) {
  const auto q = req.target.find('?');
  if (q == std::string::npos) return;
  req.params.clear();
  std::string_view rest = std::string_view(req.target).substr(q + 1);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view kv = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (kv.empty()) continue;
    const auto eq = kv.find('=');
    req.params.emplace(url_decode(kv.substr(0, eq)), eq == std::string_view::npos ? std::string() : url_decode(kv.substr(eq + 1)));
  }
}

}  // namespace

void Server::Impl::install_handlers() {
  Impl& s = *this;
  const unsigned threads = s.cfg.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(1 << 20);
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.set_keep_alive_max_count(100);
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (s.requests) s.requests->inc();
    // The server's own (non-const) request object; the handler only sees it const.
    reparse_query(const_cast<httplib::Request&>(req));
    if (!s.cfg.cors_origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", s.cfg.cors_origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    // The dashboard's files are public (they hold no data); everything else needs the token.
    const bool asset = req.path == "/" || req.path == "/app.js" || req.path == "/fleet.js" || req.path == "/style.css";
    if (!s.cfg.token.empty() && !asset && !token_ok(req, s.cfg.token)) {
      if (s.unauthorized) s.unauthorized->inc();
      res.set_header("WWW-Authenticate", "Bearer realm=\"sdnator\"");
      reply_error(res, ApiError{401, "missing or wrong bearer token (Authorization: Bearer <token>)"});
      return httplib::Server::HandlerResponse::Handled;
    }
    // No switch runtime (e.g. `sdnator fleet run --api`): the switch routes have nothing to read.
    if (!s.src.controller && std::string_view(req.path).starts_with("/api/v1/switches")) {
      reply_error(res, ApiError{503, "no switch runtime"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_error_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (res.status >= 500) {
      if (s.server_errors) s.server_errors->inc();
    } else if (s.client_errors) {
      s.client_errors->inc();
    }
    if (!res.body.empty()) return;
    if (res.status == 404) reply_error(res, ApiError{404, fmt::format("no route {} {}", req.method, req.path)});
    else if (res.status == 413) reply_error(res, ApiError{413, "the body is larger than 1 MiB", "body"});
    else if (res.status == 405) reply_error(res, ApiError{405, fmt::format("{} is not allowed on {}", req.method, req.path)});
    else reply_error(res, ApiError{res.status, fmt::format("HTTP {}", res.status)});
  });
  http.set_exception_handler([&s](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SDN_LOG_RATELIMITED(spdlog::level::warn, "northbound: handler failed: {}", what);
    if (s.server_errors) s.server_errors->inc();
    reply_error(res, ApiError{500, "internal error: " + what});
  });

  serve_asset(http, "/", "index.html", "text/html; charset=utf-8");
  serve_asset(http, "/app.js", "app.js", "text/javascript; charset=utf-8");
  serve_asset(http, "/fleet.js", "fleet.js", "text/javascript; charset=utf-8");
  serve_asset(http, "/style.css", "style.css", "text/css; charset=utf-8");
  serve_asset(http, "/api/v1/openapi.json", "openapi.json", "application/json");

  // The cluster as this instance sees it (docs/cluster.md); {"enabled": false} on its own.
  http.Get("/api/v1/cluster", [&s](const httplib::Request&, httplib::Response& res) {
    Json j = s.src.cluster ? s.src.cluster() : Json::object();
    j["enabled"] = static_cast<bool>(s.src.cluster);
    reply_json(res, 200, j);
  });
  http.Get("/api/v1/health", [&s](const httplib::Request&, httplib::Response& res) {
    reply_json(res, 200,
               {{"status", "ok"},
                {"version", s.src.version},
                {"uptime_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count()},
                {"switches", s.src.controller ? s.src.controller->switch_count() : 0}});
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    Json extra = Json::object();
    if (s.src.data_stats) extra["data"] = s.src.data_stats();
    if (s.src.app_stats) extra["apps"] = s.src.app_stats();
    if (s.src.process_stats) extra["process"] = s.src.process_stats();
    extra["switches"] = s.src.controller ? s.src.controller->switch_count() : 0;
    res.set_content(prometheus_text(s.src.metrics, extra), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/api/v1/events", [&s](const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard lock(s.ev_mu);
      if (s.streams >= s.cfg.max_event_streams)
        return reply_error(res, ApiError{503, fmt::format("at most {} event streams at once", s.cfg.max_event_streams)});
      ++s.streams;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    struct Cursor {
      uint64_t seen;
      uint64_t topo = ~uint64_t{0};
      bool first = true;
    };
    uint64_t now_seq;
    {
      std::lock_guard lock(s.ev_mu);
      now_seq = s.ev_seq;
    }
    auto cur = std::make_shared<Cursor>(Cursor{now_seq});
    res.set_chunked_content_provider(
        "text/event-stream",
        [&s, cur](size_t, httplib::DataSink& sink) {
          std::string out;
          if (cur->first) {
            out = fmt::format("retry: 2000\nevent: tick\ndata: {}\n\n", s.tick_json().dump(-1, ' ', false, Json::error_handler_t::replace));
            cur->first = false;
          }
          {
            std::unique_lock lock(s.ev_mu);
            if (out.empty())
              s.ev_cv.wait_for(lock, std::chrono::seconds(1), [&] {
                return s.stopping.load() || (!s.events.empty() && s.events.back().first > cur->seen);
              });
            if (s.stopping.load()) {
              sink.done();
              return true;
            }
            for (const auto& [seq, text] : s.events)
              if (seq > cur->seen) out += text;
            if (!s.events.empty()) cur->seen = std::max(cur->seen, s.events.back().first);
          }
          uint64_t topo;
          {
            std::lock_guard lock(s.lvc_mu);
            topo = s.topology_version;
          }
          if (topo != cur->topo) {
            if (cur->topo != ~uint64_t{0}) out += fmt::format("event: topology\ndata: {{\"version\":{}}}\n\n", topo);
            cur->topo = topo;
          }
          if (out.empty()) out = ": keep-alive\n\n";
          return sink.write(out.data(), out.size());
        },
        [&s](bool) {
          std::lock_guard lock(s.ev_mu);
          --s.streams;
        });
  });

  add_switch_routes(s);
  add_data_routes(s);
  add_fleet_routes(s);
  add_ids_routes(s);

  http.Get("/api/v1", [](const httplib::Request&, httplib::Response& res) {
    const Asset* a = find_asset("openapi.json");
    Json routes = Json::array();
    if (a) {
      Json doc = Json::parse(a->data, nullptr, false);
      if (doc.is_object() && doc.contains("paths"))
        for (const auto& [path, ops] : doc["paths"].items())
          for (const auto& [method, op] : ops.items())
            routes.push_back({{"method", fmt::format("{}", method)}, {"path", path}, {"summary", op.value("summary", "")}});
    }
    reply_json(res, 200, {{"api", "sdnator"}, {"version", "v1"}, {"routes", routes}});
  });
}

Expected<uint16_t, std::string> Server::start() {
  Impl& s = *impl_;
  if (!is_loopback(s.cfg.host) && s.cfg.token.empty())
    return unexpected(fmt::format("northbound: listening on {} (not loopback) needs [northbound] token", s.cfg.host));
  if (!s.tls_error.empty()) return unexpected("northbound: " + s.tls_error);
  if (s.src.backends) {
    auto pattern = data::Key::parse("**");
    if (pattern) {
      s.sub_id = s.src.backends->updates().subscribe(*pattern, [&s](const data::RecordPtr& r) { s.on_record(r); });
      s.subscribed = true;
    }
  }
  s.install_handlers();

  auto& http = s.http;
  // cpp-httplib's default socket options set SO_REUSEPORT: a second controller on the machine
  // then binds the API port another one is serving, and the kernel splits the requests between
  // them. SO_REUSEADDR only, so that a taken port is refused (integration test northbound).
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int port;
  if (s.cfg.port == 0) {
    port = http.bind_to_any_port(s.cfg.host);
  } else {
    port = http.bind_to_port(s.cfg.host, s.cfg.port) ? s.cfg.port : -1;
  }
  if (port <= 0) return unexpected(fmt::format("northbound: cannot listen on {}:{}", s.cfg.host, s.cfg.port));
  s.thread = std::thread([&s] {
    if (!s.http.listen_after_bind()) SDN_LOG_RATELIMITED(spdlog::level::err, "northbound: the HTTP server stopped");
  });
  s.ticker = std::thread([&s] { s.tick_loop(); });
  return static_cast<uint16_t>(port);
}

void Server::stop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  {
    std::lock_guard lock(s.ev_mu);
    s.ev_cv.notify_all();
  }
  if (s.subscribed && s.src.backends) s.src.backends->updates().unsubscribe(s.sub_id);
  s.subscribed = false;
  s.http.stop();
  if (s.thread.joinable()) s.thread.join();
  if (s.ticker.joinable()) s.ticker.join();
}

}  // namespace sdn::northbound
