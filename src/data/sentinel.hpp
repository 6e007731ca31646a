// Finding the current Redis master through Redis Sentinel, following the Sentinel client
// guideline (https://redis.io/docs/reference/sentinel-clients/): ask each sentinel in turn,
// with short timeouts, for the master's address (SENTINEL get-master-addr-by-name), then
// connect to that address and check with ROLE that it really is a master (a sentinel may not
// know yet that a failover happened). Used by the Redis backend of Data Updates, the ACL admin
// connection and the cluster on every (re)connect.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

struct redisContext;

namespace sdn::data {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

// "host:port" (the last colon splits; port 1-65535). The error says what is wrong.
Expected<HostPort, std::string> parse_host_port(std::string_view text);

struct SentinelAnswer {
  HostPort master;
  std::size_t sentinel_index = 0;  // which of the sentinels answered
};

// Asks the sentinels in order until one names the master `name`; each try is bounded by
// `timeout` (connect and reply). The error lists every sentinel's failure.
Expected<SentinelAnswer, std::string> sentinel_master_addr(const std::vector<std::string>& sentinels,
                                                           const std::string& name,
                                                           std::chrono::milliseconds timeout);

// ROLE on an open connection: "master", "slave" or "sentinel"; an error when the reply is
// malformed or the connection failed.
Expected<std::string, std::string> redis_role(redisContext* c);

// Where and how to reach a Redis master.
struct RedisEndpoint {
  std::string host = "127.0.0.1";            // direct: used when sentinel_master is empty
  uint16_t port = 6379;
  std::vector<std::string> sentinels;       // "host:port" of the sentinels
  std::string sentinel_master;              // non-empty: ask the sentinels for this master
  std::string user, password;               // AUTH on the master (empty password = none)
  std::chrono::milliseconds timeout{1000};  // connect and command timeout on the master
  std::chrono::milliseconds sentinel_timeout{300};  // per sentinel asked
};

// Opens a blocking hiredis connection with socket timeouts set, AUTH done, and (through
// Sentinel) the ROLE checked to be master. Null with `err` set on failure; `where` receives
// the address connected to. The caller frees the context with redisFree.
redisContext* open_redis_master(const RedisEndpoint& ep, std::string& err, HostPort* where = nullptr);

}  // namespace sdn::data
