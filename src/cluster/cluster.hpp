// A cluster of sdnator instances over Redis (docs/cluster.md). Each instance is a member with a
// heartbeat key; each switch has a mastership lease (one key with a TTL, holding the owner and
// a fencing generation that only grows); named leaderships (e.g. "cpam-rotation") are leases of
// the same kind. Redis is reached directly or through Redis Sentinel, which names the current
// master after a failover of Redis itself.
//
// Layer: above core, data (the Redis/Sentinel connection helper) and southbound (the RoleArbiter
// interface it implements); apps may use it (CPAM's rotation leader).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/expected.hpp"
#include "southbound/roles.hpp"

namespace sdn::cluster {

struct ClusterConfig {
  bool enabled = false;                 // [cluster] enabled
  std::string name = "sdnator";         // key namespace: sdnator:cluster:<name>:...
  std::string instance_id;              // unique per instance; empty = "<hostname>-<pid>"
  // "host:port" of the Redis server, or with sentinel_master set, of the sentinels (any number).
  std::vector<std::string> redis = {"127.0.0.1:6379"};
  std::string sentinel_master;          // empty = talk to redis[0] directly
  std::string user, password;           // Redis AUTH (empty = none)
  std::chrono::milliseconds lease{600};         // a lease not renewed for this long is free
  std::chrono::milliseconds renew_interval{150};  // owner renews every ...
  std::chrono::milliseconds check_interval{100};  // free leases looked for every ...
  // A switch's preferred owner (rendezvous hash over the live members) takes a free lease at
  // once; any other instance waits this long first, so mastership spreads evenly.
  std::chrono::milliseconds claim_delay{200};
  bool balance = true;  // hand a switch over to its preferred owner once that one is connected
};

// Reads [cluster] (every key validated; errors name the key).
ClusterConfig cluster_config_from(core::Config& cfg);
// The checks start() makes (the same rules as cluster_config_from, by key name).
Expected<void, std::string> check_cluster_config(const ClusterConfig& cfg);

// What happened so far (also in state()["counters"]).
struct ClusterCounters {
  uint64_t leases_acquired = 0;   // switch and leader leases taken (including taken back)
  uint64_t leases_lost = 0;       // found gone or owned by another when renewing or checking
  uint64_t handovers = 0;         // switches released to their preferred owner (balance)
  uint64_t renew_failures = 0;    // renew rounds that did not get an answer
  uint64_t redis_errors = 0;      // failed connects, broken connections, error replies
  uint64_t reconnects = 0;        // connections re-established after one was lost
  uint64_t sentinel_lookups = 0;  // masters asked of Sentinel
  uint64_t fenced_writes_refused = 0;
  uint64_t self_demotions = 0;    // leases given up locally: not renewed before their deadline
};

// A named leadership held through a lease (rotation leader).
struct LeaderEvents {
  std::function<void(uint64_t generation)> gained;  // this instance now leads
  std::function<void()> lost;                       // it no longer does (lease lost or stop)
};

class Cluster final : public southbound::RoleArbiter {
 public:
  explicit Cluster(ClusterConfig cfg);
  ~Cluster() override;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Connects (through Sentinel when configured), registers the member and starts the lease
  // thread. An unreachable Redis is not an error (the thread keeps retrying, counted), but a
  // bad config is.
  Expected<void, std::string> start();
  // Releases every lease this instance holds (so the others take over at once) and stops.
  void stop();

  const ClusterConfig& config() const { return cfg_; }
  const std::string& instance_id() const;

  // RoleArbiter (southbound): the per-switch mastership.
  void attach(southbound::RoleSink* sink) override;
  void switch_connected(uint64_t dpid) override;
  void switch_disconnected(uint64_t dpid) override;
  void mastership_refused(uint64_t dpid, uint64_t generation) override;

  // Named leadership: the callbacks run on the cluster's thread; `gained` at most once per
  // generation, `lost` before another generation is gained.
  void lead(const std::string& role, LeaderEvents ev);
  bool is_leader(const std::string& role) const;
  // A fenced write for the leader of `role`: runs a SET of `key` = `value` in Redis only while
  // this instance's generation is still the role's current one (Lua), so a deposed leader can
  // never overwrite its successor's state. False (and counted) when fenced off or unreachable.
  bool fenced_set(const std::string& role, const std::string& key, const std::string& value);
  // Plain access to the cluster's Redis for shared state under sdnator:cluster:<name>:
  // (the key given is the suffix). Empty optional when absent or unreachable.
  std::optional<std::string> get(const std::string& key);
  bool set(const std::string& key, const std::string& value, std::chrono::milliseconds ttl = {});

  // Status for the stats file and the REST API: members, the switches this instance masters
  // with their generations, leaderships, counters (cluster.*).
  nlohmann::json state() const;

  ClusterCounters counters() const;
  // The switches this instance masters now, with their generations.
  std::map<uint64_t, uint64_t> masters() const;
  // The live members as last read from Redis (sorted instance ids).
  std::vector<std::string> members() const;
  // Whether the lease thread holds a working Redis connection, and to which "host:port".
  bool redis_connected() const;
  std::string redis_address() const;

  // Test hook: a frozen lease thread does nothing at all (no renewal, no local demotion, no
  // events handled), like a stopped process; get/set/fenced_set still work.
  void freeze_for_test(bool frozen);

 private:
  struct Impl;
  ClusterConfig cfg_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::cluster
