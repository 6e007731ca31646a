// LLDPDU parsing and the dpid/port probe convention.
#include "pkt/lldp.hpp"

#include <array>
#include <cstdio>

namespace sdn::pkt {

namespace {

struct Tlv {
  uint8_t type = 0;
  ByteView value;
};

// TLV header: 7-bit type, 9-bit length (802.1AB 8.4.1).
bool pull_tlv(Reader& r, Tlv& tlv, Error& err) {
  uint16_t hdr = 0;
  if (!r.pull_be16(hdr)) {
    err = Error{Errc::kTruncated, Layer::kLldp, r.empty() ? "missing End TLV" : "TLV header cut short"};
    return false;
  }
  tlv.type = static_cast<uint8_t>(hdr >> 9);
  if (!r.pull_bytes(hdr & 0x01ff, tlv.value)) {
    err = Error{Errc::kTruncated, Layer::kLldp, "TLV length past the end"};
    return false;
  }
  return true;
}

}  // namespace

Result<Lldp> parse_lldp(ByteView payload) {
  Reader r(payload);
  Lldp out;
  Tlv tlv;
  Error err;

  if (!pull_tlv(r, tlv, err)) return Unexpected<Error>{err};
  if (tlv.type != lldptlv::kChassisId) return fail(Layer::kLldp, Errc::kBadValue, "first TLV is not Chassis ID");
  if (tlv.value.size() < 2 || tlv.value.size() > 256)
    return fail(Layer::kLldp, Errc::kBadLength, "Chassis ID length outside 2..256");
  out.chassis_id_subtype = tlv.value[0];
  out.chassis_id = tlv.value.subspan(1);

  if (!pull_tlv(r, tlv, err)) return Unexpected<Error>{err};
  if (tlv.type != lldptlv::kPortId) return fail(Layer::kLldp, Errc::kBadValue, "second TLV is not Port ID");
  if (tlv.value.size() < 2 || tlv.value.size() > 256)
    return fail(Layer::kLldp, Errc::kBadLength, "Port ID length outside 2..256");
  out.port_id_subtype = tlv.value[0];
  out.port_id = tlv.value.subspan(1);

  if (!pull_tlv(r, tlv, err)) return Unexpected<Error>{err};
  if (tlv.type != lldptlv::kTtl) return fail(Layer::kLldp, Errc::kBadValue, "third TLV is not TTL");
  if (tlv.value.size() != 2) return fail(Layer::kLldp, Errc::kBadLength, "TTL length != 2");
  out.ttl = load_be16(tlv.value, 0);

  for (;;) {
    if (!pull_tlv(r, tlv, err)) return Unexpected<Error>{err};
    if (tlv.type == lldptlv::kEnd) {
      if (!tlv.value.empty()) return fail(Layer::kLldp, Errc::kBadLength, "End TLV length != 0");
      return out;
    }
    if (tlv.type == lldptlv::kSystemName && !out.system_name) out.system_name = tlv.value;
  }
}

std::string dpid_chassis_id(uint64_t dpid) {
  std::array<char, 32> buf{};
  int n = std::snprintf(buf.data(), buf.size(), "dpid:%016llx", static_cast<unsigned long long>(dpid));
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::optional<LldpProbe> decode_probe(const Lldp& l) {
  if (l.chassis_id_subtype != kChassisIdSubtypeLocal) return std::nullopt;
  std::string_view c = as_text(l.chassis_id);
  constexpr std::string_view kPrefix = "dpid:";
  if (c.size() <= kPrefix.size() || c.size() > kPrefix.size() + 16 || c.substr(0, kPrefix.size()) != kPrefix)
    return std::nullopt;
  LldpProbe p;
  for (char ch : c.substr(kPrefix.size())) {
    int d = (ch >= '0' && ch <= '9') ? ch - '0'
            : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
            : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                       : -1;
    if (d < 0) return std::nullopt;
    p.dpid = (p.dpid << 4) | static_cast<uint64_t>(d);
  }
  if (l.port_id_subtype == kPortIdSubtypePortComponent && l.port_id.size() == 4) {
    p.port_no = load_be32(l.port_id, 0);
    return p;
  }
  if (l.port_id_subtype == kPortIdSubtypeLocal && l.port_id.size() <= 10) {
    uint64_t v = 0;
    for (char ch : as_text(l.port_id)) {
      if (ch < '0' || ch > '9') return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(ch - '0');
    }
    if (v > 0xffff'ffffULL) return std::nullopt;
    p.port_no = static_cast<uint32_t>(v);
    return p;
  }
  return std::nullopt;
}

}  // namespace sdn::pkt
