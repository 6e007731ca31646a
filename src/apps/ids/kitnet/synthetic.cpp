// SyntheticTraffic: a pool of concurrent flows, each emitting its packets in turn; finished
// flows are replaced by new ones with a fresh ephemeral port.
#include "apps/ids/kitnet/synthetic.hpp"

#include <algorithm>
#include <cmath>

namespace sdn::ids {

namespace {
constexpr uint64_t kBroadcast = 0xFFFFFFFFFFFFULL;
constexpr std::size_t kOutsideServers = 16;
uint32_t outside_ip(std::size_t i) { return 0x5DB8D800u + static_cast<uint32_t>(i); }  // 93.184.216.x
}  // namespace

SyntheticTraffic::SyntheticTraffic(SyntheticConfig cfg)
    : cfg_(cfg), rng_(cfg.seed), t_(cfg.start) {
  cfg_.hosts = std::max<std::size_t>(cfg_.hosts, 2);
  flows_.resize(std::max<std::size_t>(4, cfg_.hosts * 2));
  for (Flow& f : flows_) f = new_flow();
}

SyntheticTraffic::Flow SyntheticTraffic::new_flow() {
  Flow f;
  const std::size_t cli = below(cfg_.hosts);
  f.cli_ip = host_ip(cli);
  f.cli_mac = host_mac(cli);
  f.cli_port = static_cast<uint16_t>(32768 + below(28000));
  // Hosts 0 and 1 are the LAN's servers (file/ssh, DNS); the rest are clients.
  const std::size_t pick = below(100);
  auto set_server = [&](std::size_t h) {
    if (h == cli) h = (h + 1) % cfg_.hosts;
    f.srv_ip = host_ip(h);
    f.srv_mac = host_mac(h);
  };
  if (pick < 50) {  // TCP to an outside web server
    f.type = Flow::Type::kTcp;
    f.srv_ip = outside_ip(below(kOutsideServers));
    f.srv_mac = kGatewayMac;
    f.srv_port = below(4) == 0 ? 80 : 443;
    f.left = static_cast<uint32_t>(8 + below(120));
  } else if (pick < 70) {  // TCP to the LAN server
    f.type = Flow::Type::kTcp;
    set_server(0);
    f.srv_port = below(3) == 0 ? 22 : 445;
    f.left = static_cast<uint32_t>(8 + below(200));
  } else if (pick < 85) {  // DNS
    f.type = Flow::Type::kUdp;
    set_server(1);
    f.srv_port = 53;
    f.left = 2;
  } else if (pick < 93) {  // ping
    f.type = Flow::Type::kIcmp;
    set_server(below(cfg_.hosts));
    f.cli_port = f.srv_port = 0;
    f.left = 2 * static_cast<uint32_t>(1 + below(4));
  } else {  // ARP who-has, then the reply
    f.type = Flow::Type::kArp;
    set_server(below(cfg_.hosts));
    f.cli_port = f.srv_port = 0;
    f.left = 2;
  }
  return f;
}

PacketInfo SyntheticTraffic::next() {
  t_ += -std::log(1.0 - rng_.uniform()) / cfg_.rate;
  Flow& f = flows_[below(flows_.size())];
  PacketInfo p;
  p.ts = t_;
  // Request/reply flows alternate; a TCP transfer is mostly server -> client.
  bool from_cli;
  if (f.type == Flow::Type::kTcp)
    from_cli = f.sent < 3 ? f.sent != 1 : below(10) < 4;
  else
    from_cli = f.sent % 2 == 0;
  const uint32_t sip = from_cli ? f.cli_ip : f.srv_ip, dip = from_cli ? f.srv_ip : f.cli_ip;
  p.src_mac = from_cli ? f.cli_mac : f.srv_mac;
  p.dst_mac = from_cli ? f.srv_mac : f.cli_mac;
  p.src_ip = sip;
  p.dst_ip = dip;
  switch (f.type) {
    case Flow::Type::kTcp: {
      p.kind = PacketInfo::Kind::kIpv4;
      p.proto = 6;
      p.src_port = from_cli ? f.cli_port : f.srv_port;
      p.dst_port = from_cli ? f.srv_port : f.cli_port;
      const std::size_t r = below(100);
      if (f.sent < 3)
        p.len = 74;  // handshake
      else if (from_cli)
        p.len = r < 70 ? 66 : static_cast<uint32_t>(66 + below(500));
      else
        p.len = r < 60 ? 1514 : (r < 85 ? 66 : static_cast<uint32_t>(66 + below(1448)));
      break;
    }
    case Flow::Type::kUdp:
      p.kind = PacketInfo::Kind::kIpv4;
      p.proto = 17;
      p.src_port = from_cli ? f.cli_port : f.srv_port;
      p.dst_port = from_cli ? f.srv_port : f.cli_port;
      p.len = from_cli ? static_cast<uint32_t>(70 + below(30)) : static_cast<uint32_t>(100 + below(200));
      break;
    case Flow::Type::kIcmp:
      p.kind = PacketInfo::Kind::kIpv4;
      p.proto = 1;
      p.len = 98;
      break;
    case Flow::Type::kArp:
      p.kind = PacketInfo::Kind::kArp;
      p.len = 60;
      if (from_cli) p.dst_mac = kBroadcast;
      break;
  }
  ++f.sent;
  if (--f.left == 0) f = new_flow();
  return p;
}

namespace {
// `count` minimum-size TCP probes from src to dst at `rate` per second from t0 (ports left 0).
std::vector<PacketInfo> probes(uint32_t src_ip, uint64_t src_mac, uint32_t dst_ip, uint64_t dst_mac, double t0,
                               double rate, std::size_t count) {
  std::vector<PacketInfo> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    PacketInfo& p = out[i];
    p.ts = t0 + static_cast<double>(i) / rate;
    p.len = 60;
    p.src_mac = src_mac;
    p.dst_mac = dst_mac;
    p.kind = PacketInfo::Kind::kIpv4;
    p.src_ip = src_ip;
    p.dst_ip = dst_ip;
    p.proto = 6;
  }
  return out;
}
}  // namespace

std::vector<PacketInfo> syn_flood(uint32_t src_ip, uint64_t src_mac, uint32_t dst_ip, uint64_t dst_mac,
                                  uint16_t dst_port, double t0, double rate, std::size_t count, uint64_t seed) {
  SplitMix64 rng(seed);
  auto out = probes(src_ip, src_mac, dst_ip, dst_mac, t0, rate, count);
  for (auto& p : out) {
    p.src_port = static_cast<uint16_t>(1024 + rng.next() % 60000);  // a fresh port per SYN
    p.dst_port = dst_port;
  }
  return out;
}

std::vector<PacketInfo> port_scan(uint32_t src_ip, uint64_t src_mac, uint32_t dst_ip, uint64_t dst_mac, double t0,
                                  double rate, std::size_t count) {
  auto out = probes(src_ip, src_mac, dst_ip, dst_mac, t0, rate, count);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].src_port = 40000;
    out[i].dst_port = static_cast<uint16_t>(1 + i % 65535);
  }
  return out;
}

}  // namespace sdn::ids
