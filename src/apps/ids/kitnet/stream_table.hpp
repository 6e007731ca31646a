// A capped table of stream states for the extractor: 128-bit key -> a fixed-size slot of doubles
// in one flat pool (no allocation per packet once a slot exists), evicting the longest-idle
// streams when full so that spoofed sources cannot grow memory without bound.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace sdn::ids {

struct StreamKey {
  uint64_t a = 0;
  uint64_t b = 0;
  bool operator==(const StreamKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const StreamKey& k) {
    return H::combine(std::move(h), k.a, k.b);
  }
};

class StreamTable {
 public:
  // stride: doubles per slot; slot[0] must hold the stream's last-update time (the idle clock
  // the eviction sorts by). cap: at most this many streams (at least 1).
  StreamTable(std::size_t stride, std::size_t cap);
  // The slot of `key`, created zeroed with slot[0] = t when new (`created` tells which). May
  // evict other streams first; the pointer is valid until the next call.
  double* find_or_insert(const StreamKey& key, double t, bool& created);
  std::size_t size() const { return index_.size(); }
  uint64_t evicted() const { return evicted_; }
  std::size_t stride() const { return stride_; }

 private:
  void evict_idle();

  std::size_t stride_;
  std::size_t cap_;
  absl::flat_hash_map<StreamKey, uint32_t> index_;
  std::vector<double> pool_;     // slot s at [s*stride_, (s+1)*stride_)
  std::vector<StreamKey> keys_;  // key of each slot (to erase it from index_ on eviction)
  std::vector<uint8_t> live_;
  std::vector<uint32_t> free_;
  std::vector<double> scratch_;  // idle times during a sweep, kept to avoid reallocating
  uint64_t evicted_ = 0;
};

}  // namespace sdn::ids
