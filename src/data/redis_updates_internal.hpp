// Internals of the Redis backend of Data Updates (redis_updates.cpp): hiredis RAII and
// connection helpers, and the local subscription whose handler stops for good on retire().
// Not part of the public API; included only by redis_updates.cpp.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "data/sentinel.hpp"
#include "data/updates.hpp"

namespace sdn::data::redis_detail {

struct ContextFree {
  void operator()(redisContext* c) const {
    if (c != nullptr) redisFree(c);
  }
};
using ContextPtr = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

inline timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

inline std::string_view reply_str(const redisReply* r) {
  if (r == nullptr || r->str == nullptr) return {};
  return {r->str, r->len};
}

// hiredis writes with write(2): a peer that went away would raise SIGPIPE and kill the process.
// Our I/O threads block it, so a broken socket is just EPIPE; the pending signal is then taken
// back so it can never fire later.
inline void block_sigpipe() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

inline void consume_pending_sigpipe() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  timespec zero{0, 0};
  while (sigtimedwait(&s, nullptr, &zero) > 0) {
  }
}

// Connects, sets socket timeouts (so no call blocks longer than connect_timeout) and
// authenticates when a password is configured.
// With [redis] sentinel_master set, the master is found through Sentinel and its ROLE checked.
inline ContextPtr open_connection(const RedisConfig& cfg, std::string& err) {
  if (!cfg.sentinel_master.empty()) {
    RedisEndpoint ep;
    ep.sentinels = cfg.sentinels;
    ep.sentinel_master = cfg.sentinel_master;
    ep.user = cfg.user;
    ep.password = cfg.password;
    ep.timeout = cfg.connect_timeout;
    ep.sentinel_timeout = std::min(cfg.connect_timeout, std::chrono::milliseconds(300));
    return ContextPtr(open_redis_master(ep, err));
  }
  const timeval tv = to_timeval(cfg.connect_timeout);
  ContextPtr c(redisConnectWithTimeout(cfg.host.c_str(), cfg.port, tv));
  if (!c) {
    err = "cannot allocate a hiredis context";
    return nullptr;
  }
  if (c->err != 0) {
    err = fmt::format("connect {}:{}: {}", cfg.host, cfg.port, c->errstr);
    return nullptr;
  }
  if (redisSetTimeout(c.get(), tv) != REDIS_OK) {
    err = fmt::format("setting socket timeouts: {}", c->errstr);
    return nullptr;
  }
  redisEnableKeepAlive(c.get());
  if (!cfg.password.empty()) {
    std::vector<const char*> argv{"AUTH"};
    std::vector<std::size_t> lens{4};
    if (!cfg.user.empty()) {
      argv.push_back(cfg.user.c_str());
      lens.push_back(cfg.user.size());
    }
    argv.push_back(cfg.password.c_str());
    lens.push_back(cfg.password.size());
    ReplyPtr r(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
    if (!r) {
      err = fmt::format("AUTH on {}:{}: {}", cfg.host, cfg.port, c->errstr);
      return nullptr;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      err = fmt::format("AUTH on {}:{} refused: {}", cfg.host, cfg.port, reply_str(r.get()));
      return nullptr;
    }
  }
  return c;
}

// Has the server closed an idle connection? (EOF or an error pending on the socket.)
inline bool peer_closed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return true;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Writes a blocking context's output buffer out completely.
inline bool write_out(redisContext* c) {
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(c, &done) != REDIS_OK) return false;
  }
  return true;
}

// State that work posted to executors may still touch after the Updates object is gone.
struct Shared {
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> handler_errors{0};
};

// One local subscription. `call` runs the handler unless the subscription was retired; `retire`
// waits for calls running on other threads, so after unsubscribe returns no call starts or runs.
struct Sub {
  Key pattern;
  Updates::Handler handler;
  Executor executor;
  std::string rname;  // the Redis subscription carrying it: "p:<glob>" or "c:<channel>"
  std::shared_ptr<Shared> shared;

  std::mutex mu;
  std::condition_variable cv;
  bool active = true;
  std::vector<std::thread::id> running;

  void call(const RecordPtr& r) {
    const auto me = std::this_thread::get_id();
    {
      std::lock_guard l(mu);
      if (!active) return;
      running.push_back(me);
    }
    shared->delivered.fetch_add(1, std::memory_order_relaxed);
    // A throwing handler must not take the reader thread down with it.
    try {
      handler(r);
    } catch (const std::exception& e) {
      shared->handler_errors.fetch_add(1, std::memory_order_relaxed);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "redis updates: handler for '{}' threw: {}",
                          r->key, e.what());
    } catch (...) {
      shared->handler_errors.fetch_add(1, std::memory_order_relaxed);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "redis updates: handler for '{}' threw", r->key);
    }
    {
      std::lock_guard l(mu);
      running.erase(std::find(running.begin(), running.end(), me));
    }
    cv.notify_all();
  }

  void retire() {
    const auto me = std::this_thread::get_id();
    std::unique_lock l(mu);
    active = false;
    cv.wait(l, [&] {
      return std::all_of(running.begin(), running.end(), [&](auto id) { return id == me; });
    });
  }
};
using SubPtr = std::shared_ptr<Sub>;

}  // namespace sdn::data::redis_detail
