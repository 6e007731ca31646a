// The packet stream on network/traffic/...: the sampler's batch format (one Data Updates record
// carries every frame captured in one production interval) and the frame -> PacketInfo step the
// detector runs on each. Format, little-endian:
//   "SDT1" | u32 count | count x ( i64 ts_ns | u32 wire_len | u16 cap_len | u16 source | cap_len bytes )
// `source` is the index of the capture interface in the sampler's list. Decoding checks every
// length against the bytes present and never sizes anything from a count before checking it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "apps/ids/kitnet/kitsune.hpp"
#include "core/expected.hpp"

namespace sdn::apps::ids {

using sdn::ids::PacketInfo;

inline constexpr std::string_view kBatchMagic = "SDT1";
inline constexpr std::size_t kBatchHeader = 8;
inline constexpr std::size_t kFrameHeader = 16;

struct Frame {
  int64_t ts_ns = 0;
  uint32_t wire_len = 0;
  uint16_t source = 0;
  std::span<const uint8_t> bytes;  // the captured part (views the batch)
};

// Appends frames to a batch being built.
class BatchWriter {
 public:
  BatchWriter();
  void add(int64_t ts_ns, uint32_t wire_len, uint16_t source, std::span<const uint8_t> captured);
  uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The finished batch; the writer starts a new one.
  std::string take();

 private:
  std::string buf_;
  uint32_t count_ = 0;
};

// Calls `fn(const Frame&)` for each frame; an error names what is wrong (the frames before it
// were delivered).
template <class Fn>
Expected<uint32_t, std::string> for_each_frame(std::string_view batch, Fn&& fn);

// The fields Kitsune needs, from one Ethernet frame (truncated captures accepted); nullopt for a
// frame too short or malformed to say anything about.
std::optional<PacketInfo> packet_info(const Frame& f, double ts_origin_s = 0);

// Implementation of the template (bounds-checked cursor over the batch).
namespace detail {
uint64_t read_le(const uint8_t* p, int n);
}

template <class Fn>
Expected<uint32_t, std::string> for_each_frame(std::string_view batch, Fn&& fn) {
  const auto* p = reinterpret_cast<const uint8_t*>(batch.data());
  const std::size_t n = batch.size();
  if (n < kBatchHeader) return unexpected(std::string("batch shorter than its 8-byte header"));
  if (batch.substr(0, 4) != kBatchMagic) return unexpected(std::string("batch does not start with SDT1"));
  const auto count = static_cast<uint32_t>(detail::read_le(p + 4, 4));
  std::size_t at = kBatchHeader;
  for (uint32_t i = 0; i < count; ++i) {
    if (n - at < kFrameHeader) return unexpected("frame " + std::to_string(i) + ": header past the end of the batch");
    Frame f;
    f.ts_ns = static_cast<int64_t>(detail::read_le(p + at, 8));
    f.wire_len = static_cast<uint32_t>(detail::read_le(p + at + 8, 4));
    const auto cap = static_cast<std::size_t>(detail::read_le(p + at + 12, 2));
    f.source = static_cast<uint16_t>(detail::read_le(p + at + 14, 2));
    at += kFrameHeader;
    if (n - at < cap) return unexpected("frame " + std::to_string(i) + ": captured bytes past the end of the batch");
    if (cap > f.wire_len) return unexpected("frame " + std::to_string(i) + ": captured length above the wire length");
    f.bytes = std::span<const uint8_t>(p + at, cap);
    at += cap;
    fn(static_cast<const Frame&>(f));
  }
  if (at != n) return unexpected(std::string("bytes after the last frame"));
  return count;
}

}  // namespace sdn::apps::ids
