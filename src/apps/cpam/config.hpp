// CPAM configuration: Table 1 of the runtime-benchmark paper (seeds/000, section 4.1) as
// defaults, every value settable in [cpam]; plus which hosts are protected, the VIP range, the
// name zone and the in-band DNS responder's address.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace sdn::apps::cpam {

// A protected host: its stable real address and the name peers resolve (without the zone).
struct ProtectedHost {
  std::string name;
  uint32_t ip = 0;
};

// sharded: reactive work on every shard, the rotation in small steps off the hot path and its
// FlowMods on the low lane. cooperative: one thread, the rotation loop runs to completion
// (the paper's Ryu port), optionally yielding between batches (its hub.sleep(0) diagnostic).
enum class RuntimeMode : uint8_t { kSharded, kCooperative };

// IPv6 at the edge (docs/threat-model.md): block (default) drops every IPv6 frame at the
// switches, NDP, MLD and router solicitations included; allow leaves IPv6 alone, which lets
// every host be reached on its fixed link-local address (a logged, explicit choice).
enum class Ipv6Policy : uint8_t { kBlock, kAllow };

struct CpamConfig {
  std::chrono::milliseconds rotation_interval{60'000};
  uint32_t pool_size = 6000;
  // Rotation pacing: a batch of batch_hosts hosts' VIP rules every batch_delay. batch_hosts 0
  // (the default) derives it from the host count and T: the batches fit rotation_share of T,
  // never fewer than Table 1's 20 hosts a batch. No switch gets more than switch_flowmod_budget
  // of a rotation's FlowMods a second (0: no limit); the rest wait for the next batch.
  uint32_t batch_hosts = 0;
  std::chrono::milliseconds batch_delay{150};
  double rotation_share = 0.25;
  // Derived batches hold at most this many hosts (0: no cap); more batches then come closer
  // together (down to 2 ms apart), so no batch makes a long turn of shard 0's loop.
  uint32_t rotation_batch_max = 500;
  uint32_t switch_flowmod_budget = 2000;
  // Locate probes (an ARP request for a host nobody has seen, out of every edge port): per host
  // after 0.5 s, 1 s, 2 s, ... up to probe_backoff_max; at most probe_budget PacketOuts a
  // second for the whole controller, each shard its share (a probe costs one PacketOut per
  // switch with edge ports).
  uint32_t probe_budget = 5000;
  std::chrono::milliseconds probe_backoff_max{30'000};
  // network/cpam/mapping/<name> records are published only up to this many hosts.
  size_t mapping_per_host_max = 1000;
  std::chrono::seconds tcp_idle{15};
  std::chrono::seconds udp_active{30};
  std::chrono::milliseconds reclaim_threshold{5000};
  // A VIP that went to Grace still binds new sessions this long (a client that resolved it
  // just before the rotation); afterwards only sessions pinned to it use it.
  std::chrono::milliseconds grace_accept{5000};
  std::chrono::milliseconds quarantine{30'000};
  // A binding whose flows all expired is kept this long, so a UDP stream whose flows hit the
  // active timeout (or a TCP session idle past the idle timeout) gets its pin back.
  std::chrono::milliseconds session_linger{15'000};
  uint16_t vip_priority = 100;      // the standing last-hop VIP rules
  uint16_t session_priority = 101;  // session rules: above the VIP rules they overlap with
  uint16_t table_miss_priority = 0; // the runtime's table-miss (southbound installs it)
  uint8_t table_id = 0;
  uint32_t vip_base = 0x0a008000;   // 10.0.128.0
  uint8_t vip_prefix_len = 18;
  std::string zone = "cpam.lan";
  uint32_t dns_ip = 0x0a00fffd;     // 10.0.255.253
  std::vector<ProtectedHost> hosts;
  RuntimeMode mode = RuntimeMode::kSharded;
  bool yield_between_batches = false;  // cooperative mode only
  std::string rppt_samples;            // CSV of every RPPT sample, when set
  std::chrono::milliseconds stats_interval{1000};
  std::chrono::milliseconds preinstall_timeout{2000};  // publish anyway when barriers lag
  // Real addresses unreachable (guard.hpp): traffic and ARP addressed to a protected host's real
  // address are dropped whatever the source, by proactive rules on every switch at
  // real_block_priority (above the table-miss and the runtime's ARP/LLDP flows, below every
  // app's flows), except from the addresses of real_allowed_from (infrastructure), whose
  // packets go to the controller one priority above and are forwarded as usual.
  bool block_real = true;
  std::vector<uint32_t> real_allowed_from;
  uint16_t real_block_priority = 5;
  // Every switch gets the real-address blocks while they take at most this many rules a switch;
  // past it, each protected address's drops go to the switch it is located at (guard.hpp).
  size_t real_block_max_rules = 1024;
  Ipv6Policy ipv6 = Ipv6Policy::kBlock;
  // Source guard: a frame entering an edge port must carry the MAC and IPv4 source bound there
  // (a protected host's, once located; no other host's address or MAC); an offending source is
  // dropped and an exact drop rule at guard_priority keeps its repeats on the switch for
  // spoof_drop. The IPv6 and VIP-source drops sit at guard_priority too.
  bool source_guard = true;
  uint16_t guard_priority = 1000;
  std::chrono::seconds spoof_drop{5};
  size_t max_sessions_per_shard = 1'000'000;
  // Fault recovery (docs/faults-cpam.md): VIP states and session bindings are archived as they
  // change and reloaded at start; a switch that (re)connects keeps its CPAM flows and is
  // resynchronised from its flow stats. A live binding is re-archived every lease/2, and a
  // reload reads the last lease of records; for recovery_hold after a reload no Grace VIP is
  // quarantined and no reloaded binding expires (switches reconnect and confirm their flows).
  bool recovery = true;
  // The write-ahead commit of a rotation's reservation waits off the engine's loop (Committer);
  // false waits on the loop, as before issue [runtime] (an ablation; unit tests on the manual
  // clock of the fake fabric).
  bool commit_off_loop = true;
  std::chrono::milliseconds session_lease{60'000};
  std::chrono::milliseconds recovery_hold{10'000};
  // Cluster mode only (a CpamService given a cluster; README "Cluster"): how often shard 0 looks
  // for leadership changes and a new shared VIP state; the TTL of this instance's session and
  // pin records in Redis (renewed every second); how long the leader still counts the pins of
  // an instance whose record vanished (its switches' new masters adopt those sessions); and the
  // extra time a Grace VIP stays past its accept window before the leader may reclaim it (a
  // session bound at the window's last moment reaches the leader's view of pins within it).
  std::chrono::milliseconds cluster_poll{100};
  std::chrono::milliseconds cluster_record_ttl{5000};
  std::chrono::milliseconds cluster_pin_hold{10'000};
  std::chrono::milliseconds cluster_pin_lag{3000};

  uint32_t vip_ip(uint32_t index) const { return vip_base + 1 + index; }  // skips the network address
};

// Rotation pacing (rotation.cpp). Hosts per batch and the gap between batches: rotation_batch
// and batch_delay when rotation_batch is set; else sized from the host count so the batches,
// batch_delay apart, fit rotation_share of T, never fewer than Table 1's 20 hosts and never more
// than rotation_batch_max, the gap shrinking to fit (500 hosts at T = 60 s: 20 every 150 ms;
// 100,000 hosts at T = 10 s: 200 batches of 500, 12 ms apart).
struct RotationPacing {
  size_t hosts = 0;
  std::chrono::milliseconds delay{0};
};
RotationPacing rotation_pacing(const CpamConfig& c, size_t hosts);
size_t rotation_batch_size(const CpamConfig& c, size_t hosts);
// A rotation's FlowMods one switch may get per batch: its switch_flowmod_budget per second over
// one gap between batches (batch_delay unless given), at least 1 (so a rotation always ends);
// SIZE_MAX when the budget is 0.
size_t switch_batch_cap(const CpamConfig& c, std::chrono::milliseconds delay);
size_t switch_batch_cap(const CpamConfig& c);

// Reads [cpam]; bad values are reported through cfg.add_problem naming the key.
CpamConfig read_cpam_config(core::Config& cfg, std::string_view section = "cpam");

}  // namespace sdn::apps::cpam
