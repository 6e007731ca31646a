// Redis Sentinel for tests: a private master and replica (tests/fakes/redis_server) and one or
// more `redis-server --sentinel` processes on free loopback ports, each with its own writable
// config file (Sentinel rewrites it) in a temp dir, with short failure detection
// (down-after-milliseconds 500, failover-timeout 2000). Tests kill the master (SIGKILL) and
// watch Sentinel promote the replica. Header-only; needs hiredis and redis_server.cpp.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fakes/redis_server.hpp"

namespace sdn::test {

// One command on a fresh connection to 127.0.0.1:port; the reply (null on failure). Short
// timeouts: for polling in tests.
struct TestReplyFree {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using TestReply = std::unique_ptr<redisReply, TestReplyFree>;

inline TestReply redis_call(uint16_t port, const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(300)) {
  timeval tv{0, static_cast<suseconds_t>(timeout.count() * 1000)};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr) return nullptr;
  if (c->err != 0) {
    redisFree(c);
    return nullptr;
  }
  redisSetTimeout(c, tv);
  std::vector<const char*> a;
  std::vector<size_t> l;
  for (const auto& s : args) {
    a.push_back(s.c_str());
    l.push_back(s.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(a.size()), a.data(), l.data()));
  redisFree(c);
  return TestReply(r);
}

class SentinelProcess {
 public:
  SentinelProcess(std::string dir, std::string master_name, uint16_t master_port, int quorum)
      : port_(free_loopback_port()), dir_(std::move(dir)) {
    conf_ = dir_ + "/sentinel-" + std::to_string(port_) + ".conf";
    std::ofstream f(conf_);
    f << "port " << port_ << "\n"
      << "bind 127.0.0.1\n"
      << "daemonize no\n"
      << "dir " << dir_ << "\n"
      << "logfile " << dir_ << "/sentinel-" << port_ << ".log\n"
      << "sentinel monitor " << master_name << " 127.0.0.1 " << master_port << " " << quorum << "\n"
      << "sentinel down-after-milliseconds " << master_name << " 500\n"
      << "sentinel failover-timeout " << master_name << " 2000\n"
      << "sentinel parallel-syncs " << master_name << " 1\n";
  }
  ~SentinelProcess() { stop(); }
  SentinelProcess(const SentinelProcess&) = delete;
  SentinelProcess& operator=(const SentinelProcess&) = delete;

  bool start(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::execlp("redis-server", "redis-server", conf_.c_str(), "--sentinel", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      auto r = redis_call(port_, {"PING"});
      if (r && r->type == REDIS_REPLY_STATUS) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    return false;
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  uint16_t port_;
  pid_t pid_ = -1;
  std::string dir_;
  std::string conf_;
};

// A master, one replica and `sentinels` sentinels (quorum 1 unless given) watching `name`.
class SentinelSetup {
 public:
  explicit SentinelSetup(std::string name = "sdnmaster") : name_(std::move(name)) {
    char tmpl[] = "/tmp/sdnator-sentinel-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~SentinelSetup() {
    sentinels_.clear();
    replica_.stop(true);
    master_.stop(true);
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  // Starts everything and waits until the replica is in sync and every sentinel knows it;
  // false with error() set otherwise.
  bool start(int sentinels = 1, int quorum = 1, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    if (dir_.empty()) return fail("no temp dir");
    // No 5 s wait before the replica's first sync (repl-diskless-sync-delay defaults to 5).
    master_.set_extra_args({"--repl-diskless-sync-delay", "0"});
    if (!master_.start()) return fail("master: " + master_.error());
    replica_.set_extra_args({"--replicaof", "127.0.0.1", std::to_string(master_.port())});
    if (!replica_.start()) return fail("replica: " + replica_.error());
    for (int i = 0; i < sentinels; ++i) {
      sentinels_.push_back(std::make_unique<SentinelProcess>(dir_, name_, master_.port(), quorum));
      if (!sentinels_.back()->start()) return fail("sentinel did not start (see " + dir_ + ")");
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return fail("replica not in sync or not known to every sentinel in time");
  }

  // Whether the replica's link is up and every sentinel lists it.
  bool ready() const {
    auto info = redis_call(replica_.port(), {"INFO", "replication"});
    if (!info || info->type != REDIS_REPLY_STRING ||
        std::string(info->str, info->len).find("master_link_status:up") == std::string::npos)
      return false;
    for (const auto& s : sentinels_) {
      auto r = redis_call(s->port(), {"SENTINEL", "replicas", name_});
      if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1) return false;
    }
    return true;
  }

  // The port Sentinel `i` names as master now (0 when it does not answer).
  uint16_t named_master_port(std::size_t i = 0) const {
    auto r = redis_call(sentinels_.at(i)->port(), {"SENTINEL", "get-master-addr-by-name", name_});
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return 0;
    return static_cast<uint16_t>(std::atoi(r->element[1]->str));
  }

  RedisServer& master() { return master_; }
  RedisServer& replica() { return replica_; }
  SentinelProcess& sentinel(std::size_t i) { return *sentinels_.at(i); }
  std::vector<std::string> sentinel_addresses() const {
    std::vector<std::string> out;
    for (const auto& s : sentinels_) out.push_back(s->address());
    return out;
  }
  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string e) {
    error_ = std::move(e);
    return false;
  }
  std::string name_;
  std::string dir_;
  std::string error_;
  RedisServer master_;
  RedisServer replica_;
  std::vector<std::unique_ptr<SentinelProcess>> sentinels_;
};

}  // namespace sdn::test
