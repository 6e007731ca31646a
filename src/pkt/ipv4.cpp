// IPv4 header parsing.
#include "pkt/ipv4.hpp"

#include "pkt/checksum.hpp"

namespace sdn::pkt {

bool ipv4_header_checksum_ok(ByteView header) { return internet_checksum(header) == 0; }

Result<Ipv4> parse_ipv4(ByteView b, bool allow_truncated) {
  if (b.size() < kIpv4MinHeaderLen) return fail(Layer::kIpv4, Errc::kTruncated, "shorter than 20 bytes");
  const uint8_t vihl = b[0];
  if ((vihl >> 4) != 4) return fail(Layer::kIpv4, Errc::kBadValue, "version is not 4");
  const size_t hl = size_t{vihl & 0x0fU} * 4;
  if (hl < kIpv4MinHeaderLen) return fail(Layer::kIpv4, Errc::kBadLength, "IHL < 5");
  if (hl > b.size()) return fail(Layer::kIpv4, Errc::kTruncated, "IHL exceeds the bytes present");
  Ipv4 ip;
  ip.header_len = static_cast<uint8_t>(hl);
  ip.dscp = b[1] >> 2;
  ip.ecn = b[1] & 0x3;
  ip.total_length = load_be16(b, 2);
  if (ip.total_length < hl) return fail(Layer::kIpv4, Errc::kBadLength, "total_length < header length");
  size_t end = ip.total_length;
  if (end > b.size()) {
    if (!allow_truncated) return fail(Layer::kIpv4, Errc::kTruncated, "total_length exceeds the bytes present");
    ip.truncated = true;
    end = b.size();
  }
  ip.id = load_be16(b, 4);
  const uint16_t frag = load_be16(b, 6);
  ip.df = (frag & 0x4000) != 0;
  ip.mf = (frag & 0x2000) != 0;
  ip.frag_offset = frag & 0x1fff;
  ip.ttl = b[8];
  ip.protocol = b[9];
  ip.checksum = load_be16(b, 10);
  ip.src = Ipv4Addr{load_be32(b, 12)};
  ip.dst = Ipv4Addr{load_be32(b, 16)};
  ip.checksum_ok = ipv4_header_checksum_ok(b.first(hl));
  ip.options = b.subspan(kIpv4MinHeaderLen, hl - kIpv4MinHeaderLen);
  ip.payload = b.subspan(hl, end - hl);
  return ip;
}

}  // namespace sdn::pkt
