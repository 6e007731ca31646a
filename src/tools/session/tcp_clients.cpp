// `sdnator-session hold` (one long-lived TCP connection probed every interval: does it survive
// and how long does it stall?) and `churn` (many short connections, each resolving the name
// afresh: do new sessions keep working, and how long does setup take?).
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include "tools/session/net.hpp"
#include "tools/session/session.hpp"

namespace sdn::tools::session {
namespace {

// hold chunk: "SDNH", u64 sequence, u64 send time (steady ns), then a pattern derived from the
// sequence, so a misplaced or corrupted echo is detected.
constexpr std::size_t kHoldChunk = 64;
constexpr uint32_t kHoldMagic = 0x53444e48;
// churn payload: "SDNC", u32 connection index, u64 random nonce, pattern.
constexpr std::size_t kChurnPayload = 32;
constexpr uint32_t kChurnMagic = 0x53444e43;

void fill_pattern(std::span<uint8_t> b, std::size_t from, uint64_t seed) {
  for (std::size_t i = from; i < b.size(); ++i) b[i] = static_cast<uint8_t>((seed * 31 + i * 7) & 0xff);
}

void hold_chunk(std::span<uint8_t> b, uint64_t seq, uint64_t ts) {
  put_u32(b, 0, kHoldMagic);
  put_u64(b, 4, seq);
  put_u64(b, 12, ts);
  fill_pattern(b, 20, seq);
}

// Checks an echoed chunk against sequence `seq`; returns the send timestamp or an error text.
bool check_hold_chunk(std::span<const uint8_t> b, uint64_t seq, uint64_t& ts, std::string& why) {
  if (get_u32(b, 0) != kHoldMagic) {
    why = "echo " + std::to_string(seq) + ": bad magic";
    return false;
  }
  if (get_u64(b, 4) != seq) {
    why = "echo carries sequence " + std::to_string(get_u64(b, 4)) + ", expected " + std::to_string(seq);
    return false;
  }
  uint8_t want[kHoldChunk];
  hold_chunk(want, seq, get_u64(b, 12));
  if (!std::equal(b.begin(), b.end(), want)) {
    why = "echo " + std::to_string(seq) + ": payload differs from what was sent";
    return false;
  }
  ts = get_u64(b, 12);
  return true;
}

std::string fmt_ms(double ms) { return fmt::format("{:.1f} ms", ms); }

const char* tcp_error_code(int err) {
  switch (err) {
    case ECONNRESET:
    case EPIPE:
      return "reset";
    case ECONNABORTED:
      return "closed";
    case ETIMEDOUT:
      return "timeout";
    case EINTR:
      return "interrupted";
    default:
      return "error";
  }
}

std::string tcp_error_detail(int err) {
  if (err == ECONNABORTED) return "connection closed by the peer";
  if (err == EINTR) return "interrupted by a signal";
  return errno_text(err);
}

}  // namespace

int run_hold(const HoldOpts& o) {
  install_stop_handlers();
  nlohmann::json doc = {{"host", o.host},
                        {"port", o.port},
                        {"started_at", wall_clock_iso()},
                        {"duration_target_s", o.duration_s},
                        {"interval_ms", o.interval_ms},
                        {"max_stall_ms", o.max_stall_ms},
                        {"timeout_ms", o.timeout_ms}};
  std::string error, detail, resolved;
  uint64_t sent = 0, echoed = 0;
  double max_gap = 0, lasted_s = 0;
  std::vector<double> rtts;

  auto res = resolve_ipv4(o.host, o.port, SOCK_STREAM);
  ConnectResult cr;
  if (!res.ok()) {
    error = "resolve_failed";
    detail = o.host + ": " + res.error;
  } else {
    resolved = res.texts.front();
    cr = connect_tcp(res.addrs.front(), o.connect_timeout_ms);
    if (cr.status != ConnectStatus::kOk) {
      error = connect_status_name(cr.status);
      detail = "connect " + resolved + ":" + std::to_string(o.port) + ": " +
               (cr.status == ConnectStatus::kTimeout
                    ? "no answer within " + std::to_string(o.connect_timeout_ms) + " ms"
                    : tcp_error_detail(cr.err));
    }
  }
  doc["connect_ms"] = round3(cr.ms);

  if (error.empty()) {
    const int fd = cr.fd.get();
    const auto interval = std::chrono::milliseconds(o.interval_ms);
    const auto timeout = std::chrono::milliseconds(o.timeout_ms);
    const auto t_conn = Clock::now();
    const auto end =
        t_conn + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
    auto next_send = t_conn;
    auto last_arrival = t_conn;   // the first gap runs from the connection's start
    auto last_progress = t_conn;  // last echo, or the send that made an echo due
    std::vector<uint8_t> out, in;
    std::size_t out_off = 0;
    bool sending = true;
    uint8_t buf[4096];
    for (;;) {
      auto now = Clock::now();
      if (stop_requested()) {
        error = "interrupted";
        detail = "interrupted by a signal";
        break;
      }
      if (sending && now >= end) sending = false;
      if (!sending && echoed == sent && out_off == out.size()) break;
      if (sending && now >= next_send) {
        if (echoed == sent) last_progress = now;
        std::size_t at = out.size();
        out.resize(at + kHoldChunk);
        hold_chunk(std::span<uint8_t>(out).subspan(at, kHoldChunk), sent, mono_ns());
        ++sent;
        // Keep the schedule; after a blocked moment skip missed slots instead of bursting.
        while (next_send <= now) next_send += interval;
      }
      if (out_off < out.size()) {
        ssize_t n = ::send(fd, out.data() + out_off, out.size() - out_off, MSG_NOSIGNAL);
        if (n > 0) {
          out_off += static_cast<std::size_t>(n);
          if (out_off == out.size()) {
            out.clear();
            out_off = 0;
          }
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          error = tcp_error_code(errno);
          detail = "send: " + tcp_error_detail(errno);
          break;
        }
      }
      if (sent > echoed && now - last_progress >= timeout) {
        error = "timeout";
        detail = fmt::format("no echo for {} ms ({} chunks outstanding)", o.timeout_ms, sent - echoed);
        max_gap = std::max(max_gap, ms_between(last_arrival, now));
        break;
      }
      auto deadline = last_progress + timeout;
      if (sending) deadline = std::min({deadline, next_send, end});
      short want = POLLIN | (out_off < out.size() ? POLLOUT : 0);
      int ev = wait_fd(fd, want, deadline);
      if (ev <= 0) continue;  // timeout or stop: re-checked at the top
      if (!(ev & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) {
        error = "closed";
        detail = "connection closed by the peer";
        break;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        error = tcp_error_code(errno);
        detail = "recv: " + tcp_error_detail(errno);
        break;
      }
      in.insert(in.end(), buf, buf + n);
      std::size_t off = 0;
      auto arrival = Clock::now();
      uint64_t now_ns = mono_ns();
      while (in.size() - off >= kHoldChunk) {
        uint64_t ts = 0;
        if (!check_hold_chunk(std::span<const uint8_t>(in).subspan(off, kHoldChunk), echoed, ts, detail)) {
          error = "bad_echo";
          break;
        }
        rtts.push_back(static_cast<double>(now_ns - ts) / 1e6);
        max_gap = std::max(max_gap, ms_between(last_arrival, arrival));
        last_arrival = last_progress = arrival;
        ++echoed;
        off += kHoldChunk;
      }
      if (!error.empty()) break;
      in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(off));
    }
    auto t_end = Clock::now();
    lasted_s = std::chrono::duration<double>(t_end - t_conn).count();
    // Lasted the full duration: no error before the end of the sending phase.
    doc["lasted_full_duration"] = error.empty() || t_end >= end;
  }

  const bool ok = error.empty() && max_gap <= o.max_stall_ms;
  nlohmann::json rtt = summarize(rtts);
  doc["ok"] = ok;
  doc["duration_s"] = round3(lasted_s);
  doc["sent"] = sent;
  doc["echoes"] = echoed;
  doc["max_gap_ms"] = round3(max_gap);
  doc["rtt_ms"] = rtt;
  doc["error"] = error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error);
  doc["detail"] = detail.empty() ? nlohmann::json(nullptr) : nlohmann::json(detail);
  doc["resolved"] = resolved.empty() ? nlohmann::json(nullptr) : nlohmann::json(resolved);

  std::string verdict = ok ? "ok" : "FAILED";
  if (!error.empty()) {
    verdict += " (" + error + ": " + detail + ")";
  } else if (!ok) {
    verdict += fmt::format(" (max gap {:.1f} ms over --max-stall-ms {})", max_gap, o.max_stall_ms);
  }
  std::cout << fmt::format(
                   "hold {}:{} ({}): {}; lasted {:.2f} s, {}/{} echoes, max gap {} (limit {} ms), "
                   "rtt p50 {:.2f} ms max {:.2f} ms",
                   o.host, o.port, resolved.empty() ? "unresolved" : resolved, verdict, lasted_s, echoed,
                   sent, fmt_ms(max_gap), o.max_stall_ms, rtt["p50"].get<double>(), rtt["max"].get<double>())
            << std::endl;
  if (auto e = write_json(o.json, doc); !e.empty()) {
    std::cerr << "hold: --json: " << e << '\n';
    return kExitFail;
  }
  return ok ? kExitOk : kExitFail;
}

namespace {

struct ChurnSample {
  double sched_ms = 0, start_ms = 0, resolve_ms = 0, setup_ms = -1, echo_ms = -1, total_ms = 0;
  int resolve_tries = 0;
  std::string address, outcome = "not_started", detail;
};

void churn_one(const ChurnOpts& o, uint32_t index, uint64_t nonce, ChurnSample& s) {
  auto t0 = Clock::now();
  auto res = resolve_ipv4(o.host, o.port, SOCK_STREAM, o.resolve_tries, o.resolve_retry_ms);
  s.resolve_ms = res.ms;
  s.resolve_tries = res.tries;
  auto done = [&](const std::string& outcome, const std::string& detail) {
    s.outcome = outcome;
    s.detail = detail;
    s.total_ms = ms_between(t0, Clock::now());
  };
  if (!res.ok()) return done("resolve_failed", res.error);
  s.address = res.texts.front();
  auto cr = connect_tcp(res.addrs.front(), o.timeout_ms);
  if (cr.status == ConnectStatus::kTimeout) {
    s.setup_ms = cr.ms;
    return done("connect_timeout", "no answer within " + std::to_string(o.timeout_ms) + " ms");
  }
  if (cr.status != ConnectStatus::kOk) return done(connect_status_name(cr.status), tcp_error_detail(cr.err));
  s.setup_ms = cr.ms;
  uint8_t msg[kChurnPayload];
  put_u32(msg, 0, kChurnMagic);
  put_u32(msg, 4, index);
  put_u64(msg, 8, nonce);
  fill_pattern(msg, 16, nonce);
  auto t_send = Clock::now();
  auto deadline = t_send + std::chrono::milliseconds(o.timeout_ms);
  if (int e = send_all(cr.fd.get(), msg, deadline); e != 0) {
    return done(e == ETIMEDOUT ? "timeout" : tcp_error_code(e), "send: " + tcp_error_detail(e));
  }
  uint8_t echo[kChurnPayload];
  if (int e = recv_exact(cr.fd.get(), echo, deadline); e != 0) {
    return done(tcp_error_code(e), e == ETIMEDOUT ? "no echo within " + std::to_string(o.timeout_ms) + " ms"
                                                  : "recv: " + tcp_error_detail(e));
  }
  s.echo_ms = ms_between(t_send, Clock::now());
  if (!std::equal(std::begin(echo), std::end(echo), std::begin(msg))) {
    return done("bad_echo", "echo differs from the 32 bytes sent");
  }
  cr.fd.reset();
  done("ok", "");
}

}  // namespace

int run_churn(const ChurnOpts& o) {
  install_stop_handlers();
  raise_fd_limit();
  const auto n = static_cast<std::size_t>(o.count);
  std::mt19937_64 rng(o.seed ? *o.seed : std::random_device{}());
  // Arrival times: the first at 0, then exponential gaps (a Poisson process), or fixed spacing.
  std::vector<ChurnSample> samples(n);
  std::exponential_distribution<double> gap(o.rate);
  double t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    samples[i].sched_ms = o.spacing_ms ? static_cast<double>(i) * *o.spacing_ms : t;
    t += gap(rng) * 1000.0;
  }
  std::vector<uint64_t> nonces(n);
  for (auto& x : nonces) x = rng();

  const auto t0 = Clock::now();
  const std::string started_at = wall_clock_iso();
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (;;) {
      std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      ChurnSample& s = samples[i];
      auto at = t0 + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(s.sched_ms));
      if (!sleep_until_or_stop(at)) {
        s.outcome = "interrupted";
        continue;
      }
      s.start_ms = ms_between(t0, Clock::now());
      churn_one(o, static_cast<uint32_t>(i), nonces[i], s);
    }
  };
  std::vector<std::thread> pool;
  for (int k = 0; k < std::min<int>(o.concurrency, o.count); ++k) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();

  std::map<std::string, int> outcomes, addresses;
  std::vector<double> setup, resolve, echo_rtt, late;
  nlohmann::json rows = nlohmann::json::array();
  int ok = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const ChurnSample& s = samples[i];
    ++outcomes[s.outcome];
    if (s.outcome == "ok") ++ok;
    if (!s.address.empty()) ++addresses[s.address];
    if (s.outcome != "not_started" && s.outcome != "interrupted") {
      resolve.push_back(s.resolve_ms);
      late.push_back(s.start_ms - s.sched_ms);
    }
    // Setup time of every connection that completed its handshake.
    if (s.setup_ms >= 0 && s.outcome != "connect_timeout") setup.push_back(s.setup_ms);
    if (s.echo_ms >= 0) echo_rtt.push_back(s.echo_ms);
    rows.push_back(
        {{"i", i},
         {"sched_ms", round3(s.sched_ms)},
         {"start_ms", round3(s.start_ms)},
         {"resolve_ms", round3(s.resolve_ms)},
         {"resolve_tries", s.resolve_tries},
         {"setup_ms", s.setup_ms >= 0 ? nlohmann::json(round3(s.setup_ms)) : nlohmann::json(nullptr)},
         {"echo_ms", s.echo_ms >= 0 ? nlohmann::json(round3(s.echo_ms)) : nlohmann::json(nullptr)},
         {"total_ms", round3(s.total_ms)},
         {"address", s.address.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.address)},
         {"outcome", s.outcome},
         {"detail", s.detail.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.detail)}});
  }
  const bool all_ok = ok == o.count;
  nlohmann::json setup_j = summarize(setup);
  nlohmann::json doc = {{"host", o.host},
                        {"port", o.port},
                        {"started_at", started_at},
                        {"count", o.count},
                        {"arrivals", o.spacing_ms ? nlohmann::json{{"spacing_ms", *o.spacing_ms}}
                                                  : nlohmann::json{{"poisson_rate_per_s", o.rate}}},
                        {"concurrency", o.concurrency},
                        {"timeout_ms", o.timeout_ms},
                        {"ok", all_ok},
                        {"succeeded", ok},
                        {"failed", o.count - ok},
                        {"outcomes", outcomes},
                        {"elapsed_s", round3(elapsed_s)},
                        {"setup_ms", setup_j},
                        {"resolve_ms", summarize(resolve)},
                        {"echo_ms", summarize(echo_rtt)},
                        {"start_delay_ms", summarize(late)},
                        {"addresses", addresses},
                        {"distinct_addresses", addresses.size()},
                        {"samples", std::move(rows)}};

  std::string failed, addrs;
  for (auto& [k, v] : outcomes) {
    if (k != "ok") failed += fmt::format("{}{} {}", failed.empty() ? "" : ", ", k, v);
  }
  for (auto& [k, v] : addresses) addrs += fmt::format("{}{} x{}", addrs.empty() ? "" : ", ", k, v);
  std::string pace =
      o.spacing_ms ? fmt::format("spacing {} ms", *o.spacing_ms) : fmt::format("Poisson {}/s", o.rate);
  std::cout << fmt::format(
                   "churn {}:{}: {}/{} ok{} in {:.2f} s ({:.1f}/s, {}, concurrency {}); setup p50 {:.2f} "
                   "p90 {:.2f} p99 {:.2f} max {:.2f} ms; {} distinct address{}: {}",
                   o.host, o.port, ok, o.count, failed.empty() ? "" : " (failed: " + failed + ")", elapsed_s,
                   elapsed_s > 0 ? o.count / elapsed_s : 0.0, pace, o.concurrency,
                   setup_j["p50"].get<double>(), setup_j["p90"].get<double>(), setup_j["p99"].get<double>(),
                   setup_j["max"].get<double>(), addresses.size(), addresses.size() == 1 ? "" : "es",
                   addrs.empty() ? "none" : addrs)
            << std::endl;
  if (!failed.empty()) {
    // One example per failure kind, so the reason is visible without the JSON.
    std::map<std::string, bool> shown;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = samples[i];
      if (s.outcome == "ok" || shown[s.outcome]) continue;
      shown[s.outcome] = true;
      std::cout << fmt::format("churn: e.g. connection {} at {:.0f} ms: {}{}{}", i, s.start_ms, s.outcome,
                               s.address.empty() ? "" : " (" + s.address + ")",
                               s.detail.empty() ? "" : ": " + s.detail)
                << std::endl;
    }
  }
  if (auto e = write_json(o.json, doc); !e.empty()) {
    std::cerr << "churn: --json: " << e << '\n';
    return kExitFail;
  }
  return all_ok ? kExitOk : kExitFail;
}

}  // namespace sdn::tools::session
