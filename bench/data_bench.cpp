// The data-layer benchmark (seed 002 section 5, docs/data-bench.md): end-to-end latency against
// message size, application throughput with and without batching, Data Archives batching, and
// scalability over producer/consumer pairs, for DUE over Redis side by side with raw hiredis in
// the same run, plus the in-process bus. Prints a table per section and writes every figure as
// JSON (bench/plot_data_bench.py turns that into docs/data-bench.png).
//
//   bash scripts/services.sh up && source /tmp/sdnator-services/env
//   build-bench/bin/data_bench --json docs/data-bench.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <linux/futex.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include "data/archive.hpp"
#include "data/due.hpp"
#include "data/updates.hpp"
#include "data/wire.hpp"

namespace {

using namespace sdn::data;  // NOLINT: benchmark-local brevity
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Options and counts

struct Options {
  std::string redis_host = "127.0.0.1";
  int redis_port = 6379;
  std::string pg_dsn;
  std::string sqlite_dir;
  bool quick = false;
  std::vector<std::string> only;
  std::string json_path;
};

// How many messages each measurement uses; --quick shrinks everything for a CI smoke run.
struct Counts {
  int lat_unbatched = 2000;     // ping-pong messages per size
  int lat_batches = 50;         // batches of 100 per size (fewer for 100 KB)
  int tp_batch1 = 50000;        // throughput messages, unbatched
  int tp_batch100 = 200000;     // throughput messages, batch 100
  int tp_repeats = 5;           // throughput runs per point; the median is reported
  int inproc_ops = 3000000;     // in-process publishes per row
  double scale_seconds = 2.0;   // measured window per scalability point
  double scale_warmup = 0.5;
  // Archive records per (backend, batch) point.
  int sqlite_n[3] = {20000, 300000, 500000};
  int pg_n[3] = {3000, 100000, 300000};
};

Counts counts_for(bool quick) {
  Counts c;
  if (!quick) return c;
  c.lat_unbatched = 200;
  c.lat_batches = 5;
  c.tp_batch1 = 5000;
  c.tp_batch100 = 20000;
  c.tp_repeats = 1;
  c.inproc_ops = 300000;
  c.scale_seconds = 0.5;
  c.scale_warmup = 0.2;
  c.sqlite_n[0] = 2000; c.sqlite_n[1] = 20000; c.sqlite_n[2] = 50000;
  c.pg_n[0] = 300; c.pg_n[1] = 10000; c.pg_n[2] = 30000;
  return c;
}

constexpr std::size_t kSizes[] = {100, 1024, 10240, 102400};
// At most this many payload bytes in flight between a producer and its consumer. Redis
// disconnects a subscriber whose output buffer passes 32 MB (client-output-buffer-limit pubsub),
// so every producer here is flow-controlled to stay well under it.
constexpr std::size_t kWindowBytes = 4u << 20;
constexpr std::chrono::seconds kTimeout{60};

uint32_t window_msgs(std::size_t size) {
  return static_cast<uint32_t>(std::max<std::size_t>(200, kWindowBytes / size));
}

int64_t now_ns() { return wall_ns(); }  // one clock for raw and DUE timestamps

double secs_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds (user + system) this process has used, all threads: with a shared, loaded machine
// the wall-clock rates move with the neighbours, CPU per message much less.
double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// CPU seconds this thread has run: for one-thread CPU-bound loops it is the time "on one core"
// whatever else the machine runs (preemption by a neighbour does not count).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::vector<double> loadavg() {
  std::vector<double> l(3, 0.0);
  std::ifstream f("/proc/loadavg");
  f >> l[0] >> l[1] >> l[2];
  return l;
}

// ---------------------------------------------------------------------------------------------
// A counter one thread bumps and one other thread waits on with a deadline (a futex, so a
// waiting producer sleeps instead of taking one of the two cores from the consumer or Redis).
// The bumping thread wakes the waiter only once the count reaches what it waits for: a wake-up
// per message would cost the consumer a system call and the machine a context switch each.

class Counter {
 public:
  uint32_t load() const { return v_.load(std::memory_order_acquire); }
  void add(uint32_t n = 1) {
    uint32_t now = v_.fetch_add(n, std::memory_order_seq_cst) + n;
    if (waiting_.load(std::memory_order_seq_cst) && now >= target_.load(std::memory_order_relaxed))
      syscall(SYS_futex, addr(), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
  }
  // True once the count reached `target`; false at the deadline. One waiter at a time.
  bool wait_ge(uint32_t target, Clock::time_point deadline) {
    for (int spin = 0;; ++spin) {
      uint32_t cur = v_.load(std::memory_order_acquire);
      if (cur >= target) return true;
      if (spin < 50) continue;
      if (Clock::now() > deadline) return false;
      target_.store(target, std::memory_order_relaxed);
      waiting_.store(true, std::memory_order_seq_cst);
      cur = v_.load(std::memory_order_seq_cst);
      if (cur < target) {
        timespec ts{0, 10'000'000};
        syscall(SYS_futex, addr(), FUTEX_WAIT_PRIVATE, cur, &ts, nullptr, 0);
      }
      waiting_.store(false, std::memory_order_seq_cst);
    }
  }

 private:
  uint32_t* addr() { return reinterpret_cast<uint32_t*>(&v_); }
  std::atomic<uint32_t> v_{0};
  std::atomic<uint32_t> target_{0};
  std::atomic<bool> waiting_{false};
};

// Flow control for the throughput runs: with `window` messages in flight the producer sleeps
// until half of them have arrived (hysteresis, so it is not woken once per message).
void throttle(Counter& got, uint32_t sent, uint32_t window, Clock::time_point deadline) {
  if (sent - std::min(sent, got.load()) >= window) got.wait_ge(sent - window / 2, deadline);
}

// ---------------------------------------------------------------------------------------------
// Statistics

struct Pct {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
  std::size_t n = 0;
};

Pct percentiles(std::vector<double> v) {
  Pct p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    std::size_t i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  p.max = v.back();
  return p;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string si(double v) {
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string size_name(std::size_t s) {
  if (s >= 1024 && s % 1024 == 0) return fmt::format("{} KB", s / 1024);
  return fmt::format("{} B", s);
}

// ---------------------------------------------------------------------------------------------
// Raw hiredis

struct RedisFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using RedisPtr = std::unique_ptr<redisContext, RedisFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

RedisPtr redis_connect(const Options& o) {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout(o.redis_host.c_str(), o.redis_port, tv);
  if (!c || c->err) {
    std::string err = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    throw std::runtime_error(fmt::format("redis {}:{}: {}", o.redis_host, o.redis_port, err));
  }
  timeval rt{20, 0};  // a reply that takes this long means the run is broken, not slow
  redisSetTimeout(c, rt);
  return RedisPtr(c);
}

ReplyPtr redis_cmd(redisContext* c, const char* fmt_str, ...) {
  va_list ap;
  va_start(ap, fmt_str);
  void* r = redisvCommand(c, fmt_str, ap);
  va_end(ap);
  if (!r) throw std::runtime_error(fmt::format("redis: {}", c->errstr));
  return ReplyPtr(static_cast<redisReply*>(r));
}

// A SUBSCRIBE connection; read() returns the next message's payload (valid until the next call).
class RawSubscriber {
 public:
  RawSubscriber(const Options& o, const std::string& channel) : c_(redis_connect(o)) {
    auto r = redis_cmd(c_.get(), "SUBSCRIBE %s", channel.c_str());
    if (r->type != REDIS_REPLY_ARRAY) throw std::runtime_error("redis: SUBSCRIBE refused");
  }
  // Null on a connection error or timeout.
  const redisReply* read() {
    for (;;) {
      void* rp = nullptr;
      if (redisGetReply(c_.get(), &rp) != REDIS_OK) return nullptr;
      last_.reset(static_cast<redisReply*>(rp));
      const redisReply* r = last_.get();
      if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
          r->element[2]->type == REDIS_REPLY_STRING)
        return r->element[2];
    }
  }
  const char* error() const { return c_->errstr; }

 private:
  RedisPtr c_;
  ReplyPtr last_;
};

// A publishing connection: batch 1 is PUBLISH and wait for the reply; batch N appends N PUBLISH
// commands (one write) and then reads the N replies (Redis pipelining).
class RawPublisher {
 public:
  RawPublisher(const Options& o, std::string channel)
      : c_(redis_connect(o)), channel_(std::move(channel)) {}
  void append(const std::string& payload) {
    redisAppendCommand(c_.get(), "PUBLISH %b %b", channel_.data(), channel_.size(), payload.data(),
                       payload.size());
    ++pending_;
  }
  void sync() {
    for (; pending_ > 0; --pending_) {
      void* rp = nullptr;
      if (redisGetReply(c_.get(), &rp) != REDIS_OK)
        throw std::runtime_error(fmt::format("redis PUBLISH: {}", c_->errstr));
      freeReplyObject(rp);
    }
  }

 private:
  RedisPtr c_;
  std::string channel_;
  int pending_ = 0;
};

std::string payload_of(std::size_t size) {
  std::string p(size, '\0');
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<char>('a' + i % 26);
  return p;
}

void stamp(std::string& payload, int64_t ts) { std::memcpy(payload.data(), &ts, sizeof ts); }
int64_t stamp_of(const redisReply* r) {
  int64_t ts = 0;
  if (r->len >= static_cast<decltype(r->len)>(sizeof ts)) std::memcpy(&ts, r->str, sizeof ts);
  return ts;
}

std::atomic<int> g_channel_seq{0};
std::string fresh_channel(const char* what) {
  return fmt::format("bench:{}:{}:{}", what, ::getpid(), g_channel_seq.fetch_add(1));
}
std::string fresh_key(const char* what) {
  return fmt::format("bench/{}/p{}/n{}", what, ::getpid(), g_channel_seq.fetch_add(1));
}

// ---------------------------------------------------------------------------------------------
// DUE set-up

RedisConfig redis_config(const Options& o, std::size_t batch) {
  RedisConfig c;
  c.host = o.redis_host;
  c.port = static_cast<uint16_t>(o.redis_port);
  c.batch_size = batch;
  return c;
}

std::shared_ptr<Backends> redis_backends(const Options& o, std::size_t batch) {
  auto u = make_redis_updates(redis_config(o, batch));
  if (!u) throw std::runtime_error("make_redis_updates: " + u.error());
  return std::make_shared<Backends>(std::move(*u), nullptr);
}

std::unique_ptr<Due> make_due(std::shared_ptr<Backends> b, const std::string& app, unsigned roles) {
  DueConfig cfg;
  cfg.send_goodbye = false;
  auto d = std::make_unique<Due>(std::move(b), cfg);
  auto r = d->init(app, roles);
  if (!r) throw std::runtime_error("Due::init: " + r.error());
  return d;
}

Value json_value_of(std::size_t size) { return Value(Json(payload_of(size))); }

// Returns once `cons` receives what `prod` writes to `key`/hs. Call it after `cons` observed `key`:
// the consumer's subscriptions share one Redis connection and Redis runs its commands in order, so
// a record arriving on the later subscription proves the earlier one is live. (Records published
// before Redis has the SUBSCRIBE are lost; on a loaded machine the confirmation can outlast
// subscribe()'s wait.)
void handshake(Due& prod, Due& cons, const std::string& key) {
  Counter seen;
  auto hs = cons.observe(key + "/hs@" + prod.app_id(), [&](const RecordPtr&) { seen.add(); });
  if (!hs) throw std::runtime_error("observe: " + hs.error());
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!seen.wait_ge(1, Clock::now() + std::chrono::milliseconds(20))) {
    if (Clock::now() > deadline) throw std::runtime_error("handshake: consumer never subscribed");
    (void)prod.write(key + "/hs", Json(1), kPubOnly | kNoWait);
  }
  hs->cancel();
}

// A producer and a consumer DUE client, each with its own Redis backends (connections and
// threads), as two separate apps would have.
struct DuePair {
  std::shared_ptr<Backends> pb, cb;
  std::unique_ptr<Due> prod, cons;
  Due::Subscription sub;
  std::string key;

  DuePair(const Options& o, std::size_t batch, const char* what) {
    pb = redis_backends(o, batch);
    cb = redis_backends(o, batch);
    prod = make_due(pb, "benchprod", kProducer);
    cons = make_due(cb, "benchcons", kConsumer);
    key = fresh_key(what);
  }
  void observe(Due::Handler h) {
    auto s = cons->observe(key + "@benchprod", std::move(h));
    if (!s) throw std::runtime_error("observe: " + s.error());
    sub = std::move(*s);
    handshake(*prod, *cons, key);
  }
  ~DuePair() {
    sub.cancel();
    cons.reset();
    prod.reset();
  }
};

// ---------------------------------------------------------------------------------------------
// Results

struct Report {
  Json root = Json::object();
  struct Target {
    std::string name, value, goal;
    bool pass;
  };
  std::vector<Target> targets;
  std::vector<std::string> failures;

  void target(std::string name, std::string value, std::string goal, bool pass) {
    fmt::print("  target: {:<58} {:>14}  (goal {})  {}\n", name, value, goal,
               pass ? "PASS" : "MISS");
    root["targets"].push_back({{"name", name}, {"value", value}, {"goal", goal}, {"pass", pass}});
    targets.push_back({std::move(name), std::move(value), std::move(goal), pass});
  }
  void fail(std::string what) {
    fmt::print("  FAILED: {}\n", what);
    root["failures"].push_back(what);
    failures.push_back(std::move(what));
  }
};

// ---------------------------------------------------------------------------------------------
// 1. End-to-end latency

// Latencies in µs from write to receipt. Batch 1 sends one message and waits for it to arrive
// before the next (no queueing); batch N writes N back to back, each stamped when written, and
// waits for all N before the next batch.
std::vector<double> latency_raw(const Options& o, std::size_t size, int batch, int rounds) {
  std::string ch = fresh_channel("lat");
  RawSubscriber sub(o, ch);
  RawPublisher pub(o, ch);
  const int total = rounds * batch;
  std::vector<double> lat(static_cast<std::size_t>(total));
  Counter got;
  std::atomic<bool> failed{false};
  std::thread consumer([&] {
    for (int i = 0; i < total; ++i) {
      const redisReply* r = sub.read();
      if (!r) {
        failed = true;
        got.add(1u << 30);
        return;
      }
      lat[static_cast<std::size_t>(i)] = static_cast<double>(now_ns() - stamp_of(r)) / 1e3;
      got.add();
    }
  });
  std::string payload = payload_of(size);
  for (int round = 0; round < rounds && !failed; ++round) {
    for (int j = 0; j < batch; ++j) {
      stamp(payload, now_ns());
      pub.append(payload);
    }
    pub.sync();
    if (!got.wait_ge(static_cast<uint32_t>((round + 1) * batch), Clock::now() + kTimeout)) {
      failed = true;
      break;
    }
  }
  consumer.join();
  if (failed) throw std::runtime_error(fmt::format("raw latency run failed: {}", sub.error()));
  return lat;
}

std::vector<double> latency_due(std::shared_ptr<Backends> pb, std::shared_ptr<Backends> cb,
                                std::size_t size, int batch, int rounds, unsigned flags) {
  auto prod = make_due(pb, "benchprod", kProducer);
  auto cons = make_due(cb, "benchcons", kConsumer);
  std::string key = fresh_key("lat");
  const int total = rounds * batch;
  std::vector<int64_t> sent(static_cast<std::size_t>(total) + 1);
  std::vector<double> lat(static_cast<std::size_t>(total));
  Counter got;
  auto sub = cons->observe(key + "@benchprod", [&](const RecordPtr& r) {
    int64_t t = now_ns();
    if (r->seq >= 1 && r->seq <= static_cast<uint64_t>(total))
      lat[r->seq - 1] = static_cast<double>(t - sent[r->seq - 1]) / 1e3;
    got.add();
  });
  if (!sub) throw std::runtime_error("observe: " + sub.error());
  handshake(*prod, *cons, key);
  Value proto = json_value_of(size);
  int i = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int j = 0; j < batch; ++j, ++i) {
      Value v = proto;  // the copy is the app's, made before the clock starts
      sent[static_cast<std::size_t>(i)] = now_ns();
      auto w = prod->write(key, std::move(v), flags);
      if (!w) throw std::runtime_error("write: " + w.error());
    }
    if (!got.wait_ge(static_cast<uint32_t>(i), Clock::now() + kTimeout))
      throw std::runtime_error(fmt::format("DUE latency run: {} of {} records arrived; updates "
                                           "stats: dropped {} gaps {}",
                                           got.load(), i, pb->updates().stats().dropped,
                                           cb->updates().stats().gaps));
  }
  sub->cancel();
  return lat;
}

void section_latency(const Options& o, const Counts& c, Report& rep) {
  fmt::print("\n== 1. End-to-end latency, producer -> Redis -> consumer (µs, write to receipt) ==\n");
  fmt::print("   raw: PUBLISH + a SUBSCRIBE connection, timestamp in the payload;\n"
             "   DUE: Due::write (JSON string value of the given size, PUB_ONLY) -> Due::observe\n"
             "   callback, producer and consumer each with their own Redis backends.\n");
  fmt::print("{:<16} {:<22} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9}\n", "impl", "mode", "size", "n",
             "p50", "p90", "p99", "mean");
  Json& out = rep.root["latency"];
  auto emit = [&](const std::string& impl, const std::string& mode, int batch, std::size_t size,
                  const std::vector<double>& v) {
    // The first batch (or the first 10 pings) warms connections and allocators; drop it.
    std::size_t skip = std::min(v.size() / 10, static_cast<std::size_t>(batch == 1 ? 10 : batch));
    Pct p = percentiles(std::vector<double>(v.begin() + static_cast<long>(skip), v.end()));
    fmt::print("{:<16} {:<22} {:>7} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", impl, mode,
               size_name(size), p.n, p.p50, p.p90, p.p99, p.mean);
    out.push_back({{"impl", impl}, {"mode", mode}, {"batch", batch}, {"size", size}, {"n", p.n},
                   {"p50_us", p.p50}, {"p90_us", p.p90}, {"p99_us", p.p99}, {"mean_us", p.mean},
                   {"max_us", p.max}});
    return p;
  };
  std::optional<Pct> due_1k, raw_1k;
  for (std::size_t size : kSizes) {
    int rounds100 = size >= 102400 ? std::max(2, c.lat_batches * 2 / 5) : c.lat_batches;
    int pings = size >= 102400 ? std::max(50, c.lat_unbatched / 2) : c.lat_unbatched;
    try {
      Pct p = emit("raw-hiredis", "batch 1", 1, size, latency_raw(o, size, 1, pings));
      if (size == 1024) raw_1k = p;
      emit("raw-hiredis", "batch 100 (pipelined)", 100, size, latency_raw(o, size, 100, rounds100));
    } catch (const std::exception& e) {
      rep.fail(e.what());
    }
    try {
      auto pb1 = redis_backends(o, 1), cb1 = redis_backends(o, 1);
      Pct p = emit("due-redis", "batch 1, NO_WAIT", 1, size,
                   latency_due(pb1, cb1, size, 1, pings, kPubOnly | kNoWait));
      if (size == 1024) due_1k = p;
      auto pb = redis_backends(o, 100), cb = redis_backends(o, 100);
      emit("due-redis", "batch 100", 100, size, latency_due(pb, cb, size, 100, rounds100, kPubOnly));
    } catch (const std::exception& e) {
      rep.fail(e.what());
    }
    try {
      auto b = std::make_shared<Backends>(make_inproc_updates(), nullptr);
      emit("due-inproc", "batch 1 (inline)", 1, size,
           latency_due(b, b, size, 1, c.lat_unbatched, kPubOnly | kNoWait));
    } catch (const std::exception& e) {
      rep.fail(e.what());
    }
  }
  if (due_1k)
    rep.target("DUE over Redis, unbatched 1 KB end-to-end p50", fmt::format("{:.1f} µs", due_1k->p50),
               "<= 50 µs", due_1k->p50 <= 50.0);
  if (raw_1k)
    fmt::print("  (reference: raw hiredis unbatched 1 KB p50 {:.1f} µs)\n", raw_1k->p50);
}

// ---------------------------------------------------------------------------------------------
// 2. Throughput

// One throughput run: messages per second received by the consumer, from the producer's first
// write to the receipt of the last of `n` messages (the producer keeps at most window_msgs(size)
// in flight), and the CPU this process spent per message (producer + consumer + DUE threads;
// Redis's own CPU not included).
struct TpRun {
  double rate = 0;
  double cpu_us = 0;
  double avg_batch = 0;  // records per pipelined write (DUE: from the backend's stats)
};

TpRun throughput_raw(const Options& o, std::size_t size, int batch, int n) {
  std::string ch = fresh_channel("tp");
  RawSubscriber sub(o, ch);
  RawPublisher pub(o, ch);
  Counter got;
  std::atomic<bool> failed{false};
  Clock::time_point t_end{};
  std::thread consumer([&] {
    for (int i = 0; i < n; ++i) {
      if (!sub.read()) {
        failed = true;
        got.add(1u << 30);
        return;
      }
      got.add();
    }
    t_end = Clock::now();
  });
  std::string payload = payload_of(size);
  const uint32_t window = window_msgs(size);
  double cpu0 = process_cpu_seconds();
  auto t0 = Clock::now();
  for (int sent = 0; sent < n && !failed;) {
    int k = std::min(batch, n - sent);
    throttle(got, static_cast<uint32_t>(sent + k), window, Clock::now() + kTimeout);
    for (int j = 0; j < k; ++j) pub.append(payload);
    pub.sync();
    sent += k;
  }
  consumer.join();
  if (failed) throw std::runtime_error(fmt::format("raw throughput run failed: {}", sub.error()));
  TpRun r;
  r.rate = n / std::chrono::duration<double>(t_end - t0).count();
  r.cpu_us = (process_cpu_seconds() - cpu0) * 1e6 / n;
  r.avg_batch = batch;
  return r;
}

TpRun throughput_due(const Options& o, std::size_t size, int batch, int n) {
  DuePair pair(o, static_cast<std::size_t>(batch), "tp");
  Counter got;
  Clock::time_point t_end{};
  pair.observe([&](const RecordPtr&) {
    if (got.load() + 1 == static_cast<uint32_t>(n)) t_end = Clock::now();
    got.add();
  });
  Value proto = json_value_of(size);
  const uint32_t window = window_msgs(size);
  UpdatesStats before = pair.pb->updates().stats();
  double cpu0 = process_cpu_seconds();
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    throttle(got, static_cast<uint32_t>(i), window, Clock::now() + kTimeout);
    auto w = pair.prod->write(pair.key, proto, kPubOnly);
    if (!w) throw std::runtime_error("write: " + w.error());
  }
  pair.prod->flush();
  if (!got.wait_ge(static_cast<uint32_t>(n), Clock::now() + kTimeout)) {
    auto ps = pair.pb->updates().stats();
    auto cs = pair.cb->updates().stats();
    throw std::runtime_error(fmt::format(
        "DUE throughput run: {} of {} arrived (producer sent {} dropped {}; consumer gaps {} "
        "decode errors {})",
        got.load(), n, ps.sent, ps.dropped, cs.gaps, cs.decode_errors));
  }
  TpRun r;
  r.cpu_us = (process_cpu_seconds() - cpu0) * 1e6 / n;
  UpdatesStats after = pair.pb->updates().stats();
  r.rate = n / std::chrono::duration<double>(t_end - t0).count();
  uint64_t batches = after.batches - before.batches;
  r.avg_batch = batches ? static_cast<double>(after.sent - before.sent) / static_cast<double>(batches) : 0;
  return r;
}

void section_throughput(const Options& o, const Counts& c, Report& rep) {
  fmt::print("\n== 2. Throughput over Redis (msgs/s at the consumer; median of {} run(s)) ==\n",
             c.tp_repeats);
  fmt::print("   window: at most {} MB in flight per producer (Redis drops a subscriber past 32 MB);\n"
             "   raw and DUE runs alternate; cpu = this process's CPU per message (Redis excluded)\n",
             kWindowBytes >> 20);
  fmt::print("{:<16} {:>6} {:>7} {:>8} {:>12} {:>24} {:>10} {:>10}\n", "impl", "batch", "size", "n",
             "msgs/s", "runs", "cpu µs/msg", "avg batch");
  Json& out = rep.root["throughput"];
  std::map<std::pair<std::string, std::pair<int, std::size_t>>, double> got;
  struct Point {
    int batch;
    std::size_t size;
  };
  // 1 KB at batch 1 and 100 (the comparison the paper makes), then batch 100 over sizes.
  std::vector<Point> points = {{1, 1024}, {100, 1024}, {100, 100}, {100, 10240}};
  const char* impls[2] = {"raw-hiredis", "due-redis"};
  for (auto [batch, size] : points) {
    int n = batch == 1 ? c.tp_batch1 : c.tp_batch100;
    if (size >= 10240) n = std::max(2000, n / 4);
    std::vector<TpRun> runs[2];
    bool broken[2] = {false, false};
    for (int k = 0; k < c.tp_repeats; ++k) {
      for (int i = 0; i < 2; ++i) {
        if (broken[i]) continue;
        try {
          runs[i].push_back(i == 0 ? throughput_raw(o, size, batch, n)
                                   : throughput_due(o, size, batch, n));
        } catch (const std::exception& e) {
          rep.fail(e.what());
          broken[i] = true;
        }
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (runs[i].empty()) continue;
      std::vector<double> rates, cpu, avg;
      for (const TpRun& r : runs[i]) {
        rates.push_back(r.rate);
        cpu.push_back(r.cpu_us);
        avg.push_back(r.avg_batch);
      }
      double m = median(rates);
      std::string runs_s;
      for (double r : rates) {
        if (!runs_s.empty()) runs_s += ' ';
        runs_s += si(r);
      }
      fmt::print("{:<16} {:>6} {:>7} {:>8} {:>12} {:>24} {:>10.2f} {:>10.1f}\n", impls[i], batch,
                 size_name(size), n, si(m), runs_s, median(cpu), median(avg));
      out.push_back({{"impl", impls[i]}, {"batch", batch}, {"size", size}, {"n", n},
                     {"msgs_per_s", m}, {"runs", rates}, {"cpu_us_per_msg", median(cpu)},
                     {"avg_batch", median(avg)}});
      got[{impls[i], {batch, size}}] = m;
    }
  }
  auto raw = got.find({"raw-hiredis", {100, 1024}});
  auto due = got.find({"due-redis", {100, 1024}});
  if (raw != got.end() && due != got.end()) {
    double ratio = due->second / raw->second;
    rep.target("DUE over Redis vs raw hiredis, batch 100, 1 KB",
               fmt::format("{:.1f} %", ratio * 100), ">= 90 % of raw", ratio >= 0.90);
    rep.root["throughput_due_over_raw_b100"] = ratio;
  }
}

// ---------------------------------------------------------------------------------------------
// 2c. What an envelope costs (CPU only, one thread): the JSON text DUE puts on Redis for each
// record, and the decode the consumer does. Explains most of DUE's distance from raw hiredis.

void section_codec(const Counts& c, Report& rep) {
  fmt::print("\n== 2c. Envelope encode/decode, one thread (docs/data-wire.md format; thread CPU time) ==\n");
  fmt::print("{:<8} {:<12} {:>10} {:>12} {:>12} {:>12}\n", "size", "value", "wire B", "encode ns",
             "decode ns", "decode MB/s");
  Json& out = rep.root["codec"];
  for (std::size_t size : kSizes) {
    for (int kind = 0; kind < 2; ++kind) {
      Record r;
      r.key = "bench/tp/p1234/n5@benchprod";
      r.value = kind == 0 ? json_value_of(size) : Value(Bytes{payload_of(size)});
      r.app_id = "benchprod";
      r.instance = "5d0c2a4e-8f3b-4c1d-9e2f-0a1b2c3d4e5f";
      r.ts_ns = now_ns();
      r.seq = 1;
      std::string wire;
      encode_envelope(r, wire);
      int n = std::max(200, static_cast<int>(c.inproc_ops / 10 * 100 / (size + 100)));
      std::string buf;
      double t0 = thread_cpu_seconds();
      for (int i = 0; i < n; ++i) {
        buf.clear();
        encode_envelope(r, buf);
      }
      double enc = (thread_cpu_seconds() - t0) * 1e9 / n;
      std::size_t sink = 0;
      t0 = thread_cpu_seconds();
      for (int i = 0; i < n; ++i) {
        auto d = decode_envelope(wire);
        sink += d ? d->seq : 0;
      }
      double dec = (thread_cpu_seconds() - t0) * 1e9 / n;
      if (sink != static_cast<std::size_t>(n)) rep.fail("codec: decode failed");
      const char* vname = kind == 0 ? "JSON string" : "bytes (b64)";
      fmt::print("{:<8} {:<12} {:>10} {:>12.0f} {:>12.0f} {:>12.0f}\n", size_name(size), vname,
                 wire.size(), enc, dec, static_cast<double>(wire.size()) / dec * 1e3);
      out.push_back({{"size", size}, {"value", vname}, {"wire_bytes", wire.size()},
                     {"encode_ns", enc}, {"decode_ns", dec}});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2b. The in-process bus on one core

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

void section_inproc(const Counts& c, Report& rep) {
  fmt::print("\n== 2b. In-process bus on one core (publish -> subscriber callback, inline) ==\n");
  fmt::print("   rates from this thread's CPU time (pinned to CPU 0); wall-clock rate alongside\n");
  fmt::print("{:<40} {:<12} {:>9} {:>10} {:>8} {:>11}\n", "path", "value", "n", "msgs/s",
             "ns/msg", "wall msgs/s");
  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  pin_to_cpu(0);
  Json& out = rep.root["inproc"];
  const std::string key = "bench/inproc/s1/port/3/stats@benchprod";
  struct ValueKind {
    const char* name;
    Value value;
  };
  std::vector<ValueKind> kinds = {
      {"small JSON", Value(Json{{"port", 3}, {"rx_packets", 123456}, {"tx_packets", 654321}})},
      {"100 B bytes", Value(Bytes{payload_of(100)})}};
  double best_bus = 0;
  for (auto& kind : kinds) {
    auto row = [&](const std::string& path, int n, auto&& body) {
      auto t0 = Clock::now();
      double cpu0 = thread_cpu_seconds();
      uint64_t delivered = body(n);
      double s = thread_cpu_seconds() - cpu0;
      double wall = secs_since(t0);
      double rate = n / s;
      if (delivered != static_cast<uint64_t>(n))
        rep.fail(fmt::format("inproc {}: {} of {} delivered", path, delivered, n));
      bool pass = rate >= 5e6;
      fmt::print("{:<40} {:<12} {:>9} {:>10} {:>8.0f} {:>11}  {}\n", path, kind.name, n, si(rate),
                 s * 1e9 / n, si(n / wall), pass ? "PASS" : "MISS");
      out.push_back({{"path", path}, {"value", kind.name}, {"n", n}, {"msgs_per_s", rate},
                     {"ns_per_msg", s * 1e9 / n}, {"wall_msgs_per_s", n / wall}});
      return rate;
    };
    // (a) Updates::publish of one shared record: the bus alone (lookup + callback).
    {
      auto bus = make_inproc_updates();
      uint64_t count = 0;
      bus->subscribe(*Key::parse("bench/inproc/*/port/*/stats"), [&](const RecordPtr&) { ++count; });
      auto rec = std::make_shared<Record>();
      rec->key = key;
      rec->value = kind.value;
      rec->app_id = "benchprod";
      RecordPtr rp = rec;
      best_bus = std::max(best_bus, row("Updates::publish, one shared record", c.inproc_ops, [&](int n) {
        for (int i = 0; i < n; ++i) bus->publish(rp);
        return count;
      }));
    }
    // (b) Updates::publish of a new record each time (what a producer really hands over).
    {
      auto bus = make_inproc_updates();
      uint64_t count = 0;
      bus->subscribe(*Key::parse("bench/inproc/*/port/*/stats"), [&](const RecordPtr&) { ++count; });
      row("Updates::publish, new record each", c.inproc_ops, [&](int n) {
        for (int i = 0; i < n; ++i) {
          auto r = std::make_shared<Record>();
          r->key = key;
          r->value = kind.value;
          r->app_id = "benchprod";
          r->ts_ns = now_ns();
          r->seq = static_cast<uint64_t>(i) + 1;
          bus->publish(std::move(r));
        }
        return count;
      });
    }
    // (c) Due::write with PUB_ONLY (no archive): key lookup, record, stamp, publish.
    {
      auto b = std::make_shared<Backends>(make_inproc_updates(), nullptr);
      auto prod = make_due(b, "benchprod", kProducer);
      auto cons = make_due(b, "benchcons", kConsumer);
      uint64_t count = 0;
      auto sub = cons->observe("bench/inproc/*/port/*/stats", [&](const RecordPtr&) { ++count; });
      row("Due::write(kPubOnly) -> Due::observe", c.inproc_ops, [&](int n) {
        for (int i = 0; i < n; ++i) (void)prod->write(key, kind.value, kPubOnly);
        return count;
      });
    }
  }
  sched_setaffinity(0, sizeof saved, &saved);
  rep.target("in-process bus (Updates::publish), one core", fmt::format("{}/s", si(best_bus)),
             ">= 5 M/s", best_bus >= 5e6);
  fmt::print("  (PASS/MISS on each row above is against the same 5 M msgs/s line)\n");
}

// ---------------------------------------------------------------------------------------------
// 3. Data Archives batching

struct ArchiveRun {
  double rate = 0;
  double cpu_us = 0;  // this process's CPU per record (the writer thread, mostly)
  ArchiveStats stats;
};

ArchiveRun archive_run(Archive& a, int n, std::size_t value_size) {
  Value v = json_value_of(value_size);
  std::vector<RecordPtr> recs;
  recs.reserve(static_cast<std::size_t>(n));
  int64_t ts = now_ns();
  for (int i = 0; i < n; ++i) {
    auto r = std::make_shared<Record>();
    r->key = fmt::format("bench/archive/s{}/port/{}/stats@benchprod", i % 16, i % 48);
    r->value = v;
    r->app_id = "benchprod";
    r->instance = "bench-instance";
    r->ts_ns = ts + i;
    r->seq = static_cast<uint64_t>(i) + 1;
    recs.push_back(std::move(r));
  }
  double cpu0 = process_cpu_seconds();
  auto t0 = Clock::now();
  for (auto& r : recs) a.append(r);
  bool ok = a.flush(std::chrono::minutes(5));
  ArchiveRun run;
  run.rate = n / secs_since(t0);
  run.cpu_us = (process_cpu_seconds() - cpu0) * 1e6 / n;
  run.stats = a.stats();
  if (!ok) throw std::runtime_error(fmt::format("{}: flush timed out", a.name()));
  return run;
}

void pg_exec(const std::string& dsn, const std::string& sql) {
  PGconn* c = PQconnectdb(dsn.c_str());
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);  // "table does not exist, skipping"
  if (PQstatus(c) == CONNECTION_OK) PQclear(PQexec(c, sql.c_str()));
  PQfinish(c);
}

void section_archive(const Options& o, const Counts& c, Report& rep) {
  constexpr std::size_t kValueSize = 100;
  fmt::print("\n== 3. Data Archives batching (records/s committed: append N, then flush) ==\n");
  fmt::print("   records: ~{} B JSON string value, 768 distinct keys\n", kValueSize);
  fmt::print("   cpu = this process's CPU per record (SQLite runs in-process; PostgreSQL's server CPU\n"
             "   is not counted)\n");
  fmt::print("{:<10} {:>7} {:>8} {:>12} {:>11} {:>9} {:>8}\n", "backend", "batch", "n", "records/s",
             "cpu µs/rec", "batches", "dropped");
  Json& out = rep.root["archive"];
  const std::size_t batches[3] = {1, 100, 10000};
  double sqlite_best = 0, sqlite_100 = 0;
  std::filesystem::path dir = o.sqlite_dir;
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 3; ++i) {
    auto path = dir / fmt::format("data-bench-{}-{}.db", ::getpid(), batches[i]);
    auto cleanup = [&] {
      for (const char* ext : {"", "-wal", "-shm"})
        std::filesystem::remove(path.string() + ext);
    };
    cleanup();
    try {
      SqliteConfig cfg;
      cfg.path = path.string();
      cfg.batch_size = batches[i];
      auto a = open_sqlite_archive(cfg);
      if (!a) throw std::runtime_error(a.error());
      ArchiveRun r = archive_run(**a, c.sqlite_n[i], kValueSize);
      fmt::print("{:<10} {:>7} {:>8} {:>12} {:>11.2f} {:>9} {:>8}\n", "sqlite", batches[i],
                 c.sqlite_n[i], si(r.rate), r.cpu_us, r.stats.batches, r.stats.dropped);
      out.push_back({{"backend", "sqlite"}, {"batch", batches[i]}, {"n", c.sqlite_n[i]},
                     {"records_per_s", r.rate}, {"cpu_us_per_record", r.cpu_us},
                     {"batches", r.stats.batches},
                     {"dropped", r.stats.dropped}, {"written", r.stats.written}});
      if (batches[i] >= 100) sqlite_best = std::max(sqlite_best, r.rate);
      if (batches[i] == 100) sqlite_100 = r.rate;
    } catch (const std::exception& e) {
      rep.fail(std::string("sqlite: ") + e.what());
    }
    cleanup();
  }
  if (o.pg_dsn.empty()) {
    fmt::print("postgres: skipped (no --pg-dsn and no SDNATOR_PG_DSN)\n");
    rep.root["archive_notes"].push_back("postgres skipped: no DSN");
  } else {
    for (int i = 0; i < 3; ++i) {
      std::string table = fmt::format("data_bench_{}_{}", ::getpid(), batches[i]);
      pg_exec(o.pg_dsn, "DROP TABLE IF EXISTS " + table);
      try {
        PostgresConfig cfg;
        cfg.dsn = o.pg_dsn;
        cfg.table = table;
        cfg.batch_size = batches[i];
        auto a = open_postgres_archive(cfg);
        if (!a) throw std::runtime_error(a.error());
        ArchiveRun r = archive_run(**a, c.pg_n[i], kValueSize);
        fmt::print("{:<10} {:>7} {:>8} {:>12} {:>11.2f} {:>9} {:>8}\n", "postgres", batches[i],
                   c.pg_n[i], si(r.rate), r.cpu_us, r.stats.batches, r.stats.dropped);
        out.push_back({{"backend", "postgres"}, {"batch", batches[i]}, {"n", c.pg_n[i]},
                       {"records_per_s", r.rate}, {"cpu_us_per_record", r.cpu_us},
                       {"batches", r.stats.batches},
                       {"dropped", r.stats.dropped}, {"written", r.stats.written}});
      } catch (const std::exception& e) {
        rep.fail(std::string("postgres: ") + e.what());
      }
      pg_exec(o.pg_dsn, "DROP TABLE IF EXISTS " + table);
    }
  }
  if (sqlite_best > 0) {
    rep.target("SQLite archive, batched (best of batch 100 / 10,000)",
               fmt::format("{}/s", si(sqlite_best)), ">= 200 k/s", sqlite_best >= 200e3);
    fmt::print("  (batch 100 alone: {}/s, {})\n", si(sqlite_100), sqlite_100 >= 200e3 ? "PASS" : "MISS");
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Scalability

struct ScalePoint {
  std::vector<double> rates;  // per consumer, msgs/s over the measured window
  uint64_t lost = 0;          // DUE: records dropped by producers + gaps seen by consumers
};

// Each pair: its own channel, producer thread and connections, consumer thread/connection.
// Producers run flat out (pipelined batch 100, windowed); consumers are sampled at the start and
// end of the measured window.
ScalePoint scale_raw(const Options& o, int pairs, double warmup, double seconds) {
  constexpr std::size_t kSize = 1024;
  struct Pair {
    std::string ch;
    std::unique_ptr<RawSubscriber> sub;
    std::unique_ptr<RawPublisher> pub;
    Counter got;
    std::atomic<bool> failed{false};
  };
  std::vector<std::unique_ptr<Pair>> ps;
  for (int i = 0; i < pairs; ++i) {
    auto p = std::make_unique<Pair>();
    p->ch = fresh_channel("scale");
    p->sub = std::make_unique<RawSubscriber>(o, p->ch);
    p->pub = std::make_unique<RawPublisher>(o, p->ch);
    ps.push_back(std::move(p));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& p : ps) {
    Pair* pp = p.get();
    threads.emplace_back([pp] {
      for (;;) {
        const redisReply* r = pp->sub->read();
        if (!r) {
          pp->failed = true;
          pp->got.add(1u << 30);
          return;
        }
        if (r->len == 4 && std::memcmp(r->str, "STOP", 4) == 0) return;
        pp->got.add();
      }
    });
    threads.emplace_back([pp, &stop] {
      std::string payload = payload_of(kSize);
      const uint32_t window = window_msgs(kSize);
      uint32_t sent = 0;
      while (!stop.load(std::memory_order_relaxed) && !pp->failed) {
        throttle(pp->got, sent + 100, window, Clock::now() + kTimeout);
        for (int j = 0; j < 100; ++j) pp->pub->append(payload);
        pp->pub->sync();
        sent += 100;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  std::vector<uint32_t> c0;
  for (auto& p : ps) c0.push_back(p->got.load());
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  std::vector<uint32_t> c1;
  for (auto& p : ps) c1.push_back(p->got.load());
  double dt = secs_since(t0);
  stop = true;
  for (std::size_t i = 1; i < threads.size(); i += 2) threads[i].join();
  {
    RedisPtr ctl = redis_connect(o);
    for (auto& p : ps) redis_cmd(ctl.get(), "PUBLISH %s STOP", p->ch.c_str());
  }
  for (std::size_t i = 0; i < threads.size(); i += 2) threads[i].join();
  ScalePoint sp;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (ps[i]->failed) throw std::runtime_error(fmt::format("raw scale pair {} failed", i));
    sp.rates.push_back((c1[i] - c0[i]) / dt);
  }
  return sp;
}

ScalePoint scale_due(const Options& o, int pairs, double warmup, double seconds) {
  constexpr std::size_t kSize = 1024;
  struct Pair {
    std::unique_ptr<DuePair> due;
    Counter got;
  };
  std::vector<std::unique_ptr<Pair>> ps;
  for (int i = 0; i < pairs; ++i) {
    auto p = std::make_unique<Pair>();
    p->due = std::make_unique<DuePair>(o, 100, "scale");
    Pair* pp = p.get();
    p->due->observe([pp](const RecordPtr&) { pp->got.add(); });
    ps.push_back(std::move(p));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (auto& p : ps) {
    Pair* pp = p.get();
    producers.emplace_back([pp, &stop] {
      Value proto = json_value_of(kSize);
      const uint32_t window = window_msgs(kSize);
      uint32_t sent = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (sent - std::min(sent, pp->got.load()) >= window &&
            !pp->got.wait_ge(sent - window / 2, Clock::now() + std::chrono::milliseconds(100)))
          continue;  // look at `stop` again
        (void)pp->due->prod->write(pp->due->key, proto, kPubOnly);
        ++sent;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  std::vector<uint32_t> c0;
  for (auto& p : ps) c0.push_back(p->got.load());
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  std::vector<uint32_t> c1;
  for (auto& p : ps) c1.push_back(p->got.load());
  double dt = secs_since(t0);
  stop = true;
  for (auto& t : producers) t.join();
  for (auto& p : ps) p->due->prod->sync(std::chrono::seconds(20));  // quiet teardown
  ScalePoint sp;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    sp.rates.push_back((c1[i] - c0[i]) / dt);
    sp.lost += ps[i]->due->pb->updates().stats().dropped + ps[i]->due->cb->updates().stats().gaps;
  }
  ps.clear();
  return sp;
}

void section_scale(const Options& o, const Counts& c, Report& rep) {
  unsigned cores = std::thread::hardware_concurrency();
  fmt::print("\n== 4. Scalability: N producer/consumer pairs over one Redis, 1 KB, batch 100 ==\n");
  fmt::print("   NOTE: this machine has {} cores, shared by Redis, every producer and every\n"
             "   consumer; aggregate throughput is bounded by CPU, not by the design.\n", cores);
  fmt::print("{:<12} {:>6} {:>12} {:>12} {:>12} {:>14}\n", "impl", "pairs", "min", "mean", "max",
             "aggregate");
  Json& out = rep.root["scale"];
  for (const char* impl : {"raw-hiredis", "due-redis"}) {
    for (int pairs : {1, 2, 5, 10, 20, 30}) {
      try {
        ScalePoint sp = std::string(impl) == "raw-hiredis"
                            ? scale_raw(o, pairs, c.scale_warmup, c.scale_seconds)
                            : scale_due(o, pairs, c.scale_warmup, c.scale_seconds);
        double mn = *std::min_element(sp.rates.begin(), sp.rates.end());
        double mx = *std::max_element(sp.rates.begin(), sp.rates.end());
        double sum = std::accumulate(sp.rates.begin(), sp.rates.end(), 0.0);
        fmt::print("{:<12} {:>6} {:>12} {:>12} {:>12} {:>14}\n", impl, pairs, si(mn),
                   si(sum / pairs), si(mx), si(sum));
        out.push_back({{"impl", impl}, {"pairs", pairs}, {"min", mn}, {"mean", sum / pairs},
                       {"max", mx}, {"aggregate", sum}, {"per_pair", sp.rates}, {"lost", sp.lost}});
        if (sp.lost > 0) rep.fail(fmt::format("scale {} x{}: {} records lost", impl, pairs, sp.lost));
      } catch (const std::exception& e) {
        rep.fail(fmt::format("scale {} x{}: {}", impl, pairs, e.what()));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Machine description

Json machine_info(const Options& o) {
  Json m;
  m["nproc"] = std::thread::hardware_concurrency();
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0) {
      m["cpu"] = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname u{};
  if (uname(&u) == 0) m["kernel"] = fmt::format("{} {}", u.sysname, u.release);
  m["hiredis"] = fmt::format("{}.{}.{}", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
  try {
    RedisPtr c = redis_connect(o);
    auto r = redis_cmd(c.get(), "INFO server");
    std::string info(r->str ? r->str : "", r->str ? r->len : 0);
    auto p = info.find("redis_version:");
    if (p != std::string::npos) m["redis"] = info.substr(p + 14, info.find('\r', p) - p - 14);
  } catch (const std::exception&) {
  }
  m["redis_endpoint"] = fmt::format("{}:{}", o.redis_host, o.redis_port);
  m["quick"] = o.quick;
  m["loadavg_start"] = loadavg();
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m["date"] = date;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* p = std::getenv("SDNATOR_REDIS_PORT")) o.redis_port = std::atoi(p);
  if (const char* d = std::getenv("SDNATOR_PG_DSN")) o.pg_dsn = d;
  o.sqlite_dir = (std::filesystem::temp_directory_path() / "sdnator-data-bench").string();

  CLI::App app{"sdnator data-layer benchmark (seed 002 section 5). Needs a running Redis: "
               "`bash scripts/services.sh up && source /tmp/sdnator-services/env`."};
  app.add_option("--redis-host", o.redis_host, "Redis host")->capture_default_str();
  app.add_option("--redis-port", o.redis_port, "Redis port (default $SDNATOR_REDIS_PORT or 6379)")
      ->capture_default_str();
  app.add_option("--pg-dsn", o.pg_dsn, "libpq conninfo for the PostgreSQL archive (default "
                                       "$SDNATOR_PG_DSN; empty skips PostgreSQL)");
  app.add_option("--sqlite-dir", o.sqlite_dir, "directory for the SQLite archive files")
      ->capture_default_str();
  app.add_flag("--quick", o.quick, "small counts: a smoke run for CI (< 60 s)");
  app.add_option("--only", o.only, "run only these sections: latency, throughput, inproc, "
                                   "codec, archive, scale")
      ->delimiter(',')
      ->check(CLI::IsMember({"latency", "throughput", "inproc", "codec", "archive", "scale"}));
  app.add_option("--json", o.json_path, "write every figure to this JSON file");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::warn);
  std::set<std::string> only(o.only.begin(), o.only.end());
  auto want = [&](const char* s) { return only.empty() || only.count(s) > 0; };
  bool needs_redis = want("latency") || want("throughput") || want("scale");
  if (needs_redis) {
    try {
      RedisPtr c = redis_connect(o);
      redis_cmd(c.get(), "PING");
    } catch (const std::exception& e) {
      fmt::print(stderr,
                 "data_bench: {}\nStart the servers with `bash scripts/services.sh up` and "
                 "`source /tmp/sdnator-services/env`, or pass --redis-host/--redis-port (or "
                 "--only inproc,codec,archive to run without Redis).\n",
                 e.what());
      return 2;
    }
  }

  Counts c = counts_for(o.quick);
  Report rep;
  rep.root["machine"] = machine_info(o);
  fmt::print("data_bench: {} cores ({}), Redis {} at {}, hiredis {}{}\n",
             rep.root["machine"]["nproc"].get<unsigned>(),
             rep.root["machine"].value("cpu", std::string("?")),
             rep.root["machine"].value("redis", std::string("?")),
             rep.root["machine"]["redis_endpoint"].get<std::string>(),
             rep.root["machine"]["hiredis"].get<std::string>(), o.quick ? " [--quick]" : "");
  if (double l = loadavg()[0]; l > 1.5)
    fmt::print("WARNING: load average {:.1f} on {} cores: other work shares the CPU, wall-clock "
               "figures below will be low and noisy\n",
               l, rep.root["machine"]["nproc"].get<unsigned>());
  auto t0 = Clock::now();
  auto run = [&](const char* name, auto&& fn) {
    if (!want(name)) return;
    double l = loadavg()[0];
    rep.root["machine"]["loadavg_at_section"][name] = l;
    fmt::print("\n[{}: 1-minute load average {:.2f} at start]", name, l);
    try {
      fn();
    } catch (const std::exception& e) {
      rep.fail(fmt::format("{}: {}", name, e.what()));
    }
  };
  run("latency", [&] { section_latency(o, c, rep); });
  run("throughput", [&] { section_throughput(o, c, rep); });
  run("inproc", [&] { section_inproc(c, rep); });
  run("codec", [&] { section_codec(c, rep); });
  run("archive", [&] { section_archive(o, c, rep); });
  run("scale", [&] { section_scale(o, c, rep); });
  rep.root["total_seconds"] = secs_since(t0);
  rep.root["machine"]["loadavg_end"] = loadavg();

  fmt::print("\n== Targets ==\n");
  for (const auto& t : rep.targets)
    fmt::print("  {:<58} {:>14}  (goal {})  {}\n", t.name, t.value, t.goal, t.pass ? "PASS" : "MISS");
  for (const auto& f : rep.failures) fmt::print("  FAILED: {}\n", f);
  fmt::print("total {:.1f} s\n", secs_since(t0));

  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    f << rep.root.dump(2) << '\n';
    if (!f) {
      fmt::print(stderr, "data_bench: cannot write {}\n", o.json_path);
      return 1;
    }
  }
  // A missed target is a figure, not an error; a run that broke is.
  return rep.failures.empty() ? 0 : 1;
}
