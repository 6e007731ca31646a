// PacketIn admission control: the peek at a raw PACKET_IN and the token buckets.
#include "southbound/pin_limiter.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace sdn::southbound {
namespace {

// OFPT_PACKET_IN layout (OpenFlow 1.3.5 7.4.1): header 8, buffer_id 4, total_len 2,
// reason 1, table_id 1, cookie 8, then ofp_match (type 2, length 2, OXMs) padded to 8,
// then 2 pad bytes and the frame.
constexpr size_t kMatchOffset = 24;
constexpr uint32_t kOxmInPort = 0x80000004;  // OFPXMC_OPENFLOW_BASIC, OFPXMT_OFB_IN_PORT, len 4

uint16_t be16(std::span<const uint8_t> b, size_t at) { return static_cast<uint16_t>(b[at] << 8 | b[at + 1]); }
uint32_t be32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}

void read_rate(core::Config& cfg, const char* key, uint32_t& v) {
  v = static_cast<uint32_t>(cfg.get_int("southbound", key, v, 0, 100000000));
}

}  // namespace

void read_dos_settings(core::Config& cfg, DosSettings& d) {
  const char* s = "southbound";
  d.pin_limit = cfg.get_bool(s, "pin_limit", d.pin_limit);
  read_rate(cfg, "pin_switch_pps", d.switch_pps);
  read_rate(cfg, "pin_switch_burst", d.switch_burst);
  read_rate(cfg, "pin_port_pps", d.port_pps);
  read_rate(cfg, "pin_port_burst", d.port_burst);
  read_rate(cfg, "pin_control_pps", d.control_pps);
  read_rate(cfg, "pin_control_burst", d.control_burst);
  read_rate(cfg, "pin_control_port_pps", d.control_port_pps);
  read_rate(cfg, "pin_control_port_burst", d.control_port_burst);
  read_rate(cfg, "table_miss_meter_pps", d.table_miss_meter_pps);
  read_rate(cfg, "table_miss_meter_burst", d.table_miss_meter_burst);
  read_rate(cfg, "control_meter_pps", d.control_meter_pps);
  read_rate(cfg, "control_meter_burst", d.control_meter_burst);
  // A bucket that limits must hold at least one token, or it would drop everything.
  const std::pair<const char*, std::pair<uint32_t, uint32_t>> pairs[] = {
      {"pin_switch", {d.switch_pps, d.switch_burst}},
      {"pin_port", {d.port_pps, d.port_burst}},
      {"pin_control", {d.control_pps, d.control_burst}},
      {"pin_control_port", {d.control_port_pps, d.control_port_burst}},
      {"table_miss_meter", {d.table_miss_meter_pps, d.table_miss_meter_burst}},
      {"control_meter", {d.control_meter_pps, d.control_meter_burst}},
  };
  for (const auto& [name, v] : pairs)
    if (v.first > 0 && v.second == 0)
      cfg.add_problem(fmt::format("southbound.{}_burst must be at least 1 when {}_pps is {} (0 pps turns it off)", name,
                                  name, v.first));
}

PinPeek peek_packet_in(std::span<const uint8_t> frame) {
  PinPeek p;
  if (frame.size() < kMatchOffset + 4) return p;
  if (be16(frame, kMatchOffset) != 1) return p;  // OFPMT_OXM
  const size_t match_len = be16(frame, kMatchOffset + 2);
  if (match_len < 4 || kMatchOffset + match_len > frame.size()) return p;
  // OXM TLVs: 4-byte header (class 16, field 7, hasmask 1, length 8), then the payload.
  for (size_t at = kMatchOffset + 4; at + 4 <= kMatchOffset + match_len;) {
    const uint32_t h = be32(frame, at);
    const size_t len = h & 0xff;
    if (at + 4 + len > kMatchOffset + match_len) return p;
    if (h == kOxmInPort) {
      p.in_port = be32(frame, at + 4);
      p.has_in_port = true;
      break;
    }
    at += 4 + len;
  }
  p.ok = true;
  const size_t data = kMatchOffset + (match_len + 7) / 8 * 8 + 2;
  size_t et = data + 12;
  // Up to two VLAN tags (802.1Q 0x8100, 802.1ad 0x88a8) before the real type.
  for (int tags = 0; tags <= 2 && et + 2 <= frame.size(); ++tags) {
    const uint16_t t = be16(frame, et);
    if ((t != 0x8100 && t != 0x88a8) || tags == 2) {
      p.eth_type = t;
      break;
    }
    et += 4;
  }
  p.cls = classify_eth_type(p.eth_type);
  return p;
}

PinLimiter::PinLimiter(const DosSettings& s)
    : sw_rates_{static_cast<float>(s.switch_pps), static_cast<float>(s.switch_burst), static_cast<float>(s.control_pps),
                static_cast<float>(s.control_burst)},
      port_rates_{static_cast<float>(s.port_pps), static_cast<float>(s.port_burst), static_cast<float>(s.control_port_pps),
                  static_cast<float>(s.control_port_burst)},
      ports_(nullptr) {
  sw_.data = sw_rates_.data_burst;
  sw_.control = sw_rates_.control_burst;
  sw_.last_ns = -1;
}

void PinLimiter::refill(Buckets& b, const Rates& r, int64_t now_ns) {
  if (b.last_ns < 0 || now_ns <= b.last_ns) {
    if (b.last_ns < 0) b.last_ns = now_ns;
    return;
  }
  const float dt = static_cast<float>(static_cast<double>(now_ns - b.last_ns) * 1e-9);
  b.last_ns = now_ns;
  b.data = std::min(r.data_burst, b.data + dt * r.data_pps);
  b.control = std::min(r.control_burst, b.control + dt * r.control_pps);
}

void PinLimiter::grow_ports(uint32_t port) {
  const size_t want = port >= kPortSlots ? kPortSlots : std::bit_ceil(static_cast<size_t>(port) + 1);
  const size_t n = std::clamp(want, std::max(kMinPortSlots, slots_), kPortSlots);
  auto bigger = std::make_unique<PortSlot[]>(n);
  // Ports below the old size keep their own slot; any others may meet (the later one wins,
  // as when two ports share a slot).
  for (size_t i = 0; i < slots_; ++i)
    if (ports_[i].used) bigger[ports_[i].port & (n - 1)] = ports_[i];
  ports_ = std::move(bigger);
  slots_ = n;
}

PinLimiter::Verdict PinLimiter::admit(const PinPeek& p, Clock::time_point now) {
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  const PinClass c = p.cls;
  float* port_tokens = nullptr;
  if (p.has_in_port && limited(port_rates_, c)) {
    if (!ports_ || (p.in_port >= slots_ && slots_ < kPortSlots)) grow_ports(p.in_port);
    PortSlot& slot = ports_[p.in_port & (slots_ - 1)];
    if (!slot.used || slot.port != p.in_port) {
      slot = PortSlot{p.in_port, true, Buckets{now_ns, port_rates_.data_burst, port_rates_.control_burst}};
    } else {
      refill(slot.b, port_rates_, now_ns);
    }
    port_tokens = &tokens(slot.b, c);
    if (*port_tokens < 1.0f) return Verdict::kDropPort;
  }
  if (limited(sw_rates_, c)) {
    refill(sw_, sw_rates_, now_ns);
    float& t = tokens(sw_, c);
    if (t < 1.0f) return Verdict::kDropSwitch;
    t -= 1.0f;
  }
  if (port_tokens) *port_tokens -= 1.0f;
  return Verdict::kAdmit;
}

bool admit_packet_in(PinLimiter& limiter, std::span<const uint8_t> frame, Clock::time_point now, Counters& c,
                     uint64_t dpid) {
  const PinPeek p = peek_packet_in(frame);
  if (!p.ok) {
    c.pin_unpeeked.inc();
    return true;
  }
  const auto v = limiter.admit(p, now);
  const bool control = p.cls == PinClass::kControl;
  if (v == PinLimiter::Verdict::kAdmit) {
    if (control) c.pin_control.inc();
    return true;
  }
  const bool port = v == PinLimiter::Verdict::kDropPort;
  (control ? (port ? c.pin_dropped_control_port : c.pin_dropped_control_switch)
           : (port ? c.pin_dropped_port : c.pin_dropped_switch))
      .inc();
  SDN_LOG_RATELIMITED(spdlog::level::warn, "switch {:016x}: PacketIn flood, dropping ({} {} bucket empty, in_port {})", dpid,
                      control ? "ARP/LLDP" : "data", port ? "port" : "switch", p.in_port);
  return false;
}

}  // namespace sdn::southbound
