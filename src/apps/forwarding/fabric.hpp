// Reactive forwarding across a multi-switch fabric (RFC 8456 reactive path provisioning): on the
// first packet of a flow the whole path is installed, one exact-match flow per switch, and the
// packet itself is delivered at the last hop. Broadcast and unknown destinations are flooded over
// the topology's spanning tree, so fabrics with loops (dual-homed edges) never storm.
//
// Topology comes from the topology app through Data Updates (network/topology/**), never by a
// direct call: each shard's instance keeps its own TopologyView, fed on its own thread. Flows on
// switches owned by other shards are sent there through southbound::Runtime::with_switch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "apps/forwarding/forwarding.hpp"
#include "apps/topology/view.hpp"
#include "core/metrics.hpp"
#include "data/due.hpp"
#include "southbound/app.hpp"

namespace sdn::apps {

struct FabricCounters {
  uint64_t packet_ins = 0;
  uint64_t floods = 0;            // broadcast/multicast over the spanning tree, unknown unicast to every edge port
  uint64_t proxy_arps = 0;        // ARP requests for known hosts answered by the controller
  uint64_t flood_dead_ends = 0;   // flood copies that arrived off the tree and were dropped
  uint64_t paths_installed = 0;   // paths whose every switch confirmed its flow (barrier)
  uint64_t paths_failed = 0;      // a switch refused the flow or went away
  uint64_t flows_installed = 0;   // flow entries sent (one per hop)
  uint64_t drops = 0;             // destination behind the in_port, bad source, unknown with flooding off
  uint64_t no_path = 0;           // destination known but unreachable
  uint64_t not_ready = 0;         // PacketIn on a port topology has not settled (pending/unknown)
  uint64_t parse_errors = 0;
  uint64_t ignored = 0;           // LLDP and 802.1D link-local frames (topology's)
  uint64_t reroutes = 0;          // flow deletes sent because a link went down or a host moved
  uint64_t cluster_handoffs = 0;  // paths cut at a switch another cluster instance masters
  uint64_t flows_removed = 0;
  uint64_t topology_records = 0;  // topology records applied to this instance's view
  uint64_t topology_errors = 0;   // records that did not decode
};

class FabricForwarding final : public southbound::App {
 public:
  using Clock = southbound::Clock;

  // `due` (a consumer of network/topology/**) is shared by the instances of every shard;
  // `metrics` gets the histogram "forwarding.path_setup" (PacketIn read -> every hop's barrier
  // confirmed) when not null.
  FabricForwarding(ForwardingConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics);

  std::string_view name() const override { return "forwarding"; }
  void on_start(southbound::Runtime& rt, unsigned shard) override;
  void on_stop() override;
  void on_switch_up(southbound::SwitchContext& sw) override;
  void on_switch_down(uint64_t dpid) override;
  southbound::Disposition on_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now) override {
    handle_packet_in(sw, pin, now);
    return southbound::Disposition::kContinue;
  }
  void handle_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now);
  void on_flow_removed(southbound::SwitchContext& sw, const ofp::FlowRemoved& fr) override;

  FabricCounters counters() const;
  const topology::TopologyView& view() const { return view_; }
  // Paths this instance installed and has not seen expire or deleted.
  size_t live_paths() const { return paths_.size(); }
  const ForwardingConfig& config() const { return cfg_; }
  // Feeds the view directly (what the subscription does); for tests.
  void apply_topology(std::string_view key, const nlohmann::json& value);

 private:
  using Stat = ShardStat;
  // Completion of one path across shards (callbacks run on each hop's shard).
  struct PathJob {
    std::atomic<size_t> remaining{0};
    std::atomic<bool> failed{false};
    Clock::time_point started{};
  };

  void flood(southbound::SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port);
  void flood_to_edges(southbound::SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port);
  // Answers an ARP request on an edge port when the target is a known host; false otherwise.
  bool proxy_arp(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, uint32_t in_port);
  void provision(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p,
                 const std::vector<topology::Hop>& hops, Clock::time_point now);
  void hop_done(const std::shared_ptr<PathJob>& job, bool ok);
  void react(const topology::TopologyRecord& rec);
  // Deletes every flow of a path (by its cookie, on each hop) and forgets it.
  void remove_path(uint64_t cookie);
  uint64_t path_cookie(uint64_t id) const;

  // A path this instance installed: its own cookie on every hop, so it can be deleted
  // exactly (a link on it went down, an end host moved) and forgotten when its first hop's
  // flow expires. Keyed again by the first hop's flow, so a path asked for twice is one path.
  struct FlowKey {
    uint64_t dpid, eth_src, eth_dst;
    uint32_t in_port, ipv4_src, ipv4_dst;
    uint16_t eth_type, vid;
    bool operator==(const FlowKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const FlowKey& k) {
      return H::combine(std::move(h), k.dpid, k.eth_src, k.eth_dst, k.in_port, k.ipv4_src, k.ipv4_dst, k.eth_type, k.vid);
    }
  };
  struct InstalledPath {
    FlowKey key;
    std::vector<topology::Hop> hops;
  };
  // Drops a path from both indexes (its flows are already gone or expiring).
  void forget_path(absl::flat_hash_map<uint64_t, InstalledPath>::iterator it);

  ForwardingConfig cfg_;
  std::shared_ptr<data::Due> due_;
  core::Histogram* path_setup_ = nullptr;
  southbound::Runtime* rt_ = nullptr;
  unsigned shard_ = 0;
  topology::TopologyView view_;
  absl::flat_hash_map<uint64_t, InstalledPath> paths_;   // by cookie
  absl::flat_hash_map<FlowKey, uint64_t> by_flow_;       // first hop's flow -> cookie
  uint64_t next_path_ = 0;
  data::Due::Subscription sub_;
  Stat packet_ins_, floods_, proxy_arps_, flood_dead_ends_, flows_installed_, drops_, no_path_, not_ready_, parse_errors_, ignored_, reroutes_, flows_removed_, topology_records_, topology_errors_, cluster_handoffs_;
  // Counters bumped from other shards' threads (batch confirmations).
  std::atomic<uint64_t> paths_ok_shared_{0}, paths_failed_shared_{0};
};

}  // namespace sdn::apps
