// Golden bytes both ways for every supported multipart request and reply body (7.3.5).
#include "unit/ofp/test_util.hpp"

namespace sdn::ofp::test {
namespace {

MultipartRequest req(MultipartType t, decltype(MultipartRequest::body) body = {}) {
  MultipartRequest r;
  r.type = t;
  r.body = std::move(body);
  return r;
}
MultipartReply rep(MultipartType t, decltype(MultipartReply::body) body, uint16_t flags = 0) {
  MultipartReply r;
  r.type = t;
  r.flags = flags;
  r.body = std::move(body);
  return r;
}
Port port(uint32_t no, uint64_t hw, std::string name, uint32_t config, uint32_t state) {
  Port p;
  p.port_no = no;
  p.hw_addr = hw;
  p.name = std::move(name);
  p.config = config;
  p.state = state;
  p.curr = 0x802;
  p.curr_speed = 10000000;
  p.max_speed = 10000000;
  return p;
}

TEST(OfpGoldenMultipart, Requests) {
  expect_golden("mp_desc_request", {20, req(MultipartType::kDesc)});
  expect_golden("mp_flow_request", {21, req(MultipartType::kFlow, FlowStatsRequest{})});
  FlowStatsRequest agg;
  agg.table_id = 1;
  agg.out_port = 2;
  agg.cookie = 0x10;
  agg.cookie_mask = 0xff;
  agg.match.set(OxmField::kInPort, 1);
  expect_golden("mp_aggregate_request", {22, req(MultipartType::kAggregate, agg)});
  expect_golden("mp_table_request", {23, req(MultipartType::kTable)});
  expect_golden("mp_port_stats_request", {24, req(MultipartType::kPortStats, PortStatsRequest{port::kAny})});
  expect_golden("mp_group_desc_request", {25, req(MultipartType::kGroupDesc)});
  expect_golden("mp_meter_request", {26, req(MultipartType::kMeter, MeterStatsRequest{kMeterAll})});
  expect_golden("mp_port_desc_request", {27, req(MultipartType::kPortDesc)});
}

TEST(OfpGoldenMultipart, DescReply) {
  expect_golden("mp_desc_reply",
                {20, rep(MultipartType::kDesc, Desc{"Nicira, Inc.", "Open vSwitch", "3.1.0", "None", "s1"})});
}

TEST(OfpGoldenMultipart, FlowReplyKeepsReplyMore) {
  std::vector<FlowStats> v(2);
  v[0].duration_sec = 5;
  v[0].duration_nsec = 100;
  v[0].priority = 100;
  v[0].flags = kFlowFlagSendFlowRem;
  v[0].cookie = 0x10;
  v[0].packet_count = 3;
  v[0].byte_count = 180;
  v[0].match.set(OxmField::kInPort, 1);
  v[0].instructions.push_back(InstrApplyActions{{ActionOutput{2, 0xffff}}});
  v[1].duration_sec = 9;
  v[1].packet_count = 7;
  v[1].byte_count = 420;
  v[1].instructions.push_back(InstrApplyActions{{ActionOutput{port::kController, 0xffff}}});
  expect_golden("mp_flow_reply", {21, rep(MultipartType::kFlow, v, kMultipartMore)});
}

TEST(OfpGoldenMultipart, AggregateAndTableReplies) {
  expect_golden("mp_aggregate_reply", {22, rep(MultipartType::kAggregate, AggregateStats{10, 600, 2})});
  expect_golden("mp_table_reply",
                {23, rep(MultipartType::kTable, std::vector<TableStats>{{0, 2, 100, 90}, {1, 0, 10, 0}})});
}

TEST(OfpGoldenMultipart, PortStatsReply) {
  PortStats p;
  p.port_no = 1;
  p.rx_packets = 10;
  p.tx_packets = 20;
  p.rx_bytes = 1000;
  p.tx_bytes = 2000;
  p.rx_dropped = 1;
  p.tx_dropped = 2;
  p.rx_errors = 3;
  p.tx_errors = 4;
  p.rx_frame_err = 5;
  p.rx_over_err = 6;
  p.rx_crc_err = 7;
  p.collisions = 8;
  p.duration_sec = 30;
  p.duration_nsec = 500;
  expect_golden("mp_port_stats_reply", {24, rep(MultipartType::kPortStats, std::vector<PortStats>{p})});
}

TEST(OfpGoldenMultipart, GroupDescReply) {
  GroupDesc g;
  g.type = 3;  // FAST_FAILOVER
  g.group_id = 5;
  g.buckets.push_back(Bucket{0, 1, kGroupAny, {ActionOutput{1, 0xffff}}});
  g.buckets.push_back(Bucket{0, 2, kGroupAny, {ActionOutput{2, 0xffff}}});
  expect_golden("mp_group_desc_reply", {25, rep(MultipartType::kGroupDesc, std::vector<GroupDesc>{g})});
}

TEST(OfpGoldenMultipart, MeterStatsReply) {
  MeterStats m;
  m.meter_id = 1;
  m.flow_count = 2;
  m.packet_in_count = 50;
  m.byte_in_count = 5000;
  m.duration_sec = 12;
  m.duration_nsec = 34;
  m.bands.push_back(MeterBandStats{4, 400});
  expect_golden("mp_meter_reply", {26, rep(MultipartType::kMeter, std::vector<MeterStats>{m})});
}

TEST(OfpGoldenMultipart, PortDescReply) {
  std::vector<Port> v{port(1, 0x001122334455ULL, "eth1", 0, 0),
                      port(port::kLocal, 0x0a0b0c0d0e0fULL, "s1", kPortConfigPortDown, kPortStateLinkDown)};
  expect_golden("mp_port_desc_reply", {27, rep(MultipartType::kPortDesc, v)});
}

}  // namespace
}  // namespace sdn::ofp::test
