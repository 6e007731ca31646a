// The emulated datapath: frame keys, matching, the flow table and set_field (see datapath.hpp).
#include "emu/datapath.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <utility>

#include "pkt/checksum.hpp"
#include "pkt/parse.hpp"

namespace sdn::emu {

using ofp::OxmField;

namespace {

constexpr size_t kFields = static_cast<size_t>(OxmField::kArpTha) + 1;

struct FrameKey {
  std::array<std::optional<uint64_t>, kFields> v{};
  void set(OxmField f, uint64_t x) { v[static_cast<size_t>(f)] = x; }
  std::optional<uint64_t> get(OxmField f) const {
    const auto i = static_cast<size_t>(f);
    return i < kFields ? v[i] : std::nullopt;
  }
};

// What a switch extracts from a frame for matching (OXM semantics of 7.2.3.7; for a tagged
// frame eth_type is the type after the tags, as Open vSwitch does for one tag).
FrameKey key_of(pkt::ByteView frame, uint32_t in_port) {
  FrameKey k;
  k.set(OxmField::kInPort, in_port);
  auto p = pkt::parse(frame, pkt::ParseOptions{true});
  if (!p) {
    auto eth = pkt::parse_ethernet(frame);
    if (!eth) return k;  // runt: only in_port
    k.set(OxmField::kEthDst, eth->dst.value);
    k.set(OxmField::kEthSrc, eth->src.value);
    return k;
  }
  k.set(OxmField::kEthDst, p->eth.dst.value);
  k.set(OxmField::kEthSrc, p->eth.src.value);
  if (p->eth.is_ethernet_ii()) k.set(OxmField::kEthType, p->eth.ethertype);
  if (const auto* t = p->vlan()) {
    k.set(OxmField::kVlanVid, t->vid | ofp::kOfpVidPresent);
    k.set(OxmField::kVlanPcp, t->pcp);
  } else {
    k.set(OxmField::kVlanVid, 0);  // OFPVID_NONE
  }
  if (p->arp) {
    k.set(OxmField::kArpOp, p->arp->op);
    k.set(OxmField::kArpSpa, p->arp->spa.value);
    k.set(OxmField::kArpTpa, p->arp->tpa.value);
    k.set(OxmField::kArpSha, p->arp->sha.value);
    k.set(OxmField::kArpTha, p->arp->tha.value);
  }
  if (p->ipv4) {
    k.set(OxmField::kIpDscp, p->ipv4->dscp);
    k.set(OxmField::kIpEcn, p->ipv4->ecn);
    k.set(OxmField::kIpProto, p->ipv4->protocol);
    k.set(OxmField::kIpv4Src, p->ipv4->src.value);
    k.set(OxmField::kIpv4Dst, p->ipv4->dst.value);
  }
  if (p->tcp) {
    k.set(OxmField::kTcpSrc, p->tcp->src_port);
    k.set(OxmField::kTcpDst, p->tcp->dst_port);
  }
  if (p->udp) {
    k.set(OxmField::kUdpSrc, p->udp->src_port);
    k.set(OxmField::kUdpDst, p->udp->dst_port);
  }
  if (p->icmp) {
    k.set(OxmField::kIcmpv4Type, p->icmp->type);
    k.set(OxmField::kIcmpv4Code, p->icmp->code);
  }
  return k;
}

uint64_t mask_of(const ofp::OxmTlv& t) { return t.mask.value_or(~uint64_t{0}); }

bool packet_matches(const ofp::Match& m, const FrameKey& k) {
  for (const auto& t : m.fields) {
    auto v = k.get(t.field);
    if (!v || ((*v ^ t.value) & mask_of(t)) != 0) return false;
  }
  return true;
}

// Same fields, values and masks, in any order.
bool identical(const ofp::Match& a, const ofp::Match& b) {
  if (a.fields.size() != b.fields.size()) return false;
  for (const auto& t : a.fields) {
    const auto* o = b.find(t.field);
    if (o == nullptr || mask_of(*o) != mask_of(t) || ((o->value ^ t.value) & mask_of(t)) != 0) return false;
  }
  return true;
}

// Non-strict MODIFY/DELETE selection (6.4): the entry's match is `req` or more specific.
bool at_least_as_specific(const ofp::Match& entry, const ofp::Match& req) {
  for (const auto& r : req.fields) {
    const auto* e = entry.find(r.field);
    if (e == nullptr) return false;
    const uint64_t rm = mask_of(r);
    if ((mask_of(*e) & rm) != rm || ((e->value ^ r.value) & rm) != 0) return false;
  }
  return true;
}

// The out_port filter of deletes and stats requests (7.3.4.1, 7.3.5.2): OFPP_ANY = no filter.
bool outputs_to(const FlowEntry& e, uint32_t out_port) {
  if (out_port == ofp::port::kAny) return true;
  const auto ports = e.output_ports();
  return std::find(ports.begin(), ports.end(), out_port) != ports.end();
}

// OXM prerequisites (7.2.3.6): the switch rejects a match that lacks them.
const char* missing_prerequisite(const ofp::Match& m) {
  auto type = m.get(OxmField::kEthType);
  auto proto = m.get(OxmField::kIpProto);
  for (const auto& t : m.fields) {
    switch (t.field) {
      case OxmField::kIpv4Src:
      case OxmField::kIpv4Dst:
      case OxmField::kIpProto:
      case OxmField::kIpDscp:
      case OxmField::kIpEcn:
        if (type != 0x0800) return "IPv4 field without eth_type=0x0800";
        break;
      case OxmField::kArpOp:
      case OxmField::kArpSpa:
      case OxmField::kArpTpa:
      case OxmField::kArpSha:
      case OxmField::kArpTha:
        if (type != 0x0806) return "ARP field without eth_type=0x0806";
        break;
      case OxmField::kTcpSrc:
      case OxmField::kTcpDst:
        if (proto != 6) return "TCP port without ip_proto=6";
        break;
      case OxmField::kUdpSrc:
      case OxmField::kUdpDst:
        if (proto != 17) return "UDP port without ip_proto=17";
        break;
      case OxmField::kIcmpv4Type:
      case OxmField::kIcmpv4Code:
        if (proto != 1) return "ICMP field without ip_proto=1";
        break;
      default:
        break;
    }
  }
  return nullptr;
}

bool cookie_selected(uint64_t entry_cookie, const ofp::FlowMod& fm) {
  return ((entry_cookie ^ fm.cookie) & fm.cookie_mask) == 0;
}

// A set_field must not need more than the match guarantees (OVS answers
// OFPBAC_MATCH_INCONSISTENT): judged as if the field were one more match field.
const char* set_field_inconsistent(const ofp::Match& m, const ofp::InstructionList& instructions) {
  for (const auto& ins : instructions) {
    const auto* apply = std::get_if<ofp::InstrApplyActions>(&ins);
    if (apply == nullptr) continue;
    for (const auto& a : apply->actions) {
      const auto* sf = std::get_if<ofp::ActionSetField>(&a);
      if (sf == nullptr) continue;
      ofp::Match with = m;
      with.set(sf->field.field, sf->field.value);
      if (const char* why = missing_prerequisite(with)) return why;
    }
  }
  return nullptr;
}

// ---- set_field (7.2.5 OFPAT_SET_FIELD), as Open vSwitch's packets.c does it ----

// One checksum field covering a rewritten word: its frame offset, and whether it is UDP's
// (RFC 768: 0 means "none" and stays 0; a computed 0 is sent as 0xffff).
struct SumAt {
  size_t off;
  bool udp = false;
};

// RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), like OVS's recalc_csum16/32: only the changed
// bytes are needed (a first fragment does not carry its whole segment), and a checksum that
// was wrong stays wrong rather than being quietly repaired.
uint16_t checksum_update(uint16_t hc, pkt::ByteView before, pkt::ByteView after) {
  const auto nhc = static_cast<uint16_t>(~hc);
  std::array<uint8_t, 6> neg{static_cast<uint8_t>(nhc >> 8), static_cast<uint8_t>(nhc)};
  for (size_t i = 0; i < before.size(); ++i) neg[2 + i] = static_cast<uint8_t>(~before[i]);
  const uint32_t sum = pkt::checksum_add(0, pkt::ByteView(neg).first(2 + before.size()));
  return pkt::checksum_finish(pkt::checksum_add(sum, after));
}

// Overwrites the `width` (2 or 4) word-aligned bytes at `off` with `value`, big-endian, and
// updates the checksums in `sums` that cover them.
void rewrite(pkt::Bytes& frame, size_t off, uint32_t value, size_t width, std::initializer_list<SumAt> sums) {
  std::array<uint8_t, 4> before{}, after{};
  for (size_t i = 0; i < width; ++i) {
    before[i] = frame[off + i];
    after[i] = static_cast<uint8_t>(value >> (8 * (width - 1 - i)));
  }
  pkt::Writer w(frame);
  for (const SumAt s : sums) {
    const uint16_t old = pkt::load_be16(frame, s.off);
    if (s.udp && old == 0) continue;
    uint16_t sum = checksum_update(old, pkt::ByteView(before).first(width), pkt::ByteView(after).first(width));
    if (s.udp && sum == 0) sum = 0xffff;
    w.put_be16_at(s.off, sum);
  }
  std::copy_n(after.begin(), width, frame.begin() + static_cast<std::ptrdiff_t>(off));
}

}  // namespace

// Applies one set_field to `frame`; nullptr when done, else why it was skipped.
const char* set_field(pkt::Bytes& frame, const ofp::OxmTlv& f) {
  if (f.mask) return "set_field with a mask (OF 1.3 has none)";
  if (f.field == OxmField::kEthDst || f.field == OxmField::kEthSrc) {
    if (frame.size() < pkt::kEthHeaderLen) return "set_field eth on a runt frame";
    const size_t off = f.field == OxmField::kEthDst ? 0 : 6;
    for (size_t i = 0; i < 6; ++i) frame[off + i] = static_cast<uint8_t>(f.value >> (8 * (5 - i)));
    return nullptr;  // no checksum covers the MACs
  }
  auto p = pkt::parse(frame, pkt::ParseOptions{true});
  if (!p || !p->ipv4) return "set_field of an IPv4/L4 field on a frame without IPv4";
  const size_t ip = static_cast<size_t>(p->eth.payload.data() - frame.data());
  const size_t l4 = static_cast<size_t>(p->ipv4->payload.data() - frame.data());
  const SumAt ip_sum{ip + 10};
  // The TCP/UDP checksum (if the L4 header is here: not in later fragments) covers the
  // addresses through the pseudo-header; ICMP's does not.
  const std::optional<SumAt> l4_sum = p->tcp   ? std::optional<SumAt>(SumAt{l4 + 16})
                                      : p->udp ? std::optional<SumAt>(SumAt{l4 + 6, true})
                                               : std::nullopt;
  const uint16_t tos_word = pkt::load_be16(frame, ip);  // version/IHL, DSCP/ECN
  switch (f.field) {
    case OxmField::kIpv4Src:
    case OxmField::kIpv4Dst: {
      const size_t off = ip + (f.field == OxmField::kIpv4Src ? 12 : 16);
      const auto v = static_cast<uint32_t>(f.value);
      if (l4_sum) {
        rewrite(frame, off, v, 4, {ip_sum, *l4_sum});
      } else {
        rewrite(frame, off, v, 4, {ip_sum});
      }
      return nullptr;
    }
    case OxmField::kIpDscp:
      rewrite(frame, ip, (tos_word & 0xff03U) | static_cast<uint32_t>((f.value & 0x3f) << 2), 2, {ip_sum});
      return nullptr;
    case OxmField::kIpEcn:
      rewrite(frame, ip, (tos_word & 0xfffcU) | static_cast<uint32_t>(f.value & 0x3), 2, {ip_sum});
      return nullptr;
    case OxmField::kTcpSrc:
    case OxmField::kTcpDst:
      if (!p->tcp) return "set_field tcp port on a frame without a TCP header";
      rewrite(frame, l4 + (f.field == OxmField::kTcpSrc ? 0 : 2), static_cast<uint32_t>(f.value & 0xffff), 2,
              {*l4_sum});
      return nullptr;
    case OxmField::kUdpSrc:
    case OxmField::kUdpDst:
      if (!p->udp) return "set_field udp port on a frame without a UDP header";
      rewrite(frame, l4 + (f.field == OxmField::kUdpSrc ? 0 : 2), static_cast<uint32_t>(f.value & 0xffff), 2,
              {*l4_sum});
      return nullptr;
    default:
      return "set_field of a field the emulated datapath does not model";
  }
}


ofp::ActionList FlowEntry::actions() const {
  ofp::ActionList out;
  for (const auto& ins : instructions)
    if (const auto* a = std::get_if<ofp::InstrApplyActions>(&ins)) out.insert(out.end(), a->actions.begin(), a->actions.end());
  return out;
}

std::vector<uint32_t> FlowEntry::output_ports() const {
  std::vector<uint32_t> ports;
  for (const auto& a : actions())
    if (const auto* o = std::get_if<ofp::ActionOutput>(&a)) ports.push_back(o->port);
  return ports;
}

std::optional<uint64_t> frame_field(pkt::ByteView frame, uint32_t in_port, ofp::OxmField f) {
  return key_of(frame, in_port).get(f);
}

std::vector<FlowEntry> FlowTable::in_cookie_range(uint64_t cookie, uint64_t mask) const {
  std::vector<FlowEntry> out;
  for (const auto& e : entries_)
    if (((e.cookie ^ cookie) & mask) == 0) out.push_back(e);
  return out;
}

namespace {

// The identity of an entry for ADD's replace rule and strict commands (6.4): table,
// priority and the match as a set of (field, value & mask, mask), in field order.
std::string identity(uint8_t table_id, uint16_t priority, const ofp::Match& m) {
  std::array<const ofp::OxmTlv*, 64> fields{};
  size_t n = 0;
  for (const auto& t : m.fields)
    if (n < fields.size()) fields[n++] = &t;
  std::sort(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(n),
            [](const ofp::OxmTlv* a, const ofp::OxmTlv* b) { return a->field < b->field; });
  std::string key;
  key.reserve(3 + n * 17);
  key.push_back(static_cast<char>(table_id));
  key.push_back(static_cast<char>(priority >> 8));
  key.push_back(static_cast<char>(priority));
  auto put64 = [&](uint64_t v) {
    for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(v >> (8 * i)));
  };
  for (size_t i = 0; i < n; ++i) {
    const uint64_t mask = mask_of(*fields[i]);
    key.push_back(static_cast<char>(fields[i]->field));
    put64(fields[i]->value & mask);
    put64(mask);
  }
  return key;
}

ofp::FlowRemoved removed_message(const FlowEntry& e, uint8_t reason, Clock::time_point now) {
  ofp::FlowRemoved fr;
  fr.cookie = e.cookie;
  fr.priority = e.priority;
  fr.reason = reason;
  fr.table_id = e.table_id;
  fr.idle_timeout = e.idle_timeout;
  fr.hard_timeout = e.hard_timeout;
  const auto age = std::chrono::duration_cast<std::chrono::nanoseconds>(now - e.installed).count();
  fr.duration_sec = static_cast<uint32_t>(age / 1'000'000'000);
  fr.duration_nsec = static_cast<uint32_t>(age % 1'000'000'000);
  fr.packet_count = e.packet_count;
  fr.byte_count = e.byte_count;
  fr.match = e.match;
  return fr;
}

}  // namespace

bool FlowTable::selects(const FlowEntry& e, uint8_t table_id, uint64_t cookie, uint64_t cookie_mask, uint32_t out_port,
                        const ofp::Match& match) {
  if (table_id != ofp::kTableAll && e.table_id != table_id) return false;
  if (((e.cookie ^ cookie) & cookie_mask) != 0) return false;
  return outputs_to(e, out_port) && at_least_as_specific(e.match, match);
}

const FlowEntry* FlowTable::find(uint8_t table_id, uint16_t priority, const ofp::Match& match) const {
  auto it = index_.find(identity(table_id, priority, match));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

// Compacts in place; only the entries behind the first removed one move, and their identities
// are kept beside them (ids_), so a DELETE of one rule in a table of thousands costs hash updates
// of the entries after it, not an identity rebuilt for every entry (ofbench at 10,000 hosts spent
// 43 % of its time there).
void FlowTable::remove_marked(std::vector<bool>& gone, uint8_t reason, Clock::time_point now,
                              std::vector<ofp::FlowRemoved>& removed) {
  size_t kept = 0;
  bool any = false;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (gone[i]) {
      any = true;
      if (entries_[i].flags & ofp::kFlowFlagSendFlowRem) removed.push_back(removed_message(entries_[i], reason, now));
      index_.erase(ids_[i]);
      continue;
    }
    if (kept != i) {
      entries_[kept] = std::move(entries_[i]);
      ids_[kept] = std::move(ids_[i]);
      index_[ids_[kept]] = kept;
    }
    ++kept;
  }
  if (!any) return;
  entries_.resize(kept);
  ids_.resize(kept);
}

std::optional<Rejection> FlowTable::apply(const ofp::FlowMod& fm, Clock::time_point now,
                                          std::vector<ofp::FlowRemoved>& removed) {
  using Cmd = ofp::FlowModCommand;
  if (const char* why = missing_prerequisite(fm.match)) return Rejection{ofp::err::kBadMatch, 9, why};  // OFPBMC_BAD_PREREQ
  if (fm.command != Cmd::kDelete && fm.command != Cmd::kDeleteStrict) {
    if (const char* why = set_field_inconsistent(fm.match, fm.instructions))
      return Rejection{ofp::err::kBadAction, 10, why};  // OFPBAC_MATCH_INCONSISTENT
  }
  const bool strict = fm.command == Cmd::kModifyStrict || fm.command == Cmd::kDeleteStrict;
  auto selected = [&](const FlowEntry& e) {
    if (fm.table_id != ofp::kTableAll && e.table_id != fm.table_id) return false;
    if (!cookie_selected(e.cookie, fm)) return false;
    if (strict) return e.priority == fm.priority && identical(e.match, fm.match);
    return at_least_as_specific(e.match, fm.match);
  };

  switch (fm.command) {
    case Cmd::kAdd: {
      if (fm.table_id == ofp::kTableAll) return Rejection{ofp::err::kFlowModFailed, 2, "flow_mod add to OFPTT_ALL"};  // OFPFMFC_BAD_TABLE_ID
      FlowEntry e;
      e.table_id = fm.table_id;
      e.priority = fm.priority;
      e.match = fm.match;
      e.cookie = fm.cookie;
      e.idle_timeout = fm.idle_timeout;
      e.hard_timeout = fm.hard_timeout;
      e.flags = fm.flags;
      e.instructions = fm.instructions;
      e.installed = e.last_used = now;
      std::string id = identity(e.table_id, e.priority, e.match);
      if (auto it = index_.find(id); it != index_.end()) {
        entries_[it->second] = std::move(e);  // 6.4: replaces, counters cleared
        return std::nullopt;
      }
      if (max_entries_ != 0 && entries_.size() >= max_entries_)
        return Rejection{ofp::err::kFlowModFailed, 1, "flow table full"};  // OFPFMFC_TABLE_FULL
      index_.emplace(id, entries_.size());
      ids_.push_back(std::move(id));
      entries_.push_back(std::move(e));
      return std::nullopt;
    }
    case Cmd::kModify:
    case Cmd::kModifyStrict:
      for (auto& e : entries_)
        if (selected(e)) e.instructions = fm.instructions;
      return std::nullopt;
    case Cmd::kDelete:
    case Cmd::kDeleteStrict: {
      std::vector<bool> gone(entries_.size(), false);
      for (size_t i = 0; i < entries_.size(); ++i) {
        if (selected(entries_[i]) && outputs_to(entries_[i], fm.out_port)) gone[i] = true;
      }
      remove_marked(gone, kRemovedDelete, now, removed);
      return std::nullopt;
    }
  }
  return Rejection{ofp::err::kFlowModFailed, ofp::err::kFmfcBadCommand, "unknown flow_mod command"};
}

const FlowEntry* FlowTable::lookup(pkt::ByteView frame, uint32_t in_port, Clock::time_point now, uint8_t table_id) {
  const FrameKey k = key_of(frame, in_port);
  FlowEntry* best = nullptr;
  for (auto& e : entries_) {
    if (e.table_id != table_id || !packet_matches(e.match, k)) continue;
    if (best == nullptr || e.priority > best->priority) best = &e;
  }
  if (best != nullptr) {
    best->last_used = now;
    ++best->packet_count;
    best->byte_count += frame.size();
  }
  return best;
}

void FlowTable::expire(Clock::time_point now, std::vector<ofp::FlowRemoved>& removed) {
  std::vector<bool> idle(entries_.size(), false);
  bool any_idle = false, any_hard = false;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const FlowEntry& e = entries_[i];
    if (e.idle_timeout != 0 && now - e.last_used >= std::chrono::seconds(e.idle_timeout)) {
      idle[i] = any_idle = true;
    } else if (e.hard_timeout != 0 && now - e.installed >= std::chrono::seconds(e.hard_timeout)) {
      any_hard = true;
    }
  }
  // Idle first, then hard: positions shift after the first pass, so the second re-marks.
  if (any_idle) remove_marked(idle, kRemovedIdle, now, removed);
  if (any_hard) {
    std::vector<bool> h(entries_.size(), false);
    for (size_t i = 0; i < entries_.size(); ++i) {
      const FlowEntry& e = entries_[i];
      h[i] = e.hard_timeout != 0 && now - e.installed >= std::chrono::seconds(e.hard_timeout);
    }
    remove_marked(h, kRemovedHard, now, removed);
  }
}

void run_actions(const ofp::ActionList& actions, pkt::ByteView original,
                 const std::function<void(uint32_t port, const pkt::Bytes& frame)>& output,
                 const std::function<void(std::string)>& error) {
  pkt::Bytes frame(original.begin(), original.end());  // as the actions so far left it
  for (const auto& a : actions) {
    if (const auto* sf = std::get_if<ofp::ActionSetField>(&a)) {
      if (const char* why = set_field(frame, sf->field))
        error(std::string(why) + " (field " + std::to_string(static_cast<int>(sf->field.field)) + "), skipped");
      continue;
    }
    if (const auto* o = std::get_if<ofp::ActionOutput>(&a)) output(o->port, frame);
    // vlan push/pop, dec_nw_ttl, group: not modelled
  }
}

}  // namespace sdn::emu
