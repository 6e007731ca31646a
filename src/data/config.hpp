// Configuration of the data layer, read from the TOML sections [data], [redis], [sqlite],
// [postgres], [coordinator] and [acl] (README "Configuration"). Every value has a default: with no
// config at all the embedded defaults run (in-process bus, SQLite archive).
#pragma once

#include <chrono>
#include <string>

#include "core/config.hpp"
#include "data/acl.hpp"
#include "data/archive.hpp"
#include "data/updates.hpp"

namespace sdn::data {

struct DueConfig {
  std::chrono::milliseconds heartbeat_interval{1000};
  std::string instance;  // empty = a random UUID (v4) per Due
  bool send_goodbye = true;  // on destruction; tests turn it off to look like a crash
};

struct CoordinatorConfig {
  bool enabled = true;                        // run a Coordinator inside `sdnator run`
  int missed_beats = 3;                       // offline after this many heartbeat intervals
  std::chrono::milliseconds check_interval{100};
  std::chrono::milliseconds checkpoint_interval{5000};  // state archived at least this often
                                                        // (and on every change)
};

struct DataConfig {
  std::string updates = "inproc";   // "inproc" | "redis"
  std::string archive = "sqlite";   // "sqlite" | "postgres" | "none"
  // When the configured PostgreSQL archive cannot be reached at start: log the error and run on
  // the embedded SQLite archive (true), or fail (false).
  bool archive_fallback = true;
  RedisConfig redis;
  SqliteConfig sqlite;
  PostgresConfig postgres;
  DueConfig due;
  CoordinatorConfig coordinator;
  AclConfig acl;  // [data] acl and the [acl] section (docs/acl.md)
};

// Reads the sections, recording problems (unknown backend names, out-of-range values) on `cfg`.
DataConfig data_config_from(core::Config& cfg);

}  // namespace sdn::data
