// Golden bytes both ways for the symmetric and configuration messages (HELLO .. ROLE).
#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

TEST(OfpGoldenSymmetric, Hello) { expect_golden("hello", {1, Hello{1u << 4}}); }
TEST(OfpGoldenSymmetric, HelloWithoutElements) { expect_golden("hello_plain", {1, Hello{0}}); }

TEST(OfpGoldenSymmetric, HelloUnknownElementsAreSkipped) {
  // 7.5.1: unknown element types must be ignored; the bitmap after them still counts.
  auto d = decode(golden_bytes("hello_unknown_elem"));
  ASSERT_TRUE(d.has_value()) << d.error().detail;
  EXPECT_EQ(std::get<Hello>(d->body).version_bitmap, 1u << 4);
}

TEST(OfpGoldenSymmetric, HelloOfAnotherVersionDecodes) {
  // A 1.0 switch's hello must reach the session so it can answer HELLO_FAILED.
  auto d = decode(from_hex("0100000800000001"));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(std::get<Hello>(d->body).version_bitmap, 0u);
  auto h = decode_header(from_hex("0100000800000001"));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->version, 1);
}

TEST(OfpGoldenSymmetric, Error) {
  expect_golden("error", {7, ErrorMsg{1, 6, from_hex("0400000800000001")}});
}
TEST(OfpGoldenSymmetric, Echo) {
  expect_golden("echo_request", {2, EchoRequest{from_hex("61626364")}});
  expect_golden("echo_reply", {2, EchoReply{from_hex("61626364")}});
}
TEST(OfpGoldenSymmetric, Features) {
  expect_golden("features_request", {3, FeaturesRequest{}});
  expect_golden("features_reply", {3, FeaturesReply{0x0000aabbccddeeffULL, 256, 254, 0, 0x4f}});
}
TEST(OfpGoldenSymmetric, Config) {
  expect_golden("get_config_request", {4, GetConfigRequest{}});
  expect_golden("get_config_reply", {4, GetConfigReply{{0, 128}}});
  expect_golden("set_config", {5, SetConfig{{0, 0xffff}}});
}
TEST(OfpGoldenSymmetric, Barrier) {
  expect_golden("barrier_request", {6, BarrierRequest{}});
  expect_golden("barrier_reply", {6, BarrierReply{}});
}
TEST(OfpGoldenSymmetric, Role) {
  expect_golden("role_request", {8, RoleRequest{{2, 5}}});
  expect_golden("role_reply", {8, RoleReply{{2, 5}}});
}

}  // namespace
}  // namespace sdn::ofp::test
