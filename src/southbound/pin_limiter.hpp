// PacketIn admission control (docs/dos.md): token buckets per switch and per (switch, in_port),
// applied on the shard to the raw frame before it is decoded or shown to an app, so a flood
// from one switch or one port costs a few loads and compares per message and cannot starve
// the others. ARP and LLDP ("control" class) have buckets of their own, so an IP flood
// cannot use up their budget. O(1) and allocation-free per PacketIn.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "southbound/app.hpp"
#include "southbound/counters.hpp"
#include "southbound/dos_settings.hpp"

namespace sdn::southbound {

enum class PinClass : uint8_t { kData, kControl };

// What the limiter needs from a raw OFPT_PACKET_IN, read without decoding it.
struct PinPeek {
  bool ok = false;           // false: the frame is not a well-formed enough PacketIn to peek
  bool has_in_port = false;
  uint32_t in_port = 0;
  uint16_t eth_type = 0;     // after up to two VLAN tags (0x8100 / 0x88a8); 0 when too short
  PinClass cls = PinClass::kData;
};

// Reads in_port (OXM_OF_IN_PORT in the match, 7.2.3) and the Ethernet type of the data of a
// whole OFPT_PACKET_IN frame (7.4.1), bounds-checked against `frame`.
PinPeek peek_packet_in(std::span<const uint8_t> frame);

// ARP (0x0806) and LLDP (0x88cc).
constexpr PinClass classify_eth_type(uint16_t eth_type) {
  return eth_type == 0x0806 || eth_type == 0x88cc ? PinClass::kControl : PinClass::kData;
}

// One switch's buckets; owned by its connection, used on its shard only.
class PinLimiter {
 public:
  enum class Verdict : uint8_t { kAdmit, kDropPort, kDropSwitch };

  explicit PinLimiter(const DosSettings& s);

  // Takes one token from the port bucket and one from the switch bucket of the class, or
  // none and says which one was empty. Without an in_port, only the switch bucket applies.
  Verdict admit(const PinPeek& p, Clock::time_point now);

  // Port slots: a direct-mapped table indexed by port_no mod its size. Two ports that share
  // a slot take it over from each other with a full bucket (the switch bucket still applies);
  // ports 1..255 of a switch never share one. The table starts at kMinPortSlots on the first
  // PacketIn and doubles (up to kPortSlots) when a port number past its end sends one: an
  // access switch with 43 ports holds 64 slots (1.5 KiB), not 256 (6 KiB; 14.7 MB for the
  // 2,388 switches of the 100,000-host campus).
  static constexpr size_t kPortSlots = 256;
  static constexpr size_t kMinPortSlots = 16;
  size_t port_slots() const { return slots_; }

 private:
  // Tokens of both classes, refilled together from one timestamp.
  struct Buckets {
    int64_t last_ns = 0;
    float data = 0;
    float control = 0;
  };
  struct PortSlot {
    uint32_t port = 0;
    bool used = false;
    Buckets b;
  };
  struct Rates {
    float data_pps, data_burst, control_pps, control_burst;
  };

  static void refill(Buckets& b, const Rates& r, int64_t now_ns);
  static float& tokens(Buckets& b, PinClass c) { return c == PinClass::kControl ? b.control : b.data; }
  static bool limited(const Rates& r, PinClass c) { return (c == PinClass::kControl ? r.control_pps : r.data_pps) > 0; }

  void grow_ports(uint32_t port);
  Rates sw_rates_, port_rates_;
  Buckets sw_;
  std::unique_ptr<PortSlot[]> ports_;
  size_t slots_ = 0;  // a power of two, kMinPortSlots..kPortSlots, once ports_ exists
};

// The shard's check of a raw OFPT_PACKET_IN before it is decoded: true = admit; false = it
// was dropped (counted per reason, logged at a limited rate). A frame too malformed to peek
// is admitted (and counted): the decoder answers it with an OFPT_ERROR as before.
bool admit_packet_in(PinLimiter& limiter, std::span<const uint8_t> frame, Clock::time_point now, Counters& c,
                     uint64_t dpid);

}  // namespace sdn::southbound
