// OpenFlow 1.3.5 domain types: constants, match (OXM), actions and instructions.
// These are the structs the rest of sdnator works with; the wire layout lives only in the
// codec (.cpp files). Section numbers refer to the OpenFlow Switch Specification 1.3.5.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <absl/container/inlined_vector.h>

namespace sdn::ofp {

inline constexpr uint8_t kVersion = 0x04;          // OFP_VERSION for 1.3 (7.1)
inline constexpr uint16_t kHeaderLen = 8;          // sizeof(ofp_header)
inline constexpr uint16_t kMaxMessageLen = 0xffff; // ofp_header.length is 16 bits

// ofp_type (7.1)
enum class Type : uint8_t {
  kHello = 0,               // OFPT_HELLO
  kError = 1,               // OFPT_ERROR
  kEchoRequest = 2,         // OFPT_ECHO_REQUEST
  kEchoReply = 3,           // OFPT_ECHO_REPLY
  kExperimenter = 4,        // OFPT_EXPERIMENTER
  kFeaturesRequest = 5,     // OFPT_FEATURES_REQUEST
  kFeaturesReply = 6,       // OFPT_FEATURES_REPLY
  kGetConfigRequest = 7,    // OFPT_GET_CONFIG_REQUEST
  kGetConfigReply = 8,      // OFPT_GET_CONFIG_REPLY
  kSetConfig = 9,           // OFPT_SET_CONFIG
  kPacketIn = 10,           // OFPT_PACKET_IN
  kFlowRemoved = 11,        // OFPT_FLOW_REMOVED
  kPortStatus = 12,         // OFPT_PORT_STATUS
  kPacketOut = 13,          // OFPT_PACKET_OUT
  kFlowMod = 14,            // OFPT_FLOW_MOD
  kGroupMod = 15,           // OFPT_GROUP_MOD
  kPortMod = 16,            // OFPT_PORT_MOD
  kTableMod = 17,           // OFPT_TABLE_MOD
  kMultipartRequest = 18,   // OFPT_MULTIPART_REQUEST
  kMultipartReply = 19,     // OFPT_MULTIPART_REPLY
  kBarrierRequest = 20,     // OFPT_BARRIER_REQUEST
  kBarrierReply = 21,       // OFPT_BARRIER_REPLY
  kQueueGetConfigRequest = 22,
  kQueueGetConfigReply = 23,
  kRoleRequest = 24,        // OFPT_ROLE_REQUEST
  kRoleReply = 25,          // OFPT_ROLE_REPLY
  kGetAsyncRequest = 26,
  kGetAsyncReply = 27,
  kSetAsync = 28,
  kMeterMod = 29,           // OFPT_METER_MOD
};

// Reserved port numbers, ofp_port_no (7.2.1)
namespace port {
inline constexpr uint32_t kMax = 0xffffff00;
inline constexpr uint32_t kInPort = 0xfffffff8;
inline constexpr uint32_t kTable = 0xfffffff9;
inline constexpr uint32_t kNormal = 0xfffffffa;
inline constexpr uint32_t kFlood = 0xfffffffb;
inline constexpr uint32_t kAll = 0xfffffffc;
inline constexpr uint32_t kController = 0xfffffffd;
inline constexpr uint32_t kLocal = 0xfffffffe;
inline constexpr uint32_t kAny = 0xffffffff;
}  // namespace port

inline constexpr uint32_t kNoBuffer = 0xffffffff;      // OFP_NO_BUFFER
inline constexpr uint16_t kControllerMaxLenNoBuffer = 0xffff;  // OFPCML_NO_BUFFER
inline constexpr uint32_t kGroupAny = 0xffffffff;      // OFPG_ANY
inline constexpr uint32_t kGroupAll = 0xfffffffc;      // OFPG_ALL
inline constexpr uint8_t kTableAll = 0xff;             // OFPTT_ALL
inline constexpr uint32_t kMeterAll = 0xffffffff;      // OFPM_ALL

// OXM basic-class field numbers, oxm_ofb_match_fields (7.2.3.7). Class is OFPXMC_OPENFLOW_BASIC.
enum class OxmField : uint8_t {
  kInPort = 0,        // 32 bits
  kInPhyPort = 1,     // 32
  kMetadata = 2,      // 64, maskable
  kEthDst = 3,        // 48, maskable
  kEthSrc = 4,        // 48, maskable
  kEthType = 5,       // 16
  kVlanVid = 6,       // 13 (+OFPVID_PRESENT), maskable
  kVlanPcp = 7,       // 3
  kIpDscp = 8,        // 6
  kIpEcn = 9,         // 2
  kIpProto = 10,      // 8
  kIpv4Src = 11,      // 32, maskable
  kIpv4Dst = 12,      // 32, maskable
  kTcpSrc = 13,       // 16
  kTcpDst = 14,       // 16
  kUdpSrc = 15,       // 16
  kUdpDst = 16,       // 16
  kSctpSrc = 17,
  kSctpDst = 18,
  kIcmpv4Type = 19,   // 8
  kIcmpv4Code = 20,   // 8
  kArpOp = 21,        // 16
  kArpSpa = 22,       // 32, maskable
  kArpTpa = 23,       // 32, maskable
  kArpSha = 24,       // 48, maskable
  kArpTha = 25,       // 48, maskable
};
inline constexpr uint16_t kOfpVidPresent = 0x1000;  // OFPVID_PRESENT

// One OXM TLV. Every field this codec supports fits in 64 bits; values are host order,
// MACs are the 48-bit big-endian number (aa:bb:.. -> 0xaabb..).
struct OxmTlv {
  OxmField field{};
  uint64_t value = 0;
  std::optional<uint64_t> mask;  // present => OXM_HASMASK
  bool operator==(const OxmTlv&) const = default;
};

// ofp_match of type OFPMT_OXM (7.2.3). Fields kept in insertion order; encode writes them
// in that order, so callers put prerequisites first (eth_type before ipv4_src, ...).
struct Match {
  absl::InlinedVector<OxmTlv, 8> fields;

  Match& set(OxmField f, uint64_t v) { fields.push_back({f, v, std::nullopt}); return *this; }
  Match& set_masked(OxmField f, uint64_t v, uint64_t m) { fields.push_back({f, v, m}); return *this; }
  std::optional<uint64_t> get(OxmField f) const {
    for (const auto& t : fields) if (t.field == f) return t.value;
    return std::nullopt;
  }
  const OxmTlv* find(OxmField f) const {
    for (const auto& t : fields) if (t.field == f) return &t;
    return nullptr;
  }
  bool operator==(const Match&) const = default;
};

// Actions (7.2.5)
struct ActionOutput {       // OFPAT_OUTPUT = 0
  uint32_t port = 0;
  uint16_t max_len = kControllerMaxLenNoBuffer;
  bool operator==(const ActionOutput&) const = default;
};
struct ActionPushVlan {     // OFPAT_PUSH_VLAN = 17
  uint16_t ethertype = 0x8100;
  bool operator==(const ActionPushVlan&) const = default;
};
struct ActionPopVlan {      // OFPAT_POP_VLAN = 18
  bool operator==(const ActionPopVlan&) const = default;
};
struct ActionGroup {        // OFPAT_GROUP = 22
  uint32_t group_id = 0;
  bool operator==(const ActionGroup&) const = default;
};
struct ActionDecNwTtl {     // OFPAT_DEC_NW_TTL = 24
  bool operator==(const ActionDecNwTtl&) const = default;
};
struct ActionSetField {     // OFPAT_SET_FIELD = 25, one OXM without mask
  OxmTlv field;
  bool operator==(const ActionSetField&) const = default;
};
using Action = std::variant<ActionOutput, ActionPushVlan, ActionPopVlan, ActionGroup,
                            ActionDecNwTtl, ActionSetField>;
using ActionList = absl::InlinedVector<Action, 4>;

// Instructions (7.2.4)
struct InstrGotoTable {      // OFPIT_GOTO_TABLE = 1
  uint8_t table_id = 0;
  bool operator==(const InstrGotoTable&) const = default;
};
struct InstrWriteActions {   // OFPIT_WRITE_ACTIONS = 3
  ActionList actions;
  bool operator==(const InstrWriteActions&) const = default;
};
struct InstrApplyActions {   // OFPIT_APPLY_ACTIONS = 4
  ActionList actions;
  bool operator==(const InstrApplyActions&) const = default;
};
struct InstrClearActions {   // OFPIT_CLEAR_ACTIONS = 5
  bool operator==(const InstrClearActions&) const = default;
};
struct InstrMeter {          // OFPIT_METER = 6
  uint32_t meter_id = 0;
  bool operator==(const InstrMeter&) const = default;
};
using Instruction = std::variant<InstrGotoTable, InstrWriteActions, InstrApplyActions,
                                 InstrClearActions, InstrMeter>;
using InstructionList = absl::InlinedVector<Instruction, 2>;

// ofp_port (7.2.1); name is at most 15 chars + NUL on the wire.
struct Port {
  uint32_t port_no = 0;
  uint64_t hw_addr = 0;  // 48-bit
  std::string name;
  uint32_t config = 0;
  uint32_t state = 0;
  uint32_t curr = 0;
  uint32_t advertised = 0;
  uint32_t supported = 0;
  uint32_t peer = 0;
  uint32_t curr_speed = 0;
  uint32_t max_speed = 0;
  bool operator==(const Port&) const = default;
};
inline constexpr uint32_t kPortConfigPortDown = 1 << 0;  // OFPPC_PORT_DOWN
inline constexpr uint32_t kPortStateLinkDown = 1 << 0;   // OFPPS_LINK_DOWN

// Group bucket (7.3.4.2)
struct Bucket {
  uint16_t weight = 0;
  uint32_t watch_port = port::kAny;
  uint32_t watch_group = kGroupAny;
  ActionList actions;
  bool operator==(const Bucket&) const = default;
};

// Meter band (7.3.4.5); type 1 = DROP, 2 = DSCP_REMARK.
struct MeterBand {
  uint16_t type = 1;
  uint32_t rate = 0;
  uint32_t burst_size = 0;
  uint8_t prec_level = 0;  // DSCP_REMARK only
  bool operator==(const MeterBand&) const = default;
};

}  // namespace sdn::ofp
