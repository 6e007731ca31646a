// JediAuth: pairing table and the server half of RFC 7616 Digest.
#include "apps/fleet/assets/auth.hpp"

#include <random>

#include <fmt/format.h>
#include <openssl/rand.h>

#include "apps/fleet/assets/digest.hpp"

namespace sdn::fleet {

std::string random_hex(std::size_t n_bytes) {
  std::string bytes(n_bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(n_bytes)) != 1) {
    // The OpenSSL DRBG should never fail; fall back rather than hand out zeros.
    std::random_device rd;
    for (auto& b : bytes) b = static_cast<char>(rd() & 0xFF);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n_bytes);
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xF]);
  }
  return out;
}

JediAuth::JediAuth(double authorize_after_min) : authorize_after_min_(authorize_after_min), nonce_(random_hex(16)) {}

Expected<JediAuth::Credentials, std::string> JediAuth::request(std::string_view application, std::string_view user,
                                                                double now) {
  if (application.empty() || user.empty()) {
    return unexpected(std::string("Fields 'application' and 'user' are required"));
  }
  if (application.size() > kMaxPairingFieldBytes || user.size() > kMaxPairingFieldBytes) {
    return unexpected(fmt::format("Fields 'application' and 'user' are limited to {} bytes", kMaxPairingFieldBytes));
  }
  if (pairings_.size() >= kMaxPairings) return unexpected(std::string("Too many pairing requests"));
  Credentials c{random_hex(16), random_hex(32)};
  pairings_[c.id] = Pairing{c.key, std::string(application), std::string(user), now};
  return c;
}

JediAuth::Check JediAuth::check(std::string_view id, double now) const {
  const auto it = pairings_.find(std::string(id));
  if (it == pairings_.end()) return Check::kUnknown;
  if (authorize_after_min_ < 0 || now < it->second.requested_min + authorize_after_min_) return Check::kUnauthorized;
  return Check::kAuthorized;
}

std::string JediAuth::challenge() const {
  return fmt::format("Digest realm=\"{}\", nonce=\"{}\", qop=\"auth\", algorithm=MD5", kJediRealm, nonce_);
}

Expected<std::string, std::string> JediAuth::verify(std::string_view header, std::string_view method,
                                                    std::string_view target, double now) const {
  if (header.empty()) return unexpected(std::string("no Authorization header"));
  auto fields = digest::parse_authorization(header);
  if (!fields) return unexpected(fields.error());
  auto& f = *fields;
  auto get = [&f](const char* k) -> const std::string& {
    static const std::string kEmpty;
    const auto it = f.find(k);
    return it == f.end() ? kEmpty : it->second;
  };
  if (get("realm") != kJediRealm) return unexpected(fmt::format("wrong realm '{}'", get("realm")));
  if (!digest::equal_ct(get("nonce"), nonce_)) return unexpected(std::string("unknown nonce"));
  if (get("uri") != target) return unexpected(fmt::format("uri '{}' does not match the request target", get("uri")));
  if (const auto& alg = get("algorithm"); !alg.empty() && alg != "MD5" && alg != "md5") {
    return unexpected(fmt::format("unsupported algorithm '{}'", alg));
  }
  if (get("qop") != "auth") return unexpected(std::string("qop must be 'auth'"));
  if (get("nc").empty() || get("cnonce").empty()) return unexpected(std::string("qop=auth needs nc and cnonce"));
  const std::string& id = get("username");
  const auto it = pairings_.find(id);
  if (it == pairings_.end()) return unexpected(std::string("unknown id"));
  if (check(id, now) != Check::kAuthorized) return unexpected(std::string("id not authorized yet"));
  const std::string want = digest::request_digest(id, kJediRealm, it->second.key, method, get("uri"), nonce_,
                                                  get("nc"), get("cnonce"), "auth");
  if (!digest::equal_ct(get("response"), want)) return unexpected(std::string("wrong response hash"));
  return id;
}

}  // namespace sdn::fleet
