// Record envelopes on Redis (docs/data-wire.md) and base64 for raw-byte values. Encoding writes
// the fixed fields by hand (one pass, reused buffer) and lets nlohmann dump only the value.
#include "data/wire.hpp"

#include <array>
#include <limits>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

namespace sdn::data {
namespace {

// Appends `s` as a JSON string, copying runs that need no escape in one go.
void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    if (u == '"' || u == '\\') {
      out += '\\';
      out += static_cast<char>(u);
    } else {
      out += fmt::format("\\u{:04x}", u);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

// Well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF)?
bool is_utf8(std::string_view s) {
  std::size_t i = 0, n = s.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_encode(std::string_view in) {
  std::string out((in.size() + 2) / 3 * 4, '=');
  char* o = out.data();
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) |
                 uint8_t(in[i + 2]);
    *o++ = kB64[(v >> 18) & 63];
    *o++ = kB64[(v >> 12) & 63];
    *o++ = kB64[(v >> 6) & 63];
    *o++ = kB64[v & 63];
  }
  if (std::size_t rest = in.size() - i; rest) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    *o++ = kB64[(v >> 18) & 63];
    *o++ = kB64[(v >> 12) & 63];
    if (rest == 2) *o++ = kB64[(v >> 6) & 63];
  }
  return out;
}

Expected<std::string, std::string> base64_decode(std::string_view in) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(kB64[i])] = static_cast<int8_t>(i);
    return t;
  }();
  if (in.size() % 4 != 0) return unexpected(std::string("base64: length is not a multiple of 4"));
  std::string out(in.size() / 4 * 3, '\0');
  char* o = out.data();
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int pad = 0;
    uint32_t v = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      int d;
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        d = 0;
        ++pad;
      } else {
        if (pad) return unexpected(std::string("base64: data after padding"));
        d = table[static_cast<uint8_t>(c)];
        if (d < 0) return unexpected(fmt::format("base64: bad character at {}", i + j));
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    // Canonical only (RFC 4648 section 3.5): the bits under the padding must be zero, so each
    // byte string has one encoding (found by the envelope fuzzer).
    if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0))
      return unexpected(std::string("base64: non-zero bits before the padding"));
    *o++ = static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) *o++ = static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) *o++ = static_cast<char>(v & 0xff);
  }
  out.resize(static_cast<std::size_t>(o - out.data()));
  return out;
}

void encode_envelope(const Record& r, std::string& out) {
  out += "{\"k\":";
  append_json_string(out, r.key);
  out += ",\"a\":";
  append_json_string(out, r.app_id);
  out += ",\"i\":";
  append_json_string(out, r.instance);
  fmt::format_to(std::back_inserter(out), ",\"t\":{},\"s\":{},", r.ts_ns, r.seq);
  if (r.value.is_bytes()) {
    out += "\"b\":\"";
    out += base64_encode(r.value.bytes());
    out += "\"}";
  } else {
    out += "\"v\":";
    const Json& v = r.value.json();
    // Strings in valid UTF-8 are written directly (no temporary); everything else is
    // nlohmann's dump (invalid UTF-8 replaced by U+FFFD, never an exception).
    if (v.is_string() && is_utf8(v.get_ref<const std::string&>())) {
      append_json_string(out, v.get_ref<const std::string&>());
    } else {
      out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    out += '}';
  }
}

std::string encode_envelope(const Record& r) {
  std::string out;
  out.reserve(64 + r.key.size() + r.app_id.size() + r.instance.size());
  encode_envelope(r, out);
  return out;
}

namespace {

// The fast path: envelopes in exactly the layout encode_envelope writes (fields in order, strings
// without escapes). Only the value goes through the JSON parser, and not even that for raw bytes
// or a plain string. Anything else returns nullopt and takes the general path below, which also
// produces the error messages.
struct Cursor {
  std::string_view s;
  bool lit(std::string_view l) {
    if (s.substr(0, l.size()) != l) return false;
    s.remove_prefix(l.size());
    return true;
  }
  // A string without backslashes or control characters, after its opening quote.
  bool plain_string(std::string& out) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c == '"') {
        out.assign(s.data(), i);
        s.remove_prefix(i + 1);
        return true;
      }
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
    }
    return false;
  }
  template <class T>
  bool integer(T& out) {
    bool neg = false;
    std::size_t i = 0;
    if (std::is_signed_v<T> && i < s.size() && s[i] == '-') {
      neg = true;
      ++i;
    }
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    if (s[i] == '0' && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') return false;
    uint64_t v = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
          __builtin_add_overflow(v, static_cast<uint64_t>(s[i] - '0'), &v))
        return false;
    }
    if constexpr (std::is_signed_v<T>) {
      constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (v > kMax + (neg ? 1 : 0)) return false;
      out = neg ? static_cast<T>(0 - v) : static_cast<T>(v);
    } else {
      out = static_cast<T>(v);
    }
    s.remove_prefix(i);
    return true;
  }
};

std::optional<Record> decode_fast(std::string_view text) {
  Cursor c{text};
  Record r;
  if (!c.lit("{\"k\":\"") || !c.plain_string(r.key)) return std::nullopt;
  if (!c.lit(",\"a\":\"") || !c.plain_string(r.app_id)) return std::nullopt;
  if (!c.lit(",\"i\":\"") || !c.plain_string(r.instance)) return std::nullopt;
  if (!c.lit(",\"t\":") || !c.integer(r.ts_ns)) return std::nullopt;
  if (!c.lit(",\"s\":") || !c.integer(r.seq)) return std::nullopt;
  if (c.lit(",\"b\":\"")) {
    auto end = c.s.find('"');
    if (end == std::string_view::npos || c.s.substr(end) != "\"}") return std::nullopt;
    auto bytes = base64_decode(c.s.substr(0, end));
    if (!bytes) return std::nullopt;
    r.value = Value(Bytes{std::move(*bytes)});
    return r;
  }
  if (!c.lit(",\"v\":") || c.s.empty() || c.s.back() != '}') return std::nullopt;
  std::string_view v = c.s.substr(0, c.s.size() - 1);
  if (v.size() >= 2 && v.front() == '"') {
    Cursor vs{v.substr(1)};
    std::string str;
    if (vs.plain_string(str) && vs.s.empty()) {
      r.value = Value(Json(std::move(str)));
      return r;
    }
  }
  Json j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  r.value = Value(std::move(j));
  return r;
}

}  // namespace

Expected<Record, std::string> decode_envelope(std::string_view text) {
  if (auto fast = decode_fast(text)) return std::move(*fast);
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return unexpected(std::string("envelope: not valid JSON"));
  if (!j.is_object()) return unexpected(std::string("envelope: not a JSON object"));
  Record r;
  auto str = [&](const char* name, std::string& dst) -> bool {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) return false;
    dst = it->get_ref<const std::string&>();
    return true;
  };
  if (!str("k", r.key)) return unexpected(std::string("envelope: \"k\" (key) missing or not a string"));
  if (!str("a", r.app_id)) return unexpected(std::string("envelope: \"a\" (app id) missing or not a string"));
  if (!str("i", r.instance)) return unexpected(std::string("envelope: \"i\" (instance) missing or not a string"));
  auto t = j.find("t");
  if (t == j.end() || !t->is_number_integer())
    return unexpected(std::string("envelope: \"t\" (timestamp) missing or not an integer"));
  r.ts_ns = t->get<int64_t>();
  auto s = j.find("s");
  if (s == j.end() || !s->is_number_unsigned())
    return unexpected(std::string("envelope: \"s\" (sequence) missing or not a non-negative integer"));
  r.seq = s->get<uint64_t>();
  auto v = j.find("v");
  auto b = j.find("b");
  if (v != j.end() && b != j.end()) return unexpected(std::string("envelope: both \"v\" and \"b\""));
  if (v != j.end()) {
    r.value = Value(Json(std::move(*v)));
  } else if (b != j.end()) {
    if (!b->is_string()) return unexpected(std::string("envelope: \"b\" is not a string"));
    auto bytes = base64_decode(b->get_ref<const std::string&>());
    if (!bytes) return unexpected("envelope: \"b\": " + bytes.error());
    r.value = Value(Bytes{std::move(*bytes)});
  } else {
    return unexpected(std::string("envelope: no value (\"v\" or \"b\")"));
  }
  return r;
}

}  // namespace sdn::data
