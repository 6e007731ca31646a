// libFuzzer target for the ofp multipart messages (MULTIPART_REQUEST/REPLY bodies); see ../ofp_common/ofp_fuzz.hpp.
#include "../ofp_common/ofp_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sdn::ofp::Type;
  return sdn::ofp::fuzz::run(data, size, {Type::kMultipartRequest, Type::kMultipartReply});
}
