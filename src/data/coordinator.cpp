// Coordinator (coordinator.hpp): runs a CoordinatorCore on its own Due. Backend threads only
// queue the records seen on sdnator/apps/**; one thread feeds them to the core, runs the
// heartbeat checks and writes every publication, so sets and checkpoints leave in the order the
// core made them and a write that the in-process bus delivers straight back to us cannot
// deadlock on the core's lock.
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "data/coordinator.hpp"

namespace sdn::data {
namespace {

// Records waiting for the Coordinator thread; beyond this they are dropped and counted. A lost
// heartbeat costs nothing; a lost registration comes back through the hello that the instance's
// next heartbeat (from an unknown instance) triggers.
constexpr std::size_t kMaxQueued = 100000;

void append(std::vector<Publication>& to, std::vector<Publication>&& from) {
  for (auto& p : from) to.push_back(std::move(p));
}

}  // namespace

struct Coordinator::Impl {
  std::shared_ptr<Backends> backends;
  CoordinatorConfig cfg;
  DueConfig due_cfg;

  mutable std::mutex core_mu;  // guards core
  CoordinatorCore core;

  std::mutex q_mu;  // guards queue, stopping, dropped
  std::condition_variable q_cv;
  std::deque<RecordPtr> queue;
  bool stopping = false;
  bool poked = false;  // a revoke/restore waits in `control`
  uint64_t dropped = 0;

  std::unique_ptr<Due> due;
  Due::Subscription sub;
  std::thread thread;

  // Grants (docs/acl.md): what was last installed per app, locally and on Redis.
  std::mutex acl_mu;  // guards applied, admin, control
  std::map<std::string, Json> applied;
  std::unique_ptr<RedisAclAdmin> admin;
  std::deque<std::pair<bool, std::string>> control;  // (revoke?, app) for the core

  void install(const Grant& registered) {
    const Grant g = backends->acl().constrain(registered);
    Json j = grant_json(g);
    auto it = applied.find(g.app);
    if (it != applied.end() && it->second == j) return;
    // A revoked app gets nothing, and nothing is recorded as applied: otherwise, once restored,
    // the app would count as "gone" before its new registration arrives, and its fresh local
    // grant (Due::init) would be shrunk back to the coordination keys.
    if (!backends->acl().set_grant(g)) return;
    // The Coordinator itself runs on the admin connection: no Redis user of its own.
    if (admin && g.app != keys::kCoordinatorId) {
      if (auto r = admin->apply(g); !r) {
        SDN_LOG_RATELIMITED(spdlog::level::err, "coordinator: {}", r.error());
        return;  // tried again on the next change
      }
      spdlog::info("coordinator: redis user {} granted publish {} subscribe {}",
                   admin->user(g.app), g.publish.size(), g.subscribe.size());
    }
    applied[g.app] = std::move(j);
  }

  // Brings the grants in line with the registry: new or changed apps get their grant, apps no
  // longer registered shrink back to the coordination keys (they may register again).
  void sync_grants(const std::map<std::string, Grant>& grants) {
    std::lock_guard lock(acl_mu);
    for (const auto& [app, g] : grants) install(g);
    std::vector<std::string> gone;
    for (const auto& [app, j] : applied)
      if (!grants.count(app)) gone.push_back(app);
    for (const auto& app : gone)
      if (!backends->acl().revoked(app)) install(coordination_grant(app));
  }

  void enqueue(const RecordPtr& r) {
    {
      std::lock_guard lock(q_mu);
      if (queue.size() >= kMaxQueued) {
        ++dropped;
        SDN_LOG_RATELIMITED(spdlog::level::warn,
                            "coordinator: queue full ({} records), dropped {} so far", kMaxQueued,
                            dropped);
        return;
      }
      queue.push_back(r);
    }
    q_cv.notify_one();
  }

  // Called from start() and then only from the Coordinator thread.
  void write(std::vector<Publication>& pubs) {
    for (auto& p : pubs) {
      // The core has no instance id of its own; the hello names our DUE's.
      if (p.key == keys::kCoordinatorHello) p.value["instance"] = due->instance();
      unsigned flags = kNoWait | (p.archive ? 0u : unsigned{kPubOnly});
      if (auto w = due->write(p.key, Value(std::move(p.value)), flags); !w)
        SDN_LOG_RATELIMITED(spdlog::level::warn, "coordinator: cannot write {}: {}", p.key,
                            w.error());
    }
  }

  void run() {
    using Clock = std::chrono::steady_clock;
    auto next_tick = Clock::now() + cfg.check_interval;
    while (true) {
      std::deque<RecordPtr> batch;
      {
        std::unique_lock lock(q_mu);
        q_cv.wait_until(lock, next_tick, [&] { return stopping || poked || !queue.empty(); });
        if (stopping) return;
        poked = false;
        batch.swap(queue);
      }
      std::deque<std::pair<bool, std::string>> ctl;
      {
        std::lock_guard lock(acl_mu);
        ctl.swap(control);
      }
      std::vector<Publication> pubs;
      std::map<std::string, Grant> grants;
      {
        std::lock_guard lock(core_mu);
        for (const auto& [revoke, app] : ctl)
          append(pubs, revoke ? core.revoke(app, wall_ns()) : core.restore(app, wall_ns()));
        for (const auto& r : batch) append(pubs, core.on_record(*r, wall_ns()));
        if (Clock::now() >= next_tick) {
          append(pubs, core.tick(wall_ns()));
          next_tick = Clock::now() + cfg.check_interval;
        }
        if (!pubs.empty()) grants = core.grants();
      }
      // Grants first: an app that gets its assignment set can use what it registered.
      if (!pubs.empty()) sync_grants(grants);
      write(pubs);
    }
  }
};

Coordinator::Coordinator(std::shared_ptr<Backends> backends, CoordinatorConfig cfg,
                         DueConfig due_cfg)
    : impl_(std::make_unique<Impl>()) {
  impl_->backends = std::move(backends);
  impl_->cfg = cfg;
  impl_->due_cfg = std::move(due_cfg);
}

Coordinator::~Coordinator() { stop(); }

Expected<void, std::string> Coordinator::start() {
  Impl& m = *impl_;
  if (m.due) return unexpected(std::string("coordinator: already started"));
  // A Coordinator is an app like the others: it registers (no interests or capabilities of its
  // own, so no consumer can ever get its writes paced) and heartbeats.
  auto due = std::make_unique<Due>(m.backends, m.due_cfg);
  if (auto r = due->init(std::string(keys::kCoordinatorId), kProducer | kConsumer); !r)
    return unexpected("coordinator: " + r.error());

  std::optional<Json> checkpoint;
  if (m.backends->archive()) {
    Query q;
    q.key = std::string(keys::kCoordinatorState);
    q.latest = 1;
    auto recs = due->get(q);
    if (!recs) {
      spdlog::warn("coordinator: cannot read the last checkpoint ({}); starting from the "
                   "re-registrations alone",
                   recs.error());
    } else if (!recs->empty() && recs->back().value.is_json()) {
      checkpoint = recs->back().value.json();
    }
  }

  Impl* impl = impl_.get();
  auto sub = due->observe(keys::kAppsPattern, [impl](const RecordPtr& r) { impl->enqueue(r); });
  if (!sub) return unexpected("coordinator: " + sub.error());

  m.due = std::move(due);
  m.sub = std::move(*sub);
  {
    std::lock_guard lock(m.q_mu);
    m.stopping = false;
  }
  std::vector<Publication> pubs;
  {
    std::lock_guard lock(m.core_mu);
    m.core = CoordinatorCore(m.cfg);
    pubs = m.core.start(wall_ns(), checkpoint ? &*checkpoint : nullptr);
  }
  {
    // Grants: revocations restored from the checkpoint hold at once; on Redis, the apps named
    // in [acl] apps get users for their coordination keys, so that they can register.
    std::lock_guard lock(m.acl_mu);
    const AclConfig& acfg = m.backends->acl().config();
    if (acfg.redis_users) m.admin = std::make_unique<RedisAclAdmin>(acfg);
    std::set<std::string> revoked;
    std::map<std::string, Grant> grants;
    {
      std::lock_guard lock2(m.core_mu);
      revoked = m.core.revoked();
      grants = m.core.grants();
    }
    for (const auto& app : revoked) {
      m.backends->acl().revoke(app);
      if (m.admin)
        if (auto r = m.admin->revoke(app); !r) spdlog::error("coordinator: {}", r.error());
    }
    for (const auto& app : acfg.apps)
      if (!revoked.count(app) && !grants.count(app)) m.install(coordination_grant(app));
  }
  m.sync_grants([&] {
    std::lock_guard lock(m.core_mu);
    return m.core.grants();
  }());
  m.write(pubs);  // the hello: every live DUE registers again
  spdlog::info("coordinator: started as {} ({})", m.due->instance(),
               checkpoint ? "restored from the last checkpoint" : "no checkpoint");
  m.thread = std::thread([impl] { impl->run(); });
  return {};
}

void Coordinator::stop() {
  Impl& m = *impl_;
  if (!m.due) return;
  {
    std::lock_guard lock(m.q_mu);
    m.stopping = true;
  }
  m.q_cv.notify_all();
  if (m.thread.joinable()) m.thread.join();
  m.sub.cancel();
  // Leave our own registry first (what our goodbye will do for everyone else), so that a
  // successor restoring the last checkpoint does not keep us as the active "coordinator" until
  // we time out; then one last checkpoint, so that it starts from the newest state.
  Record bye;
  bye.key = keys::goodbye(keys::kCoordinatorId, m.due->instance());
  bye.value = Json::object();
  bye.app_id = std::string(keys::kCoordinatorId);
  bye.instance = m.due->instance();
  std::vector<Publication> pubs;
  {
    std::lock_guard lock(m.core_mu);
    pubs = m.core.on_record(bye, wall_ns());
    pubs.push_back(Publication{std::string(keys::kCoordinatorState), m.core.state(), true});
  }
  m.write(pubs);
  if (!m.due->sync(std::chrono::milliseconds(2000)))
    spdlog::warn("coordinator: the last checkpoint may not be archived (sync timed out)");
  m.due.reset();  // goodbye
  {
    std::lock_guard lock(m.q_mu);
    m.queue.clear();
  }
}

Json Coordinator::state() const {
  Json j;
  {
    std::lock_guard lock(impl_->core_mu);
    j = impl_->core.state();
  }
  j["acl"] = impl_->backends->acl().state();
  return j;
}

Expected<void, std::string> Coordinator::revoke(const std::string& app) {
  Impl& m = *impl_;
  if (!Key::parse_concrete(app) || app.find('/') != std::string::npos || app.find('@') != std::string::npos)
    return unexpected(fmt::format("bad app id '{}'", app));
  if (app == keys::kCoordinatorId) return unexpected(std::string("the Coordinator cannot revoke itself"));
  Expected<void, std::string> result;
  {
    std::lock_guard lock(m.acl_mu);
    m.backends->acl().revoke(app);  // local: the next write / delivery is refused
    m.applied.erase(app);
    if (m.admin) result = m.admin->revoke(app);  // Redis: user off, connections killed
    m.control.emplace_back(true, app);
  }
  {
    std::lock_guard lock(m.q_mu);
    m.poked = true;
  }
  m.q_cv.notify_one();
  spdlog::warn("coordinator: app '{}' revoked{}", app, result ? "" : ": " + result.error());
  return result;
}

Expected<void, std::string> Coordinator::restore(const std::string& app) {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.acl_mu);
    m.backends->acl().restore(app);
    m.applied.erase(app);  // the next registration installs the grant afresh
    m.control.emplace_back(false, app);
  }
  {
    std::lock_guard lock(m.q_mu);
    m.poked = true;
  }
  m.q_cv.notify_one();
  spdlog::info("coordinator: app '{}' restored", app);
  return {};
}

}  // namespace sdn::data
