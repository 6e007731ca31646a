// `sdnator-session udp` (a paced, sequence-numbered UDP stream through the echo server: loss,
// reordering, round-trip jitter), `resolve` (repeated A lookups) and `scan` (TCP connect scan
// of a CIDR: which addresses answer at all, with SYN-ACK or RST).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "tools/session/net.hpp"
#include "tools/session/session.hpp"

namespace sdn::tools::session {
namespace {

// udp datagram: "SDNU", u64 sequence, u64 send time (steady ns), zero padding to --size.
constexpr uint32_t kUdpMagic = 0x53444e55;
constexpr std::size_t kUdpHeader = 20;
constexpr uint64_t kMaxUdpPackets = 100'000'000;  // the received-set bitmap stays under 13 MB

struct UdpRx {
  std::vector<bool> got;
  std::atomic<uint64_t> unique{0};
  uint64_t duplicates = 0, out_of_order = 0, malformed = 0, refused = 0;
  int64_t max_seq = -1;
  double jitter = 0, abs_d_sum = 0, prev_rtt = -1;
  uint64_t d_count = 0;
  std::vector<double> rtts;
};

void udp_receive(int fd, UdpRx& rx, const std::atomic<bool>& done) {
  uint8_t buf[65536];
  while (!done.load()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    for (;;) {
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == ECONNREFUSED) {  // ICMP port unreachable for an earlier datagram
          ++rx.refused;
          continue;
        }
        break;
      }
      const uint64_t now = mono_ns();
      std::span<const uint8_t> b(buf, static_cast<std::size_t>(n));
      if (b.size() < kUdpHeader || get_u32(b, 0) != kUdpMagic || get_u64(b, 4) >= rx.got.size()) {
        ++rx.malformed;
        continue;
      }
      const uint64_t seq = get_u64(b, 4);
      if (rx.got[seq]) {
        ++rx.duplicates;
        continue;
      }
      rx.got[seq] = true;
      rx.unique.fetch_add(1);
      if (static_cast<int64_t>(seq) < rx.max_seq) {
        ++rx.out_of_order;
      } else {
        rx.max_seq = static_cast<int64_t>(seq);
      }
      // RFC 3550 section 6.4.1 interarrival jitter, applied to the round trip: D is the change in
      // RTT between consecutive arrivals, J += (|D| - J) / 16.
      const double rtt = static_cast<double>(now - get_u64(b, 12)) / 1e6;
      rx.rtts.push_back(rtt);
      if (rx.prev_rtt >= 0) {
        const double d = std::fabs(rtt - rx.prev_rtt);
        rx.jitter += (d - rx.jitter) / 16.0;
        rx.abs_d_sum += d;
        ++rx.d_count;
      }
      rx.prev_rtt = rtt;
    }
  }
}

}  // namespace

int run_udp(const UdpOpts& o) {
  install_stop_handlers();
  const auto planned = static_cast<uint64_t>(std::ceil(o.duration_s * o.pps));
  if (planned > kMaxUdpPackets) {
    std::cerr << fmt::format("udp: --duration x --pps = {} datagrams; at most {}\n", planned, kMaxUdpPackets);
    return kExitUsage;
  }
  auto res = resolve_ipv4(o.host, o.port, SOCK_DGRAM);
  if (!res.ok()) {
    std::cerr << "udp: cannot resolve " << o.host << ": " << res.error << '\n';
    return kExitFail;
  }
  const std::string resolved = res.texts.front();
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&res.addrs.front()), sizeof(sockaddr_in)) != 0) {
    std::cerr << "udp: socket/connect " << resolved << ":" << o.port << ": " << errno_text(errno) << '\n';
    return kExitFail;
  }
  int rcvbuf = 4 << 20;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);

  UdpRx rx;
  rx.got.assign(planned, false);
  std::atomic<bool> done{false};
  std::thread receiver(udp_receive, fd.get(), std::ref(rx), std::cref(done));

  const std::string started_at = wall_clock_iso();
  const auto t0 = Clock::now();
  std::vector<uint8_t> pkt(static_cast<std::size_t>(o.size), 0);
  uint64_t sent = 0, send_errors = 0;
  std::map<std::string, uint64_t> send_error_kinds;
  bool interrupted = false;
  for (uint64_t i = 0; i < planned; ++i) {
    auto at = t0 + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(static_cast<double>(i) / o.pps));
    if (!sleep_until_or_stop(at)) {
      interrupted = true;
      break;
    }
    put_u32(pkt, 0, kUdpMagic);
    put_u64(pkt, 4, i);
    put_u64(pkt, 12, mono_ns());
    ++sent;  // attempted: a datagram refused locally still counts as lost
    if (::send(fd.get(), pkt.data(), pkt.size(), 0) != static_cast<ssize_t>(pkt.size())) {
      ++send_errors;
      ++send_error_kinds[errno_text(errno)];
    }
  }
  const auto t_sent = Clock::now();
  const auto drain_end = t_sent + std::chrono::milliseconds(o.drain_ms);
  while (!interrupted && rx.unique.load() < sent && Clock::now() < drain_end) {
    if (!sleep_until_or_stop(std::min(drain_end, Clock::now() + std::chrono::milliseconds(10))))
      interrupted = true;
  }
  done.store(true);
  receiver.join();

  const uint64_t echoed = rx.unique.load();
  const uint64_t lost = sent - echoed;
  const double loss_pct = sent ? 100.0 * static_cast<double>(lost) / static_cast<double>(sent) : 100.0;
  const double mean_jitter = rx.d_count ? rx.abs_d_sum / static_cast<double>(rx.d_count) : 0.0;
  const bool ok = !interrupted && sent > 0 && loss_pct <= o.max_loss_pct;
  nlohmann::json rtt = summarize(rx.rtts);
  nlohmann::json doc = {{"host", o.host},
                        {"port", o.port},
                        {"resolved", resolved},
                        {"started_at", started_at},
                        {"duration_target_s", o.duration_s},
                        {"pps", o.pps},
                        {"size", o.size},
                        {"ok", ok},
                        {"interrupted", interrupted},
                        {"send_s", round3(std::chrono::duration<double>(t_sent - t0).count())},
                        {"sent", sent},
                        {"send_errors", send_errors},
                        {"send_error_kinds", send_error_kinds},
                        {"echoed", echoed},
                        {"lost", lost},
                        {"loss_pct", round3(loss_pct)},
                        {"max_loss_pct", o.max_loss_pct},
                        {"duplicates", rx.duplicates},
                        {"out_of_order", rx.out_of_order},
                        {"malformed", rx.malformed},
                        {"icmp_refused", rx.refused},
                        {"jitter_ms", round3(rx.jitter)},
                        {"mean_jitter_ms", round3(mean_jitter)},
                        {"rtt_ms", rtt}};
  std::cout
      << fmt::format(
             "udp {}:{} ({}): {}; sent {}, echoed {}, lost {} ({:.2f} %, limit {} %), out of order {}, "
             "duplicates {}, jitter {:.3f} ms (mean |D| {:.3f} ms), rtt p50 {:.2f} ms max {:.2f} ms{}{}",
             o.host, o.port, resolved, ok ? "ok" : "FAILED", sent, echoed, lost, loss_pct, o.max_loss_pct,
             rx.out_of_order, rx.duplicates, rx.jitter, mean_jitter, rtt["p50"].get<double>(),
             rtt["max"].get<double>(), send_errors ? fmt::format(", {} send errors", send_errors) : "",
             interrupted ? ", interrupted" : "")
      << std::endl;
  for (auto& [what, k] : send_error_kinds)
    std::cout << fmt::format("udp: send failed {} times: {}", k, what) << std::endl;
  if (rx.refused)
    std::cout << fmt::format("udp: {} ICMP port unreachable (is the echo server running?)", rx.refused)
              << std::endl;
  if (auto e = write_json(o.json, doc); !e.empty()) {
    std::cerr << "udp: --json: " << e << '\n';
    return kExitFail;
  }
  return ok ? kExitOk : kExitFail;
}

int run_resolve(const ResolveOpts& o) {
  install_stop_handlers();
  int failures = 0, done_count = 0;
  nlohmann::json lookups = nlohmann::json::array();
  const auto t0 = Clock::now();
  for (int k = 0; k < o.count; ++k) {
    if (k > 0 && !sleep_until_or_stop(t0 + std::chrono::milliseconds(int64_t{k} * o.interval_ms))) break;
    const double at_ms = ms_between(t0, Clock::now());
    auto r = resolve_ipv4(o.host, 0, SOCK_STREAM);
    ++done_count;
    nlohmann::json row = {{"t_ms", round3(at_ms)}, {"lookup_ms", round3(r.ms)}, {"ok", r.ok()}};
    if (r.ok()) {
      std::string line;
      for (auto& t : r.texts) line += (line.empty() ? "" : " ") + t;
      std::cout << line << std::endl;
      row["addresses"] = r.texts;
    } else {
      ++failures;
      std::cerr << fmt::format("resolve: {}: {} (lookup {} of {}, {:.0f} ms)", o.host, r.error, k + 1,
                               o.count, r.ms)
                << std::endl;
      row["error"] = r.error;
    }
    lookups.push_back(std::move(row));
  }
  const bool interrupted = done_count < o.count;
  if (interrupted) std::cerr << "resolve: interrupted after " << done_count << " lookups\n";
  nlohmann::json doc = {{"host", o.host},
                        {"count", o.count},
                        {"interval_ms", o.interval_ms},
                        {"done", done_count},
                        {"failed", failures},
                        {"ok", failures == 0 && !interrupted},
                        {"lookups", std::move(lookups)}};
  if (auto e = write_json(o.json, doc); !e.empty()) {
    std::cerr << "resolve: --json: " << e << '\n';
    return kExitFail;
  }
  return failures == 0 && !interrupted ? kExitOk : kExitFail;
}

namespace {

enum class ScanState : uint8_t { kPending, kOpen, kRefused, kSilent, kUnreachable, kError };

const char* scan_state_name(ScanState s) {
  switch (s) {
    case ScanState::kPending:
      return "pending";
    case ScanState::kOpen:
      return "open";
    case ScanState::kRefused:
      return "refused";
    case ScanState::kSilent:
      return "silent";
    case ScanState::kUnreachable:
      return "unreachable";
    case ScanState::kError:
      return "error";
  }
  return "error";
}

ScanState scan_state_of(int err) {
  switch (classify_connect_errno(err)) {
    case ConnectStatus::kOk:
      return ScanState::kOpen;
    case ConnectStatus::kRefused:
      return ScanState::kRefused;
    case ConnectStatus::kTimeout:
      return ScanState::kSilent;
    case ConnectStatus::kUnreachable:
      return ScanState::kUnreachable;
    default:
      return ScanState::kError;
  }
}

struct Probe {
  Fd fd;
  uint32_t index = 0;
  Clock::time_point started, deadline;
};

std::string ipv4_text(uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

}  // namespace

int run_scan(const ScanOpts& o) {
  // The addresses to probe, in order: every address of CIDR, or the lines of --targets (a list a
  // previous scan printed, to see which of its finds are still alive).
  std::vector<uint32_t> addrs;
  if (o.cidr.empty() == o.targets.empty()) {
    std::cerr << "scan: give either CIDR or --targets FILE\n";
    return kExitUsage;
  }
  if (!o.cidr.empty()) {
    Cidr cidr;
    if (auto e = parse_cidr(o.cidr, cidr); !e.empty()) {
      std::cerr << "scan: " << e << '\n';
      return kExitUsage;
    }
    if (cidr.size() > 65536) {
      std::cerr << fmt::format("scan: {} has {} addresses; at most 65536 (a /16) per scan\n", o.cidr,
                               cidr.size());
      return kExitUsage;
    }
    for (uint64_t i = 0; i < cidr.size(); ++i) addrs.push_back(cidr.base + static_cast<uint32_t>(i));
  } else {
    std::ifstream in(o.targets);
    if (!in) {
      std::cerr << "scan: --targets " << o.targets << ": cannot open\n";
      return kExitUsage;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      const auto e = line.find_first_of(" \t\r#", b);
      const std::string text = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
      in_addr a{};
      if (::inet_pton(AF_INET, text.c_str(), &a) != 1) {
        std::cerr << fmt::format("scan: --targets {} line {}: '{}' is not an IPv4 address\n", o.targets, n, text);
        return kExitUsage;
      }
      addrs.push_back(ntohl(a.s_addr));
    }
    if (addrs.size() > 65536) {
      std::cerr << fmt::format("scan: --targets {} has {} addresses; at most 65536\n", o.targets, addrs.size());
      return kExitUsage;
    }
  }
  install_stop_handlers();
  raise_fd_limit();
  const auto total = static_cast<uint32_t>(addrs.size());
  std::vector<ScanState> state(total, ScanState::kPending);
  std::vector<float> took_ms(total, 0);
  std::map<std::string, uint64_t> error_kinds;
  std::vector<Probe> inflight;
  std::vector<pollfd> pfds;
  uint32_t next = 0;
  bool interrupted = false;
  std::string fatal;
  const auto t0 = Clock::now();
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);

  auto finish = [&](uint32_t index, int err, Clock::time_point started) {
    state[index] = scan_state_of(err);
    took_ms[index] = static_cast<float>(ms_between(started, Clock::now()));
    if (state[index] == ScanState::kError || state[index] == ScanState::kUnreachable)
      ++error_kinds[errno_text(err)];
  };

  while ((next < total || !inflight.empty()) && fatal.empty()) {
    if (stop_requested()) {
      interrupted = true;
      break;
    }
    // Fill the window. A local shortage (no ephemeral port, no fd) waits for probes to finish.
    while (next < total && inflight.size() < static_cast<std::size_t>(o.parallel)) {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(o.port);
      to.sin_addr.s_addr = htonl(addrs[next]);
      Probe p;
      p.index = next;
      p.started = Clock::now();
      p.deadline = p.started + timeout;
      p.fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!p.fd) {
        if ((errno == EMFILE || errno == ENFILE) && !inflight.empty()) break;
        fatal = "socket: " + errno_text(errno);
        break;
      }
      if (::connect(p.fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) {
        finish(next++, 0, p.started);
        continue;
      }
      const int err = errno;
      if (err == EINPROGRESS) {
        inflight.push_back(std::move(p));
        ++next;
      } else if ((err == EAGAIN || err == EADDRNOTAVAIL) && !inflight.empty()) {
        break;  // out of local ports: retry this address once some probes are done
      } else {
        finish(next++, err, p.started);
      }
    }
    if (inflight.empty()) continue;
    pfds.clear();
    auto wake = inflight.front().deadline;
    for (auto& p : inflight) {
      pfds.push_back({p.fd.get(), POLLOUT, 0});
      wake = std::min(wake, p.deadline);
    }
    if (stop_fd() >= 0) pfds.push_back({stop_fd(), POLLIN, 0});
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake - Clock::now()).count();
    int rc = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::clamp<int64_t>(wait, 0, 1000)));
    if (rc < 0 && errno != EINTR) {
      fatal = "poll: " + errno_text(errno);
      break;
    }
    const auto now = Clock::now();
    std::size_t keep = 0;
    for (std::size_t k = 0; k < inflight.size(); ++k) {
      Probe& p = inflight[k];
      if (rc > 0 && pfds[k].revents != 0) {
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(p.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        finish(p.index, err, p.started);
      } else if (now >= p.deadline) {
        finish(p.index, ETIMEDOUT, p.started);
      } else {
        if (keep != k) inflight[keep] = std::move(p);
        ++keep;
        continue;
      }
    }
    inflight.resize(keep);  // the finished probes' sockets close here
  }
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();

  std::map<std::string, uint64_t> counts;
  nlohmann::json alive_rows = nlohmann::json::array();
  uint64_t alive = 0;
  for (uint32_t i = 0; i < total; ++i) {
    ++counts[scan_state_name(state[i])];
    if (state[i] != ScanState::kOpen && state[i] != ScanState::kRefused) continue;
    ++alive;
    const std::string a = ipv4_text(addrs[i]);
    std::cout << a << '\n';
    alive_rows.push_back({{"address", a}, {"state", scan_state_name(state[i])}, {"ms", round3(took_ms[i])}});
  }
  std::cout.flush();
  auto count_of = [&](const char* k) { return counts.count(k) ? counts[k] : 0; };
  nlohmann::json doc = {{"cidr", o.cidr.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.cidr)},
                        {"targets", o.targets.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.targets)},
                        {"port", o.port},
                        {"addresses", total},
                        {"timeout_ms", o.timeout_ms},
                        {"parallel", o.parallel},
                        {"ok", !interrupted && fatal.empty()},
                        {"elapsed_s", round3(elapsed_s)},
                        {"alive", alive},
                        {"open", count_of("open")},
                        {"refused", count_of("refused")},
                        {"silent", count_of("silent")},
                        {"unreachable", count_of("unreachable")},
                        {"errors", count_of("error")},
                        {"not_scanned", count_of("pending")},
                        {"error_kinds", error_kinds},
                        {"alive_list", std::move(alive_rows)}};
  std::cerr << fmt::format(
                   "scan {} port {}: {} of {} addresses alive ({} open, {} refused), {} silent, {} "
                   "unreachable, {} errors; {:.2f} s (timeout {} ms, {} in parallel){}",
                   o.cidr.empty() ? o.targets : o.cidr, o.port, alive, total, count_of("open"), count_of("refused"), count_of("silent"),
                   count_of("unreachable"), count_of("error"), elapsed_s, o.timeout_ms, o.parallel,
                   interrupted ? fmt::format("; interrupted, {} not scanned", count_of("pending")) : "")
            << std::endl;
  if (!fatal.empty()) std::cerr << "scan: " << fatal << '\n';
  if (auto e = write_json(o.json, doc); !e.empty()) {
    std::cerr << "scan: --json: " << e << '\n';
    return kExitFail;
  }
  return !interrupted && fatal.empty() ? kExitOk : kExitFail;
}

}  // namespace sdn::tools::session
