// Hex helpers for golden-byte tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sdn::pkt::test {

// "00 1a-ff" -> {0x00, 0x1a, 0xff}; spaces, '-' and '|' are separators for readability.
inline std::vector<uint8_t> from_hex(std::string_view s) {
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : s) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) continue;
    if (hi < 0) {
      hi = d;
    } else {
      out.push_back(static_cast<uint8_t>(hi * 16 + d));
      hi = -1;
    }
  }
  return out;
}

inline std::string to_hex(const std::vector<uint8_t>& b) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s.push_back(k[x >> 4]);
    s.push_back(k[x & 0xf]);
  }
  return s;
}

}  // namespace sdn::pkt::test
