// Golden bytes both ways: each hand-made frame parses to the expected fields, and the
// builders reproduce it byte for byte.
#include <gtest/gtest.h>

#include "pkt/build.hpp"
#include "pkt/checksum.hpp"
#include "pkt/parse.hpp"
#include "unit/pkt/golden.hpp"
#include "unit/pkt/hex.hpp"

namespace sdn::pkt {
namespace {

using test::from_hex;
using test::to_hex;

constexpr Mac kH1{0x000000000001ULL};
constexpr Mac kH2{0x000000000002ULL};
constexpr Ipv4Addr kIp1 = ipv4(10, 0, 0, 1);
constexpr Ipv4Addr kIp2 = ipv4(10, 0, 0, 2);

Parsed must_parse(const Bytes& f) {
  auto p = parse(f);
  EXPECT_TRUE(p.has_value()) << (p ? "" : to_string(p.error()));
  return p ? *p : Parsed{};
}

TEST(Golden, ArpRequest) {
  const Bytes f = from_hex(golden::kArpRequest);
  ASSERT_EQ(f.size(), 60u);
  Parsed p = must_parse(f);
  EXPECT_TRUE(p.eth.dst.is_broadcast());
  EXPECT_EQ(p.eth.src, kH1);
  EXPECT_EQ(p.eth.ethertype, ethertype::kArp);
  EXPECT_EQ(p.eth.vlan_count, 0);
  ASSERT_TRUE(p.arp);
  EXPECT_EQ(*p.arp, (Arp{kArpRequest, kH1, kIp1, Mac{}, kIp2}));
  EXPECT_FALSE(p.ipv4);
  EXPECT_EQ(to_hex(arp_request(kH1, kIp1, kIp2)), to_hex(f));
}

TEST(Golden, ArpReply) {
  const Bytes f = from_hex(golden::kArpReply);
  Parsed p = must_parse(f);
  ASSERT_TRUE(p.arp);
  EXPECT_EQ(*p.arp, (Arp{kArpReply, kH2, kIp2, kH1, kIp1}));
  EXPECT_EQ(to_hex(arp_reply(kH2, kIp2, kH1, kIp1)), to_hex(f));
  EXPECT_EQ(to_hex(arp_reply_for(Arp{kArpRequest, kH1, kIp1, Mac{}, kIp2}, kH2)), to_hex(f));
}

TEST(Golden, IcmpEcho) {
  const Bytes f = from_hex(golden::kIcmpEcho);
  Parsed p = must_parse(f);
  ASSERT_TRUE(p.ipv4);
  EXPECT_EQ(p.ipv4->src, kIp1);
  EXPECT_EQ(p.ipv4->dst, kIp2);
  EXPECT_EQ(p.ipv4->protocol, ipproto::kIcmp);
  EXPECT_EQ(p.ipv4->ttl, 64);
  EXPECT_TRUE(p.ipv4->df);
  EXPECT_FALSE(p.ipv4->is_fragment());
  EXPECT_EQ(p.ipv4->checksum, 0x26d7);
  EXPECT_TRUE(p.ipv4->checksum_ok);
  EXPECT_EQ(p.ipv4->total_length, 36);
  EXPECT_EQ(p.ipv4->payload.size(), 16u);  // padding excluded
  ASSERT_TRUE(p.icmp);
  EXPECT_EQ(p.icmp->type, icmptype::kEchoRequest);
  EXPECT_EQ(p.icmp->code, 0);
  EXPECT_EQ(p.icmp->checksum, 0x5435);
  EXPECT_EQ(p.icmp->echo_id(), 0x1234);
  EXPECT_EQ(p.icmp->echo_seq(), 1);
  EXPECT_EQ(as_text(p.icmp->payload), "abcdefgh");
  EXPECT_TRUE(l4_checksum_ok(*p.ipv4));
  EXPECT_FALSE(p.tcp || p.udp || p.arp || p.lldp);
  const std::string data = "abcdefgh";
  EXPECT_EQ(to_hex(icmp_echo(kH1, kH2, kIp1, kIp2, false, 0x1234, 1,
                             ByteView(reinterpret_cast<const uint8_t*>(data.data()), data.size()))),
            to_hex(f));
}

TEST(Golden, Udp) {
  const Bytes f = from_hex(golden::kUdp);
  Parsed p = must_parse(f);
  ASSERT_TRUE(p.ipv4 && p.udp);
  EXPECT_EQ(p.ipv4->id, 7);
  EXPECT_EQ(p.ipv4->checksum, 0x26c3);
  EXPECT_TRUE(p.ipv4->checksum_ok);
  EXPECT_EQ(p.udp->src_port, 5353);
  EXPECT_EQ(p.udp->dst_port, 53);
  EXPECT_EQ(p.udp->length, 13);
  EXPECT_EQ(p.udp->checksum, 0x92e1);
  EXPECT_EQ(as_text(p.udp->payload), "hello");
  EXPECT_EQ(p.l4_src_port(), 5353);
  EXPECT_EQ(p.l4_dst_port(), 53);
  EXPECT_TRUE(l4_checksum_ok(*p.ipv4));
  Ipv4Spec ip{kIp1, kIp2};
  ip.id = 7;
  const std::string data = "hello";
  EXPECT_EQ(to_hex(build_udp(EthSpec{kH2, kH1}, ip, 5353, 53,
                             ByteView(reinterpret_cast<const uint8_t*>(data.data()), data.size()))),
            to_hex(f));
}

TEST(Golden, TcpSyn) {
  const Bytes f = from_hex(golden::kTcpSyn);
  Parsed p = must_parse(f);
  ASSERT_TRUE(p.ipv4 && p.tcp);
  EXPECT_EQ(p.ipv4->checksum, 0x26ca);
  EXPECT_TRUE(p.ipv4->checksum_ok);
  EXPECT_EQ(p.tcp->src_port, 40000);
  EXPECT_EQ(p.tcp->dst_port, 80);
  EXPECT_EQ(p.tcp->seq, 1000u);
  EXPECT_EQ(p.tcp->ack, 0u);
  EXPECT_EQ(p.tcp->header_len, 24);
  EXPECT_EQ(p.tcp->flags, tcpflag::kSyn);
  EXPECT_EQ(p.tcp->window, 65535);
  EXPECT_EQ(p.tcp->checksum, 0xe3ab);
  EXPECT_EQ(to_hex(Bytes(p.tcp->options.begin(), p.tcp->options.end())), "020405b4");
  EXPECT_TRUE(p.tcp->payload.empty());
  EXPECT_TRUE(l4_checksum_ok(*p.ipv4));
  const Bytes mss = from_hex("020405b4");
  TcpSpec t;
  t.src_port = 40000;
  t.dst_port = 80;
  t.seq = 1000;
  t.options = mss;
  EXPECT_EQ(to_hex(build_tcp(EthSpec{kH2, kH1}, Ipv4Spec{kIp1, kIp2}, t)), to_hex(f));
}

TEST(Golden, Ipv4OptionsSkippedByIhl) {
  const Bytes f = from_hex(golden::kIpv4Options);
  Parsed p = must_parse(f);
  ASSERT_TRUE(p.ipv4 && p.udp);
  EXPECT_EQ(p.ipv4->header_len, 24);
  EXPECT_EQ(to_hex(Bytes(p.ipv4->options.begin(), p.ipv4->options.end())), "94040000");
  EXPECT_EQ(p.ipv4->checksum, 0xfab1);
  EXPECT_TRUE(p.ipv4->checksum_ok);
  EXPECT_EQ(p.ipv4->ttl, 1);
  EXPECT_EQ(p.udp->src_port, 1000);
  EXPECT_EQ(p.udp->dst_port, 2000);
  EXPECT_EQ(p.udp->checksum, 0x0a0f);
  EXPECT_TRUE(l4_checksum_ok(*p.ipv4));
  const Bytes ra = from_hex("94040000");
  Ipv4Spec ip{kIp1, ipv4(224, 0, 0, 22)};
  ip.ttl = 1;
  ip.options = ra;
  EXPECT_EQ(to_hex(build_udp(EthSpec{Mac{0x01005e000016ULL}, kH1}, ip, 1000, 2000)), to_hex(f));
}

TEST(Golden, VlanTaggedIcmp) {
  const Bytes f = from_hex(golden::kVlanIcmpReply);
  Parsed p = must_parse(f);
  ASSERT_NE(p.vlan(), nullptr);
  EXPECT_EQ(p.eth.vlan_count, 1);
  EXPECT_EQ(p.vlan()->tpid, ethertype::kVlan);
  EXPECT_EQ(p.vlan()->vid, 100);
  EXPECT_EQ(p.vlan()->pcp, 3);
  EXPECT_FALSE(p.vlan()->dei);
  EXPECT_EQ(p.eth.ethertype, ethertype::kIpv4);
  ASSERT_TRUE(p.icmp);
  EXPECT_EQ(p.icmp->type, icmptype::kEchoReply);
  EXPECT_EQ(p.icmp->checksum, 0x5c35);
  EXPECT_TRUE(l4_checksum_ok(*p.ipv4));
  const std::string data = "abcdefgh";
  IcmpSpec ic;
  ic.type = icmptype::kEchoReply;
  ic.rest = 0x12340001;
  EXPECT_EQ(to_hex(build_icmp(EthSpec{kH1, kH2}.vlan(100, 3), Ipv4Spec{kIp2, kIp1}, ic,
                              ByteView(reinterpret_cast<const uint8_t*>(data.data()), data.size()))),
            to_hex(f));
}

TEST(Golden, QinQArp) {
  const Bytes f = from_hex(golden::kQinQArp);
  Parsed p = must_parse(f);
  ASSERT_EQ(p.eth.vlan_count, 2);
  EXPECT_EQ(p.eth.vlans[0], (VlanTag{ethertype::kQinQ, 0, false, 10}));
  EXPECT_EQ(p.eth.vlans[1], (VlanTag{ethertype::kVlan, 0, false, 20}));
  EXPECT_EQ(p.eth.header_len(), 22u);
  ASSERT_TRUE(p.arp);
  EXPECT_EQ(p.arp->tpa, kIp2);
  EXPECT_EQ(to_hex(build_arp(EthSpec{Mac::broadcast(), kH1}.vlan(10, 0, ethertype::kQinQ).vlan(20),
                             Arp{kArpRequest, kH1, kIp1, Mac{}, kIp2})),
            to_hex(f));
}

TEST(Golden, LldpProbe) {
  const Bytes f = from_hex(golden::kLldpProbe);
  Parsed p = must_parse(f);
  EXPECT_EQ(p.eth.dst, kLldpMulticast);
  ASSERT_TRUE(p.lldp);
  EXPECT_EQ(p.lldp->chassis_id_subtype, kChassisIdSubtypeLocal);
  EXPECT_EQ(as_text(p.lldp->chassis_id), "dpid:0000000000000001");
  EXPECT_EQ(p.lldp->port_id_subtype, kPortIdSubtypePortComponent);
  EXPECT_EQ(p.lldp->ttl, 120);
  EXPECT_FALSE(p.lldp->system_name);
  EXPECT_EQ(decode_probe(*p.lldp), (LldpProbe{1, 3}));
  EXPECT_EQ(to_hex(lldp_probe(1, 3, Mac{0x020000000001ULL})), to_hex(f));
}

TEST(Golden, LldpThirdPartyWithSystemName) {
  const Bytes f = from_hex(golden::kLldpSysName);
  ASSERT_EQ(f.size(), 60u);
  Parsed p = must_parse(f);
  ASSERT_TRUE(p.lldp);
  EXPECT_EQ(p.lldp->chassis_id_subtype, kChassisIdSubtypeMac);
  EXPECT_EQ(to_hex(Bytes(p.lldp->chassis_id.begin(), p.lldp->chassis_id.end())), "020000000009");
  EXPECT_EQ(p.lldp->port_id_subtype, 5);
  EXPECT_EQ(as_text(p.lldp->port_id), "eth0");
  EXPECT_EQ(p.lldp->ttl, 60);
  ASSERT_TRUE(p.lldp->system_name);
  EXPECT_EQ(as_text(*p.lldp->system_name), "sw1");
  EXPECT_FALSE(decode_probe(*p.lldp));  // not our probe convention
  LldpSpec l;
  l.src = Mac{0x020000000009ULL};
  l.chassis_id_subtype = kChassisIdSubtypeMac;
  l.chassis_id = from_hex("020000000009");
  l.port_id_subtype = 5;
  l.port_id = {'e', 't', 'h', '0'};
  l.ttl = 60;
  l.system_name = "sw1";
  // The builder writes no port description or org TLVs: compare the parse instead.
  const Bytes q_frame = build_lldp(l);
  auto q = parse(q_frame);
  ASSERT_TRUE(q && q->lldp);
  EXPECT_EQ(as_text(*q->lldp->system_name), "sw1");
  EXPECT_EQ(as_text(q->lldp->port_id), "eth0");
}

TEST(Golden, ChassisIdText) {
  EXPECT_EQ(dpid_chassis_id(0x1), "dpid:0000000000000001");
  EXPECT_EQ(dpid_chassis_id(0xfedcba9876543210ULL), "dpid:fedcba9876543210");
}

}  // namespace
}  // namespace sdn::pkt
