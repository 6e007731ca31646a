// Ethernet II framing with up to two 802.1Q / 802.1ad tags (IEEE 802.3 3.1, 802.1Q 9.6).
// Frames are given without preamble or FCS, as OpenFlow PacketIn carries them.
#pragma once

#include <array>
#include <cstdint>

#include "pkt/addr.hpp"
#include "pkt/bytes.hpp"
#include "pkt/error.hpp"

namespace sdn::pkt {

namespace ethertype {
inline constexpr uint16_t kIpv4 = 0x0800;
inline constexpr uint16_t kArp = 0x0806;
inline constexpr uint16_t kVlan = 0x8100;   // C-tag, 802.1Q
inline constexpr uint16_t kQinQ = 0x88a8;   // S-tag, 802.1ad
inline constexpr uint16_t kVlan9100 = 0x9100;  // legacy pre-802.1ad S-tag
inline constexpr uint16_t kIpv6 = 0x86dd;
inline constexpr uint16_t kLldp = 0x88cc;
inline constexpr uint16_t kMinEthernetII = 0x0600;  // below: an 802.3 length field
}  // namespace ethertype

inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kVlanTagLen = 4;
inline constexpr size_t kMaxVlanTags = 2;
inline constexpr size_t kEthMinFrameLen = 60;  // 64-byte minimum minus the 4-byte FCS

constexpr bool is_vlan_tpid(uint16_t t) {
  return t == ethertype::kVlan || t == ethertype::kQinQ || t == ethertype::kVlan9100;
}

// One 802.1Q tag (TPID + TCI).
struct VlanTag {
  uint16_t tpid = ethertype::kVlan;
  uint8_t pcp = 0;    // 3 bits
  bool dei = false;   // 1 bit
  uint16_t vid = 0;   // 12 bits
  bool operator==(const VlanTag&) const = default;
};

struct Ethernet {
  Mac dst{};
  Mac src{};
  std::array<VlanTag, kMaxVlanTags> vlans{};  // outer first
  uint8_t vlan_count = 0;
  uint16_t ethertype = 0;  // after the tags; < 0x0600 is an 802.3 length (LLC frame)
  ByteView payload{};        // everything after the header and tags (may include padding)

  bool is_ethernet_ii() const { return ethertype >= ethertype::kMinEthernetII; }
  const VlanTag* outer_vlan() const { return vlan_count > 0 ? &vlans[0] : nullptr; }
  size_t header_len() const { return kEthHeaderLen + kVlanTagLen * vlan_count; }
};

// Fails with kTruncated for fewer than 14 bytes or a cut tag, kUnsupported for a third tag.
Result<Ethernet> parse_ethernet(ByteView frame);

}  // namespace sdn::pkt
