// libFuzzer target for the REST API's request handling: requests go through the northbound
// server's real pre-routing, routing and handlers (Server::Impl::install_handlers) on an
// in-memory stream, with a real in-process data layer (SQLite archive) behind the history and
// key routes. The first byte picks the input: a whole raw HTTP request, or one of the routes that
// read a body or parameters, with the rest split into query string and JSON body. The app hooks
// (CPAM, mitigation) echo what they were given: this target is the REST layer, the apps' own
// validation has its unit tests. Aborts on a broken invariant: every answer has a status in
// 200..599, and every /api/v1 answer is JSON; an error carries an "error" string.
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/metrics.hpp"
#include "data/config.hpp"
#include "data/due.hpp"
#include "northbound/server_internal.hpp"

namespace {

using sdn::northbound::ApiError;
using Json = nlohmann::json;

void require(bool ok) {
  if (!ok) std::abort();
}

// A request in, the response out: what a socket stream would carry.
class MemoryStream final : public httplib::Stream {
 public:
  explicit MemoryStream(std::string in) : in_(std::move(in)) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 40000; }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 8080; }
  socket_t socket() const override { return INVALID_SOCKET; }
  const std::string& out() const { return out_; }

 private:
  std::string in_;
  size_t pos_ = 0;
  std::string out_;
};

// httplib::Server::process_request is protected; a pointer to it named through a derived class
// is the standard way to call it from outside.
struct Access : httplib::Server {
  static auto process() { return &Access::process_request; }
};

struct Harness {
  sdn::core::Metrics metrics;
  std::string dir;
  std::unique_ptr<sdn::northbound::Server::Impl> impl;

  Harness() {
    dir = (std::filesystem::temp_directory_path() / ("sdnator-fuzz-rest." + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    sdn::data::DataConfig dc;
    dc.sqlite.path = dir + "/archive.db";
    auto backends = sdn::data::Backends::open(dc);
    if (!backends) std::abort();
    sdn::northbound::Sources src;
    src.metrics = &metrics;
    src.backends = *backends;
    src.app_stats = [] { return Json::object(); };
    src.data_stats = [] { return Json::object(); };
    src.process_stats = [] { return Json::object(); };
    src.version = "fuzz";
    sdn::northbound::CpamHooks cpam;
    cpam.status = [] { return Json{{"epoch", 1}}; };
    cpam.mapping = [] { return Json::object(); };
    cpam.vips = [](const std::string& state, size_t limit) { return Json{{"state", state}, {"limit", limit}}; };
    cpam.sessions = [](size_t limit) -> sdn::Expected<Json, ApiError> { return Json{{"limit", limit}}; };
    cpam.rotate = []() -> sdn::Expected<Json, ApiError> { return Json{{"rotated", true}}; };
    cpam.config = [] { return Json::object(); };
    cpam.update_config = [](const Json& patch) -> sdn::Expected<Json, ApiError> { return patch; };
    src.cpam = cpam;
    src.ids.detector = [] { return Json::object(); };
    src.ids.sampler = [] { return Json::object(); };
    src.ids.blocks = [] { return Json::array(); };
    src.ids.block = [](const std::string& mac, const std::string& ip, std::optional<uint32_t> d) -> sdn::Expected<Json, ApiError> {
      return Json{{"mac", mac}, {"ip", ip}, {"duration_s", d.value_or(0)}};
    };
    src.ids.unblock = [](const std::string& mac) -> sdn::Expected<Json, ApiError> { return Json{{"mac", mac}}; };
    impl = std::make_unique<sdn::northbound::Server::Impl>(sdn::northbound::NorthboundConfig{}, std::move(src));
    impl->install_handlers();
  }
  ~Harness() {
    impl.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  // Runs one request; returns the raw response.
  std::string serve(std::string request) {
    MemoryStream stream(std::move(request));
    bool closed = false;
    httplib::Server& http = impl->http;
    (http.*Access::process())(stream, true, closed, [](httplib::Request&) {});
    return stream.out();
  }
};

struct Route {
  const char* method;
  const char* path;
};
// The routes that read a body or parameters (the SSE stream /api/v1/events never ends: left out).
constexpr Route kRoutes[] = {
    {"POST", "/api/v1/history"},          {"GET", "/api/v1/history"},
    {"GET", "/api/v1/keys"},              {"GET", "/api/v1/keys/latest"},
    {"GET", "/api/v1/cpam/vips"},         {"GET", "/api/v1/cpam/sessions"},
    {"GET", "/api/v1/cpam/rotations"},    {"POST", "/api/v1/cpam/rotate"},
    {"PATCH", "/api/v1/cpam/config"},     {"POST", "/api/v1/mitigation/blocks"},
    {"DELETE", "/api/v1/mitigation/blocks/"}, {"GET", "/api/v1/ids/scores"},
    {"GET", "/api/v1/mitigation/actions"}, {"GET", "/api/v1/switches/"},
};

void check_response(const std::string& out, bool api, bool head = false) {
  if (out.empty()) return;  // the request line did not parse far enough to answer
  // "HTTP/1.1 NNN ..."
  require(out.size() >= 12 && out.compare(0, 9, "HTTP/1.1 ") == 0);
  const int status = std::atoi(out.c_str() + 9);
  require(status >= 200 && status <= 599);
  if (!api || head || status == 204) return;  // a HEAD answer has the headers of GET's, no body
  const auto split = out.find("\r\n\r\n");
  require(split != std::string::npos);
  const std::string headers = out.substr(0, split);
  if (headers.find("application/json") == std::string::npos) return;
  const Json body = Json::parse(out.substr(split + 4), nullptr, false);
  require(!body.is_discarded());
  if (status >= 400) require(body.is_object() && body.contains("error") && body["error"].is_string());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness h;
  if (size == 0 || size > 8192) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const unsigned pick = data[0] % (std::size(kRoutes) + 1);
  if (pick == std::size(kRoutes)) {  // a whole raw request
    std::string req(rest);
    if (req.find("/api/v1/events") != std::string::npos) return 0;
    const auto sp = req.find(' ');
    const bool api = sp != std::string::npos && req.compare(sp + 1, 8, "/api/v1/") == 0;
    const bool head = req.rfind("HEAD ", 0) == 0;
    check_response(h.serve(std::move(req)), api, head);
    return 0;
  }
  // route + "query\nbody": the query goes on the path as it is (httplib decodes it), the body
  // with its length
  const Route& r = kRoutes[pick];
  const auto nl = rest.find('\n');
  std::string query(rest.substr(0, nl == std::string_view::npos ? rest.size() : nl));
  const std::string body(nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1));
  for (char& c : query)
    if (c == ' ' || c == '\r' || c == '\n' || c == '#' || static_cast<unsigned char>(c) < 0x21) c = '_';
  std::string path = r.path;
  if (path.back() == '/') path += query.substr(0, query.find('?'));  // the path parameter
  else if (!query.empty()) path += "?" + query;
  std::string req = std::string(r.method) + " " + path + " HTTP/1.1\r\nHost: fuzz\r\n";
  if (!body.empty()) req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  check_response(h.serve(std::move(req)), true);
  return 0;
}
