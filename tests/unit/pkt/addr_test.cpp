// MAC / IPv4 address text forms and classification.
#include <gtest/gtest.h>

#include "pkt/addr.hpp"
#include "pkt/checksum.hpp"
#include "pkt/error.hpp"
#include "unit/pkt/hex.hpp"

namespace sdn::pkt {
namespace {

TEST(Mac, FormatsLowerCaseColonSeparated) {
  EXPECT_EQ(Mac{0xaabbccddeeffULL}.to_string(), "aa:bb:cc:dd:ee:ff");
  EXPECT_EQ(Mac{0x1}.to_string(), "00:00:00:00:00:01");
}

TEST(Mac, ParsesColonDashAndShortGroups) {
  EXPECT_EQ(Mac::parse("aa:bb:cc:dd:ee:ff"), Mac{0xaabbccddeeffULL});
  EXPECT_EQ(Mac::parse("AA-BB-CC-DD-EE-FF"), Mac{0xaabbccddeeffULL});
  EXPECT_EQ(Mac::parse("0:1:2:3:4:5"), Mac{0x000102030405ULL});
}

TEST(Mac, RejectsMalformedText) {
  for (const char* bad : {"", "aa:bb:cc:dd:ee", "aa:bb:cc:dd:ee:ff:00", "aa:bb:cc:dd:ee:fff", "aa:bb-cc:dd:ee:ff",
                          "gg:bb:cc:dd:ee:ff", "aa:bb:cc:dd:ee:ff ", "aabb.ccdd.eeff", "aa::cc:dd:ee:ff"}) {
    EXPECT_FALSE(Mac::parse(bad).has_value()) << bad;
  }
}

TEST(Mac, Classification) {
  EXPECT_TRUE(Mac::broadcast().is_broadcast());
  EXPECT_TRUE(Mac::broadcast().is_multicast());
  EXPECT_TRUE(Mac{0x01005e000016ULL}.is_multicast());
  EXPECT_TRUE(Mac{0x000000000001ULL}.is_unicast());
  EXPECT_TRUE(Mac{0x0180c200000eULL}.is_link_local());
  EXPECT_TRUE(Mac{0x0180c2000000ULL}.is_link_local());
  EXPECT_FALSE(Mac{0x0180c2000010ULL}.is_link_local());
}

TEST(Ipv4Addr, FormatAndParse) {
  EXPECT_EQ(ipv4(10, 0, 0, 1).value, 0x0a000001U);
  EXPECT_EQ(ipv4(192, 168, 1, 254).to_string(), "192.168.1.254");
  EXPECT_EQ(Ipv4Addr::parse("10.0.0.1"), ipv4(10, 0, 0, 1));
  EXPECT_EQ(Ipv4Addr::parse("255.255.255.255"), Ipv4Addr{0xffffffffU});
  for (const char* bad : {"", "10.0.0", "10.0.0.1.2", "256.0.0.1", "10.0.0.1 ", "10..0.1", "1000.0.0.1", "a.b.c.d",
                          "-1.0.0.0", "10.0.0.1/24"}) {
    EXPECT_FALSE(Ipv4Addr::parse(bad).has_value()) << bad;
  }
  EXPECT_TRUE(ipv4(224, 0, 0, 22).is_multicast());
  EXPECT_FALSE(ipv4(10, 0, 0, 1).is_multicast());
}

// The worked example from RFC 1071 section 3 and the common IPv4 header example.
TEST(Checksum, KnownVectors) {
  auto rfc1071 = test::from_hex("0001 f203 f4f5 f6f7");
  EXPECT_EQ(checksum_finish(checksum_add(0, rfc1071)), static_cast<uint16_t>(~0xddf2 & 0xffff));
  auto hdr = test::from_hex("4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7");
  EXPECT_EQ(internet_checksum(hdr), 0xb861);
  hdr[10] = 0xb8;
  hdr[11] = 0x61;
  EXPECT_EQ(internet_checksum(hdr), 0);
  // Odd length: last byte padded with zero.
  EXPECT_EQ(internet_checksum(test::from_hex("01")), static_cast<uint16_t>(~0x0100 & 0xffff));
}

TEST(Error, ReadableText) {
  Error e{Errc::kTruncated, Layer::kIpv4, "total_length exceeds the bytes present"};
  EXPECT_EQ(to_string(e), "ipv4: truncated: total_length exceeds the bytes present");
}

}  // namespace
}  // namespace sdn::pkt
