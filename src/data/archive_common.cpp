// Shared archive machinery: Query <-> JSON, the batching writer thread, key-to-SQL planning and
// the paging query driver (see archive_common.hpp).
#include "data/archive_common.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "core/log.hpp"

namespace sdn::data {

// ---------------------------------------------------------------------------------------------
// Query JSON. A field set to null is treated as absent.

namespace {

Expected<std::optional<int64_t>, std::string> int_field(const Json& v, const char* name) {
  if (v.is_null()) return std::optional<int64_t>{};
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return unexpected(std::string("query: field '") + name + "' is out of range");
    }
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (v.is_number_integer()) return std::optional<int64_t>(v.get<int64_t>());
  return unexpected(std::string("query: field '") + name + "' must be an integer");
}

Expected<std::optional<std::size_t>, std::string> count_field(const Json& v, const char* name) {
  if (v.is_null()) return std::optional<std::size_t>{};
  if (v.is_number_unsigned()) return std::optional<std::size_t>(v.get<uint64_t>());
  if (v.is_number_integer()) {
    return unexpected(std::string("query: field '") + name + "' must not be negative");
  }
  return unexpected(std::string("query: field '") + name + "' must be a non-negative integer");
}

}  // namespace

Expected<Query, std::string> Query::from_json(const Json& j) {
  if (!j.is_object()) return unexpected(std::string("query: must be a JSON object"));
  Query q;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (k == "key" || k == "app_id") {
      if (v.is_null()) continue;
      if (!v.is_string()) return unexpected("query: field '" + k + "' must be a string");
      if (k == "key") {
        q.key = v.get<std::string>();
        if (!q.key.empty()) {
          auto parsed = Key::parse(q.key);
          if (!parsed) return unexpected("query: field 'key': " + parsed.error());
        }
      } else {
        q.app_id = v.get<std::string>();
      }
    } else if (k == "from_ns" || k == "to_ns") {
      auto r = int_field(v, k.c_str());
      if (!r) return unexpected(r.error());
      (k == "from_ns" ? q.from_ns : q.to_ns) = *r;
    } else if (k == "latest" || k == "limit") {
      auto r = count_field(v, k.c_str());
      if (!r) return unexpected(r.error());
      (k == "latest" ? q.latest : q.limit) = *r;
    } else {
      return unexpected("query: unknown field '" + k + "'");
    }
  }
  return q;
}

Json Query::to_json() const {
  Json j = Json::object();
  if (!key.empty()) j["key"] = key;
  if (from_ns) j["from_ns"] = *from_ns;
  if (to_ns) j["to_ns"] = *to_ns;
  if (app_id) j["app_id"] = *app_id;
  if (latest) j["latest"] = static_cast<uint64_t>(*latest);
  if (limit) j["limit"] = static_cast<uint64_t>(*limit);
  return j;
}

namespace archive_detail {

// ---------------------------------------------------------------------------------------------
// Writer thread

BatchingArchive::BatchingArchive(WriterOptions opts) : opts_(std::move(opts)) {
  if (opts_.batch_size == 0) opts_.batch_size = 1;
  if (opts_.flush_interval.count() <= 0) opts_.flush_interval = std::chrono::milliseconds(1);
  if (opts_.retry_max < opts_.retry_min) opts_.retry_max = opts_.retry_min;
}

BatchingArchive::~BatchingArchive() {
  // Derived destructors must have stopped the thread already; this is a safety net only.
  stop_writer();
}

bool BatchingArchive::retention_enabled() const {
  return opts_.retention.max_age.count() > 0 || opts_.retention.max_per_key > 0;
}

void BatchingArchive::start_writer() {
  std::lock_guard lk(mu_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void BatchingArchive::stop_writer() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BatchingArchive::set_last_error(std::string e) {
  std::lock_guard lk(err_mu_);
  last_error_ = std::move(e);
}

void BatchingArchive::append(RecordPtr r) {
  if (!r) return;
  std::unique_lock lk(mu_);
  if (queue_.size() >= opts_.max_queued || stop_) {
    lk.unlock();
    dropped_.fetch_add(1, std::memory_order_relaxed);
    std::string why;
    {
      std::lock_guard g(err_mu_);
      why = last_error_.empty() ? "the writer is behind" : "last error: " + last_error_;
    }
    SDN_LOG_RATELIMITED(spdlog::level::err,
                        "archive {}: queue full ({} records waiting; {}), dropped a record for {}",
                        opts_.name, opts_.max_queued, why, r->key);
    return;
  }
  queue_.push_back(std::move(r));
  ++enqueued_seq_;
  const bool wake = queue_.size() == opts_.batch_size;
  lk.unlock();
  appended_.fetch_add(1, std::memory_order_relaxed);
  if (wake) work_cv_.notify_one();
}

void BatchingArchive::kick() {
  {
    std::lock_guard lk(mu_);
    kick_ = true;
  }
  work_cv_.notify_one();
}

bool BatchingArchive::flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lk(mu_);
  const uint64_t target = enqueued_seq_;
  if (done_seq_ >= target) return true;
  flush_target_ = std::max(flush_target_, target);
  work_cv_.notify_one();
  return done_cv_.wait_until(lk, deadline, [&] { return done_seq_ >= target; });
}

void BatchingArchive::finish_records(std::size_t n) {
  {
    std::lock_guard lk(mu_);
    done_seq_ += n;
    in_flight_ -= n;
  }
  done_cv_.notify_all();
}

ArchiveStats BatchingArchive::stats() const {
  ArchiveStats s;
  s.appended = appended_.load(std::memory_order_relaxed);
  s.written = written_.load(std::memory_order_relaxed);
  s.batches = batches_.load(std::memory_order_relaxed);
  s.failed_batches = failed_batches_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.retention_deleted = retention_deleted_.load(std::memory_order_relaxed);
  s.connected = connected_.load(std::memory_order_relaxed);
  s.full_errors = full_errors_.load(std::memory_order_relaxed);
  s.spool_errors = spool_errors_.load(std::memory_order_relaxed);
  {
    std::lock_guard lk(mu_);
    s.queued = queue_.size() + in_flight_;
  }
  std::lock_guard lk(err_mu_);
  s.last_error = last_error_;
  s.spool_path = spool_path_;
  s.spooled = spool_stats_.appended_records;
  s.replayed = spool_stats_.replayed_records;
  s.spool_records = spool_stats_.pending_records;
  s.spool_bytes = spool_stats_.pending_bytes;
  s.spool_corrupt = spool_stats_.corrupt;
  return s;
}

void BatchingArchive::set_spool(std::unique_ptr<Spool> s) {
  spool_ = std::move(s);
  std::lock_guard lk(err_mu_);
  spool_path_ = spool_ ? spool_->path() : "";
  if (spool_) spool_stats_ = spool_->stats();
}

void BatchingArchive::publish_spool_stats() {
  if (!spool_) return;
  std::lock_guard lk(err_mu_);
  spool_stats_ = spool_->stats();
}

bool BatchingArchive::try_write(const std::vector<RecordPtr>& batch) {
  auto r = write_batch(batch);
  const std::size_t n = batch.size();
  if (r) {
    const std::size_t refused = std::min(*r, n);
    written_.fetch_add(n - refused, std::memory_order_relaxed);
    dropped_.fetch_add(refused, std::memory_order_relaxed);
    batches_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  failed_batches_.fetch_add(1, std::memory_order_relaxed);
  set_last_error(r.error());
  SDN_LOG_RATELIMITED(spdlog::level::err, "archive {}: batch of {} records failed: {}", opts_.name,
                      n, r.error());
  return false;
}

bool BatchingArchive::spool_batch(const std::vector<RecordPtr>& batch) {
  auto r = spool_->append(batch);
  publish_spool_stats();
  if (!r) {
    spool_errors_.fetch_add(1, std::memory_order_relaxed);
    set_last_error(r.error());
    SDN_LOG_RATELIMITED(spdlog::level::err, "archive {}: cannot spool {} records: {}", opts_.name,
                        batch.size(), r.error());
    return false;
  }
  SDN_LOG_RATELIMITED(spdlog::level::warn,
                      "archive {}: database not taking writes; {} records spooled to {} "
                      "({} waiting there)",
                      opts_.name, batch.size(), spool_->path(), spool_->stats().pending_records);
  return true;
}

namespace {
constexpr std::size_t kReplayBatches = 10;
}  // namespace

bool BatchingArchive::replay_one() {
  // Several entries per commit: replay must outrun new appends for the spool ever to drain.
  std::size_t entries = 0;
  auto batch = spool_->front(opts_.batch_size * kReplayBatches, entries);
  if (!batch) {
    // Counted and logged by the spool; what it cut off cannot be written.
    publish_spool_stats();
    set_last_error(batch.error());
    return false;
  }
  if (!try_write(*batch)) return false;
  if (auto p = spool_->pop(entries); !p) {
    // Committed but the cursor did not move: a restart would replay this entry again.
    set_last_error(p.error());
    spdlog::error("archive {}: {}", opts_.name, p.error());
  }
  publish_spool_stats();
  if (!spool_->has_backlog()) {
    spdlog::info("archive {}: spool replayed ({} records in total)", opts_.name,
                 spool_->stats().replayed_records);
  }
  return true;
}

void BatchingArchive::run() {
  using Clock = std::chrono::steady_clock;
  std::vector<RecordPtr> batch;  // taken from the queue; kept across failed attempts
  batch.reserve(opts_.batch_size);
  const bool retention_on = retention_enabled();
  const auto retention_every = std::max(opts_.retention.interval, std::chrono::milliseconds(1));
  auto next_retention = Clock::now() + retention_every;
  auto retry_at = Clock::time_point::min();   // next database attempt after a failure
  auto backoff = opts_.retry_min;
  std::optional<Clock::time_point> failing_since;  // first failure of the current outage
  auto last_take = Clock::now();
  std::optional<Clock::time_point> stop_deadline;  // replaying the spool while stopping ends here
  bool stop_replay = false;                        // stopping and the database failed: leave it
  constexpr auto kStopReplayBudget = std::chrono::seconds(5);
  // Records per transaction: halved on each "disk full" failure (the rest goes back to the head
  // of the queue), doubled back on each success, so a disk with little room left still takes
  // what fits instead of failing the whole batch for ever.
  std::size_t cap = opts_.batch_size;

  auto failed = [&](Clock::time_point now) {
    if (!failing_since) failing_since = now;
    retry_at = now + backoff;
    backoff = std::min(backoff * 2, opts_.retry_max);
  };
  auto succeeded = [&] {
    backoff = opts_.retry_min;
    retry_at = Clock::time_point::min();
    failing_since.reset();
  };

  std::unique_lock lk(mu_);
  for (;;) {
    const bool backlog = spool_ && spool_->has_backlog();
    auto now = Clock::now();
    auto deadline = batch.empty() ? now + opts_.flush_interval : retry_at;
    if (backlog && !stop_replay) deadline = std::min(deadline, std::max(retry_at, now));
    if (retention_on) deadline = std::min(deadline, next_retention);
    if (batch.empty()) {
      work_cv_.wait_until(lk, deadline, [&] {
        return stop_ || kick_ || queue_.size() >= opts_.batch_size ||
               (flush_target_ > done_seq_ && !queue_.empty());
      });
    } else {
      // Waiting out the backoff of a failed batch; only stopping cuts it short.
      work_cv_.wait_until(lk, deadline, [&] { return stop_; });
    }
    const bool stopping = stop_;
    now = Clock::now();
    if (stopping && !stop_deadline) stop_deadline = now + kStopReplayBudget;
    // Replaying a spool wakes the loop often; take partial batches only as often as flushing
    // would, so the spool gets full batches rather than one fsync per record.
    const bool take = !backlog || stopping || kick_ || queue_.size() >= opts_.batch_size ||
                      flush_target_ > done_seq_ || now - last_take >= opts_.flush_interval;
    kick_ = false;
    if (batch.empty() && !queue_.empty() && take) {
      const std::size_t n = std::min(cap, queue_.size());
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      in_flight_ += n;
      last_take = now;
    }
    const std::size_t waiting = queue_.size();
    lk.unlock();

    if (!batch.empty()) {
      std::size_t n = batch.size();
      bool done = false;
      if (backlog) {
        // Older records are on disk: this batch goes behind them, never ahead.
        done = spool_batch(batch);
      } else if (stopping || now >= retry_at) {
        const uint64_t full_before = full_errors_.load(std::memory_order_relaxed);
        done = try_write(batch);
        if (done) {
          succeeded();
          cap = std::min(opts_.batch_size, cap * 2);
        } else if (full_errors_.load(std::memory_order_relaxed) != full_before && n > 1) {
          cap = std::max<std::size_t>(1, n / 2);
          std::lock_guard g(mu_);
          for (std::size_t i = n; i-- > cap;) queue_.push_front(std::move(batch[i]));
          in_flight_ -= n - cap;
          batch.resize(cap);
          n = cap;
        }
        if (!done) {
          now = Clock::now();
          failed(now);
          if (spool_ && (stopping || now - *failing_since >= opts_.spool_after ||
                         waiting + n > opts_.spool_queue)) {
            done = spool_batch(batch);
          }
        }
      }
      if (done) {
        batch.clear();
        finish_records(n);
      } else if (stopping) {
        // Shutting down with a failing database (and no spool, or a failing one): give up on
        // this batch and whatever is still queued, loudly and counted.
        std::size_t lost = n;
        {
          std::lock_guard g(mu_);
          lost += queue_.size();
          in_flight_ += queue_.size();
          queue_.clear();
        }
        dropped_.fetch_add(lost, std::memory_order_relaxed);
        spdlog::error("archive {}: stopping with the database failing; {} records not written",
                      opts_.name, lost);
        batch.clear();
        finish_records(lost);
      } else if (backlog) {
        // The spool refused (disk full, cap): keep the batch and try again after a backoff.
        failed(Clock::now());
      }
    }

    // Replay: one entry per turn while the database takes them, so new appends keep flowing.
    if (spool_ && spool_->has_backlog() && !stop_replay && Clock::now() >= retry_at) {
      if (replay_one()) {
        succeeded();
      } else {
        failed(Clock::now());
        if (stopping) stop_replay = true;
      }
    }
    if (stopping && stop_deadline && Clock::now() >= *stop_deadline) stop_replay = true;

    if (retention_on && Clock::now() >= next_retention) {
      auto r = writer_retention();
      if (r) {
        count_retention_deleted(*r);
      } else {
        set_last_error(r.error());
        SDN_LOG_RATELIMITED(spdlog::level::err, "archive {}: retention failed: {}", opts_.name,
                            r.error());
      }
      next_retention = Clock::now() + retention_every;
    }

    lk.lock();
    const bool spool_settled = !spool_ || !spool_->has_backlog() || stop_replay;
    if (stopping && queue_.empty() && batch.empty() && spool_settled) break;
  }
  if (spool_ && spool_->has_backlog()) {
    spdlog::warn("archive {}: {} records left in the spool {}; replayed at the next start",
                 opts_.name, spool_->stats().pending_records, spool_->path());
  }
}

// ---------------------------------------------------------------------------------------------
// Query planning

std::string prefix_upper_bound(std::string_view prefix) {
  std::string hi(prefix);
  hi.back() = static_cast<char>(static_cast<unsigned char>(hi.back()) + 1);
  return hi;
}

Expected<KeyPlan, std::string> plan_key(std::string_view key) {
  KeyPlan plan;
  if (key.empty()) return plan;
  auto parsed = Key::parse(key);
  if (!parsed) return unexpected("query: field 'key': " + parsed.error());
  const Key& k = *parsed;
  if (!k.is_pattern()) {
    if (!k.app_id().empty()) {
      plan.mode = KeyPlan::Mode::kExact;
      plan.exact = k.channel();
    } else {
      // "a/b" names a/b from any producer: every channel "a/b@<app>".
      plan.mode = KeyPlan::Mode::kRange;
      plan.lo = k.path() + "@";
      plan.hi = prefix_upper_bound(plan.lo);
    }
    return plan;
  }
  // Pattern: the concrete segments before the first wildcard give a key range.
  std::string prefix;
  for (const auto& seg : k.segments()) {
    if (seg == "*" || seg == "**") break;
    prefix += seg;
    prefix += '/';
  }
  if (!prefix.empty()) {
    plan.mode = KeyPlan::Mode::kRange;
    plan.lo = prefix;
    plan.hi = prefix_upper_bound(prefix);
  }
  if (!k.app_id().empty() && k.app_id() != "*") plan.app_suffix = "@" + k.app_id();
  plan.post_filter = true;
  plan.pattern = k;
  return plan;
}

SqlWhere build_where(Dialect d, const KeyPlan& plan, const Query& q,
                     const std::optional<RowCursor>& after, bool descending) {
  SqlWhere w;
  auto ph = [&](SqlParam p, bool bigint) {
    w.params.push_back(std::move(p));
    // Built in steps: GCC 12 at -O3 warns (falsely) about `const char* + std::string&&`.
    std::string s(d == Dialect::kSqlite ? "?" : "$");
    s += std::to_string(w.params.size());
    if (bigint && d == Dialect::kPostgres) s += "::bigint";
    return s;
  };
  std::vector<std::string> conds;
  switch (plan.mode) {
    case KeyPlan::Mode::kAll:
      break;
    case KeyPlan::Mode::kExact:
      conds.push_back("key = " + ph(plan.exact, false));
      break;
    case KeyPlan::Mode::kRange:
      conds.push_back("key >= " + ph(plan.lo, false));
      conds.push_back("key < " + ph(plan.hi, false));
      break;
  }
  if (!plan.app_suffix.empty()) {
    const std::string n = std::to_string(plan.app_suffix.size());
    const std::string tail = d == Dialect::kSqlite ? "substr(key, -" + n + ")" : "right(key, " + n + ")";
    conds.push_back(tail + " = " + ph(plan.app_suffix, false));
  }
  if (q.from_ns) conds.push_back("ts_ns >= " + ph(*q.from_ns, true));
  if (q.to_ns) conds.push_back("ts_ns < " + ph(*q.to_ns, true));
  if (q.app_id) conds.push_back("app_id = " + ph(*q.app_id, false));
  if (after) {
    std::string a = ph(after->ts_ns, true);
    std::string b = ph(after->id, true);
    conds.push_back(std::string("(ts_ns, id) ") + (descending ? "<" : ">") + " (" + a + ", " + b + ")");
  }
  if (conds.empty()) {
    w.sql = d == Dialect::kSqlite ? "1" : "TRUE";
  } else {
    for (std::size_t i = 0; i < conds.size(); ++i) {
      if (i) w.sql += " AND ";
      w.sql += conds[i];
    }
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// Query driver

namespace {
constexpr std::size_t kMaxPageRows = 20000;
constexpr std::size_t kMinFilteredPageRows = 1024;
constexpr std::size_t kMaxMatchCache = 4096;
}  // namespace

PageSink::PageSink(const KeyPlan& plan, std::size_t skip, std::size_t need)
    : plan_(plan), skip_(skip), need_(need) {
  out_.reserve(std::min(need, kMaxPageRows));
}

bool PageSink::want(RowCursor c, std::string_view key) {
  cursor_ = c;
  if (done()) return false;
  if (plan_.post_filter) {
    bool ok;
    auto it = match_cache_.find(std::string(key));
    if (it != match_cache_.end()) {
      ok = it->second;
    } else {
      auto k = Key::parse(key);
      ok = k && plan_.pattern.matches(*k);
      if (!k) ++bad_keys_;
      if (match_cache_.size() >= kMaxMatchCache) match_cache_.clear();
      match_cache_.emplace(std::string(key), ok);
    }
    if (!ok) return false;
  }
  if (skip_ > 0) {
    --skip_;
    return false;
  }
  return true;
}

Expected<std::vector<Record>, std::string> run_query(const Query& q, const KeyPlan& plan,
                                                     PageSource& src) {
  const std::size_t limit = q.limit.value_or(kDefaultQueryCap);
  std::size_t skip = 0;
  std::size_t need = limit;
  const bool descending = q.latest.has_value();
  if (descending) {
    // Newest `latest` records, then the oldest `limit` of those: walking newest first, skip the
    // newest (latest - limit) and keep the next min(latest, limit).
    const std::size_t latest = *q.latest;
    need = std::min(latest, limit);
    skip = latest - need;
  }
  if (need == 0) return std::vector<Record>{};

  PageSink sink(plan, skip, need);
  PageSpec spec;
  spec.descending = descending;
  for (;;) {
    // Rows still wanted, counting those to skip; a post-filtered page reads ahead more.
    std::size_t remaining = need - sink.records().size();
    remaining = std::min(remaining + sink.skip_left(), kMaxPageRows);
    if (plan.post_filter) remaining = std::clamp(remaining * 2, kMinFilteredPageRows, kMaxPageRows);
    spec.limit = remaining;
    auto rows = src.fetch(spec, sink);
    if (!rows) return unexpected(rows.error());
    if (sink.done() || *rows < spec.limit) break;
    spec.after = sink.cursor();
  }
  if (sink.bad_keys() > 0) {
    SDN_LOG_RATELIMITED(spdlog::level::warn, "archive: query skipped {} rows with malformed keys",
                        sink.bad_keys());
  }
  auto out = std::move(sink.records());
  if (descending) std::reverse(out.begin(), out.end());
  return out;
}

std::string dump_json(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace archive_detail
}  // namespace sdn::data
