// ids_bench: times Kitsune on a seeded synthetic packet stream held in memory: the mapping and
// training phases, then the executing phase's extraction and scoring, single-threaded. Prints
// the figures and one JSON line (also written to --json FILE).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/ids/kitnet/kitsune.hpp"
#include "apps/ids/kitnet/synthetic.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using sdn::ids::PacketInfo;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

long peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

double rate(std::size_t n, double secs) { return secs > 0 ? static_cast<double>(n) / secs : 0.0; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ids_bench: Kitsune throughput on synthetic traffic"};
  std::size_t packets = 1000000, hosts = 50;
  sdn::ids::KitNetConfig kcfg;
  double pps = 1000;
  std::string json_path;
  bool attack = true;
  app.add_option("--packets", packets, "packets in the stream (all phases)");
  app.add_option("--fm-grace", kcfg.fm_grace, "packets of the mapping phase");
  app.add_option("--ad-grace", kcfg.ad_grace, "packets of the training phase");
  app.add_option("--hosts", hosts, "LAN hosts");
  app.add_option("--rate", pps, "mean synthetic packets per second (sets the timestamps)");
  app.add_option("--seed", kcfg.seed, "seed of the traffic and the weights");
  app.add_option("--json", json_path, "also write the JSON line to this file");
  app.add_flag("!--no-attack", attack, "skip the SYN flood scored after the benign stream");
  CLI11_PARSE(app, argc, argv);
  if (packets <= kcfg.fm_grace + kcfg.ad_grace + 2) {
    fmt::print(stderr, "--packets must exceed --fm-grace + --ad-grace (+2)\n");
    return 2;
  }

  sdn::ids::SyntheticTraffic gen({.hosts = hosts, .rate = pps, .start = 0, .seed = kcfg.seed});
  std::vector<PacketInfo> stream(packets);
  for (PacketInfo& p : stream) p = gen.next();

  sdn::ids::FeatureExtractor fe;
  sdn::ids::KitNet net(fe.dim(), kcfg);
  const std::size_t dim = fe.dim();
  std::vector<double> x(dim);

  // Mapping, then training: extraction and KitNET together, as a deployment runs them.
  std::size_t i = 0;
  auto t0 = Clock::now();
  for (; i < kcfg.fm_grace; ++i) {
    fe.extract(stream[i], x);
    net.process(x);
  }
  const double map_s = seconds_since(t0);
  t0 = Clock::now();
  for (; i < kcfg.fm_grace + kcfg.ad_grace; ++i) {
    fe.extract(stream[i], x);
    net.process(x);
  }
  const double train_s = seconds_since(t0);

  // Executing. First half in chunks, each timed for extraction alone then scoring alone (the
  // features are buffered between); second half end to end, per packet, as Kitsune::process.
  const std::size_t exec = packets - i;
  const std::size_t half = exec / 2;
  std::vector<double> scores;
  scores.reserve(exec);
  constexpr std::size_t kChunk = 4096;
  std::vector<double> buf(kChunk * dim);
  double extract_s = 0, score_s = 0;
  const std::size_t split = i + half;
  while (i < split) {
    const std::size_t n = std::min(kChunk, split - i);
    t0 = Clock::now();
    for (std::size_t j = 0; j < n; ++j) fe.extract(stream[i + j], std::span<double>(&buf[j * dim], dim));
    extract_s += seconds_since(t0);
    const std::size_t base = scores.size();
    scores.resize(base + n);
    t0 = Clock::now();
    for (std::size_t j = 0; j < n; ++j) scores[base + j] = net.process(std::span<const double>(&buf[j * dim], dim));
    score_s += seconds_since(t0);
    i += n;
  }
  const std::size_t tail = packets - i;
  const std::size_t base = scores.size();
  scores.resize(base + tail);
  t0 = Clock::now();
  for (std::size_t j = 0; j < tail; ++j, ++i) {
    fe.extract(stream[i], x);
    scores[base + j] = net.process(x);
  }
  const double both_s = seconds_since(t0);

  const double thr = sdn::ids::fit_threshold(scores, 3.0);
  nlohmann::json j = {
      {"bench", "ids_bench"},
      {"packets", packets},
      {"hosts", hosts},
      {"seed", kcfg.seed},
      {"fm_grace", kcfg.fm_grace},
      {"ad_grace", kcfg.ad_grace},
      {"features", dim},
      {"autoencoders", net.feature_map().size()},
      {"mapping_pps", rate(kcfg.fm_grace, map_s)},
      {"training_pps", rate(kcfg.ad_grace, train_s)},
      {"extract_pps", rate(half, extract_s)},
      {"score_pps", rate(half, score_s)},
      {"extract_score_pps", rate(tail, both_s)},
      {"streams", fe.stats().streams},
      {"evicted", fe.stats().evicted},
      {"benign_score", {{"p50", quantile(scores, 0.5)}, {"p99", quantile(scores, 0.99)},
                        {"p999", quantile(scores, 0.999)}, {"max", *std::max_element(scores.begin(), scores.end())}}},
      {"threshold_z3", thr},
      {"benign_over_threshold", std::count_if(scores.begin(), scores.end(), [&](double s) { return s > thr; })},
  };

  if (attack) {
    // A SYN flood from a new host at 10k/s on a LAN server, after the benign stream.
    const auto flood = sdn::ids::syn_flood(0x0A0000FEu, 0x0200000000FEULL, sdn::ids::SyntheticTraffic::host_ip(0),
                                           sdn::ids::SyntheticTraffic::host_mac(0), 445, stream.back().ts + 0.01, 10000,
                                           5000, kcfg.seed);
    std::vector<double> fs;
    fs.reserve(flood.size());
    for (const PacketInfo& p : flood) {
      fe.extract(p, x);
      fs.push_back(net.process(x));
    }
    j["flood"] = {{"packets", flood.size()},
                  {"score_p50", quantile(fs, 0.5)},
                  {"over_threshold", std::count_if(fs.begin(), fs.end(), [&](double s) { return s > thr; })}};
  }
  j["peak_rss_kib"] = peak_rss_kib();

  fmt::print("ids_bench: {} packets, {} hosts, {} features, {} autoencoders (+1 output), seed {}\n", packets, hosts,
             dim, net.feature_map().size(), kcfg.seed);
  fmt::print("  mapping   {:>8} packets  {:>10.0f} packets/s (extract + correlation sums)\n", kcfg.fm_grace,
             rate(kcfg.fm_grace, map_s));
  fmt::print("  training  {:>8} packets  {:>10.0f} packets/s (extract + SGD)\n", kcfg.ad_grace,
             rate(kcfg.ad_grace, train_s));
  fmt::print("  executing {:>8} packets  extract {:.0f}/s  score {:.0f}/s  (first half, chunked)\n", half,
             rate(half, extract_s), rate(half, score_s));
  fmt::print("  executing {:>8} packets  extract+score {:.0f}/s  (second half, per packet)\n", tail,
             rate(tail, both_s));
  fmt::print("  benign scores p50 {:.4g}  p99 {:.4g}  p99.9 {:.4g}  max {:.4g}; log-normal z=3 threshold {:.4g} ({} above)\n",
             j["benign_score"]["p50"].get<double>(), j["benign_score"]["p99"].get<double>(),
             j["benign_score"]["p999"].get<double>(), j["benign_score"]["max"].get<double>(), thr,
             j["benign_over_threshold"].get<long>());
  if (attack)
    fmt::print("  SYN flood {} packets: median score {:.4g}, {} above threshold\n", j["flood"]["packets"].get<long>(),
               j["flood"]["score_p50"].get<double>(), j["flood"]["over_threshold"].get<long>());
  fmt::print("  streams {}  evicted {}  peak RSS {} KiB\n", fe.stats().streams, fe.stats().evicted,
             j["peak_rss_kib"].get<long>());
  const std::string line = j.dump();
  std::cout << line << '\n';
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << line << '\n';
    if (!out) {
      fmt::print(stderr, "cannot write {}\n", json_path);
      return 1;
    }
  }
  return 0;
}
