// A private redis-server for tests: started on a free loopback port in its own temp dir with
// persistence off, stopped by pid (SIGTERM or SIGKILL) and restarted on the same port, so tests
// can take Redis away mid-stream without touching any other Redis on the machine.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace sdn::test {

// A free TCP port on 127.0.0.1 (bound and released; for a server started next).
uint16_t free_loopback_port();

class RedisServer {
 public:
  // Picks a free port and creates the temp dir; does not start the server (call start()).
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts redis-server (extra arguments appended, e.g. {"--requirepass", "x"}) and waits until
  // it answers PING; false (with the reason in error()) if it does not within `timeout`.
  bool start(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGTERM (graceful) or SIGKILL (crash) to our own child, then reaps it.
  void stop(bool kill_hard = false);
  bool running() const { return pid_ > 0; }
  // SIGSTOP / SIGCONT: a server that accepts bytes but never answers (a hung Redis).
  void pause();
  void resume();

  uint16_t port() const { return port_; }
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }
  // Arguments appended on every start (e.g. requirepass).
  void set_extra_args(std::vector<std::string> args) { extra_args_ = std::move(args); }

  // True if a fresh connection gets +PONG within `timeout`.
  bool ping(std::chrono::milliseconds timeout = std::chrono::milliseconds(200)) const;

 private:
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::string dir_;
  std::string error_;
  std::vector<std::string> extra_args_;
};

}  // namespace sdn::test
