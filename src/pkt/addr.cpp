// Text forms of MAC and IPv4 addresses.
#include "pkt/addr.hpp"

#include <array>
#include <cstdio>

namespace sdn::pkt {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Mac::to_string() const {
  std::array<char, 18> buf{};
  std::snprintf(buf.data(), buf.size(), "%02x:%02x:%02x:%02x:%02x:%02x",
                static_cast<unsigned>((value >> 40) & 0xff), static_cast<unsigned>((value >> 32) & 0xff),
                static_cast<unsigned>((value >> 24) & 0xff), static_cast<unsigned>((value >> 16) & 0xff),
                static_cast<unsigned>((value >> 8) & 0xff), static_cast<unsigned>(value & 0xff));
  return std::string(buf.data(), 17);
}

std::optional<Mac> Mac::parse(std::string_view text) {
  uint64_t v = 0;
  size_t i = 0;
  char sep = 0;
  for (int group = 0; group < 6; ++group) {
    if (group > 0) {
      if (i >= text.size()) return std::nullopt;
      char c = text[i++];
      if (c != ':' && c != '-') return std::nullopt;
      if (sep == 0) sep = c;
      if (c != sep) return std::nullopt;  // no mixing "aa:bb-cc"
    }
    int digits = 0;
    unsigned octet = 0;
    while (i < text.size() && digits < 2) {
      int d = hex_digit(text[i]);
      if (d < 0) break;
      octet = octet * 16 + static_cast<unsigned>(d);
      ++digits;
      ++i;
    }
    if (digits == 0) return std::nullopt;
    v = (v << 8) | octet;
  }
  if (i != text.size()) return std::nullopt;
  return Mac{v};
}

std::string Ipv4Addr::to_string() const {
  std::array<char, 16> buf{};
  int n = std::snprintf(buf.data(), buf.size(), "%u.%u.%u.%u", (value >> 24) & 0xffU, (value >> 16) & 0xffU,
                        (value >> 8) & 0xffU, value & 0xffU);
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::optional<Ipv4Addr> Ipv4Addr::parse(std::string_view text) {
  uint32_t v = 0;
  size_t i = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (i >= text.size() || text[i] != '.') return std::nullopt;
      ++i;
    }
    int digits = 0;
    unsigned n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (++digits > 3) return std::nullopt;
      n = n * 10 + static_cast<unsigned>(text[i] - '0');
      ++i;
    }
    if (digits == 0 || n > 255) return std::nullopt;
    v = (v << 8) | n;
  }
  if (i != text.size()) return std::nullopt;
  return Ipv4Addr{v};
}

}  // namespace sdn::pkt
