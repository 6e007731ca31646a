// A SwitchContext for app tests: records what the app sends AND applies it. FlowMods go into
// an in-memory OpenFlow 1.3 flow table (add/modify/delete, strict and not, priority, cookie
// mask, out_port filter, idle/hard timeouts on a manual clock); PacketOuts and buffered
// packets released by FlowMods become recorded outputs. Tests then ask the table how a
// frame would be forwarded (STYLE.md: check the resulting flow table, not the call sequence).
// Only table 0 lookups with apply-actions are modelled (no goto, groups, meters). Of the
// actions, output and set_field (Ethernet and IPv4 addresses, DSCP/ECN, TCP/UDP ports, with
// the checksums fixed as Open vSwitch does) act on the frame; the others are ignored. As in
// OVS, a FlowMod whose set_field needs more than its match gives (ipv4_dst without
// eth_type=0x0800) is rejected into errors().
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emu/datapath.hpp"
#include "ofp/message.hpp"
#include "pkt/bytes.hpp"
#include "southbound/app.hpp"

namespace sdn::test {

using southbound::Clock;

using FlowEntry = emu::FlowEntry;

// One frame leaving the switch.
struct Output {
  uint32_t port = 0;  // a physical port; OFPP_CONTROLLER / LOCAL kept as numbers
  ofp::Bytes frame;
};

class FakeSwitch : public southbound::SwitchContext {
 public:
  explicit FakeSwitch(uint64_t dpid, std::vector<uint32_t> ports = {1, 2, 3, 4});

  // ---- SwitchContext ----
  uint64_t dpid() const override { return features_.datapath_id; }
  const ofp::FeaturesReply& features() const override { return features_; }
  const std::vector<ofp::Port>& ports() const override { return ports_; }
  void send(ofp::Body body, southbound::Lane lane = southbound::Lane::kHigh) override;
  void send_batch(std::vector<ofp::Body> batch, southbound::Lane lane, southbound::BatchCallback done) override;
  // Recorded with its callback; a test answers by calling requests()[i].on_reply itself.
  void send_request(ofp::Body request, southbound::ReplyCallback on_reply) override;

  // ---- manual clock ----
  Clock::time_point now() const { return now_; }
  // Moves the clock and expires flows whose idle or hard timeout has passed (a FlowRemoved
  // for those with OFPFF_SEND_FLOW_REM, see removed()).
  void advance(Clock::duration d);

  // ---- data plane ----
  // Highest-priority entry of table 0 matching the frame, or nullptr on a table miss.
  // Bumps that entry's counters and idle timer like a real packet would.
  const FlowEntry* lookup(pkt::ByteView frame, uint32_t in_port);
  // The actions lookup() would apply, nullopt on a table miss.
  std::optional<ofp::ActionList> lookup_actions(pkt::ByteView frame, uint32_t in_port);
  // Runs a frame through the table: on a hit applies its actions in order (an output emits
  // the frame as the set_fields before it left it) and returns true; on a miss returns false
  // (the caller then builds a PacketIn with packet_in()). A set_field the fake does not model,
  // or whose layer the frame lacks, is skipped with a line in errors().
  bool process(pkt::ByteView frame, uint32_t in_port);
  // The PacketIn a table miss would produce. With buffering on, the frame is kept under a
  // new buffer_id (and `data` is still the full frame, as with max_len = 0xffff).
  // `data` views `frame`: keep it alive while the app runs.
  ofp::PacketIn packet_in(pkt::ByteView frame, uint32_t in_port);
  void set_buffering(bool on) { buffering_ = on; }
  // A port goes down: frames output to it are dropped, and the PortStatus to give the app.
  ofp::PortStatus set_link_down(uint32_t port);

  // ---- records ----
  const std::vector<FlowEntry>& flows() const { return table_.entries(); }
  std::vector<FlowEntry> flows_in_cookie_range(uint64_t cookie, uint64_t mask) const {
    return table_.in_cookie_range(cookie, mask);
  }
  const std::vector<ofp::Body>& sent() const { return sent_; }
  const std::vector<Output>& outputs() const { return outputs_; }
  // Every FlowRemoved the switch sent (idle/hard timeout or delete of an entry with
  // OFPFF_SEND_FLOW_REM), oldest first.
  const std::vector<ofp::FlowRemoved>& removed() const { return removed_; }
  // The FlowRemoved messages not yet taken, oldest first, and forgets them: what a controller
  // connection would read next. FakeFabric hands them to the apps; removed() keeps its record.
  std::vector<ofp::FlowRemoved> take_flow_removed() { return std::exchange(unread_removed_, {}); }
  const std::vector<std::string>& errors() const { return errors_; }  // what a switch would reject
  struct Request {
    ofp::Body body;
    southbound::ReplyCallback on_reply;
  };
  std::vector<Request>& requests() { return requests_; }
  void clear_records();  // sent, outputs, removed, errors (not flows, requests or take_flow_removed())
  template <class T>
  size_t sent_count() const {
    size_t n = 0;
    for (const auto& b : sent_) n += std::holds_alternative<T>(b) ? 1 : 0;
    return n;
  }

 private:
  void apply(const ofp::Body& body);
  void apply_flow_mod(const ofp::FlowMod& fm);
  void apply_packet_out(const ofp::PacketOut& po);
  void run_actions(const ofp::ActionList& actions, pkt::ByteView frame, uint32_t in_port);
  void note_removed(std::vector<ofp::FlowRemoved> removed);

  ofp::FeaturesReply features_;
  std::vector<ofp::Port> ports_;
  std::vector<uint32_t> down_ports_;
  Clock::time_point now_{};
  emu::FlowTable table_;
  std::vector<ofp::Body> sent_;
  std::deque<ofp::Bytes> sent_data_;  // owned copies of PacketOut data (stable addresses)
  std::vector<Output> outputs_;
  std::vector<ofp::FlowRemoved> removed_;
  std::vector<ofp::FlowRemoved> unread_removed_;
  std::vector<std::string> errors_;
  std::vector<Request> requests_;
  bool buffering_ = false;
  uint32_t next_buffer_id_ = 1;
  struct Buffered {
    uint32_t id;
    uint32_t in_port;
    ofp::Bytes frame;
  };
  std::vector<Buffered> buffers_;
};

using emu::frame_field;

}  // namespace sdn::test
