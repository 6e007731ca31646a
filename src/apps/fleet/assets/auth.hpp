// Jedi's pairing and request authentication for one printer: an application asks for an id/key
// pair (POST /auth/request), the operator "presses the button" (emulated: authorize_after_min
// sim minutes later), and from then on the pair signs changing requests with HTTP Digest
// (realm "Jedi-API", MD5, qop=auth; username = id, password = key). Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "core/expected.hpp"

namespace sdn::fleet {

inline constexpr std::string_view kJediRealm = "Jedi-API";
inline constexpr std::size_t kMaxPairings = 1024;        // per printer
inline constexpr std::size_t kMaxPairingFieldBytes = 256;  // application, user

class JediAuth {
 public:
  // authorize_after_min < 0: requests are never authorized.
  explicit JediAuth(double authorize_after_min);

  struct Credentials {
    std::string id;   // 32 hex digits
    std::string key;  // 64 hex digits
  };
  // Error when the table is full or a field is empty/too long.
  Expected<Credentials, std::string> request(std::string_view application, std::string_view user, double now);

  enum class Check { kUnknown, kUnauthorized, kAuthorized };
  Check check(std::string_view id, double now) const;

  // The WWW-Authenticate value of a 401 answer.
  std::string challenge() const;
  // Checks an Authorization header for a request (method, raw request target): Digest scheme,
  // realm, our nonce, uri == target, an authorized id, the response hash. Returns the id; the
  // error says why (for logs, not for the client).
  Expected<std::string, std::string> verify(std::string_view header, std::string_view method,
                                            std::string_view target, double now) const;

 private:
  struct Pairing {
    std::string key;
    std::string application, user;
    double requested_min = 0;
  };
  double authorize_after_min_;
  std::string nonce_;
  std::unordered_map<std::string, Pairing> pairings_;
};

// n random bytes as 2n lower-case hex digits (OpenSSL RAND_bytes; credentials and nonces are
// not part of the seeded simulation).
std::string random_hex(std::size_t n_bytes);

}  // namespace sdn::fleet
