// libFuzzer target for the pkt parsers: the layered parse (strict and truncation-tolerant)
// and each protocol parser on raw bytes, checking that every view stays inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "pkt/parse.hpp"

namespace {

using sdn::pkt::ByteView;

void check_inside(ByteView outer, ByteView inner) {
  if (inner.empty()) return;
  const uint8_t* b = outer.data();
  const uint8_t* e = outer.data() + outer.size();
  if (inner.data() < b || inner.data() + inner.size() > e) std::abort();
}

void check(ByteView in, const sdn::pkt::Parsed& p) {
  check_inside(in, p.eth.payload);
  if (p.eth.vlan_count > sdn::pkt::kMaxVlanTags) std::abort();
  if (p.ipv4) {
    check_inside(in, p.ipv4->options);
    check_inside(in, p.ipv4->payload);
    if (p.ipv4->header_len < 20) std::abort();
    (void)sdn::pkt::l4_checksum_ok(*p.ipv4);
  }
  if (p.tcp) {
    check_inside(in, p.tcp->options);
    check_inside(in, p.tcp->payload);
  }
  if (p.udp) check_inside(in, p.udp->payload);
  if (p.icmp) check_inside(in, p.icmp->payload);
  if (p.lldp) {
    check_inside(in, p.lldp->chassis_id);
    check_inside(in, p.lldp->port_id);
    if (p.lldp->system_name) check_inside(in, *p.lldp->system_name);
    (void)sdn::pkt::decode_probe(*p.lldp);
  }
  (void)p.l4_src_port();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteView in(data, size);
  for (bool allow : {false, true}) {
    auto p = sdn::pkt::parse(in, sdn::pkt::ParseOptions{allow});
    if (p) check(in, *p);
    else (void)sdn::pkt::to_string(p.error());
  }
  // Each parser straight on the input, so deep rules are reached without a valid frame.
  (void)sdn::pkt::parse_arp(in);
  if (auto ip = sdn::pkt::parse_ipv4(in, size % 2 == 0)) check_inside(in, ip->payload);
  if (auto t = sdn::pkt::parse_tcp(in)) check_inside(in, t->payload);
  if (auto u = sdn::pkt::parse_udp(in, size % 2 == 0)) check_inside(in, u->payload);
  (void)sdn::pkt::parse_icmp(in);
  if (auto l = sdn::pkt::parse_lldp(in)) check_inside(in, l->chassis_id);
  return 0;
}
