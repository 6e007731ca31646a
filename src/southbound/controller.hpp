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

namespace sdn::southbound {

class Connection;
class TlsContext;

// Per-shard state: touched only on that shard's thread.
struct ShardState {
  core::Shard* shard = nullptr;
  std::vector<std::unique_ptr<App>> apps;
  std::unordered_set<std::shared_ptr<Connection>> connections;
};

struct SwitchSummary {
  uint64_t dpid = 0;
  unsigned shard = 0;
  std::string peer;
  size_t ports = 0;
};

class Controller final : public Runtime {
 public:
  Controller(core::ShardPool& pool, SouthboundConfig cfg, core::Metrics& metrics,
             std::vector<AppFactory> apps);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

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

  // Runtime (what apps use to reach other shards and switches).
  unsigned shard_count() const override { return static_cast<unsigned>(shards_.size()); }
  unsigned current_shard() const override;
  void post(unsigned shard, std::function<void()> fn) override;
  bool with_switch(uint64_t dpid, std::function<void(SwitchContext&)> fn) override;
  void call_after(unsigned shard, Clock::duration delay, std::function<void()> fn) override;

  // Registry, called from shards. register_dpid closes an older connection of that dpid.
  void register_dpid(uint64_t dpid, const std::shared_ptr<Connection>& conn, unsigned shard, std::string peer, size_t ports);
  void unregister_dpid(uint64_t dpid, const Connection* conn);

 private:
  void accept_next();

  core::ShardPool& pool_;
  SouthboundConfig cfg_;
  core::Metrics& metrics_;
  std::shared_ptr<Counters> counters_;
  std::vector<std::unique_ptr<ShardState>> shards_;
  std::optional<asio::ip::tcp::acceptor> acceptor_;
  std::shared_ptr<TlsContext> tls_;
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
