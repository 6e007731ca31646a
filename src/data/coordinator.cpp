// Coordinator (coordinator.hpp): runs a CoordinatorCore on its own Due. Backend threads only
// queue the records seen on sdnator/apps/**; one thread feeds them to the core, runs the
// heartbeat checks and writes every publication, so sets and checkpoints leave in the order the
// core made them and a write that the in-process bus delivers straight back to us cannot
// deadlock on the core's lock.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

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
  uint64_t dropped = 0;

  std::unique_ptr<Due> due;
  Due::Subscription sub;
  std::thread thread;

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
        q_cv.wait_until(lock, next_tick, [&] { return stopping || !queue.empty(); });
        if (stopping) return;
        batch.swap(queue);
      }
      std::vector<Publication> pubs;
      {
        std::lock_guard lock(core_mu);
        for (const auto& r : batch) append(pubs, core.on_record(*r, wall_ns()));
        if (Clock::now() >= next_tick) {
          append(pubs, core.tick(wall_ns()));
          next_tick = Clock::now() + cfg.check_interval;
        }
      }
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
  std::lock_guard lock(impl_->core_mu);
  return impl_->core.state();
}

}  // namespace sdn::data
