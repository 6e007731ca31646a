// TCP, UDP and ICMP header parsing and checksum verification.
#include "pkt/l4.hpp"

#include "pkt/checksum.hpp"

namespace sdn::pkt {

Result<Tcp> parse_tcp(ByteView b) {
  if (b.size() < kTcpMinHeaderLen) return fail(Layer::kTcp, Errc::kTruncated, "shorter than 20 bytes");
  const size_t hl = static_cast<size_t>(b[12] >> 4) * 4;
  if (hl < kTcpMinHeaderLen) return fail(Layer::kTcp, Errc::kBadLength, "data offset < 5");
  if (hl > b.size()) return fail(Layer::kTcp, Errc::kTruncated, "data offset exceeds the bytes present");
  Tcp t;
  t.src_port = load_be16(b, 0);
  t.dst_port = load_be16(b, 2);
  t.seq = load_be32(b, 4);
  t.ack = load_be32(b, 8);
  t.header_len = static_cast<uint8_t>(hl);
  t.flags = load_be16(b, 12) & 0x01ff;
  t.window = load_be16(b, 14);
  t.checksum = load_be16(b, 16);
  t.urgent = load_be16(b, 18);
  t.options = b.subspan(kTcpMinHeaderLen, hl - kTcpMinHeaderLen);
  t.payload = b.subspan(hl);
  return t;
}

Result<Udp> parse_udp(ByteView b, bool allow_truncated) {
  if (b.size() < kUdpHeaderLen) return fail(Layer::kUdp, Errc::kTruncated, "shorter than 8 bytes");
  Udp u;
  u.src_port = load_be16(b, 0);
  u.dst_port = load_be16(b, 2);
  u.length = load_be16(b, 4);
  u.checksum = load_be16(b, 6);
  if (u.length < kUdpHeaderLen) return fail(Layer::kUdp, Errc::kBadLength, "length < 8");
  size_t end = u.length;
  if (end > b.size()) {
    if (!allow_truncated) return fail(Layer::kUdp, Errc::kTruncated, "length exceeds the bytes present");
    end = b.size();
  }
  u.payload = b.subspan(kUdpHeaderLen, end - kUdpHeaderLen);
  return u;
}

Result<Icmp> parse_icmp(ByteView b) {
  if (b.size() < kIcmpHeaderLen) return fail(Layer::kIcmp, Errc::kTruncated, "shorter than 8 bytes");
  Icmp i;
  i.type = b[0];
  i.code = b[1];
  i.checksum = load_be16(b, 2);
  i.rest = load_be32(b, 4);
  i.payload = b.subspan(kIcmpHeaderLen);
  return i;
}

bool l4_checksum_ok(const Ipv4& ip) {
  if (ip.truncated || ip.is_fragment()) return false;
  switch (ip.protocol) {
    case ipproto::kTcp:
      return ip.payload.size() >= kTcpMinHeaderLen && l4_checksum(ip.src, ip.dst, ip.protocol, ip.payload) == 0;
    case ipproto::kUdp: {
      if (ip.payload.size() < kUdpHeaderLen) return false;
      const uint16_t len = load_be16(ip.payload, 4);
      if (len < kUdpHeaderLen || len > ip.payload.size()) return false;
      if (load_be16(ip.payload, 6) == 0) return true;  // RFC 768: no checksum computed
      return l4_checksum(ip.src, ip.dst, ip.protocol, ip.payload.first(len)) == 0;
    }
    case ipproto::kIcmp:
      return ip.payload.size() >= kIcmpHeaderLen && internet_checksum(ip.payload) == 0;
    default:
      return false;
  }
}

}  // namespace sdn::pkt
