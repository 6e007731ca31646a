// Reactor shards: one asio event loop per thread (by default one per core). State owned by
// a shard is only touched on its thread; other threads reach it by posting a function.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

namespace sdn::core {

class Shard {
 public:
  explicit Shard(unsigned index);
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;
  ~Shard();

  unsigned index() const { return index_; }
  asio::io_context& context() { return ctx_; }
  // True when called from this shard's own thread.
  bool on_shard() const { return current_ == this; }
  // The shard whose thread is calling, or nullptr off every shard's thread.
  static Shard* current() { return current_; }

  // The nice value the shard's thread sets on itself when it starts (0: left as it is).
  // docs/runtime.md, "Shard threads ahead of co-located switches". Set before start().
  void set_nice(int nice) { nice_ = nice; }
  // After start(): true if the thread runs at that nice value (false if it was refused).
  bool nice_applied() const { return nice_applied_.load(std::memory_order_acquire); }

  // Run `fn` on this shard's thread, after the handlers already queued.
  template <class F>
  void post(F&& fn) { asio::post(ctx_, std::forward<F>(fn)); }

  void start();  // spawns the thread
  void stop();   // asks the loop to return (queued handlers may be dropped)
  void join();

 private:
  void apply_nice();

  unsigned index_;
  asio::io_context ctx_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  int nice_ = 0;
  std::atomic<bool> nice_applied_{false};
  std::thread thread_;
  // Set by the shard's own thread before its loop runs. A thread-local: no other thread reads
  // what this one writes (the std::thread::id member it replaces was written by the new thread
  // while other threads could read it).
  static inline thread_local Shard* current_ = nullptr;
};

class ShardPool {
 public:
  // count == 0 means one shard per hardware thread.
  explicit ShardPool(unsigned count);
  ~ShardPool();

  size_t size() const { return shards_.size(); }
  Shard& at(size_t i) { return *shards_[i]; }
  // Round-robin choice for new work (e.g. an accepted connection).
  Shard& next();
  void set_nice(int nice);

  void start();
  void stop();
  void join();

 private:
  std::vector<std::unique_ptr<Shard>> shards_;
  size_t next_ = 0;
};

}  // namespace sdn::core
