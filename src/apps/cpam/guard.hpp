// CPAM's edge guard (docs/threat-model.md): what keeps a protected host's fixed identities out
// of reach whatever an attacker on the campus picks as source, protocol or port. Proactive
// rules installed when a switch connects (IPv6 closed, real addresses unreachable, no VIP
// source entering an edge port), so a scan costs a rule lookup on the switch and no PacketIn;
// and the source guard (IP Source Guard / RFC 7039 SAVI): a frame entering an edge port must
// carry the MAC and address bound there, else it is dropped and an exact drop rule keeps its
// repeats on the switch for a few seconds. Pure builders here; the checks are Cpam's (guard.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "apps/cpam/config.hpp"
#include "ofp/message.hpp"

namespace sdn::apps::cpam::guard {

// Cookies: top byte 0x03 (the guard's range, apart from CPAM's 0x02 so that CPAM's resync never
// judges them; the runtime's clear-on-connect deletes them and on_switch_up puts them back),
// then a 4-bit kind at bits 52-55, then the kind's own low bits (an edge port's number, or a
// prefix index).
inline constexpr uint64_t kCookie = 0x0300'0000'0000'0000ULL;
inline constexpr uint64_t kCookieMask = 0xff00'0000'0000'0000ULL;
enum class Kind : uint8_t {
  kIpv6 = 1,       // eth_type=0x86dd -> drop (ipv6 = "block")
  kRealDrop = 2,   // ip/arp to a protected real address -> drop
  kRealAllow = 3,  // ... from an address of real_allowed_from -> controller (forwarding serves it)
  kVipSource = 4,  // in_port=<edge port>, ip, nw_src=<VIP range> -> drop
  kSpoof = 5,      // the source guard's exact drop of one offending source on one port
};
inline constexpr int kKinds = 6;
uint64_t cookie(Kind k, uint64_t low = 0);
inline Kind kind_of(uint64_t c) { return static_cast<Kind>((c >> 52) & 0xf); }
inline constexpr uint64_t kKindMask = 0xfff0'0000'0000'0000ULL;  // range + kind

// An aligned CIDR block.
struct Prefix {
  uint32_t base = 0;
  uint8_t len = 32;
  bool operator==(const Prefix&) const = default;
};
// The fewest aligned blocks whose union is exactly `ips` (duplicates ignored): 10.0.0.1-16 is
// .1/32 .2/31 .4/30 .8/29 .16/32. A block never holds an address that is not in `ips`, so an
// unprotected host next to protected ones stays reachable.
std::vector<Prefix> cover(std::vector<uint32_t> ips);

// What every switch gets when it connects: the IPv6 drop (unless allowed), and for each block
// of protected real addresses an IPv4 drop and an ARP drop (arp_tpa) at real_block_priority,
// with, one above, the same to the controller for each address of real_allowed_from.
std::vector<ofp::FlowMod> switch_rules(const CpamConfig& cfg, std::span<const Prefix> real);
// One block's drops (and allows) under cookie low bits `low`, and their DELETE by exact cookie.
// Past real_block_max_rules a switch does not get every block: each protected address gets
// its drops, as a /32 under low = kHostLow | host index, on the switch it is located at, and
// a packet for it entering anywhere else misses, reaches the controller and is dropped there.
inline constexpr uint64_t kHostLow = uint64_t{1} << 40;
std::vector<ofp::FlowMod> real_rules(const CpamConfig& cfg, const Prefix& p, uint64_t low);
std::vector<ofp::FlowMod> real_delete(const CpamConfig& cfg, uint64_t low);
size_t rules_per_prefix(const CpamConfig& cfg);
// The drop of VIP sources entering edge port `port` (hosts never own a VIP: someone forged it;
// on the VIP owner's switch it would otherwise match the VIP rule and be delivered), and its
// DELETE when the port stops being an edge.
ofp::FlowMod vip_source_drop(const CpamConfig& cfg, uint32_t port);
ofp::FlowMod vip_source_delete(const CpamConfig& cfg, uint32_t port);

// What a frame got wrong at its edge port: the source MAC, or (MAC right) the IPv4 source or
// the ARP sender address.
struct Offence {
  enum What : uint8_t { kMac, kIpv4Src, kArpSpa } what = kMac;
  uint64_t value = 0;  // the offending MAC or address
};
// The exact drop of that source on `in_port` (hard timeout spoof_drop, so that a false
// positive, e.g. a host that moved before the controller's view caught up, heals by itself).
ofp::FlowMod spoof_drop(const CpamConfig& cfg, uint32_t in_port, const Offence& o);

// Packet counts of the guard's rules on one switch, by kind (flow stats).
struct Dropped {
  uint64_t by_kind[kKinds] = {};
};

}  // namespace sdn::apps::cpam::guard
