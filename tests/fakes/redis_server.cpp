// RedisServer: fork/exec of a private redis-server on loopback, readiness by PING over a raw
// socket (no client library needed), stop by pid only.
#include "fakes/redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace sdn::test {
namespace {

using Clock = std::chrono::steady_clock;


int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

uint16_t free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

RedisServer::RedisServer() : port_(free_loopback_port()) {
  char tmpl[] = "/tmp/sdnator-redis-XXXXXX";
  if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
}

RedisServer::~RedisServer() {
  stop(/*kill_hard=*/true);
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

bool RedisServer::start(std::chrono::milliseconds timeout) {
  if (pid_ > 0) return true;
  if (port_ == 0 || dir_.empty()) {
    error_ = "no free port or temp dir";
    return false;
  }
  std::vector<std::string> args = {"redis-server", "--bind", "127.0.0.1", "--port",
                                   std::to_string(port_), "--save", "", "--appendonly", "no",
                                   "--dir", dir_, "--logfile", dir_ + "/redis.log",
                                   "--daemonize", "no"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    // The server must not outlive a crashed test.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  pid_ = pid;

  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "redis-server exited during start (see " + dir_ + "/redis.log)";
      return false;
    }
    if (ping()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  error_ = "redis-server did not answer PING in time";
  stop(true);
  return false;
}

void RedisServer::stop(bool kill_hard) {
  if (pid_ <= 0) return;
  ::kill(pid_, kill_hard ? SIGKILL : SIGTERM);
  ::kill(pid_, SIGCONT);  // a paused server must be able to act on SIGTERM
  int status = 0;
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

bool RedisServer::ping(std::chrono::milliseconds timeout) const {
  auto deadline = Clock::now() + timeout;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port_);
  bool ok = false;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (rc == 0 || errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (::poll(&p, 1, remaining_ms(deadline)) == 1 &&
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
      static constexpr char kPing[] = "PING\r\n";
      if (::send(fd, kPing, sizeof(kPing) - 1, MSG_NOSIGNAL) == sizeof(kPing) - 1) {
        std::string got;
        char buf[64];
        while (got.find("\r\n") == std::string::npos) {
          p = {fd, POLLIN, 0};
          if (::poll(&p, 1, remaining_ms(deadline)) != 1) break;
          ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
          if (n <= 0) break;
          got.append(buf, static_cast<std::size_t>(n));
        }
        // A server with requirepass answers NOAUTH: up, just locked.
        ok = got.rfind("+PONG\r\n", 0) == 0 || got.rfind("-NOAUTH", 0) == 0;
      }
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace sdn::test
