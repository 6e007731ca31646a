// RFC 1071 one's-complement sum.
#include "pkt/checksum.hpp"

namespace sdn::pkt {

uint32_t checksum_add(uint32_t sum, ByteView b) {
  // 64-bit accumulator: up to 2^32 words before overflow, far beyond any frame.
  uint64_t acc = sum;
  size_t i = 0;
  for (; i + 1 < b.size(); i += 2) acc += (uint32_t{b[i]} << 8) | b[i + 1];
  if (i < b.size()) acc += uint32_t{b[i]} << 8;
  while (acc >> 32) acc = (acc & 0xffff'ffffU) + (acc >> 32);
  return static_cast<uint32_t>(acc);
}

uint16_t checksum_finish(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

uint16_t l4_checksum(Ipv4Addr src, Ipv4Addr dst, uint8_t protocol, ByteView segment) {
  uint64_t acc = 0;
  acc += src.value >> 16;
  acc += src.value & 0xffff;
  acc += dst.value >> 16;
  acc += dst.value & 0xffff;
  acc += protocol;
  acc += segment.size() & 0xffff;  // segment length fits 16 bits (IPv4 total_length)
  uint32_t sum = static_cast<uint32_t>(acc);
  return checksum_finish(checksum_add(sum, segment));
}

}  // namespace sdn::pkt
