// The in-process bus, the embedded Data Updates backend. publish() hands the producer's Record
// (a shared_ptr, no copy, no serialization) to every matching subscriber, inline on the
// publisher's thread or through the subscriber's executor, so per-publisher per-key order is the
// publication order. Matching goes through a KeyTrie; each publishing thread keeps a cache of
// channel -> subscribers, invalidated by a generation number whenever a subscription changes, so
// the steady path is one hash lookup per record.
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "core/log.hpp"
#include "data/updates.hpp"

namespace sdn::data {
namespace {

struct Sub {
  uint64_t id = 0;
  Updates::Handler handler;
  Executor executor;
  std::atomic<bool> alive{true};
  std::atomic<int> inflight{0};
};
using SubPtr = std::shared_ptr<Sub>;

// The subscription being run on this thread (unsubscribe from inside a handler must not wait for
// itself).
thread_local const Sub* t_running = nullptr;

std::atomic<uint64_t> g_next_bus_id{1};

// Per-thread match cache for one bus (the last one this thread published on).
struct ThreadCache {
  uint64_t bus = 0;
  uint64_t gen = 0;
  std::unordered_map<std::string, std::vector<SubPtr>, StrHash, std::equal_to<>> map;
};
thread_local ThreadCache t_cache;
constexpr std::size_t kMaxCachedKeys = 65536;

class InprocUpdates final : public Updates {
 public:
  InprocUpdates() : bus_id_(g_next_bus_id.fetch_add(1)) {}
  ~InprocUpdates() override {
    std::unique_lock lock(mu_);
    for (auto& [id, s] : subs_) s->alive.store(false);
    if (t_cache.bus == bus_id_) t_cache = ThreadCache{};
  }

  std::string_view name() const override { return "inproc"; }

  SubId subscribe(const Key& pattern, Handler handler, Executor executor) override {
    auto s = std::make_shared<Sub>();
    s->handler = std::move(handler);
    s->executor = std::move(executor);
    std::unique_lock lock(mu_);
    s->id = trie_.insert(pattern, s);
    subs_[s->id] = s;
    gen_.fetch_add(1, std::memory_order_release);
    return s->id;
  }

  void unsubscribe(SubId id) override {
    SubPtr s;
    {
      std::unique_lock lock(mu_);
      auto it = subs_.find(id);
      if (it == subs_.end()) return;
      s = it->second;
      subs_.erase(it);
      trie_.erase(id);
      gen_.fetch_add(1, std::memory_order_release);
    }
    s->alive.store(false, std::memory_order_release);
    if (t_running == s.get()) return;
    while (s->inflight.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  }

  void publish(RecordPtr r) override {
    published_.fetch_add(1, std::memory_order_relaxed);
    const std::vector<SubPtr>* targets = lookup(r->key);
    if (!targets) return;
    for (const SubPtr& s : *targets) {
      if (s->executor) {
        s->executor([s, r, this] { run(*s, r); });
      } else {
        run(*s, r);
      }
    }
  }

  void flush() override {}
  bool drain(std::chrono::milliseconds) override { return true; }

  UpdatesStats stats() const override {
    UpdatesStats st;
    st.published = published_.load(std::memory_order_relaxed);
    st.sent = st.published;
    st.delivered = delivered_.load(std::memory_order_relaxed);
    st.handler_errors = handler_errors_.load(std::memory_order_relaxed);
    st.decode_errors = bad_keys_.load(std::memory_order_relaxed);
    st.connected = true;
    return st;
  }

 private:
  void run(Sub& s, const RecordPtr& r) {
    s.inflight.fetch_add(1, std::memory_order_acq_rel);
    if (s.alive.load(std::memory_order_acquire)) {
      const Sub* prev = t_running;
      t_running = &s;
      // A handler that throws (e.g. nlohmann's value() on a record of the wrong shape) loses
      // that one delivery, counted; it must not leave `inflight` up (unsubscribe would wait
      // for ever) nor unwind into the publisher.
      try {
        s.handler(r);
        delivered_.fetch_add(1, std::memory_order_relaxed);
      } catch (const std::exception& e) {
        handler_errors_.fetch_add(1, std::memory_order_relaxed);
        SDN_LOG_RATELIMITED(spdlog::level::warn, "inproc bus: a handler of '{}' threw: {}", r->key, e.what());
      } catch (...) {
        handler_errors_.fetch_add(1, std::memory_order_relaxed);
        SDN_LOG_RATELIMITED(spdlog::level::warn, "inproc bus: a handler of '{}' threw", r->key);
      }
      t_running = prev;
    }
    s.inflight.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Subscribers for a channel, from this thread's cache or the trie. Null when none.
  const std::vector<SubPtr>* lookup(const std::string& channel) {
    uint64_t gen = gen_.load(std::memory_order_acquire);
    ThreadCache& c = t_cache;
    if (c.bus != bus_id_ || c.gen != gen || c.map.size() >= kMaxCachedKeys) {
      c.map.clear();
      c.bus = bus_id_;
      c.gen = gen;
    }
    auto it = c.map.find(std::string_view(channel));
    if (it == c.map.end()) {
      std::vector<SubPtr> subs;
      auto key = Key::parse(channel);
      if (!key) {
        bad_keys_.fetch_add(1, std::memory_order_relaxed);
        SDN_LOG_RATELIMITED(spdlog::level::warn, "inproc bus: record with a bad key dropped: {}", key.error());
        return nullptr;
      }
      {
        std::shared_lock lock(mu_);
        trie_.match(*key, [&](const SubPtr& s) { subs.push_back(s); });
      }
      it = c.map.emplace(channel, std::move(subs)).first;
    }
    return it->second.empty() ? nullptr : &it->second;
  }

  const uint64_t bus_id_;
  mutable std::shared_mutex mu_;
  KeyTrie<SubPtr> trie_;
  std::unordered_map<SubId, SubPtr> subs_;
  std::atomic<uint64_t> gen_{1};
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> bad_keys_{0};
  std::atomic<uint64_t> handler_errors_{0};
};

}  // namespace

std::unique_ptr<Updates> make_inproc_updates() { return std::make_unique<InprocUpdates>(); }

}  // namespace sdn::data
