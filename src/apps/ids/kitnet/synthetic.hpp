// Seeded synthetic traffic for ids_bench and the tests: a LAN of hosts talking TCP, UDP (DNS),
// ICMP and ARP to each other and, through a gateway, to outside servers, with Poisson arrivals;
// and simple attacks (SYN flood, port scan) to mix into it. Not a traffic model for research:
// just regular, plausible traffic that exercises every feature family.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/ids/kitnet/kitsune.hpp"
#include "apps/ids/kitnet/rng.hpp"

namespace sdn::ids {

struct SyntheticConfig {
  std::size_t hosts = 20;      // LAN hosts 10.0.0.1.. (MAC 02:00:00:00:xx:xx); at least 2
  double rate = 1000;          // mean packets per second (exponential gaps)
  double start = 0;            // time of the first packet, seconds
  uint64_t seed = 1;
};

class SyntheticTraffic {
 public:
  explicit SyntheticTraffic(SyntheticConfig cfg);
  PacketInfo next();
  double now() const { return t_; }
  static uint32_t host_ip(std::size_t i) { return 0x0A000001u + static_cast<uint32_t>(i); }
  static uint64_t host_mac(std::size_t i) { return 0x020000000000ULL + i + 1; }
  static constexpr uint64_t kGatewayMac = 0x02000000FFFEULL;

 private:
  struct Flow {
    enum class Type : uint8_t { kTcp, kUdp, kIcmp, kArp } type = Type::kTcp;
    uint32_t cli_ip = 0, srv_ip = 0;
    uint64_t cli_mac = 0, srv_mac = 0;   // the MACs seen on the LAN (gateway for outside)
    uint16_t cli_port = 0, srv_port = 0;
    uint32_t left = 0;  // packets still to send
    uint32_t sent = 0;
  };
  Flow new_flow();
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_.next() % n); }

  SyntheticConfig cfg_;
  SplitMix64 rng_;
  double t_;
  std::vector<Flow> flows_;
};

// count TCP SYNs (60-byte frames) from one source to dst:port at `rate` per second from t0.
std::vector<PacketInfo> syn_flood(uint32_t src_ip, uint64_t src_mac, uint32_t dst_ip, uint64_t dst_mac,
                                  uint16_t dst_port, double t0, double rate, std::size_t count, uint64_t seed);
// count TCP SYNs from one source to dst on ports 1, 2, ... at `rate` per second from t0.
std::vector<PacketInfo> port_scan(uint32_t src_ip, uint64_t src_mac, uint32_t dst_ip, uint64_t dst_mac, double t0,
                                  double rate, std::size_t count);

}  // namespace sdn::ids
