// `sdnator-session serve`: TCP and UDP echo servers in one epoll loop (one thread). A TCP
// connection echoes what it receives until the peer's EOF, then closes once everything is
// written back; while a peer does not read, its connection stops reading too (back-pressure).
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <unordered_map>
#include <vector>

#include "tools/session/net.hpp"
#include "tools/session/session.hpp"

namespace sdn::tools::session {
namespace {

constexpr std::size_t kBufSize = 64 * 1024;

struct Conn {
  Fd fd;
  std::vector<uint8_t> pending;  // received, not yet echoed
  std::size_t pending_off = 0;
  bool peer_eof = false;
};

struct Counters {
  uint64_t accepted = 0, rejected = 0, closed = 0, resets = 0, tcp_bytes = 0;
  uint64_t udp_datagrams = 0, udp_bytes = 0, udp_send_errors = 0;
  std::size_t peak_conns = 0;
};

// Rate-limited complaint: at most one line per second per kind.
void complain(Clock::time_point& last, const std::string& what) {
  auto now = Clock::now();
  if (now - last < std::chrono::seconds(1)) return;
  last = now;
  std::cerr << "serve: " << what << '\n';
}

Fd bind_socket(int type, const sockaddr_in& at, std::string& err) {
  Fd fd(::socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    err = "socket: " + errno_text(errno);
    return {};
  }
  int one = 1;
  // TCP: rebind at once after a restart. Not for UDP, where SO_REUSEADDR would let a second
  // server share the port silently. UDP asks for each datagram's destination (IP_PKTINFO) so
  // the echo leaves from the address the client sent to, even on a host with several.
  if (type == SOCK_STREAM) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (type == SOCK_DGRAM) ::setsockopt(fd.get(), IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) {
    err = "bind " + addr_text(at) + ":" + std::to_string(ntohs(at.sin_port)) + ": " + errno_text(errno);
    return {};
  }
  if (type == SOCK_STREAM && ::listen(fd.get(), SOMAXCONN) != 0) {
    err = "listen: " + errno_text(errno);
    return {};
  }
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

class EchoServer {
 public:
  explicit EchoServer(const ServeOpts& o) : opts_(o) {}

  int run() {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    if (::inet_pton(AF_INET, opts_.bind.c_str(), &at.sin_addr) != 1) {
      std::cerr << "serve: --bind '" << opts_.bind << "' is not an IPv4 address\n";
      return kExitUsage;
    }
    ep_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!ep_) {
      std::cerr << "serve: epoll_create1: " << errno_text(errno) << '\n';
      return kExitFail;
    }
    std::string err;
    nlohmann::json ready = nlohmann::json::object();
    std::string banner = "serve:";
    if (opts_.tcp_port) {
      at.sin_port = htons(*opts_.tcp_port);
      tcp_ = bind_socket(SOCK_STREAM, at, err);
      if (!tcp_) {
        std::cerr << "serve: tcp: " << err << '\n';
        return kExitFail;
      }
      ready["tcp"] = bound_port(tcp_.get());
      banner += " tcp echo on " + opts_.bind + ":" + std::to_string(bound_port(tcp_.get()));
      watch(tcp_.get(), EPOLLIN);
    }
    if (opts_.udp_port) {
      at.sin_port = htons(*opts_.udp_port);
      udp_ = bind_socket(SOCK_DGRAM, at, err);
      if (!udp_) {
        std::cerr << "serve: udp: " << err << '\n';
        return kExitFail;
      }
      ready["udp"] = bound_port(udp_.get());
      banner += std::string(opts_.tcp_port ? "," : "") + " udp echo on " + opts_.bind + ":" +
                std::to_string(bound_port(udp_.get()));
      watch(udp_.get(), EPOLLIN);
    }
    if (stop_fd() >= 0) watch(stop_fd(), EPOLLIN);
    std::cout << banner << std::endl;
    if (!opts_.ready_file.empty()) {
      ready["pid"] = ::getpid();
      if (auto e = write_json(opts_.ready_file, ready); !e.empty()) {
        std::cerr << "serve: --ready-file: " << e << '\n';
        return kExitFail;
      }
    }
    loop();
    std::cout << "serve: stopped; tcp " << c_.accepted << " connections (" << c_.rejected
              << " rejected over --max-conns, " << c_.resets << " reset by the peer, peak " << c_.peak_conns
              << " at once), " << c_.tcp_bytes << " bytes echoed; udp " << c_.udp_datagrams << " datagrams, "
              << c_.udp_bytes << " bytes echoed" << std::endl;
    return kExitOk;
  }

 private:
  void watch(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev);
  }
  void rewatch(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, fd, &ev);
  }

  void loop() {
    std::vector<epoll_event> events(256);
    while (!stop_requested()) {
      int n = ::epoll_wait(ep_.get(), events.data(), static_cast<int>(events.size()), 1000);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::cerr << "serve: epoll_wait: " << errno_text(errno) << '\n';
        return;
      }
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == stop_fd()) return;
        if (tcp_ && fd == tcp_.get()) {
          accept_all();
        } else if (udp_ && fd == udp_.get()) {
          echo_udp();
        } else {
          on_conn(fd, events[i].events);
        }
      }
    }
  }

  void accept_all() {
    for (;;) {
      int fd = ::accept4(tcp_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          complain(last_accept_err_, "accept: " + errno_text(errno));
        }
        return;
      }
      if (conns_.size() >= static_cast<std::size_t>(opts_.max_conns)) {
        ::close(fd);
        ++c_.rejected;
        complain(last_reject_,
                 "over --max-conns " + std::to_string(opts_.max_conns) + ": closing new connections");
        continue;
      }
      ++c_.accepted;
      conns_[fd].fd.reset(fd);
      c_.peak_conns = std::max(c_.peak_conns, conns_.size());
      watch(fd, EPOLLIN | EPOLLRDHUP);
    }
  }

  void close_conn(int fd) {
    ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr);
    conns_.erase(fd);  // Fd closes it
    ++c_.closed;
  }

  // Writes what is pending; true when everything has been written.
  bool flush(Conn& c, bool& failed) {
    while (c.pending_off < c.pending.size()) {
      ssize_t n = ::send(c.fd.get(), c.pending.data() + c.pending_off, c.pending.size() - c.pending_off,
                         MSG_NOSIGNAL);
      if (n > 0) {
        c.pending_off += static_cast<std::size_t>(n);
        c_.tcp_bytes += static_cast<uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      failed = true;
      return false;
    }
    c.pending.clear();
    c.pending_off = 0;
    return true;
  }

  void on_conn(int fd, uint32_t ev) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    bool failed = false;
    if (ev & EPOLLERR) failed = true;
    // Fully closed by the peer with echo bytes still owed: they cannot be delivered.
    if ((ev & EPOLLHUP) && !c.pending.empty()) failed = true;
    if (!failed && (ev & EPOLLOUT)) {
      if (flush(c, failed)) {
        if (c.peer_eof) return close_conn(fd);
        rewatch(fd, EPOLLIN | EPOLLRDHUP);
      }
    }
    if (!failed && c.pending.empty() && !c.peer_eof && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))) {
      // Read until EAGAIN or something is left unsent (then wait for EPOLLOUT, reading nothing).
      while (!failed && c.pending.empty()) {
        ssize_t n = ::recv(fd, buf_, sizeof buf_, 0);
        if (n > 0) {
          c.pending.assign(buf_, buf_ + n);
          if (!flush(c, failed) && !failed) rewatch(fd, EPOLLOUT);
          continue;
        }
        if (n == 0) {
          c.peer_eof = true;
          break;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) failed = true;
        break;
      }
      if (c.peer_eof && c.pending.empty()) return close_conn(fd);
    }
    if (failed) {
      ++c_.resets;
      close_conn(fd);
    }
  }

  void echo_udp() {
    for (int i = 0; i < 1024; ++i) {  // bounded, so TCP connections are served too
      sockaddr_in from{};
      iovec iov{buf_, sizeof buf_};
      alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(in_pktinfo))];
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof from;
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = ctl;
      msg.msg_controllen = sizeof ctl;
      ssize_t n = ::recvmsg(udp_.get(), &msg, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;  // EAGAIN, or an ICMP error queued by an earlier send
      }
      ++c_.udp_datagrams;
      // Reply with the same pktinfo: ipi_spec_dst (the local address the datagram was sent to)
      // becomes the source; the interface index is cleared so routing picks the way back.
      bool have_pktinfo = false;
      for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
          in_pktinfo pi{};
          std::memcpy(&pi, CMSG_DATA(cm), sizeof pi);
          pi.ipi_ifindex = 0;
          std::memcpy(CMSG_DATA(cm), &pi, sizeof pi);
          have_pktinfo = true;
        }
      }
      iov.iov_len = static_cast<std::size_t>(n);
      msghdr reply{};
      reply.msg_name = &from;
      reply.msg_namelen = sizeof from;
      reply.msg_iov = &iov;
      reply.msg_iovlen = 1;
      if (have_pktinfo) {
        reply.msg_control = ctl;
        reply.msg_controllen = msg.msg_controllen;
      }
      if (::sendmsg(udp_.get(), &reply, 0) == n) {
        c_.udp_bytes += static_cast<uint64_t>(n);
      } else {
        ++c_.udp_send_errors;
        complain(last_udp_err_, "udp sendto " + addr_text(from) + ": " + errno_text(errno));
      }
    }
  }

  const ServeOpts& opts_;
  Fd ep_, tcp_, udp_;
  std::unordered_map<int, Conn> conns_;
  Counters c_;
  uint8_t buf_[kBufSize];
  Clock::time_point last_accept_err_{}, last_reject_{}, last_udp_err_{};
};

}  // namespace

int run_serve(const ServeOpts& o) {
  if (!o.tcp_port && !o.udp_port) {
    std::cerr << "serve: give --tcp PORT and/or --udp PORT\n";
    return kExitUsage;
  }
  install_stop_handlers();
  raise_fd_limit();
  auto server = std::make_unique<EchoServer>(o);  // 64 KiB buffer: not on the stack
  return server->run();
}

}  // namespace sdn::tools::session
