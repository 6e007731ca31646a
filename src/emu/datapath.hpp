// An emulated OpenFlow 1.3 datapath: the flow table and the action engine that app tests
// (tests/fakes FakeSwitch) and the benchmark's emulated switches (ofbench) both run, so the
// two judge the controller's FlowMods by the same rules. Table semantics follow 6.4 and
// 7.3.4.1 (add replaces an identical entry, strict and non-strict modify/delete, cookie mask,
// out_port filter, idle/hard timeouts) and the OXM prerequisites of 7.2.3.6; set_field
// rewrites Ethernet/IPv4/TCP/UDP fields and fixes checksums as Open vSwitch does.
// Not modelled: groups, meters, goto-table pipelines, VLAN push/pop, write-actions.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ofp/message.hpp"
#include "pkt/bytes.hpp"

namespace sdn::emu {

using Clock = std::chrono::steady_clock;

struct FlowEntry {
  uint8_t table_id = 0;
  uint16_t priority = 0;
  ofp::Match match;
  uint64_t cookie = 0;
  uint16_t idle_timeout = 0;
  uint16_t hard_timeout = 0;
  uint16_t flags = 0;
  ofp::InstructionList instructions;
  Clock::time_point installed{};
  Clock::time_point last_used{};
  uint64_t packet_count = 0;
  uint64_t byte_count = 0;

  // The apply-actions list (empty = drop).
  ofp::ActionList actions() const;
  // The ports of its output actions.
  std::vector<uint32_t> output_ports() const;
};

// Why a switch refuses a FlowMod: the OFPT_ERROR type/code it answers (7.4.4) and a reason.
struct Rejection {
  uint16_t type = 0;
  uint16_t code = 0;
  const char* why = "";
};

// OFPRR_* (7.4.2)
inline constexpr uint8_t kRemovedIdle = 0, kRemovedHard = 1, kRemovedDelete = 2;

class FlowTable {
 public:
  // 0 = no limit; with a limit, an ADD of a new entry past it fails with OFPFMFC_TABLE_FULL.
  explicit FlowTable(size_t max_entries = 0) : max_entries_(max_entries) {}

  // Applies an ADD/MODIFY/DELETE. FlowRemoved messages for deleted entries that asked for
  // them (OFPFF_SEND_FLOW_REM) are appended to `removed`. The buffer_id is the caller's: the
  // table does not hold packets.
  std::optional<Rejection> apply(const ofp::FlowMod& fm, Clock::time_point now, std::vector<ofp::FlowRemoved>& removed);

  // Highest-priority entry of `table_id` matching the frame, or nullptr on a miss; bumps its
  // counters and idle timer like a real packet does.
  const FlowEntry* lookup(pkt::ByteView frame, uint32_t in_port, Clock::time_point now, uint8_t table_id = 0);

  // Removes entries whose idle or hard timeout has passed (FlowRemoved as for deletes).
  void expire(Clock::time_point now, std::vector<ofp::FlowRemoved>& removed);

  // Non-strict selection (6.4, and flow/aggregate stats requests, 7.3.5.2): the entry is in
  // `table_id` (or it is OFPTT_ALL), its cookie matches under `cookie_mask`, it outputs to
  // `out_port` (unless OFPP_ANY), and its match is `match` or more specific.
  static bool selects(const FlowEntry& e, uint8_t table_id, uint64_t cookie, uint64_t cookie_mask, uint32_t out_port,
                      const ofp::Match& match);

  // The entry an ADD of (table_id, priority, match) would replace, or nullptr.
  const FlowEntry* find(uint8_t table_id, uint16_t priority, const ofp::Match& match) const;

  const std::vector<FlowEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  std::vector<FlowEntry> in_cookie_range(uint64_t cookie, uint64_t mask) const;

 private:
  void remove_marked(std::vector<bool>& gone, uint8_t reason, Clock::time_point now, std::vector<ofp::FlowRemoved>& removed);

  size_t max_entries_ = 0;
  std::vector<FlowEntry> entries_;                // in insertion order
  std::vector<std::string> ids_;                  // each entry's identity, beside it
  absl::flat_hash_map<std::string, size_t> index_;  // (table, priority, match) -> position
};

// The OXM value of `f` in a frame as a switch computes it for matching (in_port included);
// nullopt when the frame lacks the field (ipv4_src of an ARP frame).
std::optional<uint64_t> frame_field(pkt::ByteView frame, uint32_t in_port, ofp::OxmField f);

// Applies one set_field to `frame`; nullptr when done, else why it was skipped.
const char* set_field(pkt::Bytes& frame, const ofp::OxmTlv& f);

// Runs an action list over a copy of `frame`: set_fields rewrite it, and each output action
// calls `output(port, frame as rewritten so far)` with the port as written (FLOOD, ALL,
// IN_PORT, TABLE, CONTROLLER are for the caller to expand). Unmodelled actions are skipped;
// a set_field that cannot apply is reported through `error` and skipped.
void run_actions(const ofp::ActionList& actions, pkt::ByteView frame,
                 const std::function<void(uint32_t port, const pkt::Bytes& frame)>& output,
                 const std::function<void(std::string)>& error);

}  // namespace sdn::emu
