// The shared Data Archive on PostgreSQL (libpq): a writer thread sends batches with binary COPY
// (JSON values as JSONB, raw bytes as bytea), reconnecting with backoff when the server goes
// away; queries use a second, mutex-protected connection so they never wait for a COPY.
#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/log.hpp"
#include "data/archive_common.hpp"

namespace sdn::data {
namespace {

using namespace archive_detail;
using Ms = std::chrono::milliseconds;

constexpr std::size_t kMaxTableName = 48;   // leaves room for index and application names
constexpr std::size_t kCopyChunk = 1 << 20;  // bytes per PQputCopyData call

// Type OIDs (pg_type.dat) for the binary parameters of the one-row fallback INSERT.
constexpr Oid kOidBytea = 17;
constexpr Oid kOidInt8 = 20;
constexpr Oid kOidText = 25;
constexpr Oid kOidJsonb = 3802;

struct ConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnCloser>;
struct ResultCloser {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultCloser>;

// libpq messages span lines ("...failed: Connection refused\n\tIs the server running...").
std::string one_line(const char* msg) {
  std::string out;
  bool space = false;
  for (const char* p = msg ? msg : ""; *p; ++p) {
    if (*p == '\n' || *p == '\t' || *p == '\r' || *p == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
  }
  return out;
}

std::string conn_error(PGconn* c) { return c ? one_line(PQerrorMessage(c)) : "out of memory"; }

std::string result_error(PGconn* c, PGresult* r) {
  const char* m = r ? PQresultErrorMessage(r) : nullptr;
  return (m && *m) ? one_line(m) : conn_error(c);
}

std::string sqlstate(PGresult* r) {
  const char* s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  return s ? s : "";
}

// "host=... port=..." as libpq resolved them (defaults included), never the password.
std::string describe_target(PGconn* c) {
  std::string host, hostaddr, port;
  if (PQconninfoOption* opts = c ? PQconninfo(c) : nullptr) {
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      if (!o->val) continue;
      const std::string_view k = o->keyword;
      if (k == "host") host = o->val;
      if (k == "hostaddr") hostaddr = o->val;
      if (k == "port") port = o->val;
    }
    PQconninfoFree(opts);
  }
  if (host.empty()) host = hostaddr.empty() ? "(default socket)" : hostaddr;
  if (port.empty()) port = "5432";
  return "host=" + host + " port=" + port;
}

void ignore_notice(void*, const char*) {}

// PQconnectStart + poll, so the whole attempt (DNS aside) honours `timeout` to the millisecond
// (libpq's own connect_timeout has a 2 s floor).
Expected<ConnPtr, std::string> connect(const std::string& dsn, const std::string& app_name,
                                       Ms timeout) {
  const char* keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* vals[] = {dsn.c_str(), app_name.c_str(), nullptr};
  ConnPtr c(PQconnectStartParams(keys, vals, 1));
  auto fail = [&](const std::string& why) -> Expected<ConnPtr, std::string> {
    return unexpected("postgres: cannot connect (" + describe_target(c.get()) + "): " + why);
  };
  if (!c) return fail("out of memory");
  if (PQstatus(c.get()) == CONNECTION_BAD) return fail(conn_error(c.get()));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  while (st != PGRES_POLLING_OK) {
    if (st == PGRES_POLLING_FAILED) return fail(conn_error(c.get()));
    const auto left =
        std::chrono::duration_cast<Ms>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return fail("timed out after " + std::to_string(timeout.count()) + " ms");
    pollfd p{PQsocket(c.get()), static_cast<short>(st == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (n == 0) return fail("timed out after " + std::to_string(timeout.count()) + " ms");
    if (n < 0 && errno != EINTR) return fail("poll failed");
    st = PQconnectPoll(c.get());
  }
  PQsetNoticeProcessor(c.get(), ignore_notice, nullptr);
  if (PQsetClientEncoding(c.get(), "UTF8") != 0) return fail(conn_error(c.get()));
  return c;
}

bool valid_table_name(std::string_view t) {
  if (t.empty() || t.size() > kMaxTableName) return false;
  if (!(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_')) return false;
  return std::all_of(t.begin(), t.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
}

Expected<void, std::string> exec(PGconn* c, const std::string& sql) {
  ResultPtr r(PQexec(c, sql.c_str()));
  const auto st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return unexpected(result_error(c, r.get()));
  return {};
}

// ---- binary COPY / parameter encoding (PostgreSQL protocol, "COPY ... BINARY" file format)

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_field(std::string& out, std::string_view data) {
  put_be(out, data.size(), 4);
  out.append(data);
}

void put_null(std::string& out) { put_be(out, 0xffffffffu, 4); }

uint64_t get_be(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Text columns must be valid UTF-8 without NUL; a key or id that is not (only a misbehaving
// producer sends one) is stored with the bad bytes replaced by '?' rather than failing the batch.
bool clean_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) { ++i; continue; }
    std::size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string scrub(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) out.push_back((ch == 0 || static_cast<unsigned char>(ch) >= 0x80) ? '?' : ch);
  return out;
}

// The encoded fields of one record, in table column order after id.
struct RowFields {
  std::string key, app_id, instance;
  char ts[8], seq[8];
  const char* kind = "json";
  std::string jsonb;        // version byte + JSON text; empty = NULL
  std::string_view bytes;   // bytea; used when has_bytes
  bool has_bytes = false;
};

void encode_row(const Record& r, RowFields& f, std::string& json_buf) {
  auto text = [](const std::string& s) { return clean_utf8(s) ? s : scrub(s); };
  f.key = text(r.key);
  f.app_id = text(r.app_id);
  f.instance = text(r.instance);
  std::string tmp;
  put_be(tmp, static_cast<uint64_t>(r.ts_ns), 8);
  put_be(tmp, r.seq, 8);
  std::copy(tmp.begin(), tmp.begin() + 8, f.ts);
  std::copy(tmp.begin() + 8, tmp.end(), f.seq);
  f.jsonb.clear();
  f.has_bytes = false;
  if (r.value.is_bytes()) {
    f.kind = "bytes";
    f.bytes = r.value.bytes();
    f.has_bytes = true;
  } else {
    f.kind = "json";
    json_buf = dump_json(r.value.json());
    if (json_buf.find("\\u0000") != std::string::npos) {
      // JSONB cannot hold U+0000; keep the exact JSON text in the bytea column instead.
      f.bytes = json_buf;
      f.has_bytes = true;
    } else {
      f.jsonb.reserve(json_buf.size() + 1);
      f.jsonb.push_back('\x01');  // jsonb binary format version
      f.jsonb += json_buf;
    }
  }
}

void append_copy_row(std::string& out, const RowFields& f) {
  put_be(out, 8, 2);  // field count
  put_field(out, f.key);
  put_field(out, f.app_id);
  put_field(out, f.instance);
  put_field(out, std::string_view(f.ts, 8));
  put_field(out, std::string_view(f.seq, 8));
  put_field(out, f.kind);
  if (f.jsonb.empty()) put_null(out); else put_field(out, f.jsonb);
  if (f.has_bytes) put_field(out, f.bytes); else put_null(out);
}

constexpr char kCopyHeader[] = "PGCOPY\n\xff\r\n";  // + '\0', flags, extension length

bool is_data_error(const std::string& state) {
  // Class 22 (data exception) and 23 (integrity constraint): the rows, not the server.
  return state.size() == 5 && (state.compare(0, 2, "22") == 0 || state.compare(0, 2, "23") == 0);
}

std::string schema_sql(const std::string& t) {
  const std::string q = "\"" + t + "\"";
  return "CREATE TABLE IF NOT EXISTS " + q + " ("
         "id bigserial PRIMARY KEY, "
         "key text COLLATE \"C\" NOT NULL, "  // bytewise, so prefix ranges use the index
         "app_id text NOT NULL, "
         "instance text NOT NULL, "
         "ts_ns bigint NOT NULL, "
         "seq bigint NOT NULL, "
         "kind text NOT NULL, "               // 'json' | 'bytes'
         "value jsonb, "                      // JSON values
         "value_bytes bytea); "               // raw bytes (and JSON text JSONB cannot hold)
         "CREATE INDEX IF NOT EXISTS \"" + t + "_key_ts\" ON " + q + " (key, ts_ns, id); "
         "CREATE INDEX IF NOT EXISTS \"" + t + "_ts\" ON " + q + " (ts_ns, id); "
         "CREATE INDEX IF NOT EXISTS \"" + t + "_app_ts\" ON " + q + " (app_id, ts_ns);";
}

Expected<std::size_t, std::string> apply_retention(PGconn* c, const std::string& table,
                                                   const Retention& ret) {
  const std::string q = "\"" + table + "\"";
  std::size_t deleted = 0;
  auto run = [&](const std::string& sql, int64_t arg) -> Expected<void, std::string> {
    const std::string a = std::to_string(arg);
    const char* vals[] = {a.c_str()};
    ResultPtr r(PQexecParams(c, sql.c_str(), 1, nullptr, vals, nullptr, nullptr, 0));
    if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
      return unexpected("postgres: retention: " + result_error(c, r.get()));
    }
    deleted += static_cast<std::size_t>(std::strtoull(PQcmdTuples(r.get()), nullptr, 10));
    return {};
  };
  if (ret.max_age.count() > 0) {
    const int64_t cutoff =
        wall_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(ret.max_age).count();
    if (auto r = run("DELETE FROM " + q + " WHERE ts_ns < $1::bigint", cutoff); !r) {
      return unexpected(r.error());
    }
  }
  if (ret.max_per_key > 0) {
    // For each key over the cap, find its oldest record to keep and delete what is older.
    const std::string sql =
        "DELETE FROM " + q + " d USING ("
        " SELECT k.key, c.ts_ns, c.id FROM"
        "  (SELECT key FROM " + q + " GROUP BY key HAVING count(*) > $1::bigint) k"
        "  CROSS JOIN LATERAL (SELECT ts_ns, id FROM " + q + " x WHERE x.key = k.key"
        "   ORDER BY ts_ns DESC, id DESC OFFSET $1::bigint - 1 LIMIT 1) c) cut "
        "WHERE d.key = cut.key AND (d.ts_ns, d.id) < (cut.ts_ns, cut.id)";
    if (auto r = run(sql, static_cast<int64_t>(ret.max_per_key)); !r) return unexpected(r.error());
  }
  return deleted;
}

class PostgresPages final : public PageSource {
 public:
  PostgresPages(PGconn* c, const std::string& table, const KeyPlan& plan, const Query& q)
      : c_(c), table_(table), plan_(plan), q_(q) {}

  Expected<std::size_t, std::string> fetch(const PageSpec& spec, PageSink& sink) override {
    const SqlWhere w = build_where(Dialect::kPostgres, plan_, q_, spec.after, spec.descending);
    const char* dir = spec.descending ? "DESC" : "ASC";
    const std::string sql =
        "SELECT id, key, app_id, instance, ts_ns, seq, kind, value, value_bytes FROM \"" +
        table_ + "\" WHERE " + w.sql + " ORDER BY ts_ns " + dir + ", id " + dir + " LIMIT " +
        std::to_string(spec.limit);
    std::vector<std::string> texts;
    texts.reserve(w.params.size());
    for (const auto& p : w.params) {
      texts.push_back(std::holds_alternative<int64_t>(p) ? std::to_string(std::get<int64_t>(p))
                                                         : std::get<std::string>(p));
    }
    std::vector<const char*> vals;
    for (const auto& t : texts) vals.push_back(t.c_str());
    ResultPtr r(PQexecParams(c_, sql.c_str(), static_cast<int>(vals.size()), nullptr, vals.data(),
                             nullptr, nullptr, 1 /* binary results */));
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
      return unexpected("postgres: query failed: " + result_error(c_, r.get()));
    }
    PGresult* res = r.get();
    const int rows = PQntuples(res);
    auto field = [&](int row, int col) {
      return std::string_view(PQgetvalue(res, row, col),
                              static_cast<std::size_t>(PQgetlength(res, row, col)));
    };
    for (int i = 0; i < rows; ++i) {
      const RowCursor c{static_cast<int64_t>(get_be(PQgetvalue(res, i, 4), 8)),
                        static_cast<int64_t>(get_be(PQgetvalue(res, i, 0), 8))};
      const std::string_view key = field(i, 1);
      if (!sink.want(c, key)) continue;
      Record rec;
      rec.key = std::string(key);
      rec.app_id = std::string(field(i, 2));
      rec.instance = std::string(field(i, 3));
      rec.ts_ns = c.ts_ns;
      rec.seq = get_be(PQgetvalue(res, i, 5), 8);
      const bool is_bytes = field(i, 6) == "bytes";
      if (is_bytes) {
        rec.value = Bytes{std::string(field(i, 8))};
      } else {
        std::string_view text;
        if (!PQgetisnull(res, i, 7)) {
          text = field(i, 7);
          if (!text.empty()) text.remove_prefix(1);  // jsonb version byte
        } else {
          text = field(i, 8);
        }
        Json j = Json::parse(text.begin(), text.end(), nullptr, false);
        if (j.is_discarded()) {
          SDN_LOG_RATELIMITED(spdlog::level::warn,
                              "archive postgres: record id {} holds invalid JSON; skipped", c.id);
          continue;
        }
        rec.value = std::move(j);
      }
      sink.take(std::move(rec));
    }
    return static_cast<std::size_t>(rows);
  }

 private:
  PGconn* c_;
  const std::string& table_;
  const KeyPlan& plan_;
  const Query& q_;
};

class PostgresArchive final : public BatchingArchive {
 public:
  PostgresArchive(const PostgresConfig& cfg, ConnPtr writer, ConnPtr reader,
                  std::unique_ptr<Spool> spool)
      : BatchingArchive(WriterOptions{"postgres", cfg.batch_size, cfg.flush_interval,
                                      cfg.max_queued, cfg.retention, Ms(10),
                                      std::max(cfg.reconnect_max, Ms(10)), cfg.spool_after,
                                      cfg.spool_queue}),
        cfg_(cfg),
        writer_(std::move(writer)),
        reader_(std::move(reader)),
        copy_sql_("COPY \"" + cfg.table +
                  "\" (key, app_id, instance, ts_ns, seq, kind, value, value_bytes) "
                  "FROM STDIN (FORMAT binary)") {
    set_spool(std::move(spool));
    start_writer();
  }
  ~PostgresArchive() override { stop_writer(); }

  std::string_view name() const override { return "postgres"; }

  Expected<std::vector<Record>, std::string> query(const Query& q) override {
    auto plan = plan_key(q.key);
    if (!plan) return unexpected(plan.error());
    std::lock_guard lk(reader_mu_);
    for (int attempt = 0;; ++attempt) {
      if (auto ok = ensure(reader_, "q"); !ok) return unexpected(ok.error());
      PostgresPages pages(reader_.get(), cfg_.table, *plan, q);
      auto out = run_query(q, *plan, pages);
      if (out || attempt > 0 || PQstatus(reader_.get()) != CONNECTION_BAD) return out;
      reader_.reset();  // the server went away; reconnect once and ask again
    }
  }

  Expected<std::size_t, std::string> enforce_retention() override {
    std::lock_guard lk(reader_mu_);
    if (auto ok = ensure(reader_, "q"); !ok) return unexpected(ok.error());
    auto r = apply_retention(reader_.get(), cfg_.table, cfg_.retention);
    if (!r && PQstatus(reader_.get()) == CONNECTION_BAD) reader_.reset();
    if (r) count_retention_deleted(*r);
    return r;
  }

 protected:
  Expected<std::size_t, std::string> write_batch(const std::vector<RecordPtr>& batch) override {
    if (auto ok = ensure(writer_, "w"); !ok) {
      set_connected(false);
      return unexpected(ok.error());
    }
    set_connected(true);
    PGconn* c = writer_.get();
    buf_.clear();
    buf_.append(kCopyHeader, sizeof(kCopyHeader));  // includes the trailing '\0'
    put_be(buf_, 0, 4);                             // flags
    put_be(buf_, 0, 4);                             // header extension length
    for (const auto& r : batch) {
      encode_row(*r, fields_, json_buf_);
      append_copy_row(buf_, fields_);
    }
    put_be(buf_, 0xffff, 2);  // trailer
    std::string state;
    auto done = copy(c, state);
    if (done) return std::size_t{0};
    if (PQstatus(c) == CONNECTION_BAD) {
      set_connected(false);
      writer_.reset();
      return unexpected(done.error());
    }
    if (state == "42P01") {
      // Someone dropped the table: put the schema back, then retry the batch after the backoff.
      (void)exec(c, schema_sql(cfg_.table));
      return unexpected(done.error());
    }
    if (is_data_error(state)) return insert_one_by_one(batch, done.error());
    if (state.compare(0, 2, "53") == 0) count_full_error();  // insufficient resources (disk full)
    return unexpected(done.error());
  }

  Expected<std::size_t, std::string> writer_retention() override {
    if (auto ok = ensure(writer_, "w"); !ok) {
      set_connected(false);
      return unexpected(ok.error());
    }
    auto r = apply_retention(writer_.get(), cfg_.table, cfg_.retention);
    if (!r && PQstatus(writer_.get()) == CONNECTION_BAD) {
      set_connected(false);
      writer_.reset();
    }
    return r;
  }

 private:
  // (Re)connects `conn` when it is missing or broken.
  Expected<void, std::string> ensure(ConnPtr& conn, const char* role) {
    if (conn && PQstatus(conn.get()) == CONNECTION_OK) return {};
    conn.reset();
    auto c = connect(cfg_.dsn, "sdnator:" + cfg_.table + ":" + role, cfg_.connect_timeout);
    if (!c) return unexpected(c.error());
    conn = std::move(*c);
    return {};
  }

  Expected<void, std::string> copy(PGconn* c, std::string& state) {
    ResultPtr r(PQexec(c, copy_sql_.c_str()));
    if (!r || PQresultStatus(r.get()) != PGRES_COPY_IN) {
      state = sqlstate(r.get());
      return unexpected("postgres: copy: " + result_error(c, r.get()));
    }
    bool sent = true;
    for (std::size_t off = 0; off < buf_.size() && sent; off += kCopyChunk) {
      const std::size_t n = std::min(kCopyChunk, buf_.size() - off);
      sent = PQputCopyData(c, buf_.data() + off, static_cast<int>(n)) == 1;
    }
    if (PQputCopyEnd(c, sent ? nullptr : "send failed") != 1 && PQstatus(c) == CONNECTION_BAD) {
      return unexpected("postgres: copy: " + conn_error(c));
    }
    Expected<void, std::string> out;
    while (PGresult* raw = PQgetResult(c)) {
      ResultPtr res(raw);
      if (PQresultStatus(raw) != PGRES_COMMAND_OK && out) {
        state = sqlstate(raw);
        out = unexpected("postgres: copy: " + result_error(c, raw));
      }
    }
    return out;
  }

  // A batch the server refused for its data: insert the records one by one in a transaction,
  // each under a savepoint, so only the bad ones are left out (and counted).
  Expected<std::size_t, std::string> insert_one_by_one(const std::vector<RecordPtr>& batch,
                                                       const std::string& why) {
    PGconn* c = writer_.get();
    const std::string sql =
        "INSERT INTO \"" + cfg_.table +
        "\" (key, app_id, instance, ts_ns, seq, kind, value, value_bytes) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
    const Oid types[8] = {kOidText, kOidText, kOidText, kOidInt8, kOidInt8, kOidText, kOidJsonb,
                          kOidBytea};
    const int formats[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    if (auto r = exec(c, "BEGIN"); !r) return unexpected("postgres: " + r.error());
    std::size_t refused = 0;
    for (const auto& rec : batch) {
      encode_row(*rec, fields_, json_buf_);
      const char* vals[8] = {fields_.key.data(), fields_.app_id.data(), fields_.instance.data(),
                             fields_.ts, fields_.seq, fields_.kind,
                             fields_.jsonb.empty() ? nullptr : fields_.jsonb.data(),
                             fields_.has_bytes ? fields_.bytes.data() : nullptr};
      const int lens[8] = {static_cast<int>(fields_.key.size()),
                           static_cast<int>(fields_.app_id.size()),
                           static_cast<int>(fields_.instance.size()), 8, 8,
                           static_cast<int>(std::strlen(fields_.kind)),
                           static_cast<int>(fields_.jsonb.size()),
                           static_cast<int>(fields_.bytes.size())};
      if (auto r = exec(c, "SAVEPOINT one"); !r) return abort_txn(c, r.error());
      ResultPtr res(PQexecParams(c, sql.c_str(), 8, types, vals, lens, formats, 0));
      if (res && PQresultStatus(res.get()) == PGRES_COMMAND_OK) {
        if (auto r = exec(c, "RELEASE SAVEPOINT one"); !r) return abort_txn(c, r.error());
        continue;
      }
      if (PQstatus(c) == CONNECTION_BAD || !is_data_error(sqlstate(res.get()))) {
        return abort_txn(c, result_error(c, res.get()));
      }
      ++refused;
      SDN_LOG_RATELIMITED(spdlog::level::err, "archive postgres: record for {} refused: {}",
                          rec->key, result_error(c, res.get()));
      if (auto r = exec(c, "ROLLBACK TO SAVEPOINT one"); !r) return abort_txn(c, r.error());
    }
    if (auto r = exec(c, "COMMIT"); !r) return abort_txn(c, r.error());
    if (refused == 0) {
      SDN_LOG_RATELIMITED(spdlog::level::warn,
                          "archive postgres: batch refused ({}) but every record went in alone",
                          why);
    }
    return refused;
  }

  Expected<std::size_t, std::string> abort_txn(PGconn* c, const std::string& e) {
    if (PQstatus(c) == CONNECTION_BAD) {
      set_connected(false);
      writer_.reset();
    } else {
      (void)exec(c, "ROLLBACK");
    }
    return unexpected("postgres: insert: " + e);
  }

  PostgresConfig cfg_;
  ConnPtr writer_;  // writer thread only
  std::mutex reader_mu_;
  ConnPtr reader_;  // guarded by reader_mu_
  const std::string copy_sql_;
  std::string buf_;       // the COPY payload, reused
  std::string json_buf_;  // reused
  RowFields fields_;
};

}  // namespace

Expected<std::unique_ptr<Archive>, std::string> open_postgres_archive(const PostgresConfig& cfg) {
  if (!valid_table_name(cfg.table)) {
    return unexpected("postgres: bad table name '" + cfg.table + "' (letters, digits and '_', at most " +
                      std::to_string(kMaxTableName) + " characters, not starting with a digit)");
  }
  auto writer = connect(cfg.dsn, "sdnator:" + cfg.table + ":w", cfg.connect_timeout);
  if (!writer) return unexpected(writer.error());
  if (auto r = exec(writer->get(), schema_sql(cfg.table)); !r) {
    return unexpected("postgres: cannot create table " + cfg.table + ": " + r.error());
  }
  auto reader = connect(cfg.dsn, "sdnator:" + cfg.table + ":q", cfg.connect_timeout);
  if (!reader) return unexpected(reader.error());
  std::unique_ptr<Spool> spool;
  if (!cfg.spool_dir.empty()) {
    auto s = Spool::open(cfg.spool_dir, cfg.table, cfg.spool_max_bytes);
    if (!s) return unexpected("postgres: " + s.error());
    spool = std::move(*s);
  }
  return std::unique_ptr<Archive>(std::make_unique<PostgresArchive>(
      cfg, std::move(*writer), std::move(*reader), std::move(spool)));
}

}  // namespace sdn::data
