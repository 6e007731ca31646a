// libFuzzer target for the ofp async messages (PACKET_IN, FLOW_REMOVED, PORT_STATUS); see ../ofp_common/ofp_fuzz.hpp.
#include "../ofp_common/ofp_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sdn::ofp::Type;
  return sdn::ofp::fuzz::run(data, size, {Type::kPacketIn, Type::kFlowRemoved, Type::kPortStatus});
}
