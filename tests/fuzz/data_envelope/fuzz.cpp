// Fuzzes decode_envelope and base64_decode. Whatever decodes must encode to an envelope that
// decodes again, and from then on encoding is stable (the first pass may normalize, e.g. a number
// too large for a double becomes null, as JSON has no infinity).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "data/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto b = sdn::data::base64_decode(in)) {
    if (sdn::data::base64_encode(*b) != in) std::abort();
  }
  auto r = sdn::data::decode_envelope(in);
  if (!r) return 0;
  std::string once = sdn::data::encode_envelope(*r);
  auto again = sdn::data::decode_envelope(once);
  if (!again) std::abort();
  if (again->key != r->key || again->app_id != r->app_id || again->instance != r->instance ||
      again->ts_ns != r->ts_ns || again->seq != r->seq)
    std::abort();
  if (sdn::data::encode_envelope(*again) != once) std::abort();
  return 0;
}
