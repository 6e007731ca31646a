// ARP for IPv4 over Ethernet (RFC 826): the only hardware/protocol pair we parse.
#pragma once

#include <cstdint>

#include "pkt/addr.hpp"
#include "pkt/bytes.hpp"
#include "pkt/error.hpp"

namespace sdn::pkt {

inline constexpr size_t kArpLen = 28;  // htype..tpa for Ethernet/IPv4
inline constexpr uint16_t kArpRequest = 1;
inline constexpr uint16_t kArpReply = 2;

struct Arp {
  uint16_t op = kArpRequest;
  Mac sha{};        // sender hardware address
  Ipv4Addr spa{};   // sender protocol address
  Mac tha{};        // target hardware address (zero in requests)
  Ipv4Addr tpa{};   // target protocol address
  bool operator==(const Arp&) const = default;
};

// `payload` is the Ethernet payload; trailing padding is ignored. kTruncated under 28
// bytes, kUnsupported unless htype=1 ptype=0x0800 hlen=6 plen=4.
Result<Arp> parse_arp(ByteView payload);

}  // namespace sdn::pkt
