// ofbench: an RFC 8456 benchmark for any OpenFlow 1.3 controller, with emulated switches and
// hosts (see README.md in this folder). Prints a summary, writes the run's JSON.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "tools/ofbench/bench.hpp"

namespace {

std::string num(const nlohmann::json& v, int prec = 1) {
  if (v.is_null()) return "-";
  if (v.is_number_integer() || v.is_number_unsigned()) return std::to_string(v.get<long long>());
  return fmt::format("{:.{}f}", v.get<double>(), prec);
}

void summary(const nlohmann::json& j) {
  fmt::print("ofbench {} against {} ({} switches", j["mode"].get<std::string>(), j["controller"].get<std::string>(),
             j["switches"]["count"].get<long long>());
  if (j["config"]["hosts"].get<long long>() > 0) fmt::print(", {} hosts", j["config"]["hosts"].get<long long>());
  fmt::print(")\n");
  const auto& l = j["latency_us"];
  fmt::print("  requests {}  answered {}  lost {}  rate {}/s over {} s\n", num(j["requests"]), num(j["answered"]),
             num(j["lost"]), num(j["rate_per_s"], 0), num(j["duration_s"]));
  fmt::print("  latency us: min {}  mean {}  p50 {}  p99 {}  p99.9 {}  max {}\n", num(l["min"]), num(l["mean"]),
             num(l["p50"]), num(l["p99"]), num(l["p999"]), num(l["max"]));
  if (j.contains("cpam")) {
    const auto& c = j["cpam"];
    const auto& r = c["rppt_us"];
    fmt::print("  cpam: {} connections, {} established, {} failed; {} rotations seen; {} DNS answers changed\n",
               num(c["events"]), num(c["established"]), num(c["failures"]), j["rotations"].size(), num(c["dns_changes"]));
    for (const char* k : {"all", "rotating", "quiet"})
      fmt::print("  rppt {:<8} n {}  p50 {}  p99 {}  max {} us\n", k, num(r[k]["count"]), num(r[k]["p50"]),
                 num(r[k]["p99"]), num(r[k]["max"]));
    fmt::print("  connect (DNS..SYN-ACK) p50 {}  p99 {}  max {} us\n", num(c["connect_us"]["p50"]),
               num(c["connect_us"]["p99"]), num(c["connect_us"]["max"]));
  }
  for (auto it = j["rfc8456"].begin(); it != j["rfc8456"].end(); ++it) {
    if (it.value().is_object()) {
      if (it.value().contains("p50"))
        fmt::print("  {}: p50 {}  p99 {}  max {}\n", it.key(), num(it.value()["p50"]), num(it.value()["p99"]), num(it.value()["max"]));
      else
        fmt::print("  {}: {}\n", it.key(), it.value().dump());
    } else {
      fmt::print("  {}: {}\n", it.key(), num(it.value()));
    }
  }
  if (j.contains("failover")) {
    const auto& f = j["failover"];
    auto mmm = [&](const nlohmann::json& st) {
      return fmt::format("min {}  median {}  max {} ms (n {})", num(st["min"]), num(st["p50"]), num(st["max"]), num(st["count"]));
    };
    fmt::print("  failover: {} controllers, roles {}; kill {}\n", f["controllers"].size(), f["roles_in_use"].get<bool>() ? "yes" : "no",
               f["kill"].is_null() ? "(by the operator)" : f["kill"]["target"].get<std::string>());
    fmt::print("  controller failover time  {}\n", mmm(f["failover_ms"]));
    fmt::print("  network re-provisioning   {}\n", mmm(f["reprovisioning_ms"]));
    const auto& p = f["packet_ins"];
    fmt::print("  {} switches affected; PacketIns in the gap {} ({} unanswered, {} with no controller to go to); {} in flight lost\n",
               num(f["switches_affected"]), num(p["in_gap"]), num(p["unanswered_in_gap"]), num(p["undelivered_in_gap"]),
               num(p["in_flight_lost"]));
    fmt::print("  mastership before {}  after {}; unexpected channel losses {}; slave writes refused {}\n",
               f["mastership_before"].dump(), f["mastership_end"].dump(), num(f["unexpected_channel_losses"]),
               num(f["slave_writes_refused"]));
  }
  const auto& s = j["switches"];
  fmt::print("  switch side: {} PacketIns, {} FlowMods ({} rejected), {} PacketOuts, {} barriers, {} errors, {} flows, {} disconnects\n",
             num(s["packet_ins"]), num(s["flow_mods"]), num(s["flow_mods_rejected"]), num(s["packet_outs"]),
             num(s["barriers"]), num(s["errors_received"]), num(s["flows_installed"]), num(s["disconnects"]));
  if (!j["resources"].is_null())
    fmt::print("  controller pid {}: CPU mean {}%  max {}%  RSS max {} KiB  {} context switches\n",
               num(j["resources"]["pid"]), num(j["resources"]["cpu_pct_mean"]), num(j["resources"]["cpu_pct_max"]),
               num(j["resources"]["rss_kib_max"]), num(j["resources"]["ctxt_switches"]));
}

}  // namespace

int main(int argc, char** argv) {
  sdn::ofbench::Options o;
  CLI::App app{"ofbench: RFC 8456 benchmark with emulated OpenFlow 1.3 switches"};
  app.add_option("--mode", o.mode, "latency | throughput | lossfree | sessions | table | discovery | path | cpam | failover")
      ->check(CLI::IsMember({"latency", "throughput", "lossfree", "sessions", "table", "discovery", "path", "cpam", "failover"}));
  app.add_option("-c,--controller", o.controller, "controller host:port");
  std::string controllers;
  app.add_option("--controllers", controllers,
                 "host:port,host:port,...: every switch connects to each controller (OpenFlow roles)");
  bool failover = false;
  app.add_flag("--failover", failover, "the failover mode (same as --mode failover)");
  app.add_option("--rate", o.rate, "failover: new-flow PacketIns per second over all switches")->check(CLI::Range(1.0, 1e6));
  app.add_option("--kill-at", o.kill_at_s, "failover: seconds into the measured period at which --kill-cmd runs")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--kill-cmd", o.kill_cmd,
                 "failover: shell command that kills the controller mastering the most switches; {controller} {host} "
                 "{port} {index} (1-based) are replaced. Without it, kill one by hand during the run");
  app.add_option("--recover-timeout", o.recover_timeout_s, "failover: seconds to wait past --duration for re-provisioning")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--topology", o.topology, "independent | campus")->check(CLI::IsMember({"independent", "campus"}));
  app.add_option("-s,--switches", o.switches, "independent switches (cbench -s)")->check(CLI::Range(1u, 100000u));
  app.add_option("-M,--macs-per-switch", o.macs_per_switch, "hosts per independent switch (cbench -M)")
      ->check(CLI::Range(2u, 65000u));
  app.add_option("--unique-macs", o.unique_macs, "MACs differ across switches (true|false)");
  app.add_option("--hosts", o.hosts, "campus hosts")->check(CLI::Range(2u, 1000000u));
  app.add_option("--cores", o.cores, "campus core switches")->check(CLI::Range(1u, 64u));
  app.add_option("--aggs", o.aggs, "campus aggregation switches")->check(CLI::Range(1u, 256u));
  app.add_option("--edges", o.edges, "campus edge switches")->check(CLI::Range(1u, 4096u));
  app.add_flag("--dual-homed", o.dual_homed, "each edge links to two aggregation switches");
  app.add_option("-d,--duration", o.duration_s, "measured seconds (cbench: loops x ms per loop)")->check(CLI::Range(0.1, 86400.0));
  app.add_option("-w,--warmup", o.warmup_s, "seconds run before measuring (cbench -w, in seconds)")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--window", o.window, "throughput/table: outstanding PacketIns per switch")->check(CLI::Range(1u, 100000u));
  app.add_option("--timeout-ms", o.timeout_ms, "a request unanswered this long is lost")->check(CLI::Range(1.0, 600000.0));
  app.add_flag("--no-buffer", o.no_buffer, "send whole frames, buffer_id = OFP_NO_BUFFER (n_buffers 0)");
  app.add_option("--malformed", o.malformed, "share of requests with a malformed message mixed in (0..1)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--dos-rate", o.dos_rate, "PacketIns/s flooded from switch 1 (others measured)")->check(CLI::Range(0.0, 1e7));
  app.add_option("--dos-port", o.dos_port, "the flood's in_port (0 = spread over ports 1..M)")->check(CLI::Range(0u, 0xffffff00u));
  app.add_option("--lambda", o.lambda, "cpam: new connections per second (Poisson)")->check(CLI::Range(0.001, 1e6));
  app.add_option("--dns-ip", o.dns_ip, "cpam: the controller's DNS address");
  app.add_option("--zone", o.zone, "cpam: DNS zone of the host names");
  app.add_option("--service-port", o.service_port, "cpam: TCP port the servers listen on");
  app.add_option("--connect-timeout-ms", o.connect_timeout_ms, "cpam: a connection not up by then failed");
  app.add_option("--rotation-gap-ms", o.rotation_gap_ms, "cpam: quiet time that ends a rotation window");
  app.add_option("--rotation-min-changes", o.rotation_min_changes, "cpam: proactive changes that make a burst a rotation");
  app.add_option("--pairs-window", o.pairs_window, "path: first packets in flight")->check(CLI::Range(1u, 100000u));
  app.add_option("--host-base", o.host_base, "campus: host n gets base + ((n-1)/250 << 8) + (n-1)%250 + 1");
  app.add_option("--session-step", o.session_step, "sessions: switches added per step")->check(CLI::Range(1u, 100000u));
  app.add_option("--handshake-timeout-ms", o.handshake_timeout_ms, "connect + handshake deadline");
  app.add_option("--tls-cert", o.tls_cert, "connect over TLS with this switch certificate (PEM)")->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tls_key, "the switch certificate's private key (PEM)")->check(CLI::ExistingFile)->needs("--tls-cert");
  app.add_option("--tls-ca", o.tls_ca, "CA the controller's certificate must chain to (PEM)")->check(CLI::ExistingFile)->needs("--tls-cert");
  app.add_option("--max-flows", o.max_flows, "table: stop at this many flows in all tables");
  app.add_option("--plateau", o.plateau_s, "table: seconds without growth that end the run");
  app.add_option("--trial", o.trial_s, "lossfree: seconds per trial");
  app.add_option("--rate-lo", o.rate_lo, "lossfree: first offered rate");
  app.add_option("--rate-hi", o.rate_hi, "lossfree: highest offered rate");
  app.add_option("--max-flows-per-switch", o.max_flows_per_switch, "emulated table size (0 = unlimited)");
  app.add_option("--pid", o.pid, "controller pid: sample CPU, RSS, context switches from /proc");
  app.add_option("--controller-stats", o.controller_stats, "sdnator's --stats-file: add its own histograms to the JSON");
  app.add_option("--json", o.json_path, "write the run's JSON here ('-' = stdout)");
  app.add_option("--write-hosts", o.hosts_file, "campus: write the hosts as 'name ip' lines (a CPAM hosts_file) and exit");
  app.add_option("--max-samples", o.max_samples, "latency samples kept in the JSON");
  app.add_option("--seed", o.seed, "random seed (0 = random)");
  app.add_flag("-q,--quiet", o.quiet, "no progress lines on stderr");
  CLI11_PARSE(app, argc, argv);
  if (failover) o.mode = "failover";
  for (size_t b = 0; !controllers.empty() && b <= controllers.size();) {
    size_t e = controllers.find(',', b);
    if (e == std::string::npos) e = controllers.size();
    if (e > b) o.controllers.push_back(controllers.substr(b, e - b));
    b = e + 1;
  }
  if (!o.controllers.empty()) o.controller = controllers;  // the JSON's "controller": the whole list
  try {
    sdn::ofbench::Bench bench(o);
    const nlohmann::json j = bench.run();
    if (!o.hosts_file.empty()) {
      fmt::print("ofbench: wrote {} hosts to {}\n", j["hosts"].get<size_t>(), o.hosts_file);
      return 0;
    }
    if (o.json_path != "-") summary(j);
    if (o.json_path == "-") {
      std::cout << j.dump() << "\n";
    } else if (!o.json_path.empty()) {
      std::ofstream out(o.json_path);
      if (!out) {
        fmt::print(stderr, "ofbench: cannot write {}\n", o.json_path);
        return 1;
      }
      out << j.dump(1) << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ofbench: error: {}\n", e.what());
    return 1;
  }
}
