// The in-process bus: exact delivery by pattern, the producer's object itself (no copy), order per
// publisher and key under two publishing threads, unsubscribe (also from inside a handler),
// executors, and the match cache following subscription changes.
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "data/updates.hpp"

namespace sdn::data {
namespace {

Key K(std::string_view s) { return *Key::parse(s); }

RecordPtr rec(std::string key, Value v, std::string inst = "i", uint64_t seq = 0) {
  auto r = std::make_shared<Record>();
  r->key = std::move(key);
  r->value = std::move(v);
  r->app_id = "app";
  r->instance = std::move(inst);
  r->seq = seq;
  return r;
}

TEST(InprocBus, DeliversExactlyTheMatchingKeysWithoutACopy) {
  auto bus = make_inproc_updates();
  std::vector<const Record*> star, tail, exact, other_app;
  bus->subscribe(K("a/*/c"), [&](const RecordPtr& r) { star.push_back(r.get()); });
  bus->subscribe(K("a/**"), [&](const RecordPtr& r) { tail.push_back(r.get()); });
  bus->subscribe(K("a/b/c@app"), [&](const RecordPtr& r) { exact.push_back(r.get()); });
  bus->subscribe(K("a/b/c@zzz"), [&](const RecordPtr& r) { other_app.push_back(r.get()); });
  auto r1 = rec("a/b/c@app", 1);
  auto r2 = rec("a/b/x/c@app", 2);
  auto r3 = rec("b/b/c@app", 3);
  bus->publish(r1);
  bus->publish(r2);
  bus->publish(r3);
  EXPECT_EQ(star, (std::vector<const Record*>{r1.get()}));
  EXPECT_EQ(tail, (std::vector<const Record*>{r1.get(), r2.get()}));
  EXPECT_EQ(exact, (std::vector<const Record*>{r1.get()}));
  EXPECT_TRUE(other_app.empty());
  auto st = bus->stats();
  EXPECT_EQ(st.published, 3u);
  EXPECT_EQ(st.delivered, 4u);
}

TEST(InprocBus, NewSubscriptionSeesLaterRecordsOfACachedKey) {
  auto bus = make_inproc_updates();
  int first = 0, second = 0;
  auto id1 = bus->subscribe(K("x/y"), [&](const RecordPtr&) { ++first; });
  bus->publish(rec("x/y@app", 1));
  bus->subscribe(K("x/*"), [&](const RecordPtr&) { ++second; });
  bus->publish(rec("x/y@app", 2));
  bus->unsubscribe(id1);
  bus->publish(rec("x/y@app", 3));
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 2);
}

TEST(InprocBus, OrderPerPublisherAndKeyUnderTwoThreads) {
  auto bus = make_inproc_updates();
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, uint64_t> last;
  uint64_t out_of_order = 0, got = 0;
  bus->subscribe(K("t/*"), [&](const RecordPtr& r) {
    std::lock_guard lock(mu);
    auto& l = last[{r->instance, r->key}];
    if (r->seq != l + 1) ++out_of_order;
    l = r->seq;
    ++got;
  });
  constexpr uint64_t kN = 50000;
  auto producer = [&](std::string inst) {
    for (uint64_t i = 1; i <= kN; ++i) {
      bus->publish(rec("t/a@app", int(i), inst, i));
      bus->publish(rec("t/b@app", int(i), inst, i));
    }
  };
  std::thread t1(producer, "p1"), t2(producer, "p2");
  t1.join();
  t2.join();
  EXPECT_EQ(got, 4 * kN);
  EXPECT_EQ(out_of_order, 0u);
}

TEST(InprocBus, UnsubscribeFromInsideTheHandler) {
  auto bus = make_inproc_updates();
  int calls = 0;
  Updates::SubId id = 0;
  id = bus->subscribe(K("k"), [&](const RecordPtr&) {
    ++calls;
    bus->unsubscribe(id);
  });
  bus->publish(rec("k@app", 1));
  bus->publish(rec("k@app", 2));
  EXPECT_EQ(calls, 1);
}

TEST(InprocBus, UnsubscribeWaitsForARunningHandlerOnAnotherThread) {
  auto bus = make_inproc_updates();
  std::atomic<bool> in_handler{false}, release{false}, finished{false};
  auto id = bus->subscribe(K("k"), [&](const RecordPtr&) {
    in_handler = true;
    while (!release) std::this_thread::yield();
    finished = true;
  });
  std::thread pub([&] { bus->publish(rec("k@app", 1)); });
  while (!in_handler) std::this_thread::yield();
  std::thread unsub([&] {
    bus->unsubscribe(id);
    EXPECT_TRUE(finished.load());  // returned only after the running call ended
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  release = true;
  pub.join();
  unsub.join();
}

TEST(InprocBus, ExecutorRunsHandlersWhereTheSubscriberSays) {
  auto bus = make_inproc_updates();
  std::deque<std::function<void()>> queue;
  std::vector<int> seen;
  bus->subscribe(
      K("e/**"), [&](const RecordPtr& r) { seen.push_back(r->value.json().get<int>()); },
      [&](std::function<void()> fn) { queue.push_back(std::move(fn)); });
  for (int i = 0; i < 5; ++i) bus->publish(rec("e/x@app", i));
  EXPECT_TRUE(seen.empty());
  ASSERT_EQ(queue.size(), 5u);
  while (!queue.empty()) {
    queue.front()();
    queue.pop_front();
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
}

// A handler that throws costs that one delivery (counted); the publisher goes on, other
// subscribers still get the record, and unsubscribing afterwards does not wait for ever.
TEST(InprocBus, AThrowingHandlerIsCountedAndUnsubscribeStillReturns) {
  auto bus = make_inproc_updates();
  int others = 0;
  auto bad = bus->subscribe(K("a/**"), [](const RecordPtr& r) {
    if (r->value.json().get<int>() == 1) throw std::runtime_error("wrong shape");
  });
  bus->subscribe(K("a/**"), [&](const RecordPtr&) { ++others; });
  bus->publish(rec("a/b@app", 1));
  bus->publish(rec("a/b@app", 2));
  EXPECT_EQ(others, 2);
  auto st = bus->stats();
  EXPECT_EQ(st.handler_errors, 1u);
  EXPECT_EQ(st.delivered, 3u);
  std::atomic<bool> returned{false};
  std::thread t([&] {
    bus->unsubscribe(bad);
    returned = true;
  });
  for (int i = 0; i < 200 && !returned; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(returned.load());
  if (!returned) t.detach(); else t.join();
}

TEST(InprocBus, RecordWithABadKeyIsCountedNotDelivered) {
  auto bus = make_inproc_updates();
  int calls = 0;
  bus->subscribe(K("**"), [&](const RecordPtr&) { ++calls; });
  bus->publish(rec("bad key@app", 1));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(bus->stats().decode_errors, 1u);
}

}  // namespace
}  // namespace sdn::data
