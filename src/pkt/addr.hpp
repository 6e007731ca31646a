// MAC and IPv4 address value types shared by the pkt parsers and builders. Both are plain
// numbers so they drop straight into ofp::Match (OXM values are host-order integers, a MAC
// aa:bb:cc:dd:ee:ff being 0xaabbccddeeff).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sdn::pkt {

struct Mac {
  uint64_t value = 0;  // low 48 bits; first octet on the wire is bits 47..40

  static constexpr uint64_t kMask = 0xffff'ffff'ffffULL;
  static constexpr Mac broadcast() { return Mac{kMask}; }

  constexpr bool is_broadcast() const { return value == kMask; }
  // I/G bit (IEEE 802-2014 8.2): set for multicast, and so for broadcast too.
  constexpr bool is_multicast() const { return ((value >> 40) & 0x01) != 0; }
  constexpr bool is_unicast() const { return !is_multicast(); }
  constexpr bool is_zero() const { return value == 0; }
  // 01:80:c2:00:00:00..0f: IEEE 802.1Q reserved group addresses (STP, LACP, LLDP...),
  // never forwarded by a standard bridge.
  constexpr bool is_link_local() const { return (value & ~0x0fULL) == 0x0180'c200'0000ULL; }

  // "aa:bb:cc:dd:ee:ff", lower case.
  std::string to_string() const;
  // Accepts six groups of one or two hex digits separated by ':' or '-'. Nothing else.
  static std::optional<Mac> parse(std::string_view text);

  friend constexpr auto operator<=>(Mac, Mac) = default;
};

struct Ipv4Addr {
  uint32_t value = 0;  // host order: 10.0.0.1 -> 0x0a000001

  constexpr bool is_broadcast() const { return value == 0xffff'ffffU; }
  constexpr bool is_multicast() const { return (value >> 28) == 0xe; }  // 224.0.0.0/4
  constexpr bool is_zero() const { return value == 0; }

  // Dotted quad "10.0.0.1".
  std::string to_string() const;
  // Strict dotted quad: four decimal parts 0..255, 1..3 digits each, nothing else.
  static std::optional<Ipv4Addr> parse(std::string_view text);

  friend constexpr auto operator<=>(Ipv4Addr, Ipv4Addr) = default;
};

// Convenience for literals in tests and configs: ipv4(10, 0, 0, 1).
constexpr Ipv4Addr ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return Ipv4Addr{(uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | uint32_t{d}};
}

// absl hashing support (flat_hash_map<Mac, ...>).
template <class H>
H AbslHashValue(H h, Mac m) { return H::combine(std::move(h), m.value); }
template <class H>
H AbslHashValue(H h, Ipv4Addr a) { return H::combine(std::move(h), a.value); }

}  // namespace sdn::pkt

template <>
struct std::hash<sdn::pkt::Mac> {
  size_t operator()(sdn::pkt::Mac m) const noexcept { return std::hash<uint64_t>{}(m.value); }
};
template <>
struct std::hash<sdn::pkt::Ipv4Addr> {
  size_t operator()(sdn::pkt::Ipv4Addr a) const noexcept { return std::hash<uint32_t>{}(a.value); }
};
