// Golden frames, produced once by an independent generator (Python struct + RFC 1071)
// and checked against the checksum values noted beside each. Ethernet frames without FCS,
// zero-padded to 60 bytes.
#pragma once

namespace sdn::pkt::golden {

// h1 00:00:00:00:00:01 / 10.0.0.1 asks who-has 10.0.0.2, broadcast.
inline constexpr const char* kArpRequest =
    "ffffffffffff 000000000001 0806 | 0001 0800 06 04 0001 000000000001 0a000001 000000000000 0a000002"
    " 000000000000000000000000000000000000";
// h2 00:00:00:00:00:02 / 10.0.0.2 is-at, unicast to h1.
inline constexpr const char* kArpReply =
    "000000000001 000000000002 0806 | 0001 0800 06 04 0002 000000000002 0a000002 000000000001 0a000001"
    " 000000000000000000000000000000000000";
// ICMP echo request h1 -> h2, id 0x1234 seq 1, "abcdefgh". IPv4 csum 26d7, ICMP csum 5435.
inline constexpr const char* kIcmpEcho =
    "000000000002 000000000001 0800 | 4500 0024 0000 4000 4001 26d7 0a000001 0a000002"
    " | 08 00 5435 1234 0001 6162636465666768 | 00000000000000000000";
// UDP 10.0.0.1:5353 -> 10.0.0.2:53 "hello", IP id 7. IPv4 csum 26c3, UDP csum 92e1.
inline constexpr const char* kUdp =
    "000000000002 000000000001 0800 | 4500 0021 0007 4000 4011 26c3 0a000001 0a000002"
    " | 14e9 0035 000d 92e1 68656c6c6f | 00000000000000000000000000";
// TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80 seq 1000, MSS 1460 option. IPv4 26ca, TCP e3ab.
inline constexpr const char* kTcpSyn =
    "000000000002 000000000001 0800 | 4500 002c 0000 4000 4006 26ca 0a000001 0a000002"
    " | 9c40 0050 000003e8 00000000 6002 ffff e3ab 0000 020405b4 | 0000";
// IPv4 with a Router Alert option (IHL 6), TTL 1, UDP 1000 -> 2000 to 224.0.0.22.
// IPv4 csum fab1, UDP csum 0a0f.
inline constexpr const char* kIpv4Options =
    "01005e000016 000000000001 0800 | 4600 0020 0000 4000 0111 fab1 0a000001 e0000016 94040000"
    " | 03e8 07d0 0008 0a0f | 0000000000000000000000000000";
// VLAN 100 (PCP 3) echo reply h2 -> h1. IPv4 csum 26d7, ICMP csum 5c35.
inline constexpr const char* kVlanIcmpReply =
    "000000000001 000000000002 8100 6064 0800 | 4500 0024 0000 4000 4001 26d7 0a000002 0a000001"
    " | 00 00 5c35 1234 0001 6162636465666768 | 000000000000";
// 802.1ad S-tag 10 + C-tag 20 around the ARP request.
inline constexpr const char* kQinQArp =
    "ffffffffffff 000000000001 88a8 000a 8100 0014 0806 | 0001 0800 06 04 0001 000000000001 0a000001"
    " 000000000000 0a000002 | 00000000000000000000";
// Topology probe: chassis (subtype 7) "dpid:0000000000000001", port (subtype 2) 3, TTL 120.
inline constexpr const char* kLldpProbe =
    "0180c200000e 020000000001 88cc | 0216 07 647069643a30303030303030303030303030303031"
    " 0405 02 00000003 | 0602 0078 | 0000 | 000000000000000000";
// A third-party LLDPDU: MAC chassis ID, interface-name port ID "eth0", TTL 60, port
// description "uplink", system name "sw1", an org-specific TLV, End.
inline constexpr const char* kLldpSysName =
    "0180c200000e 020000000009 88cc | 0207 04 020000000009 | 0405 05 65746830 | 0602 003c"
    " | 0806 75706c696e6b | 0a03 737731 | fe05 00120f0103 | 0000 | 00000000";

}  // namespace sdn::pkt::golden
