// Parse errors of the pkt layer. A frame that fails to parse is bad input, never a bug:
// callers count it and drop the frame (STYLE.md, "Bad input").
#pragma once

#include <cstdint>
#include <string>

#include "core/expected.hpp"

namespace sdn::pkt {

enum class Errc : uint8_t {
  kTruncated,    // fewer bytes than a fixed header or a length field needs
  kBadLength,    // a length field is inconsistent (IHL < 5, UDP length < 8, ...)
  kBadValue,     // a field holds a value the protocol forbids (IP version != 4, TLV order)
  kUnsupported,  // valid but outside what we parse (ARP for non-Ethernet/IPv4, 3 VLAN tags)
};

enum class Layer : uint8_t { kEthernet, kVlan, kArp, kIpv4, kTcp, kUdp, kIcmp, kLldp, kDns };

struct Error {
  Errc code{};
  Layer layer{};
  const char* detail = "";  // static string naming the rule that failed
};

template <class T>
using Result = Expected<T, Error>;

const char* errc_name(Errc e);
const char* layer_name(Layer l);
// "ipv4: truncated: total_length exceeds the frame"
std::string to_string(const Error& e);

inline Unexpected<Error> fail(Layer layer, Errc code, const char* detail) {
  return Unexpected<Error>{Error{code, layer, detail}};
}

}  // namespace sdn::pkt
