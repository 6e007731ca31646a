// [data], [redis], [sqlite], [postgres], [coordinator], [acl] -> DataConfig (config.hpp).
#include "data/config.hpp"

#include <cctype>

#include <fmt/format.h>

#include "data/sentinel.hpp"

namespace sdn::data {
namespace {

Retention read_retention(core::Config& c, std::string_view sec) {
  Retention r;
  r.max_age = std::chrono::seconds(c.get_int(sec, "retention_max_age_s", 0, 0, int64_t{1} << 40));
  r.max_per_key = static_cast<std::size_t>(
      c.get_int(sec, "retention_max_per_key", 0, 0, int64_t{1} << 40));
  r.interval = std::chrono::milliseconds(
      c.get_int(sec, "retention_interval_ms", 1000, 10, 86'400'000));
  return r;
}

}  // namespace

DataConfig data_config_from(core::Config& c) {
  DataConfig d;
  d.updates = c.get_string("data", "updates", d.updates);
  if (d.updates != "inproc" && d.updates != "redis")
    c.add_problem(fmt::format("data.updates: '{}' is not a backend (inproc, redis)", d.updates));
  d.archive = c.get_string("data", "archive", d.archive);
  if (d.archive != "sqlite" && d.archive != "postgres" && d.archive != "none")
    c.add_problem(
        fmt::format("data.archive: '{}' is not a backend (sqlite, postgres, none)", d.archive));
  d.archive_fallback = c.get_bool("data", "archive_fallback", d.archive_fallback);
  d.due.heartbeat_interval =
      std::chrono::milliseconds(c.get_int("data", "heartbeat_ms", 1000, 10, 3'600'000));

  auto& r = d.redis;
  r.host = c.get_string("redis", "host", r.host);
  r.port = static_cast<uint16_t>(c.get_int("redis", "port", r.port, 1, 65535));
  r.user = c.get_string("redis", "user", r.user);
  r.password = c.get_string("redis", "password", r.password);
  r.sentinels = c.get_string_list("redis", "sentinels", {});
  r.sentinel_master = c.get_string("redis", "sentinel_master", "");
  for (const auto& s : r.sentinels)
    if (auto hp = parse_host_port(s); !hp) c.add_problem("redis.sentinels: " + hp.error());
  if (!r.sentinel_master.empty() && r.sentinels.empty())
    c.add_problem("redis.sentinel_master: set, but redis.sentinels lists no sentinel");
  r.batch_size = static_cast<std::size_t>(c.get_int("redis", "batch_size", 100, 1, 1'000'000));
  r.flush_interval =
      std::chrono::microseconds(c.get_int("redis", "flush_interval_us", 1000, 0, 10'000'000));
  r.max_buffered =
      static_cast<std::size_t>(c.get_int("redis", "max_buffered", 100000, 0, 100'000'000));
  r.max_tracked_keys =
      static_cast<std::size_t>(c.get_int("redis", "max_tracked_keys", 100000, 1, 100'000'000));
  r.connect_timeout =
      std::chrono::milliseconds(c.get_int("redis", "connect_timeout_ms", 1000, 10, 60'000));
  r.reconnect_min =
      std::chrono::milliseconds(c.get_int("redis", "reconnect_min_ms", 50, 1, 60'000));
  r.reconnect_max =
      std::chrono::milliseconds(c.get_int("redis", "reconnect_max_ms", 2000, 1, 600'000));
  if (r.reconnect_max < r.reconnect_min)
    c.add_problem("redis.reconnect_max_ms: must not be below reconnect_min_ms");

  auto& s = d.sqlite;
  s.path = c.get_string("sqlite", "path", s.path);
  s.batch_size = static_cast<std::size_t>(c.get_int("sqlite", "batch_size", 1000, 1, 1'000'000));
  s.flush_interval =
      std::chrono::milliseconds(c.get_int("sqlite", "flush_interval_ms", 50, 0, 600'000));
  s.max_queued =
      static_cast<std::size_t>(c.get_int("sqlite", "max_queued", 1'000'000, 1, 1'000'000'000));
  s.retention = read_retention(c, "sqlite");
  if (s.path == ":memory:") c.add_problem("sqlite.path: ':memory:' is not supported (use a file)");

  auto& p = d.postgres;
  p.dsn = c.get_string("postgres", "dsn", p.dsn);
  p.table = c.get_string("postgres", "table", p.table);
  p.batch_size =
      static_cast<std::size_t>(c.get_int("postgres", "batch_size", 1000, 1, 1'000'000));
  p.flush_interval =
      std::chrono::milliseconds(c.get_int("postgres", "flush_interval_ms", 50, 0, 600'000));
  p.max_queued =
      static_cast<std::size_t>(c.get_int("postgres", "max_queued", 1'000'000, 1, 1'000'000'000));
  p.connect_timeout =
      std::chrono::milliseconds(c.get_int("postgres", "connect_timeout_ms", 2000, 100, 60'000));
  p.reconnect_max =
      std::chrono::milliseconds(c.get_int("postgres", "reconnect_max_ms", 2000, 10, 600'000));
  p.retention = read_retention(c, "postgres");
  p.spool_dir = c.get_string("postgres", "spool_dir", p.spool_dir);
  p.spool_after =
      std::chrono::milliseconds(c.get_int("postgres", "spool_after_ms", 1000, 0, 3'600'000));
  p.spool_queue =
      static_cast<std::size_t>(c.get_int("postgres", "spool_queue", 10000, 0, 1'000'000'000));
  p.spool_max_bytes = static_cast<uint64_t>(
      c.get_int("postgres", "spool_max_mb", 1024, 1, 1'000'000)) << 20;
  for (char ch : p.table)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) {
      c.add_problem(fmt::format("postgres.table: '{}' must be letters, digits and _", p.table));
      break;
    }
  if (d.archive == "postgres" && p.dsn.empty())
    c.add_problem("postgres.dsn: required when data.archive = \"postgres\"");

  auto& a = d.acl;
  std::string mode = c.get_string("data", "acl", "off");
  if (mode == "enforce") a.mode = AclMode::kEnforce;
  else if (mode != "off")
    c.add_problem(fmt::format("data.acl: '{}' is not a mode (off, enforce)", mode));
  a.secret = c.get_string("acl", "secret", "");
  a.apps = c.get_string_list("acl", "apps", {});
  a.user_prefix = c.get_string("acl", "user_prefix", a.user_prefix);
  // limits = ["ids: network/traffic/** network/ids/**", ...]: app, colon, patterns.
  for (const auto& line : c.get_string_list("acl", "limits", {})) {
    auto colon = line.find(':');
    std::string app = colon == std::string::npos ? "" : line.substr(0, colon);
    while (!app.empty() && app.back() == ' ') app.pop_back();
    auto id = Key::parse_concrete(app);
    if (!id || id->segments().size() != 1 || !id->app_id().empty()) {
      c.add_problem(fmt::format("acl.limits: '{}' does not start with 'app:'", line));
      continue;
    }
    auto& pats = a.limits[app];
    std::size_t i = colon + 1;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') ++i;
      std::size_t j = line.find(' ', i);
      if (j == std::string::npos) j = line.size();
      if (j > i) {
        std::string pat = line.substr(i, j - i);
        if (auto k = Key::parse(pat); !k) c.add_problem("acl.limits: " + k.error());
        else pats.push_back(std::move(pat));
      }
      i = j;
    }
  }
  a.admin = r;
  a.admin.user = c.get_string("acl", "admin_user", r.user);
  a.admin.password = c.get_string("acl", "admin_password", r.password);
  a.redis_users = d.updates == "redis" && !a.secret.empty();
  if (!a.secret.empty() && a.secret.size() < 16)
    c.add_problem("acl.secret: use at least 16 characters (it keys every app's Redis password)");
  for (const auto& app : a.apps)
    if (auto k = Key::parse_concrete(app); !k || k->segments().size() != 1 || !k->app_id().empty())
      c.add_problem(fmt::format("acl.apps: '{}' is not an app id", app));

  auto& co = d.coordinator;
  co.enabled = c.get_bool("coordinator", "enabled", co.enabled);
  co.missed_beats = static_cast<int>(c.get_int("coordinator", "missed_beats", 3, 1, 1000));
  co.check_interval =
      std::chrono::milliseconds(c.get_int("coordinator", "check_interval_ms", 100, 1, 60'000));
  co.checkpoint_interval = std::chrono::milliseconds(
      c.get_int("coordinator", "checkpoint_interval_ms", 5000, 10, 3'600'000));
  return d;
}

}  // namespace sdn::data
