// The switch runtime: a listener, the shards that own switch connections, the apps created
// per shard, and the datapath registry (dpid -> connection) shared across shards.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <asio/ip/tcp.hpp>

#include "core/expected.hpp"
#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "southbound/app.hpp"
#include "southbound/config.hpp"
#include "southbound/counters.hpp"
#include "southbound/roles.hpp"

namespace sdn::southbound {

class Connection;
class TlsContext;

// Per-shard state: touched only on that shard's thread.
struct ShardState {
  core::Shard* shard = nullptr;
  std::vector<std::unique_ptr<App>> apps;
  std::unordered_set<std::shared_ptr<Connection>> connections;
  // post_soon's outbox: per target shard, what this shard's current turn has for it.
  std::vector<std::vector<std::function<void()>>> outbox;
  bool outbox_armed = false;
};

struct SwitchSummary {
  uint64_t dpid = 0;
  unsigned shard = 0;
  std::string peer;
  size_t ports = 0;
  // The role the switch last confirmed for this instance (ROLE_REPLY): kEqual without an
  // arbiter, and with one until the first reply; `generation` is the one it carried.
  Role role = Role::kEqual;
  uint64_t generation = 0;
  bool up = false;  // the apps see it (handshake done and, with an arbiter, set up as master)
};

class Controller final : public Runtime, public RoleSink {
 public:
  Controller(core::ShardPool& pool, SouthboundConfig cfg, core::Metrics& metrics,
             std::vector<AppFactory> apps);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Cluster mode (roles.hpp): call before listen(); attaches the arbiter to this controller.
  // Switches then wait in standby after their handshake until the arbiter names this instance
  // MASTER. The arbiter must stop calling set_role before the Controller is destroyed.
  void set_role_arbiter(std::shared_ptr<RoleArbiter> arbiter);
  const std::shared_ptr<RoleArbiter>& role_arbiter() const { return arbiter_; }
  // RoleSink: posts the decision to the shard of the connection of `dpid` (any state from the
  // features reply on; a connection that has not reached standby yet ignores it).
  void set_role(uint64_t dpid, Role role, uint64_t generation, bool fresh) override;

  // Binds and starts accepting (port 0 picks a free port). Returns the bound endpoint.
  Expected<asio::ip::tcp::endpoint, std::string> listen();
  // Stops accepting and closes every connection; blocks until each shard has done so.
  void stop();

  const SouthboundConfig& config() const { return cfg_; }
  // Set by listen() when [southbound] tls = true; connections hold a reference.
  const std::shared_ptr<TlsContext>& tls_context() const { return tls_; }
  Counters& counters() { return *counters_; }
  // Connections keep the counters alive: pending handlers (and so connections) can outlive
  // the controller until the shards' io_contexts are destroyed. The Metrics registry must
  // outlive the ShardPool.
  std::shared_ptr<Counters> counters_ptr() { return counters_; }
  core::Metrics& metrics() { return metrics_; }
  std::vector<SwitchSummary> switches() const;
  size_t switch_count() const;
  // Whether `dpid` has a connection here now (any role, any state past the features reply).
  bool connected(uint64_t dpid) const;

  // Runtime (what apps use to reach other shards and switches).
  unsigned shard_count() const override { return static_cast<unsigned>(shards_.size()); }
  unsigned current_shard() const override;
  void post(unsigned shard, std::function<void()> fn) override;
  void post_soon(unsigned shard, std::function<void()> fn) override;
  bool with_switch(uint64_t dpid, std::function<void(SwitchContext&)> fn) override;
  bool with_switch_soon(uint64_t dpid, std::function<void(SwitchContext&)> fn) override;
  bool send_batch_to(uint64_t dpid, std::vector<ofp::Body> batch, Lane lane, BatchCallback done,
                     std::function<void()> queued = {}) override;
  // Without an arbiter always true (as the default); with one, whether `dpid` is up here, i.e.
  // this instance is its confirmed master and set it up.
  bool is_up(uint64_t dpid) const override;
  void call_after(unsigned shard, Clock::duration delay, std::function<void()> fn) override;

  // Registry, called from shards. register_dpid closes an older connection of that dpid.
  void register_dpid(uint64_t dpid, const std::shared_ptr<Connection>& conn, unsigned shard, std::string peer, size_t ports);
  // True when `conn` still held the entry (false: a newer connection had replaced it).
  bool unregister_dpid(uint64_t dpid, const Connection* conn);
  // Role and up/down of the entry of `conn` (no-op if a newer connection holds the dpid).
  void update_summary(uint64_t dpid, const Connection* conn, Role role, uint64_t generation, bool up);

 private:
  void accept_next();
  void flush_outbox(unsigned self);
  bool locate_up(uint64_t dpid, std::weak_ptr<Connection>& weak, unsigned& shard) const;
  bool with_switch_via(uint64_t dpid, std::function<void(SwitchContext&)> fn, bool soon);

  core::ShardPool& pool_;
  SouthboundConfig cfg_;
  core::Metrics& metrics_;
  std::shared_ptr<Counters> counters_;
  std::vector<std::unique_ptr<ShardState>> shards_;
  std::optional<asio::ip::tcp::acceptor> acceptor_;
  std::shared_ptr<TlsContext> tls_;
  std::shared_ptr<RoleArbiter> arbiter_;  // null: no cluster, every switch is EQUAL and up
  std::atomic<bool> stopping_{false};

  struct Entry {
    std::weak_ptr<Connection> conn;
    const Connection* raw = nullptr;
    SwitchSummary summary;
  };
  mutable std::mutex reg_mu_;
  std::map<uint64_t, Entry> registry_;
};

}  // namespace sdn::southbound
