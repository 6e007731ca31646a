// LLDP (IEEE 802.1AB-2016 clause 8): the mandatory Chassis ID, Port ID and TTL TLVs, the
// optional System Name, and the End TLV. Also the probe convention topology discovery
// uses: chassis ID "dpid:<16 hex digits>" (locally assigned), port ID = 4-byte port number
// (port component), as Ryu's switches.py does, so mixed controllers read each other's probes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pkt/addr.hpp"
#include "pkt/bytes.hpp"
#include "pkt/error.hpp"

namespace sdn::pkt {

// Nearest-bridge group address (802.1AB 7.1): never forwarded by 802.1D bridges.
inline constexpr Mac kLldpMulticast{0x0180'c200'000eULL};

namespace lldptlv {  // TLV type values (802.1AB 8.4.1)
inline constexpr uint8_t kEnd = 0;
inline constexpr uint8_t kChassisId = 1;
inline constexpr uint8_t kPortId = 2;
inline constexpr uint8_t kTtl = 3;
inline constexpr uint8_t kPortDescription = 4;
inline constexpr uint8_t kSystemName = 5;
}  // namespace lldptlv

inline constexpr uint8_t kChassisIdSubtypeMac = 4;             // 8.5.2.2
inline constexpr uint8_t kChassisIdSubtypeLocal = 7;           // locally assigned
inline constexpr uint8_t kPortIdSubtypePortComponent = 2;      // 8.5.3.2
inline constexpr uint8_t kPortIdSubtypeLocal = 7;

struct Lldp {
  uint8_t chassis_id_subtype = 0;
  ByteView chassis_id{};   // 1..255 bytes, a view into the frame
  uint8_t port_id_subtype = 0;
  ByteView port_id{};      // 1..255 bytes
  uint16_t ttl = 0;      // seconds
  std::optional<ByteView> system_name{};  // first System Name TLV, if any
};

// Rules (8.2, 8.5): TLV header or value past the end -> kTruncated; first three TLVs not
// Chassis ID, Port ID, TTL in that order -> kBadValue; Chassis/Port ID length outside
// 2..256, TTL length != 2, End length != 0 -> kBadLength; no End TLV -> kTruncated.
// Unknown and organizationally specific TLVs are skipped. Bytes after End are ignored.
Result<Lldp> parse_lldp(ByteView payload);

// The bytes of a TLV value as text (no validation: chassis/port IDs are octet strings).
inline std::string_view as_text(ByteView b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};  // char may alias any byte
}

// Topology probe identity carried in chassis ID / port ID.
struct LldpProbe {
  uint64_t dpid = 0;
  uint32_t port_no = 0;
  bool operator==(const LldpProbe&) const = default;
};
// "dpid:000000000000000a"
std::string dpid_chassis_id(uint64_t dpid);
// Reads a probe back: chassis subtype 7 "dpid:<1..16 hex>", port subtype 2 with a 4-byte
// big-endian number (or subtype 7 with a decimal number). nullopt for anything else.
std::optional<LldpProbe> decode_probe(const Lldp& lldp);

}  // namespace sdn::pkt
