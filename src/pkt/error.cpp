// Names for pkt parse errors.
#include "pkt/error.hpp"

namespace sdn::pkt {

const char* errc_name(Errc e) {
  switch (e) {
    case Errc::kTruncated: return "truncated";
    case Errc::kBadLength: return "bad length";
    case Errc::kBadValue: return "bad value";
    case Errc::kUnsupported: return "unsupported";
  }
  return "unknown";
}

const char* layer_name(Layer l) {
  switch (l) {
    case Layer::kEthernet: return "ethernet";
    case Layer::kVlan: return "vlan";
    case Layer::kArp: return "arp";
    case Layer::kIpv4: return "ipv4";
    case Layer::kTcp: return "tcp";
    case Layer::kUdp: return "udp";
    case Layer::kIcmp: return "icmp";
    case Layer::kLldp: return "lldp";
    case Layer::kDns: return "dns";
  }
  return "unknown";
}

std::string to_string(const Error& e) {
  std::string s = layer_name(e.layer);
  s += ": ";
  s += errc_name(e.code);
  s += ": ";
  s += e.detail;
  return s;
}

}  // namespace sdn::pkt
