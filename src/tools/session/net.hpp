// Socket, clock and statistics helpers shared by the sdnator-session subcommands: IPv4 name
// resolution through getaddrinfo (a fresh lookup per call), non-blocking connect with a deadline,
// big-endian fields in probe payloads, the SIGINT/SIGTERM stop flag, percentiles, JSON output.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace sdn::tools::session {

using Clock = std::chrono::steady_clock;

// Exit codes: 0 the run met its criteria, 1 it ran but did not (or failed at run time),
// 2 bad usage (flags, arguments).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitUsage = 2;

double ms_between(Clock::time_point from, Clock::time_point to);
// Steady-clock nanoseconds, stamped into probes; echoes come back to the same process.
uint64_t mono_ns();
// Wall-clock time as an ISO 8601 string with milliseconds (UTC), for JSON run headers.
std::string wall_clock_iso();

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// SIGINT/SIGTERM set a process-wide flag and make stop_fd() readable (a self-pipe), so loops
// blocked in poll/epoll wake up. SIGPIPE is ignored (writes use MSG_NOSIGNAL anyway).
void install_stop_handlers();
bool stop_requested();
int stop_fd();
// Sleeps until `until` or a stop request, whichever is first; false if stopped.
bool sleep_until_or_stop(Clock::time_point until);

// Raises RLIMIT_NOFILE's soft limit to the hard limit (many concurrent sockets).
void raise_fd_limit();

struct Resolution {
  std::vector<sockaddr_in> addrs;  // distinct, in getaddrinfo's order
  std::vector<std::string> texts;  // dotted quads, same order
  std::string error;               // empty on success
  int tries = 0;
  double ms = 0;  // all tries, including the waits between them
  bool ok() const { return error.empty(); }
};
// getaddrinfo(host, AF_INET, socktype) — glibc re-reads /etc/resolv.conf when it changes — up
// to `tries` times, `retry_ms` apart, while it fails. A numeric host needs no resolver.
Resolution resolve_ipv4(const std::string& host, uint16_t port, int socktype, int tries = 1,
                        int retry_ms = 200);

std::string addr_text(const sockaddr_in& a);
std::string errno_text(int err);

// Outcome of a TCP connect attempt.
enum class ConnectStatus { kOk, kTimeout, kRefused, kReset, kUnreachable, kError };
const char* connect_status_name(ConnectStatus s);
struct ConnectResult {
  Fd fd;  // connected, non-blocking, TCP_NODELAY; empty unless kOk
  ConnectStatus status = ConnectStatus::kError;
  int err = 0;    // errno behind a failure
  double ms = 0;  // from connect() to the outcome
};
ConnectResult connect_tcp(const sockaddr_in& to, int timeout_ms);
ConnectStatus classify_connect_errno(int err);

// Waits for `events` on fd until the deadline (or a stop request). Returns poll's revents,
// 0 on timeout, -1 on stop.
int wait_fd(int fd, short events, Clock::time_point deadline);

// Writes all of buf before the deadline; returns 0 or an errno (ETIMEDOUT on the deadline).
int send_all(int fd, std::span<const uint8_t> buf, Clock::time_point deadline);
// Reads exactly buf.size() bytes before the deadline; returns 0, an errno, ETIMEDOUT, or
// ECONNABORTED when the peer closed first (EOF).
int recv_exact(int fd, std::span<uint8_t> buf, Clock::time_point deadline);

// Big-endian fields in probe payloads (built and checked byte by byte, never cast).
void put_u32(std::span<uint8_t> b, std::size_t at, uint32_t v);
void put_u64(std::span<uint8_t> b, std::size_t at, uint64_t v);
uint32_t get_u32(std::span<const uint8_t> b, std::size_t at);
uint64_t get_u64(std::span<const uint8_t> b, std::size_t at);

// Nearest-rank percentile (p in 0..100) of sorted values; 0 when empty.
double percentile(const std::vector<double>& sorted, double p);
// {"n", "p50", "p90", "p99", "max", "mean"} of the values (sorted in place).
nlohmann::json summarize(std::vector<double>& values);
double round3(double v);

// Writes the JSON document to path ("-" = stdout), via a temporary file and rename. Returns an
// error message, empty on success.
std::string write_json(const std::string& path, const nlohmann::json& doc);

// "a.b.c.d/len" -> first address (host order, host bits must be zero or are cleared) and length.
struct Cidr {
  uint32_t base = 0;
  int len = 32;
  uint64_t size() const { return uint64_t{1} << (32 - len); }
};
std::string parse_cidr(const std::string& text, Cidr& out);  // error message or empty

}  // namespace sdn::tools::session
