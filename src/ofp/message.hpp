// OpenFlow 1.3.5 messages as domain structs, and the codec API: pure functions over byte
// spans, no I/O. Every length is checked against the bytes present; bad input yields an
// Error (with the OFPT_ERROR type/code a switch-facing peer should answer), never UB.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/expected.hpp"
#include "ofp/types.hpp"

namespace sdn::ofp {

using Bytes = std::vector<uint8_t>;

// ---- codec errors ----------------------------------------------------------------------
enum class Errc : uint8_t {
  kTruncated,       // fewer bytes than a length field promised / than a fixed struct needs
  kBadLength,       // a length field is inconsistent (too small, not a multiple of 8, ...)
  kBadVersion,      // header version != 0x04 (HELLO excepted, see decode_header)
  kBadType,         // unknown or unsupported message type
  kBadMultipart,    // unknown or unsupported multipart type
  kBadMatch,        // malformed match / OXM
  kBadAction,       // malformed or unknown action
  kBadInstruction,  // malformed or unknown instruction
  kBadValue,        // a field value that is out of range (e.g. prerequisites, padding)
  kTooLong,         // encode: message would exceed 65535 bytes
};
const char* errc_name(Errc e);

// OFPT_ERROR types/codes (7.4.4) used by the codec and the runtime.
namespace err {
inline constexpr uint16_t kHelloFailed = 0;        // OFPET_HELLO_FAILED
inline constexpr uint16_t kHelloIncompatible = 0;  //   OFPHFC_INCOMPATIBLE
inline constexpr uint16_t kBadRequest = 1;         // OFPET_BAD_REQUEST
inline constexpr uint16_t kBrcBadVersion = 0;      //   OFPBRC_BAD_VERSION
inline constexpr uint16_t kBrcBadType = 1;         //   OFPBRC_BAD_TYPE
inline constexpr uint16_t kBrcBadMultipart = 2;    //   OFPBRC_BAD_MULTIPART
inline constexpr uint16_t kBrcBadLen = 6;          //   OFPBRC_BAD_LEN
inline constexpr uint16_t kBrcMultipartBufferOverflow = 13;
inline constexpr uint16_t kBadAction = 2;          // OFPET_BAD_ACTION
inline constexpr uint16_t kBacBadType = 0;         //   OFPBAC_BAD_TYPE
inline constexpr uint16_t kBacBadLen = 1;          //   OFPBAC_BAD_LEN
inline constexpr uint16_t kBadInstruction = 3;     // OFPET_BAD_INSTRUCTION
inline constexpr uint16_t kBicUnknownInst = 0;     //   OFPBIC_UNKNOWN_INST
inline constexpr uint16_t kBicBadLen = 7;          //   OFPBIC_BAD_LEN (was 6 = OFPBIC_BAD_EXP_TYPE: fixed)
inline constexpr uint16_t kBadMatch = 4;           // OFPET_BAD_MATCH
inline constexpr uint16_t kBmcBadLen = 1;          //   OFPBMC_BAD_LEN
inline constexpr uint16_t kBmcBadField = 6;        //   OFPBMC_BAD_FIELD
inline constexpr uint16_t kFlowModFailed = 5;      // OFPET_FLOW_MOD_FAILED
// Added with the codec (same spec table, 7.4.4):
inline constexpr uint16_t kBrcBadExperimenter = 3; //   OFPBRC_BAD_EXPERIMENTER
inline constexpr uint16_t kBacBadSetType = 13;     //   OFPBAC_BAD_SET_TYPE
inline constexpr uint16_t kBacBadSetLen = 14;      //   OFPBAC_BAD_SET_LEN
inline constexpr uint16_t kBacBadSetArgument = 15; //   OFPBAC_BAD_SET_ARGUMENT
inline constexpr uint16_t kBmcBadType = 0;         //   OFPBMC_BAD_TYPE
inline constexpr uint16_t kBmcBadMask = 8;         //   OFPBMC_BAD_MASK
inline constexpr uint16_t kBmcDupField = 10;       //   OFPBMC_DUP_FIELD
inline constexpr uint16_t kFmfcBadCommand = 6;     //   OFPFMFC_BAD_COMMAND
inline constexpr uint16_t kGroupModFailed = 6;     // OFPET_GROUP_MOD_FAILED
inline constexpr uint16_t kMeterModFailed = 12;    // OFPET_METER_MOD_FAILED
inline constexpr uint16_t kMmfcBadBand = 8;        //   OFPMMFC_BAD_BAND
// Roles (6.3.6, 7.4.4): a write from a slave, and a refused ROLE_REQUEST.
inline constexpr uint16_t kBrcIsSlave = 10;        //   OFPBRC_IS_SLAVE
inline constexpr uint16_t kRoleRequestFailed = 11; // OFPET_ROLE_REQUEST_FAILED
inline constexpr uint16_t kRrfcStale = 0;          //   OFPRRFC_STALE (generation_id older than the switch's)
inline constexpr uint16_t kRrfcUnsup = 1;          //   OFPRRFC_UNSUP
inline constexpr uint16_t kRrfcBadRole = 2;        //   OFPRRFC_BAD_ROLE
}  // namespace err

struct Error {
  Errc code{};
  uint16_t ofp_type = err::kBadRequest;  // what OFPT_ERROR to answer with
  uint16_t ofp_code = err::kBrcBadLen;
  const char* detail = "";               // static string: which rule failed
};

template <class T>
using Result = Expected<T, Error>;

// ---- messages -------------------------------------------------------------------------
struct Header {
  uint8_t version = kVersion;
  Type type{};
  uint16_t length = 0;
  uint32_t xid = 0;
  bool operator==(const Header&) const = default;
};

struct Hello {                 // 7.5.1; bitmap of supported versions (bit n = version n)
  uint32_t version_bitmap = 1u << kVersion;  // 0 = no HELLO_ELEM_VERSIONBITMAP on the wire
  bool operator==(const Hello&) const = default;
};
struct ErrorMsg {              // 7.4.4
  uint16_t type = 0;
  uint16_t code = 0;
  Bytes data;                  // at least 64 bytes of the offending message, by convention
  bool operator==(const ErrorMsg&) const = default;
};
struct EchoRequest { Bytes data; bool operator==(const EchoRequest&) const = default; };
struct EchoReply { Bytes data; bool operator==(const EchoReply&) const = default; };
struct FeaturesRequest { bool operator==(const FeaturesRequest&) const = default; };
struct FeaturesReply {         // 7.3.1
  uint64_t datapath_id = 0;
  uint32_t n_buffers = 0;
  uint8_t n_tables = 0;
  uint8_t auxiliary_id = 0;
  uint32_t capabilities = 0;
  bool operator==(const FeaturesReply&) const = default;
};
struct GetConfigRequest { bool operator==(const GetConfigRequest&) const = default; };
struct SwitchConfig {          // 7.3.2: GET_CONFIG_REPLY and SET_CONFIG share the body
  uint16_t flags = 0;
  uint16_t miss_send_len = kControllerMaxLenNoBuffer;
  bool operator==(const SwitchConfig&) const = default;
};
struct GetConfigReply { SwitchConfig config; bool operator==(const GetConfigReply&) const = default; };
struct SetConfig { SwitchConfig config; bool operator==(const SetConfig&) const = default; };

// PACKET_IN (7.4.1). On decode, `data` views the input buffer: copy it if you keep it.
struct PacketIn {
  uint32_t buffer_id = kNoBuffer;
  uint16_t total_len = 0;
  uint8_t reason = 0;          // 0 NO_MATCH, 1 ACTION, 2 INVALID_TTL
  uint8_t table_id = 0;
  uint64_t cookie = 0;
  Match match;
  std::span<const uint8_t> data;
  uint32_t in_port() const { return static_cast<uint32_t>(match.get(OxmField::kInPort).value_or(0)); }
  friend bool operator==(const PacketIn& a, const PacketIn& b);  // compares data bytes
};

struct FlowRemoved {           // 7.4.2
  uint64_t cookie = 0;
  uint16_t priority = 0;
  uint8_t reason = 0;          // 0 IDLE_TIMEOUT, 1 HARD_TIMEOUT, 2 DELETE, 3 GROUP_DELETE, 4 METER_DELETE
  uint8_t table_id = 0;
  uint32_t duration_sec = 0;
  uint32_t duration_nsec = 0;
  uint16_t idle_timeout = 0;
  uint16_t hard_timeout = 0;
  uint64_t packet_count = 0;
  uint64_t byte_count = 0;
  Match match;
  bool operator==(const FlowRemoved&) const = default;
};

struct PortStatus {            // 7.4.3; reason 0 ADD, 1 DELETE, 2 MODIFY
  uint8_t reason = 0;
  Port desc;
  bool operator==(const PortStatus&) const = default;
};

// PACKET_OUT (7.3.7). `data` is sent only when buffer_id == kNoBuffer; it is a view, the
// caller keeps the bytes alive until encode() returns.
struct PacketOut {
  uint32_t buffer_id = kNoBuffer;
  uint32_t in_port = port::kController;
  ActionList actions;
  std::span<const uint8_t> data;
  friend bool operator==(const PacketOut& a, const PacketOut& b);  // compares data bytes
};

enum class FlowModCommand : uint8_t {
  kAdd = 0,           // OFPFC_ADD
  kModify = 1,        // OFPFC_MODIFY
  kModifyStrict = 2,  // OFPFC_MODIFY_STRICT
  kDelete = 3,        // OFPFC_DELETE
  kDeleteStrict = 4,  // OFPFC_DELETE_STRICT
};
inline constexpr uint16_t kFlowFlagSendFlowRem = 1 << 0;  // OFPFF_SEND_FLOW_REM
inline constexpr uint16_t kFlowFlagCheckOverlap = 1 << 1; // OFPFF_CHECK_OVERLAP

struct FlowMod {               // 7.3.4.1
  uint64_t cookie = 0;
  uint64_t cookie_mask = 0;
  uint8_t table_id = 0;
  FlowModCommand command = FlowModCommand::kAdd;
  uint16_t idle_timeout = 0;
  uint16_t hard_timeout = 0;
  uint16_t priority = 0;
  uint32_t buffer_id = kNoBuffer;
  uint32_t out_port = port::kAny;
  uint32_t out_group = kGroupAny;
  uint16_t flags = 0;
  Match match;
  InstructionList instructions;
  bool operator==(const FlowMod&) const = default;
};

struct GroupMod {              // 7.3.4.2; command 0 ADD 1 MODIFY 2 DELETE; type 0 ALL 1 SELECT 2 INDIRECT 3 FF
  uint16_t command = 0;
  uint8_t type = 0;
  uint32_t group_id = 0;
  std::vector<Bucket> buckets;
  bool operator==(const GroupMod&) const = default;
};

struct MeterMod {              // 7.3.4.4; command 0 ADD 1 MODIFY 2 DELETE; flags KBPS=1 PKTPS=2 BURST=4 STATS=8
  uint16_t command = 0;
  uint16_t flags = 0;
  uint32_t meter_id = 0;
  std::vector<MeterBand> bands;
  bool operator==(const MeterMod&) const = default;
};

struct BarrierRequest { bool operator==(const BarrierRequest&) const = default; };
struct BarrierReply { bool operator==(const BarrierReply&) const = default; };

// enum ofp_controller_role (7.3.9), the wire values of RoleMsg::role.
inline constexpr uint32_t kRoleNoChange = 0;  // OFPCR_ROLE_NOCHANGE
inline constexpr uint32_t kRoleEqual = 1;     // OFPCR_ROLE_EQUAL
inline constexpr uint32_t kRoleMaster = 2;    // OFPCR_ROLE_MASTER
inline constexpr uint32_t kRoleSlave = 3;     // OFPCR_ROLE_SLAVE
// What Open vSwitch sends an OpenFlow 1.3 controller whose role another controller's request
// changed: the 1.4 OFPT_ROLE_STATUS (7.4.4 of 1.4) as an ONF experimenter message (ONF EXT-191),
// 32 bytes: header, experimenter, exp_type, role (4), reason (1), pad (3), generation_id (8).
inline constexpr uint32_t kOnfExperimenterId = 0x4f4e4600;  // "ONF\0"
inline constexpr uint32_t kOnfRoleStatus = 1911;            // ONFT_ROLE_STATUS
inline constexpr size_t kOnfRoleStatusLen = 32;

struct RoleMsg {               // 7.3.9; role 0 NOCHANGE 1 EQUAL 2 MASTER 3 SLAVE
  uint32_t role = 0;
  uint64_t generation_id = 0;
  bool operator==(const RoleMsg&) const = default;
};
struct RoleRequest { RoleMsg role; bool operator==(const RoleRequest&) const = default; };
struct RoleReply { RoleMsg role; bool operator==(const RoleReply&) const = default; };

// ---- multipart (7.3.5) ----
enum class MultipartType : uint16_t {
  kDesc = 0,          // OFPMP_DESC
  kFlow = 1,          // OFPMP_FLOW
  kAggregate = 2,     // OFPMP_AGGREGATE
  kTable = 3,         // OFPMP_TABLE
  kPortStats = 4,     // OFPMP_PORT_STATS
  kGroupDesc = 7,     // OFPMP_GROUP_DESC
  kMeter = 9,         // OFPMP_METER (meter statistics)
  kMeterFeatures = 11, // OFPMP_METER_FEATURES
  kPortDesc = 13,     // OFPMP_PORT_DESC
};
inline constexpr uint16_t kMultipartMore = 1;  // OFPMPF_REQ_MORE / OFPMPF_REPLY_MORE

struct FlowStatsRequest {      // body of OFPMP_FLOW and OFPMP_AGGREGATE requests
  uint8_t table_id = kTableAll;
  uint32_t out_port = port::kAny;
  uint32_t out_group = kGroupAny;
  uint64_t cookie = 0;
  uint64_t cookie_mask = 0;
  Match match;
  bool operator==(const FlowStatsRequest&) const = default;
};
struct PortStatsRequest { uint32_t port_no = port::kAny; bool operator==(const PortStatsRequest&) const = default; };
struct MeterStatsRequest { uint32_t meter_id = kMeterAll; bool operator==(const MeterStatsRequest&) const = default; };

struct Desc {
  std::string mfr_desc, hw_desc, sw_desc, serial_num, dp_desc;  // 256/256/256/32/256 on the wire
  bool operator==(const Desc&) const = default;
};
struct FlowStats {
  uint8_t table_id = 0;
  uint32_t duration_sec = 0;
  uint32_t duration_nsec = 0;
  uint16_t priority = 0;
  uint16_t idle_timeout = 0;
  uint16_t hard_timeout = 0;
  uint16_t flags = 0;
  uint64_t cookie = 0;
  uint64_t packet_count = 0;
  uint64_t byte_count = 0;
  Match match;
  InstructionList instructions;
  bool operator==(const FlowStats&) const = default;
};
struct AggregateStats { uint64_t packet_count = 0, byte_count = 0; uint32_t flow_count = 0; bool operator==(const AggregateStats&) const = default; };
struct TableStats { uint8_t table_id = 0; uint32_t active_count = 0; uint64_t lookup_count = 0, matched_count = 0; bool operator==(const TableStats&) const = default; };
struct PortStats {
  uint32_t port_no = 0;
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t rx_dropped = 0, tx_dropped = 0, rx_errors = 0, tx_errors = 0;
  uint64_t rx_frame_err = 0, rx_over_err = 0, rx_crc_err = 0, collisions = 0;
  uint32_t duration_sec = 0, duration_nsec = 0;
  bool operator==(const PortStats&) const = default;
};
struct GroupDesc { uint8_t type = 0; uint32_t group_id = 0; std::vector<Bucket> buckets; bool operator==(const GroupDesc&) const = default; };
struct MeterBandStats { uint64_t packet_band_count = 0, byte_band_count = 0; bool operator==(const MeterBandStats&) const = default; };
struct MeterStats {
  uint32_t meter_id = 0;
  uint32_t flow_count = 0;
  uint64_t packet_in_count = 0, byte_in_count = 0;
  uint32_t duration_sec = 0, duration_nsec = 0;
  std::vector<MeterBandStats> bands;
  bool operator==(const MeterStats&) const = default;
};

// OFPMP_METER_FEATURES reply body (7.3.5.11): band_types is a bitmap of 1 << OFPMBT_*,
// capabilities a bitmap of OFPMF_* (KBPS=1 PKTPS=2 BURST=4 STATS=8).
struct MeterFeatures {
  uint32_t max_meter = 0;
  uint32_t band_types = 0;
  uint32_t capabilities = 0;
  uint8_t max_bands = 0;
  uint8_t max_color = 0;
  bool operator==(const MeterFeatures&) const = default;
};

struct MultipartRequest {
  uint16_t flags = 0;
  // kDesc, kTable, kPortDesc, kGroupDesc, kMeterFeatures carry no body (std::monostate + `type`).
  MultipartType type = MultipartType::kDesc;
  std::variant<std::monostate, FlowStatsRequest, PortStatsRequest, MeterStatsRequest> body;
  bool operator==(const MultipartRequest&) const = default;
};
struct MultipartReply {
  uint16_t flags = 0;
  MultipartType type = MultipartType::kDesc;
  std::variant<Desc, std::vector<FlowStats>, AggregateStats, std::vector<TableStats>,
               std::vector<PortStats>, std::vector<GroupDesc>, std::vector<MeterStats>,
               std::vector<Port>, MeterFeatures>
      body;
  bool operator==(const MultipartReply&) const = default;
};

using Body = std::variant<Hello, ErrorMsg, EchoRequest, EchoReply, FeaturesRequest, FeaturesReply,
                          GetConfigRequest, GetConfigReply, SetConfig, PacketIn, FlowRemoved,
                          PortStatus, PacketOut, FlowMod, GroupMod, MeterMod, BarrierRequest,
                          BarrierReply, RoleRequest, RoleReply, MultipartRequest, MultipartReply>;

struct Message {
  uint32_t xid = 0;
  Body body;
  bool operator==(const Message&) const = default;
};

// ---- codec API ----

// Reads the 8-byte header. Fails (kTruncated) with fewer than 8 bytes, (kBadLength) when
// length < 8. Does NOT check the version: the caller decides (a HELLO of another version
// must get HELLO_FAILED, anything else BAD_VERSION). Does not require the whole message.
Result<Header> decode_header(std::span<const uint8_t> bytes);

// Decodes exactly one whole message; bytes.size() must equal the header's length.
// Views in the result (PacketIn::data, PacketOut::data) point into `bytes`.
Result<Message> decode(std::span<const uint8_t> bytes);

// Appends the encoded message to `out`. Fails (kTooLong) if it would exceed 65535 bytes,
// in which case `out` is left as it was.
Result<void> encode(const Message& msg, Bytes& out);
inline Result<void> encode(uint32_t xid, Body body, Bytes& out) {
  return encode(Message{xid, std::move(body)}, out);
}

// The wire type of a body alternative.
Type type_of(const Body& body);
const char* type_name(Type t);

// Builds the OFPT_ERROR reply for a failed decode of `offending` (first 64 bytes echoed).
ErrorMsg error_reply(const Error& e, std::span<const uint8_t> offending);

}  // namespace sdn::ofp
