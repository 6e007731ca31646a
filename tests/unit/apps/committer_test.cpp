// The CPAM committer: the thread that builds and writes the VIP and mapping records and waits
// for the archive's commits, so that shard 0's loop does neither.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "apps/cpam/committer.hpp"

namespace sdn::apps::cpam {
namespace {

// Records the thread its last copy dies on.
struct DiesOn {
  explicit DiesOn(std::shared_ptr<std::thread::id> at) : at_(std::move(at)) {}
  DiesOn(const DiesOn&) = default;
  ~DiesOn() {
    if (at_.use_count() == 2) *at_ = std::this_thread::get_id();  // the test's and this one
  }
  std::shared_ptr<std::thread::id> at_;
};

TEST(Committer, JobsRunInOrderOnItsThreadAndWaitIdleWaitsForThem) {
  Committer c;
  std::mutex mu;
  std::vector<int> order;
  std::thread::id ran_on;
  for (int i = 0; i < 5; ++i)
    c.run([&, i] {
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others queue behind it
      std::lock_guard lock(mu);
      order.push_back(i);
      ran_on = std::this_thread::get_id();
    });
  c.wait_idle();
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(Committer, WaitIdleWithNothingQueuedReturnsAtOnce) {
  Committer c;
  c.wait_idle();  // no thread yet
  std::atomic<bool> ran{false};
  c.run([&] { ran = true; });
  c.wait_idle();
  EXPECT_TRUE(ran.load());
  c.wait_idle();
}

// What a job holds (a record's JSON, a copy of the VIP state) is freed on the committer's thread.
TEST(Committer, AJobsCapturesAreFreedOnItsThread) {
  Committer c;
  auto at = std::make_shared<std::thread::id>();
  std::thread::id ran_on;
  c.run([d = DiesOn(at), &ran_on] { ran_on = std::this_thread::get_id(); });
  c.wait_idle();
  EXPECT_NE(ran_on, std::thread::id{});
  EXPECT_EQ(*at, ran_on);
}

TEST(Committer, TheDestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    Committer c;
    for (int i = 0; i < 3; ++i)
      c.run([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        ++ran;
      });
  }
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace
}  // namespace sdn::apps::cpam
