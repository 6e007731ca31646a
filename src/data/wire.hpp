// The wire format of a record on Redis channels (docs/data-wire.md): one JSON object per PUBLISH,
//   {"k": key, "a": app_id, "i": instance, "t": ts_ns, "s": seq, "v": <json>}
// or with "b": "<base64>" instead of "v" for raw bytes. Any language with a JSON library and a
// Redis client can produce and consume it.
#pragma once

#include <string>
#include <string_view>

#include "core/expected.hpp"
#include "data/record.hpp"

namespace sdn::data {

std::string encode_envelope(const Record& r);
// Appends to `out` (reused buffers on the publish path).
void encode_envelope(const Record& r, std::string& out);
// Errors name the missing or mistyped field.
Expected<Record, std::string> decode_envelope(std::string_view text);

std::string base64_encode(std::string_view in);
Expected<std::string, std::string> base64_decode(std::string_view in);

}  // namespace sdn::data
