// Internal to the ofp codec: the bounds-checked reader (a try_pull cursor over a byte span),
// the appending writer with length back-patching, and error constructors. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "ofp/message.hpp"

namespace sdn::ofp::wire {

// A cursor over big-endian wire bytes. Every getter fails (returns false, consumes nothing)
// instead of reading past the end, so a decoder can never overrun the span it was given.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}

  size_t remaining() const { return b_.size() - pos_; }
  bool empty() const { return pos_ == b_.size(); }
  size_t offset() const { return pos_; }

  [[nodiscard]] bool u8(uint8_t& v) {
    if (remaining() < 1) return false;
    v = b_[pos_++];
    return true;
  }
  [[nodiscard]] bool u16(uint16_t& v) {
    if (remaining() < 2) return false;
    v = static_cast<uint16_t>((b_[pos_] << 8) | b_[pos_ + 1]);
    pos_ += 2;
    return true;
  }
  [[nodiscard]] bool u32(uint32_t& v) {
    if (remaining() < 4) return false;
    v = load_be(4);
    return true;
  }
  [[nodiscard]] bool u64(uint64_t& v) {
    if (remaining() < 8) return false;
    v = load_be(8);
    return true;
  }
  // Big-endian unsigned of 1..8 bytes (OXM values of 6 bytes, MAC addresses).
  [[nodiscard]] bool uint_n(size_t n, uint64_t& v) {
    if (n == 0 || n > 8 || remaining() < n) return false;
    v = load_be(n);
    return true;
  }
  [[nodiscard]] bool skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }
  // Takes the next n bytes as a span (the OVS ofpbuf_try_pull idiom).
  [[nodiscard]] bool try_pull(size_t n, std::span<const uint8_t>& out) {
    if (remaining() < n) return false;
    out = b_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  // Peeks a big-endian u16 at `off` bytes ahead without consuming.
  [[nodiscard]] bool peek_u16(size_t off, uint16_t& v) const {
    if (remaining() < off + 2) return false;
    v = static_cast<uint16_t>((b_[pos_ + off] << 8) | b_[pos_ + off + 1]);
    return true;
  }
  std::span<const uint8_t> rest() const { return b_.subspan(pos_); }

 private:
  uint64_t load_be(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | b_[pos_ + i];
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

// Appends big-endian fields to a Bytes buffer. Lengths unknown up front are written as 0
// and back-patched with patch16() once the element is complete.
class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}

  size_t pos() const { return out_.size(); }
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { store_be(v, 2); }
  void u32(uint32_t v) { store_be(v, 4); }
  void u64(uint64_t v) { store_be(v, 8); }
  void uint_n(uint64_t v, size_t n) { store_be(v, n); }
  void zeros(size_t n) { out_.resize(out_.size() + n, 0); }
  void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // Fixed-size, NUL-padded string field; caller has checked s.size() < n.
  void str(const std::string& s, size_t n) {
    const size_t at = grow(n);
    std::memset(out_.data() + at, 0, n);
    std::memcpy(out_.data() + at, s.data(), s.size() < n ? s.size() : n);
  }
  // Pads with zeros so that (pos() - start) is a multiple of 8.
  void pad8_from(size_t start) { zeros((8 - (pos() - start) % 8) % 8); }
  void patch16(size_t at, size_t v) {
    out_[at] = static_cast<uint8_t>(v >> 8);
    out_[at + 1] = static_cast<uint8_t>(v);
  }

 private:
  size_t grow(size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    return at;
  }
  void store_be(uint64_t v, size_t n) {
    const size_t at = grow(n);
    for (size_t i = 0; i < n; ++i) out_[at + i] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
  }
  Bytes& out_;
};

// ---- errors ----
inline Unexpected<Error> fail(Errc c, uint16_t type, uint16_t code, const char* detail) {
  return Unexpected<Error>{Error{c, type, code, detail}};
}
// A length field or fixed part that the bytes present cannot satisfy: BAD_REQUEST/BAD_LEN.
inline Unexpected<Error> truncated(const char* detail) {
  return fail(Errc::kTruncated, err::kBadRequest, err::kBrcBadLen, detail);
}
inline Unexpected<Error> bad_len(const char* detail) {
  return fail(Errc::kBadLength, err::kBadRequest, err::kBrcBadLen, detail);
}
inline Unexpected<Error> bad_value(const char* detail) {
  return fail(Errc::kBadValue, err::kBadRequest, err::kBrcBadLen, detail);
}

inline size_t round_up8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace sdn::ofp::wire

// Propagates the error of a Result<...> expression from a function returning Result<...>.
#define SDN_OFP_TRY(expr)                                            \
  do {                                                               \
    if (auto sdn_ofp_r_ = (expr); !sdn_ofp_r_) {                     \
      return ::sdn::Unexpected<::sdn::ofp::Error>{sdn_ofp_r_.error()}; \
    }                                                                \
  } while (0)
