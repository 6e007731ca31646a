// The topology app: LLDP link discovery, link loss (PORT_STATUS and LLDP timeout), host tracking,
// published on Data Updates under network/topology/... (and so archived). One TopologyCore per
// process lives on the home shard (0); the per-shard app instances parse what their switches send
// and post the events there (Seastar style: the state has one owner, reached by messages).
#pragma once

#include <map>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include <absl/container/flat_hash_map.h>
#include <nlohmann/json.hpp>

#include "apps/topology/topology_core.hpp"
#include "data/due.hpp"
#include "southbound/app.hpp"

namespace sdn::core {
class Config;
}

namespace sdn::apps::topology {

inline constexpr unsigned kHomeShard = 0;

// [topology]: lldp_interval_ms (100..60000), link_timeout_ms (> lldp_interval_ms),
// port_settle_ms (0..60000), edge_probe_rounds (0..1000, 0: never), max_hosts (1..10,000,000).
TopologyConfig read_topology_config(core::Config& cfg, std::string_view section = "topology");

// What the instances share: the core (touched only on the home shard) and a figures snapshot
// (read from any thread for the stats file).
class TopologyService {
 public:
  // `due` (producer of network/topology/**) may be null: nothing is published then.
  TopologyService(TopologyConfig cfg, std::shared_ptr<data::Due> due);

  // ---- home shard only ----
  TopologyCore& core() { return core_; }
  // Publishes the core's changes and sends its probes; the figures snapshot is refreshed when
  // something changed or `refresh_figures` (the periodic tick) asks for it.
  void flush(southbound::Runtime& rt, bool refresh_figures = false);

  // ---- any thread ----
  Figures figures() const;
  nlohmann::json stats_json() const;
  // In a cluster: the port roles each switch's master last published (any instance's records,
  // followed on Data Updates), for a takeover (TopologyCore::switch_up). Empty when unknown.
  std::vector<std::pair<uint32_t, PortRole>> published_roles(uint64_t dpid) const;
  uint64_t publish_errors() const { return publish_errors_.load(std::memory_order_relaxed); }

 private:
  void publish(std::string_view key, nlohmann::json value);

  TopologyCore core_;
  std::shared_ptr<data::Due> due_;
  mutable std::mutex roles_mu_;
  std::map<uint64_t, std::vector<std::pair<uint32_t, PortRole>>> published_roles_;  // guarded by roles_mu_
  data::Due::Subscription roles_sub_;
  Clock::time_point last_republish_{};  // home shard only
  mutable std::mutex fig_mu_;
  Figures fig_;
  std::atomic<uint64_t> publish_errors_{0};
};

class Topology final : public southbound::App {
 public:
  using Clock = southbound::Clock;
  Topology(std::shared_ptr<TopologyService> svc, unsigned shard);

  std::string_view name() const override { return "topology"; }
  void on_start(southbound::Runtime& rt, unsigned shard) override;
  void on_stop() override { stopped_ = true; }
  void on_switch_up(southbound::SwitchContext& sw) override;
  void on_switch_down(uint64_t dpid) override;
  southbound::Disposition on_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now) override {
    handle_packet_in(sw, pin, now);
    return southbound::Disposition::kContinue;
  }
  void handle_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now);
  void on_port_status(southbound::SwitchContext& sw, const ofp::PortStatus& ps) override;

  uint64_t parse_errors() const { return parse_errors_.load(std::memory_order_relaxed); }

 private:
  // Runs `fn(core)` on the home shard, then publishes what it changed.
  template <class F>
  void to_home(F&& fn);
  void tick();

  std::shared_ptr<TopologyService> svc_;
  unsigned shard_;
  southbound::Runtime* rt_ = nullptr;
  bool stopped_ = false;
  // Host sightings already reported from this shard: (where, ip, when), so a busy host does
  // not post an event per packet; re-reported after a second in case the core ignored it.
  struct Reported {
    PortRef at;
    uint32_t ipv4 = 0;
    Clock::time_point when{};
  };
  absl::flat_hash_map<uint64_t, Reported> reported_;
  std::atomic<uint64_t> parse_errors_{0};
};

}  // namespace sdn::apps::topology
