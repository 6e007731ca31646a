// ARP parsing (RFC 826 packet format).
#include "pkt/arp.hpp"

#include "pkt/ethernet.hpp"

namespace sdn::pkt {

Result<Arp> parse_arp(ByteView p) {
  if (p.size() < kArpLen) return fail(Layer::kArp, Errc::kTruncated, "ARP shorter than 28 bytes");
  if (load_be16(p, 0) != 1 || load_be16(p, 2) != ethertype::kIpv4 || p[4] != 6 || p[5] != 4)
    return fail(Layer::kArp, Errc::kUnsupported, "not Ethernet/IPv4 ARP");
  Arp a;
  a.op = load_be16(p, 6);
  a.sha = load_mac(p, 8);
  a.spa = Ipv4Addr{load_be32(p, 14)};
  a.tha = load_mac(p, 18);
  a.tpa = Ipv4Addr{load_be32(p, 24)};
  return a;
}

}  // namespace sdn::pkt
