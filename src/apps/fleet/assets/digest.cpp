// Digest auth: the auth-param list parser of RFC 7235 section 2.1 (token or quoted-string
// values) and the MD5 request-digest of RFC 7616 section 3.4.1.
#include "apps/fleet/assets/digest.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace sdn::fleet::digest {

namespace {

using Params = std::map<std::string, std::string>;

bool is_tchar(char c) {
  // RFC 7230 section 3.2.6 token characters.
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Strips the "Digest" scheme and parses the comma-separated auth-params after it.
Expected<Params, std::string> parse_digest_params(std::string_view header, std::string_view what) {
  if (header.size() > kMaxHeaderBytes) return unexpected(fmt::format("{} header too long", what));
  std::size_t i = 0;
  while (i < header.size() && is_ows(header[i])) ++i;
  std::size_t scheme_end = i;
  while (scheme_end < header.size() && is_tchar(header[scheme_end])) ++scheme_end;
  if (lower(header.substr(i, scheme_end - i)) != "digest") {
    return unexpected(fmt::format("{} header is not of the Digest scheme", what));
  }
  i = scheme_end;
  Params out;
  for (;;) {
    // Skip separators: whitespace and empty list elements (RFC 7230 section 7).
    while (i < header.size() && (is_ows(header[i]) || header[i] == ',')) ++i;
    if (i >= header.size()) break;
    std::size_t key_end = i;
    while (key_end < header.size() && is_tchar(header[key_end])) ++key_end;
    if (key_end == i) return unexpected(fmt::format("{} header: bad character at offset {}", what, i));
    std::string key = lower(header.substr(i, key_end - i));
    i = key_end;
    while (i < header.size() && is_ows(header[i])) ++i;
    if (i >= header.size() || header[i] != '=') {
      return unexpected(fmt::format("{} header: parameter '{}' has no value", what, key));
    }
    ++i;
    while (i < header.size() && is_ows(header[i])) ++i;
    std::string value;
    if (i < header.size() && header[i] == '"') {
      ++i;
      bool closed = false;
      while (i < header.size()) {
        char c = header[i++];
        if (c == '\\') {
          if (i >= header.size()) break;
          value.push_back(header[i++]);
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value.push_back(c);
        }
      }
      if (!closed) return unexpected(fmt::format("{} header: unterminated quoted value of '{}'", what, key));
    } else {
      std::size_t v_end = i;
      while (v_end < header.size() && is_tchar(header[v_end])) ++v_end;
      value = std::string(header.substr(i, v_end - i));
      i = v_end;
    }
    while (i < header.size() && is_ows(header[i])) ++i;
    if (i < header.size() && header[i] != ',') {
      return unexpected(fmt::format("{} header: expected ',' after parameter '{}'", what, key));
    }
    if (out.size() >= kMaxParams) return unexpected(fmt::format("{} header: too many parameters", what));
    if (!out.emplace(std::move(key), std::move(value)).second) {
      return unexpected(fmt::format("{} header: duplicate parameter", what));
    }
  }
  return out;
}

// Quotes a value as an RFC 7230 quoted-string.
std::string quote(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string md5_hex(std::string_view s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(s.data(), s.size(), md, &len, EVP_md5(), nullptr) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int k = 0; k < len; ++k) {
    out.push_back(kHex[md[k] >> 4]);
    out.push_back(kHex[md[k] & 0xf]);
  }
  return out;
}

Expected<Challenge, std::string> parse_challenge(std::string_view header) {
  auto params = parse_digest_params(header, "WWW-Authenticate");
  if (!params) return unexpected(params.error());
  Challenge c;
  auto& p = *params;
  if (auto it = p.find("realm"); it != p.end()) c.realm = it->second;
  else return unexpected(std::string("WWW-Authenticate: Digest challenge has no realm"));
  if (auto it = p.find("nonce"); it != p.end() && !it->second.empty()) c.nonce = it->second;
  else return unexpected(std::string("WWW-Authenticate: Digest challenge has no nonce"));
  if (auto it = p.find("opaque"); it != p.end()) c.opaque = it->second;
  c.algorithm = "MD5";
  if (auto it = p.find("algorithm"); it != p.end() && lower(it->second) != "md5") {
    return unexpected(fmt::format("WWW-Authenticate: unsupported Digest algorithm '{}'", it->second));
  }
  if (auto it = p.find("qop"); it != p.end()) {
    // qop-options is a comma-separated list inside the quotes: "auth,auth-int".
    bool has_auth = false;
    std::string_view list = it->second;
    while (!list.empty()) {
      auto comma = list.find(',');
      auto item = list.substr(0, comma);
      while (!item.empty() && is_ows(item.front())) item.remove_prefix(1);
      while (!item.empty() && is_ows(item.back())) item.remove_suffix(1);
      if (lower(item) == "auth") has_auth = true;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    if (!has_auth) return unexpected(fmt::format("WWW-Authenticate: qop '{}' does not offer 'auth'", it->second));
    c.qop = "auth";
  }
  return c;
}

std::string request_digest(std::string_view user, std::string_view realm, std::string_view password,
                           std::string_view method, std::string_view uri, std::string_view nonce,
                           std::string_view nc, std::string_view cnonce, std::string_view qop) {
  const std::string ha1 = md5_hex(fmt::format("{}:{}:{}", user, realm, password));
  const std::string ha2 = md5_hex(fmt::format("{}:{}", method, uri));
  if (qop.empty()) return md5_hex(fmt::format("{}:{}:{}", ha1, nonce, ha2));
  return md5_hex(fmt::format("{}:{}:{}:{}:{}:{}", ha1, nonce, nc, cnonce, qop, ha2));
}

std::string authorization(const Challenge& c, std::string_view method, std::string_view uri,
                          std::string_view user, std::string_view password, uint32_t nc,
                          std::string_view cnonce) {
  const std::string nc_hex = fmt::format("{:08x}", nc);
  const std::string response =
      request_digest(user, c.realm, password, method, uri, c.nonce, nc_hex, cnonce, c.qop);
  std::string out = fmt::format("Digest username={}, realm={}, nonce={}, uri={}, algorithm=MD5", quote(user),
                                quote(c.realm), quote(c.nonce), quote(uri));
  if (!c.qop.empty()) out += fmt::format(", qop={}, nc={}, cnonce={}", c.qop, nc_hex, quote(cnonce));
  out += fmt::format(", response={}", quote(response));
  if (!c.opaque.empty()) out += fmt::format(", opaque={}", quote(c.opaque));
  return out;
}

Expected<std::map<std::string, std::string>, std::string> parse_authorization(std::string_view header) {
  auto params = parse_digest_params(header, "Authorization");
  if (!params) return unexpected(params.error());
  for (const char* key : {"username", "realm", "nonce", "uri", "response"}) {
    if (!params->count(key)) return unexpected(fmt::format("Authorization: Digest header has no {}", key));
  }
  return std::move(params).value();
}

bool equal_ct(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sdn::fleet::digest
