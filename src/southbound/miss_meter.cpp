// OpenFlow meters on the table-miss path: the METER_FEATURES probe and the set-up batch.
#include "southbound/miss_meter.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace sdn::southbound {
namespace {

constexpr uint16_t kBandDrop = 1;           // OFPMBT_DROP
constexpr uint16_t kMeterPktps = 1 << 1;    // OFPMF_PKTPS
constexpr uint16_t kMeterBurst = 1 << 2;    // OFPMF_BURST
constexpr uint16_t kMeterStats = 1 << 3;    // OFPMF_STATS
constexpr uint16_t kMeterAdd = 0, kMeterDelete = 2;  // OFPMC_*

uint32_t miss_id(uint32_t max_meter) { return std::min(kMissMeterId, max_meter); }
uint32_t control_id(uint32_t max_meter) { return miss_id(max_meter) - 1; }

ofp::MeterMod meter(uint16_t command, uint32_t id, uint32_t pps, uint32_t burst) {
  ofp::MeterMod m;
  m.command = command;
  m.meter_id = id;
  if (command == kMeterAdd) {
    m.flags = kMeterPktps | kMeterBurst | kMeterStats;
    m.bands.push_back(ofp::MeterBand{kBandDrop, pps, burst, 0});
  }
  return m;
}

ofp::FlowMod to_controller(uint16_t priority, uint64_t cookie, uint32_t meter_id) {
  ofp::FlowMod f;
  f.priority = priority;
  f.cookie = cookie;
  if (meter_id != 0) f.instructions.push_back(ofp::InstrMeter{meter_id});
  f.instructions.push_back(
      ofp::InstrApplyActions{{ofp::ActionOutput{ofp::port::kController, ofp::kControllerMaxLenNoBuffer}}});
  return f;
}

}  // namespace

bool meters_usable(const ofp::MeterFeatures& f) {
  return (f.band_types & (1u << kBandDrop)) != 0 && (f.capabilities & kMeterPktps) != 0 && f.max_meter >= 2 &&
         f.max_bands >= 1;
}

std::vector<ofp::Body> miss_meter_setup(const DosSettings& d, uint32_t max_meter) {
  const uint32_t miss = miss_id(max_meter), control = control_id(max_meter);
  std::vector<ofp::Body> out;
  // Deleting a meter that is not there is not an error (7.3.4.4); deleting ours removes the
  // flows of a previous connection that used them.
  out.push_back(meter(kMeterDelete, miss, 0, 0));
  out.push_back(meter(kMeterDelete, control, 0, 0));
  out.push_back(meter(kMeterAdd, miss, d.table_miss_meter_pps, d.table_miss_meter_burst));
  const bool control_metered = d.control_meter_pps > 0;
  if (control_metered) out.push_back(meter(kMeterAdd, control, d.control_meter_pps, d.control_meter_burst));
  for (const auto& [eth_type, n] : {std::pair<uint16_t, uint64_t>{0x0806, 1}, {0x88cc, 2}}) {
    ofp::FlowMod f = to_controller(kControlFlowPriority, kDosCookie | n, control_metered ? control : 0);
    f.match.set(ofp::OxmField::kEthType, eth_type);
    out.push_back(std::move(f));
  }
  out.push_back(to_controller(0, 0, miss));  // the table-miss entry (5.4), now metered
  return out;
}

std::vector<ofp::Body> miss_meter_fallback(uint32_t max_meter) {
  std::vector<ofp::Body> out;
  out.push_back(to_controller(0, 0, 0));
  ofp::FlowMod del;
  del.command = ofp::FlowModCommand::kDelete;
  del.table_id = ofp::kTableAll;
  del.cookie = kDosCookie;
  del.cookie_mask = kDosCookieMask;
  out.push_back(std::move(del));
  out.push_back(meter(kMeterDelete, miss_id(max_meter), 0, 0));
  out.push_back(meter(kMeterDelete, control_id(max_meter), 0, 0));
  return out;
}

void start_miss_meters(SwitchContext& sw, const DosSettings& d, Counters& counters) {
  if (d.table_miss_meter_pps == 0) return;
  ofp::MultipartRequest req;
  req.type = ofp::MultipartType::kMeterFeatures;
  // The connection calls back while it lives (a reply, an ERROR, or its close), so `sw` is valid.
  SwitchContext* swp = &sw;
  sw.send_request(std::move(req), [swp, &d, &counters](const ofp::Message* reply, const ofp::ErrorMsg* err, bool) {
    if (!reply && !err) return;  // disconnected
    const auto* mp = reply ? std::get_if<ofp::MultipartReply>(&reply->body) : nullptr;
    const auto* f = mp ? std::get_if<ofp::MeterFeatures>(&mp->body) : nullptr;
    if (!f || !meters_usable(*f)) {
      counters.meters_unsupported.inc();
      if (err)
        SDN_LOG_RATELIMITED(spdlog::level::info,
                            "switch {:016x}: no meter features (error type {} code {}); PacketIn limiter only",
                            swp->dpid(), err->type, err->code);
      else
        SDN_LOG_RATELIMITED(spdlog::level::info, "switch {:016x}: meters without DROP/PKTPS; PacketIn limiter only",
                            swp->dpid());
      return;
    }
    const uint32_t max_meter = f->max_meter;
    swp->send_batch(miss_meter_setup(d, max_meter), Lane::kHigh, [swp, &d, &counters, max_meter](const BatchResult& r) {
      if (r.disconnected) return;
      if (r.ok) {
        counters.meters_installed.inc();
        spdlog::info("switch {:016x}: table-miss meter {} pps (burst {}), ARP/LLDP {}", swp->dpid(), d.table_miss_meter_pps,
                     d.table_miss_meter_burst,
                     d.control_meter_pps ? fmt::format("meter {} pps", d.control_meter_pps) : std::string("unmetered"));
        return;
      }
      counters.meters_failed.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn,
                          "switch {:016x}: meter set-up refused (error type {} code {}); plain table-miss, PacketIn limiter only",
                          swp->dpid(), r.error.type, r.error.code);
      swp->send_batch(miss_meter_fallback(max_meter), Lane::kHigh, nullptr);
    });
  });
}

}  // namespace sdn::southbound
