// The VIP pool and its lifecycle (Algorithm 1 of seeds/000): Free -> Reserved (allocated for
// the next epoch, its last-hop rule pre-installed) -> Primary -> Grace (retired, still valid for
// pinned sessions) -> Quarantine -> Free. State, owner and both reference counts of a VIP share
// one atomic word, so a shard binding a session and the rotation engine reclaiming a VIP
// decide with one compare-and-swap each and can never both win: no lock on the hot path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "apps/cpam/config.hpp"

namespace sdn::apps::cpam {

using Clock = std::chrono::steady_clock;

// Wall-clock milliseconds since the epoch: the time base of the archived VIP table, session
// bindings and the cluster-shared state (they outlive the process, so steady_clock will not do).
inline int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

enum class VipState : uint8_t { kFree = 0, kReserved = 1, kPrimary = 2, kGrace = 3, kQuarantine = 4 };
const char* state_name(VipState s);

inline constexpr uint32_t kNone = 0xffff'ffffu;

class VipTable {
 public:
  explicit VipTable(uint32_t size);
  uint32_t size() const { return static_cast<uint32_t>(words_.size()); }

  struct View {
    VipState state = VipState::kFree;
    uint32_t owner = kNone;  // host index
    uint32_t sessions = 0;
    uint32_t flows = 0;
  };
  View load(uint32_t vip) const;
  // Hot path: a new session takes a reference on a VIP in Primary, or in Grace for less than
  // `accept` since it retired. Returns the owner on success.
  std::optional<uint32_t> acquire_session(uint32_t vip, Clock::time_point now, Clock::duration accept);
  void release_session(uint32_t vip);
  // Flow references are only taken by a holder of a session reference.
  void add_flow(uint32_t vip);
  void drop_flow(uint32_t vip);
  Clock::time_point grace_since(uint32_t vip) const;

  // Engine only (one thread).
  bool reserve(uint32_t vip, uint32_t owner);      // Free -> Reserved
  void promote(uint32_t vip);                      // Reserved -> Primary
  void retire(uint32_t vip, Clock::time_point now);  // Primary -> Grace
  bool try_quarantine(uint32_t vip);               // Grace with no references -> Quarantine
  void free(uint32_t vip);                         // Quarantine or Reserved -> Free
  // Recovery: state and owner as archived, references kept (grace_since for Grace).
  void restore(uint32_t vip, VipState s, uint32_t owner, Clock::time_point grace_since);
  // The reference of a reloaded or adopted binding, whatever the state: the VIP is in use.
  void add_session(uint32_t vip);
  // Bumped after every change of which VIPs are live (Reserved, Primary, Grace) or of their
  // owners: reserve, a quarantine, free, restore. A reader's index of live VIPs built at version
  // V holds everything that was live at V (LiveIndex in cpam.hpp).
  uint64_t live_version() const { return live_version_.load(std::memory_order_acquire); }

 private:
  // bits 0..19 flow refs, 20..39 session refs, 40..60 owner (all ones = none), 61..63 state.
  static constexpr uint64_t kRefMask = (uint64_t{1} << 20) - 1;
  static constexpr int kSessShift = 20, kOwnerShift = 40, kStateShift = 61;
  static constexpr uint64_t kOwnerMask = (uint64_t{1} << 21) - 1;
  static uint64_t pack(VipState s, uint32_t owner, uint64_t sess, uint64_t flows);
  static View unpack(uint64_t w);
  std::vector<std::atomic<uint64_t>> words_;
  std::vector<std::atomic<int64_t>> grace_since_;  // steady-clock ns
  std::atomic<uint64_t> live_version_{0};
  void live_changed() { live_version_.fetch_add(1, std::memory_order_acq_rel); }
};

// The names and real addresses of the protected hosts (fixed at start).
struct HostDirectory {
  std::vector<ProtectedHost> hosts;
  absl::flat_hash_map<std::string, uint32_t> by_name;  // "h12" (zone stripped)
  absl::flat_hash_map<uint32_t, uint32_t> by_ip;
  explicit HostDirectory(std::vector<ProtectedHost> h);
  std::optional<uint32_t> find_ip(uint32_t ip) const;
};

// One epoch's mapping, immutable once published: shards hold a pointer to it and swap it in
// one step, so no reader ever sees half a rotation.
struct Snapshot {
  uint64_t epoch = 0;
  Clock::time_point published{};
  Clock::time_point next_rotation{};
  std::vector<uint32_t> primary;  // per host: VIP index (kNone before the first epoch)
};

// What a rotation did, archived on network/cpam/rotation.
struct RotationRecord {
  uint64_t epoch = 0;
  Clock::time_point started{}, published{};
  size_t hosts = 0, rotated = 0, preinstalled = 0, preinstall_failed = 0, pool_exhausted = 0;
  size_t grace = 0, quarantined = 0, freed = 0, free_after = 0;
};

// What the engine archives on network/cpam/vips (recovery.cpp has the JSON): the committed
// epoch, each host's primary and reserved VIP, the retired (Grace, Quarantine) VIPs with their
// owner and since when (Unix ms), and the boot number (session ids carry it: ids never repeat
// across restarts, so a reloaded controller never reuses the cookie of a flow still installed).
struct PersistedVips {
  uint64_t epoch = 0;
  uint64_t boot = 0;
  int64_t time_ms = 0;
  int64_t next_rotation_ms = 0;
  std::vector<uint32_t> primary, next;  // per host index; kNone = none
  struct Retired {
    uint32_t vip = 0;
    VipState state = VipState::kGrace;
    uint32_t owner = kNone;
    int64_t since_ms = 0;
    bool operator==(const Retired&) const = default;
  };
  std::vector<Retired> retired;
  bool operator==(const PersistedVips&) const = default;
};

// The lifecycle driver: allocation (uniform over the free pool, from the kernel CSPRNG),
// epoch building and reclaim. Pure logic on a caller-supplied clock; the app decides when each
// step runs and sends the FlowMods it asks for.
class VipLifecycle {
 public:
  VipLifecycle(const CpamConfig& cfg, std::shared_ptr<VipTable> table, size_t hosts);

  // Step 1 of a rotation: a fresh VIP for every host, Reserved (its rule may be pre-installed).
  // Hosts the pool cannot serve keep their VIP this epoch. Returns the (host, vip) pairs.
  std::vector<std::pair<uint32_t, uint32_t>> reserve_next(Clock::time_point now);
  // Step 2: the reserved VIPs become Primary, the old ones Grace; the new snapshot.
  std::shared_ptr<const Snapshot> commit(Clock::time_point now, Clock::time_point next_rotation);
  // Grace VIPs unreferenced for the reclaim threshold go to Quarantine (returned, with their
  // former owner, so their rules can be deleted); quarantined ones past the period go Free.
  struct Reclaimed {
    std::vector<std::pair<uint32_t, uint32_t>> quarantined;  // (vip, owner)
    size_t freed = 0;
  };
  // `held` (cluster mode: another instance pins the VIP, or may) counts as a reference.
  Reclaimed reclaim(Clock::time_point now, const std::function<bool(uint32_t vip, Clock::time_point since)>& held = {});

  // Recovery: the engine's state to archive (times in Unix ms from `unix_now_ms`), and the
  // inverse on a fresh lifecycle: table words (references untouched), pool and lists. VIPs out
  // of the pool or named twice are skipped (returned count); a reservation in progress is kept
  // (the next reserve_next reuses it). VIPs the record does not name become Free in the table
  // (references kept): a follower in a cluster mirrors the leader's table this way.
  PersistedVips export_state(Clock::time_point now, int64_t unix_now_ms) const;
  size_t restore(const PersistedVips& p, Clock::time_point now, int64_t unix_now_ms, Clock::time_point next_rotation);

  // A Free VIP that a reloaded binding still uses (its state record was lost): out of the pool
  // into Grace for `owner`, past its accept window. False when it was not Free.
  bool claim(uint32_t vip, uint32_t owner, Clock::time_point now);

  const RotationRecord& last() const { return record_; }
  std::shared_ptr<const Snapshot> current() const { return current_; }
  size_t free_count() const { return free_.size(); }
  size_t grace_count() const { return grace_.size(); }
  size_t quarantine_count() const { return quarantine_.size(); }
  // Uniform in [0, n) from getrandom(2) (rejection sampling: no modulo bias).
  static uint32_t uniform(uint32_t n);

 private:
  uint32_t alloc();
  CpamConfig cfg_;
  std::shared_ptr<VipTable> table_;
  size_t hosts_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> primary_;
  std::vector<uint32_t> next_;
  struct Retired {
    uint32_t vip;
    Clock::time_point since;       // entered Grace
    Clock::time_point zero_since;  // first seen unreferenced (max() = referenced)
  };
  std::vector<Retired> grace_;
  std::vector<std::pair<uint32_t, Clock::time_point>> quarantine_;
  std::shared_ptr<const Snapshot> current_;
  uint64_t epoch_ = 0;
  RotationRecord record_;
};

}  // namespace sdn::apps::cpam
