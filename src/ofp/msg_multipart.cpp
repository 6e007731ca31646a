// MULTIPART_REQUEST / MULTIPART_REPLY (OpenFlow 1.3.5 section 7.3.5): DESC, FLOW, AGGREGATE,
// TABLE, PORT_STATS, GROUP_DESC, METER (stats), METER_FEATURES and PORT_DESC bodies. Flags (REQ_MORE /
// REPLY_MORE) are carried through untouched; reassembly is the session's job.
#include <algorithm>

#include "ofp/codec_internal.hpp"

namespace sdn::ofp::detail {
namespace {

using wire::Reader;
using wire::Writer;

constexpr size_t kFlowStatsReqFixed = 32; // ofp_flow_stats_request before the match
constexpr size_t kPortStatsReqLen = 8;    // ofp_port_stats_request
constexpr size_t kMeterReqLen = 8;        // ofp_meter_multipart_request
constexpr size_t kDescStrLen = 256;       // DESC_STR_LEN
constexpr size_t kSerialNumLen = 32;      // SERIAL_NUM_LEN
constexpr size_t kDescLen = 4 * kDescStrLen + kSerialNumLen;  // 1056
constexpr size_t kFlowStatsFixed = 48;    // ofp_flow_stats before the match
constexpr size_t kAggregateLen = 24;
constexpr size_t kTableStatsLen = 24;
constexpr size_t kPortStatsLen = 112;
constexpr size_t kGroupDescFixed = 8;
constexpr size_t kMeterStatsFixed = 40;
constexpr size_t kMeterBandStatsLen = 16;
constexpr size_t kMeterFeaturesLen = 16;  // ofp_meter_features (7.3.5.11)

Unexpected<Error> bad_multipart(const char* detail) {
  return wire::fail(Errc::kBadMultipart, err::kBadRequest, err::kBrcBadMultipart, detail);
}

Result<void> expect_len(std::span<const uint8_t> b, size_t n, const char* detail) {
  if (b.size() < n) return wire::truncated(detail);
  if (b.size() > n) return wire::bad_len(detail);
  return {};
}

// Fixed-size elements: the body must be a whole number of them.
Result<void> expect_multiple(std::span<const uint8_t> b, size_t n, const char* detail) {
  if (b.size() % n != 0) return wire::bad_len(detail);
  return {};
}

// ---- small element codecs ----

void get_str(Reader& r, size_t n, std::string& s) {
  std::span<const uint8_t> raw;
  (void)r.try_pull(n, raw);  // callers checked the total size
  const auto nul = std::find(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(n - 1), uint8_t{0});
  s.assign(raw.begin(), nul);
}
Result<void> check_str(const std::string& s, size_t n) {
  if (s.size() >= n || s.find('\0') != std::string::npos) return wire::bad_value("desc: string too long or has NUL");
  return {};
}

Result<void> decode_desc(std::span<const uint8_t> b, Desc& d) {
  SDN_OFP_TRY(expect_len(b, kDescLen, "desc: body != 1056 bytes"));
  Reader r(b);
  get_str(r, kDescStrLen, d.mfr_desc);
  get_str(r, kDescStrLen, d.hw_desc);
  get_str(r, kDescStrLen, d.sw_desc);
  get_str(r, kSerialNumLen, d.serial_num);
  get_str(r, kDescStrLen, d.dp_desc);
  return {};
}
Result<void> encode_desc(const Desc& d, Writer& w) {
  SDN_OFP_TRY(check_str(d.mfr_desc, kDescStrLen));
  SDN_OFP_TRY(check_str(d.hw_desc, kDescStrLen));
  SDN_OFP_TRY(check_str(d.sw_desc, kDescStrLen));
  SDN_OFP_TRY(check_str(d.serial_num, kSerialNumLen));
  SDN_OFP_TRY(check_str(d.dp_desc, kDescStrLen));
  w.str(d.mfr_desc, kDescStrLen);
  w.str(d.hw_desc, kDescStrLen);
  w.str(d.sw_desc, kDescStrLen);
  w.str(d.serial_num, kSerialNumLen);
  w.str(d.dp_desc, kDescStrLen);
  return {};
}

Result<void> decode_flow_stats_request(std::span<const uint8_t> b, FlowStatsRequest& q) {
  Reader r(b);
  if (r.remaining() < kFlowStatsReqFixed) return wire::truncated("flow_stats_request: shorter than fixed part");
  (void)r.u8(q.table_id);
  (void)r.skip(3);
  (void)r.u32(q.out_port);
  (void)r.u32(q.out_group);
  (void)r.skip(4);
  (void)r.u64(q.cookie);
  (void)r.u64(q.cookie_mask);
  SDN_OFP_TRY(decode_match(r, OxmPolicy::kStrict, q.match));
  if (!r.empty()) return wire::bad_len("flow_stats_request: bytes after the match");
  return {};
}
Result<void> encode_flow_stats_request(const FlowStatsRequest& q, Writer& w) {
  w.u8(q.table_id);
  w.zeros(3);
  w.u32(q.out_port);
  w.u32(q.out_group);
  w.zeros(4);
  w.u64(q.cookie);
  w.u64(q.cookie_mask);
  return encode_match(q.match, w);
}

Result<void> decode_flow_stats(std::span<const uint8_t> b, std::vector<FlowStats>& out) {
  Reader r(b);
  while (!r.empty()) {
    uint16_t len = 0;
    if (!r.peek_u16(0, len)) return wire::truncated("flow_stats: length field truncated");
    if (len < kFlowStatsFixed + 8 || len % 8 != 0) return wire::bad_len("flow_stats: length < 56 or not a multiple of 8");
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return wire::truncated("flow_stats: length exceeds body");
    Reader e(one);
    FlowStats& f = out.emplace_back();
    (void)e.skip(2);
    (void)e.u8(f.table_id);
    (void)e.skip(1);
    (void)e.u32(f.duration_sec);
    (void)e.u32(f.duration_nsec);
    (void)e.u16(f.priority);
    (void)e.u16(f.idle_timeout);
    (void)e.u16(f.hard_timeout);
    (void)e.u16(f.flags);
    (void)e.skip(4);
    (void)e.u64(f.cookie);
    (void)e.u64(f.packet_count);
    (void)e.u64(f.byte_count);
    SDN_OFP_TRY(decode_match(e, OxmPolicy::kStrict, f.match));
    SDN_OFP_TRY(decode_instructions(e.rest(), f.instructions));
  }
  return {};
}
Result<void> encode_flow_stats(const std::vector<FlowStats>& v, Writer& w) {
  for (const auto& f : v) {
    const size_t start = w.pos();
    w.u16(0);
    w.u8(f.table_id);
    w.zeros(1);
    w.u32(f.duration_sec);
    w.u32(f.duration_nsec);
    w.u16(f.priority);
    w.u16(f.idle_timeout);
    w.u16(f.hard_timeout);
    w.u16(f.flags);
    w.zeros(4);
    w.u64(f.cookie);
    w.u64(f.packet_count);
    w.u64(f.byte_count);
    SDN_OFP_TRY(encode_match(f.match, w));
    SDN_OFP_TRY(encode_instructions(f.instructions, w));
    w.patch16(start, w.pos() - start);
  }
  return {};
}

Result<void> decode_aggregate(std::span<const uint8_t> b, AggregateStats& a) {
  SDN_OFP_TRY(expect_len(b, kAggregateLen, "aggregate: body != 24 bytes"));
  Reader r(b);
  (void)r.u64(a.packet_count);
  (void)r.u64(a.byte_count);
  (void)r.u32(a.flow_count);
  return {};
}
void encode_aggregate(const AggregateStats& a, Writer& w) {
  w.u64(a.packet_count);
  w.u64(a.byte_count);
  w.u32(a.flow_count);
  w.zeros(4);
}

Result<void> decode_table_stats(std::span<const uint8_t> b, std::vector<TableStats>& out) {
  SDN_OFP_TRY(expect_multiple(b, kTableStatsLen, "table_stats: body not a multiple of 24"));
  Reader r(b);
  while (!r.empty()) {
    TableStats& t = out.emplace_back();
    (void)r.u8(t.table_id);
    (void)r.skip(3);
    (void)r.u32(t.active_count);
    (void)r.u64(t.lookup_count);
    (void)r.u64(t.matched_count);
  }
  return {};
}
void encode_table_stats(const std::vector<TableStats>& v, Writer& w) {
  for (const auto& t : v) {
    w.u8(t.table_id);
    w.zeros(3);
    w.u32(t.active_count);
    w.u64(t.lookup_count);
    w.u64(t.matched_count);
  }
}

Result<void> decode_port_stats(std::span<const uint8_t> b, std::vector<PortStats>& out) {
  SDN_OFP_TRY(expect_multiple(b, kPortStatsLen, "port_stats: body not a multiple of 112"));
  Reader r(b);
  while (!r.empty()) {
    PortStats& p = out.emplace_back();
    (void)r.u32(p.port_no);
    (void)r.skip(4);
    for (uint64_t* c : {&p.rx_packets, &p.tx_packets, &p.rx_bytes, &p.tx_bytes, &p.rx_dropped, &p.tx_dropped,
                        &p.rx_errors, &p.tx_errors, &p.rx_frame_err, &p.rx_over_err, &p.rx_crc_err, &p.collisions}) {
      (void)r.u64(*c);
    }
    (void)r.u32(p.duration_sec);
    (void)r.u32(p.duration_nsec);
  }
  return {};
}
void encode_port_stats(const std::vector<PortStats>& v, Writer& w) {
  for (const auto& p : v) {
    w.u32(p.port_no);
    w.zeros(4);
    for (uint64_t c : {p.rx_packets, p.tx_packets, p.rx_bytes, p.tx_bytes, p.rx_dropped, p.tx_dropped, p.rx_errors,
                       p.tx_errors, p.rx_frame_err, p.rx_over_err, p.rx_crc_err, p.collisions}) {
      w.u64(c);
    }
    w.u32(p.duration_sec);
    w.u32(p.duration_nsec);
  }
}

Result<void> decode_group_desc(std::span<const uint8_t> b, std::vector<GroupDesc>& out) {
  Reader r(b);
  while (!r.empty()) {
    uint16_t len = 0;
    if (!r.peek_u16(0, len)) return wire::truncated("group_desc: length field truncated");
    if (len < kGroupDescFixed || len % 8 != 0) return wire::bad_len("group_desc: length < 8 or not a multiple of 8");
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return wire::truncated("group_desc: length exceeds body");
    Reader e(one);
    GroupDesc& g = out.emplace_back();
    (void)e.skip(2);
    (void)e.u8(g.type);
    (void)e.skip(1);
    (void)e.u32(g.group_id);
    SDN_OFP_TRY(decode_buckets(e.rest(), g.buckets));
  }
  return {};
}
Result<void> encode_group_desc(const std::vector<GroupDesc>& v, Writer& w) {
  for (const auto& g : v) {
    const size_t start = w.pos();
    w.u16(0);
    w.u8(g.type);
    w.zeros(1);
    w.u32(g.group_id);
    SDN_OFP_TRY(encode_buckets(g.buckets, w));
    w.patch16(start, w.pos() - start);
  }
  return {};
}

Result<void> decode_meter_stats(std::span<const uint8_t> b, std::vector<MeterStats>& out) {
  Reader r(b);
  while (!r.empty()) {
    uint16_t len = 0;
    if (!r.peek_u16(4, len)) return wire::truncated("meter_stats: length field truncated");
    if (len < kMeterStatsFixed || (len - kMeterStatsFixed) % kMeterBandStatsLen != 0) {
      return wire::bad_len("meter_stats: length not 40 + 16n");
    }
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return wire::truncated("meter_stats: length exceeds body");
    Reader e(one);
    MeterStats& m = out.emplace_back();
    (void)e.u32(m.meter_id);
    (void)e.skip(2 + 6);
    (void)e.u32(m.flow_count);
    (void)e.u64(m.packet_in_count);
    (void)e.u64(m.byte_in_count);
    (void)e.u32(m.duration_sec);
    (void)e.u32(m.duration_nsec);
    while (!e.empty()) {
      MeterBandStats& s = m.bands.emplace_back();
      (void)e.u64(s.packet_band_count);
      (void)e.u64(s.byte_band_count);
    }
  }
  return {};
}
void encode_meter_stats(const std::vector<MeterStats>& v, Writer& w) {
  for (const auto& m : v) {
    const size_t start = w.pos();
    w.u32(m.meter_id);
    w.u16(0);
    w.zeros(6);
    w.u32(m.flow_count);
    w.u64(m.packet_in_count);
    w.u64(m.byte_in_count);
    w.u32(m.duration_sec);
    w.u32(m.duration_nsec);
    for (const auto& s : m.bands) {
      w.u64(s.packet_band_count);
      w.u64(s.byte_band_count);
    }
    w.patch16(start + 4, w.pos() - start);
  }
}

Result<void> decode_port_desc(std::span<const uint8_t> b, std::vector<Port>& out) {
  SDN_OFP_TRY(expect_multiple(b, kPortLen, "port_desc: body not a multiple of 64"));
  Reader r(b);
  while (!r.empty()) SDN_OFP_TRY(decode_port(r, out.emplace_back()));
  return {};
}
Result<void> encode_port_desc(const std::vector<Port>& v, Writer& w) {
  for (const auto& p : v) SDN_OFP_TRY(encode_port(p, w));
  return {};
}

Result<void> decode_meter_features(std::span<const uint8_t> b, MeterFeatures& f) {
  SDN_OFP_TRY(expect_len(b, kMeterFeaturesLen, "meter_features: body != 16 bytes"));
  Reader r(b);
  (void)r.u32(f.max_meter);
  (void)r.u32(f.band_types);
  (void)r.u32(f.capabilities);
  (void)r.u8(f.max_bands);
  (void)r.u8(f.max_color);
  return {};  // 2 pad bytes ignored
}
void encode_meter_features(const MeterFeatures& f, Writer& w) {
  w.u32(f.max_meter);
  w.u32(f.band_types);
  w.u32(f.capabilities);
  w.u8(f.max_bands);
  w.u8(f.max_color);
  w.zeros(2);
}

// Which body alternative each multipart type uses.
size_t request_index(MultipartType t) {
  switch (t) {
    case MultipartType::kFlow:
    case MultipartType::kAggregate: return 1;
    case MultipartType::kPortStats: return 2;
    case MultipartType::kMeter: return 3;
    default: return 0;
  }
}
bool known_type(uint16_t t) {
  switch (static_cast<MultipartType>(t)) {
    case MultipartType::kDesc:
    case MultipartType::kFlow:
    case MultipartType::kAggregate:
    case MultipartType::kTable:
    case MultipartType::kPortStats:
    case MultipartType::kGroupDesc:
    case MultipartType::kMeter:
    case MultipartType::kMeterFeatures:
    case MultipartType::kPortDesc: return true;
  }
  return false;
}
size_t reply_index(MultipartType t) {
  switch (t) {
    case MultipartType::kDesc: return 0;
    case MultipartType::kFlow: return 1;
    case MultipartType::kAggregate: return 2;
    case MultipartType::kTable: return 3;
    case MultipartType::kPortStats: return 4;
    case MultipartType::kGroupDesc: return 5;
    case MultipartType::kMeter: return 6;
    case MultipartType::kPortDesc: return 7;
    case MultipartType::kMeterFeatures: return 8;
  }
  return 0;
}

}  // namespace

// ---- requests -----------------------------------------------------------------------------
Result<void> decode_multipart_request(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  MultipartRequest& m = out.emplace<MultipartRequest>();
  uint16_t type = 0;
  if (!r.u16(type) || !r.u16(m.flags) || !r.skip(4)) return wire::truncated("multipart_request: body < 8");
  if (!known_type(type)) return bad_multipart("multipart_request: unsupported type");
  m.type = static_cast<MultipartType>(type);
  const auto rest = r.rest();
  switch (m.type) {
    case MultipartType::kFlow:
    case MultipartType::kAggregate:
      return decode_flow_stats_request(rest, m.body.emplace<FlowStatsRequest>());
    case MultipartType::kPortStats: {
      SDN_OFP_TRY(expect_len(rest, kPortStatsReqLen, "port_stats_request: body != 8"));
      Reader q(rest);
      (void)q.u32(m.body.emplace<PortStatsRequest>().port_no);
      return {};
    }
    case MultipartType::kMeter: {
      SDN_OFP_TRY(expect_len(rest, kMeterReqLen, "meter_stats_request: body != 8"));
      Reader q(rest);
      (void)q.u32(m.body.emplace<MeterStatsRequest>().meter_id);
      return {};
    }
    default:
      // DESC, TABLE, PORT_DESC and GROUP_DESC requests have an empty body.
      if (!rest.empty()) return wire::bad_len("multipart_request: body not empty for this type");
      return {};
  }
}

Result<void> encode_body(const MultipartRequest& m, Writer& w) {
  if (!known_type(static_cast<uint16_t>(m.type))) return wire::bad_value("multipart_request: unsupported type");
  if (m.body.index() != request_index(m.type)) return wire::bad_value("multipart_request: body does not match type");
  w.u16(static_cast<uint16_t>(m.type));
  w.u16(m.flags);
  w.zeros(4);
  if (const auto* f = std::get_if<FlowStatsRequest>(&m.body)) return encode_flow_stats_request(*f, w);
  if (const auto* p = std::get_if<PortStatsRequest>(&m.body)) {
    w.u32(p->port_no);
    w.zeros(4);
  } else if (const auto* q = std::get_if<MeterStatsRequest>(&m.body)) {
    w.u32(q->meter_id);
    w.zeros(4);
  }
  return {};
}

// ---- replies ------------------------------------------------------------------------------
Result<void> decode_multipart_reply(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  MultipartReply& m = out.emplace<MultipartReply>();
  uint16_t type = 0;
  if (!r.u16(type) || !r.u16(m.flags) || !r.skip(4)) return wire::truncated("multipart_reply: body < 8");
  if (!known_type(type)) return bad_multipart("multipart_reply: unsupported type");
  m.type = static_cast<MultipartType>(type);
  const auto rest = r.rest();
  switch (m.type) {
    case MultipartType::kDesc: return decode_desc(rest, m.body.emplace<Desc>());
    case MultipartType::kFlow: return decode_flow_stats(rest, m.body.emplace<std::vector<FlowStats>>());
    case MultipartType::kAggregate: return decode_aggregate(rest, m.body.emplace<AggregateStats>());
    case MultipartType::kTable: return decode_table_stats(rest, m.body.emplace<std::vector<TableStats>>());
    case MultipartType::kPortStats: return decode_port_stats(rest, m.body.emplace<std::vector<PortStats>>());
    case MultipartType::kGroupDesc: return decode_group_desc(rest, m.body.emplace<std::vector<GroupDesc>>());
    case MultipartType::kMeter: return decode_meter_stats(rest, m.body.emplace<std::vector<MeterStats>>());
    case MultipartType::kPortDesc: return decode_port_desc(rest, m.body.emplace<std::vector<Port>>());
    case MultipartType::kMeterFeatures: return decode_meter_features(rest, m.body.emplace<MeterFeatures>());
  }
  return bad_multipart("multipart_reply: unsupported type");
}

Result<void> encode_body(const MultipartReply& m, Writer& w) {
  if (!known_type(static_cast<uint16_t>(m.type))) return wire::bad_value("multipart_reply: unsupported type");
  if (m.body.index() != reply_index(m.type)) return wire::bad_value("multipart_reply: body does not match type");
  w.u16(static_cast<uint16_t>(m.type));
  w.u16(m.flags);
  w.zeros(4);
  switch (m.type) {
    case MultipartType::kDesc: return encode_desc(std::get<Desc>(m.body), w);
    case MultipartType::kFlow: return encode_flow_stats(std::get<std::vector<FlowStats>>(m.body), w);
    case MultipartType::kAggregate: encode_aggregate(std::get<AggregateStats>(m.body), w); return {};
    case MultipartType::kTable: encode_table_stats(std::get<std::vector<TableStats>>(m.body), w); return {};
    case MultipartType::kPortStats: encode_port_stats(std::get<std::vector<PortStats>>(m.body), w); return {};
    case MultipartType::kGroupDesc: return encode_group_desc(std::get<std::vector<GroupDesc>>(m.body), w);
    case MultipartType::kMeter: encode_meter_stats(std::get<std::vector<MeterStats>>(m.body), w); return {};
    case MultipartType::kPortDesc: return encode_port_desc(std::get<std::vector<Port>>(m.body), w);
    case MultipartType::kMeterFeatures: encode_meter_features(std::get<MeterFeatures>(m.body), w); return {};
  }
  return {};
}

}  // namespace sdn::ofp::detail
