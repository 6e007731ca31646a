// libFuzzer target for the ofp symmetric messages (HELLO, ERROR, ECHO, FEATURES, CONFIG, BARRIER, ROLE); see ../ofp_common/ofp_fuzz.hpp.
#include "../ofp_common/ofp_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sdn::ofp::Type;
  return sdn::ofp::fuzz::run(data, size, {Type::kHello, Type::kError, Type::kEchoRequest, Type::kEchoReply, Type::kFeaturesRequest, Type::kFeaturesReply, Type::kGetConfigRequest, Type::kGetConfigReply, Type::kSetConfig, Type::kBarrierRequest, Type::kBarrierReply, Type::kRoleRequest, Type::kRoleReply});
}
