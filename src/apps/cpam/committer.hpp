// One background thread for the work a shard's loop must not do: the rotation engine's
// write-ahead commit of a reservation (Due::sync, up to a second against a slow archive) runs
// here, and its continuation is posted back to the engine's shard; so do the VIP state and
// mapping records (JSON of O(hosts) and O(pool) values: about 8 ms each at 10,000 hosts). Jobs
// run in order; the destructor finishes the queued ones and joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sdn::apps::cpam {

class Committer {
 public:
  Committer() = default;
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;
  ~Committer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  // Returns when every job handed in before has run (at once without a thread).
  void wait_idle() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
  }

  void run(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
      if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      job();
      job = nullptr;  // what it held goes here, not on the waiter's thread
      lock.lock();
      busy_ = false;
      if (jobs_.empty()) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  bool busy_ = false;
  std::thread thread_;
};

}  // namespace sdn::apps::cpam
