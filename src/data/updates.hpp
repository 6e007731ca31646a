// Data Updates (seed 002 section 3.2.1): event-driven publish/subscribe, nothing stored. Two
// backends behind this interface: the in-process bus (embedded default; subscribers get the
// producer's Record object, no copy, no serialization) and Redis (hiredis, pipelined PUBLISH,
// PSUBSCRIBE for wildcard patterns, reconnect with backoff). Order: records published by one
// instance on one key reach each subscriber in publication order, on both backends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "data/key.hpp"
#include "data/record.hpp"

namespace sdn::data {

struct UpdatesStats {
  uint64_t published = 0;      // records accepted by publish()
  uint64_t sent = 0;           // written to the backend (Redis: PUBLISH acknowledged)
  uint64_t delivered = 0;      // handler invocations on this process
  uint64_t handler_errors = 0; // handler invocations that threw (caught, counted, logged)
  uint64_t dropped = 0;        // records this process failed to get out: buffer overflow while the
                               // backend was away, or unacknowledged when a connection broke
  uint64_t gaps = 0;           // records missed, seen as holes in a producer's per-key seq numbers
  uint64_t decode_errors = 0;  // malformed envelopes received (counted, logged, skipped)
  uint64_t reconnects = 0;
  uint64_t acl_denied = 0;     // commands the backend refused for lack of permission (Redis
                               // NOPERM on PUBLISH or (P)SUBSCRIBE); refused records also count
                               // as dropped
  uint64_t buffered = 0;       // now waiting to be written
  uint64_t batches = 0;        // pipelined writes to the backend
  bool connected = true;
  std::string last_error;
};

// How a handler is run: given the work, run it somewhere (e.g. post to a shard's io_context).
// Empty = run on the delivering thread (the publisher's thread for the in-process bus, the
// backend's reader thread for Redis).
using Executor = std::function<void(std::function<void()>)>;

class Updates {
 public:
  using Handler = std::function<void(const RecordPtr&)>;
  using SubId = uint64_t;

  virtual ~Updates() = default;
  virtual std::string_view name() const = 0;

  // Delivers every record whose key `pattern` matches (Key::matches), including records this
  // process publishes. Returns once the backend confirmed the subscription (Redis: the
  // SUBSCRIBE/PSUBSCRIBE reply, at most the connect timeout); while Redis is away the
  // subscription is recorded and issued on reconnect.
  virtual SubId subscribe(const Key& pattern, Handler handler, Executor executor = {}) = 0;
  // After return the handler is not called again (except a call already running on another
  // thread, which unsubscribe waits for when called from outside the handler).
  virtual void unsubscribe(SubId id) = 0;
  // Why the backend refused a subscription subscribe() returned (Redis: NOPERM for an ACL user
  // without that channel); none = accepted or still pending. The caller still unsubscribes.
  virtual std::optional<std::string> subscribe_error(SubId) const { return std::nullopt; }

  // Never blocks on I/O. Redis: queued, written in batches of `batch_size` or after the flush
  // interval, whichever comes first. `r->key` must be a concrete channel.
  virtual void publish(RecordPtr r) = 0;
  // Hands whatever is queued to the transport now (NO_WAIT / flush()).
  virtual void flush() = 0;
  // Waits until every record published before the call is written and acknowledged or counted
  // as dropped; false on timeout.
  virtual bool drain(std::chrono::milliseconds timeout) = 0;

  virtual UpdatesStats stats() const = 0;
};

struct RedisConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
  std::string user;      // Redis 6 ACL user; empty = default
  std::string password;  // empty = no AUTH
  // Redis Sentinel (data/sentinel.hpp): with sentinel_master set, host/port are ignored and the
  // master is asked of these sentinels ("host:port", in turn) at every (re)connect.
  std::vector<std::string> sentinels;
  std::string sentinel_master;
  std::size_t batch_size = 100;                 // records per pipelined write
  std::chrono::microseconds flush_interval{1000};  // oldest queued record waits at most this
  std::size_t max_buffered = 100000;            // kept while Redis is away; beyond: dropped, counted
  std::size_t max_tracked_keys = 100000;        // (instance, key) pairs whose seq is followed for
                                                // gap counting; beyond: the oldest is forgotten
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds reconnect_min{50};  // backoff doubles from min to max
  std::chrono::milliseconds reconnect_max{2000};
};

std::unique_ptr<Updates> make_inproc_updates();
// Starts the publisher and subscriber connections' threads. Fails only on a bad config; Redis
// being down at start is not an error (records buffer and the client keeps reconnecting), but
// `stats().connected` says so and the error is logged.
Expected<std::unique_ptr<Updates>, std::string> make_redis_updates(const RedisConfig& cfg);

}  // namespace sdn::data
