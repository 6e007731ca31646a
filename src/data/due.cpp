// DUE (due.hpp): the client every app uses. Writes go to Data Updates and Data Archives without
// blocking; frequency-bound keys are paced (latest value wins inside an interval); registration,
// heartbeats and assignments follow docs/data-wire.md. Backends also owns the process's one timer
// thread, shared by all its Due clients.
#include "data/due.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace sdn::data {

// ---------------------------------------------------------------------------------------------
// Backends

struct Backends::Timers {
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::condition_variable cv;
  std::multimap<Clock::time_point, std::function<void()>> queue;
  bool stop = false;
  std::thread thread;

  Timers() {
    thread = std::thread([this] {
      std::unique_lock lock(mu);
      while (!stop) {
        if (queue.empty()) {
          cv.wait(lock);
          continue;
        }
        auto when = queue.begin()->first;
        if (Clock::now() < when) {
          cv.wait_until(lock, when);
          continue;
        }
        auto fn = std::move(queue.begin()->second);
        queue.erase(queue.begin());
        lock.unlock();
        fn();
        lock.lock();
      }
    });
  }
  ~Timers() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }
};

Backends::Backends(std::unique_ptr<Updates> updates, std::unique_ptr<Archive> archive)
    : updates_(std::move(updates)), archive_(std::move(archive)),
      timers_(std::make_unique<Timers>()) {}

Backends::~Backends() {
  timers_.reset();  // no timer runs once the backends start going away
  if (updates_) updates_->drain(std::chrono::milliseconds(1000));
  if (archive_) archive_->flush(std::chrono::milliseconds(5000));
}

void Backends::post_after(std::chrono::nanoseconds delay, std::function<void()> fn) {
  {
    std::lock_guard lock(timers_->mu);
    timers_->queue.emplace(Timers::Clock::now() + delay, std::move(fn));
  }
  timers_->cv.notify_all();
}

Expected<std::shared_ptr<Backends>, std::string> Backends::open(const DataConfig& cfg) {
  std::unique_ptr<Updates> updates;
  if (cfg.updates == "redis") {
    auto r = make_redis_updates(cfg.redis);
    if (!r) return unexpected("data updates: " + r.error());
    updates = std::move(*r);
  } else if (cfg.updates == "inproc") {
    updates = make_inproc_updates();
  } else {
    return unexpected(fmt::format("data updates: unknown backend '{}'", cfg.updates));
  }

  std::unique_ptr<Archive> archive;
  std::vector<std::string> notes;
  if (cfg.archive == "postgres") {
    auto a = open_postgres_archive(cfg.postgres);
    if (a) {
      archive = std::move(*a);
    } else if (cfg.archive_fallback) {
      std::string note = fmt::format("{}; falling back to the embedded SQLite archive at {}",
                                     a.error(), cfg.sqlite.path);
      spdlog::error("data archives: {}", note);
      notes.push_back(std::move(note));
      auto s = open_sqlite_archive(cfg.sqlite);
      if (!s) return unexpected("data archives: " + s.error());
      archive = std::move(*s);
    } else {
      return unexpected("data archives: " + a.error());
    }
  } else if (cfg.archive == "sqlite") {
    auto s = open_sqlite_archive(cfg.sqlite);
    if (!s) return unexpected("data archives: " + s.error());
    archive = std::move(*s);
  } else if (cfg.archive != "none") {
    return unexpected(fmt::format("data archives: unknown backend '{}'", cfg.archive));
  }
  auto b = std::make_shared<Backends>(std::move(updates), std::move(archive));
  for (auto& n : notes) b->add_note(std::move(n));
  b->acl().set_config(cfg.acl);
  return b;
}

// ---------------------------------------------------------------------------------------------
// Reserved keys

namespace keys {
std::string registration(std::string_view app, std::string_view inst) {
  return fmt::format("sdnator/apps/{}/{}/register@{}", app, inst, app);
}
std::string heartbeat(std::string_view app, std::string_view inst) {
  return fmt::format("sdnator/apps/{}/{}/heartbeat@{}", app, inst, app);
}
std::string goodbye(std::string_view app, std::string_view inst) {
  return fmt::format("sdnator/apps/{}/{}/goodbye@{}", app, inst, app);
}
std::string assignment(std::string_view app, std::string_view inst) {
  return fmt::format("sdnator/apps/{}/{}/assignment@{}", app, inst, kCoordinatorId);
}
}  // namespace keys

// ---------------------------------------------------------------------------------------------
// Due

namespace {

using Clock = std::chrono::steady_clock;

std::string random_uuid() {
  std::random_device rd;
  std::mt19937_64 g((uint64_t(rd()) << 32) ^ rd());
  uint64_t a = g(), b = g();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                     a & 0xffff, b >> 48, b & 0xffffffffffffULL);
}

}  // namespace

// One concrete key this client writes to: its parsed form, sequence counter and pacing state.
struct Topic {
  Key key;
  std::string channel;
  std::atomic<uint64_t> seq{0};
  // The last ACL answer for this key and the Acl::version() it was given at (0 = never asked).
  std::atomic<uint64_t> acl_version{0};
  std::atomic<bool> acl_ok{false};
  // Pacing (only touched when the key is frequency-bound).
  std::mutex mu;
  uint64_t freq_epoch = ~uint64_t{0};  // assignment epoch the cached freq belongs to
  std::optional<double> freq;
  Clock::time_point next_allowed{};
  std::shared_ptr<Record> pending;  // the latest value waiting for its slot
  unsigned pending_flags = 0;
};

// What a timer callback needs to know that its Due still exists, and what ~Due needs to wait for
// the callbacks already past that check: a callback counts itself in before it looks at `alive`,
// and ~Due clears `alive` before it waits for the count to reach zero (both sequentially
// consistent, so one of them always sees the other).
struct Life {
  std::atomic<bool> alive{true};
  std::atomic<int> inflight{0};
};
// The Life whose callback runs on this thread (a Due destroyed from inside its own callback must
// not wait for itself).
thread_local const Life* t_running_life = nullptr;

struct Due::Impl {
  Due* self;
  std::shared_ptr<Backends> backends;
  std::shared_ptr<Life> life = std::make_shared<Life>();

  // Wraps a timer callback so it runs only while this Due exists, and ~Due waits for it.
  template <class F>
  std::function<void()> guarded(F fn) {
    return [l = life, fn = std::move(fn)]() mutable {
      l->inflight.fetch_add(1);
      if (l->alive.load()) {
        const Life* prev = t_running_life;
        t_running_life = l.get();
        fn();
        t_running_life = prev;
      }
      l->inflight.fetch_sub(1);
    };
  }

  void kill() {
    life->alive.store(false);
    if (t_running_life == life.get()) return;
    while (life->inflight.load() > 0) std::this_thread::yield();
  }
  bool inited = false;
  unsigned roles = 0;
  std::vector<Interest> interests;
  std::vector<Capability> capabilities;

  // Topics by the text the app wrote ("a/b" and "a/b@app" are two aliases of one topic) and by
  // channel, so every alias shares one sequence counter and pacing state.
  std::shared_mutex topics_mu;
  std::unordered_map<std::string, std::shared_ptr<Topic>, StrHash, std::equal_to<>> topics;
  std::unordered_map<std::string, std::shared_ptr<Topic>> by_channel;
  static constexpr std::size_t kMaxTopics = 1 << 20;
  std::atomic<uint64_t> topics_reset{0};

  mutable std::mutex assign_mu;
  AssignmentSet assignment;
  std::string assignment_from;  // Coordinator instance that sent it
  KeyTrie<std::optional<double>> assigned;  // capability pattern -> freq
  std::atomic<uint64_t> assign_epoch{0};    // bumped on every accepted set (local counter)
  std::function<void(const AssignmentSet&)> on_assignment;

  std::vector<Subscription> internal_subs;
  uint64_t heartbeat_seq = 0;

  std::atomic<uint64_t> writes{0}, published{0}, archived{0}, coalesced{0}, rejected{0},
      heartbeats{0}, delivered{0}, acl_denied{0};

  // Publish check (docs/acl.md): one atomic compare on the steady path; the grant's trie is
  // walked again only after the grant changed.
  bool acl_allows(Topic& t) {
    Acl& acl = backends->acl();
    if (!acl.enforcing()) return true;
    const uint64_t v = acl.version();
    if (t.acl_version.load(std::memory_order_acquire) != v) {
      t.acl_ok.store(acl.may_publish(self->app_id_, t.key), std::memory_order_relaxed);
      t.acl_version.store(v, std::memory_order_release);
    }
    return t.acl_ok.load(std::memory_order_relaxed);
  }

  // Puts a record on the backends now.
  void emit(std::shared_ptr<Record> r, Topic& t, unsigned flags) {
    r->seq = t.seq.fetch_add(1, std::memory_order_relaxed) + 1;
    RecordPtr rp = std::move(r);
    backends->updates().publish(rp);
    published.fetch_add(1, std::memory_order_relaxed);
    Archive* a = backends->archive();
    if (a && !(flags & kPubOnly)) {
      a->append(rp);
      archived.fetch_add(1, std::memory_order_relaxed);
    }
    if (flags & kNoWait) {
      backends->updates().flush();
      if (a) a->kick();
    }
  }

  std::optional<double> freq_for(Topic& t) {
    uint64_t e = assign_epoch.load(std::memory_order_acquire);
    if (t.freq_epoch != e) {
      std::optional<double> best;
      {
        std::lock_guard lock(assign_mu);
        assigned.match(t.key, [&](const std::optional<double>& f) {
          if (f && *f > 0 && (!best || *f > *best)) best = f;
        });
      }
      t.freq = best;
      t.freq_epoch = e;
    }
    return t.freq;
  }

  void write_paced(std::shared_ptr<Record> r, const std::shared_ptr<Topic>& tp, unsigned flags) {
    Topic& t = *tp;
    std::unique_lock lock(t.mu);
    auto f = freq_for(t);
    if (!f) {
      lock.unlock();
      emit(std::move(r), t, flags);
      return;
    }
    auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / *f));
    auto now = Clock::now();
    if (!t.pending && now >= t.next_allowed) {
      t.next_allowed = now + interval;
      emit(std::move(r), t, flags);
      return;
    }
    if (t.pending) {
      coalesced.fetch_add(1, std::memory_order_relaxed);
      t.pending = std::move(r);
      t.pending_flags |= flags;
      return;
    }
    t.pending = std::move(r);
    t.pending_flags = flags;
    auto delay = t.next_allowed - now;
    std::weak_ptr<Topic> wt = tp;
    backends->post_after(delay, guarded([this, wt, interval] {
      auto tp2 = wt.lock();
      if (!tp2) return;
      std::lock_guard l2(tp2->mu);
      if (!tp2->pending) return;
      tp2->next_allowed = Clock::now() + interval;
      emit(std::move(tp2->pending), *tp2, tp2->pending_flags);
      tp2->pending.reset();
      tp2->pending_flags = 0;
    }));
  }

  Expected<std::shared_ptr<Topic>, std::string> topic(std::string_view key) {
    {
      std::shared_lock lock(topics_mu);
      auto it = topics.find(key);
      if (it != topics.end()) return it->second;
    }
    auto k = Key::parse_concrete(key);
    if (!k) return unexpected(k.error());
    if (k->app_id().empty()) {
      *k = k->with_app(self->app_id_);
    } else if (k->app_id() != self->app_id_) {
      return unexpected(fmt::format("key '{}' names app '{}'; this app is '{}'", key,
                                    k->app_id(), self->app_id_));
    }
    std::string channel = k->channel();
    std::unique_lock lock(topics_mu);
    if (topics.size() >= kMaxTopics) {
      // An app writing to ever new keys: forget the old ones (their sequence numbers restart at
      // 1, which subscribers see as a new producer run, not as a gap).
      topics.clear();
      by_channel.clear();
      topics_reset.fetch_add(1, std::memory_order_relaxed);
    }
    auto& t = by_channel[channel];
    if (!t) {
      t = std::make_shared<Topic>();
      t->channel = std::move(channel);
      t->key = std::move(*k);
    }
    return topics.emplace(std::string(key), t).first->second;
  }

  Expected<void, std::string> write(std::string_view key, Value value, unsigned flags) {
    if (!inited) {
      rejected.fetch_add(1, std::memory_order_relaxed);
      return unexpected(std::string("write before init()"));
    }
    auto t = topic(key);
    if (!t) {
      rejected.fetch_add(1, std::memory_order_relaxed);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "due[{}]: write refused: {}", self->app_id_,
                          t.error());
      return unexpected(t.error());
    }
    if (!acl_allows(**t)) {
      rejected.fetch_add(1, std::memory_order_relaxed);
      acl_denied.fetch_add(1, std::memory_order_relaxed);
      backends->acl().deny_publish(self->app_id_, (*t)->channel);
      return unexpected(fmt::format("access denied: app '{}' may not publish '{}'{}",
                                    self->app_id_, (*t)->channel,
                                    backends->acl().revoked(self->app_id_) ? " (revoked)"
                                                                           : " (not in its "
                                                                             "capabilities)"));
    }
    writes.fetch_add(1, std::memory_order_relaxed);
    auto r = std::make_shared<Record>();
    r->key = (*t)->channel;
    r->value = std::move(value);
    r->app_id = self->app_id_;
    r->instance = self->instance_;
    r->ts_ns = wall_ns();
    write_paced(std::move(r), *t, flags);
    return {};
  }

  Json registration_json() const {
    Json j;
    j["app_id"] = self->app_id_;
    j["instance"] = self->instance_;
    Json roles_j = Json::array();
    if (roles & kProducer) roles_j.push_back("producer");
    if (roles & kConsumer) roles_j.push_back("consumer");
    j["roles"] = roles_j;
    Json in = Json::array();
    for (const auto& i : interests) {
      Json e{{"key", i.key}};
      if (i.freq) e["freq"] = *i.freq;
      in.push_back(e);
    }
    j["interests"] = in;
    Json caps = Json::array();
    for (const auto& c : capabilities) {
      Json e{{"key", c.key}, {"index", c.index}};
      if (c.freq) e["freq"] = *c.freq;
      caps.push_back(e);
    }
    j["capabilities"] = caps;
    j["heartbeat_ms"] = self->cfg_.heartbeat_interval.count();
    j["pid"] = static_cast<int64_t>(::getpid());
    return j;
  }

  void send_registration() {
    (void)write(keys::registration(self->app_id_, self->instance_), registration_json(), kNoWait);
  }

  void heartbeat_loop() {
    if (!life->alive.load()) return;
    ++heartbeat_seq;
    Json hb{{"seq", heartbeat_seq}, {"heartbeat_ms", self->cfg_.heartbeat_interval.count()}};
    if (write(keys::heartbeat(self->app_id_, self->instance_), std::move(hb), kPubOnly | kNoWait))
      heartbeats.fetch_add(1, std::memory_order_relaxed);
    backends->post_after(self->cfg_.heartbeat_interval, guarded([this] { heartbeat_loop(); }));
  }

  void on_assignment_record(const RecordPtr& r) {
    if (!r->value.is_json()) return;
    const Json& j = r->value.json();
    AssignmentSet set;
    KeyTrie<std::optional<double>> trie;
    try {
      set.epoch = j.at("epoch").get<uint64_t>();
      set.active = j.value("active", true);
      for (const auto& a : j.at("assignments")) {
        Assignment as;
        as.key = a.at("key").get<std::string>();
        if (a.contains("freq") && a["freq"].is_number()) as.freq = a["freq"].get<double>();
        if (a.contains("consumers"))
          for (const auto& c : a["consumers"]) as.consumers.push_back(c.get<std::string>());
        auto k = Key::parse(as.key);
        if (!k) throw std::runtime_error(k.error());
        trie.insert(*k, as.freq);
        set.items.push_back(std::move(as));
      }
    } catch (const std::exception& e) {
      SDN_LOG_RATELIMITED(spdlog::level::warn, "due[{}]: malformed assignment ignored: {}",
                          self->app_id_, e.what());
      return;
    }
    std::function<void(const AssignmentSet&)> cb;
    {
      std::lock_guard lock(assign_mu);
      bool same_coordinator = r->instance == assignment_from;
      if (same_coordinator && set.epoch <= assignment.epoch && assignment.epoch != 0) return;
      assignment = set;
      assignment_from = r->instance;
      assigned = std::move(trie);
      assign_epoch.fetch_add(1, std::memory_order_acq_rel);
      cb = on_assignment;
    }
    if (cb) {
      backends->post_after(std::chrono::nanoseconds(0), guarded([cb, set] { cb(set); }));
    }
  }
};

Due::Due(std::shared_ptr<Backends> backends, DueConfig cfg)
    : backends_(std::move(backends)), cfg_(std::move(cfg)), impl_(std::make_unique<Impl>()) {
  impl_->self = this;
  impl_->backends = backends_;
  instance_ = cfg_.instance.empty() ? random_uuid() : cfg_.instance;
}

Due::~Due() {
  if (impl_->inited && cfg_.send_goodbye)
    (void)impl_->write(keys::goodbye(app_id_, instance_), Json::object(), kPubOnly | kNoWait);
  impl_->kill();  // no timer callback of this Due runs from here on
  impl_->internal_subs.clear();
  flush();
}

Expected<void, std::string> Due::init(std::string app_id, unsigned roles,
                                      std::vector<Interest> interests,
                                      std::vector<Capability> capabilities) {
  if (impl_->inited) return unexpected(std::string("init() called twice"));
  auto id = Key::parse_concrete(app_id);
  if (!id || id->segments().size() != 1 || !id->app_id().empty() || !id->specs().empty())
    return unexpected(fmt::format("bad app id '{}': one name of A-Z a-z 0-9 _ . : -", app_id));
  if (!Key::parse_concrete(instance_) || instance_.find('/') != std::string::npos)
    return unexpected(fmt::format("bad instance id '{}'", instance_));
  for (const auto& i : interests) {
    auto k = Key::parse(i.key);
    if (!k) return unexpected("interest: " + k.error());
    if (i.freq && !(*i.freq > 0)) return unexpected(fmt::format("interest '{}': freq must be > 0", i.key));
  }
  for (const auto& c : capabilities) {
    auto k = Key::parse(c.key);
    if (!k) return unexpected("capability: " + k.error());
    if (!k->app_id().empty() && k->app_id() != app_id)
      return unexpected(fmt::format("capability '{}': names app '{}', this app is '{}'", c.key,
                                    k->app_id(), app_id));
    if (c.freq && !(*c.freq > 0)) return unexpected(fmt::format("capability '{}': freq must be > 0", c.key));
  }
  // The grant is derived here, in this process, by the same function the Coordinator uses, so
  // that the app's first writes are not refused while its registration is on its way; the
  // Coordinator's view (and revocation) wins from then on.
  Acl& acl = backends_->acl();
  if (!acl.add_grant(derive_grant(app_id, interests, capabilities)) && acl.enforcing())
    return unexpected(fmt::format("access denied: app '{}' is revoked", app_id));
  app_id_ = std::move(app_id);
  impl_->roles = roles;
  impl_->interests = std::move(interests);
  impl_->capabilities = std::move(capabilities);
  impl_->inited = true;

  Impl* impl = impl_.get();
  auto sub = observe(keys::assignment(app_id_, instance_),
                     [impl](const RecordPtr& r) { impl->on_assignment_record(r); });
  if (!sub) return unexpected(sub.error());
  impl_->internal_subs.push_back(std::move(*sub));
  auto hello = observe(keys::kCoordinatorHello, [impl](const RecordPtr&) {
    // Re-register from the timer thread: the hello may arrive on a backend reader thread.
    impl->backends->post_after(std::chrono::nanoseconds(0),
                               impl->guarded([impl] { impl->send_registration(); }));
  });
  if (!hello) return unexpected(hello.error());
  impl_->internal_subs.push_back(std::move(*hello));

  impl_->send_registration();
  impl_->heartbeat_loop();
  return {};
}

Expected<void, std::string> Due::write(std::string_view key, Value value, unsigned flags) {
  return impl_->write(key, std::move(value), flags);
}

Due::Subscription::Subscription(Subscription&& o) noexcept : updates_(o.updates_), id_(o.id_) {
  o.updates_ = nullptr;
}
Due::Subscription& Due::Subscription::operator=(Subscription&& o) noexcept {
  if (this != &o) {
    cancel();
    updates_ = o.updates_;
    id_ = o.id_;
    o.updates_ = nullptr;
  }
  return *this;
}
Due::Subscription::~Subscription() { cancel(); }
void Due::Subscription::cancel() {
  if (updates_) updates_->unsubscribe(id_);
  updates_ = nullptr;
}

Expected<Due::Subscription, std::string> Due::observe(std::string_view pattern, Handler handler,
                                                      Executor executor) {
  auto k = Key::parse(pattern);
  if (!k) return unexpected(k.error());
  Acl& acl = backends_->acl();
  if (acl.enforcing() && !acl.may_subscribe(app_id_, *k)) {
    impl_->rejected.fetch_add(1, std::memory_order_relaxed);
    impl_->acl_denied.fetch_add(1, std::memory_order_relaxed);
    acl.deny_subscribe(app_id_, pattern);
    return unexpected(fmt::format("access denied: app '{}' may not subscribe to '{}'{}", app_id_,
                                  pattern,
                                  acl.revoked(app_id_) ? " (revoked)" : " (not in its interests)"));
  }
  // Delivery check: while the grant version is the one the subscription was allowed at, one
  // atomic compare; after a change (revocation, a narrower grant) the pattern is checked again
  // and, if no longer covered as a whole, each record's key against the grant.
  struct Guard {
    Acl* acl;
    std::string app;
    Key pattern;
    std::atomic<uint64_t> version{0};
    std::atomic<bool> whole{true};
    std::atomic<uint64_t>* denied;
  };
  auto guard = std::make_shared<Guard>();
  guard->acl = &acl;
  guard->app = app_id_;
  guard->pattern = *k;
  guard->version.store(acl.version());
  guard->denied = &impl_->acl_denied;
  auto* counter = &impl_->delivered;
  auto id = backends_->updates().subscribe(
      *k,
      [counter, guard, h = std::move(handler)](const RecordPtr& r) {
        Acl& a = *guard->acl;
        if (a.enforcing()) {
          const uint64_t v = a.version();
          if (guard->version.load(std::memory_order_acquire) != v) {
            guard->whole.store(a.may_subscribe(guard->app, guard->pattern),
                               std::memory_order_relaxed);
            guard->version.store(v, std::memory_order_release);
          }
          if (!guard->whole.load(std::memory_order_relaxed)) {
            auto rk = Key::parse(r->key);
            if (!rk || !a.may_receive(guard->app, *rk)) {
              guard->denied->fetch_add(1, std::memory_order_relaxed);
              a.deny_delivery(guard->app, r->key);
              return;
            }
          }
        }
        counter->fetch_add(1, std::memory_order_relaxed);
        h(r);
      },
      std::move(executor));
  // A shared backend may refuse the subscription itself (Redis: NOPERM from the app's ACL user).
  if (auto err = backends_->updates().subscribe_error(id)) {
    backends_->updates().unsubscribe(id);
    impl_->rejected.fetch_add(1, std::memory_order_relaxed);
    impl_->acl_denied.fetch_add(1, std::memory_order_relaxed);
    return unexpected(fmt::format("subscription to '{}' refused by {}: {}", pattern,
                                  backends_->updates().name(), *err));
  }
  return Subscription(&backends_->updates(), id);
}

Expected<std::vector<Record>, std::string> Due::get(const Query& q) {
  Archive* a = backends_->archive();
  if (!a) return unexpected(std::string("Data Archives are off (data.archive = \"none\")"));
  return a->query(q);
}

Expected<std::vector<Record>, std::string> Due::get(std::string_view key_or_pattern) {
  Query q;
  q.key = std::string(key_or_pattern);
  return get(q);
}

void Due::flush() {
  backends_->updates().flush();
  if (auto* a = backends_->archive()) a->kick();
}

bool Due::sync(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  bool ok = backends_->updates().drain(timeout);
  if (auto* a = backends_->archive()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    ok = a->flush(std::max(left, std::chrono::milliseconds(0))) && ok;
  }
  return ok;
}

bool Due::active() const {
  std::lock_guard lock(impl_->assign_mu);
  return impl_->assignment.active;
}

AssignmentSet Due::assignments() const {
  std::lock_guard lock(impl_->assign_mu);
  return impl_->assignment;
}

void Due::on_assignment(std::function<void(const AssignmentSet&)> cb) {
  std::lock_guard lock(impl_->assign_mu);
  impl_->on_assignment = std::move(cb);
}

std::optional<double> Due::assigned_freq(std::string_view key) const {
  auto k = Key::parse(key);
  if (!k) return std::nullopt;
  Key full = k->app_id().empty() ? k->with_app(app_id_) : *k;
  std::optional<double> best;
  std::lock_guard lock(impl_->assign_mu);
  impl_->assigned.match(full, [&](const std::optional<double>& f) {
    if (f && (!best || *f > *best)) best = f;
  });
  return best;
}

bool Due::wanted(std::string_view key) const {
  auto k = Key::parse(key);
  if (!k) return false;
  Key full = k->app_id().empty() ? k->with_app(app_id_) : *k;
  std::lock_guard lock(impl_->assign_mu);
  return impl_->assigned.any(full);
}

DueStats Due::stats() const {
  DueStats s;
  s.writes = impl_->writes.load();
  s.published = impl_->published.load();
  s.archived = impl_->archived.load();
  s.paced_coalesced = impl_->coalesced.load();
  s.rejected = impl_->rejected.load();
  s.heartbeats = impl_->heartbeats.load();
  s.delivered = impl_->delivered.load();
  s.acl_denied = impl_->acl_denied.load();
  return s;
}

}  // namespace sdn::data
