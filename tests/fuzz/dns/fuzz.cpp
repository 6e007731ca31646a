// libFuzzer target for the DNS codec: parse_dns_query on raw bytes and, when it parses, the
// response built for it. Aborts only on broken invariants: a parsed name that the rules
// forbid, or a response whose header, question or answers do not read back as built.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "pkt/dns.hpp"

namespace {

using namespace sdn::pkt;

void require(bool ok) {
  if (!ok) std::abort();
}

// The dotted name obeys what the parser promised: lower case, printable, no '.' at either
// end nor two in a row, labels 1..63, at most 253 characters.
void check_name(std::string_view name) {
  require(name.size() <= kDnsMaxNameLen - 2);
  size_t label = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    require(c >= 0x21 && c <= 0x7e && !(c >= 'A' && c <= 'Z'));
    if (c == '.') {
      require(label > 0);
      label = 0;
    } else {
      require(++label <= kDnsMaxLabelLen);
    }
  }
  require(name.empty() || label > 0);
}

void check_response(const DnsQuery& q, uint8_t rcode, const std::vector<Ipv4Addr>& answers, uint32_t ttl) {
  const Bytes r = build_dns_response(q, rcode, answers, ttl);
  require(r.size() >= kDnsHeaderLen && r.size() <= kDnsMaxUdpMessage);
  const uint16_t flags = load_be16(r, 2);
  require(load_be16(r, 0) == q.id);
  require((flags & dnsflag::kQr) && (flags & dnsflag::kAa) && !(flags & dnsflag::kRa));
  require((flags & dnsflag::kOpcodeMask) == 0 && (flags & 0x0070) == 0);
  require(((flags & dnsflag::kRd) != 0) == q.recursion_desired());
  require((flags & dnsflag::kRcodeMask) == rcode);
  const uint16_t ancount = load_be16(r, 6);
  require(load_be16(r, 4) == 1 && load_be16(r, 8) == 0 && load_be16(r, 10) == 0);
  require(ancount <= answers.size() && ((flags & dnsflag::kTc) != 0) == (ancount < answers.size()));

  // A response is never taken for a query.
  auto self = parse_dns_query(r);
  require(!self && self.error().code == Errc::kBadValue);

  // Turned back into a query (QR, AA off; no answers), the question parses to q again.
  const size_t question_end = r.size() - 16 * size_t{ancount};
  Bytes back(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(question_end));
  back[2] &= 0x7b;  // clear QR and AA
  back[6] = back[7] = 0;
  auto q2 = parse_dns_query(back);
  require(q2.has_value());
  require(q2->id == q.id && q2->name == q.name && q2->qtype == q.qtype && q2->qclass == q.qclass);
  require(q2->recursion_desired() == q.recursion_desired());

  // The answers: pointer to the question, A, IN, ttl, 4-byte address, in order.
  Reader rd(ByteView(r).subspan(question_end));
  for (uint16_t i = 0; i < ancount; ++i) {
    uint16_t ptr = 0, type = 0, klass = 0, rdlength = 0;
    uint32_t t = 0, addr = 0;
    require(rd.pull_be16(ptr) && rd.pull_be16(type) && rd.pull_be16(klass) && rd.pull_be32(t) &&
            rd.pull_be16(rdlength) && rd.pull_be32(addr));
    require(ptr == 0xc00c && type == dnstype::kA && klass == kDnsClassIn && t == ttl && rdlength == 4);
    require(addr == answers[i].value);
  }
  require(rd.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteView in(data, size);
  auto q = parse_dns_query(in);
  if (!q) {
    require(q.error().layer == Layer::kDns && *q.error().detail != '\0');
    (void)to_string(q.error());
    return 0;
  }
  check_name(q->name);

  // Answers and rcode drawn from the input, up to enough addresses to pass 512 bytes.
  const uint8_t seed = size ? data[size - 1] : 0;
  const uint8_t rcode = seed & 0x0f;
  std::vector<Ipv4Addr> answers(seed >> 3);
  for (size_t i = 0; i < answers.size(); ++i) answers[i] = Ipv4Addr{0x0a000000U + static_cast<uint32_t>(i)};
  check_response(*q, rcode, {}, 0);
  check_response(*q, rcode, answers, 0x01020304U * seed);
  return 0;
}
