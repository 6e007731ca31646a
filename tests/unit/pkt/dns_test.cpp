// DNS codec: golden query/response bytes (hand-assembled from the RFC 1035 4.1 layout), one
// negative test per parser rule, a response round trip read back field by field, case folding.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pkt/dns.hpp"
#include "unit/pkt/hex.hpp"

namespace sdn::pkt {
namespace {

using test::from_hex;
using test::to_hex;

// h12.cpam.lan type A class IN, id 0x1a2b, RD set. Header (4.1.1): id | flags | QD AN NS AR.
// Question (4.1.2): 03 "h12" 04 "cpam" 03 "lan" 00 | QTYPE | QCLASS.
constexpr const char* kQueryHeader = "1a2b 0100 0001 0000 0000 0000";
constexpr const char* kQuestion = "03 683132 04 6370616d 03 6c616e 00 | 0001 0001";
// Answer 10.0.0.12, TTL 60: flags 8500 = QR | AA | RD, RCODE 0; AN 1.
// RR (4.1.3): c00c (pointer to offset 12) | TYPE A | CLASS IN | TTL | RDLENGTH 4 | RDATA.
constexpr const char* kResponse =
    "1a2b 8500 0001 0001 0000 0000 | 03 683132 04 6370616d 03 6c616e 00 | 0001 0001"
    " | c00c 0001 0001 0000003c 0004 0a00000c";
// The same name from dig: flags 0120 (RD, AD), AR 1 holding an EDNS OPT (RFC 6891 6.1.2):
// root name, TYPE 41, UDP size 1232, ext-rcode/flags 0, RDLENGTH 12, a COOKIE option.
constexpr const char* kEdnsQuery =
    "beef 0120 0001 0000 0000 0001 | 03 683132 04 6370616d 03 6c616e 00 | 0001 0001"
    " | 00 0029 04d0 00000000 000c 000a 0008 0123456789abcdef";

Bytes query_bytes() { return from_hex(std::string(kQueryHeader) + kQuestion); }

// A query for `question_hex` with the given header fields.
Bytes query_with(const std::string& question_hex, uint16_t flags = 0x0100, uint16_t qd = 1, uint16_t an = 0,
                 uint16_t ns = 0, uint16_t ar = 0) {
  Bytes m;
  Writer w(m);
  w.be16(0x1234);
  w.be16(flags);
  w.be16(qd);
  w.be16(an);
  w.be16(ns);
  w.be16(ar);
  w.bytes(from_hex(question_hex));
  return m;
}

// The wire form of one label of `n` copies of `c`.
std::string label_hex(size_t n, char c = 'a') {
  std::string s = to_hex(Bytes{static_cast<uint8_t>(n)});
  s += to_hex(Bytes(n, static_cast<uint8_t>(c)));
  return s;
}

// Parses a copy exactly `m` long (ASan catches any over-read) and expects the error.
::testing::AssertionResult fails_with(const Bytes& m, Errc code, const std::string& detail) {
  auto exact = std::make_unique<uint8_t[]>(m.empty() ? 1 : m.size());
  std::copy(m.begin(), m.end(), exact.get());
  auto q = parse_dns_query(ByteView(exact.get(), m.size()));
  if (q) return ::testing::AssertionFailure() << "parsed OK as " << q->name;
  if (q.error().layer != Layer::kDns || q.error().code != code || q.error().detail != detail)
    return ::testing::AssertionFailure() << "got " << to_string(q.error());
  return ::testing::AssertionSuccess() << to_string(q.error());
}

DnsQuery must_parse_dns(const Bytes& m) {
  auto q = parse_dns_query(m);
  EXPECT_TRUE(q.has_value()) << (q ? "" : to_string(q.error()));
  return q ? *q : DnsQuery{};
}

// ---- golden bytes both ways ----

TEST(Dns, GoldenQuery) {
  const DnsQuery q = must_parse_dns(query_bytes());
  EXPECT_EQ(q.id, 0x1a2b);
  EXPECT_EQ(q.flags, 0x0100);
  EXPECT_TRUE(q.recursion_desired());
  EXPECT_EQ(q.name, "h12.cpam.lan");
  EXPECT_EQ(q.qtype, dnstype::kA);
  EXPECT_EQ(q.qclass, kDnsClassIn);
}

TEST(Dns, GoldenResponse) {
  const DnsQuery q = must_parse_dns(query_bytes());
  const Ipv4Addr a[] = {ipv4(10, 0, 0, 12)};
  EXPECT_EQ(to_hex(build_dns_response(q, dnsrcode::kNoError, a, 60)), to_hex(from_hex(kResponse)));
}

TEST(Dns, GoldenNxDomain) {
  const DnsQuery q = must_parse_dns(query_bytes());
  // flags 8503: QR | AA | RD, RCODE 3; AN 0; the question only.
  const Bytes want = from_hex(std::string("1a2b 8503 0001 0000 0000 0000") + kQuestion);
  EXPECT_EQ(to_hex(build_dns_response(q, dnsrcode::kNxDomain, {}, 60)), to_hex(want));
}

TEST(Dns, EdnsAdditionalIsIgnored) {
  const DnsQuery q = must_parse_dns(from_hex(kEdnsQuery));
  EXPECT_EQ(q.id, 0xbeef);
  EXPECT_EQ(q.flags, 0x0120);
  EXPECT_EQ(q.name, "h12.cpam.lan");
  EXPECT_EQ(q.qtype, dnstype::kA);
  // No OPT in the answer (no other sections), AD not copied.
  const Ipv4Addr a[] = {ipv4(10, 0, 0, 12)};
  Bytes want = from_hex(kResponse);
  want[0] = 0xbe;
  want[1] = 0xef;
  EXPECT_EQ(to_hex(build_dns_response(q, dnsrcode::kNoError, a, 60)), to_hex(want));
}

TEST(Dns, RootAndOtherTypes) {
  DnsQuery q = must_parse_dns(query_with("00 0002 0001"));  // ". NS"
  EXPECT_EQ(q.name, "");
  EXPECT_EQ(q.qtype, dnstype::kNs);
  EXPECT_EQ(to_hex(build_dns_response(q, dnsrcode::kNoError, {}, 0)),
            to_hex(from_hex("1234 8500 0001 0000 0000 0000 | 00 0002 0001")));
  q = must_parse_dns(query_with("03 683132 00 001c 0001", 0));  // "h12 AAAA", RD clear
  EXPECT_EQ(q.name, "h12");
  EXPECT_EQ(q.qtype, dnstype::kAaaa);
  EXPECT_FALSE(q.recursion_desired());
}

TEST(Dns, TrailingBytesAfterQuestionIgnored) {
  Bytes m = query_bytes();
  m.push_back(0xff);
  EXPECT_EQ(must_parse_dns(m).name, "h12.cpam.lan");
}

// ---- one negative test per rule ----

TEST(DnsNegative, ShorterThanHeader) {
  const Bytes m = query_bytes();
  for (size_t n = 0; n < kDnsHeaderLen; ++n)
    EXPECT_TRUE(fails_with(Bytes(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(n)), Errc::kTruncated,
                           "message shorter than the 12-byte header"))
        << n;
}

TEST(DnsNegative, QrSet) {
  EXPECT_TRUE(fails_with(query_with(kQuestion, 0x8100), Errc::kBadValue, "QR = 1 (a response, not a query)"));
  // Our own responses are refused, so the responder never answers itself.
  const Ipv4Addr a[] = {ipv4(10, 0, 0, 12)};
  EXPECT_TRUE(fails_with(build_dns_response(must_parse_dns(query_bytes()), 0, a, 1), Errc::kBadValue,
                         "QR = 1 (a response, not a query)"));
}

TEST(DnsNegative, OpcodeNotQuery) {
  for (uint16_t opcode : {1, 2, 4, 5, 15})  // IQUERY, STATUS, NOTIFY, UPDATE, reserved
    EXPECT_TRUE(fails_with(query_with(kQuestion, static_cast<uint16_t>(opcode << 11)), Errc::kUnsupported,
                           "OPCODE is not QUERY"))
        << opcode;
}

TEST(DnsNegative, QdcountNotOne) {
  for (uint16_t qd : {0, 2, 0xffff})
    EXPECT_TRUE(fails_with(query_with(kQuestion, 0x0100, qd), Errc::kUnsupported, "QDCOUNT != 1")) << qd;
}

TEST(DnsNegative, AncountNotZero) {
  EXPECT_TRUE(fails_with(query_with(kQuestion, 0x0100, 1, 1), Errc::kBadValue, "ANCOUNT != 0 in a query"));
}

TEST(DnsNegative, NscountNotZero) {
  EXPECT_TRUE(fails_with(query_with(kQuestion, 0x0100, 1, 0, 1), Errc::kBadValue, "NSCOUNT != 0 in a query"));
}

TEST(DnsNegative, CompressionPointerInQuestion) {
  // A pointer as the whole name, and after a first label.
  EXPECT_TRUE(fails_with(query_with("c00c 0001 0001"), Errc::kUnsupported, "compression pointer in the question"));
  EXPECT_TRUE(
      fails_with(query_with("03 683132 c00c 0001 0001"), Errc::kUnsupported, "compression pointer in the question"));
}

TEST(DnsNegative, LabelLongerThan63) {
  // 63 is the longest label; length bytes 0x40..0xbf (64.. and the reserved 01/10 types) are not.
  EXPECT_TRUE(parse_dns_query(query_with(label_hex(63) + "00 0001 0001")));
  for (uint8_t len : {0x40, 0x7f, 0x80, 0xbf}) {
    Bytes m = query_with(label_hex(63) + "00 0001 0001");
    m[kDnsHeaderLen] = len;
    EXPECT_TRUE(fails_with(m, Errc::kBadLength, "label longer than 63 bytes")) << int{len};
  }
}

TEST(DnsNegative, NameLongerThan255) {
  // 3 x (1 + 63) + (1 + 61) + root = 255 bytes on the wire: the longest name (253 characters).
  const std::string longest = label_hex(63) + label_hex(63) + label_hex(63) + label_hex(61) + "00";
  const DnsQuery q = must_parse_dns(query_with(longest + "0001 0001"));
  EXPECT_EQ(q.name.size(), 253u);
  const std::string too_long = label_hex(63) + label_hex(63) + label_hex(63) + label_hex(62) + "00";
  EXPECT_TRUE(fails_with(query_with(too_long + "0001 0001"), Errc::kBadLength, "QNAME longer than 255 bytes"));
  // Many short labels count their length bytes too: 128 x "a" is 256 + 1 bytes.
  std::string many;
  for (int i = 0; i < 128; ++i) many += "0161";
  EXPECT_TRUE(fails_with(query_with(many + "00 0001 0001"), Errc::kBadLength, "QNAME longer than 255 bytes"));
}

TEST(DnsNegative, QnameCutShort) {
  const Bytes m = query_bytes();
  const size_t qname_end = kDnsHeaderLen + 14;  // 3+1 + 4+1 + 3+1 + root
  for (size_t n = kDnsHeaderLen; n < qname_end; ++n)
    EXPECT_TRUE(fails_with(Bytes(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(n)), Errc::kTruncated, "QNAME cut short"))
        << n;
}

TEST(DnsNegative, QtypeQclassCutShort) {
  const Bytes m = query_bytes();
  for (size_t n = m.size() - 4; n < m.size(); ++n)
    EXPECT_TRUE(fails_with(Bytes(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(n)), Errc::kTruncated,
                           "QTYPE/QCLASS cut short"))
        << n;
}

TEST(DnsNegative, LabelByteOutsidePrintableAscii) {
  for (uint8_t c : {0x00, 0x09, 0x20, 0x7f, 0x80, 0xc3, 0xff}) {
    Bytes m = query_bytes();
    m[kDnsHeaderLen + 2] = c;  // the '1' of "h12"
    EXPECT_TRUE(fails_with(m, Errc::kBadValue, "label byte outside printable ASCII")) << int{c};
  }
  // The ends of the range are accepted.
  Bytes m = query_with("02 217e 00 0001 0001");
  EXPECT_EQ(must_parse_dns(m).name, "!~");
}

TEST(DnsNegative, DotInsideLabel) {
  // One label "h12.cpam" would read back as the two-label name "h12.cpam".
  EXPECT_TRUE(fails_with(query_with("08 6831322e6370616d 00 0001 0001"), Errc::kBadValue, "'.' inside a label"));
}

TEST(DnsNegative, EveryRuleHasItsOwnDetail) {
  const std::vector<Bytes> bad = {
      Bytes(5, 0),
      query_with(kQuestion, 0x8000),
      query_with(kQuestion, 0x1000),
      query_with(kQuestion, 0x0100, 2),
      query_with(kQuestion, 0x0100, 1, 1),
      query_with(kQuestion, 0x0100, 1, 0, 1),
      query_with("c00c 0001 0001"),
      query_with("40"),
      query_with(label_hex(63) + label_hex(63) + label_hex(63) + label_hex(63)),
      query_with("03 6831"),
      query_with("00 0001"),
      query_with("01 20 00 0001 0001"),
      query_with("01 2e 00 0001 0001"),
  };
  std::set<std::string> details;
  for (const Bytes& m : bad) {
    auto q = parse_dns_query(m);
    ASSERT_FALSE(q);
    EXPECT_EQ(q.error().layer, Layer::kDns);
    EXPECT_EQ(to_string(q.error()).rfind("dns: ", 0), 0u) << to_string(q.error());
    details.insert(q.error().detail);
  }
  EXPECT_EQ(details.size(), bad.size());
}

// ---- round trip ----

struct Rr {
  uint16_t name = 0, type = 0, klass = 0;
  uint32_t ttl = 0;
  uint16_t rdlength = 0;
  uint32_t addr = 0;
};

// Reads the response back by hand: header, the question as raw bytes, then A records.
void check_response(const Bytes& r, const Bytes& query, const DnsQuery& q, uint8_t rcode,
                    const std::vector<Ipv4Addr>& answers, uint32_t ttl, bool tc = false) {
  ASSERT_GE(r.size(), kDnsHeaderLen);
  EXPECT_EQ(load_be16(r, 0), q.id);
  const uint16_t flags = load_be16(r, 2);
  EXPECT_TRUE(flags & dnsflag::kQr);
  EXPECT_EQ(flags & dnsflag::kOpcodeMask, 0);
  EXPECT_TRUE(flags & dnsflag::kAa);
  EXPECT_EQ((flags & dnsflag::kTc) != 0, tc);
  EXPECT_EQ((flags & dnsflag::kRd) != 0, q.recursion_desired());
  EXPECT_FALSE(flags & dnsflag::kRa);
  EXPECT_EQ(flags & 0x0070, 0);  // Z, AD, CD
  EXPECT_EQ(flags & dnsflag::kRcodeMask, rcode);
  EXPECT_EQ(load_be16(r, 4), 1);
  EXPECT_EQ(load_be16(r, 6), answers.size());
  EXPECT_EQ(load_be16(r, 8), 0);
  EXPECT_EQ(load_be16(r, 10), 0);
  // The question is the query's own (lower-case) question section.
  const size_t qlen = query.size() - kDnsHeaderLen;
  ASSERT_EQ(r.size(), kDnsHeaderLen + qlen + 16 * answers.size());
  EXPECT_EQ(to_hex(Bytes(r.begin() + kDnsHeaderLen, r.begin() + static_cast<std::ptrdiff_t>(kDnsHeaderLen + qlen))),
            to_hex(Bytes(query.begin() + kDnsHeaderLen, query.end())));
  Reader rd(ByteView(r).subspan(kDnsHeaderLen + qlen));
  for (Ipv4Addr want : answers) {
    Rr rr;
    ASSERT_TRUE(rd.pull_be16(rr.name) && rd.pull_be16(rr.type) && rd.pull_be16(rr.klass) && rd.pull_be32(rr.ttl) &&
                rd.pull_be16(rr.rdlength) && rd.pull_be32(rr.addr));
    EXPECT_EQ(rr.name, 0xc00c);
    EXPECT_EQ(rr.type, dnstype::kA);
    EXPECT_EQ(rr.klass, kDnsClassIn);
    EXPECT_EQ(rr.ttl, ttl);
    EXPECT_EQ(rr.rdlength, 4);
    EXPECT_EQ(rr.addr, want.value);
  }
  EXPECT_TRUE(rd.empty());
}

TEST(DnsRoundTrip, SeveralAnswers) {
  const Bytes m = query_bytes();
  const DnsQuery q = must_parse_dns(m);
  const std::vector<Ipv4Addr> a = {ipv4(10, 0, 0, 12), ipv4(10, 0, 1, 12), ipv4(192, 168, 255, 1)};
  check_response(build_dns_response(q, dnsrcode::kNoError, a, 0xdeadbeef), m, q, dnsrcode::kNoError, a, 0xdeadbeef);
}

TEST(DnsRoundTrip, RdClearAndEveryRcode) {
  const Bytes m = query_with("04 686f7374 00 0001 0001", 0x0000);
  const DnsQuery q = must_parse_dns(m);
  for (uint8_t rc : {dnsrcode::kNoError, dnsrcode::kFormErr, dnsrcode::kServFail, dnsrcode::kNxDomain,
                     dnsrcode::kNotImp, dnsrcode::kRefused})
    check_response(build_dns_response(q, rc, {}, 30), m, q, rc, {}, 30);
}

TEST(DnsRoundTrip, LongestNameAndAnswersPast512) {
  const std::string longest = label_hex(63) + label_hex(63) + label_hex(63) + label_hex(61) + "00";
  const Bytes m = query_with(longest + "00ff 0001");
  const DnsQuery q = must_parse_dns(m);
  // 12 + 259 + 15 x 16 = 511: fifteen fit, the sixteenth would pass 512 bytes.
  std::vector<Ipv4Addr> a;
  for (uint8_t i = 1; i <= 15; ++i) a.push_back(ipv4(10, 0, 0, i));
  const Bytes r15 = build_dns_response(q, dnsrcode::kNoError, a, 5);
  EXPECT_EQ(r15.size(), 511u);
  check_response(r15, m, q, dnsrcode::kNoError, a, 5);
  std::vector<Ipv4Addr> more = a;
  more.push_back(ipv4(10, 0, 0, 16));
  const Bytes r16 = build_dns_response(q, dnsrcode::kNoError, more, 5);
  check_response(r16, m, q, dnsrcode::kNoError, a, 5, /*tc=*/true);
}

TEST(DnsRoundTrip, BuiltFromAHandMadeQuery) {
  // A caller may build a DnsQuery without parsing; the question is encoded from q.name.
  DnsQuery q;
  q.id = 7;
  q.flags = dnsflag::kRd;
  q.name = "gw.cpam.lan";
  q.qtype = dnstype::kA;
  q.qclass = kDnsClassIn;
  const Bytes m = query_with("02 6777 04 6370616d 03 6c616e 00 0001 0001");
  const Ipv4Addr a[] = {ipv4(10, 0, 0, 254)};
  const Bytes r = build_dns_response(q, dnsrcode::kNoError, a, 60);
  check_response(r, m, q, dnsrcode::kNoError, {a[0]}, 60);
}

// ---- case folding ----

TEST(Dns, CaseFolding) {
  // "H12.CpAm.LAN": letters folded, digits and other bytes left alone (RFC 4343).
  const Bytes m = query_with("03 483132 04 4370416d 03 4c414e 00 0001 0001");
  const DnsQuery q = must_parse_dns(m);
  EXPECT_EQ(q.name, "h12.cpam.lan");
  // The response echoes the question lower-cased.
  const Ipv4Addr a[] = {ipv4(10, 0, 0, 12)};
  Bytes want = from_hex(kResponse);
  want[0] = 0x12;
  want[1] = 0x34;
  EXPECT_EQ(to_hex(build_dns_response(q, dnsrcode::kNoError, a, 60)), to_hex(want));
  EXPECT_EQ(must_parse_dns(query_with("05 5a405b607a 00 0001 0001")).name, "z@[`z");  // only A-Z fold
}

}  // namespace
}  // namespace sdn::pkt
