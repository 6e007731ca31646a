// The embedded Data Archive: one SQLite file in WAL mode, written by a background thread in
// batched transactions (one prepared INSERT reused), read through a small pool of separate
// connections so queries never wait for the writer's transaction.
#include <sqlite3.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <vector>

#include "core/log.hpp"
#include "data/archive_common.hpp"

namespace sdn::data {
namespace {

using namespace archive_detail;

constexpr int kBusyTimeoutMs = 5000;
constexpr std::size_t kMaxIdleReaders = 4;
constexpr std::chrono::milliseconds kRetryMax{1000};

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

std::string errmsg(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

Expected<void, std::string> exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string e = err ? err : errmsg(db);
    sqlite3_free(err);
    return unexpected(std::move(e));
  }
  return {};
}

Expected<StmtPtr, std::string> prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK) {
    return unexpected(errmsg(db));
  }
  return StmtPtr(s);
}

// The error names the path, the one thing an operator needs to fix a bad configuration.
Expected<DbPtr, std::string> open_db(const std::string& path, bool create) {
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return unexpected("sqlite: cannot open " + path + ": " + errmsg(raw));
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  if (auto r = exec(db.get(), "PRAGMA synchronous=NORMAL"); !r) {
    return unexpected("sqlite: cannot open " + path + ": " + r.error());
  }
  return db;
}

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS records(
  id       INTEGER PRIMARY KEY,   -- rowid; no AUTOINCREMENT (SQLite: extra work per insert)
  key      TEXT    NOT NULL,   -- channel, "path@app_id"
  app_id   TEXT    NOT NULL,   -- producer app id
  instance TEXT    NOT NULL,
  ts_ns    INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  kind     TEXT    NOT NULL,   -- 'json' (value is the JSON text) | 'bytes' (value is a BLOB)
  value    BLOB);
CREATE INDEX IF NOT EXISTS records_key_ts ON records(key, ts_ns);
CREATE INDEX IF NOT EXISTS records_ts ON records(ts_ns);
)sql";

constexpr const char* kInsert =
    "INSERT INTO records(key, app_id, instance, ts_ns, seq, kind, value) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)";

constexpr const char* kColumns = "id, key, app_id, instance, ts_ns, seq, kind, value";

int64_t age_cutoff_ns(std::chrono::seconds max_age) {
  const int64_t age = std::chrono::duration_cast<std::chrono::nanoseconds>(max_age).count();
  return wall_ns() - age;
}

std::string_view column_text(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
           : std::string_view();
}

// Deletes by age, then keeps the newest `max_per_key` of each key. Runs on whichever connection
// it is given (the writer's, or a reader's for enforce_retention()).
Expected<std::size_t, std::string> apply_retention(sqlite3* db, const Retention& ret) {
  std::size_t deleted = 0;
  if (ret.max_age.count() > 0) {
    auto st = prepare(db, "DELETE FROM records WHERE ts_ns < ?1");
    if (!st) return unexpected("sqlite: retention: " + st.error());
    sqlite3_bind_int64(st->get(), 1, age_cutoff_ns(ret.max_age));
    if (sqlite3_step(st->get()) != SQLITE_DONE) return unexpected("sqlite: retention: " + errmsg(db));
    deleted += static_cast<std::size_t>(sqlite3_changes(db));
  }
  if (ret.max_per_key > 0) {
    if (auto r = exec(db, "BEGIN IMMEDIATE"); !r) return unexpected("sqlite: retention: " + r.error());
    auto fail = [&](std::string e) -> Expected<std::size_t, std::string> {
      (void)exec(db, "ROLLBACK");
      return unexpected("sqlite: retention: " + e);
    };
    auto over = prepare(db, "SELECT key FROM records GROUP BY key HAVING COUNT(*) > ?1");
    auto nth = prepare(db,
                       "SELECT ts_ns, id FROM records WHERE key = ?1 "
                       "ORDER BY ts_ns DESC, id DESC LIMIT 1 OFFSET ?2");
    auto del = prepare(db, "DELETE FROM records WHERE key = ?1 AND (ts_ns, id) < (?2, ?3)");
    if (!over || !nth || !del) return fail(errmsg(db));
    const auto keep = static_cast<int64_t>(ret.max_per_key);
    std::vector<std::string> keys;
    sqlite3_bind_int64(over->get(), 1, keep);
    int rc;
    while ((rc = sqlite3_step(over->get())) == SQLITE_ROW) keys.emplace_back(column_text(over->get(), 0));
    if (rc != SQLITE_DONE) return fail(errmsg(db));
    for (const auto& k : keys) {
      // The oldest record to keep; everything strictly older in (ts_ns, id) order goes.
      sqlite3_reset(nth->get());
      sqlite3_bind_text(nth->get(), 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      sqlite3_bind_int64(nth->get(), 2, keep - 1);
      rc = sqlite3_step(nth->get());
      if (rc == SQLITE_DONE) continue;
      if (rc != SQLITE_ROW) return fail(errmsg(db));
      const int64_t ts = sqlite3_column_int64(nth->get(), 0);
      const int64_t id = sqlite3_column_int64(nth->get(), 1);
      sqlite3_reset(del->get());
      sqlite3_bind_text(del->get(), 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      sqlite3_bind_int64(del->get(), 2, ts);
      sqlite3_bind_int64(del->get(), 3, id);
      if (sqlite3_step(del->get()) != SQLITE_DONE) return fail(errmsg(db));
      deleted += static_cast<std::size_t>(sqlite3_changes(db));
    }
    nth.value().reset();
    del.value().reset();
    over.value().reset();
    if (auto r = exec(db, "COMMIT"); !r) return fail(r.error());
  }
  return deleted;
}

class SqlitePages final : public PageSource {
 public:
  SqlitePages(sqlite3* db, const KeyPlan& plan, const Query& q) : db_(db), plan_(plan), q_(q) {}

  Expected<std::size_t, std::string> fetch(const PageSpec& spec, PageSink& sink) override {
    const SqlWhere w = build_where(Dialect::kSqlite, plan_, q_, spec.after, spec.descending);
    const char* dir = spec.descending ? "DESC" : "ASC";
    std::string sql = std::string("SELECT ") + kColumns + " FROM records WHERE " + w.sql +
                      " ORDER BY ts_ns " + dir + ", id " + dir + " LIMIT " +
                      std::to_string(spec.limit);
    auto st = prepare(db_, sql);
    if (!st) return unexpected("sqlite: query failed: " + st.error());
    sqlite3_stmt* s = st->get();
    for (std::size_t i = 0; i < w.params.size(); ++i) {
      const int idx = static_cast<int>(i + 1);
      if (const auto* v = std::get_if<int64_t>(&w.params[i])) {
        sqlite3_bind_int64(s, idx, *v);
      } else {
        const auto& t = std::get<std::string>(w.params[i]);
        sqlite3_bind_text(s, idx, t.data(), static_cast<int>(t.size()), SQLITE_STATIC);
      }
    }
    std::size_t rows = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      ++rows;
      const RowCursor c{sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 0)};
      const std::string_view key = column_text(s, 1);
      if (!sink.want(c, key)) continue;
      Record r;
      r.key = std::string(key);
      r.app_id = std::string(column_text(s, 2));
      r.instance = std::string(column_text(s, 3));
      r.ts_ns = c.ts_ns;
      r.seq = static_cast<uint64_t>(sqlite3_column_int64(s, 5));
      if (column_text(s, 6) == "bytes") {
        const auto* p = static_cast<const char*>(sqlite3_column_blob(s, 7));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s, 7));
        r.value = Bytes{p ? std::string(p, n) : std::string()};
      } else {
        const std::string_view text = column_text(s, 7);
        Json j = Json::parse(text.begin(), text.end(), nullptr, false);
        if (j.is_discarded()) {
          SDN_LOG_RATELIMITED(spdlog::level::warn,
                              "archive sqlite: record id {} holds invalid JSON; skipped", c.id);
          continue;
        }
        r.value = std::move(j);
      }
      sink.take(std::move(r));
    }
    if (rc != SQLITE_DONE) return unexpected("sqlite: query failed: " + errmsg(db_));
    return rows;
  }

 private:
  sqlite3* db_;
  const KeyPlan& plan_;
  const Query& q_;
};

class SqliteArchive final : public BatchingArchive {
 public:
  SqliteArchive(const SqliteConfig& cfg, DbPtr writer, StmtPtr insert)
      : BatchingArchive(WriterOptions{"sqlite", cfg.batch_size, cfg.flush_interval, cfg.max_queued,
                                      cfg.retention, std::chrono::milliseconds(10), kRetryMax}),
        cfg_(cfg),
        writer_(std::move(writer)),
        insert_(std::move(insert)) {
    start_writer();
  }
  ~SqliteArchive() override { stop_writer(); }

  std::string_view name() const override { return "sqlite"; }

  Expected<std::vector<Record>, std::string> query(const Query& q) override {
    auto plan = plan_key(q.key);
    if (!plan) return unexpected(plan.error());
    auto db = acquire_reader();
    if (!db) return unexpected(db.error());
    SqlitePages pages(db->get(), *plan, q);
    auto out = run_query(q, *plan, pages);
    release_reader(std::move(*db));
    return out;
  }

  Expected<std::size_t, std::string> enforce_retention() override {
    auto db = acquire_reader();
    if (!db) return unexpected(db.error());
    auto r = apply_retention(db->get(), cfg_.retention);
    release_reader(std::move(*db));
    if (r) count_retention_deleted(*r);
    return r;
  }

 protected:
  Expected<std::size_t, std::string> write_batch(const std::vector<RecordPtr>& batch) override {
    sqlite3* db = writer_.get();
    if (auto r = exec(db, "BEGIN IMMEDIATE"); !r) {
      const int rc = sqlite3_extended_errcode(db);
      std::string e = describe_failure(db, rc, r.error());
      after_failure(rc);
      return unexpected("sqlite: begin: " + e);
    }
    sqlite3_stmt* s = insert_.get();
    std::size_t refused = 0;
    for (const auto& rec : batch) {
      sqlite3_reset(s);
      sqlite3_bind_text(s, 1, rec->key.data(), static_cast<int>(rec->key.size()), SQLITE_STATIC);
      sqlite3_bind_text(s, 2, rec->app_id.data(), static_cast<int>(rec->app_id.size()), SQLITE_STATIC);
      sqlite3_bind_text(s, 3, rec->instance.data(), static_cast<int>(rec->instance.size()),
                        SQLITE_STATIC);
      sqlite3_bind_int64(s, 4, rec->ts_ns);
      sqlite3_bind_int64(s, 5, static_cast<int64_t>(rec->seq));
      if (rec->value.is_bytes()) {
        const std::string& b = rec->value.bytes();
        sqlite3_bind_text(s, 6, "bytes", 5, SQLITE_STATIC);
        sqlite3_bind_blob64(s, 7, b.data(), b.size(), SQLITE_STATIC);
      } else {
        json_buf_ = dump_json(rec->value.json());
        sqlite3_bind_text(s, 6, "json", 4, SQLITE_STATIC);
        sqlite3_bind_text64(s, 7, json_buf_.data(), json_buf_.size(), SQLITE_STATIC, SQLITE_UTF8);
      }
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) continue;
      const int primary = rc & 0xff;
      if (primary == SQLITE_TOOBIG || primary == SQLITE_CONSTRAINT || primary == SQLITE_MISMATCH) {
        // This record alone is unacceptable; retrying would never succeed.
        ++refused;
        SDN_LOG_RATELIMITED(spdlog::level::err, "archive sqlite: record for {} refused: {}",
                            rec->key, errmsg(db));
        continue;
      }
      std::string e = "sqlite: insert: " + describe_failure(db, rc);
      sqlite3_reset(s);
      (void)exec(db, "ROLLBACK");
      after_failure(rc);
      return unexpected(std::move(e));
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (auto r = exec(db, "COMMIT"); !r) {
      const int rc = sqlite3_extended_errcode(db);
      std::string e = describe_failure(db, rc, r.error());
      (void)exec(db, "ROLLBACK");
      after_failure(rc);
      return unexpected("sqlite: commit: " + e);
    }
    return refused;
  }

  // The error text for a failed write; a full disk (SQLITE_FULL, or an I/O error whose errno is
  // ENOSPC) is said plainly, with the path, and counted (stats().full_errors).
  std::string describe_failure(sqlite3* db, int rc, std::string e = {}) {
    const int primary = rc & 0xff;
    const int sys = sqlite3_system_errno(db);
    if (e.empty()) e = errmsg(db);
    if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && sys == ENOSPC)) {
      count_full_error();
      e = "disk full: " + cfg_.path + " (or its -wal file) cannot grow: " + e +
          "; records stay queued and are retried";
    } else if (primary == SQLITE_IOERR) {
      e += " (I/O error, errno " + std::to_string(sys) + ")";
    }
    return e;
  }

  // On a full disk the WAL is the file to shrink: it only restarts after a checkpoint, and
  // SQLite checkpoints on its own at 1000 pages (4 MB), which a nearly full disk never reaches.
  // Copying it into the database and truncating it frees what the failed attempts wrote there
  // and, once space returns, lets the next attempt fit. Best effort; the retry decides.
  void after_failure(int rc) {
    const int primary = rc & 0xff;
    if (primary != SQLITE_FULL && primary != SQLITE_IOERR) return;
    const int ck = sqlite3_wal_checkpoint_v2(writer_.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE,
                                             nullptr, nullptr);
    if (ck != SQLITE_OK) {
      SDN_LOG_RATELIMITED(spdlog::level::warn, "archive sqlite: WAL checkpoint on a full disk: {}",
                          errmsg(writer_.get()));
    }
  }

  Expected<std::size_t, std::string> writer_retention() override {
    return apply_retention(writer_.get(), cfg_.retention);
  }

 private:
  Expected<DbPtr, std::string> acquire_reader() {
    {
      std::lock_guard lk(readers_mu_);
      if (!idle_readers_.empty()) {
        DbPtr db = std::move(idle_readers_.back());
        idle_readers_.pop_back();
        return db;
      }
    }
    return open_db(cfg_.path, false);
  }

  void release_reader(DbPtr db) {
    std::lock_guard lk(readers_mu_);
    if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(db));
  }

  SqliteConfig cfg_;
  DbPtr writer_;
  StmtPtr insert_;  // after writer_: finalized before the connection closes
  std::string json_buf_;
  std::mutex readers_mu_;
  std::vector<DbPtr> idle_readers_;
};

}  // namespace

Expected<std::unique_ptr<Archive>, std::string> open_sqlite_archive(const SqliteConfig& cfg) {
  if (cfg.path.empty() || cfg.path == ":memory:") {
    return unexpected(std::string(
        "sqlite: path '" + cfg.path +
        "' is refused: the archive needs a file (the writer and readers use separate connections)"));
  }
  auto db = open_db(cfg.path, true);
  if (!db) return unexpected(db.error());
  auto fail = [&](const std::string& e) -> Expected<std::unique_ptr<Archive>, std::string> {
    return unexpected("sqlite: cannot open " + cfg.path + ": " + e);
  };
  {
    auto st = prepare(db->get(), "PRAGMA journal_mode=WAL");
    if (!st) return fail(st.error());
    if (sqlite3_step(st->get()) != SQLITE_ROW) return fail(errmsg(db->get()));
    if (column_text(st->get(), 0) != "wal") {
      return fail("cannot switch to WAL mode (journal_mode is " +
                  std::string(column_text(st->get(), 0)) + ")");
    }
  }
  if (auto r = exec(db->get(), kSchema); !r) return fail(r.error());
  auto insert = prepare(db->get(), kInsert);
  if (!insert) return fail(insert.error());
  return std::unique_ptr<Archive>(
      std::make_unique<SqliteArchive>(cfg, std::move(*db), std::move(*insert)));
}

}  // namespace sdn::data
