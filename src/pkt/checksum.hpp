// The Internet checksum (RFC 1071) for IPv4 headers, ICMP, and TCP/UDP with the IPv4
// pseudo-header (RFC 793 3.1, RFC 768).
#pragma once

#include <cstdint>

#include "pkt/addr.hpp"
#include "pkt/bytes.hpp"

namespace sdn::pkt {

// Adds `b` to a running one's-complement sum (16-bit big-endian words; an odd trailing
// byte is padded with zero, so only the last chunk of a sum may have odd length).
uint32_t checksum_add(uint32_t sum, ByteView b);
// Folds the carries and complements: the value to store in a checksum field.
uint16_t checksum_finish(uint32_t sum);

// Checksum of `b`. Computing it over data that already holds a correct checksum yields 0.
inline uint16_t internet_checksum(ByteView b) { return checksum_finish(checksum_add(0, b)); }

// TCP/UDP checksum over the pseudo-header (src, dst, zero, proto, length) plus `segment`.
uint16_t l4_checksum(Ipv4Addr src, Ipv4Addr dst, uint8_t protocol, ByteView segment);

}  // namespace sdn::pkt
