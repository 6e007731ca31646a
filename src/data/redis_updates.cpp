// Data Updates on Redis (docs/data-wire.md): records go out as pipelined `PUBLISH <channel>
// <envelope>` from one writer thread that owns the publisher connection (so one producer's
// records keep their order), and come in on a second connection owned by a reader thread that
// holds the (P)SUBSCRIBEs, decodes envelopes and filters them exactly, since Redis's glob `*`
// also crosses '/'. Both connections reconnect with backoff; nothing is lost silently: every
// record ends up sent, or counted dropped, and holes in producers' seq numbers count as gaps.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <latch>
#include <unordered_map>

#include "data/redis_updates_internal.hpp"
#include "data/wire.hpp"

namespace sdn::data {
namespace {

using namespace redis_detail;
using SteadyClock = std::chrono::steady_clock;

// Last seq per (instance, key) kept for gap detection; past this, an arbitrary entry goes (its
// next record then starts afresh, so at worst one hole is missed, never invented).
// How often an idle writer checks whether Redis closed the publisher connection, so that
// stats().connected turns false without waiting for the next publish.
constexpr std::chrono::milliseconds kIdleCheck{100};
// Upper bound of one reader poll; the wake eventfd normally ends it sooner.
constexpr int kReaderPollMs = 500;

// One Redis-side subscription (a glob or a channel), shared by every local subscription that
// maps to it. The reader thread brings Redis in line with `refs` (see reconcile()).
struct Entry {
  bool is_glob = true;
  std::string name;
  std::size_t refs = 0;     // local subscriptions using it
  bool issued = false;      // (P)SUBSCRIBE sent on the current connection, not taken back
  int outstanding = 0;      // (P)SUBSCRIBE replies still due on the current connection
  bool confirmed = false;   // Redis is subscribed (all replies in, still issued)
  std::string refused;      // Redis answered the (P)SUBSCRIBE with an error (ACL NOPERM); not
                            // issued again on this connection
};

bool is_noperm(std::string_view err) { return err.rfind("NOPERM", 0) == 0; }

struct Pending {
  RecordPtr rec;
  uint64_t ticket;
  SteadyClock::time_point queued_at;
};

class RedisUpdates final : public Updates {
 public:
  RedisUpdates(const RedisConfig& cfg, int wake_fd)
      : cfg_(cfg), shared_(std::make_shared<Shared>()), wake_fd_(wake_fd), started_(2) {
    writer_ = std::thread([this] { writer_loop(); });
    reader_ = std::thread([this] { reader_loop(); });
    // Both threads report their first connection attempt (bounded by connect_timeout), so that
    // stats().connected and subscribe() are meaningful as soon as we return.
    started_.wait();
  }

  ~RedisUpdates() override {
    bool connected;
    {
      std::lock_guard l(pmu_);
      connected = pub_connected_;
    }
    if (connected) {
      // Best effort: get what is queued out before the connection goes.
      if (!drain(cfg_.connect_timeout))
        spdlog::warn("redis updates: closing with records still unacknowledged");
    }
    {
      std::lock_guard l(pmu_);
      stop_.store(true);
    }
    pcv_.notify_all();
    wake_reader();
    writer_.join();
    reader_.join();
    ::close(wake_fd_);
    std::unordered_map<uint64_t, SubPtr> subs;
    {
      std::lock_guard l(smu_);
      subs.swap(subs_);
    }
    for (auto& [id, s] : subs) s->retire();
  }

  std::string_view name() const override { return "redis"; }

  SubId subscribe(const Key& pattern, Handler handler, Executor executor) override {
    auto s = std::make_shared<Sub>();
    s->pattern = pattern;
    s->handler = std::move(handler);
    s->executor = std::move(executor);
    s->shared = shared_;
    // A concrete key with a producer is one literal channel; anything else needs a glob.
    const bool literal =
        !pattern.is_pattern() && !pattern.app_id().empty() && pattern.app_id() != "*";
    s->rname = literal ? "c:" + pattern.channel() : "p:" + redis_glob(pattern);

    std::unique_lock l(smu_);
    const SubId id = trie_.insert(pattern, s);
    subs_[id] = s;
    auto [it, fresh] = entries_.try_emplace(s->rname);
    Entry& e = it->second;
    if (fresh) {
      e.is_glob = !literal;
      e.name = s->rname.substr(2);
    }
    ++e.refs;
    const bool need_issue = !e.issued;
    l.unlock();
    if (need_issue) wake_reader();
    // The reader thread answers our wait itself; a handler subscribing must not wait for it.
    if (std::this_thread::get_id() == reader_.get_id()) return id;
    l.lock();
    const std::string rname = s->rname;
    scv_.wait_for(l, cfg_.connect_timeout, [&] {
      if (stop_.load() || !sub_connected_) return true;
      auto found = entries_.find(rname);
      return found != entries_.end() &&
             (found->second.confirmed || !found->second.refused.empty());
    });
    return id;
  }

  std::optional<std::string> subscribe_error(SubId id) const override {
    std::lock_guard l(smu_);
    auto it = subs_.find(id);
    if (it == subs_.end()) return std::nullopt;
    auto e = entries_.find(it->second->rname);
    if (e == entries_.end() || e->second.refused.empty()) return std::nullopt;
    return e->second.refused;
  }

  void unsubscribe(SubId id) override {
    SubPtr s;
    bool need_wake = false;
    {
      std::lock_guard l(smu_);
      auto it = subs_.find(id);
      if (it == subs_.end()) return;
      s = std::move(it->second);
      subs_.erase(it);
      trie_.erase(id);
      auto e = entries_.find(s->rname);
      if (e != entries_.end() && e->second.refs > 0 && --e->second.refs == 0) need_wake = true;
    }
    if (need_wake) wake_reader();
    s->retire();
  }

  void publish(RecordPtr r) override {
    if (!r) return;
    std::unique_lock l(pmu_);
    ++published_;
    if (queue_.size() >= cfg_.max_buffered) {
      ++dropped_;
      ++dropped_since_connect_;
      const bool connected = pub_connected_;
      l.unlock();
      SDN_LOG_RATELIMITED(spdlog::level::warn,
                          "redis updates: buffer full ({} records, Redis {}), dropping '{}'",
                          cfg_.max_buffered, connected ? "slow" : "away", r->key);
      return;
    }
    const bool was_empty = queue_.empty();
    queue_.push_back(Pending{std::move(r), next_ticket_++, SteadyClock::now()});
    // The writer waits without a deadline only on an empty queue, and with one below a batch.
    const bool wake = was_empty || queue_.size() == cfg_.batch_size;
    l.unlock();
    if (wake) pcv_.notify_one();
  }

  void flush() override {
    {
      std::lock_guard l(pmu_);
      flush_through_ = next_ticket_ - 1;
    }
    pcv_.notify_one();
  }

  bool drain(std::chrono::milliseconds timeout) override {
    std::unique_lock l(pmu_);
    const uint64_t target = next_ticket_ - 1;
    if (done_through_ >= target) return true;
    flush_through_ = std::max(flush_through_, target);
    pcv_.notify_one();
    return drained_cv_.wait_for(l, timeout, [&] { return done_through_ >= target; });
  }

  UpdatesStats stats() const override {
    UpdatesStats st;
    {
      std::lock_guard l(pmu_);
      st.published = published_;
      st.sent = sent_;
      st.dropped = dropped_;
      st.buffered = queue_.size() + inflight_;
      st.batches = batches_;
      st.connected = pub_connected_;
    }
    st.delivered = shared_->delivered.load(std::memory_order_relaxed);
    st.handler_errors = shared_->handler_errors.load(std::memory_order_relaxed);
    st.gaps = gaps_.load(std::memory_order_relaxed);
    st.decode_errors = decode_errors_.load(std::memory_order_relaxed);
    st.reconnects = reconnects_.load(std::memory_order_relaxed);
    st.acl_denied = acl_denied_.load(std::memory_order_relaxed);
    {
      std::lock_guard l(err_mu_);
      st.last_error = last_error_;
    }
    return st;
  }

 private:
  void set_error(std::string e) {
    std::lock_guard l(err_mu_);
    last_error_ = std::move(e);
  }

  void wake_reader() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }

  std::chrono::milliseconds next_backoff(std::chrono::milliseconds b) const {
    return std::min(b * 2, cfg_.reconnect_max);
  }

  // ---- publisher side: the writer thread owns the connection ----

  void writer_loop() {
    block_sigpipe();
    ContextPtr ctx;
    bool reported_start = false;
    bool ever_connected = false;
    bool logged_down = false;
    auto backoff = cfg_.reconnect_min;
    std::vector<Pending> batch;
    batch.reserve(cfg_.batch_size);
    std::string envelope;
    std::unique_lock l(pmu_);
    while (!stop_.load()) {
      if (!ctx) {
        l.unlock();
        std::string err;
        ctx = open_connection(cfg_, err);
        l.lock();
        if (!ctx) {
          set_error("publisher: " + err);
          if (!logged_down) {
            spdlog::error("redis updates: publisher cannot reach Redis ({}); buffering up to {} "
                          "records and retrying",
                          err, cfg_.max_buffered);
            logged_down = true;
          }
          if (!reported_start) {
            reported_start = true;
            started_.count_down();
          }
          pcv_.wait_for(l, backoff, [&] { return stop_.load(); });
          backoff = next_backoff(backoff);
          continue;
        }
        backoff = cfg_.reconnect_min;
        pub_connected_ = true;
        logged_down = false;
        if (ever_connected) {
          reconnects_.fetch_add(1, std::memory_order_relaxed);
          if (dropped_since_connect_ > 0)
            spdlog::warn("redis updates: publisher reconnected to {}:{}; {} records dropped while "
                         "it was away, {} buffered records go out now",
                         ctx->tcp.host ? ctx->tcp.host : cfg_.host.c_str(), ctx->tcp.port, dropped_since_connect_,
                         queue_.size());
          else
            spdlog::info("redis updates: publisher reconnected to {}:{}; {} buffered records go "
                         "out now",
                         ctx->tcp.host ? ctx->tcp.host : cfg_.host.c_str(), ctx->tcp.port, queue_.size());
        }
        ever_connected = true;
        dropped_since_connect_ = 0;
        if (!reported_start) {
          reported_start = true;
          started_.count_down();
        }
      }

      if (queue_.empty()) {
        pcv_.wait_for(l, kIdleCheck, [&] { return stop_.load() || !queue_.empty(); });
        if (stop_.load()) break;
        if (queue_.empty() && peer_closed(ctx->fd)) {
          lose_publisher(ctx, "connection closed by the server", 0);
        }
        continue;
      }
      const Pending& front = queue_.front();
      const auto due = front.queued_at + cfg_.flush_interval;
      const bool ready = queue_.size() >= cfg_.batch_size || front.ticket <= flush_through_ ||
                         SteadyClock::now() >= due;
      if (!ready) {
        pcv_.wait_until(l, due);
        continue;
      }

      const std::size_t n = std::min(queue_.size(), cfg_.batch_size);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      inflight_ = n;
      l.unlock();

      std::size_t acked = 0;
      std::size_t refused = 0;
      std::string refusal;
      bool broken = false;
      for (const Pending& p : batch) {
        envelope.clear();
        encode_envelope(*p.rec, envelope);
        const char* argv[3] = {"PUBLISH", p.rec->key.c_str(), envelope.c_str()};
        const std::size_t lens[3] = {7, p.rec->key.size(), envelope.size()};
        if (redisAppendCommandArgv(ctx.get(), 3, argv, lens) != REDIS_OK) {
          broken = true;
          break;
        }
      }
      for (std::size_t i = 0; i < n && !broken; ++i) {
        void* raw = nullptr;
        if (redisGetReply(ctx.get(), &raw) != REDIS_OK) {
          broken = true;
          break;
        }
        ReplyPtr r(static_cast<redisReply*>(raw));
        if (r && r->type == REDIS_REPLY_ERROR) {
          ++refused;
          refusal = std::string(reply_str(r.get()));
          if (is_noperm(refusal)) acl_denied_.fetch_add(1, std::memory_order_relaxed);
        } else {
          ++acked;
        }
      }

      l.lock();
      ++batches_;
      sent_ += acked;
      dropped_ += n - acked;
      dropped_since_connect_ += n - acked;
      inflight_ = 0;
      done_through_ = batch.back().ticket;
      batch.clear();
      drained_cv_.notify_all();
      if (refused > 0) {
        set_error("publisher: PUBLISH refused: " + refusal);
        SDN_LOG_RATELIMITED(spdlog::level::warn,
                            "redis updates: Redis refused {} PUBLISH(es), counted dropped: {}",
                            refused, refusal);
      }
      if (broken) {
        lose_publisher(ctx, ctx->errstr, n - acked - refused);
      }
    }
    pub_connected_ = false;
    l.unlock();
    ctx.reset();
    if (!reported_start) started_.count_down();
  }

  // Called with pmu_ held.
  void lose_publisher(ContextPtr& ctx, std::string why, std::size_t unacked) {
    pub_connected_ = false;
    set_error("publisher: " + why);
    spdlog::warn("redis updates: publisher connection to {}:{} lost ({}); {} unacknowledged "
                 "records counted dropped (possibly delivered), {} buffered; reconnecting",
                 cfg_.host, cfg_.port, why, unacked, queue_.size());
    ctx.reset();
    consume_pending_sigpipe();
  }

  // ---- subscriber side: the reader thread owns the connection ----

  void reader_loop() {
    block_sigpipe();
    ContextPtr ctx;
    bool reported_start = false;
    bool ever_connected = false;
    bool logged_down = false;
    auto backoff = cfg_.reconnect_min;
    while (!stop_.load()) {
      if (!ctx) {
        std::string err;
        ctx = open_connection(cfg_, err);
        if (!ctx) {
          set_error("subscriber: " + err);
          if (!logged_down) {
            spdlog::error("redis updates: subscriber cannot reach Redis ({}); retrying", err);
            logged_down = true;
          }
          if (!reported_start) {
            reported_start = true;
            started_.count_down();
          }
          sleep_unless_stopped(backoff);
          backoff = next_backoff(backoff);
          continue;
        }
        backoff = cfg_.reconnect_min;
        logged_down = false;
        if (ever_connected) {
          reconnects_.fetch_add(1, std::memory_order_relaxed);
          spdlog::warn("redis updates: subscriber reconnected to {}:{}; records published while "
                       "it was away are lost (counted as gaps when seen)",
                       ctx->tcp.host ? ctx->tcp.host : cfg_.host.c_str(), ctx->tcp.port);
        }
        ever_connected = true;
        {
          std::lock_guard l(smu_);
          sub_connected_ = true;
          reconcile(ctx.get());
        }
        if (!reported_start) {
          reported_start = true;
          started_.count_down();
        }
        if (!write_out(ctx.get())) {
          lose_subscriber(ctx);
          continue;
        }
      }

      pollfd fds[2] = {{ctx->fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      int n = ::poll(fds, 2, kReaderPollMs);
      if (n < 0) {
        if (errno == EINTR) continue;
        lose_subscriber(ctx);
        continue;
      }
      if ((fds[1].revents & POLLIN) != 0) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof(v));
        if (stop_.load()) break;
        {
          std::lock_guard l(smu_);
          reconcile(ctx.get());
        }
        if (!write_out(ctx.get())) {
          lose_subscriber(ctx);
          continue;
        }
      }
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        if (redisBufferRead(ctx.get()) != REDIS_OK) {
          lose_subscriber(ctx);
          continue;
        }
        for (;;) {
          void* raw = nullptr;
          if (redisGetReplyFromReader(ctx.get(), &raw) != REDIS_OK) {
            lose_subscriber(ctx);
            break;
          }
          if (raw == nullptr) break;
          ReplyPtr reply(static_cast<redisReply*>(raw));
          on_reply(reply.get());
        }
      }
    }
    ctx.reset();
    {
      std::lock_guard l(smu_);
      sub_connected_ = false;
    }
    scv_.notify_all();
    if (!reported_start) started_.count_down();
  }

  void sleep_unless_stopped(std::chrono::milliseconds d) {
    const auto deadline = SteadyClock::now() + d;
    while (!stop_.load()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                        SteadyClock::now());
      if (left.count() <= 0) return;
      pollfd p{wake_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof(v));
      }
    }
  }

  void lose_subscriber(ContextPtr& ctx) {
    std::string why = ctx && ctx->err != 0 ? ctx->errstr : "connection error";
    ctx.reset();
    consume_pending_sigpipe();
    set_error("subscriber: " + why);
    spdlog::warn("redis updates: subscriber connection to {}:{} lost ({}); reconnecting",
                 cfg_.host, cfg_.port, why);
    {
      std::lock_guard l(smu_);
      sub_connected_ = false;
      awaiting_.clear();
      for (auto it = entries_.begin(); it != entries_.end();) {
        Entry& e = it->second;
        e.issued = false;
        e.outstanding = 0;
        e.confirmed = false;
        e.refused.clear();
        if (e.refs == 0)
          it = entries_.erase(it);
        else
          ++it;
      }
    }
    scv_.notify_all();
  }

  // With smu_ held: queues the (P)SUBSCRIBE / (P)UNSUBSCRIBE commands that bring Redis in line
  // with the local subscriptions (the caller writes them out). Working from state rather than
  // a command log means a subscribe/unsubscribe/subscribe burst costs no Redis round trip.
  void reconcile(redisContext* c) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      Entry& e = it->second;
      const char* cmd = nullptr;
      if (e.refs > 0 && !e.issued && e.refused.empty()) {
        cmd = e.is_glob ? "PSUBSCRIBE" : "SUBSCRIBE";
        e.issued = true;
        ++e.outstanding;
        e.confirmed = false;
      } else if (e.refs == 0 && e.issued) {
        cmd = e.is_glob ? "PUNSUBSCRIBE" : "UNSUBSCRIBE";
        e.issued = false;
        e.confirmed = false;
      }
      if (cmd != nullptr) {
        const char* argv[2] = {cmd, e.name.c_str()};
        const std::size_t lens[2] = {std::strlen(cmd), e.name.size()};
        redisAppendCommandArgv(c, 2, argv, lens);
        awaiting_.push_back(it->first);
      }
      if (e.refs == 0 && !e.issued && e.outstanding == 0)
        it = entries_.erase(it);
      else
        ++it;
    }
  }

  void on_reply(const redisReply* r) {
    if (r->type == REDIS_REPLY_ERROR) {
      set_error(fmt::format("subscriber: {}", reply_str(r)));
      SDN_LOG_RATELIMITED(spdlog::level::warn, "redis updates: subscriber got an error: {}",
                          reply_str(r));
      on_refused(reply_str(r));
      return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) return;
    for (std::size_t i = 0; i < r->elements; ++i)
      if (r->element[i] == nullptr) return;
    const std::string_view kind = reply_str(r->element[0]);
    if (kind == "pmessage" && r->elements == 4) {
      on_message("p:", reply_str(r->element[1]), reply_str(r->element[2]),
                 reply_str(r->element[3]));
    } else if (kind == "message") {
      on_message("c:", reply_str(r->element[1]), reply_str(r->element[1]),
                 reply_str(r->element[2]));
    } else if (kind == "psubscribe" || kind == "subscribe") {
      pop_awaiting();
      on_subscribed(kind == "psubscribe" ? "p:" : "c:", reply_str(r->element[1]));
    } else if (kind == "punsubscribe" || kind == "unsubscribe") {
      pop_awaiting();
    }
  }

  void pop_awaiting() {
    std::lock_guard l(smu_);
    if (!awaiting_.empty()) awaiting_.pop_front();
  }

  // An error in answer to the oldest command still awaiting its reply.
  void on_refused(std::string_view err) {
    if (is_noperm(err)) acl_denied_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard l(smu_);
      if (awaiting_.empty()) return;
      std::string rname = std::move(awaiting_.front());
      awaiting_.pop_front();
      auto it = entries_.find(rname);
      if (it == entries_.end()) return;
      Entry& e = it->second;
      if (e.outstanding > 0) --e.outstanding;
      if (e.issued) {
        e.issued = false;  // Redis did not subscribe
        e.confirmed = false;
        e.refused = std::string(err);
      }
      if (e.refs == 0 && e.outstanding == 0) entries_.erase(it);
    }
    scv_.notify_all();
  }

  void on_subscribed(std::string_view prefix, std::string_view name) {
    rname_.assign(prefix);
    rname_.append(name);
    {
      std::lock_guard l(smu_);
      auto it = entries_.find(rname_);
      if (it == entries_.end()) return;
      Entry& e = it->second;
      if (e.outstanding > 0) --e.outstanding;
      if (e.outstanding == 0) {
        if (e.issued) {
          e.confirmed = true;
        } else if (e.refs == 0) {
          entries_.erase(it);  // taken back before its reply came; PUNSUBSCRIBE already sent
        }
      }
    }
    scv_.notify_all();
  }

  void decode_error(std::string_view channel, std::string_view why) {
    decode_errors_.fetch_add(1, std::memory_order_relaxed);
    SDN_LOG_RATELIMITED(spdlog::level::warn,
                        "redis updates: skipping a malformed envelope on channel '{}': {}",
                        channel, why);
  }

  void on_message(std::string_view prefix, std::string_view via, std::string_view channel,
                  std::string_view payload) {
    auto rec = decode_envelope(payload);
    if (!rec) {
      decode_error(channel, rec.error());
      return;
    }
    if (rec->key != channel) {
      decode_error(channel, fmt::format("\"k\" is '{}', not the channel", rec->key));
      return;
    }
    // Parsed keys are cached per channel (reader thread only): the steady path does one hash
    // lookup instead of a parse per record.
    auto cached = key_cache_.find(rec->key);
    if (cached == key_cache_.end()) {
      auto parsed = Key::parse_concrete(rec->key);
      if (!parsed) {
        decode_error(channel, parsed.error());
        return;
      }
      if (key_cache_.size() >= kKeyCacheSize) key_cache_.clear();
      cached = key_cache_.emplace(rec->key, std::move(*parsed)).first;
    }
    const Key* key = &cached->second;
    track_seq(*rec);

    rname_.assign(prefix);
    rname_.append(via);
    targets_.clear();
    {
      std::lock_guard l(smu_);
      trie_.match(*key, [&](const SubPtr& s) {
        if (s->rname == rname_) targets_.push_back(s);
      });
    }
    if (targets_.empty()) return;
    RecordPtr shared_rec = std::make_shared<const Record>(std::move(*rec));
    for (const SubPtr& s : targets_) {
      if (s->executor)
        s->executor([s, shared_rec] { s->call(shared_rec); });
      else
        s->call(shared_rec);
    }
    targets_.clear();
  }

  // Holes in a producer's per-(instance, key) seq are records this process never saw. The same
  // record arriving twice (two overlapping globs) is not a hole.
  void track_seq(const Record& r) {
    if (r.seq == 0) return;
    seq_key_.assign(r.instance);
    seq_key_.push_back('\0');
    seq_key_.append(r.key);
    auto it = last_seq_.find(seq_key_);
    if (it == last_seq_.end()) {
      if (last_seq_.size() >= cfg_.max_tracked_keys) last_seq_.erase(last_seq_.begin());
      last_seq_.emplace(seq_key_, r.seq);
      return;
    }
    if (r.seq > it->second + 1) gaps_.fetch_add(r.seq - it->second - 1, std::memory_order_relaxed);
    if (r.seq > it->second) it->second = r.seq;
  }

  static constexpr std::size_t kKeyCacheSize = 65536;
  std::unordered_map<std::string, Key> key_cache_;  // reader thread only

  const RedisConfig cfg_;
  const std::shared_ptr<Shared> shared_;
  const int wake_fd_;  // eventfd: subscription changes and shutdown wake the reader
  std::latch started_;
  std::atomic<bool> stop_{false};

  // Publisher state, guarded by pmu_.
  mutable std::mutex pmu_;
  std::condition_variable pcv_;         // wakes the writer
  std::condition_variable drained_cv_;  // a batch finished (drain waits on it)
  std::deque<Pending> queue_;
  uint64_t next_ticket_ = 1;
  uint64_t done_through_ = 0;   // every ticket up to here is sent or dropped
  uint64_t flush_through_ = 0;  // tickets up to here go out without waiting for a full batch
  std::size_t inflight_ = 0;
  uint64_t published_ = 0;
  uint64_t sent_ = 0;
  uint64_t dropped_ = 0;
  uint64_t dropped_since_connect_ = 0;
  uint64_t batches_ = 0;
  bool pub_connected_ = false;

  // Subscriber state, guarded by smu_.
  mutable std::mutex smu_;
  std::condition_variable scv_;  // a subscription confirmed or the connection state changed
  KeyTrie<SubPtr> trie_;
  std::unordered_map<uint64_t, SubPtr> subs_;
  std::unordered_map<std::string, Entry> entries_;  // by rname
  // rnames of the (P)(UN)SUBSCRIBEs sent on this connection whose reply is still due, in order:
  // an error reply carries no channel, this says which command it answers.
  std::deque<std::string> awaiting_;
  bool sub_connected_ = false;

  // Reader thread only.
  std::unordered_map<std::string, uint64_t> last_seq_;
  std::string seq_key_;
  std::string rname_;
  std::vector<SubPtr> targets_;

  std::atomic<uint64_t> gaps_{0};
  std::atomic<uint64_t> decode_errors_{0};
  std::atomic<uint64_t> reconnects_{0};
  std::atomic<uint64_t> acl_denied_{0};

  mutable std::mutex err_mu_;
  std::string last_error_;

  std::thread writer_;
  std::thread reader_;
};

}  // namespace

Expected<std::unique_ptr<Updates>, std::string> make_redis_updates(const RedisConfig& cfg) {
  if (cfg.host.empty()) return unexpected(std::string("redis: host is empty"));
  if (cfg.port == 0) return unexpected(std::string("redis: port 0"));
  if (cfg.batch_size == 0) return unexpected(std::string("redis: batch_size must be at least 1"));
  if (cfg.max_buffered == 0)
    return unexpected(std::string("redis: max_buffered must be at least 1"));
  if (cfg.flush_interval.count() < 0)
    return unexpected(std::string("redis: flush_interval is negative"));
  if (cfg.connect_timeout.count() <= 0)
    return unexpected(std::string("redis: connect_timeout must be positive"));
  if (cfg.reconnect_min.count() <= 0 || cfg.reconnect_max < cfg.reconnect_min)
    return unexpected(std::string("redis: need 0 < reconnect_min <= reconnect_max"));
  if (!cfg.user.empty() && cfg.password.empty())
    return unexpected(std::string("redis: user '" + cfg.user + "' given without a password"));
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0)
    return unexpected(fmt::format("redis: eventfd: {}", std::strerror(errno)));
  return std::unique_ptr<Updates>(std::make_unique<RedisUpdates>(cfg, wake_fd));
}

}  // namespace sdn::data
