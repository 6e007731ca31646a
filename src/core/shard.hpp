// Reactor shards: one asio event loop per thread (by default one per core). State owned by
// a shard is only touched on its thread; other threads reach it by posting a function.
#pragma once

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
  bool on_shard() const { return std::this_thread::get_id() == thread_id_; }

  // Run `fn` on this shard's thread, after the handlers already queued.
  template <class F>
  void post(F&& fn) { asio::post(ctx_, std::forward<F>(fn)); }

  void start();  // spawns the thread
  void stop();   // asks the loop to return (queued handlers may be dropped)
  void join();

 private:
  unsigned index_;
  asio::io_context ctx_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread thread_;
  std::thread::id thread_id_;
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

  void start();
  void stop();
  void join();

 private:
  std::vector<std::unique_ptr<Shard>> shards_;
  size_t next_ = 0;
};

}  // namespace sdn::core
