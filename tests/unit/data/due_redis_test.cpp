// DUE and the Coordinator over a real Redis (a private redis-server): each Backends stands for a
// separate process, so nothing is shared but Redis. The same app code as on the in-process bus:
// writes reach another process in order, assignments come back from a Coordinator elsewhere,
// and a crashed active instance is replaced by its standby in another process within 1 s.
#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "data/coordinator.hpp"
#include "data/due.hpp"
#include "fakes/redis_server.hpp"
#include "fakes/eventually.hpp"

namespace sdn::data {
namespace {

using namespace std::chrono_literals;

// Redis round trips under ASan on 2 loaded cores: a longer default limit than the shared one.
template <class F>
bool eventually(F&& f, std::chrono::milliseconds limit = 5000ms) {
  return test::eventually(std::forward<F>(f), limit);
}

class DueRedis : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(redis_.start()) << redis_.error(); }

  // A "process": its own Redis connections, no archive.
  std::shared_ptr<Backends> process(std::size_t batch = 100) {
    RedisConfig rc;
    rc.port = redis_.port();
    rc.batch_size = batch;
    rc.flush_interval = 200us;
    auto u = make_redis_updates(rc);
    EXPECT_TRUE(u) << (u ? "" : u.error());
    return std::make_shared<Backends>(std::move(*u), nullptr);
  }
  DueConfig fast() {
    DueConfig c;
    c.heartbeat_interval = 50ms;
    return c;
  }
  test::RedisServer redis_;
};

TEST_F(DueRedis, WritesReachAnotherProcessInOrder) {
  auto pa = process(), pb = process();
  Due prod(pa), cons(pb);
  ASSERT_TRUE(prod.init("sensor", kProducer));
  ASSERT_TRUE(cons.init("twin", kConsumer));
  std::mutex mu;
  std::vector<RecordPtr> got;
  auto sub = cons.observe("fleet/*/temp@sensor", [&](const RecordPtr& r) {
    std::lock_guard lock(mu);
    got.push_back(r);
  });
  ASSERT_TRUE(sub);
  constexpr int kN = 5000;
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(prod.write("fleet/p1/temp", Json{{"i", i}}));
  ASSERT_TRUE(prod.write("fleet/p2/temp", Bytes{std::string("\0\1", 2)}, kNoWait));
  ASSERT_TRUE(prod.write("fleet/p1/other", 1, kNoWait));  // not matched by the pattern
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return got.size() == kN + 1;
  })) << got.size();
  std::lock_guard lock(mu);
  int next = 0;
  for (const auto& r : got) {
    if (r->key == "fleet/p1/temp@sensor") {
      EXPECT_EQ(r->value.json()["i"], next);
      EXPECT_EQ(r->seq, uint64_t(next) + 1);
      EXPECT_EQ(r->instance, prod.instance());
      ++next;
    } else {
      EXPECT_EQ(r->key, "fleet/p2/temp@sensor");
      ASSERT_TRUE(r->value.is_bytes());
      EXPECT_EQ(r->value.bytes(), std::string("\0\1", 2));
    }
  }
  EXPECT_EQ(next, kN);
  EXPECT_EQ(pb->updates().stats().gaps, 0u);
  EXPECT_EQ(pa->updates().stats().dropped, 0u);
}

TEST_F(DueRedis, CoordinatorInAnotherProcessAssignsAndFailsOver) {
  auto pc = process(1), p1 = process(1), p2 = process(1), p3 = process(1);
  CoordinatorConfig cc;
  cc.missed_beats = 3;
  cc.check_interval = 20ms;
  Coordinator coord(pc, cc, fast());
  ASSERT_TRUE(coord.start());

  DueConfig crashy = fast();
  crashy.send_goodbye = false;  // destroying it looks like a crash: heartbeats just stop
  auto first = std::make_unique<Due>(p1, crashy);
  ASSERT_TRUE(first->init("sensor", kProducer, {}, {{"fleet/*/temp", 50.0, false}}));
  ASSERT_TRUE(eventually([&] { return first->assignments().epoch > 0; }));
  Due second(p2, fast());
  ASSERT_TRUE(second.init("sensor", kProducer, {}, {{"fleet/*/temp", 50.0, false}}));
  Due consumer(p3, fast());
  ASSERT_TRUE(consumer.init("twin", kConsumer, {{"fleet/**", 10.0}}));

  // The first instance is active with the consumer's rate; the second is its standby.
  ASSERT_TRUE(eventually([&] { return first->assigned_freq("fleet/p1/temp") == 10.0; }));
  EXPECT_TRUE(first->active());
  ASSERT_TRUE(eventually([&] { return second.assignments().epoch > 0; }));
  EXPECT_FALSE(second.active());
  EXPECT_TRUE(first->wanted("fleet/p9/temp"));
  EXPECT_EQ(first->assignments().items.at(0).consumers, std::vector<std::string>{"twin"});

  // Crash the active: the standby holds the assignment within 1 s of the last heartbeat
  // deadline (3 x 50 ms silence + check interval + delivery).
  first.reset();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return second.active() && second.assigned_freq("fleet/p1/temp") == 10.0; }, 3000ms));
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 1000ms) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  std::printf("failover over Redis took %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  Json st = coord.state();
  EXPECT_NE(st.dump().find("twin"), std::string::npos);
}

}  // namespace
}  // namespace sdn::data
