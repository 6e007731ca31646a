// ovs-ofctl flow syntax: golden parses per field family, one negative test per rule, format
// round trips, dump-flows lines, the REST bodies, FlowFilter. The hex goldens are what
// ovs-ofctl 3.1 (`-O OpenFlow13 --no-names add-flow/dump-flows/del-flows tcp:127.0.0.1:PORT`,
// xid 2) sent to a capturing peer (a small listener that answers HELLO, FEATURES and BARRIER
// and prints each FLOW_MOD / MULTIPART request in hex); the dump-flows lines are
// `ovs-ofctl ofp-print` of kFlowReplyHex. The text columns are what `ovs-ofctl parse-flow` printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "northbound/flow_syntax.hpp"
#include "ofp/message.hpp"
#include "unit/ofp/test_util.hpp"

namespace sdn::northbound {
namespace {

using Json = nlohmann::json;
using ofp::OxmField;
using ofp::OxmTlv;

using ofp::test::from_hex;
using ofp::test::to_hex;

std::string encoded(ofp::Body body) {
  ofp::Bytes out;
  auto r = ofp::encode(2, std::move(body), out);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().detail);
  return to_hex(out);
}

ofp::Match match_ok(std::string_view text) {
  auto m = parse_match(text);
  EXPECT_TRUE(m.has_value()) << text << ": " << (m ? "" : m.error().message);
  return m ? *m : ofp::Match{};
}

ofp::InstructionList actions_ok(std::string_view text, const ofp::Match& m = {}) {
  auto a = parse_actions(text, m);
  EXPECT_TRUE(a.has_value()) << text << ": " << (a ? "" : a.error().message);
  return a ? *a : ofp::InstructionList{};
}

ofp::Match make(std::initializer_list<OxmTlv> fields) {
  ofp::Match m;
  for (const auto& f : fields) m.fields.push_back(f);
  return m;
}

OxmTlv f(OxmField field, uint64_t v) { return {field, v, std::nullopt}; }
OxmTlv fm(OxmField field, uint64_t v, uint64_t mask) { return {field, v, mask}; }

ofp::InstructionList apply(ofp::ActionList a) { return {ofp::InstrApplyActions{std::move(a)}}; }
ofp::ActionSetField set(OxmField field, uint64_t v) { return ofp::ActionSetField{{field, v, std::nullopt}}; }

// ---- matches: golden parses --------------------------------------------------------------

TEST(ParseMatch, EmptyIsMatchAll) {
  EXPECT_EQ(match_ok(""), ofp::Match{});
  EXPECT_EQ(match_ok("  , "), ofp::Match{});
}

TEST(ParseMatch, InPort) {
  EXPECT_EQ(match_ok("in_port=1"), make({f(OxmField::kInPort, 1)}));
  EXPECT_EQ(match_ok("in_port=LOCAL"), make({f(OxmField::kInPort, ofp::port::kLocal)}));
  EXPECT_EQ(match_ok("in_port=controller"), make({f(OxmField::kInPort, ofp::port::kController)}));
  EXPECT_EQ(match_ok("in_port=0x10"), make({f(OxmField::kInPort, 16)}));
}

TEST(ParseMatch, Ethernet) {
  const auto want = make({f(OxmField::kEthSrc, 0x001122334455), fm(OxmField::kEthDst, 0x010000000000, 0x010000000000),
                          f(OxmField::kEthType, 0x1234)});
  EXPECT_EQ(match_ok("dl_src=00:11:22:33:44:55,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,dl_type=0x1234"), want);
  EXPECT_EQ(match_ok("eth_type=4660 eth_dst=01:00:00:00:00:00/01:00:00:00:00:00 eth_src=0:11:22:33:44:55"), want);
  // An all-ones mask is an exact match; an all-zero mask matches anything (ovs drops it).
  EXPECT_EQ(match_ok("dl_src=00:11:22:33:44:55/ff:ff:ff:ff:ff:ff"), make({f(OxmField::kEthSrc, 0x001122334455)}));
  EXPECT_EQ(match_ok("dl_src=00:11:22:33:44:55/00:00:00:00:00:00"), ofp::Match{});
}

TEST(ParseMatch, Vlan) {
  EXPECT_EQ(match_ok("dl_vlan=5"), make({f(OxmField::kVlanVid, 0x1005)}));
  EXPECT_EQ(match_ok("dl_vlan=0xffff"), make({f(OxmField::kVlanVid, 0)}));
  EXPECT_EQ(match_ok("dl_vlan=3,dl_vlan_pcp=7"), make({f(OxmField::kVlanVid, 0x1003), f(OxmField::kVlanPcp, 7)}));
  EXPECT_EQ(match_ok("vlan_pcp=1,vlan_vid=0x1003"), make({f(OxmField::kVlanVid, 0x1003), f(OxmField::kVlanPcp, 1)}));
  // dl_vlan_pcp alone: any tagged packet with that priority, as ovs-ofctl encodes it.
  EXPECT_EQ(match_ok("dl_vlan_pcp=3"),
            make({fm(OxmField::kVlanVid, 0x1000, 0x1000), f(OxmField::kVlanPcp, 3)}));
  // vlan_vid is the raw OXM value, as in ovs-ofctl.
  EXPECT_EQ(match_ok("vlan_vid=0x1000/0x1000"), make({fm(OxmField::kVlanVid, 0x1000, 0x1000)}));
  EXPECT_EQ(match_ok("vlan_vid=5"), make({f(OxmField::kVlanVid, 5)}));
}

TEST(ParseMatch, Ipv4) {
  const auto want = make({f(OxmField::kEthType, 0x0800), fm(OxmField::kIpv4Src, 0x0a000000, 0xff000000),
                          f(OxmField::kIpv4Dst, 0x0a000001)});
  EXPECT_EQ(match_ok("ip,nw_src=10.0.0.0/8,nw_dst=10.0.0.1"), want);
  EXPECT_EQ(match_ok("nw_dst=10.0.0.1/32 ip nw_src=10.1.2.3/255.0.0.0"), want);  // host bits cleared
  EXPECT_EQ(match_ok("dl_type=0x0800,ipv4_src=10.0.0.0/8,ipv4_dst=10.0.0.1"), want);
  EXPECT_EQ(match_ok("ip,nw_src=10.0.0.0/255.0.255.0"),
            make({f(OxmField::kEthType, 0x0800), fm(OxmField::kIpv4Src, 0x0a000000, 0xff00ff00)}));
  EXPECT_EQ(match_ok("ip,nw_src=0.0.0.0/0"), make({f(OxmField::kEthType, 0x0800)}));
}

TEST(ParseMatch, IpProtoTosEcn) {
  const auto want = make({f(OxmField::kEthType, 0x0800), f(OxmField::kIpDscp, 4), f(OxmField::kIpEcn, 1),
                          f(OxmField::kIpProto, 47)});
  EXPECT_EQ(match_ok("ip,nw_proto=47,nw_tos=16,nw_ecn=1"), want);
  EXPECT_EQ(match_ok("ip_ecn=1,ip_dscp=4,ip_proto=47,eth_type=0x800"), want);
  EXPECT_EQ(match_ok("dl_type=0x0800,nw_proto=6"), match_ok("tcp"));
}

TEST(ParseMatch, Transport) {
  const auto tcp = make({f(OxmField::kEthType, 0x0800), f(OxmField::kIpv4Dst, 0x0a000002), f(OxmField::kIpProto, 6),
                         f(OxmField::kTcpDst, 80)});
  EXPECT_EQ(match_ok("tcp,nw_dst=10.0.0.2,tp_dst=80"), tcp);
  EXPECT_EQ(match_ok("tp_dst=80,nw_dst=10.0.0.2,tcp"), tcp);  // order does not matter
  EXPECT_EQ(match_ok("tcp,nw_dst=10.0.0.2,tcp_dst=0x50"), tcp);
  EXPECT_EQ(match_ok("udp,tp_src=53,udp_dst=54"),
            make({f(OxmField::kEthType, 0x0800), f(OxmField::kIpProto, 17), f(OxmField::kUdpSrc, 53),
                  f(OxmField::kUdpDst, 54)}));
  EXPECT_EQ(match_ok("sctp,sctp_src=1,tp_dst=2"),
            make({f(OxmField::kEthType, 0x0800), f(OxmField::kIpProto, 132), f(OxmField::kSctpSrc, 1),
                  f(OxmField::kSctpDst, 2)}));
}

TEST(ParseMatch, Icmp) {
  const auto want = make({f(OxmField::kEthType, 0x0800), f(OxmField::kIpProto, 1), f(OxmField::kIcmpv4Type, 8),
                          f(OxmField::kIcmpv4Code, 0)});
  EXPECT_EQ(match_ok("icmp,icmp_type=8,icmp_code=0"), want);
  EXPECT_EQ(match_ok("ip,nw_proto=1,icmpv4_type=8,icmpv4_code=0"), want);
}

TEST(ParseMatch, Arp) {
  const auto want = make({f(OxmField::kEthType, 0x0806), f(OxmField::kArpOp, 1), f(OxmField::kArpSpa, 0x0a000001),
                          fm(OxmField::kArpTpa, 0x0a000000, 0xffffff00), f(OxmField::kArpSha, 1),
                          f(OxmField::kArpTha, 2)});
  // For ARP, nw_src/nw_dst are arp_spa/arp_tpa and nw_proto is the opcode (ovs-fields(7)).
  EXPECT_EQ(match_ok("arp,nw_proto=1,nw_src=10.0.0.1,nw_dst=10.0.0.0/24,arp_sha=00:00:00:00:00:01,"
                     "arp_tha=00:00:00:00:00:02"),
            want);
  EXPECT_EQ(match_ok("dl_type=0x0806,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,arp_sha=0:0:0:0:0:1,"
                     "arp_tha=00:00:00:00:00:02"),
            want);
}

TEST(ParseMatch, Metadata) {
  EXPECT_EQ(match_ok("metadata=0x1/0xff"), make({fm(OxmField::kMetadata, 1, 0xff)}));
  EXPECT_EQ(match_ok("metadata=18446744073709551615"), make({f(OxmField::kMetadata, ~uint64_t{0})}));
}

TEST(ParseMatch, CanonicalOrderPutsPrerequisitesFirst) {
  const auto m = match_ok("tp_dst=2,metadata=1,nw_src=1.1.1.1,in_port=3,tcp,dl_vlan=4,dl_src=00:00:00:00:00:01");
  std::vector<OxmField> order;
  for (const auto& t : m.fields) order.push_back(t.field);
  EXPECT_EQ(order, (std::vector<OxmField>{OxmField::kInPort, OxmField::kEthSrc, OxmField::kEthType, OxmField::kVlanVid,
                                          OxmField::kIpv4Src, OxmField::kIpProto, OxmField::kTcpDst,
                                          OxmField::kMetadata}));
}

// ---- matches: one negative test per rule -------------------------------------------------

void expect_match_error(std::string_view text, std::string_view token, std::string_view phrase = "") {
  auto m = parse_match(text);
  ASSERT_FALSE(m.has_value()) << text;
  EXPECT_EQ(m.error().field, "match");
  EXPECT_NE(m.error().message.find(token), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find(phrase), std::string::npos) << m.error().message;
}

TEST(ParseMatchError, UnknownNames) {
  expect_match_error("ip,foo=1", "foo=1", "unknown");
  expect_match_error("bogus", "bogus", "unknown");
  expect_match_error("in_phy_port=1", "in_phy_port", "unsupported");
  expect_match_error("ip,nw_ttl=3", "nw_ttl", "unsupported");
}

TEST(ParseMatchError, UnsupportedProtocols) {
  expect_match_error("ipv6", "ipv6", "not supported");
  expect_match_error("tcp6,tp_dst=80", "tcp6", "not supported");
}

TEST(ParseMatchError, FlowKeywordsBelongToTheRequest) {
  expect_match_error("priority=100,ip", "priority=100", "\"priority\"");
  expect_match_error("ip,actions=drop", "actions=drop", "\"actions\"");
}

TEST(ParseMatchError, Duplicates) {
  expect_match_error("in_port=1,in_port=2", "in_port=2", "already set by 'in_port=1'");
  expect_match_error("tcp,nw_proto=17", "nw_proto=17", "already set by 'tcp'");
  expect_match_error("ip,dl_type=0x0800", "dl_type=0x0800", "already set");
  expect_match_error("ip,ip_dscp=1,nw_tos=4", "nw_tos=4", "already set");
}

TEST(ParseMatchError, BadNumbers) {
  expect_match_error("in_port=abc", "in_port=abc", "not a port");
  expect_match_error("tcp,tp_dst=80x", "tp_dst=80x", "not a number");
  expect_match_error("tcp,tp_dst=-1", "tp_dst=-1", "not a number");
  expect_match_error("in_port=", "in_port=", "missing value");
  expect_match_error("metadata=0x", "metadata=0x", "not a number");
}

TEST(ParseMatchError, OutOfRange) {
  expect_match_error("dl_vlan=4096", "dl_vlan=4096", "0..4095");
  expect_match_error("tcp,tp_dst=65536", "tp_dst=65536", "out of range");
  expect_match_error("dl_vlan=1,dl_vlan_pcp=8", "dl_vlan_pcp=8", "out of range");
  expect_match_error("ip,ip_dscp=64", "ip_dscp=64", "out of range");
  expect_match_error("ip,nw_ecn=4", "nw_ecn=4", "out of range");
  expect_match_error("in_port=4294967295", "in_port=4294967295", "by name");
  expect_match_error("metadata=18446744073709551616", "metadata=", "out of range");
}

TEST(ParseMatchError, TosMustBeAMultipleOfFour) { expect_match_error("ip,nw_tos=3", "nw_tos=3", "multiple of 4"); }

TEST(ParseMatchError, MaskOnNonMaskableField) {
  expect_match_error("tcp,tp_dst=80/0xff", "tp_dst=80/0xff", "not maskable");
  expect_match_error("in_port=1/1", "in_port=1/1", "not maskable");
  expect_match_error("dl_vlan=1/0xfff", "dl_vlan=1/0xfff", "not maskable");
}

TEST(ParseMatchError, BadAddresses) {
  expect_match_error("dl_src=00:11:22:33:44", "dl_src=00:11:22:33:44", "MAC");
  expect_match_error("dl_src=00:11:22:33:44:55:66", "dl_src=", "MAC");
  expect_match_error("ip,nw_src=10.0.0.256", "nw_src=10.0.0.256", "IPv4");
  expect_match_error("ip,nw_src=10.0.0", "nw_src=10.0.0", "IPv4");
  expect_match_error("ip,nw_src=10.0.0.0/33", "nw_src=10.0.0.0/33", "prefix");
  expect_match_error("ip,nw_dst=10.0.0.0/255.0.x.0", "nw_dst=", "mask");
}

TEST(ParseMatchError, Prerequisites) {
  expect_match_error("tp_dst=80", "tp_dst: needs tcp, udp or sctp first (nw_proto=6/17/132)");
  expect_match_error("udp,tcp_dst=80", "tcp_dst: needs tcp first (nw_proto=6)");
  expect_match_error("tcp,udp_src=1", "udp_src: needs udp first");
  expect_match_error("ip,sctp_dst=1", "sctp_dst: needs sctp first");
  expect_match_error("nw_src=10.0.0.1", "nw_src: needs ip or arp first");
  expect_match_error("arp,ipv4_dst=10.0.0.1", "ipv4_dst: needs ip first (dl_type=0x0800)");
  expect_match_error("tcp,icmp_type=3", "icmp_type: needs icmp first (nw_proto=1)");
  expect_match_error("ip,arp_op=1", "arp_op: needs arp first (dl_type=0x0806)");
  expect_match_error("nw_proto=6", "nw_proto: needs ip or arp first");
  expect_match_error("ip_proto=6", "ip_proto: needs ip first");
  expect_match_error("ip_dscp=1", "ip_dscp: needs ip first");
  expect_match_error("nw_tos=8", "nw_tos: needs ip first");
  expect_match_error("dl_vlan=0xffff,dl_vlan_pcp=1", "dl_vlan_pcp=1: needs a VLAN tag", "'dl_vlan=0xffff'");
}

// ---- actions: golden parses --------------------------------------------------------------

TEST(ParseActions, Drop) {
  EXPECT_EQ(actions_ok("drop"), ofp::InstructionList{});
  EXPECT_EQ(actions_ok("DROP"), ofp::InstructionList{});
}

TEST(ParseActions, Outputs) {
  using ofp::ActionOutput;
  namespace port = ofp::port;
  EXPECT_EQ(actions_ok("output:2,3, in_port normal,flood,all,local,controller,controller:128,output:LOCAL,CONTROLLER:7"),
            apply({ActionOutput{2, 0}, ActionOutput{3, 0}, ActionOutput{port::kInPort, 0},
                   ActionOutput{port::kNormal, 0}, ActionOutput{port::kFlood, 0}, ActionOutput{port::kAll, 0},
                   ActionOutput{port::kLocal, 0}, ActionOutput{port::kController, 0xffff},
                   ActionOutput{port::kController, 128}, ActionOutput{port::kLocal, 0},
                   ActionOutput{port::kController, 7}}));
}

TEST(ParseActions, ModActionsAreSetFields) {
  const auto tcp = match_ok("tcp");
  EXPECT_EQ(actions_ok("mod_dl_src:00:00:00:00:00:01,mod_dl_dst:00:00:00:00:00:02,mod_nw_src:1.2.3.4,"
                       "mod_nw_dst:5.6.7.8,mod_tp_src:10,mod_tp_dst:20",
                       tcp),
            apply({set(OxmField::kEthSrc, 1), set(OxmField::kEthDst, 2), set(OxmField::kIpv4Src, 0x01020304),
                   set(OxmField::kIpv4Dst, 0x05060708), set(OxmField::kTcpSrc, 10), set(OxmField::kTcpDst, 20)}));
  EXPECT_EQ(actions_ok("mod_tp_src:1,mod_tp_dst:2", match_ok("udp")),
            apply({set(OxmField::kUdpSrc, 1), set(OxmField::kUdpDst, 2)}));
  EXPECT_EQ(actions_ok("mod_tp_dst:2", match_ok("sctp")), apply({set(OxmField::kSctpDst, 2)}));
  EXPECT_EQ(actions_ok("mod_nw_tos:8,mod_nw_ecn:3", match_ok("ip")),
            apply({set(OxmField::kIpDscp, 2), set(OxmField::kIpEcn, 3)}));
}

TEST(ParseActions, Vlan) {
  // With a tag in the match, mod_vlan_vid is a set_field; without one it pushes a tag first,
  // as ovs-ofctl does for OpenFlow 1.1+.
  EXPECT_EQ(actions_ok("mod_vlan_vid:5,mod_vlan_pcp:2", match_ok("dl_vlan=1")),
            apply({set(OxmField::kVlanVid, 0x1005), set(OxmField::kVlanPcp, 2)}));
  EXPECT_EQ(actions_ok("mod_vlan_vid:5"), apply({ofp::ActionPushVlan{0x8100}, set(OxmField::kVlanVid, 0x1005)}));
  EXPECT_EQ(actions_ok("push_vlan:0x88a8,set_field:4101->vlan_vid,pop_vlan"),
            apply({ofp::ActionPushVlan{0x88a8}, set(OxmField::kVlanVid, 0x1005), ofp::ActionPopVlan{}}));
  EXPECT_EQ(actions_ok("strip_vlan", match_ok("dl_vlan=7")), apply({ofp::ActionPopVlan{}}));
}

TEST(ParseActions, OtherActions) {
  EXPECT_EQ(actions_ok("dec_ttl,group:7", match_ok("ip")), apply({ofp::ActionDecNwTtl{}, ofp::ActionGroup{7}}));
  EXPECT_EQ(actions_ok("set_field:0x10->metadata,set_field:00:00:00:00:00:09->dl_dst"),
            apply({set(OxmField::kMetadata, 16), set(OxmField::kEthDst, 9)}));
  EXPECT_EQ(actions_ok("set_field:1.1.1.1->nw_src,set_field:2->arp_op", match_ok("arp")),
            apply({set(OxmField::kArpSpa, 0x01010101), set(OxmField::kArpOp, 2)}));
  EXPECT_EQ(actions_ok("set_field:1->tp_dst", match_ok("udp")), apply({set(OxmField::kUdpDst, 1)}));
}

TEST(ParseActions, Instructions) {
  ofp::InstructionList want{ofp::InstrMeter{3}, ofp::InstrApplyActions{{ofp::ActionOutput{1, 0}}},
                            ofp::InstrClearActions{},
                            ofp::InstrWriteActions{{ofp::ActionOutput{2, 0}, ofp::ActionGroup{9}}},
                            ofp::InstrGotoTable{4}};
  EXPECT_EQ(actions_ok("meter:3,output:1,clear_actions,write_actions(output:2,group:9),goto_table:4"), want);
  EXPECT_EQ(actions_ok("goto_table:254"), (ofp::InstructionList{ofp::InstrGotoTable{254}}));
  EXPECT_EQ(actions_ok("write_actions()"), (ofp::InstructionList{ofp::InstrWriteActions{}}));
}

// ---- actions: one negative test per rule -------------------------------------------------

void expect_actions_error(std::string_view text, std::string_view token, std::string_view phrase = "",
                          const ofp::Match& m = {}) {
  auto a = parse_actions(text, m);
  ASSERT_FALSE(a.has_value()) << text;
  EXPECT_EQ(a.error().field, "actions");
  EXPECT_NE(a.error().message.find(token), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find(phrase), std::string::npos) << a.error().message;
}

TEST(ParseActionsError, Structure) {
  expect_actions_error("", "no actions", "drop");
  expect_actions_error("drop,output:1", "drop", "only action");
  expect_actions_error("resubmit(,1)", "resubmit(,1)", "unsupported");
  expect_actions_error("output:1,mod_nw_ttl:3", "mod_nw_ttl:3", "unsupported");
  expect_actions_error("apply_actions(output:1)", "apply_actions(output:1)", "default instruction");
  expect_actions_error("write_actions(goto_table:1)", "goto_table:1", "not allowed inside write_actions");
  expect_actions_error("write_actions(output:1", "write_actions(output:1", "expected write_actions(");
  expect_actions_error("pop_vlan:1", "pop_vlan:1", "takes no argument", match_ok("dl_vlan=1"));
}

TEST(ParseActionsError, InstructionOrderAndDuplicates) {
  expect_actions_error("goto_table:1,output:2", "output:2: actions must come before goto_table");
  expect_actions_error("output:1,meter:1", "meter:1: meter must come before actions");
  expect_actions_error("output:1,clear_actions,output:2", "output:2: actions must come before clear_actions");
  expect_actions_error("meter:1,meter:2", "meter:2", "duplicate meter");
  expect_actions_error("write_actions(output:1),write_actions(output:2)", "write_actions(output:2)", "duplicate");
}

TEST(ParseActionsError, Values) {
  expect_actions_error("output:abc", "output:abc", "not a port");
  expect_actions_error("output:ANY", "output:ANY", "not a valid output port");
  expect_actions_error("output:", "output:", "missing port");
  expect_actions_error("controller:65536", "controller:65536", "out of range");
  expect_actions_error("group:4294967041", "group:4294967041", "out of range");
  expect_actions_error("meter:0", "meter:0", "out of range (1..");
  expect_actions_error("goto_table:255", "goto_table:255", "out of range (0..254)");
  expect_actions_error("push_vlan:0x8101", "push_vlan:0x8101", "0x8100 or 0x88a8");
  expect_actions_error("mod_dl_src:00:00:00:00:00", "mod_dl_src:00:00:00:00:00", "MAC");
  expect_actions_error("mod_vlan_vid:4096", "mod_vlan_vid:4096", "out of range");
  expect_actions_error("mod_nw_tos:3", "mod_nw_tos:3", "multiple of 4", match_ok("ip"));
  expect_actions_error("mod_tp_src:65536", "mod_tp_src:65536", "out of range", match_ok("tcp"));
  expect_actions_error("set_field:1.2.3.4/255.0.0.0->ip_src", "set_field:1.2.3.4/255.0.0.0->ip_src", "masked",
                       match_ok("ip"));
  expect_actions_error("set_field:5->vlan_vid", "set_field:5->vlan_vid", "4101", match_ok("dl_vlan=1"));
  expect_actions_error("set_field:5", "set_field:5", "VALUE->FIELD");
}

TEST(ParseActionsError, Fields) {
  expect_actions_error("set_field:1->foo", "set_field:1->foo", "unknown field 'foo'");
  expect_actions_error("set_field:17->ip_proto", "set_field:17->ip_proto", "read-only", match_ok("ip"));
  expect_actions_error("set_field:0x800->eth_type", "eth_type", "read-only");
  expect_actions_error("set_field:5->in_port", "set_field:5->in_port", "read-only");
  expect_actions_error("set_field:8->nw_tos", "set_field:8->nw_tos", "mod_nw_tos", match_ok("ip"));
}

TEST(ParseActionsError, ConsistencyWithTheMatch) {
  expect_actions_error("mod_tp_src:10", "mod_tp_src:10: needs tcp, udp or sctp in the match");
  expect_actions_error("mod_tp_dst:10", "mod_tp_dst:10", "tcp, udp or sctp", match_ok("icmp"));
  expect_actions_error("mod_nw_src:1.2.3.4", "mod_nw_src:1.2.3.4: needs ip in the match", "", match_ok("arp"));
  expect_actions_error("set_field:5->tcp_dst", "set_field:5->tcp_dst: needs tcp in the match (nw_proto=6)", "",
                       match_ok("udp"));
  expect_actions_error("write_actions(set_field:5->tcp_dst)", "set_field:5->tcp_dst", "needs tcp");
  expect_actions_error("set_field:1->tp_src", "set_field:1->tp_src", "tcp, udp or sctp");
  expect_actions_error("set_field:1->arp_op", "set_field:1->arp_op: needs arp", "", match_ok("ip"));
  expect_actions_error("dec_ttl", "dec_ttl: needs ip in the match");
  expect_actions_error("pop_vlan", "pop_vlan: needs a VLAN tag");
  expect_actions_error("pop_vlan", "pop_vlan", "VLAN tag", match_ok("dl_vlan=0xffff"));
  expect_actions_error("dl_vlan=1", "dl_vlan=1", "unsupported");
  expect_actions_error("push_vlan:0x8100,pop_vlan,pop_vlan", "pop_vlan", "VLAN tag");
  expect_actions_error("set_field:4101->vlan_vid", "set_field:4101->vlan_vid: needs a VLAN tag");
  expect_actions_error("set_field:1->vlan_pcp", "set_field:1->vlan_pcp: needs a VLAN tag");
}

// ---- encodings and text compared with ovs-ofctl 3.1 --------------------------------------

struct OvsGolden {
  const char* name;
  const char* match;
  const char* actions;
  const char* ovs_match;    // what ovs-ofctl prints; nullptr where it prints NXM vlan_tci syntax
  const char* ovs_actions;
  const char* flow_mod_hex;  // OFPT_FLOW_MOD ADD, priority 32768, xid 2
};

constexpr OvsGolden kOvs[] = {
    {"tcp", "tcp,nw_dst=10.0.0.2,tp_dst=80", "output:2", "tcp,nw_dst=10.0.0.2,tp_dst=80", "output:2",
     "040e006800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001001d80000a0208"
     "00800018040a000002800014010680001c020050000000000400180000000000000010000000020000000000000000"},
    {"all_fields",
     "in_port=1,dl_src=00:11:22:33:44:55,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,dl_type=0x0800,dl_vlan=5,"
     "dl_vlan_pcp=3,nw_src=10.0.0.0/8,nw_dst=10.0.0.1,nw_proto=6,nw_tos=0x10,nw_ecn=1,tp_src=1,tp_dst=2,"
     "metadata=0x1/0xff",
     "drop",
     "tcp,metadata=0x1/0xff,in_port=1,dl_vlan=5,dl_vlan_pcp=3,dl_src=00:11:22:33:44:55,dl_dst=01:00:00:00:00:00/"
     "01:00:00:00:00:00,nw_src=10.0.0.0/8,nw_dst=10.0.0.1,nw_tos=16,nw_ecn=1,tp_src=1,tp_dst=2",
     "drop",
     "040e00b000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001007a800000040000"
     "0001800008060011223344558000070c01000000000001000000000080000a02080080000c02100580000e0103800017080a000000ff00000080"
     "0018040a00000180001001048000120101800014010680001a02000180001c02000280000510000000000000000100000000000000ff00000000"
     "0000"},
    {"arp", "arp,arp_op=1,nw_src=10.0.0.1,nw_dst=10.0.0.0/24,arp_sha=00:00:00:00:00:01,arp_tha=00:00:00:00:00:02", "drop",
     "arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,arp_op=1,arp_sha=00:00:00:00:00:01,arp_tha=00:00:00:00:00:02", "drop",
     "040e006800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001003880000a0208"
     "0680002a02000180002c040a00000180002f080a000000ffffff008000300600000000000180003206000000000002"},
    {"icmp", "icmp,icmp_type=8,icmp_code=0,nw_src=1.2.3.4", "drop", "icmp,nw_src=1.2.3.4,icmp_type=8,icmp_code=0", "drop",
     "040e005800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001002180000a0208"
     "00800016040102030480001401018000260108800028010000000000000000"},
    {"vlan_pcp_only", "dl_vlan_pcp=3", "drop", "dl_vlan_pcp=3", "drop",
     "040e004800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001001180000d0410"
     "00100080000e010300000000000000"},
    {"any_vlan", "vlan_vid=0x1000/0x1000", "drop", nullptr, "drop",
     "040e004000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000c80000d0410"
     "00100000000000"},
    {"no_vlan", "dl_vlan=0xffff", "drop", nullptr, "drop",
     "040e004000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000a80000c0200"
     "00000000000000"},
    {"ports", "in_port=LOCAL", "controller,output:CONTROLLER,controller:128,normal,flood,all,local,in_port,3",
     "in_port=LOCAL", "CONTROLLER:65535,CONTROLLER:65535,CONTROLLER:128,NORMAL,FLOOD,ALL,LOCAL,IN_PORT,output:3",
     "040e00d800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000c80000004ff"
     "fffffe00000000000400980000000000000010fffffffdffff00000000000000000010fffffffdffff00000000000000000010fffffffd0080"
     "00000000000000000010fffffffa000000000000000000000010fffffffb000000000000000000000010fffffffc0000000000000000000000"
     "10fffffffe000000000000000000000010fffffff8000000000000000000000010000000030000000000000000"},
    {"mods", "tcp",
     "mod_dl_src:00:00:00:00:00:01,mod_dl_dst:00:00:00:00:00:02,mod_nw_src:1.2.3.4,mod_nw_dst:5.6.7.8,mod_tp_src:10,"
     "mod_tp_dst:20,output:1",
     "tcp",
     "set_field:00:00:00:00:00:01->eth_src,set_field:00:00:00:00:00:02->eth_dst,set_field:1.2.3.4->ip_src,"
     "set_field:5.6.7.8->ip_dst,set_field:10->tcp_src,set_field:20->tcp_dst,output:1",
     "040e00b800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000f80000a0208"
     "008000140106000004007800000000001900108000080600000000000100000019001080000606000000000002000000190010800016040102"
     "030400000000001900108000180405060708000000000019001080001a02000a0000000000000019001080001c020014000000000000000000"
     "10000000010000000000000000"},
    {"udp_vlan", "udp",
     "mod_tp_src:1,mod_vlan_vid:5,push_vlan:0x8100,pop_vlan,strip_vlan,dec_ttl,group:7,set_field:10.0.0.1->ip_dst,3",
     "udp",
     "set_field:1->udp_src,push_vlan:0x8100,set_field:4101->vlan_vid,push_vlan:0x8100,pop_vlan,pop_vlan,dec_ttl,group:7,"
     "set_field:10.0.0.1->ip_dst,output:3",
     "040e00b800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000f80000a0208"
     "0080001401110000040078000000000019001080001e02000100000000000000110008810000000019001080000c0210050000000000000011"
     "000881000000001200080000000000120008000000000018000800000000001600080000000700190010800018040a00000100000000000000"
     "10000000030000000000000000"},
    {"instructions", "", "meter:3,clear_actions,write_actions(output:1,group:2),goto_table:4", "",
     "meter:3,clear_actions,write_actions(output:1,group:2),goto_table:4",
     "040e007000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff00000000000100040000000000"
     "06000800000003000500080000000000030020000000000000001000000001000000000000000000160008000000020001000804000000"},
    {"tos_ecn", "ip", "mod_nw_tos:8,mod_nw_ecn:1,dec_ttl,group:7", "ip",
     "set_field:2->ip_dscp,set_field:1->nw_ecn,dec_ttl,group:7",
     "040e007800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000a80000a0208"
     "000000000000000004003800000000001900108000100102000000000000000019001080001201010000000000000000180008000000000016"
     "000800000007"},
    {"pop_vlan", "dl_vlan=10", "pop_vlan,output:1", "dl_vlan=10", "pop_vlan,output:1",
     "040e006000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000a80000c0210"
     "0a0000000000000004002000000000001200080000000000000010000000010000000000000000"},
    {"arp_set", "arp",
     "set_field:2->arp_op,set_field:1.1.1.1->arp_spa,set_field:2.2.2.2->arp_tpa,set_field:00:00:00:00:00:01->arp_sha,"
     "set_field:00:00:00:00:00:02->arp_tha,output:1",
     "arp",
     "set_field:2->arp_op,set_field:1.1.1.1->arp_spa,set_field:2.2.2.2->arp_tpa,set_field:00:00:00:00:00:01->arp_sha,"
     "set_field:00:00:00:00:00:02->arp_tha,output:1",
     "040e00a800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000a80000a0208"
     "0600000000000000040068000000000019001080002a0200020000000000000019001080002c04010101010000000000190010800"
     "02e040202020200000000001900108000300600000000000100000019001080003206000000000002000000000010000000010000000000000000"},
    {"icmp_set", "icmp", "set_field:3->icmp_type,set_field:1->icmp_code,output:1", "icmp",
     "set_field:3->icmp_type,set_field:1->icmp_code,output:1",
     "040e007800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001000f80000a0208"
     "008000140101000004003800000000001900108000260103000000000000000019001080002801010000000000000000000010000000010000"
     "000000000000"},
    {"metadata_set", "", "set_field:0x10->metadata,push_vlan:0x88a8,set_field:3->vlan_pcp,output:1", "",
     "set_field:0x10->metadata,push_vlan:0x88a8,set_field:3->vlan_pcp,output:1",
     "040e007800000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff00000000000100040000000000"
     "04004000000000001900108000040800000000000000100011000888a800000019001080000e01030000000000000000000010000000010000"
     "000000000000"},
    {"sctp", "sctp,tp_dst=9", "mod_tp_src:7,output:1", "sctp,tp_dst=9", "set_field:7->sctp_src,output:1",
     "040e007000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001001580000a0208"
     "00800014018480002402000900000000040028000000000019001080002202000700000000000000000010000000010000000000000000"},
    {"udp_set", "udp,tp_src=53", "set_field:54->udp_dst,output:2", "udp,tp_src=53", "set_field:54->udp_dst,output:2",
     "040e007000000002000000000000000000000000000000000000000000008000ffffffffffffffffffffffff000000000001001580000a0208"
     "00800014011180001e02003500000000040028000000000019001080002002003600000000000000000010000000020000000000000000"},
};

TEST(OvsGolden, FlowModBytesMatchOvsOfctl) {
  for (const auto& g : kOvs) {
    SCOPED_TRACE(g.name);
    auto fm = flow_add_from_json(Json{{"match", g.match}, {"actions", g.actions}});
    ASSERT_TRUE(fm.has_value()) << fm.error().message;
    EXPECT_EQ(encoded(*fm), g.flow_mod_hex);
  }
}

TEST(OvsGolden, OvsBytesDecodeToWhatWeParse) {
  for (const auto& g : kOvs) {
    SCOPED_TRACE(g.name);
    auto msg = ofp::decode(from_hex(g.flow_mod_hex));
    ASSERT_TRUE(msg.has_value()) << msg.error().detail;
    const auto& fm = std::get<ofp::FlowMod>(msg->body);
    const auto m = match_ok(g.match);
    EXPECT_EQ(fm.match, m);
    EXPECT_EQ(fm.instructions, actions_ok(g.actions, m));
  }
}

TEST(OvsGolden, FormatPrintsWhatOvsOfctlPrints) {
  for (const auto& g : kOvs) {
    SCOPED_TRACE(g.name);
    const auto m = match_ok(g.match);
    if (g.ovs_match != nullptr) {
      EXPECT_EQ(format_match(m), g.ovs_match);
    }
    EXPECT_EQ(format_actions(actions_ok(g.actions, m)), g.ovs_actions);
  }
}

// ---- format round trips ------------------------------------------------------------------

TEST(Format, RoundTripsCanonicalInput) {
  const char* matches[] = {
      "", "in_port=1", "in_port=CONTROLLER", "metadata=0x1/0xff", "dl_src=00:11:22:33:44:55,dl_dst=ff:ff:ff:ff:ff:ff",
      "dl_type=0x1234", "dl_type=0x86dd,nw_proto=6,tcp_dst=80", "dl_vlan=0", "dl_vlan=4095", "dl_vlan=0xffff",
      "vlan_vid=0x1000/0x1000", "vlan_vid=0x0005", "vlan_vid=0x1001/0x1001", "dl_vlan_pcp=7", "dl_vlan=9,dl_vlan_pcp=2",
      "vlan_vid=0x1000/0x1000,dl_vlan_pcp=1", "ip", "ip,nw_src=10.0.0.0/255.0.255.0,nw_dst=1.2.3.4/31",
      "ip,nw_proto=47", "ip,nw_tos=252,nw_ecn=3", "tcp,tp_src=1,tp_dst=65535", "udp,tp_dst=53", "sctp,tp_src=9",
      "icmp,icmp_type=3,icmp_code=1",
      ("arp,arp_spa=1.1.1.1,arp_tpa=2.2.2.0/24,arp_op=2,arp_sha=00:00:00:00:00:01/ff:ff:ff:00:00:00,"
       "arp_tha=00:00:00:00:00:02"),
  };
  for (const char* text : matches) {
    SCOPED_TRACE(text);
    const auto m = match_ok(text);
    const std::string s = format_match(m);
    EXPECT_EQ(match_ok(s), m) << s;
    EXPECT_EQ(format_match(match_ok(s)), s);
  }
  struct Case {
    const char* match;
    const char* actions;
  };
  const Case actions[] = {
      {"", "drop"},
      {"", "output:1,IN_PORT,NORMAL,FLOOD,ALL,LOCAL,CONTROLLER:65535,CONTROLLER:0"},
      {"", "meter:1,group:4294967040,clear_actions,write_actions(output:2),goto_table:1"},
      {"", "write_actions()"},
      {"", "push_vlan:0x8100,set_field:4101->vlan_vid,set_field:7->vlan_pcp,pop_vlan"},
      {"tcp", "set_field:1->tcp_src,set_field:2->tcp_dst,set_field:1.2.3.4->ip_src,set_field:2->ip_dscp,"
              "set_field:1->nw_ecn,dec_ttl"},
      {"icmp", "set_field:3->icmp_type,set_field:4->icmp_code"},
      {"", "set_field:0xffffffffffffffff->metadata,set_field:00:00:00:00:00:01->eth_dst"},
  };
  for (const auto& c : actions) {
    SCOPED_TRACE(c.actions);
    const auto m = match_ok(c.match);
    const auto a = actions_ok(c.actions, m);
    const std::string s = format_actions(a);
    EXPECT_EQ(s, c.actions);
    EXPECT_EQ(actions_ok(s, m), a);
  }
}

TEST(Format, PrintsStructsItDidNotParse) {
  // Flows read from a switch: an Apply-Actions with nothing in it, output max_len, an OXM the
  // codec passes through, prerequisites missing.
  ofp::InstructionList empty_apply;
  empty_apply.push_back(ofp::InstrApplyActions{});
  EXPECT_EQ(format_actions(empty_apply), "drop");
  EXPECT_EQ(format_actions(apply({ofp::ActionOutput{2, 0xffff}, ofp::ActionOutput{ofp::port::kAny, 0}})),
            "output:2,output:ANY");
  EXPECT_EQ(format_match(make({f(OxmField::kTcpDst, 80)})), "tcp_dst=80");
  EXPECT_EQ(format_match(make({f(static_cast<OxmField>(40), 5)})), "oxm_field_40=0x5");
  EXPECT_EQ(format_match(make({fm(OxmField::kIpDscp, 8, 0x38)})), "ip_dscp=8/0x38");
}

// The OFPMP_FLOW reply that `ovs-ofctl ofp-print` printed as the four lines below.
constexpr const char* kFlowReplyHex =
    "0413015000000001000100000000000000680000000000010df28e800064000a0000000000000000000000000000000000000000000000000000"
    "0000000000000001001d80000a020800800018040a000002800014010680001c02005000000000040018000000000000001000000002ffff0000"
    "000000000038030000000005000000008000000000140001000000000000000000000abc000000000000000700000000000002bc000100040000"
    "0000005001000000000000000005000000000000000300000000000000000000000000000000000000000000000000000000000100040000000000"
    "040018000000000000001000000001ffff000000000000005001000000000c075bcd150007000100020002000000000000000000000001000000"
    "00000000010000000000000001000100040000000000040018000000000000001000000001ffff000000000000";
constexpr const char* kOvsDumpFlows[] = {
    "cookie=0x0, duration=1.234s, table=0, n_packets=0, n_bytes=0, idle_timeout=10, priority=100,tcp,nw_dst=10.0.0.2,"
    "tp_dst=80 actions=output:2",
    "cookie=0xabc, duration=5s, table=3, n_packets=7, n_bytes=700, hard_timeout=20, send_flow_rem actions=drop",
    "cookie=0x0, duration=0.000000005s, table=1, n_packets=0, n_bytes=0, send_flow_rem check_overlap priority=0 "
    "actions=output:1",
    "cookie=0x1, duration=12.123456789s, table=1, n_packets=1, n_bytes=1, idle_timeout=1, hard_timeout=2, check_overlap "
    "priority=7 actions=output:1",
};

TEST(Format, FlowLinesMatchOvsDumpFlows) {
  auto msg = ofp::decode(from_hex(kFlowReplyHex));
  ASSERT_TRUE(msg.has_value()) << msg.error().detail;
  const auto& flows = std::get<std::vector<ofp::FlowStats>>(std::get<ofp::MultipartReply>(msg->body).body);
  ASSERT_EQ(flows.size(), std::size(kOvsDumpFlows));
  for (size_t i = 0; i < flows.size(); ++i) EXPECT_EQ(format_flow(flows[i]), kOvsDumpFlows[i]);

  ofp::FlowStats all;
  all.priority = 32768;
  EXPECT_EQ(format_flow(all), "cookie=0x0, duration=0s, table=0, n_packets=0, n_bytes=0, actions=drop");
}

// ---- REST bodies -------------------------------------------------------------------------

void expect_json_error(const Expected<ofp::FlowMod, FieldError>& r, std::string_view field, std::string_view token) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, field);
  EXPECT_NE(r.error().message.find(token), std::string::npos) << r.error().message;
}

TEST(FlowAddJson, Defaults) {
  auto fm = flow_add_from_json(Json{{"actions", "output:1"}});
  ASSERT_TRUE(fm.has_value()) << fm.error().message;
  EXPECT_EQ(fm->command, ofp::FlowModCommand::kAdd);
  EXPECT_EQ(fm->priority, 32768);
  EXPECT_EQ(fm->table_id, 0);
  EXPECT_EQ(fm->idle_timeout, 0);
  EXPECT_EQ(fm->hard_timeout, 0);
  EXPECT_EQ(fm->cookie, 0u);
  EXPECT_EQ(fm->flags, 0);
  EXPECT_EQ(fm->buffer_id, ofp::kNoBuffer);
  EXPECT_EQ(fm->match, ofp::Match{});
  EXPECT_EQ(fm->instructions, apply({ofp::ActionOutput{1, 0}}));
}

TEST(FlowAddJson, AllFieldsNumbersAndStrings) {
  const ofp::Match tcp = match_ok("tcp");
  for (const Json& body :
       {Json{{"match", "tcp"}, {"actions", "mod_tp_dst:80,output:2"}, {"priority", 100}, {"table", 3},
             {"idle_timeout", 10}, {"hard_timeout", 20}, {"cookie", 0xabcdef}, {"send_flow_rem", true},
             {"check_overlap", true}},
        Json{{"match", "tcp"}, {"actions", "mod_tp_dst:80,output:2"}, {"priority", "100"}, {"table", "0x3"},
             {"idle_timeout", "10"}, {"hard_timeout", "0x14"}, {"cookie", "0xabcdef"}, {"send_flow_rem", "true"},
             {"check_overlap", "1"}}}) {
    SCOPED_TRACE(body.dump());
    auto fm = flow_add_from_json(body);
    ASSERT_TRUE(fm.has_value()) << fm.error().message;
    EXPECT_EQ(fm->priority, 100);
    EXPECT_EQ(fm->table_id, 3);
    EXPECT_EQ(fm->idle_timeout, 10);
    EXPECT_EQ(fm->hard_timeout, 20);
    EXPECT_EQ(fm->cookie, 0xabcdefu);
    EXPECT_EQ(fm->flags, ofp::kFlowFlagSendFlowRem | ofp::kFlowFlagCheckOverlap);
    EXPECT_EQ(fm->match, tcp);
    EXPECT_EQ(fm->instructions, apply({set(OxmField::kTcpDst, 80), ofp::ActionOutput{2, 0}}));
  }
  auto big = flow_add_from_json(Json{{"actions", "drop"}, {"cookie", "0xffffffffffffffff"}});
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->cookie, ~uint64_t{0});
}

TEST(FlowAddJson, Errors) {
  expect_json_error(flow_add_from_json(Json::array()), "body", "JSON object");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"prio", 1}}), "prio", "unknown field 'prio'");
  expect_json_error(flow_add_from_json(Json{{"match", "ip"}}), "actions", "required");
  expect_json_error(flow_add_from_json(Json{{"actions", 5}}), "actions", "must be a string");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"match", Json::array()}}), "match", "must be a string");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"priority", true}}), "priority", "must be a number");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"priority", 65536}}), "priority", "priority=65536");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"priority", -1}}), "priority", "priority=-1");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"priority", 1.5}}), "priority", "whole number");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"priority", "ten"}}), "priority", "not a number");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"table", 255}}), "table", "out of range (0..254)");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"idle_timeout", "70000"}}), "idle_timeout",
                    "idle_timeout=70000");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"hard_timeout", Json::object()}}), "hard_timeout",
                    "object");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"cookie", "0x1ffffffffffffffff"}}), "cookie",
                    "out of range");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"send_flow_rem", "maybe"}}), "send_flow_rem",
                    "true or false");
  expect_json_error(flow_add_from_json(Json{{"actions", "drop"}, {"check_overlap", 1}}), "check_overlap", "boolean");
  // The match and actions parsers' errors pass through with their field.
  expect_json_error(flow_add_from_json(Json{{"match", "tp_dst=80"}, {"actions", "drop"}}), "match", "tp_dst");
  expect_json_error(flow_add_from_json(Json{{"match", "udp"}, {"actions", "set_field:1->tcp_src"}}), "actions",
                    "set_field:1->tcp_src");
}

TEST(FlowFilterJson, Fields) {
  auto f = flow_filter_from_json(Json{{"match", "tcp"}, {"table", "3"}, {"cookie", "0x10/0xff"}, {"out_port", "LOCAL"},
                                      {"priority", "100"}, {"strict", "true"}});
  ASSERT_TRUE(f.has_value()) << f.error().message;
  EXPECT_EQ(f->match, match_ok("tcp"));
  EXPECT_EQ(f->table_id, 3);
  EXPECT_EQ(f->cookie, 0x10u);
  EXPECT_EQ(f->cookie_mask, 0xffu);
  EXPECT_EQ(f->out_port, ofp::port::kLocal);
  EXPECT_EQ(f->priority, uint16_t{100});
  EXPECT_TRUE(f->strict);

  auto d = flow_filter_from_json(Json::object());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->table_id, ofp::kTableAll);
  EXPECT_EQ(d->cookie_mask, 0u);
  EXPECT_EQ(d->out_port, ofp::port::kAny);
  EXPECT_FALSE(d->priority.has_value());
  EXPECT_FALSE(d->strict);

  auto n = flow_filter_from_json(Json{{"table", "all"}, {"cookie", 16}, {"out_port", 7}});
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->table_id, ofp::kTableAll);
  EXPECT_EQ(n->cookie, 16u);
  EXPECT_EQ(n->cookie_mask, ~uint64_t{0});  // a bare cookie matches exactly
  EXPECT_EQ(n->out_port, 7u);
  auto s = flow_filter_from_json(Json{{"cookie", "0x10"}, {"out_port", "controller"}, {"strict", false}});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->cookie_mask, ~uint64_t{0});
  EXPECT_EQ(s->out_port, ofp::port::kController);
}

TEST(FlowFilterJson, Errors) {
  auto check = [](const Json& body, std::string_view field, std::string_view token) {
    auto r = flow_filter_from_json(body);
    ASSERT_FALSE(r.has_value()) << body.dump();
    EXPECT_EQ(r.error().field, field);
    EXPECT_NE(r.error().message.find(token), std::string::npos) << r.error().message;
  };
  check(Json{{"strict", true}}, "strict", "priority");
  check(Json{{"strict", "true"}, {"match", "ip"}}, "strict", "priority");
  check(Json{{"actions", "drop"}}, "actions", "unknown field");
  check(Json{{"table", 255}}, "table", "\"all\"");
  check(Json{{"table", "some"}}, "table", "table=some");
  check(Json{{"cookie", "0x10/zz"}}, "cookie", "cookie=0x10/zz");
  check(Json{{"cookie", true}}, "cookie", "must be a number");
  check(Json{{"out_port", "uplink"}}, "out_port", "out_port=uplink");
  check(Json{{"priority", "high"}}, "priority", "priority=high");
  check(Json{{"strict", "yes please"}}, "strict", "true or false");
  check(Json{{"match", "nw_dst=1.2.3.4"}}, "match", "nw_dst");
  check(Json{{"match", 7}}, "match", "must be a string");
}

TEST(FlowFilter, RequestsMatchOvsOfctl) {
  // ovs-ofctl dump-flows / del-flows 'table=1,cookie=0x10/0xff,out_port=2,tcp,nw_dst=10.0.0.2'
  auto f = flow_filter_from_json(Json{{"table", 1}, {"cookie", "0x10/0xff"}, {"out_port", 2}, {"match", "tcp,nw_dst=10.0.0.2"}});
  ASSERT_TRUE(f.has_value()) << f.error().message;
  ofp::MultipartRequest mp;
  mp.type = ofp::MultipartType::kFlow;
  mp.body = f->to_stats_request();
  EXPECT_EQ(encoded(mp),
            "041200480000000200010000000000000100000000000002ffffffff00000000000000000000001000000000000000ff00010017800"
            "00a020800800018040a000002800014010600");
  EXPECT_EQ(encoded(f->to_delete()),
            "040e004800000002000000000000001000000000000000ff0103000000008000ffffffff00000002ffffffff0000000000010017800"
            "00a020800800018040a000002800014010600");
  // ovs-ofctl del-flows --strict 'priority=100,tcp,nw_dst=10.0.0.2'
  auto s = flow_filter_from_json(Json{{"priority", 100}, {"strict", true}, {"match", "tcp,nw_dst=10.0.0.2"}});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->to_delete().command, ofp::FlowModCommand::kDeleteStrict);
  EXPECT_EQ(encoded(s->to_delete()),
            "040e00480000000200000000000000000000000000000000ff04000000000064ffffffffffffffffffffffff0000000000010017800"
            "00a020800800018040a000002800014010600");
}

TEST(FlowFilter, Accepts) {
  ofp::FlowStats flow;
  flow.table_id = 2;
  flow.priority = 100;
  flow.cookie = 0x1234;
  flow.match = match_ok("tcp,nw_dst=10.0.0.2,tp_dst=80");

  FlowFilter any;
  EXPECT_TRUE(any.accepts(flow));

  FlowFilter prio;
  prio.priority = 100;
  EXPECT_TRUE(prio.accepts(flow));
  prio.priority = 99;
  EXPECT_FALSE(prio.accepts(flow));

  FlowFilter table;
  table.table_id = 2;
  EXPECT_TRUE(table.accepts(flow));
  table.table_id = 0;
  EXPECT_FALSE(table.accepts(flow));

  FlowFilter cookie;
  cookie.cookie = 0x34;
  cookie.cookie_mask = 0xff;
  EXPECT_TRUE(cookie.accepts(flow));
  cookie.cookie = 0x35;
  EXPECT_FALSE(cookie.accepts(flow));

  // Non-strict: the switch did the subset matching; accepts leaves the match alone.
  FlowFilter loose;
  loose.match = match_ok("udp");
  EXPECT_TRUE(loose.accepts(flow));

  // Strict: exactly the same fields, in whatever order the switch returned them.
  FlowFilter strict;
  strict.strict = true;
  strict.priority = 100;
  strict.match = match_ok("tcp,nw_dst=10.0.0.2,tp_dst=80");
  EXPECT_TRUE(strict.accepts(flow));
  ofp::FlowStats reordered = flow;
  std::reverse(reordered.match.fields.begin(), reordered.match.fields.end());
  for (auto& t : reordered.match.fields)
    if (t.field == OxmField::kIpv4Dst) t.mask = 0xffffffff;  // all-ones mask == exact
  EXPECT_TRUE(strict.accepts(reordered));
  strict.match = match_ok("tcp,nw_dst=10.0.0.2");
  EXPECT_FALSE(strict.accepts(flow));  // a subset is not enough
  strict.match = match_ok("tcp,nw_dst=10.0.0.2,tp_dst=80");
  strict.priority = 101;
  EXPECT_FALSE(strict.accepts(flow));
}

}  // namespace
}  // namespace sdn::northbound
