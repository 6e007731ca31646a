// IPv4 header (RFC 791 3.1): checksum verified, options skipped by IHL, fragments flagged.
#pragma once

#include <cstdint>

#include "pkt/addr.hpp"
#include "pkt/bytes.hpp"
#include "pkt/error.hpp"

namespace sdn::pkt {

inline constexpr size_t kIpv4MinHeaderLen = 20;

namespace ipproto {
inline constexpr uint8_t kIcmp = 1;
inline constexpr uint8_t kTcp = 6;
inline constexpr uint8_t kUdp = 17;
}  // namespace ipproto

struct Ipv4 {
  uint8_t header_len = kIpv4MinHeaderLen;  // IHL * 4
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint16_t total_length = 0;
  uint16_t id = 0;
  bool df = false;
  bool mf = false;
  uint16_t frag_offset = 0;  // in 8-byte units
  uint8_t ttl = 0;
  uint8_t protocol = 0;
  uint16_t checksum = 0;
  Ipv4Addr src{};
  Ipv4Addr dst{};
  bool checksum_ok = false;  // header checksum verified; a bad one is reported, not rejected
  bool truncated = false;    // total_length > bytes present, accepted with allow_truncated
  ByteView options{};          // header bytes past the first 20 (IHL > 5)
  ByteView payload{};          // [header_len, total_length) clipped to the bytes present

  bool is_fragment() const { return mf || frag_offset != 0; }
  // Only a first fragment (offset 0) carries the L4 header.
  bool has_l4_header() const { return frag_offset == 0; }
};

// Rules (RFC 791 3.1): < 20 bytes -> kTruncated; version != 4 -> kBadValue; IHL < 5 ->
// kBadLength; IHL*4 > bytes -> kTruncated; total_length < IHL*4 -> kBadLength;
// total_length > bytes -> kTruncated unless `allow_truncated` (PacketIn cut at max_len),
// which clips the payload and sets `truncated`. Bytes past total_length (Ethernet padding)
// are ignored.
Result<Ipv4> parse_ipv4(ByteView bytes, bool allow_truncated = false);

// True when the header (IHL*4 bytes of `header`) sums to zero.
bool ipv4_header_checksum_ok(ByteView header);

}  // namespace sdn::pkt
