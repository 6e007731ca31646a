// Acl (acl.hpp): grants derived from registrations, compiled into KeyTries so that a check costs
// one trie walk (and DUE caches the answer per key until the grant version changes).
#include "data/acl.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "data/due.hpp"

namespace sdn::data {
namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

void add_unique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

}  // namespace

Grant coordination_grant(std::string_view app) {
  Grant g;
  g.app = std::string(app);
  if (app == keys::kCoordinatorId) {
    // The Coordinator reads every registration and writes every app's assignments.
    g.publish = {"sdnator/**@coordinator"};
    g.subscribe = {"sdnator/**"};
    return g;
  }
  for (std::string_view kind : {"register", "heartbeat", "goodbye"})
    g.publish.push_back(fmt::format("sdnator/apps/{}/*/{}@{}", app, kind, app));
  g.subscribe.push_back(fmt::format("sdnator/apps/{}/*/assignment@{}", app, keys::kCoordinatorId));
  g.subscribe.push_back(std::string(keys::kCoordinatorHello));
  return g;
}

Grant derive_grant(std::string_view app, const std::vector<Interest>& interests,
                   const std::vector<Capability>& capabilities) {
  Grant g = coordination_grant(app);
  for (const auto& c : capabilities) {
    auto k = Key::parse(c.key);
    if (!k) continue;
    // DUE stamps the app's own id on every write, so a capability only ever covers "@app" keys.
    if (k->app_id().empty()) *k = k->with_app(std::string(app));
    if (k->app_id() != app) continue;
    add_unique(g.publish, k->channel());
  }
  for (const auto& i : interests) {
    auto k = Key::parse(i.key);
    if (!k) continue;
    add_unique(g.subscribe, k->channel());
  }
  return g;
}

void merge_grant(Grant& into, const Grant& from) {
  for (const auto& p : from.publish) add_unique(into.publish, p);
  for (const auto& s : from.subscribe) add_unique(into.subscribe, s);
}

Json grant_json(const Grant& g) {
  return Json{{"app", g.app}, {"publish", g.publish}, {"subscribe", g.subscribe}};
}

std::vector<std::string> redis_channel_globs(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const auto& p : patterns) {
    auto k = Key::parse(p);
    if (!k) continue;
    // A concrete key with a producer is subscribed literally (SUBSCRIBE), anything else through
    // the same glob RedisUpdates::subscribe uses: Redis compares PSUBSCRIBE patterns literally
    // with the user's channel patterns, so the two must be spelled the same way.
    const bool literal = !k->is_pattern() && !k->app_id().empty();
    add_unique(out, literal ? k->channel() : redis_glob(*k));
  }
  return out;
}

std::vector<std::string> redis_setuser_args(const Grant& g, std::string_view password) {
  // reset: off, no password, no keys, no channels, no commands, no selectors.
  std::vector<std::string> a = {"reset", "on", "#" + sha256_hex(password), "resetkeys",
                                "resetchannels", "-@all", "+publish", "+ping",
                                "+unsubscribe", "+punsubscribe"};
  for (const auto& c : redis_channel_globs(g.publish)) a.push_back("&" + c);
  // Redis channel permissions do not tell PUBLISH from SUBSCRIBE; a selector does: the root
  // permissions publish on the capability globs, the selector subscribes on the interest globs.
  std::string sel = "(-@all +subscribe +psubscribe +unsubscribe +punsubscribe resetchannels";
  for (const auto& c : redis_channel_globs(g.subscribe)) sel += " &" + c;
  sel += ")";
  a.push_back(std::move(sel));
  return a;
}

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return hex(md, n);
}

std::string app_password(std::string_view secret, std::string_view app) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(app.data()), app.size(), md, &n);
  return hex(md, n);
}

// ---------------------------------------------------------------------------------------------
// Acl

struct Acl::Compiled {
  Grant grant;
  KeyTrie<char> publish;
  KeyTrie<char> subscribe;
  std::vector<Key> subscribe_keys;
};

Acl::Acl(AclConfig cfg) { set_config(std::move(cfg)); }

void Acl::set_config(AclConfig cfg) {
  cfg_ = std::move(cfg);
  limits_.clear();
  for (const auto& [app, pats] : cfg_.limits) {
    auto& v = limits_[app];
    for (const auto& p : pats)
      if (auto k = Key::parse(p)) v.push_back(std::move(*k));
  }
  enforcing_.store(cfg_.mode == AclMode::kEnforce);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

std::shared_ptr<const Acl::Compiled> Acl::compile(const Grant& g) const {
  auto c = std::make_shared<Compiled>();
  c->grant = g;
  for (const auto& p : g.publish)
    if (auto k = Key::parse(p)) c->publish.insert(*k, 1);
  for (const auto& s : g.subscribe)
    if (auto k = Key::parse(s)) {
      c->subscribe.insert(*k, 1);
      c->subscribe_keys.push_back(std::move(*k));
    }
  return c;
}

std::shared_ptr<const Acl::Compiled> Acl::find(const std::string& app) const {
  {
    std::shared_lock lock(mu_);
    if (revoked_.count(app)) return nullptr;
    auto it = grants_.find(app);
    if (it != grants_.end()) return it->second;
  }
  // No grant yet: what every app needs to register. Compiled per call; DUE caches its answers.
  return compile(coordination_grant(app));
}

Grant Acl::constrain(const Grant& g) {
  auto lim = limits_.find(g.app);
  if (lim == limits_.end()) return g;
  const Grant base = coordination_grant(g.app);
  auto keep = [&](const std::vector<std::string>& from, const std::vector<std::string>& always,
                  std::vector<std::string>& to) {
    for (const auto& p : from) {
      bool ok = std::find(always.begin(), always.end(), p) != always.end();
      if (!ok) {
        auto k = Key::parse(p);
        for (const auto& l : lim->second)
          if (k && l.covers(*k)) ok = true;
      }
      if (ok) {
        to.push_back(p);
      } else {
        uint64_t n = limited_.fetch_add(1, std::memory_order_relaxed) + 1;
        SDN_LOG_RATELIMITED(spdlog::level::warn,
                            "acl: app '{}' registered '{}', outside its limit in [acl] limits: "
                            "not granted (data.acl.limited = {})",
                            g.app, p, n);
      }
    }
  };
  Grant out;
  out.app = g.app;
  keep(g.publish, base.publish, out.publish);
  keep(g.subscribe, base.subscribe, out.subscribe);
  return out;
}

bool Acl::set_grant(const Grant& g0) {
  const Grant g = constrain(g0);
  auto c = compile(g);
  std::unique_lock lock(mu_);
  if (revoked_.count(g.app)) return false;
  grants_[g.app] = std::move(c);
  version_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

bool Acl::add_grant(const Grant& g0) {
  const Grant g = constrain(g0);
  std::unique_lock lock(mu_);
  if (revoked_.count(g.app)) return false;
  Grant merged = g;
  if (auto it = grants_.find(g.app); it != grants_.end()) {
    merged = it->second->grant;
    merge_grant(merged, g);
  }
  grants_[g.app] = compile(merged);
  version_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void Acl::revoke(const std::string& app) {
  std::unique_lock lock(mu_);
  revoked_.insert(app);
  grants_.erase(app);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void Acl::restore(const std::string& app) {
  std::unique_lock lock(mu_);
  revoked_.erase(app);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

bool Acl::revoked(const std::string& app) const {
  std::shared_lock lock(mu_);
  return revoked_.count(app) > 0;
}

std::set<std::string> Acl::revoked_apps() const {
  std::shared_lock lock(mu_);
  return revoked_;
}

bool Acl::may_publish(const std::string& app, const Key& concrete) const {
  auto c = find(app);
  return c && c->publish.any(concrete);
}

bool Acl::may_subscribe(const std::string& app, const Key& pattern) const {
  auto c = find(app);
  if (!c) return false;
  for (const auto& k : c->subscribe_keys)
    if (k.covers(pattern)) return true;
  return false;
}

bool Acl::may_receive(const std::string& app, const Key& concrete) const {
  auto c = find(app);
  return c && c->subscribe.any(concrete);
}

void Acl::deny_publish(const std::string& app, std::string_view key) {
  uint64_t n = denied_publish_.fetch_add(1, std::memory_order_relaxed) + 1;
  SDN_LOG_RATELIMITED(spdlog::level::warn,
                      "acl: app '{}' may not publish '{}'{} (data.acl.denied_publish = {})", app,
                      key, revoked(app) ? " (revoked)" : "", n);
}

void Acl::deny_subscribe(const std::string& app, std::string_view pattern) {
  uint64_t n = denied_subscribe_.fetch_add(1, std::memory_order_relaxed) + 1;
  SDN_LOG_RATELIMITED(spdlog::level::warn,
                      "acl: app '{}' may not subscribe to '{}'{} (data.acl.denied_subscribe = {})",
                      app, pattern, revoked(app) ? " (revoked)" : "", n);
}

void Acl::deny_delivery(const std::string& app, std::string_view key) {
  uint64_t n = denied_delivery_.fetch_add(1, std::memory_order_relaxed) + 1;
  SDN_LOG_RATELIMITED(spdlog::level::info,
                      "acl: a record on '{}' not delivered to app '{}' (outside its grant now; "
                      "data.acl.denied_delivery = {})",
                      key, app, n);
}

std::optional<Grant> Acl::grant(const std::string& app) const {
  auto c = find(app);
  if (!c) return std::nullopt;
  return c->grant;
}

AclStats Acl::stats() const {
  AclStats s;
  s.denied_publish = denied_publish_.load(std::memory_order_relaxed);
  s.denied_subscribe = denied_subscribe_.load(std::memory_order_relaxed);
  s.denied_delivery = denied_delivery_.load(std::memory_order_relaxed);
  s.limited = limited_.load(std::memory_order_relaxed);
  std::shared_lock lock(mu_);
  s.grants = grants_.size();
  s.revoked = revoked_.size();
  return s;
}

Json Acl::state() const {
  AclStats s = stats();
  Json grants = Json::array();
  std::vector<std::string> revoked;
  {
    std::shared_lock lock(mu_);
    for (const auto& [app, c] : grants_) grants.push_back(grant_json(c->grant));
    revoked.assign(revoked_.begin(), revoked_.end());
  }
  return Json{{"mode", enforcing() ? "enforce" : "off"},
              {"denied", s.denied_publish + s.denied_subscribe},
              {"denied_publish", s.denied_publish},
              {"denied_subscribe", s.denied_subscribe},
              {"denied_delivery", s.denied_delivery},
              {"limited", s.limited},
              {"redis_users", cfg_.redis_users},
              {"grants", std::move(grants)},
              {"revoked", std::move(revoked)}};
}

}  // namespace sdn::data
