// What the northbound's route files share: the server state (Impl), the reply helpers and the
// switch round trip. Private to src/northbound/.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics.hpp"
#include "data/record.hpp"
#include "northbound/server.hpp"
#include "ofp/message.hpp"

namespace sdn::northbound {

using Json = nlohmann::json;

struct Server::Impl {
  Impl(NorthboundConfig c, Sources s);
  // Sets the server options and registers every handler and route (start() calls it before
  // binding; the REST fuzz target calls it and then feeds requests without a socket).
  void install_handlers();

  NorthboundConfig cfg;
  Sources src;
  std::string tls_error;                        // why the HTTPS context could not be built
  std::unique_ptr<httplib::Server> http_owner;  // an httplib::SSLServer with [northbound] tls_cert
  httplib::Server& http;
  std::thread thread;
  std::thread ticker;
  std::atomic<bool> stopping{false};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // Last-value cache of Data Updates (every key seen since start, capped). A JSON value is kept
  // as published (a shared record, no copy) until the ticker packs it into CBOR, about a second
  // later: at 10,000 hosts the records as JSON trees took about 25 MB, packed about 4 MB
  // (docs/runtime.md, "Memory per host"). Packing is off the publishing (shard) thread.
  struct LvcEntry {
    data::RecordPtr rec;  // packed: the value is the CBOR of the JSON value, as Bytes; key empty
    bool packed = false;
    bool queued = false;  // in lvc_fresh
  };
  std::mutex lvc_mu;
  std::map<std::string, LvcEntry, std::less<>> lvc;
  std::vector<std::string> lvc_fresh;  // keys whose JSON record is not packed yet
  uint64_t topology_version = 0;
  uint64_t sub_id = 0;
  bool subscribed = false;
  void on_record(const data::RecordPtr& r);
  // The record as published (a packed entry's JSON value decoded again).
  static data::RecordPtr unpack(std::string_view key, const LvcEntry& e);
  // Packs the records published since the last call (the ticker, each second); returns how many.
  size_t pack_fresh();
  // Records whose key (without "@app") starts with `prefix`.
  std::vector<data::RecordPtr> cached(std::string_view prefix);

  // Server-Sent Events: a numbered ring of serialized events, and the streams waiting on it.
  std::mutex ev_mu;
  std::condition_variable ev_cv;
  std::deque<std::pair<uint64_t, std::string>> events;
  uint64_t ev_seq = 0;
  unsigned streams = 0;
  void push_event(std::string_view name, const Json& data);
  Json tick_json();
  Json rppt_json();  // the RPPT histograms' buckets (part of a tick)
  void tick_loop();

  // Flow-table sizes per switch, refreshed by the ticker while a stream is open.
  std::mutex fc_mu;
  std::map<uint64_t, uint64_t> flow_counts;
  void refresh_flow_counts();

  core::Counter* requests = nullptr;
  core::Counter* client_errors = nullptr;
  core::Counter* server_errors = nullptr;
  core::Counter* unauthorized = nullptr;
  core::Counter* lvc_evicted = nullptr;
  core::Counter* lvc_packed = nullptr;

  // One request to a switch and its replies (every part of a multipart reply), waiting at most
  // the request timeout. 404 unknown switch, 504 no answer, 400 the switch's OFPT_ERROR.
  Expected<std::vector<ofp::Message>, ApiError> round_trip(uint64_t dpid, ofp::Body request);
  // A batch of FlowMods followed by a barrier; ok once the barrier reply confirms it.
  Expected<void, ApiError> send_batch(uint64_t dpid, std::vector<ofp::Body> batch);
};

// Plain HTTP, or HTTPS when cfg.tls_cert is set; on a bad certificate or key `error` says why (https.cpp).
std::unique_ptr<httplib::Server> make_http_server(const NorthboundConfig& cfg, std::string& error);

void add_switch_routes(Server::Impl& s);
void add_data_routes(Server::Impl& s);
void add_fleet_routes(Server::Impl& s);  // routes_fleet.cpp
void add_ids_routes(Server::Impl& s);    // routes_ids.cpp

void reply_json(httplib::Response& res, int status, const Json& j);
void reply_error(httplib::Response& res, const ApiError& e);
// The body as a JSON object ({} when empty); malformed JSON or a non-object is a 400.
Expected<Json, ApiError> body_object(const httplib::Request& req);
// Query parameters as a JSON object of strings (for the parsers that take both).
Json query_object(const httplib::Request& req);
// Rejects query parameters outside `allowed` (400 naming the first unknown one).
Expected<void, ApiError> only_params(const httplib::Request& req, std::initializer_list<std::string_view> allowed);
// An unsigned integer query parameter in [lo, hi], or `def` when absent.
Expected<uint64_t, ApiError> uint_param(const httplib::Request& req, const char* name, uint64_t def, uint64_t lo,
                                        uint64_t hi);
std::optional<uint64_t> parse_dpid(std::string_view s);
std::string dpid_hex(uint64_t dpid);
std::string mac_string(uint64_t mac);
std::string ofp_error_text(const ofp::ErrorMsg& e);
int64_t unix_ms();

}  // namespace sdn::northbound
