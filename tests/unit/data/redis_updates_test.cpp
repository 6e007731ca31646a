// The Redis backend of Data Updates against a real, private redis-server: round trips, exact
// wildcard filtering, order, batching, unsubscribe, Redis killed and restarted mid-stream, Redis
// down at start, buffer overflow and malformed envelopes. Waits poll with deadlines, no sleeps.
#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "data/updates.hpp"
#include "data/wire.hpp"
#include "fakes/redis_server.hpp"
#include "fakes/eventually.hpp"

namespace sdn::data {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
  return test::eventually(pred, timeout);
}

Key key(std::string_view text) {
  auto k = Key::parse(text);
  EXPECT_TRUE(k.has_value()) << text;
  return k ? *k : Key();
}

RecordPtr rec(std::string k, Value v, uint64_t seq, std::string instance = "inst-1") {
  auto r = std::make_shared<Record>();
  r->key = std::move(k);
  r->value = std::move(v);
  r->app_id = r->key.substr(r->key.find('@') + 1);
  r->instance = std::move(instance);
  r->ts_ns = wall_ns();
  r->seq = seq;
  return r;
}

// Thread-safe list of what a handler saw.
class Inbox {
 public:
  // The handler holds the state, not the Inbox: a reader thread still delivering when a failed
  // assertion unwinds the test never touches a destroyed Inbox.
  Updates::Handler handler() {
    return [st = st_](const RecordPtr& r) {
      std::lock_guard l(st->mu);
      st->got.push_back(r);
    };
  }
  std::size_t size() const {
    std::lock_guard l(st_->mu);
    return st_->got.size();
  }
  std::vector<RecordPtr> all() const {
    std::lock_guard l(st_->mu);
    return st_->got;
  }
  std::multiset<std::string> keys() const {
    std::multiset<std::string> out;
    for (auto& r : all()) out.insert(r->key);
    return out;
  }
  bool has_key(const std::string& k) const { return keys().count(k) > 0; }

 private:
  struct State {
    std::mutex mu;
    std::vector<RecordPtr> got;
  };
  std::shared_ptr<State> st_ = std::make_shared<State>();
};

// A plain hiredis client for things our client must never do (malformed envelopes, PUBSUB).
class RawClient {
 public:
  explicit RawClient(uint16_t port) : c_(redisConnect("127.0.0.1", port)) {}
  ~RawClient() {
    if (c_ != nullptr) redisFree(c_);
  }
  bool ok() const { return c_ != nullptr && c_->err == 0; }
  long long integer(std::vector<std::string> args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data()));
    long long v = -1;
    if (r != nullptr && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    if (r != nullptr) freeReplyObject(r);
    return v;
  }

 private:
  redisContext* c_;
};

class RedisUpdatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The server runs on a port we chose; a test that wants Redis down starts it later.
    cfg_.port = server_.port();
    cfg_.connect_timeout = 500ms;
    cfg_.reconnect_min = 10ms;
    cfg_.reconnect_max = 100ms;
  }
  void start_server() { ASSERT_TRUE(server_.start()) << server_.error(); }

  std::unique_ptr<Updates> make() {
    auto u = make_redis_updates(cfg_);
    EXPECT_TRUE(u.has_value()) << (u ? "" : u.error());
    return u ? std::move(*u) : nullptr;
  }

  test::RedisServer server_;
  RedisConfig cfg_;
};

TEST_F(RedisUpdatesTest, RejectsBadConfig) {
  RedisConfig bad = cfg_;
  bad.batch_size = 0;
  EXPECT_FALSE(make_redis_updates(bad).has_value());
  bad = cfg_;
  bad.reconnect_max = 1ms;
  bad.reconnect_min = 5ms;
  EXPECT_FALSE(make_redis_updates(bad).has_value());
  bad = cfg_;
  bad.user = "alice";
  EXPECT_FALSE(make_redis_updates(bad).has_value());
}

TEST_F(RedisUpdatesTest, RoundTripJsonAndBytes) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  EXPECT_EQ(u->name(), "redis");
  EXPECT_TRUE(u->stats().connected);
  Inbox inbox;
  u->subscribe(key("net/s1/stats@stats"), inbox.handler());

  auto j = rec("net/s1/stats@stats", Json{{"rx", 10}, {"tx", {1, 2, 3}}, {"name", "p\"1"}}, 1);
  std::string raw("\x00\x01\xff\xfe binary\n", 12);
  auto b = rec("net/s1/stats@stats", Bytes{raw}, 2);
  u->publish(j);
  u->publish(b);
  ASSERT_TRUE(u->drain(5s));
  ASSERT_TRUE(wait_for([&] { return inbox.size() == 2; }));
  auto got = inbox.all();
  for (std::size_t i = 0; i < 2; ++i) {
    const Record& want = i == 0 ? *j : *b;
    EXPECT_EQ(got[i]->key, want.key);
    EXPECT_EQ(got[i]->app_id, want.app_id);
    EXPECT_EQ(got[i]->instance, want.instance);
    EXPECT_EQ(got[i]->ts_ns, want.ts_ns);
    EXPECT_EQ(got[i]->seq, want.seq);
    EXPECT_TRUE(got[i]->value == want.value);
  }
  ASSERT_TRUE(got[1]->value.is_bytes());
  EXPECT_EQ(got[1]->value.bytes(), raw);
  auto st = u->stats();
  EXPECT_EQ(st.published, 2u);
  EXPECT_EQ(st.sent, 2u);
  EXPECT_EQ(st.delivered, 2u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.gaps, 0u);
  EXPECT_EQ(st.decode_errors, 0u);
}

TEST_F(RedisUpdatesTest, WildcardsDeliverExactlyTheMatchingKeys) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  std::map<std::string, Inbox> in;
  const std::vector<std::string> patterns = {"a/*/c", "a/**", "a/*/c@p2", "x/*", "a/b/c@p1",
                                             "a/b/c", "a/*/c@*"};
  for (auto& p : patterns) u->subscribe(key(p), in[p].handler());

  const std::vector<std::string> keys = {"a/b/c@p1", "a/b/x/c@p1", "a/b/c@p2", "a/q@p1",
                                         "x/y@p1",   "x/y/z@p1",   "b/c@p1",   "a/b/c/d@p2"};
  uint64_t seq = 0;
  for (auto& k : keys) u->publish(rec(k, Json(k), ++seq, "i-" + k));
  // Sentinels: once one arrives, everything published before it has been delivered (one
  // publisher connection, one subscriber connection, Redis keeps the order).
  u->publish(rec("a/s/c@p1", Json("end"), 1));
  u->publish(rec("x/s@p1", Json("end"), 1));
  ASSERT_TRUE(u->drain(5s));
  ASSERT_TRUE(wait_for([&] {
    return in["a/*/c"].has_key("a/s/c@p1") && in["a/**"].has_key("a/s/c@p1") &&
           in["x/*"].has_key("x/s@p1") && in["a/*/c@*"].has_key("a/s/c@p1") &&
           in["a/b/c"].size() == 2 && in["a/b/c@p1"].size() == 1 && in["a/*/c@p2"].size() == 1;
  }));
  // Let anything wrongly matching arrive (it would have come before the sentinels anyway).
  ASSERT_TRUE(u->drain(5s));

  using S = std::multiset<std::string>;
  EXPECT_EQ(in["a/*/c"].keys(), (S{"a/b/c@p1", "a/b/c@p2", "a/s/c@p1"}));
  EXPECT_EQ(in["a/*/c@*"].keys(), (S{"a/b/c@p1", "a/b/c@p2", "a/s/c@p1"}));
  EXPECT_EQ(in["a/**"].keys(),
            (S{"a/b/c@p1", "a/b/x/c@p1", "a/b/c@p2", "a/q@p1", "a/b/c/d@p2", "a/s/c@p1"}));
  EXPECT_EQ(in["a/*/c@p2"].keys(), (S{"a/b/c@p2"}));
  EXPECT_EQ(in["x/*"].keys(), (S{"x/y@p1", "x/s@p1"}));
  EXPECT_EQ(in["a/b/c@p1"].keys(), (S{"a/b/c@p1"}));
  EXPECT_EQ(in["a/b/c"].keys(), (S{"a/b/c@p1", "a/b/c@p2"}));
  EXPECT_EQ(u->stats().decode_errors, 0u);
}

TEST_F(RedisUpdatesTest, OrderOfTenThousandRecordsIsKept) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  Inbox inbox;
  u->subscribe(key("o/k@app"), inbox.handler());
  constexpr uint64_t kN = 10000;
  const auto t0 = Clock::now();
  for (uint64_t i = 1; i <= kN; ++i) u->publish(rec("o/k@app", Json(i), i));
  ASSERT_TRUE(u->drain(20s));
  const auto t1 = Clock::now();
  ASSERT_TRUE(wait_for([&] { return inbox.size() == kN; }, 20s)) << inbox.size();
  const auto t2 = Clock::now();
  auto got = inbox.all();
  for (uint64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(got[i]->seq, i + 1);
    ASSERT_EQ(got[i]->value.json().get<uint64_t>(), i + 1);
  }
  auto st = u->stats();
  EXPECT_EQ(st.sent, kN);
  EXPECT_EQ(st.gaps, 0u);
  auto us = [](auto d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
  std::printf("[ figures  ] %llu records: published+acked in %lld us (%.0f rec/s), all delivered "
              "after %lld us, %llu batches\n",
              static_cast<unsigned long long>(kN), static_cast<long long>(us(t1 - t0)),
              kN * 1e6 / static_cast<double>(std::max<long long>(1, us(t1 - t0))),
              static_cast<long long>(us(t2 - t0)), static_cast<unsigned long long>(st.batches));
}

TEST_F(RedisUpdatesTest, PublishesArePipelinedInBatches) {
  start_server();
  cfg_.batch_size = 100;
  cfg_.flush_interval = std::chrono::milliseconds(50);
  auto u = make();
  ASSERT_TRUE(u);
  constexpr uint64_t kN = 5000;
  for (uint64_t i = 1; i <= kN; ++i) u->publish(rec("batch/k@app", Json(i), i));
  ASSERT_TRUE(u->drain(10s));
  auto st = u->stats();
  EXPECT_EQ(st.published, kN);
  EXPECT_EQ(st.sent, kN);
  EXPECT_GE(st.batches, kN / 100);
  EXPECT_LE(st.batches, kN / 20);  // mostly full batches of 100
  EXPECT_EQ(st.buffered, 0u);
}

TEST_F(RedisUpdatesTest, FlushIntervalSendsAPartialBatch) {
  start_server();
  cfg_.batch_size = 1000;
  cfg_.flush_interval = std::chrono::milliseconds(5);
  auto u = make();
  ASSERT_TRUE(u);
  u->publish(rec("lonely/k@app", Json(1), 1));
  // Nobody calls flush or drain: the interval alone sends it.
  ASSERT_TRUE(wait_for([&] { return u->stats().sent == 1; }));
  EXPECT_EQ(u->stats().batches, 1u);
}

TEST_F(RedisUpdatesTest, UnsubscribeStopsDelivery) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  RawClient raw(server_.port());
  ASSERT_TRUE(raw.ok());
  Inbox a, b, sentinel;
  auto ida = u->subscribe(key("u/*@app"), a.handler());
  auto idb = u->subscribe(key("u/*@app"), b.handler());  // shares a's PSUBSCRIBE
  u->subscribe(key("end/k@app"), sentinel.handler());
  EXPECT_EQ(raw.integer({"PUBSUB", "NUMPAT"}), 1);

  u->publish(rec("u/1@app", Json(1), 1));
  ASSERT_TRUE(wait_for([&] { return a.size() == 1 && b.size() == 1; }));
  u->unsubscribe(ida);
  u->publish(rec("u/1@app", Json(2), 2));
  u->publish(rec("end/k@app", Json(0), 1));
  ASSERT_TRUE(wait_for([&] { return sentinel.size() == 1; }));
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(raw.integer({"PUBSUB", "NUMPAT"}), 1);  // b still uses it

  u->unsubscribe(idb);
  ASSERT_TRUE(wait_for([&] { return raw.integer({"PUBSUB", "NUMPAT"}) == 0; }));
  u->publish(rec("u/1@app", Json(3), 3));
  u->publish(rec("end/k@app", Json(0), 2));
  ASSERT_TRUE(wait_for([&] { return sentinel.size() == 2; }));
  EXPECT_EQ(b.size(), 2u);

  // Subscribing again after the PUNSUBSCRIBE works.
  Inbox c;
  u->subscribe(key("u/*@app"), c.handler());
  u->publish(rec("u/1@app", Json(4), 4));
  ASSERT_TRUE(wait_for([&] { return c.size() == 1; }));
}

TEST_F(RedisUpdatesTest, ExecutorWorkQueuedBeforeUnsubscribeIsNotRun) {
  start_server();
  std::mutex mu;
  std::deque<std::function<void()>> work;
  Executor ex = [&](std::function<void()> f) {
    std::lock_guard l(mu);
    work.push_back(std::move(f));
  };
  std::atomic<int> calls{0};
  auto u = make();  // after what its handlers touch: destroyed (threads stopped) first
  ASSERT_TRUE(u);
  auto id = u->subscribe(key("ex/k@app"), [&](const RecordPtr&) { ++calls; }, ex);
  u->publish(rec("ex/k@app", Json(1), 1));
  u->publish(rec("ex/k@app", Json(2), 2));
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard l(mu);
    return work.size() == 2;
  }));
  {
    std::lock_guard l(mu);
    work.front()();
    work.pop_front();
  }
  EXPECT_EQ(calls.load(), 1);
  u->unsubscribe(id);
  std::lock_guard l(mu);
  for (auto& f : work) f();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(u->stats().delivered, 1u);
}

TEST_F(RedisUpdatesTest, UnsubscribeFromInsideTheHandler) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  std::atomic<int> calls{0};
  Updates::SubId id = 0;
  std::atomic<bool> ready{false};
  id = u->subscribe(key("self/k@app"), [&](const RecordPtr&) {
    ++calls;
    while (!ready.load()) std::this_thread::yield();
    u->unsubscribe(id);
  });
  ready = true;
  Inbox sentinel;
  u->subscribe(key("end/k@app"), sentinel.handler());
  u->publish(rec("self/k@app", Json(1), 1));
  u->publish(rec("self/k@app", Json(2), 2));
  u->publish(rec("end/k@app", Json(0), 1));
  ASSERT_TRUE(wait_for([&] { return sentinel.size() == 1; }));
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(RedisUpdatesTest, GapsCountHolesInSeq) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  Inbox inbox;
  u->subscribe(key("g/**"), inbox.handler());
  for (uint64_t s : {1, 2, 5, 6, 10}) u->publish(rec("g/a@app", Json(s), s));
  // Per (instance, key): another key and another instance have their own sequences.
  for (uint64_t s : {1, 2, 3}) u->publish(rec("g/b@app", Json(s), s));
  for (uint64_t s : {7, 8}) u->publish(rec("g/a@app", Json(s), s, "inst-2"));
  ASSERT_TRUE(wait_for([&] { return inbox.size() == 10; }));
  EXPECT_EQ(u->stats().gaps, 5u);  // 3, 4, 7, 8, 9
}

TEST_F(RedisUpdatesTest, MalformedEnvelopesAreCountedAndSkipped) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  Inbox inbox;
  u->subscribe(key("m/*@x"), inbox.handler());
  RawClient raw(server_.port());
  ASSERT_TRUE(raw.ok());
  Record other;
  other.key = "m/2@x";
  other.app_id = "x";
  other.instance = "i";
  other.seq = 1;
  other.value = Json(1);
  EXPECT_EQ(raw.integer({"PUBLISH", "m/1@x", "not json {"}), 1);
  EXPECT_EQ(raw.integer({"PUBLISH", "m/1@x", "{}"}), 1);
  EXPECT_EQ(raw.integer({"PUBLISH", "m/1@x", "[1,2]"}), 1);
  EXPECT_EQ(raw.integer({"PUBLISH", "m/1@x", encode_envelope(other)}), 1);  // k != channel
  EXPECT_EQ(raw.integer({"PUBLISH", "m/1@x", std::string("\xff\x00\x01", 3)}), 1);
  other.key = "m/1@x";
  EXPECT_EQ(raw.integer({"PUBLISH", "m/1@x", encode_envelope(other)}), 1);
  ASSERT_TRUE(wait_for([&] { return inbox.size() == 1; }));
  auto st = u->stats();
  EXPECT_EQ(st.decode_errors, 5u);
  EXPECT_EQ(st.delivered, 1u);
  EXPECT_EQ(inbox.all()[0]->key, "m/1@x");
}

TEST_F(RedisUpdatesTest, RedisKilledMidStreamAndRestarted) {
  start_server();
  cfg_.max_buffered = 1000000;
  std::mutex mu;
  std::set<uint64_t> seen;
  uint64_t max_seen = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> seq{0};
  std::thread producer;
  auto u = make();  // after what its handler touches: destroyed (threads stopped) first
  ASSERT_TRUE(u);
  // A failed assertion returns early: stop the producer before anything it uses goes away.
  struct JoinOnExit {
    std::atomic<bool>& stop;
    std::thread& t;
    ~JoinOnExit() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join_on_exit{stop, producer};
  u->subscribe(key("kill/*@app"), [&](const RecordPtr& r) {
    std::lock_guard l(mu);
    seen.insert(r->seq);
    max_seen = std::max(max_seen, r->seq);
  });

  producer = std::thread([&] {
    while (!stop.load()) {
      u->publish(rec("kill/1@app", Json(seq.load() + 1), seq.load() + 1));
      ++seq;
      if (seq.load() % 50 == 0) std::this_thread::sleep_for(1ms);  // ~50k/s at most
    }
  });
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard l(mu);
    return seen.size() > 2000;
  }));
  server_.stop(/*kill_hard=*/true);
  ASSERT_TRUE(wait_for([&] { return !u->stats().connected; }));
  const uint64_t at_kill = seq.load();
  ASSERT_TRUE(wait_for([&] { return seq.load() > at_kill + 2000; }));  // buffered meanwhile
  EXPECT_GT(u->stats().buffered, 0u);
  start_server();
  ASSERT_TRUE(wait_for([&] { return u->stats().connected && u->stats().reconnects >= 2; }));
  // The subscription came back: records published from now on arrive.
  const uint64_t after = seq.load();
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard l(mu);
    return max_seen > after + 100;
  }));
  stop = true;
  producer.join();
  ASSERT_TRUE(u->drain(10s));
  const uint64_t last = seq.load();
  // The subscriber may still be working through the backlog (slow under ASan on 2 loaded cores).
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard l(mu);
    return max_seen == last;
  }, 60s)) << "max seen " << max_seen << " of " << last;

  auto st = u->stats();
  EXPECT_EQ(st.published, last);
  EXPECT_EQ(st.published, st.sent + st.dropped + st.buffered);
  EXPECT_EQ(st.buffered, 0u);
  // Every record is either seen or counted as a gap; nothing vanishes silently.
  {
    std::lock_guard l(mu);
    EXPECT_EQ(*seen.begin(), 1u);
    EXPECT_EQ(seen.size() + st.gaps, last);
    std::printf("[ figures  ] kill/restart: published %llu sent %llu dropped %llu gaps %llu "
                "reconnects %llu\n",
                static_cast<unsigned long long>(st.published),
                static_cast<unsigned long long>(st.sent),
                static_cast<unsigned long long>(st.dropped),
                static_cast<unsigned long long>(st.gaps),
                static_cast<unsigned long long>(st.reconnects));
  }
  EXPECT_FALSE(st.last_error.empty());
}

TEST_F(RedisUpdatesTest, RedisDownAtStart) {
  const auto t0 = Clock::now();
  auto u = make();
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->stats().connected);
  EXPECT_FALSE(u->stats().last_error.empty());
  Inbox inbox;
  u->subscribe(key("late/*@app"), inbox.handler());  // recorded, issued on connect
  EXPECT_LT(Clock::now() - t0, 3 * cfg_.connect_timeout);
  for (uint64_t i = 1; i <= 50; ++i) u->publish(rec("late/1@app", Json(i), i));
  EXPECT_FALSE(u->drain(20ms));
  auto st = u->stats();
  EXPECT_EQ(st.buffered, 50u);
  EXPECT_EQ(st.sent, 0u);

  start_server();
  ASSERT_TRUE(wait_for([&] { return u->stats().connected; }));
  ASSERT_TRUE(u->drain(5s));
  st = u->stats();
  EXPECT_EQ(st.sent, 50u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.buffered, 0u);
  // The subscription made while Redis was away is live now.
  uint64_t s = 50;
  ASSERT_TRUE(wait_for([&] {
    ++s;
    u->publish(rec("late/1@app", Json(s), s));
    u->flush();
    std::this_thread::sleep_for(5ms);
    return inbox.size() > 0;
  }));
}

TEST_F(RedisUpdatesTest, OverflowWhileAwayIsCountedDropped) {
  cfg_.max_buffered = 10;
  auto u = make();
  ASSERT_TRUE(u);
  for (uint64_t i = 1; i <= 25; ++i) u->publish(rec("of/k@app", Json(i), i));
  auto st = u->stats();
  EXPECT_EQ(st.published, 25u);
  EXPECT_EQ(st.buffered, 10u);
  EXPECT_EQ(st.dropped, 15u);
  start_server();
  ASSERT_TRUE(wait_for([&] { return u->stats().connected; }));
  ASSERT_TRUE(u->drain(5s));
  st = u->stats();
  EXPECT_EQ(st.sent, 10u);
  EXPECT_EQ(st.dropped, 15u);
  EXPECT_EQ(st.published, st.sent + st.dropped + st.buffered);
}

TEST_F(RedisUpdatesTest, DestructorDoesNotHangOnAHungRedis) {
  start_server();
  auto u = make();
  ASSERT_TRUE(u);
  Inbox inbox;
  u->subscribe(key("hang/k@app"), inbox.handler());
  server_.pause();
  for (uint64_t i = 1; i <= 500; ++i) u->publish(rec("hang/k@app", Json(i), i));
  u->flush();
  const auto t0 = Clock::now();
  u.reset();
  EXPECT_LT(Clock::now() - t0, 3 * cfg_.connect_timeout + 500ms);
  server_.resume();
}

TEST_F(RedisUpdatesTest, DestructorDoesNotHangWhileRedisIsDown) {
  cfg_.reconnect_min = 200ms;
  cfg_.reconnect_max = 200ms;
  auto u = make();
  ASSERT_TRUE(u);
  u->publish(rec("down/k@app", Json(1), 1));
  const auto t0 = Clock::now();
  u.reset();
  EXPECT_LT(Clock::now() - t0, cfg_.connect_timeout + 200ms);
}

TEST_F(RedisUpdatesTest, AuthWithPassword) {
  server_.set_extra_args({"--requirepass", "s3cret"});
  start_server();
  {
    cfg_.password = "wrong";
    auto u = make();
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->stats().connected);
    EXPECT_NE(u->stats().last_error.find("AUTH"), std::string::npos) << u->stats().last_error;
  }
  cfg_.password = "s3cret";
  auto u = make();
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->stats().connected);
  Inbox inbox;
  u->subscribe(key("auth/k@app"), inbox.handler());
  u->publish(rec("auth/k@app", Json(1), 1));
  ASSERT_TRUE(wait_for([&] { return inbox.size() == 1; }));
}

}  // namespace
}  // namespace sdn::data
