// Frame builders.
#include "pkt/build.hpp"

#include <algorithm>
#include <cassert>

#include "pkt/checksum.hpp"

namespace sdn::pkt {

namespace {

void write_eth_header(Writer& w, const EthSpec& eth, uint16_t type) {
  w.mac(eth.dst);
  w.mac(eth.src);
  for (uint8_t i = 0; i < eth.vlan_count && i < kMaxVlanTags; ++i) {
    const VlanTag& t = eth.vlans[i];
    w.be16(t.tpid);
    w.be16(static_cast<uint16_t>((uint16_t{t.pcp} & 0x7) << 13 | (t.dei ? 0x1000 : 0) | (t.vid & 0x0fff)));
  }
  w.be16(type);
}

void pad(Bytes& f, const EthSpec& eth) {
  if (eth.pad && f.size() < kEthMinFrameLen) f.resize(kEthMinFrameLen, 0);
}

// IPv4 header + segment, with the header checksum filled in.
void write_ipv4(Writer& w, Bytes& f, const Ipv4Spec& ip, ByteView l4) {
  assert(ip.options.size() % 4 == 0 && ip.options.size() <= 40);
  const size_t hl = kIpv4MinHeaderLen + ip.options.size();
  assert(hl + l4.size() <= 0xffff);
  const size_t start = w.size();
  w.u8(static_cast<uint8_t>(0x40 | (hl / 4)));
  w.u8(static_cast<uint8_t>((ip.dscp << 2) | (ip.ecn & 0x3)));
  w.be16(static_cast<uint16_t>(hl + l4.size()));
  w.be16(ip.id);
  w.be16(static_cast<uint16_t>((ip.df ? 0x4000 : 0) | (ip.mf ? 0x2000 : 0) | (ip.frag_offset & 0x1fff)));
  w.u8(ip.ttl);
  w.u8(ip.protocol);
  w.be16(0);  // checksum, below
  w.be32(ip.src.value);
  w.be32(ip.dst.value);
  w.bytes(ip.options);
  w.put_be16_at(start + 10, internet_checksum(ByteView(f).subspan(start, hl)));
  w.bytes(l4);
}

}  // namespace

Bytes build_ethernet(const EthSpec& eth, uint16_t type, ByteView payload) {
  Bytes f;
  f.reserve(kEthHeaderLen + kVlanTagLen * eth.vlan_count + std::max(payload.size(), size_t{46}));
  Writer w(f);
  write_eth_header(w, eth, type);
  w.bytes(payload);
  pad(f, eth);
  return f;
}

Bytes build_arp(const EthSpec& eth, const Arp& a) {
  Bytes p;
  p.reserve(kArpLen);
  Writer w(p);
  w.be16(1);  // htype Ethernet
  w.be16(ethertype::kIpv4);
  w.u8(6);
  w.u8(4);
  w.be16(a.op);
  w.mac(a.sha);
  w.be32(a.spa.value);
  w.mac(a.tha);
  w.be32(a.tpa.value);
  return build_ethernet(eth, ethertype::kArp, p);
}

Bytes build_ipv4(const EthSpec& eth, const Ipv4Spec& ip, ByteView l4) {
  Bytes f;
  f.reserve(kEthHeaderLen + kVlanTagLen * eth.vlan_count + kIpv4MinHeaderLen + ip.options.size() + l4.size());
  Writer w(f);
  write_eth_header(w, eth, ethertype::kIpv4);
  write_ipv4(w, f, ip, l4);
  pad(f, eth);
  return f;
}

Bytes build_tcp(const EthSpec& eth, Ipv4Spec ip, const TcpSpec& t, ByteView payload) {
  assert(t.options.size() % 4 == 0 && t.options.size() <= 40);
  ip.protocol = ipproto::kTcp;
  const size_t hl = kTcpMinHeaderLen + t.options.size();
  Bytes s;
  s.reserve(hl + payload.size());
  Writer w(s);
  w.be16(t.src_port);
  w.be16(t.dst_port);
  w.be32(t.seq);
  w.be32(t.ack);
  w.be16(static_cast<uint16_t>(((hl / 4) << 12) | (t.flags & 0x01ff)));
  w.be16(t.window);
  w.be16(0);  // checksum, below
  w.be16(0);  // urgent pointer
  w.bytes(t.options);
  w.bytes(payload);
  w.put_be16_at(16, l4_checksum(ip.src, ip.dst, ipproto::kTcp, s));
  return build_ipv4(eth, ip, s);
}

Bytes build_udp(const EthSpec& eth, Ipv4Spec ip, uint16_t src_port, uint16_t dst_port, ByteView payload) {
  ip.protocol = ipproto::kUdp;
  Bytes s;
  s.reserve(kUdpHeaderLen + payload.size());
  Writer w(s);
  w.be16(src_port);
  w.be16(dst_port);
  w.be16(static_cast<uint16_t>(kUdpHeaderLen + payload.size()));
  w.be16(0);
  w.bytes(payload);
  uint16_t c = l4_checksum(ip.src, ip.dst, ipproto::kUdp, s);
  w.put_be16_at(6, c == 0 ? 0xffff : c);  // RFC 768: a computed zero is sent as all ones
  return build_ipv4(eth, ip, s);
}

Bytes build_icmp(const EthSpec& eth, Ipv4Spec ip, const IcmpSpec& i, ByteView payload) {
  ip.protocol = ipproto::kIcmp;
  Bytes s;
  s.reserve(kIcmpHeaderLen + payload.size());
  Writer w(s);
  w.u8(i.type);
  w.u8(i.code);
  w.be16(0);
  w.be32(i.rest);
  w.bytes(payload);
  w.put_be16_at(2, internet_checksum(s));
  return build_ipv4(eth, ip, s);
}

Bytes build_lldp(const LldpSpec& l) {
  Bytes p;
  Writer w(p);
  auto tlv = [&w](uint8_t type, size_t len) { w.be16(static_cast<uint16_t>((uint16_t{type} << 9) | (len & 0x01ff))); };
  const size_t clen = std::min<size_t>(l.chassis_id.size(), 255);
  tlv(lldptlv::kChassisId, clen + 1);
  w.u8(l.chassis_id_subtype);
  w.bytes(ByteView(l.chassis_id).first(clen));
  const size_t plen = std::min<size_t>(l.port_id.size(), 255);
  tlv(lldptlv::kPortId, plen + 1);
  w.u8(l.port_id_subtype);
  w.bytes(ByteView(l.port_id).first(plen));
  tlv(lldptlv::kTtl, 2);
  w.be16(l.ttl);
  if (l.system_name) {
    const size_t n = std::min<size_t>(l.system_name->size(), 255);
    tlv(lldptlv::kSystemName, n);
    w.bytes(ByteView(reinterpret_cast<const uint8_t*>(l.system_name->data()), n));
  }
  tlv(lldptlv::kEnd, 0);
  EthSpec eth;
  eth.dst = l.dst;
  eth.src = l.src;
  return build_ethernet(eth, ethertype::kLldp, p);
}

Bytes arp_request(Mac sha, Ipv4Addr spa, Ipv4Addr tpa) {
  return build_arp(EthSpec{Mac::broadcast(), sha}, Arp{kArpRequest, sha, spa, Mac{}, tpa});
}

Bytes arp_reply(Mac sha, Ipv4Addr spa, Mac tha, Ipv4Addr tpa) {
  return build_arp(EthSpec{tha, sha}, Arp{kArpReply, sha, spa, tha, tpa});
}

Bytes arp_reply_for(const Arp& request, Mac answer) {
  return arp_reply(answer, request.tpa, request.sha, request.spa);
}

Bytes icmp_echo(Mac src_mac, Mac dst_mac, Ipv4Addr src, Ipv4Addr dst, bool reply, uint16_t id, uint16_t seq,
                ByteView payload) {
  Ipv4Spec ip;
  ip.src = src;
  ip.dst = dst;
  IcmpSpec i;
  i.type = reply ? icmptype::kEchoReply : icmptype::kEchoRequest;
  i.rest = (uint32_t{id} << 16) | seq;
  return build_icmp(EthSpec{dst_mac, src_mac}, ip, i, payload);
}

Bytes lldp_probe(uint64_t dpid, uint32_t port_no, Mac src, uint16_t ttl) {
  LldpSpec l;
  l.src = src;
  std::string c = dpid_chassis_id(dpid);
  l.chassis_id.assign(c.begin(), c.end());
  l.port_id = {static_cast<uint8_t>(port_no >> 24), static_cast<uint8_t>(port_no >> 16),
               static_cast<uint8_t>(port_no >> 8), static_cast<uint8_t>(port_no)};
  l.ttl = ttl;
  return build_lldp(l);
}

}  // namespace sdn::pkt
