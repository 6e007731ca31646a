// DUE, the Data Ubiquity Engine (seed 002 sections 3.6, 4.1): the one client library every app
// uses. It registers the app's interests and capabilities with the Coordinator, publishes writes
// on Data Updates and archives them in Data Archives (unless PUB_ONLY), paces writes to keys the
// Coordinator bound to a frequency, delivers subscriptions to callbacks, answers history queries,
// and sends heartbeats. The API is the same whether the backends are in this process (in-process
// bus + SQLite) or shared between processes (Redis + PostgreSQL): only the Backends differ.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "data/acl.hpp"
#include "data/archive.hpp"
#include "data/config.hpp"
#include "data/key.hpp"
#include "data/record.hpp"
#include "data/updates.hpp"

namespace sdn::data {

// The data backends one process shares between all its DUE clients.
class Backends {
 public:
  // Opens what `cfg` names. A backend that cannot be opened is an error naming it (the caller
  // decides whether to fall back to the embedded default).
  static Expected<std::shared_ptr<Backends>, std::string> open(const DataConfig& cfg);
  // `archive` may be null (archives off).
  Backends(std::unique_ptr<Updates> updates, std::unique_ptr<Archive> archive);
  ~Backends();
  Updates& updates() { return *updates_; }
  Archive* archive() { return archive_.get(); }  // null when archives are off
  // The grants every Due of this process is checked against (off unless configured).
  Acl& acl() { return acl_; }
  // One timer thread shared by every Due of the process (heartbeats, pacing); post work with
  // post_after.
  void post_after(std::chrono::nanoseconds delay, std::function<void()> fn);
  // Problems met while opening (e.g. "postgres unreachable, using sqlite"), for the stats file.
  const std::vector<std::string>& notes() const { return notes_; }
  void add_note(std::string n) { notes_.push_back(std::move(n)); }

 private:
  struct Timers;
  std::unique_ptr<Updates> updates_;
  std::unique_ptr<Archive> archive_;
  std::unique_ptr<Timers> timers_;
  std::vector<std::string> notes_;
  Acl acl_;
};

enum WriteFlags : unsigned {
  kWriteDefault = 0,
  kPubOnly = 1u << 0,  // Data Updates only, skip the archive (PUB_ONLY)
  kNoWait = 1u << 1,   // flush both backends' queues now instead of waiting for a full batch
};

enum Role : unsigned { kProducer = 1u << 0, kConsumer = 1u << 1 };

struct Interest {
  std::string key;              // pattern of keys this app consumes
  std::optional<double> freq;   // Hz it wants them at; none = every value produced
};

struct Capability {
  std::string key;              // pattern of keys this app can produce
  std::optional<double> freq;   // Hz it can produce at most; none = no limit
  bool index = false;           // ask archives to index this key range (kept for the wire format;
                                // both archives always index key and time)
};

// What the Coordinator asked of this instance.
struct Assignment {
  std::string key;              // the capability pattern that was matched
  std::optional<double> freq;   // paced to this many values/s per concrete key; none = unpaced
  std::vector<std::string> consumers;  // app ids whose interests matched
};

struct AssignmentSet {
  uint64_t epoch = 0;           // Coordinator's counter; older sets are ignored
  bool active = true;           // false: this instance is a standby of its app id
  std::vector<Assignment> items;
};

struct DueStats {
  uint64_t writes = 0;
  uint64_t published = 0;
  uint64_t archived = 0;
  uint64_t paced_coalesced = 0;   // writes superseded by a newer value inside a pacing interval
  uint64_t rejected = 0;          // bad keys or writes before init()
  uint64_t heartbeats = 0;
  uint64_t delivered = 0;         // callbacks run for this client's subscriptions
  uint64_t acl_denied = 0;        // writes and observes refused by the app's grant, records
                                  // withheld from a subscription the grant no longer covers
};

class Due {
 public:
  using Handler = std::function<void(const RecordPtr&)>;

  explicit Due(std::shared_ptr<Backends> backends, DueConfig cfg = {});
  ~Due();  // publishes a goodbye, stops the heartbeat, unsubscribes, flushes
  Due(const Due&) = delete;
  Due& operator=(const Due&) = delete;

  // Registers with the Coordinator (and again whenever a Coordinator announces itself), starts
  // the heartbeat. Keys are validated; the error names the bad one.
  Expected<void, std::string> init(std::string app_id, unsigned roles,
                                   std::vector<Interest> interests = {},
                                   std::vector<Capability> capabilities = {});

  // `key` is concrete; without "@app" the app id is added. Never blocks on I/O.
  Expected<void, std::string> write(std::string_view key, Value value, unsigned flags = 0);

  // RAII: the callback stops when the Subscription is destroyed or cancel()ed.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& o) noexcept;
    Subscription& operator=(Subscription&& o) noexcept;
    ~Subscription();
    void cancel();
    bool active() const { return updates_ != nullptr; }

   private:
    friend class Due;
    Subscription(Updates* u, uint64_t id) : updates_(u), id_(id) {}
    Updates* updates_ = nullptr;
    uint64_t id_ = 0;
  };
  // `executor` chooses the thread the callback runs on (see Updates::subscribe).
  Expected<Subscription, std::string> observe(std::string_view pattern, Handler handler,
                                               Executor executor = {});

  // History from Data Archives (error when archives are off).
  Expected<std::vector<Record>, std::string> get(const Query& q);
  Expected<std::vector<Record>, std::string> get(std::string_view key_or_pattern);

  // Pushes everything queued to both backends now, without waiting (the paper's flush API).
  void flush();
  // Waits until everything written before the call is out on Data Updates and committed to
  // Data Archives; false on timeout.
  bool sync(std::chrono::milliseconds timeout);

  const std::string& app_id() const { return app_id_; }
  const std::string& instance() const { return instance_; }
  bool active() const;
  AssignmentSet assignments() const;
  // Called (on DUE's timer thread) with each new assignment set.
  void on_assignment(std::function<void(const AssignmentSet&)> cb);
  // The assigned frequency for a concrete key, if the key is frequency-bound.
  std::optional<double> assigned_freq(std::string_view key) const;
  // Whether some consumer asked for this key (on-demand production: producers may skip the rest).
  bool wanted(std::string_view key) const;

  DueStats stats() const;
  Backends& backends() { return *backends_; }

 private:
  struct Impl;
  std::shared_ptr<Backends> backends_;
  DueConfig cfg_;
  std::string app_id_;
  std::string instance_;
  std::unique_ptr<Impl> impl_;
};

// Reserved keys of the application model (docs/data-wire.md).
namespace keys {
std::string registration(std::string_view app_id, std::string_view instance);  // @app_id
std::string heartbeat(std::string_view app_id, std::string_view instance);      // @app_id
std::string goodbye(std::string_view app_id, std::string_view instance);        // @app_id
std::string assignment(std::string_view app_id, std::string_view instance);     // @coordinator
inline constexpr std::string_view kCoordinatorId = "coordinator";
inline constexpr std::string_view kCoordinatorHello = "sdnator/coordinator/hello@coordinator";
inline constexpr std::string_view kCoordinatorState = "sdnator/coordinator/state@coordinator";
inline constexpr std::string_view kAppsPattern = "sdnator/apps/**";
}  // namespace keys

}  // namespace sdn::data
