// The northbound server: REST API (/api/v1), Server-Sent Events, the dashboard and /metrics,
// on cpp-httplib's thread pool, inside the controller process. It reads the runtime and the data
// layer and acts through the runtime (FlowMods, multipart requests) and the hooks apps register.
// The endpoint list is in README.md; the OpenAPI document (openapi.json) is served from memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"

namespace sdn::core {
class Config;
class Metrics;
}  // namespace sdn::core
namespace sdn::data {
class Backends;
class Coordinator;
}  // namespace sdn::data
namespace sdn::southbound {
class Controller;
}

namespace sdn::northbound {

struct NorthboundConfig {
  bool enabled = true;
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string token;        // required when host is not loopback
  std::string cors_origin;  // empty: no CORS headers
  std::chrono::milliseconds request_timeout{3000};
  size_t max_cached_keys = 100000;
  unsigned threads = 8;
  unsigned max_event_streams = 4;
  // HTTPS (docs/tls.md) when tls_cert and tls_key are set; with tls_ca, clients must present a
  // certificate that chains to it.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
};

// Reads [northbound]; problems are reported through cfg.add_problem naming the key.
NorthboundConfig northbound_config_from(core::Config& cfg);
// Reads [northbound] tls_cert/tls_key/tls_ca (https.cpp); files must be readable.
void read_https_settings(core::Config& cfg, NorthboundConfig& c);
// "HOST:PORT" into cfg (an error names what is wrong).
Expected<void, std::string> set_listen(NorthboundConfig& cfg, const std::string& listen);
bool is_loopback(const std::string& host);

// An error that names the input field at fault (400) or says why the request cannot be served.
struct ApiError {
  ApiError() = default;
  ApiError(int s, std::string m, std::string f = {}) : status(s), message(std::move(m)), field(std::move(f)) {}
  int status = 400;
  std::string message;
  std::string field;  // empty when no single field is at fault
};

// What the CPAM app offers the API (wired by the binary, so this layer does not depend on apps).
// Every hook is thread-safe; `sessions` and `rotate` reach the shards and may block briefly.
struct CpamHooks {
  std::function<nlohmann::json()> status;
  std::function<nlohmann::json()> mapping;
  std::function<nlohmann::json(const std::string& state, size_t limit)> vips;  // state "" = all
  std::function<Expected<nlohmann::json, ApiError>(size_t limit)> sessions;
  std::function<Expected<nlohmann::json, ApiError>()> rotate;
  std::function<nlohmann::json()> config;
  std::function<Expected<nlohmann::json, ApiError>(const nlohmann::json& patch)> update_config;
};

// What the ids case study's apps offer the API (src/apps/ids, src/apps/mitigation). A member is
// null when its app is not running. Thread-safe; block/unblock wait for the switches' barriers.
struct IdsHooks {
  std::function<nlohmann::json()> detector;  // phase, threshold, model, counters
  std::function<nlohmann::json()> sampler;   // capture counters
  std::function<nlohmann::json()> blocks;    // the blocks in force
  std::function<Expected<nlohmann::json, ApiError>(const std::string& mac, const std::string& ip,
                                                   std::optional<uint32_t> duration_s)>
      block;
  std::function<Expected<nlohmann::json, ApiError>(const std::string& mac)> unblock;
};

struct Sources {
  southbound::Controller* controller = nullptr;
  core::Metrics* metrics = nullptr;
  std::shared_ptr<data::Backends> backends;
  const data::Coordinator* coordinator = nullptr;  // null when it runs elsewhere
  std::function<nlohmann::json()> app_stats;       // {app: {counter: n}}
  std::function<nlohmann::json()> data_stats;      // updates/archive stats
  std::function<nlohmann::json()> process_stats;   // rss_bytes, threads, uptime_s, ...
  std::function<nlohmann::json()> cluster;         // members, masterships, leaders (cluster mode)
  std::optional<CpamHooks> cpam;
  IdsHooks ids;
  std::string version;
};

class Server {
 public:
  Server(NorthboundConfig cfg, Sources src);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Subscribes to Data Updates, binds and starts serving; returns the bound port.
  Expected<uint16_t, std::string> start();
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::northbound
