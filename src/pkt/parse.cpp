// Layered frame parse.
#include "pkt/parse.hpp"

namespace sdn::pkt {

std::optional<uint16_t> Parsed::l4_src_port() const {
  if (tcp) return tcp->src_port;
  if (udp) return udp->src_port;
  return std::nullopt;
}

std::optional<uint16_t> Parsed::l4_dst_port() const {
  if (tcp) return tcp->dst_port;
  if (udp) return udp->dst_port;
  return std::nullopt;
}

namespace {

Result<void> parse_l4(Parsed& out, const Ipv4& ip, ParseOptions opt) {
  if (!ip.has_l4_header()) return {};
  ByteView seg = ip.payload;
  // A cut packet may have lost its L4 header: that is expected, not malformed.
  const bool cut = ip.truncated;
  switch (ip.protocol) {
    case ipproto::kTcp: {
      if (cut && seg.size() < kTcpMinHeaderLen) return {};
      auto t = parse_tcp(seg);
      if (!t) {
        if (cut && t.error().code == Errc::kTruncated) return {};
        return Unexpected<Error>{t.error()};
      }
      out.tcp = *t;
      return {};
    }
    case ipproto::kUdp: {
      if (cut && seg.size() < kUdpHeaderLen) return {};
      // A first fragment's UDP length covers the whole datagram, not this fragment.
      auto u = parse_udp(seg, opt.allow_truncated || ip.mf);
      if (!u) return Unexpected<Error>{u.error()};
      out.udp = *u;
      return {};
    }
    case ipproto::kIcmp: {
      if (cut && seg.size() < kIcmpHeaderLen) return {};
      auto i = parse_icmp(seg);
      if (!i) return Unexpected<Error>{i.error()};
      out.icmp = *i;
      return {};
    }
    default:
      return {};
  }
}

}  // namespace

Result<Parsed> parse(ByteView frame, ParseOptions opt) {
  auto eth = parse_ethernet(frame);
  if (!eth) return Unexpected<Error>{eth.error()};
  Parsed out;
  out.eth = *eth;
  switch (out.eth.ethertype) {
    case ethertype::kArp: {
      auto a = parse_arp(out.eth.payload);
      if (!a) return Unexpected<Error>{a.error()};
      out.arp = *a;
      break;
    }
    case ethertype::kIpv4: {
      auto ip = parse_ipv4(out.eth.payload, opt.allow_truncated);
      if (!ip) return Unexpected<Error>{ip.error()};
      out.ipv4 = *ip;
      auto l4 = parse_l4(out, *out.ipv4, opt);
      if (!l4) return Unexpected<Error>{l4.error()};
      break;
    }
    case ethertype::kLldp: {
      auto l = parse_lldp(out.eth.payload);
      if (!l) return Unexpected<Error>{l.error()};
      out.lldp = *l;
      break;
    }
    default:
      break;
  }
  return out;
}

}  // namespace sdn::pkt
