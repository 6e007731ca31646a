// Controller-to-switch modifications: PACKET_OUT, FLOW_MOD, GROUP_MOD (with buckets) and
// METER_MOD (with bands), OpenFlow 1.3.5 sections 7.3.4 and 7.3.7.
#include "ofp/codec_internal.hpp"

namespace sdn::ofp::detail {
namespace {

using wire::Reader;
using wire::Writer;

constexpr size_t kPacketOutFixed = 16;  // buffer_id, in_port, actions_len, pad[6] (7.3.7)
constexpr size_t kFlowModFixed = 40;    // cookie .. pad[2], before the match (7.3.4.1)
constexpr size_t kGroupModFixed = 8;    // command, type, pad, group_id (7.3.4.2)
constexpr size_t kBucketFixed = 16;     // len, weight, watch_port, watch_group, pad[4]
constexpr size_t kMeterModFixed = 8;    // command, flags, meter_id (7.3.4.4)
constexpr size_t kMeterBandLen = 16;    // DROP and DSCP_REMARK bands (7.3.4.5)
constexpr uint16_t kBandDrop = 1;       // OFPMBT_DROP
constexpr uint16_t kBandDscpRemark = 2; // OFPMBT_DSCP_REMARK
constexpr uint8_t kMaxFlowModCommand = 4;

}  // namespace

// ---- PACKET_OUT (7.3.7) -------------------------------------------------------------------
// The frame after the actions is meaningful only with buffer_id == OFP_NO_BUFFER; with a
// buffered packet any trailing bytes are ignored (and never encoded).
Result<void> decode_packet_out(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  PacketOut& p = out.emplace<PacketOut>();
  uint16_t actions_len = 0;
  if (r.remaining() < kPacketOutFixed) return wire::truncated("packet_out: body shorter than fixed part");
  (void)r.u32(p.buffer_id);
  (void)r.u32(p.in_port);
  (void)r.u16(actions_len);
  (void)r.skip(6);
  if (actions_len % 8 != 0) return wire::bad_len("packet_out: actions_len not a multiple of 8");
  std::span<const uint8_t> actions;
  if (!r.try_pull(actions_len, actions)) return wire::truncated("packet_out: actions_len exceeds message");
  SDN_OFP_TRY(decode_actions(actions, p.actions));
  if (p.buffer_id == kNoBuffer) p.data = r.rest();
  return {};
}

Result<void> encode_body(const PacketOut& m, Writer& w) {
  w.u32(m.buffer_id);
  w.u32(m.in_port);
  const size_t len_at = w.pos();
  w.u16(0);
  w.zeros(6);
  const size_t actions_start = w.pos();
  SDN_OFP_TRY(encode_actions(m.actions, w));
  w.patch16(len_at, w.pos() - actions_start);
  if (m.buffer_id == kNoBuffer) w.bytes(m.data);
  return {};
}

// ---- FLOW_MOD (7.3.4.1) -------------------------------------------------------------------
Result<void> decode_flow_mod(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  FlowMod& f = out.emplace<FlowMod>();
  if (r.remaining() < kFlowModFixed) return wire::truncated("flow_mod: body shorter than fixed part");
  uint8_t command = 0;
  (void)r.u64(f.cookie);
  (void)r.u64(f.cookie_mask);
  (void)r.u8(f.table_id);
  (void)r.u8(command);
  (void)r.u16(f.idle_timeout);
  (void)r.u16(f.hard_timeout);
  (void)r.u16(f.priority);
  (void)r.u32(f.buffer_id);
  (void)r.u32(f.out_port);
  (void)r.u32(f.out_group);
  (void)r.u16(f.flags);
  (void)r.skip(2);
  if (command > kMaxFlowModCommand) {
    return wire::fail(Errc::kBadValue, err::kFlowModFailed, err::kFmfcBadCommand, "flow_mod: unknown command");
  }
  f.command = static_cast<FlowModCommand>(command);
  SDN_OFP_TRY(decode_match(r, OxmPolicy::kStrict, f.match));
  return decode_instructions(r.rest(), f.instructions);
}

Result<void> encode_body(const FlowMod& m, Writer& w) {
  if (static_cast<uint8_t>(m.command) > kMaxFlowModCommand) return wire::bad_value("flow_mod: unknown command");
  w.u64(m.cookie);
  w.u64(m.cookie_mask);
  w.u8(m.table_id);
  w.u8(static_cast<uint8_t>(m.command));
  w.u16(m.idle_timeout);
  w.u16(m.hard_timeout);
  w.u16(m.priority);
  w.u32(m.buffer_id);
  w.u32(m.out_port);
  w.u32(m.out_group);
  w.u16(m.flags);
  w.zeros(2);
  SDN_OFP_TRY(encode_match(m.match, w));
  return encode_instructions(m.instructions, w);
}

// ---- buckets (7.3.4.2), shared with the GROUP_DESC multipart reply ------------------------
Result<void> decode_buckets(std::span<const uint8_t> b, std::vector<Bucket>& out) {
  out.clear();
  Reader r(b);
  while (!r.empty()) {
    uint16_t len = 0;
    if (!r.peek_u16(0, len)) return wire::truncated("bucket: length field truncated");
    if (len < kBucketFixed || len % 8 != 0) return wire::bad_len("bucket: length < 16 or not a multiple of 8");
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return wire::truncated("bucket: length exceeds list");
    Reader k(one);
    Bucket& bucket = out.emplace_back();
    (void)k.skip(2);
    (void)k.u16(bucket.weight);
    (void)k.u32(bucket.watch_port);
    (void)k.u32(bucket.watch_group);
    SDN_OFP_TRY(decode_actions(one.subspan(kBucketFixed), bucket.actions));
  }
  return {};
}

Result<void> encode_buckets(const std::vector<Bucket>& buckets, Writer& w) {
  for (const auto& b : buckets) {
    const size_t start = w.pos();
    w.u16(0);
    w.u16(b.weight);
    w.u32(b.watch_port);
    w.u32(b.watch_group);
    w.zeros(4);
    SDN_OFP_TRY(encode_actions(b.actions, w));
    w.patch16(start, w.pos() - start);
  }
  return {};
}

// ---- GROUP_MOD (7.3.4.2) ------------------------------------------------------------------
Result<void> decode_group_mod(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  GroupMod& g = out.emplace<GroupMod>();
  if (r.remaining() < kGroupModFixed) return wire::truncated("group_mod: body shorter than fixed part");
  (void)r.u16(g.command);
  (void)r.u8(g.type);
  (void)r.skip(1);
  (void)r.u32(g.group_id);
  return decode_buckets(r.rest(), g.buckets);
}

Result<void> encode_body(const GroupMod& m, Writer& w) {
  w.u16(m.command);
  w.u8(m.type);
  w.zeros(1);
  w.u32(m.group_id);
  return encode_buckets(m.buckets, w);
}

// ---- METER_MOD (7.3.4.4) and bands (7.3.4.5) ----------------------------------------------
Result<void> decode_meter_mod(std::span<const uint8_t> body, Body& out) {
  Reader r(body);
  MeterMod& m = out.emplace<MeterMod>();
  if (r.remaining() < kMeterModFixed) return wire::truncated("meter_mod: body shorter than fixed part");
  (void)r.u16(m.command);
  (void)r.u16(m.flags);
  (void)r.u32(m.meter_id);
  while (!r.empty()) {
    uint16_t type = 0;
    uint16_t len = 0;
    if (!r.peek_u16(0, type) || !r.peek_u16(2, len)) return wire::truncated("meter band: header truncated");
    if (len < kMeterBandLen || len % 8 != 0) return wire::bad_len("meter band: length < 16 or not a multiple of 8");
    std::span<const uint8_t> one;
    if (!r.try_pull(len, one)) return wire::truncated("meter band: length exceeds message");
    if (type != kBandDrop && type != kBandDscpRemark) {
      return wire::fail(Errc::kBadValue, err::kMeterModFailed, err::kMmfcBadBand, "meter band: unsupported type");
    }
    if (len != kMeterBandLen) return wire::bad_len("meter band: length != 16");
    Reader b(one);
    MeterBand& band = m.bands.emplace_back();
    (void)b.u16(band.type);
    (void)b.skip(2);
    (void)b.u32(band.rate);
    (void)b.u32(band.burst_size);
    if (type == kBandDscpRemark) (void)b.u8(band.prec_level);
  }
  return {};
}

Result<void> encode_body(const MeterMod& m, Writer& w) {
  for (const auto& band : m.bands) {
    if (band.type != kBandDrop && band.type != kBandDscpRemark) return wire::bad_value("meter band: unsupported type");
    if (band.type == kBandDrop && band.prec_level != 0) return wire::bad_value("meter band: prec_level on a DROP band");
  }
  w.u16(m.command);
  w.u16(m.flags);
  w.u32(m.meter_id);
  for (const auto& band : m.bands) {
    w.u16(band.type);
    w.u16(kMeterBandLen);
    w.u32(band.rate);
    w.u32(band.burst_size);
    w.u8(band.prec_level);
    w.zeros(3);
  }
  return {};
}

}  // namespace sdn::ofp::detail
