// Frame builders: complete Ethernet frames with correct IPv4, ICMP, TCP and UDP checksums,
// padded to the 60-byte Ethernet minimum. For ARP replies, LLDP probes and tests. These
// allocate (they return a fresh frame); the parsers never do.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "pkt/addr.hpp"
#include "pkt/arp.hpp"
#include "pkt/bytes.hpp"
#include "pkt/ethernet.hpp"
#include "pkt/ipv4.hpp"
#include "pkt/l4.hpp"
#include "pkt/lldp.hpp"

namespace sdn::pkt {

struct EthSpec {
  Mac dst{};
  Mac src{};
  std::array<VlanTag, kMaxVlanTags> vlans{};  // outer first
  uint8_t vlan_count = 0;                     // 0..2
  bool pad = true;                            // zero-pad to kEthMinFrameLen

  EthSpec& vlan(uint16_t vid, uint8_t pcp = 0, uint16_t tpid = ethertype::kVlan) {
    if (vlan_count < kMaxVlanTags) vlans[vlan_count++] = VlanTag{tpid, pcp, false, vid};
    return *this;
  }
};

struct Ipv4Spec {
  Ipv4Addr src{};
  Ipv4Addr dst{};
  uint8_t protocol = 0;  // set by build_tcp/udp/icmp
  uint8_t ttl = 64;
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint16_t id = 0;
  bool df = true;
  bool mf = false;
  uint16_t frag_offset = 0;  // 8-byte units
  ByteView options{};          // length a multiple of 4, at most 40
};

struct TcpSpec {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint16_t flags = tcpflag::kSyn;
  uint16_t window = 65535;
  ByteView options{};  // length a multiple of 4, at most 40
};

struct IcmpSpec {
  uint8_t type = icmptype::kEchoRequest;
  uint8_t code = 0;
  uint32_t rest = 0;
};

struct LldpSpec {
  Mac src{};
  Mac dst = kLldpMulticast;
  uint8_t chassis_id_subtype = kChassisIdSubtypeLocal;
  Bytes chassis_id{};  // 1..255 bytes (longer is cut at 255)
  uint8_t port_id_subtype = kPortIdSubtypePortComponent;
  Bytes port_id{};     // 1..255 bytes
  uint16_t ttl = 120;
  std::optional<std::string> system_name{};  // cut at 255 bytes
};

// Preconditions (asserted; these are programmer inputs, not wire data): payloads fit an
// IPv4 total_length (65535), option lengths as documented.
Bytes build_ethernet(const EthSpec& eth, uint16_t ethertype, ByteView payload);
Bytes build_arp(const EthSpec& eth, const Arp& arp);
Bytes build_ipv4(const EthSpec& eth, const Ipv4Spec& ip, ByteView l4);
Bytes build_tcp(const EthSpec& eth, Ipv4Spec ip, const TcpSpec& tcp, ByteView payload = {});
Bytes build_udp(const EthSpec& eth, Ipv4Spec ip, uint16_t src_port, uint16_t dst_port, ByteView payload = {});
Bytes build_icmp(const EthSpec& eth, Ipv4Spec ip, const IcmpSpec& icmp, ByteView payload = {});
Bytes build_lldp(const LldpSpec& lldp);

// Shorthands.
// Broadcast who-has `tpa` from (sha, spa).
Bytes arp_request(Mac sha, Ipv4Addr spa, Ipv4Addr tpa);
// Unicast "spa is-at sha" to (tha, tpa).
Bytes arp_reply(Mac sha, Ipv4Addr spa, Mac tha, Ipv4Addr tpa);
// The reply to a parsed request, answering that request.tpa is at `answer` (proxy ARP).
Bytes arp_reply_for(const Arp& request, Mac answer);
Bytes icmp_echo(Mac src_mac, Mac dst_mac, Ipv4Addr src, Ipv4Addr dst, bool reply, uint16_t id, uint16_t seq,
                ByteView payload = {});
// Topology probe: chassis "dpid:<hex>", port component = port_no (4 bytes), to 01:80:c2:00:00:0e.
Bytes lldp_probe(uint64_t dpid, uint32_t port_no, Mac src, uint16_t ttl = 120);

}  // namespace sdn::pkt
