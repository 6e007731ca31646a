// The topology app's logic as a pure state machine (Faucet style: (event, now) -> changes):
// switches and their ports, links found by LLDP, hosts found by the first ARP/IPv4 frame on an
// edge port. No I/O and no threads; the app (topology.hpp) feeds it on one shard and turns its
// changes into Data Updates and its probes into PacketOuts. Tests drive it with a manual clock.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "apps/topology/paths.hpp"
#include "apps/topology/wire.hpp"
#include "ofp/types.hpp"

namespace sdn::apps::topology {

using Clock = std::chrono::steady_clock;

// A duration in milliseconds, for logs and records.
inline double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct TopologyConfig {
  std::chrono::milliseconds lldp_interval{1000};  // probe every up port this often
  std::chrono::milliseconds link_timeout{3500};   // a link not confirmed for this long is lost
  // A port that comes up is kPending for this long (no flooding, no host learning on it) unless
  // an LLDP probe shows it is a link: what keeps a not-yet-discovered loop from storming.
  std::chrono::milliseconds port_settle{2000};
  uint32_t edge_probe_rounds = 0;                 // settled edge ports: never (0), or every Nth round
  std::chrono::milliseconds tick{100};            // how often the app calls tick()
  size_t max_hosts = 100000;                      // beyond: not tracked, counted
  // In a cluster (docs/cluster.md) this instance masters only some switches, and a probe sent by
  // another instance's switch arrives here naming a switch we do not master. When set, such a
  // probe is a link to a remote switch if this returns true for its dpid (the switch is
  // connected to this instance too, as a slave): our end becomes a link port and the link is
  // published; the remote end's port is its own master's business. Unset: foreign, as before.
  std::function<bool(uint64_t dpid)> remote_switch;
  // In a cluster, the whole state this instance publishes (its switches, links and hosts, all
  // "up") goes out again this often: Data Updates is pub/sub, and a peer whose subscriber was
  // away (a Redis failover) missed what changed meanwhile. Consumers take an "up" record they
  // already hold as no change. 0 = never. Only used with remote_switch.
  std::chrono::milliseconds republish{2000};
};

struct HostEntry {
  uint64_t mac = 0;
  uint32_t ipv4 = 0;
  PortRef at;
  Clock::time_point first_seen{};
  Clock::time_point last_seen{};
};

// What one or more events changed, to publish (in order).
struct Changes {
  std::vector<uint64_t> switches;   // dpids whose state or port roles changed (republish whole)
  std::vector<LinkRecord> links;
  std::vector<HostRecord> hosts;
  bool empty() const { return switches.empty() && links.empty() && hosts.empty(); }
};

struct Figures {
  uint64_t switches = 0, links = 0, hosts = 0, pending_ports = 0, edge_ports = 0, link_ports = 0;
  uint64_t lldp_sent = 0;          // probes handed out by take_probes()
  uint64_t lldp_received = 0;      // probes from one of our switches
  uint64_t lldp_foreign = 0;       // probes naming a switch or port we do not know
  uint64_t lldp_remote = 0;        // probes from a switch another cluster instance masters
  uint64_t edges_taken_over = 0;   // edge ports settled at once from a previous master's record
  uint64_t links_taken_over = 0;   // link ports kept (provisionally) from a previous master's record
  uint64_t republished = 0;        // records sent again by the cluster's periodic republish
  uint64_t switches_handed_over = 0;  // switches forgotten quietly when another instance took them
  uint64_t links_added = 0, links_removed = 0, link_timeouts = 0;
  // Ticks that came late (the controller's loop was busy, e.g. a run-to-completion rotation),
  // and the longest such gap: the liveness clocks were paused for it.
  uint64_t late_ticks = 0;
  double late_tick_max_ms = 0;
  uint64_t hosts_added = 0, host_moves = 0, hosts_removed = 0;
  uint64_t hosts_ignored = 0;      // sightings on a pending or link port
  uint64_t host_cap_exceeded = 0;
  // Claims refused (docs/threat-model.md): a MAC seen on another edge port while its own port is
  // still an edge; an address another present host holds; another source address from a host
  // that already has one.
  uint64_t host_claims_refused = 0, ip_claims_refused = 0, ip_changes_refused = 0;
  uint64_t version = 0;            // bumps on every change
  // RFC 8456 network topology discovery time: first switch up -> last link discovered.
  std::optional<Clock::duration> discovery;
};

class TopologyCore {
 public:
  explicit TopologyCore(TopologyConfig cfg = {});

  // `settled`: in a cluster, the port roles the switch's previous master last published (a
  // takeover): ports it had settled as edges are edges at once (no port_settle wait, so hosts on
  // a taken-over switch are served right away); its link ports are links at once, provisionally,
  // until a probe confirms them (or, after link_timeout without one, pending again); every other
  // port starts pending as usual. Probes go out at once either way.
  void switch_up(uint64_t dpid, const std::vector<ofp::Port>& ports, Clock::time_point now,
                 const std::vector<std::pair<uint32_t, PortRole>>* settled = nullptr);
  void switch_down(uint64_t dpid, Clock::time_point now);
  // In a cluster, the switch is still up but another instance masters it now (this one was
  // demoted): its state here goes without a record, since the switch, its links and its hosts
  // did not go anywhere; its new master publishes what it sees.
  void forget_switch(uint64_t dpid);
  // A PORT_STATUS: `deleted` for OFPPR_DELETE.
  void port_status(uint64_t dpid, const ofp::Port& desc, bool deleted, Clock::time_point now);
  // An LLDP probe sent from `from` arrived at `at`.
  void lldp_received(PortRef from, PortRef at, Clock::time_point now);
  // A unicast station address (with its IPv4 address, 0 if none) sent a frame into `at`.
  void host_seen(uint64_t mac, uint32_t ipv4, PortRef at, Clock::time_point now);
  // Periodic work: schedules probes, expires links, settles pending ports.
  void tick(Clock::time_point now);

  // What changed since the last call, and the ports to send an LLDP probe out of now.
  Changes take_changes();
  // Everything as "up" records (switches, links, hosts): the cluster's periodic republish.
  Changes full_state();
  std::vector<PortRef> take_probes();

  // ---- views ----
  std::optional<PortRole> role(PortRef p) const;
  std::optional<uint64_t> port_hw_addr(PortRef p) const;
  std::vector<Link> links() const;
  std::optional<HostEntry> host(uint64_t mac) const;
  std::vector<HostEntry> hosts() const;
  SwitchRecord switch_record(uint64_t dpid) const;   // state "down" when unknown
  bool has_switch(uint64_t dpid) const { return switches_.contains(dpid); }
  std::vector<uint64_t> switch_ids() const;
  Figures figures() const;
  const TopologyConfig& config() const { return cfg_; }

 private:
  struct PortState {
    PortRole role = PortRole::kPending;
    Clock::time_point since{};     // when it became pending
    uint64_t hw_addr = 0;
  };
  struct SwitchState {
    std::map<uint32_t, PortState> ports;
    Clock::time_point next_probe{};
    uint32_t rounds = 0;
  };
  struct LinkState {
    Clock::time_point last_seen{};
  };

  static bool port_is_up(const ofp::Port& p);
  void set_role(PortRef p, PortState& ps, PortRole role, Clock::time_point now);
  void remove_link(const Link& l, std::string reason, Clock::time_point now);
  void remove_links_on(PortRef p, const std::string& reason, Clock::time_point now);
  void remove_hosts_where(PortRef p, bool whole_switch, const std::string& reason);
  void changed_switch(uint64_t dpid);
  void queue_probes(uint64_t dpid, SwitchState& s, bool all);
  const PortState* port(PortRef p) const;
  PortState* port(PortRef p);

  TopologyConfig cfg_;
  std::map<uint64_t, SwitchState> switches_;
  std::map<Link, LinkState> links_;
  // Ports of a taken-over switch its previous master had as links: links at once (traffic on
  // them is forwarded), until a probe confirms them or link_timeout passes (back to pending).
  std::map<PortRef, Clock::time_point> provisional_;
  absl::flat_hash_map<uint64_t, HostEntry> hosts_;
  absl::flat_hash_map<uint32_t, uint64_t> by_ip_;  // a present host's address -> its MAC
  void erase_host(uint64_t mac);
  // Ports of known switches by role, kept as roles change (figures() reads them).
  std::array<size_t, 4> ports_by_role_{};
  size_t& ports_in(PortRole r) { return ports_by_role_[static_cast<size_t>(r)]; }
  size_t ports_in(PortRole r) const { return ports_by_role_[static_cast<size_t>(r)]; }
  Changes changes_;
  std::vector<PortRef> probes_;
  Figures fig_;
  std::optional<Clock::time_point> first_up_;
  std::optional<Clock::time_point> last_link_added_;
  Clock::time_point last_tick_{};
};

}  // namespace sdn::apps::topology
