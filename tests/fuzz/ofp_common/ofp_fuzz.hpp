// Shared body of the ofp_<family> libFuzzer targets. Each input is tried twice: as-is (header
// rules), and steered into the target's family (version 1.3, a family type, the header length
// fixed to the input size) so the fuzzer spends its time inside that family's body codecs.
// Property: decode never crashes; whatever decodes re-encodes, the re-encoding decodes to an
// equal message, and encoding that again gives the same bytes.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <span>

#include "ofp/message.hpp"

namespace sdn::ofp::fuzz {

inline void check(std::span<const uint8_t> input) {
  auto d = decode(input);
  if (!d) {
    (void)error_reply(d.error(), input);
    return;
  }
  Bytes wire;
  if (!encode(*d, wire)) std::abort();      // decoded but cannot be re-encoded
  auto d2 = decode(wire);
  if (!d2) std::abort();                    // our own encoding does not decode
  if (!(*d2 == *d)) std::abort();           // lossy round trip
  Bytes again;
  if (!encode(*d2, again) || again != wire) std::abort();  // encoding not canonical
}

inline int run(const uint8_t* data, size_t size, std::initializer_list<Type> family) {
  if (size > kMaxMessageLen) return 0;
  Bytes buf(data, data + size);  // exact-size heap copy, so ASan sees any overread
  check(buf);
  if (size < kHeaderLen) return 0;
  bool in_family = false;
  for (Type t : family) in_family |= static_cast<uint8_t>(t) == buf[1];
  if (!in_family) buf[1] = static_cast<uint8_t>(family.begin()[buf[1] % family.size()]);
  buf[0] = kVersion;
  buf[2] = static_cast<uint8_t>(size >> 8);
  buf[3] = static_cast<uint8_t>(size);
  check(buf);
  return 0;
}

}  // namespace sdn::ofp::fuzz
