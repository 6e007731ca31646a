// CPAM's flow layout (README.md has the table): the standing last-hop rule of a VIP, the
// session rules of both directions, the repair rules, and the translated delivery of the packet
// that triggered them. Pure builders: (config, session, path) -> per-switch batches.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "apps/cpam/config.hpp"
#include "apps/topology/paths.hpp"
#include "ofp/message.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::cpam::flows {

// One session's addresses: client c (initiator) and server s.
struct Session {
  uint8_t proto = 0;
  uint32_t c_real = 0, s_real = 0;  // real addresses
  uint32_t vc = 0, vs = 0;          // pinned VIPs (addresses)
  uint64_t c_mac = 0, s_mac = 0;    // real MACs
  uint16_t cport = 0, sport = 0;    // TCP/UDP ports (0 for ICMP and others)
};

// What goes to one switch: a batch (followed by a barrier) and which first-hop flows of the
// session it carries (bit 0 client side, bit 1 server side), confirmed by the barrier.
struct SwitchBatch {
  uint64_t dpid = 0;
  std::vector<ofp::Body> batch;
  uint8_t first_hop_bits = 0;
  // The bytes of the batch's PacketOut (which views them): set by the sender right before
  // send_batch, since the batch may run on another shard after the PacketIn is gone.
  std::shared_ptr<const std::vector<uint8_t>> frame;
  // Points every PacketOut of the batch at `frame`.
  void attach_frame();
};
struct Plan {
  std::vector<SwitchBatch> switches;
  SwitchBatch& at(uint64_t dpid);
  // Adds `po` carrying a copy of `data` to the batch of `dpid`.
  void add_packet_out(uint64_t dpid, ofp::PacketOut po, std::span<const uint8_t> data);
};

// The standing rule of VIP `vip` at its host's access switch: traffic from the fabric (source
// already a VIP) to `vip` gets the host's real MAC and address and leaves by its port.
ofp::FlowMod vip_rule(const CpamConfig& cfg, uint32_t vip_index, uint32_t real_ip, uint64_t real_mac, uint32_t port);
// The DELETE of that rule (by its cookie).
ofp::FlowMod vip_rule_delete(const CpamConfig& cfg, uint32_t vip_index);
ofp::FlowMod vip_rule_delete(uint8_t table_id, uint32_t vip_index);  // the same, from the table alone

// Both directions of a session along fwd (client -> server) and rev (server -> client).
Plan plan_session(const CpamConfig& cfg, const Session& s, const std::vector<topology::Hop>& fwd,
                  const std::vector<topology::Hop>& rev, unsigned owner_shard, uint64_t id);
// The rest of a VIP-to-VIP path from a transit switch: transit rules, then the standing rule of
// the destination VIP and the packet's delivery (a copy of `data`) at the last hop (`deliver`
// false: no delivery; the caller sends the packet on itself).
Plan plan_repair(const CpamConfig& cfg, const pkt::Parsed& p, const std::vector<topology::Hop>& hops,
                 uint32_t dst_vip_index, uint32_t dst_real, uint64_t dst_mac, unsigned shard, uint64_t id,
                 std::span<const uint8_t> data, bool deliver = true);
// The PacketOut that delivers the triggering packet to its destination host, translated as the
// flows would have (source to its pinned VIP, destination to its real address).
ofp::PacketOut deliver(const Session& s, bool from_client, uint32_t out_port);
// The PacketOut that sends the triggering packet on towards a switch another cluster instance
// masters, as the fabric carries it (source already its pinned VIP, destination still the
// peer's VIP): that instance's standing VIP rule or repair takes it from there.
ofp::PacketOut onward(const Session& s, bool from_client, uint32_t out_port);

}  // namespace sdn::apps::cpam::flows
