// OpenFlow meters on the table-miss path (docs/dos.md): after the handshake, asks the switch
// for OFPMP_METER_FEATURES; where DROP bands and PKTPS are supported it installs a meter on
// the table-miss flow and priority-1 ARP and LLDP flows to the controller through a meter of
// their own (or none), so the switch itself caps the PacketIns a flood can cause and ARP/LLDP
// are not metered with it. A switch without usable meters, or one that refuses them, keeps
// the plain table-miss flow: the controller's PacketIn limiter still applies. Never fails
// the handshake.
#pragma once

#include <cstdint>

#include "southbound/app.hpp"
#include "southbound/counters.hpp"
#include "southbound/dos_settings.hpp"

namespace sdn::southbound {

inline constexpr uint32_t kMissMeterId = 0xfd01;     // clamped to the switch's max_meter
inline constexpr uint64_t kDosCookie = 0xfd00000000000000ULL;  // top byte 0xfd: the runtime's DoS flows
inline constexpr uint64_t kDosCookieMask = 0xff00000000000000ULL;
inline constexpr uint16_t kControlFlowPriority = 1;  // above the table-miss (0), below every app

// What a METER_FEATURES reply must offer: a DROP band, PKTPS, and two meter ids.
bool meters_usable(const ofp::MeterFeatures& f);

// The messages that put the meters in place on a switch with `max_meter` meters: stale meters
// of ours deleted (with the flows using them), the meters added, the ARP/LLDP flows and the
// metered table-miss flow (an ADD that replaces the plain one).
std::vector<ofp::Body> miss_meter_setup(const DosSettings& d, uint32_t max_meter);

// What puts the plain table-miss back when the set-up was refused part-way.
std::vector<ofp::Body> miss_meter_fallback(uint32_t max_meter);

// Called on the switch's shard once it is up. `counters` must outlive the connection.
void start_miss_meters(SwitchContext& sw, const DosSettings& d, Counters& counters);

}  // namespace sdn::southbound
