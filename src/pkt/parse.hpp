// One-call frame parse for apps: Ethernet (+ VLAN tags), then ARP / IPv4 / LLDP, then
// TCP / UDP / ICMP. Every view points into the caller's frame; nothing is allocated.
#pragma once

#include <cstdint>
#include <optional>

#include "pkt/arp.hpp"
#include "pkt/bytes.hpp"
#include "pkt/error.hpp"
#include "pkt/ethernet.hpp"
#include "pkt/ipv4.hpp"
#include "pkt/l4.hpp"
#include "pkt/lldp.hpp"

namespace sdn::pkt {

struct ParseOptions {
  // Accept IPv4/UDP lengths beyond the bytes present: for a PacketIn whose data the switch
  // cut at max_len (PacketIn.data.size() < total_len). Sets Ipv4::truncated.
  bool allow_truncated = false;
};

struct Parsed {
  Ethernet eth;
  std::optional<Arp> arp{};
  std::optional<Ipv4> ipv4{};
  std::optional<Lldp> lldp{};
  // At most one of these, only for an unfragmented packet or a first fragment.
  std::optional<Tcp> tcp{};
  std::optional<Udp> udp{};
  std::optional<Icmp> icmp{};

  const VlanTag* vlan() const { return eth.outer_vlan(); }
  std::optional<uint16_t> l4_src_port() const;
  std::optional<uint16_t> l4_dst_port() const;
};

// Fails on the first malformed layer it recognises (see each parse_* for the rules).
// Unknown ethertypes and IP protocols are not errors: the layers above are left empty.
// With allow_truncated, an L4 header that the cut removed is left empty, not an error.
Result<Parsed> parse(ByteView frame, ParseOptions opt = {});
// The result views the frame: parsing a temporary buffer would leave it dangling.
Result<Parsed> parse(const Bytes&& frame, ParseOptions opt = {}) = delete;

}  // namespace sdn::pkt
