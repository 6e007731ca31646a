// One negative test per length rule (and per value rule) of each parser: the error names
// the layer and the rule, and nothing past the end is read (ASan builds check the latter).
#include <gtest/gtest.h>

#include <string>

#include "pkt/build.hpp"
#include "pkt/parse.hpp"
#include "unit/pkt/golden.hpp"
#include "unit/pkt/hex.hpp"

namespace sdn::pkt {
namespace {

using test::from_hex;

constexpr Mac kSrcMac{0x000000000001ULL};
constexpr Mac kDstMac{0x000000000002ULL};
constexpr size_t kL3 = kEthHeaderLen;        // IPv4/ARP offset, untagged
constexpr size_t kL4 = kL3 + kIpv4MinHeaderLen;

// Parses a copy exactly `bytes` long (no slack after it: ASan catches any over-read).
::testing::AssertionResult fails_with(const Bytes& frame, Layer layer, Errc code, ParseOptions opt = {}) {
  auto exact = std::make_unique<uint8_t[]>(frame.size() ? frame.size() : 1);
  std::copy(frame.begin(), frame.end(), exact.get());
  auto p = parse(ByteView(exact.get(), frame.size()), opt);
  if (p) return ::testing::AssertionFailure() << "parsed OK";
  if (p.error().layer != layer || p.error().code != code)
    return ::testing::AssertionFailure() << "got " << to_string(p.error());
  return ::testing::AssertionSuccess() << to_string(p.error());
}

Bytes unpadded_udp(size_t payload_len) {
  EthSpec e{kDstMac, kSrcMac};
  e.pad = false;
  return build_udp(e, Ipv4Spec{ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2)}, 1, 2, Bytes(payload_len, 0x55));
}

Bytes unpadded_tcp() {
  EthSpec e{kDstMac, kSrcMac};
  e.pad = false;
  return build_tcp(e, Ipv4Spec{ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2)}, TcpSpec{});
}

Bytes frame_of(uint16_t type, const Bytes& payload) {
  EthSpec e{kLldpMulticast, kSrcMac};
  e.pad = false;
  return build_ethernet(e, type, payload);
}

// ---- Ethernet / VLAN ----
TEST(Negative, EthernetShorterThan14) {
  for (size_t n = 0; n < kEthHeaderLen; ++n)
    EXPECT_TRUE(fails_with(Bytes(n, 0), Layer::kEthernet, Errc::kTruncated)) << n;
  const Bytes header_only(kEthHeaderLen, 0);
  EXPECT_TRUE(parse(header_only));  // header only, ethertype 0 (802.3 length)
}

TEST(Negative, VlanTagCutShort) {
  Bytes f = from_hex("ffffffffffff 000000000001 8100 0064");  // no inner type
  EXPECT_TRUE(fails_with(f, Layer::kVlan, Errc::kTruncated));
  Bytes g = from_hex("ffffffffffff 000000000001 8100 00");
  EXPECT_TRUE(fails_with(g, Layer::kVlan, Errc::kTruncated));
  Bytes h = from_hex("ffffffffffff 000000000001 88a8 000a 8100 0014");  // second tag cut
  EXPECT_TRUE(fails_with(h, Layer::kVlan, Errc::kTruncated));
}

TEST(Negative, ThreeVlanTagsUnsupported) {
  Bytes f = from_hex("ffffffffffff 000000000001 88a8 000a 8100 0014 8100 001e 0806");
  EXPECT_TRUE(fails_with(f, Layer::kVlan, Errc::kUnsupported));
}

// ---- ARP ----
TEST(Negative, ArpShorterThan28) {
  Bytes f = from_hex(golden::kArpRequest);
  f.resize(kL3 + kArpLen - 1);
  EXPECT_TRUE(fails_with(f, Layer::kArp, Errc::kTruncated));
  f.resize(kL3 + kArpLen);
  EXPECT_TRUE(parse(f));
}

TEST(Negative, ArpNotEthernetIpv4) {
  Bytes f = from_hex(golden::kArpRequest);
  f[kL3 + 1] = 6;  // htype 6 (IEEE 802)
  EXPECT_TRUE(fails_with(f, Layer::kArp, Errc::kUnsupported));
  f = from_hex(golden::kArpRequest);
  f[kL3 + 5] = 16;  // plen 16
  EXPECT_TRUE(fails_with(f, Layer::kArp, Errc::kUnsupported));
}

// ---- IPv4 ----
TEST(Negative, Ipv4ShorterThan20) {
  Bytes f = unpadded_udp(0);
  f.resize(kL3 + 19);
  EXPECT_TRUE(fails_with(f, Layer::kIpv4, Errc::kTruncated));
}

TEST(Negative, Ipv4VersionNot4) {
  Bytes f = unpadded_udp(4);
  f[kL3] = 0x65;
  EXPECT_TRUE(fails_with(f, Layer::kIpv4, Errc::kBadValue));
}

TEST(Negative, Ipv4IhlBelow5) {
  Bytes f = unpadded_udp(4);
  for (uint8_t ihl = 0; ihl < 5; ++ihl) {
    f[kL3] = static_cast<uint8_t>(0x40 | ihl);
    EXPECT_TRUE(fails_with(f, Layer::kIpv4, Errc::kBadLength)) << int{ihl};
  }
}

TEST(Negative, Ipv4IhlPastTheBytes) {
  Bytes f = unpadded_udp(0);  // 28 bytes of IPv4
  f[kL3] = 0x48;              // IHL 8 = 32 bytes
  EXPECT_TRUE(fails_with(f, Layer::kIpv4, Errc::kTruncated));
}

TEST(Negative, Ipv4TotalLengthBelowHeader) {
  Bytes f = unpadded_udp(4);
  f[kL3 + 2] = 0;
  f[kL3 + 3] = 19;
  EXPECT_TRUE(fails_with(f, Layer::kIpv4, Errc::kBadLength));
}

TEST(Negative, Ipv4TotalLengthPastTheBytes) {
  Bytes f = unpadded_udp(4);
  f.pop_back();  // total_length now one more than present
  EXPECT_TRUE(fails_with(f, Layer::kIpv4, Errc::kTruncated));
  // allowed for a cut PacketIn; UDP length is then tolerated too
  auto p = parse(f, ParseOptions{true});
  ASSERT_TRUE(p && p->ipv4 && p->udp);
  EXPECT_TRUE(p->ipv4->truncated);
}

// ---- TCP ----
TEST(Negative, TcpShorterThan20) {
  Bytes f = unpadded_tcp();
  f.resize(kL4 + 19);
  f[kL3 + 3] = static_cast<uint8_t>(20 + 19);  // keep IPv4 consistent: total_length 39
  f[kL3 + 2] = 0;
  EXPECT_TRUE(fails_with(f, Layer::kTcp, Errc::kTruncated));
}

TEST(Negative, TcpDataOffsetBelow5) {
  Bytes f = unpadded_tcp();
  f[kL4 + 12] = 0x40;  // data offset 4
  EXPECT_TRUE(fails_with(f, Layer::kTcp, Errc::kBadLength));
}

TEST(Negative, TcpDataOffsetPastTheBytes) {
  Bytes f = unpadded_tcp();
  f[kL4 + 12] = 0x60;  // data offset 6 = 24 bytes, 20 present
  EXPECT_TRUE(fails_with(f, Layer::kTcp, Errc::kTruncated));
}

// ---- UDP ----
TEST(Negative, UdpShorterThan8) {
  Bytes f = unpadded_udp(0);
  f.resize(kL4 + 7);
  f[kL3 + 2] = 0;
  f[kL3 + 3] = 27;
  EXPECT_TRUE(fails_with(f, Layer::kUdp, Errc::kTruncated));
}

TEST(Negative, UdpLengthBelow8) {
  Bytes f = unpadded_udp(4);
  f[kL4 + 4] = 0;
  f[kL4 + 5] = 7;
  EXPECT_TRUE(fails_with(f, Layer::kUdp, Errc::kBadLength));
}

TEST(Negative, UdpLengthPastTheDatagram) {
  Bytes f = unpadded_udp(4);
  f[kL4 + 5] = 13;  // 12 present
  EXPECT_TRUE(fails_with(f, Layer::kUdp, Errc::kTruncated));
}

// ---- ICMP ----
TEST(Negative, IcmpShorterThan8) {
  Ipv4Spec ip{ipv4(10, 0, 0, 1), ipv4(10, 0, 0, 2)};
  ip.protocol = ipproto::kIcmp;
  EthSpec e{kDstMac, kSrcMac};
  e.pad = false;
  Bytes f = build_ipv4(e, ip, Bytes{8, 0, 0, 0, 0, 0, 0});
  EXPECT_TRUE(fails_with(f, Layer::kIcmp, Errc::kTruncated));
}

// ---- LLDP ----
const Bytes kChassis = from_hex("0207 04 020000000009");
const Bytes kPort = from_hex("0405 05 65746830");
const Bytes kTtl = from_hex("0602 003c");
const Bytes kEnd = from_hex("0000");

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(Negative, LldpMinimalIsValid) {
  const Bytes p_frame = frame_of(ethertype::kLldp, cat({kChassis, kPort, kTtl, kEnd}));
  auto p = parse(p_frame);
  ASSERT_TRUE(p && p->lldp);
}

TEST(Negative, LldpTlvLengthPastTheEnd) {
  Bytes f = frame_of(ethertype::kLldp, cat({kChassis, kPort, kTtl, from_hex("0a05 737731")}));  // says 5, has 3
  EXPECT_TRUE(fails_with(f, Layer::kLldp, Errc::kTruncated));
  Bytes g = frame_of(ethertype::kLldp, from_hex("0210 04 0200"));  // chassis says 16
  EXPECT_TRUE(fails_with(g, Layer::kLldp, Errc::kTruncated));
}

TEST(Negative, LldpTlvHeaderCut) {
  Bytes f = frame_of(ethertype::kLldp, cat({kChassis, kPort, kTtl, from_hex("00")}));
  EXPECT_TRUE(fails_with(f, Layer::kLldp, Errc::kTruncated));
}

TEST(Negative, LldpMissingEnd) {
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kChassis, kPort, kTtl})), Layer::kLldp, Errc::kTruncated));
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, {}), Layer::kLldp, Errc::kTruncated));
}

TEST(Negative, LldpMandatoryTlvOrder) {
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kPort, kChassis, kTtl, kEnd})), Layer::kLldp, Errc::kBadValue));
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kChassis, kTtl, kPort, kEnd})), Layer::kLldp, Errc::kBadValue));
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kChassis, kPort, kEnd})), Layer::kLldp, Errc::kBadValue));
}

TEST(Negative, LldpIdLengthsOutOfRange) {
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({from_hex("0201 04"), kPort, kTtl, kEnd})), Layer::kLldp,
                         Errc::kBadLength));
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kChassis, from_hex("0401 05"), kTtl, kEnd})), Layer::kLldp,
                         Errc::kBadLength));
  Bytes big = from_hex("03 01 07");  // chassis TLV, length 257
  big.insert(big.end(), 256, 'a');
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({big, kPort, kTtl, kEnd})), Layer::kLldp, Errc::kBadLength));
}

TEST(Negative, LldpTtlAndEndLengths) {
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kChassis, kPort, from_hex("0603 003c00"), kEnd})),
                         Layer::kLldp, Errc::kBadLength));
  EXPECT_TRUE(fails_with(frame_of(ethertype::kLldp, cat({kChassis, kPort, kTtl, from_hex("0001 00")})), Layer::kLldp,
                         Errc::kBadLength));
}

}  // namespace
}  // namespace sdn::pkt
