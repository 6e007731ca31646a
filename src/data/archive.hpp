// Data Archives (seed 002 sections 3.2.2, 4.3, 4.4.2): everything written is kept and queryable.
// SQLite is the embedded default (WAL, one background writer thread, batched transactions, index
// on key and time); PostgreSQL for more than one machine (libpq, JSONB values, COPY batches).
// append() never blocks the caller; query results come back in timestamp order whatever order
// the writes landed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "data/key.hpp"
#include "data/record.hpp"

namespace sdn::data {

struct Query {
  std::string key;                     // a concrete key or a pattern ("network/*/stats@stats");
                                       // empty = every key
  std::optional<int64_t> from_ns;      // ts_ns >= from_ns
  std::optional<int64_t> to_ns;        // ts_ns <  to_ns
  std::optional<std::string> app_id;   // producer app id
  std::optional<std::size_t> latest;   // only the newest N matching records (still oldest first)
  std::optional<std::size_t> limit;    // at most N records, from the oldest (after `latest`)

  // {"key": "...", "from_ns": 1, "to_ns": 2, "app_id": "x", "latest": 5, "limit": 10}; unknown
  // fields and wrong types are errors naming the field.
  static Expected<Query, std::string> from_json(const Json& j);
  Json to_json() const;
};

// Upper bound on records one query returns when it sets no limit (protects the caller's memory).
inline constexpr std::size_t kDefaultQueryCap = 100000;

struct Retention {
  std::chrono::seconds max_age{0};   // 0 = keep forever
  std::size_t max_per_key = 0;       // 0 = no cap; else keep the newest N records of each key
  std::chrono::milliseconds interval{1000};  // how often the writer thread enforces it
};

struct ArchiveStats {
  uint64_t appended = 0;   // records accepted by append()
  uint64_t written = 0;    // committed to the database
  uint64_t batches = 0;    // transactions / COPY rounds committed
  uint64_t failed_batches = 0;  // attempts that failed (kept and retried, not lost)
  uint64_t dropped = 0;    // refused because the queue was full (counted, logged)
  uint64_t queued = 0;     // waiting for the writer now
  uint64_t retention_deleted = 0;
  uint64_t full_errors = 0;  // failed attempts because the disk or database was full (SQLITE_FULL,
                             // ENOSPC, PostgreSQL class 53); kept and retried like any failure
  // The local disk spool (PostgreSQL with spool_dir set): records moved to disk while the
  // database could not commit them, and taken back out once it did.
  uint64_t spooled = 0;          // records appended to the spool (fsync'd)
  uint64_t replayed = 0;         // spooled records committed to the database since
  uint64_t spool_records = 0;    // waiting in the spool now (this run's and earlier runs')
  uint64_t spool_bytes = 0;      // bytes of those
  uint64_t spool_corrupt = 0;    // damaged spool entries found (cut off, logged, kept aside)
  uint64_t spool_errors = 0;     // spool appends that failed (the batch stayed in memory)
  std::string spool_path;        // empty = no spool
  bool connected = true;
  std::string last_error;
};

class Archive {
 public:
  virtual ~Archive() = default;
  virtual std::string_view name() const = 0;
  // Queues for the writer thread; never blocks on I/O. When `max_queued` records are already
  // waiting the record is dropped and counted (stats().dropped) and an error logged at a limited
  // rate.
  virtual void append(RecordPtr r) = 0;
  // Wakes the writer now (NO_WAIT / flush()); does not wait.
  virtual void kick() = 0;
  // Waits until every record appended before the call is committed (or spooled to local disk,
  // or dropped); false on timeout.
  virtual bool flush(std::chrono::milliseconds timeout) = 0;
  // Sees everything flushed. Thread-safe; runs on the caller's thread with its own connection.
  virtual Expected<std::vector<Record>, std::string> query(const Query& q) = 0;
  // Applies the retention policy now; returns the number of records deleted.
  virtual Expected<std::size_t, std::string> enforce_retention() = 0;
  virtual ArchiveStats stats() const = 0;
};

struct SqliteConfig {
  std::string path = "sdnator-archive.db";  // ":memory:" is refused (the writer and readers use
                                            // separate connections)
  std::size_t batch_size = 1000;            // records per transaction
  std::chrono::milliseconds flush_interval{50};
  std::size_t max_queued = 1000000;
  Retention retention;
};

struct PostgresConfig {
  std::string dsn;                          // libpq conninfo, e.g. "host=127.0.0.1 dbname=sdnator"
  std::string table = "sdnator_records";
  std::size_t batch_size = 1000;            // records per COPY
  std::chrono::milliseconds flush_interval{50};
  std::size_t max_queued = 1000000;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds reconnect_max{2000};
  Retention retention;
  // Spool to local disk when the server cannot commit: a batch that has kept failing for
  // `spool_after`, or fails while more than `spool_queue` records wait in memory, goes to
  // "<spool_dir>/<table>.spool" (fsync'd), and so does everything after it until the spool is
  // replayed, in order. A spool left by an earlier run is replayed after open. Empty = off
  // (failing batches wait in memory, up to max_queued).
  std::string spool_dir = "sdnator-spool";
  std::chrono::milliseconds spool_after{1000};
  std::size_t spool_queue = 10000;
  uint64_t spool_max_bytes = uint64_t{1} << 30;
};

// Opens (creating the schema if needed) and starts the writer thread. Errors are clear and name
// the backend: "sqlite: cannot open /x/y.db: ...", "postgres: cannot connect (host=...): ...".
Expected<std::unique_ptr<Archive>, std::string> open_sqlite_archive(const SqliteConfig& cfg);
Expected<std::unique_ptr<Archive>, std::string> open_postgres_archive(const PostgresConfig& cfg);

}  // namespace sdn::data
