// CPAM, continuity-preserving address mutation (seeds/000, Algorithm 1): every protected host
// is reachable only under a rotating virtual IP. Packets cross the fabric addressed by VIPs and
// are translated at the destination's access switch; a bidirectional session binding pins the
// (client VIP, server VIP) pair at setup so established sessions survive rotations; retired VIPs
// are reclaimed only when nothing references them. The flow layout is in README.md.
//
// One Cpam instance per shard does the reactive work for the switches of its shard, with its own
// session table and topology replica. The CpamService they share holds the VIP table (atomic
// words), the rotation engine (run by shard 0's instance in small timed steps, or to completion
// in the cooperative mode) and the published snapshot, which each shard receives by message.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <nlohmann/json.hpp>

#include "apps/cpam/cluster_state.hpp"
#include "apps/cpam/committer.hpp"
#include "apps/cpam/config.hpp"
#include "apps/cpam/guard.hpp"
#include "apps/cpam/recovery.hpp"
#include "apps/cpam/vips.hpp"
#include "apps/topology/view.hpp"
#include "core/metrics.hpp"
#include "data/due.hpp"
#include "pkt/parse.hpp"
#include "southbound/app.hpp"

namespace sdn::apps::cpam {

// Cookies: top byte 0x02 (the CPAM range), then a 4-bit kind; session kinds carry the owner
// shard (8 bits) and the session id (44 bits), the VIP rule kind the VIP index.
inline constexpr uint64_t kCookie = 0x0200'0000'0000'0000ULL;
inline constexpr uint64_t kCookieMask = 0xff00'0000'0000'0000ULL;
enum class CookieKind : uint8_t {
  kVipRule = 1,     // standing last-hop rule of one VIP
  kFirstFwd = 2,    // session, client's access switch (source pinning), sends FLOW_REMOVED
  kFirstRev = 3,    // session, server's access switch (reply direction), sends FLOW_REMOVED
  kTransit = 4,     // session, intermediate switches
  kRepair = 5,      // path re-installed from a transit switch that missed
};
uint64_t make_cookie(CookieKind k, unsigned shard, uint64_t id);
inline CookieKind cookie_kind(uint64_t c) { return static_cast<CookieKind>((c >> 52) & 0xf); }
inline unsigned cookie_shard(uint64_t c) { return static_cast<unsigned>((c >> 44) & 0xff); }
inline uint64_t cookie_id(uint64_t c) { return c & ((uint64_t{1} << 44) - 1); }
// The MAC every VIP (and the DNS responder) answers ARP with: locally administered, 02:00:<ip>.
inline uint64_t virtual_mac(uint32_t ip) { return 0x0200'0000'0000ULL | ip; }

class Cpam;

struct CpamCounters {
  uint64_t packet_ins = 0, sessions_bound = 0, sessions_reused = 0, sessions_expired = 0, setups = 0;
  uint64_t setup_failed = 0, repairs = 0, arp_answered = 0, arp_refused = 0, dns_answered = 0, dns_nxdomain = 0;
  uint64_t dns_refused = 0, dns_errors = 0, stale_vip = 0, unprotected_src = 0;
  uint64_t real_blocked = 0, spoofed = 0, unlocated = 0, no_path = 0, not_ready = 0, parse_errors = 0;
  uint64_t sessions_full = 0, flows_removed = 0, live_sessions = 0, delivered_only = 0, reroutes = 0;
  // Locate probes sent and held back by the budget; rotation rules held back by a switch's budget.
  uint64_t probes = 0, probes_deferred = 0, rotation_deferred = 0;
  // Switch resync on (re)connect (flows), and bindings adopted from flows no binding knew.
  uint64_t resyncs = 0, resync_kept = 0, resync_added = 0, resync_deleted = 0, resync_adopted = 0, resync_errors = 0;
  // Cluster: sessions across instances (README "Cluster", hand-off). Bindings written for the
  // peer, taken from a peer, asked for in vain (or found stale), requests or records that
  // failed, packets parked past the caps, triggering packets sent on towards a peer's switch.
  uint64_t handoffs_out = 0, handoffs_in = 0, handoff_misses = 0, handoff_errors = 0, handoff_dropped = 0;
  uint64_t onward = 0;
  // Edge guard (guard.hpp): frames the source guard dropped, guard rules sent and refused, and
  // the switches' packet counts of the guard's rules by guard::Kind.
  uint64_t spoofed_src = 0, guard_rules = 0, guard_errors = 0;
  uint64_t switch_dropped[guard::kKinds] = {};
};

class CpamService {
 public:
  // `due` produces network/cpam/** and consumes network/topology/**; `metrics` gets the
  // histograms cpam.rppt, cpam.rppt_rotating, cpam.rppt_quiet and cpam.setup_confirmed.
  CpamService(CpamConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics);
  // Cluster mode (README "Cluster"): the rotation leader is elected through `cluster` and the
  // state that must outlive an instance lives in its Redis. The cluster must be started by its
  // owner (before or after); it must outlive nothing here (the service keeps a reference).
  // Defined in cluster_store.cpp, built with sdnator_cluster.
  CpamService(CpamConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics,
              std::shared_ptr<cluster::Cluster> cluster);
  // The same over any shared store (tests use a fake); a null store is the single-instance mode.
  CpamService(CpamConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics,
              std::shared_ptr<shared::Store> store);
  ~CpamService();

  bool clustered() const { return store_ != nullptr; }
  // Cluster mode: this instance leads the rotation (shard 0 acted on it), and the epoch it
  // serves (the leader's, or the newest one a follower applied).
  bool leading() const { return leading_.load(std::memory_order_acquire); }
  nlohmann::json cluster_json() const;

  const CpamConfig& config() const { return cfg_; }
  const HostDirectory& hosts() const { return dir_; }
  VipTable& vips() { return *table_; }
  bool in_pool(uint32_t ip) const { return ip - cfg_.vip_base - 1 < cfg_.pool_size && ip > cfg_.vip_base; }
  uint32_t vip_index(uint32_t ip) const { return ip - cfg_.vip_base - 1; }
  // A VIP that packets between VIPs (repair) and hand-offs may use: Primary or Grace; in a
  // cluster also Reserved, since another instance may have applied the epoch that makes it
  // Primary a poll before this one (a packet between VIPs only comes from a peer's switch).
  bool in_use(const VipTable::View& v) const {
    return v.state == VipState::kPrimary || v.state == VipState::kGrace ||
           (clustered() && v.state == VipState::kReserved);
  }
  bool rotating() const { return rotating_.load(std::memory_order_relaxed); }
  std::shared_ptr<const Snapshot> latest() const;
  CpamCounters counters() const;  // summed over the shards
  // The instance of a shard (null before its on_start or after it is gone).
  Cpam* instance(unsigned shard) const {
    return shard < instances_.size() ? instances_[shard].load(std::memory_order_acquire) : nullptr;
  }
  nlohmann::json stats_json() const;

  // What can change while running (the northbound API's PATCH /cpam/config): fields only the
  // rotation engine on shard 0 reads. Applied with set_tunables on shard 0; the next rotation is
  // re-armed an interval after the last one started.
  struct Tunables {
    std::chrono::milliseconds rotation_interval{0};
    uint32_t batch_hosts = 0;
    std::chrono::milliseconds batch_delay{0};
  };
  Tunables tunables() const;              // any thread
  void set_tunables(const Tunables& t);   // shard 0 only
  RotationRecord last_rotation() const;   // any thread

 private:
  friend class Cpam;
  void attach(unsigned shard, Cpam* inst);
  void detach(unsigned shard);
  void set_latest(std::shared_ptr<const Snapshot> s);
  void publish(std::string_view key, nlohmann::json value, unsigned flags);
  void write_samples(const std::vector<std::string>& lines);
  void record_rppt(Clock::time_point rx, const char* kind, bool rotating, Cpam* t);
  // Reloads the VIP states, epoch and live bindings from Data Archives (constructor; resync.cpp).
  // In cluster mode only the VIP state (a fallback for the first leader when Redis has none);
  // bindings come back from the switches' flows.
  void recover();
  // Cluster mode: asks for the leadership and starts the worker (shard 0's engine_start);
  // `on_state` runs on the worker's thread when it read a newer shared state.
  void start_cluster(std::function<void()> on_state);

  std::shared_ptr<shared::Store> store_;
  std::unique_ptr<shared::Link> link_;
  std::vector<guard::Prefix> real_blocks_;  // the protected real addresses as CIDR blocks
  bool real_per_host_ = false;               // past real_block_max_rules: drops at each host's switch
  // Set by the cluster's thread: the generation this instance leads with (0 = follower).
  std::shared_ptr<std::atomic<uint64_t>> leader_gen_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::atomic<bool> leading_{false};
  std::atomic<bool> state_ready_{false};  // a shared state was applied (or this instance leads)
  std::atomic<uint64_t> fenced_refused_{0}, leader_gains_{0}, leader_losses_{0}, states_applied_{0};
  std::atomic<uint64_t> shared_write_max_us_{0}, shared_seq_{0}, resync_deferred_{0};
  // Follower: from the leader's write of a new epoch to this instance applying it (unix ms,
  // one clock on one machine), the last and the largest.
  std::atomic<int64_t> epoch_lag_last_ms_{-1}, epoch_lag_max_ms_{-1};

  // What recover() found; the engine and the shards take their parts at on_start.
  struct Recovered {
    std::unique_ptr<VipLifecycle> life;  // null: nothing reloaded, start at epoch 1
    std::vector<std::vector<recovery::PersistedBinding>> sessions;  // by owner shard
    uint64_t epoch = 0;
    size_t bindings = 0, skipped = 0;
    bool reloaded = false;
  };
  Recovered recovered_;
  uint64_t boot_ = 0;  // this run's number (the archived one + 1); session ids carry its low 8 bits
  std::atomic<uint64_t> recover_errors_{0}, vips_sync_failed_{0}, resync_last_us_{0}, resync_max_us_{0};
  std::atomic<uint64_t> vips_sync_max_us_{0};  // the longest write-ahead commit of a reservation
  // Where each VIP's standing rule was last sent or found (0: none known), so a quarantine
  // deletes it there and at its host's access switch, not on every switch.
  std::unique_ptr<std::atomic<uint64_t>[]> rule_at_;
  void note_rule(uint32_t vip, uint64_t dpid) {
    if (vip < cfg_.pool_size) rule_at_[vip].store(dpid, std::memory_order_relaxed);
  }
  uint64_t rule_at(uint32_t vip) const {
    return vip < cfg_.pool_size ? rule_at_[vip].load(std::memory_order_relaxed) : 0;
  }

  CpamConfig cfg_;
  HostDirectory dir_;
  std::shared_ptr<VipTable> table_;
  std::shared_ptr<data::Due> due_;
  // Waits for the archive's commit of a rotation's reservation off the shard's loop (destroyed
  // before due_: it joins its thread first).
  std::unique_ptr<Committer> committer_;
  core::Histogram* rppt_ = nullptr;
  core::Histogram* rppt_rotating_ = nullptr;
  core::Histogram* rppt_quiet_ = nullptr;
  core::Histogram* setup_confirmed_ = nullptr;
  core::Histogram* rotation_ = nullptr;  // cpam.rotation: tick to publish
  core::Histogram local_rppt_, local_rppt_rotating_, local_rppt_quiet_, local_setup_, local_rotation_;  // when metrics is null
  std::atomic<bool> rotating_{false};
  mutable std::mutex mu_;  // latest_, samples_, tunables_, last_rotation_ (never taken on the hot path)
  std::array<std::atomic<Cpam*>, 256> instances_{};  // by shard (cookies carry 8 bits of it)
  std::shared_ptr<const Snapshot> latest_;
  std::FILE* samples_ = nullptr;
  std::atomic<uint64_t> publish_errors_{0};
  RotationRecord last_rotation_;
  Tunables tunables_;
};

class Cpam final : public southbound::App {
 public:
  using Clock = southbound::Clock;
  Cpam(std::shared_ptr<CpamService> svc, unsigned shard);
  ~Cpam() override;

  std::string_view name() const override { return "cpam"; }
  void on_start(southbound::Runtime& rt, unsigned shard) override;
  void on_stop() override;
  southbound::Disposition on_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin,
                                       Clock::time_point now) override;
  void on_flow_removed(southbound::SwitchContext& sw, const ofp::FlowRemoved& fr) override;
  void on_switch_down(uint64_t dpid) override;
  // Resync from flow stats (resync.cpp): CPAM's cookie range survives the runtime's clear.
  void on_switch_up(southbound::SwitchContext& sw) override;
  std::vector<southbound::CookieRange> kept_cookies() const override;

  // Feeds the topology replica directly (what the subscription does); for tests.
  void apply_topology(std::string_view key, const nlohmann::json& value);
  // Runs one rotation now (shard 0's instance; tests and the CLI-less demo use the timer).
  void rotate_now();
  // One reclaim pass now (shard 0's instance).
  void reclaim_now();
  // The binding sweep and sample flush, normally every second.
  void sweep_now();
  size_t session_count() const { return sessions_.size(); }
  // The bindings this shard owns, at most `limit` (on this shard's thread): id, proto, client,
  // server (names), pinned VIPs, ports, live bits, age.
  nlohmann::json sessions_json(size_t limit) const;
  const topology::TopologyView& view() const { return view_; }
  const Snapshot* snapshot() const { return snap_.get(); }

 private:
  friend class CpamService;
  // The flow as its first packet shows it at the sender's access switch: protocol, the sending
  // host, the VIP it addressed, the ports. A binding is filed under both directions' keys
  // (Algorithm 1's SBT[f] and SBT[f-bar]): the client's on the owner shard, the server's on the
  // shard of the server's access switch. Two connections that differ only in the VIP they named
  // (a port reused across epochs) are two keys.
  struct Key {
    uint8_t proto;
    uint32_t src_host, dst_vip;
    uint16_t sport, dport;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.proto, k.src_host, k.dst_vip, k.sport, k.dport);
    }
  };
  struct Binding {
    uint32_t client = kNone, server = kNone;  // host indices
    uint32_t vc = kNone, vs = kNone;          // pinned VIP indices
    uint16_t cport = 0, sport = 0;
    uint8_t proto = 0;
    uint64_t id = 0;
    unsigned owner = 0;       // shard holding the references (a replica elsewhere mirrors it)
    uint8_t live = 0;         // bit 0 client-side first-hop flow confirmed, bit 1 server-side
    Clock::time_point flowless_since{};
    Clock::time_point installed{};       // last (re)install of its flows
    Clock::time_point persisted{};       // last archived (renewed every session_lease / 2)
    Clock::time_point handed{};          // cluster: last hand-off record written (zero: none)
    uint64_t edge[2] = {0, 0};           // client's and server's access switch at install
    std::vector<topology::Hop> hops[2];  // client -> server and back, as last installed
  };
  struct Loc {
    topology::PortRef at;
    uint64_t mac = 0;
  };

  southbound::Disposition handle_ipv4(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p,
                                      topology::PortRole role, Clock::time_point rx);
  southbound::Disposition handle_arp(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p,
                                     topology::PortRole role);
  void answer_dns(southbound::SwitchContext& sw, const pkt::Parsed& p, uint32_t in_port);
  // `asked`: the peers' hand-offs were already consulted for this packet (cluster).
  void setup(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, Clock::time_point rx,
             bool asked = false);
  void repair(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, Clock::time_point rx);
  // Installs both directions of a binding and delivers the packet (from the client when
  // `from_client`), translated, at its last hop.
  bool install(Binding& b, const ofp::PacketIn& pin, bool from_client, Clock::time_point rx, bool flows = true);
  void switch_gone(uint64_t dpid);
  // A link went down: the sessions whose paths used it lose their flows (deleted by cookie on
  // every hop), so their next packet misses at the edge and is reinstalled on a new path.
  // A link lost because one of its switches left the controller (`switch_down`) keeps the rules
  // of sessions that start or end on that switch: no other path exists for them, and a switch
  // that only lost its controller connection still forwards on its flows.
  void link_gone(const topology::Link& l, bool switch_down = false);
  std::optional<Loc> locate(uint32_t host, Clock::time_point now);
  bool may_probe(uint32_t ip, Clock::time_point now);  // locate.cpp: backoff and budget
  void probe(uint32_t ip);
  void confirm(uint64_t id, uint8_t bit);
  void flow_gone(uint64_t id, uint8_t bit, Clock::time_point now);
  void erase_binding(const Key& k, bool release);
  static Key client_key(const Binding& b) { return Key{b.proto, b.client, b.vs, b.cport, b.sport}; }
  static Key server_key(const Binding& b) { return Key{b.proto, b.server, b.vc, b.sport, b.cport}; }
  void replicate(const Key& k, const Binding& b, uint64_t server_dpid);

  // Cluster: a session whose other end sits on a switch another instance masters. The instance
  // that binds it writes the binding to Redis before the first packet goes on (hand_off); the
  // other instance, seeing a packet from its host to a VIP whose host is on a peer's switch,
  // reads it before binding anew (ask_peer), so the reply leaves under the VIP the client
  // named. The packets meanwhile wait here, copied.
  struct Parked {
    uint64_t dpid = 0;
    uint32_t in_port = 0;
    Clock::time_point rx{};
    std::vector<pkt::Bytes> frames;  // the first and any that followed it, at most kParkedFrames
  };
  static constexpr size_t kParkedFrames = 16, kParkedKeys = 4096;
  static constexpr size_t kSilentProbes = 64;  // unlocated hosts probed per sweep (cluster)
  bool remote_host(uint32_t host, Clock::time_point now);
  bool park(const Key& k, const ofp::PacketIn& pin, uint64_t dpid, Clock::time_point rx);
  bool ask_peer(const Key& k, const ofp::PacketIn& pin, uint64_t dpid, Clock::time_point rx);
  void peer_answered(const Key& k, std::optional<std::string> record);
  bool hand_off(const Key& k, Binding& b, const ofp::PacketIn& pin, uint64_t dpid, Clock::time_point rx);
  void write_handoff(Binding& b, Clock::time_point now, std::function<void(bool)> done);
  void handed_off(const Key& k, bool ok);
  std::chrono::milliseconds handoff_ttl(uint8_t proto) const;
  absl::flat_hash_map<Key, Parked> parked_;
  void record_rppt(Clock::time_point rx, const char* kind);
  void sweep(Clock::time_point now);

  // Edge guard (guard.cpp, docs/threat-model.md). The rules a switch gets when it connects; the
  // VIP-source drops of this shard's switches' edge ports as topology settles them; the source
  // guard's check of a frame from an edge port (true: dropped, counted, a drop rule sent); the
  // flow-stats poll of the guard's rules (every sweep) and the counts of expired ones.
  void guard_switch_up(southbound::SwitchContext& sw);
  void guard_switch_down(uint64_t dpid);
  void guard_topology(const topology::TopologyRecord& rec);
  bool guard_check(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p);
  void guard_poll();
  void guard_flow_removed(uint64_t dpid, const ofp::FlowRemoved& fr);
  void publish_dropped();
  bool allowed_source(uint32_t ip) const;
  struct Bound {
    uint32_t host = kNone;  // protected host index
    uint64_t mac = 0;
  };
  absl::flat_hash_map<topology::PortRef, Bound> edge_bound_;  // edge port -> the protected host located there
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint32_t>> guarded_edges_;  // this shard's switches
  absl::flat_hash_map<uint64_t, guard::Dropped> dropped_;  // per switch of this shard, last flow stats
  guard::Dropped dropped_gone_;  // expired spoof drops, deleted rules, switches gone

  // Recovery (resync.cpp).
  struct ResyncJob;
  void resync(uint64_t dpid, std::vector<ofp::FlowStats> flows, Clock::time_point t0);
  void judge_sessions(const std::shared_ptr<ResyncJob>& job, const std::vector<recovery::SessionFlow>& flows);
  void finish_resync(const std::shared_ptr<ResyncJob>& job, southbound::SwitchContext& sw);
  recovery::VipExpect expect_vip(uint64_t dpid, uint32_t vip);
  std::vector<ofp::FlowMod> wanted_vip_rules(uint64_t dpid);
  // Live VIPs by owner (host index), rebuilt from the VIP table when its live_version moved: a
  // switch's resync looks at the hosts located there instead of every VIP of the pool (600,000
  // at 100,000 hosts, for each of 2,388 switches at connect).
  struct LiveIndex {
    uint64_t version = ~uint64_t{0};
    std::vector<uint32_t> start;  // per host: its first entry in vips (size hosts + 1)
    std::vector<uint32_t> vips;
  };
  LiveIndex live_;
  std::span<const uint32_t> live_vips_of(uint32_t host);
  void restore_sessions();
  void persist_sessions(Clock::time_point now, bool all = false);
  // False only when the cluster's fenced write was refused (then this instance no longer leads
  // and the caller must not use what it was writing ahead of).
  bool persist_vips(std::string_view phase, bool sync);
  void run_resync(uint64_t dpid, std::vector<ofp::FlowStats> flows, Clock::time_point t0, int tries);
  std::vector<uint64_t> ended_;  // owned bindings ended since the last sessions record
  Clock::time_point hold_until_{};
  std::vector<uint64_t> down_;  // switches gone from the controller (switch_gone), until back  // after a reload: no quarantine, no expiry of reloaded bindings

  // Rotation engine (shard 0 only).
  void engine_start();
  void tick();
  // Once the reservation is committed (off this thread: Committer): the pre-install batches.
  void reserved_committed(uint64_t gen);
  // One batch: the hosts held back by a switch's budget first, then the next from pending_.
  void run_batch();
  // Orders pending_ round the access switches (each switch's first host, then each one's
  // second, ...), so that a batch spreads over switches instead of meeting one switch's budget.
  void interleave_pending();
  // Record building and writing: on the committer's thread (commit_off_loop), else at once.
  void off_loop(std::function<void()> job);
  bool batches_done() const { return cursor_ >= pending_.size() && carry_.empty(); }
  size_t batch_size() const;         // hosts per batch (rotation_batch, or derived from T)
  std::chrono::milliseconds batch_delay() const;  // the gap between batches (batch_delay, or derived)
  size_t switch_batch_cap() const;   // a rotation's FlowMods per switch per batch
  void commit();
  void reclaim(Clock::time_point now);
  void distribute(std::shared_ptr<const Snapshot> s);
  void publish_mapping(const Snapshot& s);
  void publish_stats();
  void arm(Clock::duration d, void (Cpam::*step)());
  // Engine timers (reclaim, stats): void once the engine stops (a leader deposed).
  void arm_engine(Clock::duration d, void (Cpam::*step)());
  // The engine from a lifecycle (reloaded or fresh): first snapshot, write-ahead, timers.
  bool run_engine(std::unique_ptr<VipLifecycle> life, bool reloaded, std::string_view from);

  // Cluster mode (rotation.cpp): shard 0 polls leadership and the shared state; `follow`
  // applies a newer shared state when following (from the poll, or at once when the worker
  // read one).
  void cluster_poll();
  void follow();
  void become_leader(uint64_t gen);
  void step_down(const char* why);
  void apply_shared(const shared::SharedVips& s);
  bool write_shared(std::string_view phase);
  std::chrono::milliseconds publication_lead() const;
  uint64_t led_gen_ = 0;       // the generation the engine runs under (0: following)
  uint64_t applied_seq_ = 0;   // the newest shared state applied while following
  uint64_t write_seq_ = 0;     // the last seq written as leader
  uint64_t engine_run_ = 0;    // engine timers carry it
  Clock::time_point lead_retry_{};
  // Arms the next rotation; an earlier armed one is void (rotate-now, an interval change).
  void arm_tick(Clock::duration d);
  void preinstall_confirmed(uint64_t gen);

  std::shared_ptr<CpamService> svc_;
  const CpamConfig& cfg_;
  unsigned shard_;
  southbound::Runtime* rt_ = nullptr;
  bool stopped_ = false;
  topology::TopologyView view_;
  data::Due::Subscription sub_;
  std::shared_ptr<const Snapshot> snap_;
  absl::flat_hash_map<Key, Binding> sessions_;
  absl::flat_hash_map<uint64_t, Key> by_id_;  // owned bindings only
  struct ProbeState {
    Clock::time_point next{};
    Clock::duration backoff{};
    Clock::time_point deferred{};  // when the budget last held a probe for it back
  };
  absl::flat_hash_map<uint32_t, ProbeState> probed_;  // real ip of a host not located yet
  double probe_tokens_ = 0;
  Clock::time_point probe_refill_{};
  uint64_t next_id_ = 0;
  std::vector<std::string> samples_;

  // Engine state (shard 0).
  std::unique_ptr<VipLifecycle> life_;
  std::vector<std::pair<uint32_t, uint32_t>> pending_;  // (host, vip) of the rotation in progress
  size_t cursor_ = 0;                // the next of pending_ to pre-install
  std::vector<uint32_t> carry_;      // indices into pending_ held back by a switch's budget
  Clock::time_point tick_at_{};
  Clock::time_point reserved_at_{};  // the rotation in progress was written ahead ("reserved")
  std::shared_ptr<std::atomic<size_t>> preinstall_left_;
  uint64_t rotation_gen_ = 0;
  size_t preinstall_sent_ = 0;
  bool all_batches_sent_ = false;
  uint64_t tick_token_ = 0;

  using Stat = core::ShardStat;
  Stat packet_ins_, bound_, reused_, expired_, setups_, setup_failed_, repairs_, arp_answered_, arp_refused_,
      dns_answered_, dns_nxdomain_, dns_refused_, dns_errors_, stale_vip_, unprotected_src_,
      real_blocked_, spoofed_, unlocated_, no_path_, not_ready_, parse_errors_, sessions_full_, flows_removed_,
      delivered_only_, reroutes_, resyncs_, resync_kept_, resync_added_, resync_deleted_, resync_adopted_,
      resync_errors_, handoffs_out_, handoffs_in_, handoff_misses_, handoff_errors_, handoff_dropped_, onward_,
      spoofed_src_, guard_rules_, guard_errors_, probes_, probes_deferred_, rotation_deferred_;
  Stat switch_dropped_[guard::kKinds];
  std::atomic<uint64_t> live_sessions_{0};
  std::shared_ptr<std::atomic<uint64_t>> preinstall_ok_shared_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace sdn::apps::cpam
