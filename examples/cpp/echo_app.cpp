// sdnator-example-echo: a C++ DUE app ("cppecho") that answers every record on demo/py/** with
// {"echo": <value>, "seq": <its seq>} on demo/cpp/echo, over Redis. It is the C++ half of the
// cross-language example (examples/python/counter_app.py is the other) and shows the app model
// from C++: registration, an assignment, a subscription and paced writes.
//
// Handlers run on the Redis reader thread; this one only queues the record, and a worker thread
// of ours writes the echo (so the reader is never held, and nothing is written before init() has
// returned).
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/config.hpp"
#include "core/log.hpp"
#include "data/config.hpp"
#include "data/due.hpp"
#include "data/wire.hpp"

namespace {

using namespace sdn;

constexpr std::string_view kAppId = "cppecho";
constexpr std::string_view kInterest = "demo/py/**";
constexpr std::string_view kCapability = "demo/cpp/echo";
constexpr double kFreq = 100;
// Records waiting for the worker; past this they are dropped and counted (a cap, STYLE.md).
constexpr std::size_t kMaxQueued = 10000;

volatile std::sig_atomic_t g_stop = 0;

struct Options {
  std::string config_path;
  std::string redis_host;
  int redis_port = 0;
  int count = 0;         // exit after this many echoes; 0 = until a signal
  double timeout_s = 0;  // give up after this long; 0 = never
  int heartbeat_ms = 0;  // 0 = from the config (default 1000)
  bool archive_received = false;
  std::string log_level = "warn";
};

data::Json assignment_json(const data::AssignmentSet& s) {
  data::Json items = data::Json::array();
  for (const auto& a : s.items) {
    data::Json o{{"key", a.key}, {"consumers", a.consumers}};
    if (a.freq) o["freq"] = *a.freq;
    items.push_back(std::move(o));
  }
  return {{"epoch", s.epoch}, {"active", s.active}, {"assignments", std::move(items)}};
}

void print_line(const data::Json& j) {
  std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

// The data-layer config: the TOML file when given (the same file `sdnator coordinator` reads),
// then the command-line flags on top. Only Redis makes sense here: the apps are in other
// processes.
Expected<data::DataConfig, std::string> load_config(const Options& o) {
  data::DataConfig d;
  if (!o.config_path.empty()) {
    auto cfg = core::Config::load_file(o.config_path);
    if (!cfg) return unexpected(cfg.error());
    d = data::data_config_from(*cfg);
    // The file may also hold [controller], [apps], ...: unknown keys are not ours to judge, but
    // a bad value in a data section is.
    for (const auto& p : cfg->finish())
      if (p.rfind("data.", 0) == 0 || p.rfind("redis.", 0) == 0 || p.rfind("sqlite.", 0) == 0 ||
          p.rfind("postgres.", 0) == 0)
        return unexpected(p);
  } else {
    d.updates = "redis";
    d.archive = "none";
  }
  if (d.updates != "redis") return unexpected(std::string("data.updates must be \"redis\""));
  if (!o.redis_host.empty()) d.redis.host = o.redis_host;
  if (o.redis_port > 0) d.redis.port = static_cast<uint16_t>(o.redis_port);
  if (o.heartbeat_ms > 0) d.due.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  return d;
}

int run(const Options& o) {
  auto cfg = load_config(o);
  if (!cfg) {
    fmt::print(stderr, "sdnator-example-echo: config: {}\n", cfg.error());
    return 2;
  }
  auto backends = data::Backends::open(*cfg);
  if (!backends) {
    fmt::print(stderr, "sdnator-example-echo: {}\n", backends.error());
    return 1;
  }
  data::Archive* archive = o.archive_received ? (*backends)->archive() : nullptr;
  if (o.archive_received && !archive) {
    fmt::print(stderr,
               "sdnator-example-echo: --archive-received needs an archive (-c with "
               "data.archive set)\n");
    return 2;
  }

  data::Due due(*backends, cfg->due);

  std::mutex mu;  // guards queue, ready, dropped
  std::condition_variable cv;
  std::deque<data::RecordPtr> queue;
  bool ready = false;
  bool quit = false;
  uint64_t dropped = 0;
  std::atomic<uint64_t> received{0}, echoed{0}, refused{0};

  due.on_assignment([](const data::AssignmentSet& s) {
    print_line({{"event", "assignment"}, {"app", kAppId}, {"assignment", assignment_json(s)}});
  });

  // Subscribe before registering: once the Coordinator has our registration, a producer may
  // send at once, and the first record must not miss us.
  auto sub = due.observe(kInterest, [&](const data::RecordPtr& r) {
    received.fetch_add(1, std::memory_order_relaxed);
    // Python apps have no archive connection: keep what they publish on their behalf.
    if (archive) archive->append(r);
    {
      std::lock_guard lock(mu);
      if (queue.size() >= kMaxQueued) {
        ++dropped;
        return;
      }
      queue.push_back(r);
    }
    cv.notify_one();
  });
  if (!sub) {
    fmt::print(stderr, "sdnator-example-echo: {}\n", sub.error());
    return 2;
  }

  std::thread worker([&] {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return quit || (ready && !queue.empty()); });
      if (quit) return;
      auto r = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      data::Json echo =
          r->value.is_json() ? r->value.json() : data::Json(data::base64_encode(r->value.bytes()));
      data::Json out{{"echo", std::move(echo)}, {"seq", r->seq}};
      if (!r->value.is_json()) out["bytes"] = true;  // "echo" holds the base64 of raw bytes
      if (auto w = due.write(kCapability, data::Value(std::move(out)), data::kNoWait); w)
        echoed.fetch_add(1, std::memory_order_relaxed);
      else
        refused.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
    }
  });

  auto stop_worker = [&] {
    {
      std::lock_guard lock(mu);
      quit = true;
    }
    cv.notify_all();
    worker.join();
  };

  std::vector<data::Interest> interests{{std::string(kInterest), kFreq}};
  std::vector<data::Capability> caps{{std::string(kCapability), kFreq, false}};
  if (auto r = due.init(std::string(kAppId), data::kProducer | data::kConsumer, interests, caps);
      !r) {
    fmt::print(stderr, "sdnator-example-echo: {}\n", r.error());
    stop_worker();
    return 2;
  }
  {
    std::lock_guard lock(mu);
    ready = true;
  }
  cv.notify_all();
  print_line({{"event", "started"},
              {"app", kAppId},
              {"instance", due.instance()},
              {"redis", fmt::format("{}:{}", cfg->redis.host, cfg->redis.port)}});

  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(o.timeout_s));
  bool timed_out = false;
  while (!g_stop && (o.count <= 0 || echoed.load() < static_cast<uint64_t>(o.count))) {
    if (o.timeout_s > 0 && Clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  sub->cancel();
  stop_worker();
  bool synced = due.sync(std::chrono::seconds(5));  // the last echoes out (and archived)
  auto st = due.stats();
  data::Json summary{{"event", "summary"},
                     {"app", kAppId},
                     {"instance", due.instance()},
                     {"received", received.load()},
                     {"echoed", echoed.load()},
                     {"refused", refused.load()},
                     {"dropped", dropped},
                     {"paced_coalesced", st.paced_coalesced},
                     {"synced", synced},
                     {"assignment", assignment_json(due.assignments())}};
  summary["archive_received"] = archive != nullptr;  // received records kept on their behalf
  print_line(summary);
  if (timed_out) {
    fmt::print(stderr, "sdnator-example-echo: timed out after {} s with {} of {} echoes\n",
               o.timeout_s, echoed.load(), o.count);
    return 1;
  }
  return synced ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"sdnator example: a C++ app that echoes what demo/py/** publishes, over Redis"};
  app.add_option("-c,--config", o.config_path, "sdnator TOML config ([data], [redis], [sqlite])")
      ->check(CLI::ExistingFile);
  app.add_option("--redis-host", o.redis_host, "Redis host (default 127.0.0.1 or the config's)");
  app.add_option("--redis-port", o.redis_port, "Redis port (default 6379 or the config's)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--count", o.count, "exit after N echoes (0 = until SIGINT/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout", o.timeout_s, "give up after S seconds, status 1 (0 = never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--heartbeat-ms", o.heartbeat_ms, "heartbeat interval (default: the config's)")
      ->check(CLI::Range(10, 3'600'000));
  app.add_flag("--archive-received", o.archive_received,
               "also archive the records received (for producers without an archive, e.g. "
               "Python apps); needs -c with an archive");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error, critical, off");
  CLI11_PARSE(app, argc, argv);
  if (!core::set_log_level(o.log_level)) {
    fmt::print(stderr, "sdnator-example-echo: unknown log level '{}'\n", o.log_level);
    return 2;
  }
  return run(o);
}
