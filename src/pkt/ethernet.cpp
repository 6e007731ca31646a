// Ethernet II / 802.1Q parsing.
#include "pkt/ethernet.hpp"

namespace sdn::pkt {

Result<Ethernet> parse_ethernet(ByteView frame) {
  if (frame.size() < kEthHeaderLen) return fail(Layer::kEthernet, Errc::kTruncated, "frame shorter than 14 bytes");
  Ethernet eth;
  eth.dst = load_mac(frame, 0);
  eth.src = load_mac(frame, 6);
  size_t off = 12;  // the type field, or the first tag's TPID
  uint16_t type = load_be16(frame, off);
  while (is_vlan_tpid(type)) {
    if (eth.vlan_count == kMaxVlanTags) return fail(Layer::kVlan, Errc::kUnsupported, "more than two VLAN tags");
    // A tag is TPID(2) TCI(2), then the next type field (2): 802.1Q 9.6.
    if (frame.size() < off + kVlanTagLen + 2) return fail(Layer::kVlan, Errc::kTruncated, "VLAN tag cut short");
    uint16_t tci = load_be16(frame, off + 2);
    VlanTag& tag = eth.vlans[eth.vlan_count++];
    tag.tpid = type;
    tag.pcp = static_cast<uint8_t>(tci >> 13);
    tag.dei = ((tci >> 12) & 1) != 0;
    tag.vid = tci & 0x0fff;
    off += kVlanTagLen;
    type = load_be16(frame, off);
  }
  eth.ethertype = type;
  eth.payload = frame.subspan(off + 2);
  return eth;
}

}  // namespace sdn::pkt
