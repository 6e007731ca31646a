// A client of one printer's Jedi REST API (/api/v1), as the data driver uses it: the pairing
// flow (POST /auth/request, GET /auth/check/{id}), then HTTP Digest (RFC 7616) on the calls that
// need it, answering the printer's 401 challenge and reusing its nonce with a growing nc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"

namespace httplib {
class Client;
}

namespace sdn::fleet {

struct JediReply {
  int status = 0;      // HTTP status; 0 when the request did not complete
  nlohmann::json body; // parsed JSON body (null when empty or not JSON)
  std::string error;   // transport error text when status == 0
};

class JediClient {
 public:
  JediClient(std::string host, uint16_t port, std::chrono::milliseconds timeout);
  ~JediClient();
  JediClient(const JediClient&) = delete;
  JediClient& operator=(const JediClient&) = delete;

  // Asks for credentials and waits (polling /auth/check every `poll`) until the printer says
  // "authorized", up to `deadline`. Error on "unknown", a transport error or the deadline.
  Expected<void, std::string> pair(const std::string& application, std::chrono::milliseconds poll,
                                   std::chrono::milliseconds deadline);
  bool paired() const { return !id_.empty(); }

  JediReply get(const std::string& path);
  // Digest-authenticated calls (pair() first).
  JediReply put_json(const std::string& path, const nlohmann::json& body);
  JediReply post_json(const std::string& path, const nlohmann::json& body);
  // POST /print_job: multipart with the G-code as "file" (filename jobname.gcode) and "jobname".
  JediReply upload(const std::string& jobname, const std::string& gcode);

  uint64_t requests() const { return requests_; }
  uint64_t failures() const { return failures_; }

 private:
  template <class Send>
  JediReply with_digest(const char* method, const std::string& path, Send send);

  std::unique_ptr<httplib::Client> http_;
  std::string id_, key_;
  struct Chal;
  std::unique_ptr<Chal> chal_;
  uint32_t nc_ = 0;
  uint64_t requests_ = 0, failures_ = 0;
};

// The G-code a job uploads: a Griffin header whose ;PRINT.TIME: carries the estimate (seconds).
std::string gcode_for(const std::string& jobname, double print_min);

}  // namespace sdn::fleet
