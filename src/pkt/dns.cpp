// DNS query parsing and A-record response building (RFC 1035 4.1).
#include "pkt/dns.hpp"

#include <cassert>
#include <string_view>

namespace sdn::pkt {

namespace {

// Header word offsets (4.1.1).
constexpr size_t kOffId = 0;
constexpr size_t kOffFlags = 2;
constexpr size_t kOffQdcount = 4;
constexpr size_t kOffAncount = 6;
constexpr size_t kOffNscount = 8;

constexpr uint16_t kPointerToQuestion = 0xc000 | kDnsHeaderLen;  // 4.1.4: name at offset 12
constexpr size_t kARecordLen = 2 + 2 + 2 + 4 + 2 + 4;            // pointer, type, class, ttl, rdlength, rdata

Unexpected<Error> dns_fail(Errc code, const char* detail) { return fail(Layer::kDns, code, detail); }

// QNAME (4.1.2, 3.1): labels up to the root label, appended to `name` dotted and lower-cased.
Result<void> pull_qname(Reader& r, std::string& name) {
  size_t wire_len = 0;
  for (;;) {
    uint8_t len = 0;
    if (!r.pull_u8(len)) return dns_fail(Errc::kTruncated, "QNAME cut short");
    if (len == 0) return {};
    // 4.1.4: top bits 11 = pointer; 01 and 10 are reserved label types (RFC 6891 5).
    if ((len & 0xc0) == 0xc0) return dns_fail(Errc::kUnsupported, "compression pointer in the question");
    if (len > kDnsMaxLabelLen) return dns_fail(Errc::kBadLength, "label longer than 63 bytes");
    wire_len += 1 + size_t{len};
    if (wire_len + 1 > kDnsMaxNameLen) return dns_fail(Errc::kBadLength, "QNAME longer than 255 bytes");
    ByteView label;
    if (!r.pull_bytes(len, label)) return dns_fail(Errc::kTruncated, "QNAME cut short");
    if (!name.empty()) name.push_back('.');
    for (uint8_t c : label) {
      // 2.3.1 preferred syntax is letters, digits and hyphen; we take any printable byte
      // but a space, and fold ASCII case (2.3.3, RFC 4343).
      if (c < 0x21 || c > 0x7e) return dns_fail(Errc::kBadValue, "label byte outside printable ASCII");
      if (c == '.') return dns_fail(Errc::kBadValue, "'.' inside a label");
      name.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
    }
  }
}

// Appends `name` as labels and the root label. See the header for what happens to bad input.
void put_qname(Writer& w, std::string_view name) {
  size_t wire_len = 1;  // the root label
  while (!name.empty()) {
    const size_t dot = name.find('.');
    std::string_view label = name.substr(0, dot);
    name = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
    assert(!label.empty() && label.size() <= kDnsMaxLabelLen);
    if (label.empty()) continue;
    if (label.size() > kDnsMaxLabelLen) label = label.substr(0, kDnsMaxLabelLen);
    assert(wire_len + 1 + label.size() <= kDnsMaxNameLen);
    if (wire_len + 1 + label.size() > kDnsMaxNameLen) break;
    wire_len += 1 + label.size();
    w.u8(static_cast<uint8_t>(label.size()));
    for (char c : label) w.u8(static_cast<uint8_t>(c));
  }
  w.u8(0);
}

}  // namespace

Result<DnsQuery> parse_dns_query(ByteView message) {
  // 4.1.1: one central check of the fixed header, then fields at fixed offsets.
  if (message.size() < kDnsHeaderLen) return dns_fail(Errc::kTruncated, "message shorter than the 12-byte header");
  DnsQuery q;
  q.id = load_be16(message, kOffId);
  q.flags = load_be16(message, kOffFlags);
  if (q.flags & dnsflag::kQr) return dns_fail(Errc::kBadValue, "QR = 1 (a response, not a query)");
  if (q.flags & dnsflag::kOpcodeMask) return dns_fail(Errc::kUnsupported, "OPCODE is not QUERY");
  // 4.1.2 allows several questions, but no server answers more than one (RFC 9619).
  if (load_be16(message, kOffQdcount) != 1) return dns_fail(Errc::kUnsupported, "QDCOUNT != 1");
  if (load_be16(message, kOffAncount) != 0) return dns_fail(Errc::kBadValue, "ANCOUNT != 0 in a query");
  if (load_be16(message, kOffNscount) != 0) return dns_fail(Errc::kBadValue, "NSCOUNT != 0 in a query");
  // ARCOUNT is not checked: the additional section (an EDNS OPT, RFC 6891) is not read.

  Reader r(message.subspan(kDnsHeaderLen));
  if (auto n = pull_qname(r, q.name); !n) return Unexpected<Error>{n.error()};
  if (!r.pull_be16(q.qtype) || !r.pull_be16(q.qclass)) return dns_fail(Errc::kTruncated, "QTYPE/QCLASS cut short");
  return q;
}

Bytes build_dns_response(const DnsQuery& q, uint8_t rcode, std::span<const Ipv4Addr> answers, uint32_t ttl) {
  assert(rcode <= dnsflag::kRcodeMask);
  Bytes out;
  out.reserve(kDnsMaxUdpMessage);
  Writer w(out);
  w.be16(q.id);
  const size_t flags_at = w.size();
  w.be16(0);  // flags, filled in once TC is known
  w.be16(1);  // QDCOUNT
  const size_t ancount_at = w.size();
  w.be16(0);  // ANCOUNT
  w.be16(0);  // NSCOUNT
  w.be16(0);  // ARCOUNT

  put_qname(w, q.name);
  w.be16(q.qtype);
  w.be16(q.qclass);

  // 4.1.3: each answer names the question through a pointer, type A, class IN, RDATA 4 bytes.
  uint16_t ancount = 0;
  bool truncated = false;
  for (Ipv4Addr a : answers) {
    if (w.size() + kARecordLen > kDnsMaxUdpMessage || ancount == UINT16_MAX) {
      truncated = true;
      break;
    }
    w.be16(kPointerToQuestion);
    w.be16(dnstype::kA);
    w.be16(kDnsClassIn);
    w.be32(ttl);
    w.be16(4);
    w.be32(a.value);
    ++ancount;
  }

  auto flags =
      static_cast<uint16_t>(dnsflag::kQr | dnsflag::kAa | (q.flags & dnsflag::kRd) | (rcode & dnsflag::kRcodeMask));
  if (truncated) flags = static_cast<uint16_t>(flags | dnsflag::kTc);
  w.put_be16_at(flags_at, flags);
  w.put_be16_at(ancount_at, ancount);
  return out;
}

}  // namespace sdn::pkt
