// Helpers for the ofp codec tests: hex <-> bytes, golden lookup, and the "both ways" check.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "ofp/message.hpp"
#include "unit/ofp/goldens.hpp"

namespace sdn::ofp::test {

inline Bytes from_hex(std::string_view hex) {
  Bytes out;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  int hi = -1;
  for (char c : hex) {
    const int n = nib(c);
    if (n < 0) continue;  // spaces and separators allowed
    if (hi < 0) {
      hi = n;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | n));
      hi = -1;
    }
  }
  return out;
}

inline std::string to_hex(std::span<const uint8_t> b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s.push_back(kDigits[c >> 4]);
    s.push_back(kDigits[c & 15]);
  }
  return s;
}

inline const Golden& golden(std::string_view name) {
  for (const auto& g : kGoldens) {
    if (g.name == name) return g;
  }
  ADD_FAILURE() << "no golden named " << name;
  return kGoldens[0];
}

inline Bytes golden_bytes(std::string_view name) { return from_hex(golden(name).hex); }

inline Bytes encode_ok(const Message& m) {
  Bytes out;
  auto r = encode(m, out);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().detail);
  return out;
}

// Golden both ways: the golden bytes decode to `expected`, and `expected` encodes to them.
inline void expect_golden(std::string_view name, const Message& expected) {
  SCOPED_TRACE(std::string(name));
  const Bytes wire = golden_bytes(name);
  auto d = decode(wire);
  ASSERT_TRUE(d.has_value()) << errc_name(d.error().code) << ": " << d.error().detail;
  EXPECT_EQ(d->xid, expected.xid);
  EXPECT_EQ(d->body.index(), expected.body.index());
  EXPECT_TRUE(*d == expected);
  EXPECT_EQ(to_hex(encode_ok(expected)), to_hex(wire));
}

// Decoding `hex` fails with the given codec error and OFPT_ERROR type/code.
inline void expect_decode_error(std::string_view hex, Errc code, uint16_t ofp_type, uint16_t ofp_code) {
  const Bytes wire = from_hex(hex);
  auto d = decode(wire);
  ASSERT_FALSE(d.has_value()) << "decoded although malformed: " << hex;
  EXPECT_EQ(errc_name(d.error().code), std::string(errc_name(code))) << d.error().detail;
  EXPECT_EQ(d.error().ofp_type, ofp_type) << d.error().detail;
  EXPECT_EQ(d.error().ofp_code, ofp_code) << d.error().detail;
}

// Rewrites the 16-bit header length to the buffer size (for hand-edited negative cases).
inline Bytes fix_len(Bytes b) {
  if (b.size() >= 4) {
    b[2] = static_cast<uint8_t>(b.size() >> 8);
    b[3] = static_cast<uint8_t>(b.size());
  }
  return b;
}

inline OxmTlv oxm(OxmField f, uint64_t v) { return OxmTlv{f, v, std::nullopt}; }
inline OxmTlv oxm(OxmField f, uint64_t v, uint64_t m) { return OxmTlv{f, v, m}; }

}  // namespace sdn::ofp::test
