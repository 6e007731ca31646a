// One blocking hiredis connection for the cluster (redis_link.cpp): opened through Sentinel when
// configured, the Lua scripts loaded on every connect, commands pipelined in one round trip,
// EVALSHA retried once after NOSCRIPT (a script cache flushed, or a failover to a replica that
// never saw SCRIPT LOAD). Not thread-safe: one owner thread, or a mutex around it.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/sentinel.hpp"

struct redisContext;
struct redisReply;

namespace sdn::cluster {

// The scripts (redis_link.cpp has their text and the key/argument contracts).
enum class Script { kAcquire, kRenew, kRelease, kFencedSet, kHeartbeat, kConn, kInspect, kCount };

struct ReplyDeleter {
  void operator()(redisReply* r) const;
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

using Argv = std::vector<std::string>;

class RedisLink {
 public:
  explicit RedisLink(data::RedisEndpoint ep) : ep_(std::move(ep)) {}
  ~RedisLink();
  RedisLink(const RedisLink&) = delete;
  RedisLink& operator=(const RedisLink&) = delete;

  bool connected() const { return ctx_ != nullptr; }
  bool via_sentinel() const { return !ep_.sentinel_master.empty(); }
  const std::string& address() const { return address_; }
  const std::string& last_error() const { return err_; }

  // Opens the connection and loads the scripts; false with last_error() set.
  bool connect();
  void drop();

  // An EVALSHA command line for `s` with these keys and arguments.
  static Argv eval(Script s, const std::vector<std::string>& keys, const std::vector<std::string>& args);

  // Sends every command, then reads every reply: one round trip. Empty when the connection
  // failed (it is dropped); error replies come back as replies (type REDIS_REPLY_ERROR).
  std::optional<std::vector<Reply>> run(const std::vector<Argv>& cmds);

 private:
  bool load_scripts();
  data::RedisEndpoint ep_;
  std::array<std::string, static_cast<std::size_t>(Script::kCount)> sha_;
  redisContext* ctx_ = nullptr;
  std::string address_;
  std::string err_;
};

// Reply helpers (null-safe).
std::string reply_string(const redisReply* r);  // string/status/integer as text; "" otherwise
bool reply_is_error(const redisReply* r);
bool reply_is_nil(const redisReply* r);
long long reply_int(const redisReply* r, long long def = -1);
std::size_t reply_elements(const redisReply* r);
const redisReply* reply_element(const redisReply* r, std::size_t i);

}  // namespace sdn::cluster
