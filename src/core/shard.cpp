// Reactor shards: threads each running one asio::io_context.
#include "core/shard.hpp"

#include <pthread.h>

#include <string>

#include <spdlog/spdlog.h>

namespace sdn::core {

Shard::Shard(unsigned index) : index_(index), ctx_(1) {}

Shard::~Shard() {
  stop();
  join();
}

void Shard::start() {
  guard_.emplace(asio::make_work_guard(ctx_));
  thread_ = std::thread([this] {
    thread_id_ = std::this_thread::get_id();
    const std::string name = "sdn-shard-" + std::to_string(index_);
    pthread_setname_np(pthread_self(), name.c_str());
    ctx_.run();
  });
}

void Shard::stop() {
  guard_.reset();
  ctx_.stop();
}

void Shard::join() {
  if (thread_.joinable()) thread_.join();
}

ShardPool::ShardPool(unsigned count) {
  if (count == 0) count = std::max(1u, std::thread::hardware_concurrency());
  shards_.reserve(count);
  for (unsigned i = 0; i < count; ++i) shards_.push_back(std::make_unique<Shard>(i));
}

ShardPool::~ShardPool() {
  stop();
  join();
}

Shard& ShardPool::next() {
  Shard& s = *shards_[next_];
  next_ = (next_ + 1) % shards_.size();
  return s;
}

void ShardPool::start() {
  for (auto& s : shards_) s->start();
}
void ShardPool::stop() {
  for (auto& s : shards_) s->stop();
}
void ShardPool::join() {
  for (auto& s : shards_) s->join();
}

}  // namespace sdn::core
