// libFuzzer target for the ofp mods messages (PACKET_OUT, FLOW_MOD, GROUP_MOD, METER_MOD); see ../ofp_common/ofp_fuzz.hpp.
#include "../ofp_common/ofp_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sdn::ofp::Type;
  return sdn::ofp::fuzz::run(data, size, {Type::kPacketOut, Type::kFlowMod, Type::kGroupMod, Type::kMeterMod});
}
