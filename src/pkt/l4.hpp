// TCP (RFC 9293 3.1), UDP (RFC 768) and ICMP (RFC 792) headers over an IPv4 payload.
#pragma once

#include <cstdint>

#include "pkt/bytes.hpp"
#include "pkt/error.hpp"
#include "pkt/ipv4.hpp"

namespace sdn::pkt {

inline constexpr size_t kTcpMinHeaderLen = 20;
inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr size_t kIcmpHeaderLen = 8;  // type, code, checksum, 4 bytes rest-of-header

namespace tcpflag {
inline constexpr uint16_t kFin = 0x001;
inline constexpr uint16_t kSyn = 0x002;
inline constexpr uint16_t kRst = 0x004;
inline constexpr uint16_t kPsh = 0x008;
inline constexpr uint16_t kAck = 0x010;
inline constexpr uint16_t kUrg = 0x020;
inline constexpr uint16_t kEce = 0x040;
inline constexpr uint16_t kCwr = 0x080;
inline constexpr uint16_t kNs = 0x100;
}  // namespace tcpflag

namespace icmptype {
inline constexpr uint8_t kEchoReply = 0;
inline constexpr uint8_t kDestUnreachable = 3;
inline constexpr uint8_t kRedirect = 5;
inline constexpr uint8_t kEchoRequest = 8;
inline constexpr uint8_t kTimeExceeded = 11;
}  // namespace icmptype

struct Tcp {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t header_len = kTcpMinHeaderLen;  // data offset * 4
  uint16_t flags = 0;                     // 9 bits, tcpflag::*
  uint16_t window = 0;
  uint16_t checksum = 0;
  uint16_t urgent = 0;
  ByteView options{};
  ByteView payload{};
};

struct Udp {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint16_t length = 0;  // header + data, from the wire
  uint16_t checksum = 0;
  ByteView payload{};     // [8, length) clipped to the bytes present
};

struct Icmp {
  uint8_t type = 0;
  uint8_t code = 0;
  uint16_t checksum = 0;
  uint32_t rest = 0;  // rest-of-header: id/seq for echo, unused/MTU for errors
  ByteView payload{};

  uint16_t echo_id() const { return static_cast<uint16_t>(rest >> 16); }
  uint16_t echo_seq() const { return static_cast<uint16_t>(rest & 0xffff); }
};

// < 20 bytes -> kTruncated; data offset < 5 -> kBadLength; data offset * 4 > bytes -> kTruncated.
Result<Tcp> parse_tcp(ByteView segment);
// < 8 bytes -> kTruncated; length < 8 -> kBadLength; length > bytes -> kTruncated unless
// `allow_truncated` (a cut PacketIn or a first fragment).
Result<Udp> parse_udp(ByteView datagram, bool allow_truncated = false);
// < 8 bytes -> kTruncated.
Result<Icmp> parse_icmp(ByteView message);

// Verifies the TCP, UDP or ICMP checksum of `ip`'s payload (false for other protocols,
// for truncated or fragmented packets). A UDP checksum of zero means "none" and passes.
bool l4_checksum_ok(const Ipv4& ip);

}  // namespace sdn::pkt
