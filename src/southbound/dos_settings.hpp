// [southbound] settings of PacketIn admission control and of the table-miss meters
// (docs/dos.md). Kept apart from config.hpp so the limiter's keys live with the limiter.
#pragma once

#include <cstdint>

#include "core/config.hpp"

namespace sdn::southbound {

// [southbound] keys of the limiter and of the table-miss meters. Rates in packets per second;
// a rate of 0 switches that bucket (or meter) off.
struct DosSettings {
  bool pin_limit = true;                   // pin_limit
  uint32_t switch_pps = 200000;            // pin_switch_pps: data PacketIns per switch
  uint32_t switch_burst = 20000;           // pin_switch_burst
  uint32_t port_pps = 20000;               // pin_port_pps: data PacketIns per (switch, in_port)
  uint32_t port_burst = 5000;              // pin_port_burst
  uint32_t control_pps = 100000;           // pin_control_pps: ARP + LLDP per switch
  uint32_t control_burst = 20000;          // pin_control_burst
  uint32_t control_port_pps = 5000;        // pin_control_port_pps: ARP + LLDP per (switch, in_port)
  uint32_t control_port_burst = 1000;      // pin_control_port_burst
  // OpenFlow meters on the switch (installed after the handshake where METER_FEATURES says
  // DROP bands and PKTPS are supported).
  uint32_t table_miss_meter_pps = 5000;    // table_miss_meter_pps: meter on the table-miss flow
  uint32_t table_miss_meter_burst = 1000;  // table_miss_meter_burst
  uint32_t control_meter_pps = 2000;       // control_meter_pps: meter on the ARP/LLDP flows (0 = none)
  uint32_t control_meter_burst = 500;      // control_meter_burst
};

// Reads the keys above from [southbound]; problems are recorded in `cfg` with the key's name.
void read_dos_settings(core::Config& cfg, DosSettings& d);

}  // namespace sdn::southbound
