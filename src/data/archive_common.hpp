// Pieces the SQLite and PostgreSQL archives share: the batching writer thread (queue, flush,
// retry with backoff, periodic retention, stats), the translation of a Query's key into the
// narrowest SQL filter, and the paging query driver that post-filters patterns exactly.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "data/archive.hpp"
#include "data/spool.hpp"

namespace sdn::data::archive_detail {

// ---------------------------------------------------------------------------------------------
// Writer thread

struct WriterOptions {
  std::string name;  // "sqlite" / "postgres", used in logs
  std::size_t batch_size = 1000;
  std::chrono::milliseconds flush_interval{50};
  std::size_t max_queued = 1000000;
  Retention retention;
  std::chrono::milliseconds retry_min{10};
  std::chrono::milliseconds retry_max{1000};
  // With a spool (set_spool): a failing batch goes to disk once it has failed for this long,
  // or at once when more than spool_queue records wait in memory.
  std::chrono::milliseconds spool_after{1000};
  std::size_t spool_queue = 10000;
};

// Implements append/kick/flush/stats over a mutex-protected queue drained by one thread. A
// backend supplies write_batch() and writer_retention(), both called on the writer thread only.
// Derived classes call start_writer() once constructed and stop_writer() first thing in their
// destructor (the thread calls their virtuals, so it must end before their members do).
class BatchingArchive : public Archive {
 public:
  explicit BatchingArchive(WriterOptions opts);
  ~BatchingArchive() override;

  void append(RecordPtr r) override;
  void kick() override;
  bool flush(std::chrono::milliseconds timeout) override;
  ArchiveStats stats() const override;

 protected:
  // Commits the batch in one transaction. On success returns how many records the database
  // refused individually (bad data; dropped, counted and logged); on error nothing of the batch
  // is committed and it is retried after a backoff.
  virtual Expected<std::size_t, std::string> write_batch(const std::vector<RecordPtr>& batch) = 0;
  // Applies the retention policy with the writer's connection; returns the rows deleted.
  virtual Expected<std::size_t, std::string> writer_retention() = 0;

  // Before start_writer(): batches the database cannot take go to this spool (see
  // WriterOptions), and what it holds is replayed, in order, before anything newer is written.
  void set_spool(std::unique_ptr<Spool> s);
  void start_writer();
  // Drains what is queued (one attempt per batch once stopping), then joins. Idempotent.
  void stop_writer();

  const WriterOptions& writer_options() const { return opts_; }
  bool retention_enabled() const;
  void set_connected(bool c) { connected_.store(c, std::memory_order_relaxed); }
  void set_last_error(std::string e);
  void count_retention_deleted(std::size_t n) {
    retention_deleted_.fetch_add(n, std::memory_order_relaxed);
  }
  // write_batch() tells apart "the disk / database is full" (counted as full_errors).
  void count_full_error() { full_errors_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void run();
  // Marks `n` more records as done (committed or dropped) and wakes flush() waiters.
  void finish_records(std::size_t n);
  // One commit attempt of `batch`, counting the outcome; true when committed.
  bool try_write(const std::vector<RecordPtr>& batch);
  // Appends `batch` to the spool; true on success (records then count as done).
  bool spool_batch(const std::vector<RecordPtr>& batch);
  // Commits the spool's oldest entry; false when the database refused (or the entry was bad).
  bool replay_one();
  void publish_spool_stats();

  WriterOptions opts_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // wakes the writer
  std::condition_variable done_cv_;  // wakes flush() waiters
  std::deque<RecordPtr> queue_;
  std::size_t in_flight_ = 0;        // records taken by the writer, not yet done
  uint64_t enqueued_seq_ = 0;        // records accepted so far
  uint64_t done_seq_ = 0;            // records committed or dropped so far (FIFO order)
  uint64_t flush_target_ = 0;        // a flush() waits for done_seq_ to reach this
  bool kick_ = false;
  bool stop_ = false;
  bool started_ = false;

  std::atomic<uint64_t> appended_{0};
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> failed_batches_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> retention_deleted_{0};
  std::atomic<uint64_t> full_errors_{0};
  std::atomic<uint64_t> spool_errors_{0};
  std::atomic<bool> connected_{true};
  mutable std::mutex err_mu_;
  std::string last_error_;
  std::unique_ptr<Spool> spool_;  // writer thread only (after start_writer)
  SpoolStats spool_stats_;        // copy for stats(), guarded by err_mu_
  std::string spool_path_;
};

// ---------------------------------------------------------------------------------------------
// Query planning

enum class Dialect { kSqlite, kPostgres };

// What part of Query.key the database can filter on, and whether rows still need Key::matches.
struct KeyPlan {
  enum class Mode { kAll, kExact, kRange };
  Mode mode = Mode::kAll;
  std::string exact;       // kExact: key = exact
  std::string lo, hi;      // kRange: lo <= key < hi (bytewise)
  std::string app_suffix;  // non-empty: the key ends with "@app"
  bool post_filter = false;
  Key pattern;             // valid when post_filter
};

Expected<KeyPlan, std::string> plan_key(std::string_view key);

// The smallest string greater than every string starting with `prefix` (bytewise); `prefix`
// must be non-empty and end in a byte below 0xff (keys are ASCII).
std::string prefix_upper_bound(std::string_view prefix);

using SqlParam = std::variant<int64_t, std::string>;

struct RowCursor {
  int64_t ts_ns = 0;
  int64_t id = 0;
};

// WHERE clause (without the keyword; "TRUE"/"1" when empty) for a page: key plan, time range,
// app id, and the keyset cursor (rows strictly after `after` in the scan direction).
struct SqlWhere {
  std::string sql;
  std::vector<SqlParam> params;
};
SqlWhere build_where(Dialect d, const KeyPlan& plan, const Query& q,
                     const std::optional<RowCursor>& after, bool descending);

// One page of rows from a backend, in (ts_ns, id) order, strictly after the cursor.
struct PageSpec {
  bool descending = false;
  std::optional<RowCursor> after;
  std::size_t limit = 0;
};

// Receives a page's rows. For each row the backend calls want(); only when it says yes does the
// backend decode the value and call take().
class PageSink {
 public:
  PageSink(const KeyPlan& plan, std::size_t skip, std::size_t need);
  bool want(RowCursor c, std::string_view key);
  void take(Record r) { out_.push_back(std::move(r)); }
  bool done() const { return out_.size() >= need_; }
  const RowCursor& cursor() const { return cursor_; }
  std::size_t skip_left() const { return skip_; }
  std::vector<Record>& records() { return out_; }
  uint64_t bad_keys() const { return bad_keys_; }

 private:
  const KeyPlan& plan_;
  std::size_t skip_;
  std::size_t need_;
  RowCursor cursor_;
  std::vector<Record> out_;
  std::unordered_map<std::string, bool> match_cache_;
  uint64_t bad_keys_ = 0;
};

// The backend half of a query: fetch one page into the sink; returns the number of rows the
// database returned (before post-filtering).
class PageSource {
 public:
  virtual ~PageSource() = default;
  virtual Expected<std::size_t, std::string> fetch(const PageSpec& spec, PageSink& sink) = 0;
};

// Runs a whole query: latest / limit / the default cap, paging until the exact answer is known.
// Results are oldest first.
Expected<std::vector<Record>, std::string> run_query(const Query& q, const KeyPlan& plan,
                                                     PageSource& src);

// The JSON text stored for a value (never throws: invalid UTF-8 is replaced).
std::string dump_json(const Json& j);

}  // namespace sdn::data::archive_detail
