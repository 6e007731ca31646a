// Reactive L2 learning switch with exact-match IPv4 flows, for loop-free topologies.
// One instance per shard (AppFactory); a switch lives on one shard, so the per-dpid MAC
// tables below need no lock. The app only talks to SwitchContext::send, which makes it
// testable against tests/fakes/fake_switch.hpp with a manual clock. See README.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "core/metrics.hpp"
#include "ofp/message.hpp"
#include "pkt/parse.hpp"
#include "southbound/app.hpp"

namespace sdn::core {
class Config;
}

namespace sdn::apps {

// Cookie range owned by this app: every flow it installs has cookie top byte 0x01, and its
// deletes are filtered with this mask so they never touch other apps' flows.
inline constexpr uint64_t kForwardingCookie = 0x0100'0000'0000'0000ULL;
inline constexpr uint64_t kForwardingCookieMask = 0xff00'0000'0000'0000ULL;

// kFabric: paths across the discovered topology (needs the topology app; fabric.hpp);
// kLearning: per-switch MAC learning, for loop-free topologies without the topology app.
enum class ForwardingMode : uint8_t { kFabric, kLearning };

struct ForwardingConfig {
  ForwardingMode mode = ForwardingMode::kFabric;
  std::chrono::seconds idle_timeout{30};
  std::chrono::seconds hard_timeout{0};   // 0 = none
  uint16_t priority = 10;
  uint64_t cookie = kForwardingCookie;    // must keep top byte 0x01 (see kForwardingCookieMask)
  uint8_t table_id = 0;
  bool flood_unknown = true;              // unknown unicast destination: flood (else drop)
  bool proxy_arp = true;                  // fabric mode: answer ARP requests for known hosts
                                          // from the controller instead of flooding them
  size_t max_macs_per_switch = 100000;    // learning stops at the cap (counted), flooding goes on
  bool clear_flows_on_connect = true;     // delete our cookie range when a switch (re)connects
};

// Reads section [forwarding]: mode ("fabric" or "learning"), idle_timeout, hard_timeout (seconds, 0..65535), priority
// (0..65535), cookie (top byte must be 0x01), table (0..254), flood_unknown, proxy_arp,
// max_macs_per_switch (1..10,000,000), clear_flows_on_connect. Bad values are reported
// through cfg.finish() like every other layer's.
ForwardingConfig read_forwarding_config(core::Config& cfg, std::string_view section = "forwarding");

// A snapshot of the counters (read from any thread).
struct ForwardingCounters {
  uint64_t packet_ins = 0;
  uint64_t floods = 0;             // PacketOut to OFPP_FLOOD (broadcast/multicast/unknown)
  uint64_t flows_installed = 0;
  uint64_t learned = 0;            // new (dpid, mac) entries
  uint64_t moves = 0;              // known mac seen on another port
  uint64_t drops = 0;              // destination is the in_port, unknown with flooding off, bad source
  uint64_t parse_errors = 0;       // PacketIn data that pkt::parse rejected
  uint64_t ignored = 0;            // LLDP and 802.1D link-local group frames (not ours to forward)
  uint64_t mac_cap_exceeded = 0;   // a new mac not learned because the switch's table was full
  uint64_t ports_down = 0;         // port down / deleted events handled
  uint64_t flows_removed = 0;      // FlowRemoved received for our cookie range
};

using ShardStat = core::ShardStat;

class Forwarding final : public southbound::App {
 public:
  using Clock = southbound::Clock;

  explicit Forwarding(ForwardingConfig cfg = {});

  std::string_view name() const override { return "forwarding"; }
  void on_switch_up(southbound::SwitchContext& sw) override;
  void on_switch_down(uint64_t dpid) override;
  southbound::Disposition on_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now) override {
    handle_packet_in(sw, pin, now);
    return southbound::Disposition::kContinue;
  }
  void handle_packet_in(southbound::SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point now);
  void on_port_status(southbound::SwitchContext& sw, const ofp::PortStatus& ps) override;
  void on_flow_removed(southbound::SwitchContext& sw, const ofp::FlowRemoved& fr) override;

  const ForwardingConfig& config() const { return cfg_; }
  ForwardingCounters counters() const;

  // The learned port of `mac` on `dpid`, if any (for tests and read-only views).
  std::optional<uint32_t> port_of(uint64_t dpid, pkt::Mac mac) const;
  size_t mac_count(uint64_t dpid) const;
  size_t switch_count() const { return switches_.size(); }

  static southbound::AppFactory factory(ForwardingConfig cfg);

 private:
  using Stat = ShardStat;
  struct SwitchTable {
    absl::flat_hash_map<uint64_t, uint32_t> macs;  // eth addr -> port
  };

  void learn(southbound::SwitchContext& sw, SwitchTable& t, pkt::Mac src, uint32_t in_port);
  void flood(southbound::SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port);
  void drop(southbound::SwitchContext& sw, const ofp::PacketIn& pin, uint32_t in_port);
  void install(southbound::SwitchContext& sw, const ofp::PacketIn& pin, const pkt::Parsed& p, uint32_t in_port,
               uint32_t out_port);
  ofp::FlowMod delete_mod() const;

  ForwardingConfig cfg_;
  absl::flat_hash_map<uint64_t, SwitchTable> switches_;
  Stat packet_ins_, floods_, flows_installed_, learned_, moves_, drops_, parse_errors_, ignored_,
      mac_cap_exceeded_, ports_down_, flows_removed_;
};

}  // namespace sdn::apps
