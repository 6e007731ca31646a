// Reactor shards: threads each running one asio::io_context.
#include "core/shard.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
  // spdlog's registry is a function-local static in the (uninstrumented) shared library: if a
  // shard's thread is the first to log, ThreadSanitizer sees no order between the registry's
  // construction and another shard's read of its logger. Built here, before the thread.
  (void)spdlog::default_logger_raw();
  thread_ = std::thread([this] {
    current_ = this;
    const std::string name = "sdn-shard-" + std::to_string(index_);
    pthread_setname_np(pthread_self(), name.c_str());
    if (nice_ != 0) apply_nice();
    ctx_.run();
  });
}

// setpriority on a thread id sets that thread's nice value only (Linux). Lowering it below 0
// needs CAP_SYS_NICE: refused, the thread keeps running at its old value and says so.
void Shard::apply_nice() {
  const auto tid = static_cast<id_t>(::gettid());
  if (::setpriority(PRIO_PROCESS, tid, nice_) == 0) {
    nice_applied_.store(true, std::memory_order_release);
    spdlog::info("shard {}: thread runs at nice {}", index_, nice_);
    return;
  }
  const int err = errno;
  spdlog::warn("shard {}: cannot set nice {} ({}); it runs at nice {}", index_, nice_, std::strerror(err),
               ::getpriority(PRIO_PROCESS, tid));
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

void ShardPool::set_nice(int nice) {
  for (auto& s : shards_) s->set_nice(nice);
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
