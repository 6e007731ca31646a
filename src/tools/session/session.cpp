// sdnator-session: the traffic tool of the tests and the demo. An echo server (`serve`) and
// clients that measure what a moving-target defense does to sessions: a long-lived TCP
// connection (`hold`), short connections that each resolve the name afresh (`churn`), a UDP
// stream (`udp`), repeated lookups (`resolve`) and a connect scan of a prefix (`scan`).
// Command-line parsing only; the subcommands live in serve.cpp, tcp_clients.cpp, probes.cpp.
#include "tools/session/session.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "tools/session/net.hpp"

namespace {

using namespace sdn::tools::session;

constexpr const char* kDescription =
    "sdnator-session: TCP/UDP echo server and session probes for the testbed.\n"
    "Names are resolved with getaddrinfo (IPv4 only, a fresh lookup each time; glibc reads\n"
    "/etc/resolv.conf, which 'ip netns exec' replaces with /etc/netns/NS/resolv.conf).\n"
    "Exit status: 0 criteria met, 1 run failed or criteria not met, 2 bad usage.";

void add_json(CLI::App* sc, std::string& target) {
  sc->add_option("--json", target, "write the results as JSON to this file ('-' = stdout)");
}

CLI::Validator port_range(int lo) { return CLI::Range(lo, 65535); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "sdnator-session"};
  app.require_subcommand(1);
  app.fallthrough(false);

  ServeOpts serve;
  auto* s = app.add_subcommand(
      "serve",
      "TCP echo server (every connection echoes until EOF) and UDP echo server; runs until SIGINT/SIGTERM");
  s->add_option("--tcp", serve.tcp_port, "TCP port (0 = any free port)")->check(port_range(0));
  s->add_option("--udp", serve.udp_port, "UDP port (0 = any free port)")->check(port_range(0));
  s->add_option("--bind", serve.bind, "IPv4 address to listen on")->capture_default_str();
  s->add_option("--max-conns", serve.max_conns, "concurrent TCP connections; more are closed at once")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  s->add_option("--ready-file", serve.ready_file,
                "once listening, write {\"tcp\": port, \"udp\": port, \"pid\": pid} here");

  HoldOpts hold;
  auto* h = app.add_subcommand(
      "hold",
      "one long-lived TCP connection, a 64-byte probe every interval; survives? largest gap between echoes?");
  h->add_option("host", hold.host, "name or IPv4 address")->required();
  h->add_option("port", hold.port, "TCP port of the echo server")->required()->check(port_range(1));
  h->add_option("--duration", hold.duration_s, "seconds to hold the connection")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  h->add_option("--interval-ms", hold.interval_ms, "probe interval")
      ->check(CLI::Range(1, 60'000))
      ->capture_default_str();
  h->add_option("--max-stall-ms", hold.max_stall_ms,
                "pass only if the largest gap between echo arrivals is at most this")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  h->add_option("--connect-timeout-ms", hold.connect_timeout_ms, "TCP handshake timeout")
      ->check(CLI::Range(1, 600'000))
      ->capture_default_str();
  h->add_option("--timeout-ms", hold.timeout_ms,
                "give up (error 'timeout') after this long without an echo while some are due")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  add_json(h, hold.json);

  ChurnOpts churn;
  auto* c = app.add_subcommand(
      "churn",
      "N short TCP connections (resolve, connect, 32-byte echo, close) started as a Poisson process");
  c->add_option("host", churn.host, "name or IPv4 address (resolved afresh for every connection)")
      ->required();
  c->add_option("port", churn.port, "TCP port of the echo server")->required()->check(port_range(1));
  c->add_option("--count", churn.count, "connections")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  auto* rate = c->add_option("--rate", churn.rate, "mean connection starts per second (Poisson arrivals)")
                   ->check(CLI::Range(0.001, 1'000'000.0))
                   ->capture_default_str();
  auto* spacing =
      c->add_option("--spacing-ms", churn.spacing_ms, "fixed spacing between starts instead of Poisson")
          ->check(CLI::Range(0, 3'600'000));
  rate->excludes(spacing);
  c->add_option("--concurrency", churn.concurrency,
                "connections in flight at most (a start waits for a free slot)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  c->add_option("--timeout-ms", churn.timeout_ms, "connect timeout, and then echo timeout")
      ->check(CLI::Range(1, 600'000))
      ->capture_default_str();
  c->add_option("--resolve-tries", churn.resolve_tries, "lookups per connection while resolution fails")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  c->add_option("--resolve-retry-ms", churn.resolve_retry_ms, "wait between lookups")
      ->check(CLI::Range(0, 60'000))
      ->capture_default_str();
  c->add_option("--seed", churn.seed, "random seed for the arrival times (default: random)");
  add_json(c, churn.json);

  UdpOpts udp;
  auto* u = app.add_subcommand(
      "udp", "paced UDP stream with sequence numbers through the echo server: loss, reordering, jitter");
  u->add_option("host", udp.host, "name or IPv4 address")->required();
  u->add_option("port", udp.port, "UDP port of the echo server")->required()->check(port_range(1));
  u->add_option("--duration", udp.duration_s, "seconds of sending")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  u->add_option("--pps", udp.pps, "datagrams per second")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  u->add_option("--size", udp.size, "datagram payload bytes")
      ->check(CLI::Range(20, 65507))
      ->capture_default_str();
  u->add_option("--drain-ms", udp.drain_ms, "after the last send, wait at most this long for echoes")
      ->check(CLI::Range(0, 600'000))
      ->capture_default_str();
  u->add_option("--max-loss", udp.max_loss_pct, "pass only if the loss is at most this percentage")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  add_json(u, udp.json);

  ResolveOpts res;
  auto* r = app.add_subcommand("resolve", "look up the A address(es) of HOST, one line per lookup");
  r->add_option("host", res.host, "name to resolve")->required();
  r->add_option("--count", res.count, "lookups")->check(CLI::Range(1, 10'000'000))->capture_default_str();
  r->add_option("--interval-ms", res.interval_ms, "between lookups")
      ->check(CLI::Range(0, 3'600'000))
      ->capture_default_str();
  add_json(r, res.json);

  ScanOpts scan;
  auto* sc =
      app.add_subcommand("scan",
                         "TCP connect scan of every address of CIDR (at most a /16), or of the addresses listed in "
                         "--targets; alive = SYN-ACK or RST. "
                         "Alive addresses on stdout, the summary on stderr");
  std::vector<std::string> scan_args;
  sc->add_option("args", scan_args, "CIDR PORT (a.b.c.d/len and a TCP port), or just PORT with --targets")
      ->required()
      ->expected(1, 2);
  sc->add_option("--targets", scan.targets, "a file with one IPv4 address per line (# comments), instead of CIDR");
  sc->add_option("--timeout-ms", scan.timeout_ms, "per address")
      ->check(CLI::Range(1, 600'000))
      ->capture_default_str();
  sc->add_option("--parallel", scan.parallel, "connects in flight")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  add_json(sc, scan.json);

  auto known = app.get_subcommands([&](const CLI::App* sub) { return argc > 1 && sub->check_name(argv[1]); });
  if (argc > 1 && argv[1][0] != '-' && known.empty()) {
    std::cerr << "sdnator-session: unknown subcommand '" << argv[1] << "'\n\n" << app.help();
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "sdnator-session: " << e.what() << "\n\n";
    CLI::App* shown = &app;
    for (auto* sub : app.get_subcommands()) shown = sub;
    std::cerr << shown->help();
    return kExitUsage;
  }

  if (s->parsed()) return run_serve(serve);
  if (h->parsed()) return run_hold(hold);
  if (c->parsed()) return run_churn(churn);
  if (u->parsed()) return run_udp(udp);
  if (r->parsed()) return run_resolve(res);
  if (sc->parsed()) {
    // CIDR PORT, or PORT alone with --targets.
    if (scan_args.size() != (scan.targets.empty() ? 2U : 1U)) {
      std::cerr << "scan: expected " << (scan.targets.empty() ? "CIDR PORT" : "only PORT with --targets") << "\n\n"
                << sc->help();
      return kExitUsage;
    }
    if (scan_args.size() == 2) scan.cidr = scan_args.front();
    const std::string& port = scan_args.back();
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 1 || p > 65535) {
      std::cerr << "scan: port '" << port << "' is not in 1..65535\n\n" << sc->help();
      return kExitUsage;
    }
    scan.port = static_cast<uint16_t>(p);
    return run_scan(scan);
  }
  std::cerr << app.help();
  return kExitUsage;
}
