// StreamTable: lookup, slot allocation from a free list, and the idle sweep at the cap.
#include "apps/ids/kitnet/stream_table.hpp"

#include <algorithm>

namespace sdn::ids {

namespace {
// A sweep frees this fraction of the cap at once, so its O(cap) cost is spread over the
// cap/kSweepDivisor insertions that follow (O(1) amortised per new stream).
constexpr std::size_t kSweepDivisor = 8;
}  // namespace

StreamTable::StreamTable(std::size_t stride, std::size_t cap) : stride_(stride), cap_(std::max<std::size_t>(cap, 1)) {}

double* StreamTable::find_or_insert(const StreamKey& key, double t, bool& created) {
  if (auto it = index_.find(key); it != index_.end()) {
    created = false;
    return &pool_[static_cast<std::size_t>(it->second) * stride_];
  }
  if (index_.size() >= cap_) evict_idle();
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
    keys_[slot] = key;
    live_[slot] = 1;
  } else {
    slot = static_cast<uint32_t>(keys_.size());
    keys_.push_back(key);
    live_.push_back(1);
    pool_.resize(pool_.size() + stride_);
  }
  index_.emplace(key, slot);
  double* s = &pool_[static_cast<std::size_t>(slot) * stride_];
  std::fill(s, s + stride_, 0.0);
  s[0] = t;
  created = true;
  return s;
}

void StreamTable::evict_idle() {
  const std::size_t n = keys_.size();
  const std::size_t k = std::max<std::size_t>(1, cap_ / kSweepDivisor);
  scratch_.clear();
  scratch_.reserve(n);
  for (std::size_t s = 0; s < n; ++s)
    if (live_[s]) scratch_.push_back(pool_[s * stride_]);
  if (scratch_.empty()) return;
  const std::size_t kk = std::min(k, scratch_.size());
  std::nth_element(scratch_.begin(), scratch_.begin() + static_cast<std::ptrdiff_t>(kk - 1), scratch_.end());
  const double cutoff = scratch_[kk - 1];
  // Evict up to kk streams idle since `cutoff` or longer (ties beyond kk stay: a lower bound
  // on what is freed is all the cap needs).
  std::size_t freed = 0;
  for (std::size_t s = 0; s < n && freed < kk; ++s) {
    if (!live_[s] || pool_[s * stride_] > cutoff) continue;
    index_.erase(keys_[s]);
    live_[s] = 0;
    free_.push_back(static_cast<uint32_t>(s));
    ++freed;
  }
  evicted_ += freed;
}

}  // namespace sdn::ids
