// Helpers for sdnator-session (see net.hpp).
#include "tools/session/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <thread>

namespace sdn::tools::session {
namespace {

std::atomic<bool> g_stop{false};
int g_stop_pipe[2] = {-1, -1};

void on_stop_signal(int) {
  g_stop.store(true);
  if (g_stop_pipe[1] >= 0) {
    const char c = 's';
    [[maybe_unused]] ssize_t n = ::write(g_stop_pipe[1], &c, 1);
  }
}

}  // namespace

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

uint64_t mono_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

std::string wall_clock_iso() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[80];  // generous: GCC sizes %d fields at 11 characters
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void install_stop_handlers() {
  if (g_stop_pipe[0] < 0 && ::pipe2(g_stop_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    g_stop_pipe[0] = g_stop_pipe[1] = -1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and loops see the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() { return g_stop.load(); }
int stop_fd() { return g_stop_pipe[0]; }

bool sleep_until_or_stop(Clock::time_point until) {
  // Short slices: a signal handler cannot notify a condition variable.
  while (!stop_requested()) {
    auto now = Clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
  return false;
}

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

std::string addr_text(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return buf;
}

std::string errno_text(int err) { return std::strerror(err); }

Resolution resolve_ipv4(const std::string& host, uint16_t port, int socktype, int tries, int retry_ms) {
  Resolution r;
  auto t0 = Clock::now();
  const std::string service = std::to_string(port);
  for (int attempt = 1; attempt <= std::max(1, tries); ++attempt) {
    if (attempt > 1 && !sleep_until_or_stop(Clock::now() + std::chrono::milliseconds(retry_ms))) {
      r.error = "interrupted";
      break;
    }
    r.tries = attempt;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = socktype;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    if (rc != 0) {
      r.error = rc == EAI_SYSTEM ? std::string("getaddrinfo: ") + errno_text(errno) : gai_strerror(rc);
      continue;
    }
    r.error.clear();
    for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
      if (p->ai_family != AF_INET || p->ai_addrlen < sizeof(sockaddr_in)) continue;
      sockaddr_in sa{};
      std::memcpy(&sa, p->ai_addr, sizeof sa);
      std::string text = addr_text(sa);
      if (std::find(r.texts.begin(), r.texts.end(), text) != r.texts.end()) continue;
      r.addrs.push_back(sa);
      r.texts.push_back(std::move(text));
    }
    ::freeaddrinfo(res);
    if (r.addrs.empty()) r.error = "no IPv4 address";
    if (r.ok()) break;
  }
  r.ms = ms_between(t0, Clock::now());
  return r;
}

const char* connect_status_name(ConnectStatus s) {
  switch (s) {
    case ConnectStatus::kOk:
      return "ok";
    case ConnectStatus::kTimeout:
      return "connect_timeout";
    case ConnectStatus::kRefused:
      return "refused";
    case ConnectStatus::kReset:
      return "reset";
    case ConnectStatus::kUnreachable:
      return "unreachable";
    case ConnectStatus::kError:
      return "error";
  }
  return "error";
}

ConnectStatus classify_connect_errno(int err) {
  switch (err) {
    case 0:
      return ConnectStatus::kOk;
    case ETIMEDOUT:
      return ConnectStatus::kTimeout;
    case ECONNREFUSED:
      return ConnectStatus::kRefused;
    case ECONNRESET:
      return ConnectStatus::kReset;
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
      return ConnectStatus::kUnreachable;
    default:
      return ConnectStatus::kError;
  }
}

int wait_fd(int fd, short events, Clock::time_point deadline) {
  pollfd fds[2] = {{fd, events, 0}, {stop_fd(), POLLIN, 0}};
  const nfds_t n = stop_fd() >= 0 ? 2 : 1;
  for (;;) {
    if (stop_requested()) return -1;
    auto now = Clock::now();
    if (now >= deadline) return 0;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    int rc = ::poll(fds, n, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return POLLERR;
    }
    if (n == 2 && fds[1].revents != 0) return -1;
    if (fds[0].revents != 0) return fds[0].revents;
  }
}

ConnectResult connect_tcp(const sockaddr_in& to, int timeout_ms) {
  ConnectResult r;
  auto t0 = Clock::now();
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    r.err = errno;
    r.ms = ms_between(t0, Clock::now());
    return r;
  }
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int err = 0;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      int ev = wait_fd(fd.get(), POLLOUT, t0 + std::chrono::milliseconds(timeout_ms));
      if (ev == 0) {
        err = ETIMEDOUT;
      } else if (ev < 0) {
        err = EINTR;
      } else {
        socklen_t len = sizeof err;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
  }
  r.ms = ms_between(t0, Clock::now());
  r.err = err;
  r.status = classify_connect_errno(err);
  if (r.status == ConnectStatus::kOk) r.fd = std::move(fd);
  return r;
}

int send_all(int fd, std::span<const uint8_t> buf, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    int ev = wait_fd(fd, POLLOUT, deadline);
    if (ev == 0) return ETIMEDOUT;
    if (ev < 0) return EINTR;
  }
  return 0;
}

int recv_exact(int fd, std::span<uint8_t> buf, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = ::recv(fd, buf.data() + off, buf.size() - off, 0);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return ECONNABORTED;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    int ev = wait_fd(fd, POLLIN, deadline);
    if (ev == 0) return ETIMEDOUT;
    if (ev < 0) return EINTR;
  }
  return 0;
}

void put_u32(std::span<uint8_t> b, std::size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put_u64(std::span<uint8_t> b, std::size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint32_t get_u32(std::span<const uint8_t> b, std::size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | b[at + i];
  return v;
}
uint64_t get_u64(std::span<const uint8_t> b, std::size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | b[at + i];
  return v;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

nlohmann::json summarize(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  return {{"n", values.size()},
          {"p50", round3(percentile(values, 50))},
          {"p90", round3(percentile(values, 90))},
          {"p99", round3(percentile(values, 99))},
          {"max", round3(values.empty() ? 0 : values.back())},
          {"mean", round3(values.empty() ? 0 : sum / static_cast<double>(values.size()))}};
}

std::string write_json(const std::string& path, const nlohmann::json& doc) {
  if (path.empty()) return {};
  if (path == "-") {
    std::cout << doc.dump(2) << std::endl;
    return {};
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return "cannot write " + tmp + ": " + errno_text(errno);
    out << doc.dump(2) << '\n';
    if (!out.flush()) return "cannot write " + tmp + ": " + errno_text(errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    return "cannot rename " + tmp + " to " + path + ": " + errno_text(e);
  }
  return {};
}

std::string parse_cidr(const std::string& text, Cidr& out) {
  auto slash = text.find('/');
  std::string ip = text.substr(0, slash);
  int len = 32;
  if (slash != std::string::npos) {
    std::string l = text.substr(slash + 1);
    if (l.empty() || l.size() > 2 || !std::all_of(l.begin(), l.end(), ::isdigit)) {
      return "bad prefix length in '" + text + "' (expected a.b.c.d/0..32)";
    }
    len = std::stoi(l);
    if (len > 32) return "bad prefix length in '" + text + "' (expected a.b.c.d/0..32)";
  }
  in_addr a{};
  if (::inet_pton(AF_INET, ip.c_str(), &a) != 1) return "bad IPv4 address in '" + text + "'";
  uint32_t host = ntohl(a.s_addr);
  uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
  if ((host & ~mask) != 0) {
    in_addr base{htonl(host & mask)};
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &base, buf, sizeof buf);
    return "'" + text + "' has host bits set (did you mean " + buf + "/" + std::to_string(len) + "?)";
  }
  out.base = host & mask;
  out.len = len;
  return {};
}

}  // namespace sdn::tools::session
