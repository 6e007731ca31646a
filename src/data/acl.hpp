// Per-app access control on data keys (seed 002 section 7, "a per-key whitelist of allowed apps";
// docs/acl.md). A Grant lists the key patterns one app may publish (its capabilities, stamped
// with its own app id) and subscribe to (its interests), plus the coordination keys every app
// needs to register, heartbeat and receive its assignments. Acl holds the grants of one process
// compiled into KeyTries and answers the checks DUE makes on publish, subscribe and delivery;
// the Coordinator owns revocation and, on Redis, turns each grant into a Redis ACL user
// (redis_acl.cpp) so that Redis itself refuses what the grant does not allow.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "data/key.hpp"
#include "data/record.hpp"
#include "data/updates.hpp"

namespace sdn::data {

struct Interest;
struct Capability;

enum class AclMode { kOff, kEnforce };

struct AclConfig {
  AclMode mode = AclMode::kOff;  // [data] acl = "off" | "enforce"
  // Key of HMAC-SHA256(secret, app) = the app's Redis password. Empty = no Redis ACL users are
  // managed (the in-process checks still apply).
  std::string secret;
  std::vector<std::string> apps;   // Redis users created at Coordinator start (coordination keys
                                   // only; widened to the full grant once the app registers)
  std::string user_prefix = "sdnator:";
  // Operator limits (docs/acl.md "Limits"): app -> the patterns its registrations may claim.
  // A registered interest or capability no limit pattern covers is left out of the grant.
  // Apps without an entry get what they register.
  std::map<std::string, std::vector<std::string>> limits;
  bool redis_users = false;        // data.updates = "redis" and a secret is set
  RedisConfig admin;               // where and as whom the Coordinator runs ACL SETUSER
};

struct Grant {
  std::string app;
  std::vector<std::string> publish;    // key patterns (channel form, "@app" included)
  std::vector<std::string> subscribe;  // key patterns
};

// What every app may touch to take part in the application model (docs/data-wire.md): publish
// its registration, heartbeat and goodbye; receive its assignment sets and Coordinator hellos.
// The Coordinator itself gets the whole sdnator/ tree.
Grant coordination_grant(std::string_view app);
// The coordination grant plus the app's capabilities (publish) and interests (subscribe).
// Patterns that do not parse are left out (DUE and the Coordinator validate them before).
Grant derive_grant(std::string_view app, const std::vector<Interest>& interests,
                   const std::vector<Capability>& capabilities);
// Union of two grants of one app (several instances registering different sets).
void merge_grant(Grant& into, const Grant& from);
Json grant_json(const Grant& g);

// The Redis side of a grant (docs/acl.md "Redis mapping"): the channel globs of ACL SETUSER.
// One-level `*` becomes Redis `*`, which also crosses '/': the Redis grant is a superset for
// deeper keys with the same prefix and suffix (never another app's "@app" suffix on publish).
std::vector<std::string> redis_channel_globs(const std::vector<std::string>& patterns);
// The ACL SETUSER arguments (after "ACL SETUSER <user>") for a grant: no keys, PUBLISH on the
// publish globs, (P)SUBSCRIBE on the subscribe globs in a selector, password by its SHA-256.
std::vector<std::string> redis_setuser_args(const Grant& g, std::string_view password);
// HMAC-SHA256(secret, app) as 64 hex digits: the app's Redis password, computed by the
// Coordinator and by `sdnator data acl-password` for the operator; never sent over pub/sub.
std::string app_password(std::string_view secret, std::string_view app);
std::string sha256_hex(std::string_view data);

struct AclStats {
  uint64_t denied_publish = 0;
  uint64_t denied_subscribe = 0;
  uint64_t denied_delivery = 0;  // records not handed to a subscriber whose grant no longer
                                 // covers them (revoked or narrowed)
  uint64_t grants = 0;
  uint64_t revoked = 0;
  uint64_t limited = 0;  // registered patterns left out of a grant by an operator limit
};

class Acl {
 public:
  explicit Acl(AclConfig cfg = {});
  const AclConfig& config() const { return cfg_; }
  void set_config(AclConfig cfg);  // before any Due uses it
  bool enforcing() const { return enforcing_.load(std::memory_order_relaxed); }
  // The grant with what the app's limit does not cover left out (coordination keys stay).
  Grant constrain(const Grant& g);

  // Bumped by every change; callers cache a check's result with the version it was made at.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // Replaces the app's grant (the Coordinator, from all its registered instances). False when
  // the app is revoked (nothing changes).
  bool set_grant(const Grant& g);
  // Adds to the app's grant (a Due registering in this process). False when revoked.
  bool add_grant(const Grant& g);
  // Revoked apps have no grant at all, not even the coordination keys, until restore().
  void revoke(const std::string& app);
  void restore(const std::string& app);
  bool revoked(const std::string& app) const;
  std::set<std::string> revoked_apps() const;

  // The checks (without counting; DUE counts through deny_*). An app with no grant yet has the
  // coordination grant.
  bool may_publish(const std::string& app, const Key& concrete) const;
  bool may_subscribe(const std::string& app, const Key& pattern) const;  // covered by a grant
  bool may_receive(const std::string& app, const Key& concrete) const;
  // Count a denial and log it (rate-limited).
  void deny_publish(const std::string& app, std::string_view key);
  void deny_subscribe(const std::string& app, std::string_view pattern);
  void deny_delivery(const std::string& app, std::string_view key);

  std::optional<Grant> grant(const std::string& app) const;
  AclStats stats() const;
  Json state() const;  // mode, counters, grants, revoked apps

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> find(const std::string& app) const;
  std::shared_ptr<const Compiled> compile(const Grant& g) const;

  AclConfig cfg_;
  std::atomic<bool> enforcing_{false};
  std::atomic<uint64_t> version_{1};
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const Compiled>> grants_;
  std::set<std::string> revoked_;
  std::map<std::string, std::vector<Key>> limits_;  // parsed cfg_.limits
  std::atomic<uint64_t> denied_publish_{0}, denied_subscribe_{0}, denied_delivery_{0},
      limited_{0};
};

// Runs ACL SETUSER / ACL DELUSER / CLIENT KILL USER on an admin connection (redis_acl.cpp).
class RedisAclAdmin {
 public:
  explicit RedisAclAdmin(AclConfig cfg);
  ~RedisAclAdmin();
  std::string user(std::string_view app) const { return cfg_.user_prefix + std::string(app); }
  // Creates or updates the app's user to exactly this grant (password from the secret).
  Expected<void, std::string> apply(const Grant& g);
  // Turns the user off (no new AUTH) and kills its connections.
  Expected<void, std::string> revoke(std::string_view app);
  uint64_t errors() const { return errors_; }

 private:
  Expected<void, std::string> command(const std::vector<std::string>& argv);
  struct Conn;
  AclConfig cfg_;
  std::unique_ptr<Conn> conn_;
  uint64_t errors_ = 0;
};

}  // namespace sdn::data
