// sdnator-session subcommands: options as parsed by session.cpp and one run function each.
// Every run function returns the process exit code (net.hpp: kExitOk / kExitFail / kExitUsage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sdn::tools::session {

struct ServeOpts {
  std::string bind = "0.0.0.0";
  std::optional<uint16_t> tcp_port;  // 0 = any free port (see ready_file)
  std::optional<uint16_t> udp_port;
  int max_conns = 4096;
  std::string ready_file;  // JSON {"tcp": port, "udp": port} once listening
};
int run_serve(const ServeOpts& o);

struct HoldOpts {
  std::string host;
  uint16_t port = 0;
  double duration_s = 10;
  int interval_ms = 100;
  int max_stall_ms = 1000;
  int connect_timeout_ms = 3000;
  int timeout_ms = 5000;  // no echo for this long while some are due: "timeout"
  std::string json;
};
int run_hold(const HoldOpts& o);

struct ChurnOpts {
  std::string host;
  uint16_t port = 0;
  int count = 100;
  double rate = 20;               // Poisson arrivals per second
  std::optional<int> spacing_ms;  // fixed spacing instead
  int concurrency = 32;
  int timeout_ms = 2000;  // connect, and then the echo, each
  int resolve_tries = 3;
  int resolve_retry_ms = 200;
  std::optional<uint64_t> seed;
  std::string json;
};
int run_churn(const ChurnOpts& o);

struct UdpOpts {
  std::string host;
  uint16_t port = 0;
  double duration_s = 10;
  int pps = 50;
  int size = 64;
  int drain_ms = 1000;  // after the last send, wait this long for echoes
  double max_loss_pct = 1.0;
  std::string json;
};
int run_udp(const UdpOpts& o);

struct ResolveOpts {
  std::string host;
  int count = 1;
  int interval_ms = 1000;
  std::string json;
};
int run_resolve(const ResolveOpts& o);

struct ScanOpts {
  std::string cidr;     // or
  std::string targets;  // a file of addresses, one per line
  uint16_t port = 0;
  int timeout_ms = 500;
  int parallel = 64;
  std::string json;
};
int run_scan(const ScanOpts& o);

}  // namespace sdn::tools::session
