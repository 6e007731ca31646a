// HTTP Digest access authentication (RFC 7616, MD5 with qop=auth; RFC 2617 compatible), the
// scheme Jedi uses for every request that changes the printer: both the client side (answer a
// challenge) and the server side (parse and check an Authorization header).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace sdn::fleet::digest {

// Longest WWW-Authenticate / Authorization header value we parse, and most parameters in it.
inline constexpr std::size_t kMaxHeaderBytes = 4096;
inline constexpr std::size_t kMaxParams = 32;

// Lower-case hex MD5 of s (OpenSSL EVP).
std::string md5_hex(std::string_view s);

struct Challenge {
  std::string realm, nonce, qop, opaque, algorithm;
};

// Parses a WWW-Authenticate: Digest ... header value; error names what is missing.
// qop is "auth" when the server offers it (among others), "" when the server sent no qop
// (RFC 2069 mode); algorithm defaults to "MD5". MD5-sess, SHA-256 and a qop list without
// "auth" are rejected as unsupported.
Expected<Challenge, std::string> parse_challenge(std::string_view header);

// The Authorization header value a client sends for METHOD URI given the challenge.
std::string authorization(const Challenge& c, std::string_view method, std::string_view uri,
                          std::string_view user, std::string_view password, uint32_t nc,
                          std::string_view cnonce);

// Server side: parse an Authorization: Digest header into its fields (username, realm, nonce,
// uri, response, qop, nc, cnonce, ...). Keys are lower-case, quoted values unquoted.
Expected<std::map<std::string, std::string>, std::string> parse_authorization(std::string_view header);

// The request-digest of RFC 7616 section 3.4.1 for algorithm MD5: with qop "auth"
// MD5(HA1:nonce:nc:cnonce:qop:HA2), with an empty qop the RFC 2069 form MD5(HA1:nonce:HA2),
// where HA1 = MD5(user:realm:password) and HA2 = MD5(method:uri).
std::string request_digest(std::string_view user, std::string_view realm, std::string_view password,
                           std::string_view method, std::string_view uri, std::string_view nonce,
                           std::string_view nc, std::string_view cnonce, std::string_view qop);

// Constant-time comparison of two strings (used for the response hash).
bool equal_ct(std::string_view a, std::string_view b);

}  // namespace sdn::fleet::digest
