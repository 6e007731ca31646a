// Big-endian loads/stores and a bounds-checked cursor. Parsers check a header's length once
// against the bytes present, then load fields at fixed offsets; TLV walks use Reader, whose
// every pull fails instead of reading past the end (the OVS try_pull idea).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "pkt/addr.hpp"

namespace sdn::pkt {

using Bytes = std::vector<uint8_t>;
using ByteView = std::span<const uint8_t>;

// Loads at `off`; the caller has checked off + width <= b.size().
inline uint8_t load_u8(ByteView b, size_t off) {
  assert(off < b.size());
  return b[off];
}
inline uint16_t load_be16(ByteView b, size_t off) {
  assert(off + 2 <= b.size());
  return static_cast<uint16_t>((uint16_t{b[off]} << 8) | b[off + 1]);
}
inline uint32_t load_be32(ByteView b, size_t off) {
  assert(off + 4 <= b.size());
  return (uint32_t{b[off]} << 24) | (uint32_t{b[off + 1]} << 16) | (uint32_t{b[off + 2]} << 8) |
         uint32_t{b[off + 3]};
}
inline Mac load_mac(ByteView b, size_t off) {
  assert(off + 6 <= b.size());
  uint64_t v = 0;
  for (size_t i = 0; i < 6; ++i) v = (v << 8) | b[off + i];
  return Mac{v};
}

// A read cursor over a byte span. A failed pull leaves the cursor where it was.
class Reader {
 public:
  explicit Reader(ByteView bytes) : bytes_(bytes) {}

  size_t remaining() const { return bytes_.size() - pos_; }
  size_t offset() const { return pos_; }
  bool empty() const { return pos_ == bytes_.size(); }

  bool pull_u8(uint8_t& v) {
    if (remaining() < 1) return false;
    v = bytes_[pos_++];
    return true;
  }
  bool pull_be16(uint16_t& v) {
    if (remaining() < 2) return false;
    v = load_be16(bytes_, pos_);
    pos_ += 2;
    return true;
  }
  bool pull_be32(uint32_t& v) {
    if (remaining() < 4) return false;
    v = load_be32(bytes_, pos_);
    pos_ += 4;
    return true;
  }
  bool pull_bytes(size_t n, ByteView& v) {
    if (remaining() < n) return false;
    v = bytes_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  ByteView rest() const { return bytes_.subspan(pos_); }

 private:
  ByteView bytes_;
  size_t pos_ = 0;
};

// Appending big-endian writer used by the builders.
class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}

  size_t size() const { return out_.size(); }
  void u8(uint8_t v) { out_.push_back(v); }
  void be16(uint16_t v) {
    out_.push_back(static_cast<uint8_t>(v >> 8));
    out_.push_back(static_cast<uint8_t>(v));
  }
  void be32(uint32_t v) {
    be16(static_cast<uint16_t>(v >> 16));
    be16(static_cast<uint16_t>(v));
  }
  void mac(Mac m) {
    for (int shift = 40; shift >= 0; shift -= 8) out_.push_back(static_cast<uint8_t>(m.value >> shift));
  }
  void bytes(ByteView b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void zeros(size_t n) { out_.insert(out_.end(), n, 0); }
  // Overwrites two bytes already written (length and checksum fields filled in later).
  void put_be16_at(size_t off, uint16_t v) {
    assert(off + 2 <= out_.size());
    out_[off] = static_cast<uint8_t>(v >> 8);
    out_[off + 1] = static_cast<uint8_t>(v);
  }

 private:
  Bytes& out_;
};

}  // namespace sdn::pkt
