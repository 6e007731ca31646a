// DNS messages (RFC 1035 4.1) for the controller's in-band responder: a strict parser for
// single-question standard queries and a builder for authoritative A-record answers.
// The UDP payload only; the caller frames it with build_udp().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "pkt/addr.hpp"
#include "pkt/bytes.hpp"
#include "pkt/error.hpp"

namespace sdn::pkt {

inline constexpr uint16_t kDnsPort = 53;
inline constexpr size_t kDnsHeaderLen = 12;        // 4.1.1
inline constexpr size_t kDnsMaxLabelLen = 63;      // 2.3.4
inline constexpr size_t kDnsMaxNameLen = 255;      // 2.3.4, on the wire (length bytes and root)
inline constexpr size_t kDnsMaxUdpMessage = 512;   // 2.3.4 / 4.2.1, without EDNS (RFC 6891)

namespace dnstype {  // 3.2.2, RFC 3596 (AAAA)
inline constexpr uint16_t kA = 1, kNs = 2, kCname = 5, kSoa = 6, kPtr = 12, kMx = 15, kTxt = 16, kAaaa = 28,
                          kAny = 255;
}  // namespace dnstype

namespace dnsrcode {  // 4.1.1 RCODE
inline constexpr uint8_t kNoError = 0, kFormErr = 1, kServFail = 2, kNxDomain = 3, kNotImp = 4, kRefused = 5;
}  // namespace dnsrcode

namespace dnsflag {  // bits of the header's second 16-bit word (4.1.1)
inline constexpr uint16_t kQr = 0x8000;          // response
inline constexpr uint16_t kOpcodeMask = 0x7800;  // 4 bits, 0 = QUERY
inline constexpr uint16_t kAa = 0x0400;          // authoritative answer
inline constexpr uint16_t kTc = 0x0200;          // truncated
inline constexpr uint16_t kRd = 0x0100;          // recursion desired
inline constexpr uint16_t kRa = 0x0080;          // recursion available
inline constexpr uint16_t kRcodeMask = 0x000f;
}  // namespace dnsflag

inline constexpr uint16_t kDnsClassIn = 1;  // 3.2.4

struct DnsQuery {
  uint16_t id = 0;
  uint16_t flags = 0;  // the header's second 16 bits as on the wire
  bool recursion_desired() const { return (flags & dnsflag::kRd) != 0; }
  std::string name;     // QNAME, lower-cased, dotted, no trailing dot ("" for the root)
  uint16_t qtype = 0;
  uint16_t qclass = 0;  // 1 = IN
};

// Parses a query (QR = 0) with QDCOUNT == 1 and OPCODE 0 (QUERY). Answer/authority sections
// must be empty; an additional section (EDNS OPT) is allowed and ignored, as are any bytes
// after the question. Errors are Layer::kDns, one detail string per rule:
//   fewer than 12 bytes -> kTruncated; QR = 1 -> kBadValue; OPCODE != 0 -> kUnsupported;
//   QDCOUNT != 1 -> kUnsupported; ANCOUNT != 0, NSCOUNT != 0 -> kBadValue;
//   compression pointer in QNAME -> kUnsupported (nothing precedes the question it could
//   usefully point at); label length byte 0x40..0xbf (> 63, or the reserved label types)
//   -> kBadLength; QNAME over 255 bytes on the wire -> kBadLength; QNAME or QTYPE/QCLASS
//   cut short -> kTruncated; a label byte outside 0x21..0x7e -> kBadValue; a '.' inside a
//   label -> kBadValue (it would make the dotted name ambiguous: "a.b" as one label).
// Allocates the name (at most 253 characters).
Result<DnsQuery> parse_dns_query(ByteView message);

// A response to `q`: same id, QR=1, AA=1, RD copied, RA=0, rcode; the question echoed; one A
// record per address (name as a compression pointer to offset 12, class IN, ttl). No other
// sections. The question is re-encoded from q.name, so it comes back lower-cased.
// A records that would take the message past 512 bytes are left out and TC is set (4.2.1);
// with a name from parse_dns_query at least 15 always fit.
// Preconditions (asserted; a DnsQuery from parse_dns_query meets them): rcode <= 15;
// q.name has no empty label, labels of at most 63 bytes, at most 255 bytes on the wire.
// In release builds a label past 63 bytes is cut and empty labels are skipped, so the
// output is always a well-formed message.
Bytes build_dns_response(const DnsQuery& q, uint8_t rcode, std::span<const Ipv4Addr> answers, uint32_t ttl);

}  // namespace sdn::pkt
