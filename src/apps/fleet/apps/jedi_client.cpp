// JediClient (jedi_client.hpp): cpp-httplib with keep-alive. Digest is answered here with the
// same digest module the emulated printer checks against, so one challenge serves many requests
// (cpp-httplib's own digest support would re-challenge on every call).
#include "apps/fleet/apps/jedi_client.hpp"

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "apps/fleet/assets/digest.hpp"

namespace sdn::fleet {

struct JediClient::Chal {
  digest::Challenge c;
};

namespace {
JediReply to_reply(const httplib::Result& r) {
  JediReply out;
  if (!r) {
    out.error = httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  if (!r->body.empty()) out.body = nlohmann::json::parse(r->body, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}
std::string cnonce() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}
}  // namespace

JediClient::JediClient(std::string host, uint16_t port, std::chrono::milliseconds timeout)
    : http_(std::make_unique<httplib::Client>(host, port)) {
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);  // else Nagle + delayed ACK add ~40 ms to each request
  http_->set_connection_timeout(timeout);
  http_->set_read_timeout(timeout);
  http_->set_write_timeout(timeout);
}

JediClient::~JediClient() = default;

Expected<void, std::string> JediClient::pair(const std::string& application,
                                             std::chrono::milliseconds poll,
                                             std::chrono::milliseconds deadline) {
  ++requests_;
  httplib::Params form{{"application", application}, {"user", "sdnator"}};
  auto r = to_reply(http_->Post("/api/v1/auth/request", form));
  if (r.status != 200 || !r.body.is_object() || !r.body.contains("id") || !r.body.contains("key") ||
      !r.body["id"].is_string() || !r.body["key"].is_string()) {
    ++failures_;
    return unexpected(fmt::format("pairing request failed: {}",
                                  r.status ? fmt::format("HTTP {}", r.status) : r.error));
  }
  std::string id = r.body["id"].get<std::string>(), key = r.body["key"].get<std::string>();
  auto until = std::chrono::steady_clock::now() + deadline;
  while (true) {
    ++requests_;
    auto c = to_reply(http_->Get("/api/v1/auth/check/" + id));
    std::string msg = c.body.is_object() && c.body.contains("message") && c.body["message"].is_string()
                          ? c.body["message"].get<std::string>()
                          : "";
    if (c.status == 200 && msg == "authorized") break;
    if (c.status != 200 || msg == "unknown") {
      ++failures_;
      return unexpected(fmt::format("pairing check failed: {}",
                                    c.status ? fmt::format("HTTP {} '{}'", c.status, msg) : c.error));
    }
    if (std::chrono::steady_clock::now() > until)
      return unexpected(std::string("pairing: the printer did not authorize us in time"));
    std::this_thread::sleep_for(poll);
  }
  id_ = std::move(id);
  key_ = std::move(key);
  return {};
}

JediReply JediClient::get(const std::string& path) {
  ++requests_;
  auto r = to_reply(http_->Get("/api/v1" + path));
  if (r.status == 0 || r.status >= 500) ++failures_;
  return r;
}

template <class Send>
JediReply JediClient::with_digest(const char* method, const std::string& path, Send send) {
  std::string uri = "/api/v1" + path;
  for (int attempt = 0; attempt < 2; ++attempt) {
    httplib::Headers h;
    if (chal_ && !id_.empty())
      h.emplace("Authorization",
                digest::authorization(chal_->c, method, uri, id_, key_, ++nc_, cnonce()));
    ++requests_;
    auto res = send(uri, h);
    JediReply r = to_reply(res);
    if (r.status != 401) {
      if (r.status == 0 || r.status >= 500) ++failures_;
      return r;
    }
    // A (new) challenge: answer it once.
    auto www = res->get_header_value("WWW-Authenticate");
    auto c = digest::parse_challenge(www);
    if (!c || id_.empty()) {
      ++failures_;
      return r;
    }
    chal_ = std::make_unique<Chal>(Chal{*c});
    nc_ = 0;
  }
  ++failures_;
  JediReply r;
  r.status = 401;
  r.error = "digest credentials refused";
  return r;
}

JediReply JediClient::put_json(const std::string& path, const nlohmann::json& body) {
  std::string b = body.dump();
  return with_digest("PUT", path, [&](const std::string& uri, const httplib::Headers& h) {
    return http_->Put(uri, h, b, "application/json");
  });
}

JediReply JediClient::post_json(const std::string& path, const nlohmann::json& body) {
  std::string b = body.dump();
  return with_digest("POST", path, [&](const std::string& uri, const httplib::Headers& h) {
    return http_->Post(uri, h, b, "application/json");
  });
}

JediReply JediClient::upload(const std::string& jobname, const std::string& gcode) {
  httplib::MultipartFormDataItems items{
      {"jobname", jobname, "", ""},
      {"file", gcode, jobname + ".gcode", "text/x-gcode"},
  };
  return with_digest("POST", "/print_job", [&](const std::string& uri, const httplib::Headers& h) {
    return http_->Post(uri, h, items);
  });
}

std::string gcode_for(const std::string& jobname, double print_min) {
  return fmt::format(
      ";START_OF_HEADER\n;HEADER_VERSION:0.1\n;FLAVOR:Griffin\n;GENERATOR.NAME:sdnator\n"
      ";TARGET_MACHINE.NAME:Ultimaker 3\n;PRINT.TIME:{}\n;PRINT.GROUPS:1\n"
      ";EXTRUDER_TRAIN.0.INITIAL_TEMPERATURE:210\n;BUILD_PLATE.INITIAL_TEMPERATURE:60\n"
      ";END_OF_HEADER\n;job {}\nG28\nG1 Z0.3 F3000\nM104 S0\n",
      static_cast<long long>(std::llround(print_min * 60.0)), jobname);
}

}  // namespace sdn::fleet
