// CPAM across a cluster of sdnator instances (README "Cluster"): the state that must outlive an
// instance lives in Redis through the cluster layer. The rotation leader writes the VIP table
// and epoch with fenced writes ahead of each use; every instance publishes its session bindings
// and the VIPs they pin under its own id with a TTL; followers poll the epoch key and mirror the
// leader's table. This file has the store interface, the record formats (pure, tested) and the
// worker thread that does the periodic Redis I/O off the shards' event loops.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/cpam/recovery.hpp"
#include "apps/cpam/vips.hpp"
#include "core/expected.hpp"

namespace sdn::cluster {
class Cluster;
}

namespace sdn::apps::cpam::shared {

// What CPAM needs of the cluster (cluster::Cluster through make_cluster_store, or a test fake).
// Keys are suffixes under the cluster's namespace. Thread-safe.
class Store {
 public:
  virtual ~Store() = default;
  virtual void lead(const std::string& role, std::function<void(uint64_t)> gained, std::function<void()> lost) = 0;
  virtual bool fenced_set(const std::string& role, const std::string& key, const std::string& value) = 0;
  virtual std::optional<std::string> get(const std::string& key) = 0;
  virtual bool set(const std::string& key, const std::string& value, std::chrono::milliseconds ttl) = 0;
  virtual std::string instance_id() const = 0;
};
// The adapter over the cluster layer (cluster_store.cpp; only built with sdnator_cluster).
std::shared_ptr<Store> make_cluster_store(std::shared_ptr<cluster::Cluster> c);

inline constexpr const char* kRole = "cpam-rotation";
inline constexpr const char* kVipsKey = "cpam:vips";            // the leader's state (fenced)
inline constexpr const char* kEpochKey = "cpam:epoch";          // {epoch, seq, phase} (fenced)
inline constexpr const char* kInstancesKey = "cpam:instances";  // ids that publish records
std::string sessions_key(const std::string& instance, unsigned shard);  // cpam:sessions:<id>:<shard>
std::string pins_key(const std::string& instance);                      // cpam:pins:<id>

// The leader's state: the archive's `network/cpam/vips` record plus the write sequence (grows
// with every write, across leaders), the leader's id and its fencing generation.
struct SharedVips {
  PersistedVips vips;
  std::string phase;
  uint64_t seq = 0;
  std::string leader;
  uint64_t generation = 0;
  int64_t due_ms = 0;  // a "reserved" write: the earliest publication (unix ms; 0: not said)
};
std::string encode_vips(const SharedVips& s, const HostDirectory& dir);
Expected<SharedVips, std::string> decode_vips(std::string_view text, const HostDirectory& dir, uint32_t pool);
// The small key followers poll: {"epoch", "seq", "phase"}.
std::string encode_epoch(const SharedVips& s);
std::optional<uint64_t> epoch_seq(std::string_view text);

// A session that crosses instances (README "Cluster", hand-off): its binding as the instance
// that bound it wrote it, filed under the key the reply's first packet shows at the server's
// access switch: cpam:handoff:<proto>:<server ip>:<client VIP ip>:<server port>:<client port>.
// The record names the hosts by real address and the VIPs by index.
struct Handoff {
  uint8_t proto = 0;
  uint32_t client = 0, server = 0;  // host indices
  uint32_t vc = 0, vs = 0;          // VIP indices
  uint16_t cport = 0, sport = 0;
  std::string instance;             // who bound it
};
std::string handoff_key(uint8_t proto, uint32_t server_ip, uint32_t vc_ip, uint16_t sport, uint16_t cport);
std::string encode_handoff(const Handoff& h, const HostDirectory& dir);
Expected<Handoff, std::string> decode_handoff(std::string_view text, const HostDirectory& dir, uint32_t pool);

// One instance's pins: {"instance", "time_ms", "vips": [index...]}.
std::string encode_pins(const std::string& instance, int64_t time_ms, const std::set<uint32_t>& vips);
std::optional<std::set<uint32_t>> decode_pins(std::string_view text, uint32_t pool);
// The registry: a JSON array of ids. Missing or bad text reads as empty.
std::vector<std::string> decode_instances(std::string_view text);

// The leader's view of the other instances' pins. An instance whose record is present pins what
// it lists; one whose record vanished still pins what it last listed for `hold` (its sessions
// are being adopted by its switches' new masters, who will list them); one listed in the
// registry but never seen pins everything for `hold` (what it used is unknown). Pure: the caller
// passes the time.
class RemotePins {
 public:
  explicit RemotePins(Clock::duration hold) : hold_(hold) {}
  void present(const std::string& instance, std::set<uint32_t> vips, Clock::time_point now);
  void absent(const std::string& instance, Clock::time_point now);
  bool referenced(uint32_t vip, Clock::time_point now) const;
  // Every instance ever heard of; those gone for longer than the hold (ignored, and dropped from
  // the registry; a record that comes back revives one).
  std::vector<std::string> known() const;
  std::vector<std::string> expired(Clock::time_point now) const;
  size_t pinned_count() const;

 private:
  struct Entry {
    std::set<uint32_t> vips;
    bool seen = false;                           // a record was read at least once
    std::optional<Clock::time_point> gone_since;  // record absent since
  };
  Clock::duration hold_;
  std::map<std::string, Entry> by_instance_;
};

// The worker: a thread that renews this instance's records, reads the others' pins and polls
// the epoch key, handing the results to shard 0 through mailboxes.
class Link {
 public:
  Link(std::shared_ptr<Store> store, const CpamConfig& cfg, const HostDirectory& dir);
  ~Link();
  // `on_state` is called on the link's thread each time a newer shared state was read (shard 0
  // then applies it at once instead of at its next poll).
  void start(std::function<void()> on_state = {});
  void stop();

  // While the newest state is another instance's "reserved" write, its publication follows once
  // the leader's pre-install is done, not before `due_ms` (at least a poll and a half after it):
  // from kFastPoll before that time the epoch key is polled every kFastPoll until the publication
  // is read, for at most preinstall_timeout + kFastWindow past it (kFastWindow after reading a
  // "reserved" write that names no due time), so followers apply the new epoch a few ms after it.
  static constexpr std::chrono::milliseconds kFastPoll{5};
  static constexpr std::chrono::milliseconds kFastWindow{5000};

  Store& store() { return *store_; }
  const std::string& instance() const { return instance_; }

  // A shard's owned bindings (archive JSON form) and the VIPs they pin; published at once.
  void put_sessions(unsigned shard, nlohmann::json bound, std::set<uint32_t> pins);
  // The newest state read from Redis whose seq is above `after` (shard 0, follower).
  std::optional<SharedVips> take_state(uint64_t after);
  // Leader: another instance pins the VIP (or may: see RemotePins). `fresh` is false while the
  // view is older than two renew periods (Redis unreachable): then nothing may be reclaimed.
  bool remote_referenced(uint32_t vip) const;
  bool pins_fresh() const;
  size_t remote_pinned() const;

  // Hand-offs (one Redis write or read each) run in order on a thread of their own, so a
  // session's first packet never waits behind the periodic work; `done` is called on that
  // thread. False (and `done` never called) when the link is stopped or kHandoffQueue requests
  // are already waiting.
  static constexpr size_t kHandoffQueue = 4096;
  bool handoff_put(std::string key, std::string value, std::chrono::milliseconds ttl, std::function<void(bool)> done);
  bool handoff_get(std::string key, std::function<void(std::optional<std::string>)> done);

  struct Counters {
    uint64_t writes = 0, write_errors = 0, polls = 0, fast_polls = 0, states_read = 0, bad_records = 0;
    uint64_t handoff_puts = 0, handoff_put_errors = 0, handoff_gets = 0, handoff_found = 0, handoff_refused = 0;
  };
  Counters counters() const;

 private:
  void run();
  void run_handoffs();
  void publish_own();
  void read_pins();
  void poll_epoch();
  // How long to wait before the next epoch poll (under mu_); `fast` when polling fast.
  Clock::duration next_poll(bool& fast) const;

  std::shared_ptr<Store> store_;
  CpamConfig cfg_;
  const HostDirectory& dir_;
  std::string instance_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, dirty_ = false;
  std::map<unsigned, std::pair<nlohmann::json, std::set<uint32_t>>> own_;
  std::optional<SharedVips> state_;
  uint64_t polled_seq_ = 0;
  Clock::time_point reserved_seen_{};  // when the newest state, a "reserved" one, was read
  std::function<void()> on_state_;
  RemotePins remote_;
  Clock::time_point pins_read_{};
  Counters counters_;
  // The hand-off thread and its queue (mu_ guards it too).
  std::thread handoff_thread_;
  std::condition_variable handoff_cv_;
  std::deque<std::function<void()>> handoffs_;
};

}  // namespace sdn::apps::cpam::shared
