// The Coordinator (seed 002 sections 3.4, 3.7, 3.8): an app like the others, on the same keys. It
// collects registrations (interests and capabilities), matches them per key including wildcards,
// consolidates frequencies (the highest rate any consumer asks for, capped by the producer's
// capacity; what cannot be met is reported), pushes assignments whenever an app joins or leaves,
// watches heartbeats, keeps one active instance per app id with the others on standby and fails
// over when the active goes silent. Its state is soft: a restarted Coordinator rebuilds it from
// its last checkpoint in Data Archives and from fresh registrations (it announces itself and
// every DUE re-registers).
//
// CoordinatorCore is the logic as pure functions of (record, now) -> publications, driven by tests
// with a manual clock; Coordinator runs it on a Due with a timer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/config.hpp"
#include "data/due.hpp"
#include "data/record.hpp"

namespace sdn::data {

struct Publication {
  std::string key;    // concrete key, "@coordinator" included
  Json value;
  bool archive = false;  // also keep in Data Archives (state checkpoints, assignments)
};

enum class InstanceStatus { kOnline, kOffline };

struct InstanceInfo {
  std::string app_id;
  std::string instance;
  unsigned roles = 0;
  std::vector<Interest> interests;
  std::vector<Capability> capabilities;
  std::chrono::milliseconds heartbeat_interval{1000};
  int64_t registered_ns = 0;
  int64_t last_seen_ns = 0;      // last registration or heartbeat
  InstanceStatus status = InstanceStatus::kOnline;
  bool active = false;
};

// An interest the fabric of producers cannot meet.
struct Unsatisfied {
  std::string consumer;          // app id
  std::string key;               // its interest pattern
  std::optional<double> wanted;  // Hz asked for
  std::optional<double> capped;  // Hz assigned instead (producer capacity); none = no producer
  std::string producer;          // app id of the capped producer; empty = no producer at all
};

class CoordinatorCore {
 public:
  explicit CoordinatorCore(CoordinatorConfig cfg = {});

  // Startup: restore from a checkpoint (the value last published on kCoordinatorState), then
  // announce (kCoordinatorHello) so every live DUE re-registers. Restored instances count as
  // online until they miss `missed_beats` heartbeats from `now_ns`.
  std::vector<Publication> start(int64_t now_ns, const Json* checkpoint = nullptr);
  // A record on sdnator/apps/** (registration, heartbeat, goodbye). Malformed values are counted
  // and ignored.
  std::vector<Publication> on_record(const Record& r, int64_t now_ns);
  // Heartbeat watching and periodic checkpoints.
  std::vector<Publication> tick(int64_t now_ns);
  // Operator action (docs/acl.md): the app's instances leave the registry, its records are
  // ignored from now on (also after a restart: the checkpoint keeps the list), consumers'
  // assignments are recomputed without it.
  std::vector<Publication> revoke(const std::string& app, int64_t now_ns);
  std::vector<Publication> restore(const std::string& app, int64_t now_ns);
  std::set<std::string> revoked() const;
  // Each registered app's grant: the union over its instances of derive_grant().
  std::map<std::string, Grant> grants() const;

  // Query API.
  std::vector<InstanceInfo> instances() const;
  std::vector<std::string> apps() const;
  std::optional<AssignmentSet> assignment(const std::string& app_id,
                                          const std::string& instance) const;
  std::vector<Unsatisfied> unsatisfied() const;
  Json state() const;  // everything above as JSON (also the checkpoint format)
  uint64_t malformed() const { return malformed_; }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  uint64_t malformed_ = 0;
};

// Runs a CoordinatorCore on its own Due (app id "coordinator") and timer thread.
class Coordinator {
 public:
  Coordinator(std::shared_ptr<Backends> backends, CoordinatorConfig cfg, DueConfig due_cfg = {});
  ~Coordinator();
  Expected<void, std::string> start();
  void stop();
  Json state() const;  // thread-safe snapshot of CoordinatorCore::state(), plus "acl"
  // Revokes an app's access (docs/acl.md): at once in this process's Acl and on Redis (user off,
  // its connections killed); the registry drops it on the Coordinator thread right after.
  Expected<void, std::string> revoke(const std::string& app);
  // Lifts a revocation; the app regains its grant when it registers again.
  Expected<void, std::string> restore(const std::string& app);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::data
