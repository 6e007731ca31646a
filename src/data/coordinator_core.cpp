// CoordinatorCore (coordinator.hpp): registrations, heartbeats and goodbyes in; assignment sets,
// hellos and checkpoints out, as pure functions of (record, now). No clock, no threads, no I/O:
// the runner in coordinator.cpp supplies all three, tests supply a manual clock.
#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "data/coordinator.hpp"

namespace sdn::data {
namespace {

// Caps on what the wire can make us hold (STYLE.md: cap anything sized by the wire).
constexpr std::size_t kMaxInstances = 4096;
constexpr std::size_t kMaxKeysPerRegistration = 1024;
constexpr int64_t kMaxHeartbeatMs = 3'600'000;
// At most one hello per second in answer to heartbeats from instances we do not know.
constexpr int64_t kHelloGapNs = 1'000'000'000;

constexpr std::string_view kKindRegister = "register";
constexpr std::string_view kKindHeartbeat = "heartbeat";
constexpr std::string_view kKindGoodbye = "goodbye";

using InstanceId = std::pair<std::string, std::string>;  // (app id, instance)

struct Entry {
  InstanceInfo info;
  std::vector<Key> interest_keys;     // parsed info.interests, same order
  std::vector<Key> capability_keys;   // parsed info.capabilities, app id stamped
  uint64_t order = 0;                 // registration order: tie-break for "registered longest ago"
  std::optional<AssignmentSet> pushed;  // the set last published to this instance
};

// A registration as it arrives, before it touches the registry.
struct Registration {
  unsigned roles = 0;
  std::vector<Interest> interests;
  std::vector<Capability> capabilities;
  std::vector<Key> interest_keys;
  std::vector<Key> capability_keys;
  std::chrono::milliseconds heartbeat_interval{1000};
};

bool same_assignments(const std::vector<Assignment>& a, const std::vector<Assignment>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].freq != b[i].freq || a[i].consumers != b[i].consumers)
      return false;
  }
  return true;
}

bool same_set(const AssignmentSet& a, const AssignmentSet& b) {
  return a.active == b.active && same_assignments(a.items, b.items);
}

bool same_registration(const Entry& e, const Registration& r) {
  auto same_i = [](const Interest& x, const Interest& y) {
    return x.key == y.key && x.freq == y.freq;
  };
  auto same_c = [](const Capability& x, const Capability& y) {
    return x.key == y.key && x.freq == y.freq && x.index == y.index;
  };
  return e.info.roles == r.roles && e.info.heartbeat_interval == r.heartbeat_interval &&
         std::equal(e.info.interests.begin(), e.info.interests.end(), r.interests.begin(),
                    r.interests.end(), same_i) &&
         std::equal(e.info.capabilities.begin(), e.info.capabilities.end(),
                    r.capabilities.begin(), r.capabilities.end(), same_c);
}

// `freq`, when present, is a number > 0 (data-wire.md "Registration").
Expected<std::optional<double>, std::string> parse_freq(const Json& item) {
  auto it = item.find("freq");
  if (it == item.end() || it->is_null()) return std::optional<double>{};
  if (!it->is_number()) return unexpected(std::string("freq is not a number"));
  double f = it->get<double>();
  if (!std::isfinite(f) || f <= 0) return unexpected(fmt::format("freq {} is not > 0", f));
  return std::optional<double>{f};
}

Expected<std::string, std::string> parse_key_field(const Json& item) {
  auto it = item.find("key");
  if (it == item.end() || !it->is_string()) return unexpected(std::string("no key string"));
  return it->get<std::string>();
}

Expected<Registration, std::string> parse_registration(const Json& j, const std::string& app,
                                                       const std::string& instance) {
  if (!j.is_object()) return unexpected(std::string("registration is not an object"));
  auto str_field = [&](const char* name) -> std::optional<std::string> {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (str_field("app_id") != app)
    return unexpected(fmt::format("app_id does not match the key's app '{}'", app));
  if (str_field("instance") != instance)
    return unexpected(fmt::format("instance does not match the key's instance '{}'", instance));

  Registration reg;
  if (auto it = j.find("roles"); it != j.end()) {
    if (!it->is_array()) return unexpected(std::string("roles is not an array"));
    for (const auto& r : *it) {
      if (r == "producer") reg.roles |= kProducer;
      else if (r == "consumer") reg.roles |= kConsumer;
      else return unexpected(fmt::format("unknown role {}", r.dump()));
    }
  }
  if (auto it = j.find("heartbeat_ms"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
        it->get<int64_t>() > kMaxHeartbeatMs)
      return unexpected(fmt::format("heartbeat_ms is not an integer in 1..{}", kMaxHeartbeatMs));
    reg.heartbeat_interval = std::chrono::milliseconds(it->get<int64_t>());
  }
  auto list = [&](const char* name) -> Expected<const Json*, std::string> {
    static const Json kEmpty = Json::array();
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return &kEmpty;
    if (!it->is_array()) return unexpected(fmt::format("{} is not an array", name));
    if (it->size() > kMaxKeysPerRegistration)
      return unexpected(fmt::format("more than {} {}", kMaxKeysPerRegistration, name));
    return &*it;
  };

  auto interests = list("interests");
  if (!interests) return unexpected(interests.error());
  for (const auto& item : **interests) {
    if (!item.is_object()) return unexpected(std::string("an interest is not an object"));
    auto text = parse_key_field(item);
    if (!text) return unexpected("interest: " + text.error());
    auto key = Key::parse(*text);
    if (!key) return unexpected("interest: " + key.error());
    auto freq = parse_freq(item);
    if (!freq) return unexpected(fmt::format("interest '{}': {}", *text, freq.error()));
    reg.interests.push_back(Interest{*text, *freq});
    reg.interest_keys.push_back(std::move(*key));
  }

  auto caps = list("capabilities");
  if (!caps) return unexpected(caps.error());
  for (const auto& item : **caps) {
    if (!item.is_object()) return unexpected(std::string("a capability is not an object"));
    auto text = parse_key_field(item);
    if (!text) return unexpected("capability: " + text.error());
    auto key = Key::parse(*text);
    if (!key) return unexpected("capability: " + key.error());
    // A capability names keys this app writes, and DUE stamps the app's own id on every write.
    if (key->app_id().empty()) *key = key->with_app(app);
    if (key->app_id() != app)
      return unexpected(fmt::format("capability '{}' names another app id", *text));
    auto freq = parse_freq(item);
    if (!freq) return unexpected(fmt::format("capability '{}': {}", *text, freq.error()));
    bool index = false;
    if (auto it = item.find("index"); it != item.end()) {
      if (!it->is_boolean()) return unexpected(fmt::format("capability '{}': index is not a "
                                                           "boolean", *text));
      index = it->get<bool>();
    }
    reg.capabilities.push_back(Capability{*text, *freq, index});
    reg.capability_keys.push_back(std::move(*key));
  }
  return reg;
}

Json registration_json(const InstanceInfo& info) {
  Json roles = Json::array();
  if (info.roles & kProducer) roles.push_back("producer");
  if (info.roles & kConsumer) roles.push_back("consumer");
  Json interests = Json::array();
  for (const auto& i : info.interests) {
    Json o = {{"key", i.key}};
    if (i.freq) o["freq"] = *i.freq;
    interests.push_back(std::move(o));
  }
  Json caps = Json::array();
  for (const auto& c : info.capabilities) {
    Json o = {{"key", c.key}};
    if (c.freq) o["freq"] = *c.freq;
    if (c.index) o["index"] = true;
    caps.push_back(std::move(o));
  }
  return Json{{"app_id", info.app_id},
              {"instance", info.instance},
              {"roles", std::move(roles)},
              {"interests", std::move(interests)},
              {"capabilities", std::move(caps)},
              {"heartbeat_ms", info.heartbeat_interval.count()}};
}

Json set_json(const AssignmentSet& s) {
  Json items = Json::array();
  for (const auto& a : s.items) {
    Json o = {{"key", a.key}};
    if (a.freq) o["freq"] = *a.freq;
    o["consumers"] = a.consumers;
    items.push_back(std::move(o));
  }
  return Json{{"epoch", s.epoch}, {"active", s.active}, {"assignments", std::move(items)}};
}

std::optional<AssignmentSet> parse_set(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  AssignmentSet s;
  auto epoch = j.find("epoch");
  auto active = j.find("active");
  auto items = j.find("assignments");
  if (epoch == j.end() || !epoch->is_number_unsigned() || active == j.end() ||
      !active->is_boolean() || items == j.end() || !items->is_array())
    return std::nullopt;
  s.epoch = epoch->get<uint64_t>();
  s.active = active->get<bool>();
  for (const auto& item : *items) {
    if (!item.is_object()) return std::nullopt;
    auto key = parse_key_field(item);
    auto freq = parse_freq(item);
    auto consumers = item.find("consumers");
    if (!key || !freq || consumers == item.end() || !consumers->is_array()) return std::nullopt;
    Assignment a{*key, *freq, {}};
    for (const auto& c : *consumers) {
      if (!c.is_string()) return std::nullopt;
      a.consumers.push_back(c.get<std::string>());
    }
    s.items.push_back(std::move(a));
  }
  return s;
}

Json unsatisfied_json(const Unsatisfied& u) {
  Json o = {{"consumer", u.consumer}, {"key", u.key}, {"producer", u.producer}};
  if (u.wanted) o["wanted"] = *u.wanted;
  if (u.capped) o["capped"] = *u.capped;
  return o;
}

}  // namespace

struct CoordinatorCore::Impl {
  CoordinatorConfig cfg;
  std::map<InstanceId, Entry> instances;
  std::vector<Unsatisfied> unsatisfied;
  uint64_t epoch = 0;
  uint64_t next_order = 0;
  int64_t started_ns = 0;
  std::optional<int64_t> last_hello_ns;
  std::optional<int64_t> last_checkpoint_ns;
  std::set<std::string> revoked;  // apps the operator revoked: their records are ignored
  uint64_t ignored_revoked = 0;

  // Epochs only grow, also across restarts that lost the checkpoint: each bump is at least the
  // wall clock in milliseconds (a hybrid logical clock), so a fresh Coordinator's sets are not
  // taken for stale ones by DUEs holding a higher epoch from its predecessor.
  void bump(int64_t now_ns) {
    uint64_t floor = now_ns > 0 ? static_cast<uint64_t>(now_ns / 1'000'000) : 0;
    epoch = std::max(epoch + 1, floor);
  }

  int64_t offline_after_ns(const Entry& e) const {
    return static_cast<int64_t>(std::max(cfg.missed_beats, 1)) *
           std::chrono::duration_cast<std::chrono::nanoseconds>(e.info.heartbeat_interval).count();
  }

  Publication hello(int64_t now_ns) {
    last_hello_ns = now_ns;
    // "instance" is the Coordinator's DUE instance; the runner fills it in (the core has none).
    return Publication{std::string(keys::kCoordinatorHello),
                       Json{{"instance", ""}, {"started_ns", started_ns}}, false};
  }

  Publication checkpoint(int64_t now_ns, const Json& state) {
    last_checkpoint_ns = now_ns;
    return Publication{std::string(keys::kCoordinatorState), state, true};
  }

  // Rule 4: the active of each app id stays until it goes offline or leaves; then the online
  // instance registered longest ago takes over. Returns whether any active flag changed.
  bool select_actives() {
    bool changed = false;
    std::map<std::string, std::vector<Entry*>> by_app;
    for (auto& [id, e] : instances) {
      if (e.info.status != InstanceStatus::kOnline) {
        if (e.info.active) {
          e.info.active = false;
          changed = true;
        }
        continue;
      }
      by_app[id.first].push_back(&e);
    }
    for (auto& [app, list] : by_app) {
      std::sort(list.begin(), list.end(), [](const Entry* a, const Entry* b) {
        return std::tie(a->info.registered_ns, a->order) <
               std::tie(b->info.registered_ns, b->order);
      });
      Entry* active = nullptr;
      for (Entry* e : list) {
        if (e->info.active && !active) active = e;
        else if (e->info.active) {  // two actives cannot happen; keep the senior one
          e->info.active = false;
          changed = true;
        }
      }
      if (!active) {
        list.front()->info.active = true;
        changed = true;
      }
    }
    return changed;
  }

  // Rules 1-3 over the online instances: the assignment list of each app id (from its active's
  // capabilities) and the unsatisfied interests.
  std::map<std::string, std::vector<Assignment>> match() {
    struct Want {
      const std::string* consumer;
      const Interest* interest;
      const Key* key;
    };
    std::vector<Want> wants;
    std::vector<const Entry*> actives;
    for (const auto& [id, e] : instances) {
      if (e.info.status != InstanceStatus::kOnline) continue;
      for (std::size_t i = 0; i < e.info.interests.size(); ++i)
        wants.push_back(Want{&id.first, &e.info.interests[i], &e.interest_keys[i]});
      if (e.info.active) actives.push_back(&e);
    }

    std::map<std::string, std::vector<Assignment>> lists;
    for (const Entry* p : actives) {
      auto& items = lists[p->info.app_id];
      for (std::size_t c = 0; c < p->info.capabilities.size(); ++c) {
        const Key& cap = p->capability_keys[c];
        std::set<std::string> consumers;
        bool unpaced = false;
        double highest = 0;
        for (const Want& w : wants) {
          if (!w.key->intersects(cap)) continue;
          consumers.insert(*w.consumer);
          if (w.interest->freq) highest = std::max(highest, *w.interest->freq);
          else unpaced = true;  // rule 2: one interest without freq wants every value
        }
        if (consumers.empty()) continue;
        std::optional<double> freq;
        if (!unpaced) freq = highest;
        if (const auto& capf = p->info.capabilities[c].freq) freq = freq ? std::min(*freq, *capf)
                                                                         : *capf;
        items.push_back(Assignment{cap.channel(), freq, {consumers.begin(), consumers.end()}});
      }
    }

    // Rule 3. An interest without freq wants every value produced, which a rate-limited
    // producer still delivers: it is only reported when nothing produces it at all.
    std::set<std::tuple<std::string, std::string, std::optional<double>, std::optional<double>,
                        std::string>>
        found;
    for (const Want& w : wants) {
      bool matched = false;
      for (const Entry* p : actives) {
        for (std::size_t c = 0; c < p->info.capabilities.size(); ++c) {
          if (!w.key->intersects(p->capability_keys[c])) continue;
          matched = true;
          const auto& capf = p->info.capabilities[c].freq;
          if (w.interest->freq && capf && *w.interest->freq > *capf)
            found.emplace(*w.consumer, w.interest->key, w.interest->freq, capf, p->info.app_id);
        }
      }
      if (!matched)
        found.emplace(*w.consumer, w.interest->key, w.interest->freq, std::nullopt, "");
    }
    unsatisfied.clear();
    for (const auto& [consumer, key, wanted, capped, producer] : found)
      unsatisfied.push_back(Unsatisfied{consumer, key, wanted, capped, producer});
    return lists;
  }

  // Recomputes everything after `changed` (something joined, left, went silent or re-registered
  // differently); publishes the sets that differ from what each online instance last got, plus
  // `force` (an instance that just registered gets its set even when it is unchanged).
  void recompute(int64_t now_ns, bool changed, std::vector<Publication>& out,
                 const InstanceId* force = nullptr) {
    changed = select_actives() || changed;
    auto lists = match();

    std::vector<std::pair<Entry*, AssignmentSet>> fresh;
    for (auto& [id, e] : instances) {
      if (e.info.status != InstanceStatus::kOnline) continue;
      AssignmentSet s;
      s.active = e.info.active;
      if (auto it = lists.find(id.first); it != lists.end()) s.items = it->second;
      if (!e.pushed || !same_set(*e.pushed, s)) fresh.emplace_back(&e, std::move(s));
    }
    if (!fresh.empty()) changed = true;
    if (changed) bump(now_ns);
    std::set<const Entry*> pushed_now;
    for (auto& [e, s] : fresh) {
      s.epoch = epoch;
      e->pushed = std::move(s);
      pushed_now.insert(e);
    }
    for (auto& [id, e] : instances) {
      if (pushed_now.count(&e) || (force && *force == id && e.pushed)) {
        out.push_back(
            Publication{keys::assignment(id.first, id.second), set_json(*e.pushed), true});
      }
    }
    if (changed) out.push_back(checkpoint(now_ns, state()));
  }

  // Makes room for one more instance: drops the offline instance seen longest ago.
  bool make_room() {
    if (instances.size() < kMaxInstances) return true;
    auto victim = instances.end();
    for (auto it = instances.begin(); it != instances.end(); ++it) {
      const auto& info = it->second.info;
      if (info.status == InstanceStatus::kOnline) continue;
      if (victim == instances.end() || info.last_seen_ns < victim->second.info.last_seen_ns)
        victim = it;
    }
    if (victim == instances.end()) return false;
    instances.erase(victim);
    return true;
  }

  std::vector<const Entry*> by_order() const {
    std::vector<const Entry*> v;
    for (const auto& [id, e] : instances) v.push_back(&e);
    std::sort(v.begin(), v.end(),
              [](const Entry* a, const Entry* b) { return a->order < b->order; });
    return v;
  }

  Json state() const {
    std::set<std::string> apps;
    Json insts = Json::array();
    Json sets = Json::array();
    for (const Entry* e : by_order()) {
      const auto& i = e->info;
      apps.insert(i.app_id);
      insts.push_back(Json{{"app_id", i.app_id},
                           {"instance", i.instance},
                           {"status", i.status == InstanceStatus::kOnline ? "online" : "offline"},
                           {"active", i.active},
                           {"registered_ns", i.registered_ns},
                           {"last_seen_ns", i.last_seen_ns},
                           {"registration", registration_json(i)}});
      if (e->pushed) {
        Json s = set_json(*e->pushed);
        s["app_id"] = i.app_id;
        s["instance"] = i.instance;
        sets.push_back(std::move(s));
      }
    }
    Json uns = Json::array();
    for (const auto& u : unsatisfied) uns.push_back(unsatisfied_json(u));
    return Json{{"epoch", epoch},
                {"apps", Json(std::vector<std::string>(apps.begin(), apps.end()))},
                {"instances", std::move(insts)},
                {"assignments", std::move(sets)},
                {"unsatisfied", std::move(uns)},
                {"revoked", Json(std::vector<std::string>(revoked.begin(), revoked.end()))}};
  }

  // Restores what a checkpoint holds; entries that do not parse are skipped (and logged), the
  // rest still restored: a partial registry heals through the hello's re-registrations.
  void restore(const Json& cp, int64_t now_ns) {
    if (!cp.is_object()) {
      spdlog::warn("coordinator: checkpoint is not an object; starting empty");
      return;
    }
    if (auto it = cp.find("epoch"); it != cp.end() && it->is_number_unsigned())
      epoch = it->get<uint64_t>();
    if (auto it = cp.find("revoked"); it != cp.end() && it->is_array())
      for (const auto& a : *it)
        if (a.is_string()) revoked.insert(a.get<std::string>());
    auto insts = cp.find("instances");
    if (insts == cp.end() || !insts->is_array()) return;
    std::map<InstanceId, AssignmentSet> sets;
    if (auto it = cp.find("assignments"); it != cp.end() && it->is_array()) {
      for (const auto& s : *it) {
        if (!s.is_object() || !s.contains("app_id") || !s.contains("instance") ||
            !s["app_id"].is_string() || !s["instance"].is_string())
          continue;
        if (auto set = parse_set(s))
          sets[{s["app_id"].get<std::string>(), s["instance"].get<std::string>()}] = *set;
      }
    }
    std::size_t skipped = 0;
    for (const auto& j : *insts) {
      if (instances.size() >= kMaxInstances) break;
      auto bad = [&] { ++skipped; };
      if (!j.is_object() || !j.contains("registration")) { bad(); continue; }
      const Json& rj = j["registration"];
      auto app = rj.is_object() && rj.contains("app_id") && rj["app_id"].is_string()
                     ? rj["app_id"].get<std::string>() : std::string();
      auto inst = rj.is_object() && rj.contains("instance") && rj["instance"].is_string()
                      ? rj["instance"].get<std::string>() : std::string();
      auto reg = parse_registration(rj, app, inst);
      if (app.empty() || inst.empty() || !reg) { bad(); continue; }
      if (revoked.count(app)) continue;
      Entry e;
      e.info.app_id = app;
      e.info.instance = inst;
      e.info.roles = reg->roles;
      e.info.interests = std::move(reg->interests);
      e.info.capabilities = std::move(reg->capabilities);
      e.info.heartbeat_interval = reg->heartbeat_interval;
      e.interest_keys = std::move(reg->interest_keys);
      e.capability_keys = std::move(reg->capability_keys);
      auto num = [&](const char* name) {
        auto it = j.find(name);
        return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : now_ns;
      };
      e.info.registered_ns = num("registered_ns");
      e.info.last_seen_ns = now_ns;  // a fresh `missed_beats` window from now
      auto status = j.find("status");
      e.info.status = status != j.end() && *status == "offline" ? InstanceStatus::kOffline
                                                                : InstanceStatus::kOnline;
      auto active = j.find("active");
      e.info.active = e.info.status == InstanceStatus::kOnline && active != j.end() &&
                      active->is_boolean() && active->get<bool>();
      e.order = next_order++;
      if (auto it = sets.find({app, inst}); it != sets.end()) e.pushed = it->second;
      instances[{app, inst}] = std::move(e);
    }
    if (skipped) spdlog::warn("coordinator: checkpoint: skipped {} unreadable instances", skipped);
  }
};

CoordinatorCore::CoordinatorCore(CoordinatorConfig cfg) : impl_(std::make_shared<Impl>()) {
  impl_->cfg = cfg;
}

std::vector<Publication> CoordinatorCore::start(int64_t now_ns, const Json* checkpoint) {
  std::vector<Publication> out;
  impl_->started_ns = now_ns;
  if (checkpoint) impl_->restore(*checkpoint, now_ns);
  out.push_back(impl_->hello(now_ns));
  // The restored sets are what the DUEs hold; only a difference (e.g. an active that the
  // checkpoint lists as offline) is published.
  impl_->recompute(now_ns, false, out);
  return out;
}

std::vector<Publication> CoordinatorCore::on_record(const Record& r, int64_t now_ns) {
  std::vector<Publication> out;
  auto key = Key::parse(r.key);
  if (!key) return out;  // the backends deliver concrete keys only; nothing of ours
  const auto& seg = key->segments();
  if (seg.size() != 5 || seg[0] != "sdnator" || seg[1] != "apps") return out;
  const std::string& kind = seg[4];
  if (kind != kKindRegister && kind != kKindHeartbeat && kind != kKindGoodbye)
    return out;  // assignment sets (ours) and anything newer than this Coordinator
  const std::string& app = seg[2];
  const std::string& instance = seg[3];
  auto reject = [&](std::string_view why) {
    ++malformed_;
    SDN_LOG_RATELIMITED(spdlog::level::warn, "coordinator: ignoring {} ({}): {}", r.key,
                        r.instance, why);
    return out;
  };
  if (key->app_id() != app) return reject("the key's app id is not the app in its path");
  if (!r.value.is_json() || !r.value.json().is_object()) return reject("value is not an object");
  const Json& v = r.value.json();

  Impl& m = *impl_;
  if (m.revoked.count(app)) {
    // A revoked app is out of the fabric: it neither registers nor shows up as a consumer.
    ++m.ignored_revoked;
    SDN_LOG_RATELIMITED(spdlog::level::warn, "coordinator: ignoring {} from revoked app '{}'",
                        r.key, app);
    return out;
  }
  InstanceId id{app, instance};
  auto it = m.instances.find(id);

  if (kind == kKindGoodbye) {
    if (it == m.instances.end()) return out;
    m.instances.erase(it);
    m.recompute(now_ns, true, out);
    return out;
  }

  if (kind == kKindHeartbeat) {
    std::optional<std::chrono::milliseconds> interval;
    if (auto hb = v.find("heartbeat_ms"); hb != v.end()) {
      if (!hb->is_number_integer() || hb->get<int64_t>() <= 0 ||
          hb->get<int64_t>() > kMaxHeartbeatMs)
        return reject("heartbeat_ms is not an integer in range");
      interval = std::chrono::milliseconds(hb->get<int64_t>());
    }
    if (it == m.instances.end()) {
      // An instance we do not know (we restarted, or it registered while we were away): a
      // hello makes every DUE re-register.
      if (!m.last_hello_ns || now_ns - *m.last_hello_ns >= kHelloGapNs)
        out.push_back(m.hello(now_ns));
      return out;
    }
    Entry& e = it->second;
    e.info.last_seen_ns = now_ns;
    if (interval) e.info.heartbeat_interval = *interval;
    if (e.info.status == InstanceStatus::kOffline) {
      // Back from silence: a standby from now on (unless it is alone). It gets its set even when
      // that did not change, since it may have missed the last one.
      e.info.status = InstanceStatus::kOnline;
      m.recompute(now_ns, true, out, &id);
    }
    return out;
  }

  // Registration.
  auto reg = parse_registration(v, app, instance);
  if (!reg) return reject(reg.error());
  bool changed = true;
  if (it == m.instances.end()) {
    if (!m.make_room()) return reject("too many instances");
    Entry e;
    e.info.app_id = app;
    e.info.instance = instance;
    e.info.registered_ns = now_ns;
    e.order = m.next_order++;
    it = m.instances.emplace(id, std::move(e)).first;
  } else {
    changed = !same_registration(it->second, *reg) ||
              it->second.info.status == InstanceStatus::kOffline;
  }
  Entry& e = it->second;
  e.info.roles = reg->roles;
  e.info.interests = std::move(reg->interests);
  e.info.capabilities = std::move(reg->capabilities);
  e.info.heartbeat_interval = reg->heartbeat_interval;
  e.interest_keys = std::move(reg->interest_keys);
  e.capability_keys = std::move(reg->capability_keys);
  e.info.last_seen_ns = now_ns;
  e.info.status = InstanceStatus::kOnline;
  m.recompute(now_ns, changed, out, &id);
  return out;
}

std::vector<Publication> CoordinatorCore::tick(int64_t now_ns) {
  std::vector<Publication> out;
  Impl& m = *impl_;
  bool changed = false;
  for (auto& [id, e] : m.instances) {
    if (e.info.status != InstanceStatus::kOnline) continue;
    if (now_ns - e.info.last_seen_ns > m.offline_after_ns(e)) {
      e.info.status = InstanceStatus::kOffline;
      changed = true;
    }
  }
  if (changed) {
    m.recompute(now_ns, true, out);
  } else if (!m.last_checkpoint_ns ||
             now_ns - *m.last_checkpoint_ns >=
                 std::chrono::duration_cast<std::chrono::nanoseconds>(m.cfg.checkpoint_interval)
                     .count()) {
    out.push_back(m.checkpoint(now_ns, m.state()));
  }
  return out;
}

std::vector<Publication> CoordinatorCore::revoke(const std::string& app, int64_t now_ns) {
  std::vector<Publication> out;
  Impl& m = *impl_;
  m.revoked.insert(app);
  for (auto it = m.instances.begin(); it != m.instances.end();)
    it = it->first.first == app ? m.instances.erase(it) : std::next(it);
  m.recompute(now_ns, true, out);
  return out;
}

std::vector<Publication> CoordinatorCore::restore(const std::string& app, int64_t now_ns) {
  std::vector<Publication> out;
  Impl& m = *impl_;
  if (m.revoked.erase(app) == 0) return out;
  // Its instances come back by registering again: the hello asks every DUE to.
  out.push_back(m.hello(now_ns));
  out.push_back(m.checkpoint(now_ns, m.state()));
  return out;
}

std::set<std::string> CoordinatorCore::revoked() const { return impl_->revoked; }

std::map<std::string, Grant> CoordinatorCore::grants() const {
  std::map<std::string, Grant> out;
  for (const auto& [id, e] : impl_->instances) {
    Grant g = derive_grant(id.first, e.info.interests, e.info.capabilities);
    auto [it, fresh] = out.try_emplace(id.first, g);
    if (!fresh) merge_grant(it->second, g);
  }
  return out;
}

std::vector<InstanceInfo> CoordinatorCore::instances() const {
  std::vector<InstanceInfo> v;
  for (const Entry* e : impl_->by_order()) v.push_back(e->info);
  return v;
}

std::vector<std::string> CoordinatorCore::apps() const {
  std::set<std::string> apps;
  for (const auto& [id, e] : impl_->instances) apps.insert(id.first);
  return {apps.begin(), apps.end()};
}

std::optional<AssignmentSet> CoordinatorCore::assignment(const std::string& app_id,
                                                         const std::string& instance) const {
  auto it = impl_->instances.find({app_id, instance});
  if (it == impl_->instances.end() || it->second.info.status != InstanceStatus::kOnline)
    return std::nullopt;
  return it->second.pushed;
}

std::vector<Unsatisfied> CoordinatorCore::unsatisfied() const { return impl_->unsatisfied; }

Json CoordinatorCore::state() const { return impl_->state(); }

}  // namespace sdn::data
