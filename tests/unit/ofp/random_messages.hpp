// Random well-formed domain messages for the round-trip property tests (encode -> decode ->
// equal). Values stay inside what the wire can carry; the generator covers every Body
// alternative, every action, instruction and OXM field the codec models.
#pragma once

#include <random>

#include "ofp/message.hpp"

namespace sdn::ofp::test {

class RandomMessages {
 public:
  explicit RandomMessages(uint64_t seed) : rng_(seed) {}

  uint64_t bits(int n) { return n >= 64 ? rng_() : rng_() & ((uint64_t{1} << n) - 1); }
  size_t upto(size_t n) { return static_cast<size_t>(rng_() % (n + 1)); }
  bool coin() { return (rng_() & 1) != 0; }

  std::string str(size_t max) {
    std::string s(upto(max), 'x');
    for (auto& c : s) c = static_cast<char>('a' + rng_() % 26);
    return s;
  }
  Bytes bytes(size_t max) {
    Bytes b(upto(max));
    for (auto& c : b) c = static_cast<uint8_t>(rng_());
    return b;
  }

  OxmTlv oxm(bool allow_mask = true) {
    static constexpr int kWidth[] = {4, 4, 8, 6, 6, 2, 2, 1, 1, 1, 1, 4, 4, 2, 2, 2, 2, 2, 2, 1, 1, 2, 4, 4, 6, 6};
    static constexpr bool kMaskable[] = {0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    const auto f = static_cast<uint8_t>(upto(25));
    OxmTlv t{static_cast<OxmField>(f), bits(8 * kWidth[f]), std::nullopt};
    if (allow_mask && kMaskable[f] && coin()) t.mask = bits(8 * kWidth[f]);
    return t;
  }
  Match match(bool unique = true) {
    Match m;
    for (size_t n = upto(6); n > 0; --n) {
      OxmTlv t = oxm();
      if (unique && m.find(t.field) != nullptr) continue;
      m.fields.push_back(t);
    }
    return m;
  }
  Action action() {
    switch (upto(5)) {
      case 0: return ActionOutput{static_cast<uint32_t>(bits(32)), static_cast<uint16_t>(bits(16))};
      case 1: return ActionPushVlan{static_cast<uint16_t>(bits(16))};
      case 2: return ActionPopVlan{};
      case 3: return ActionGroup{static_cast<uint32_t>(bits(32))};
      case 4: return ActionDecNwTtl{};
      default: return ActionSetField{oxm(false)};
    }
  }
  ActionList actions() {
    ActionList l;
    for (size_t n = upto(5); n > 0; --n) l.push_back(action());
    return l;
  }
  Instruction instruction() {
    switch (upto(4)) {
      case 0: return InstrGotoTable{static_cast<uint8_t>(bits(8))};
      case 1: return InstrWriteActions{actions()};
      case 2: return InstrApplyActions{actions()};
      case 3: return InstrClearActions{};
      default: return InstrMeter{static_cast<uint32_t>(bits(32))};
    }
  }
  InstructionList instructions() {
    InstructionList l;
    for (size_t n = upto(4); n > 0; --n) l.push_back(instruction());
    return l;
  }
  Port port() {
    Port p;
    p.port_no = static_cast<uint32_t>(bits(32));
    p.hw_addr = bits(48);
    p.name = str(15);
    for (uint32_t* v : {&p.config, &p.state, &p.curr, &p.advertised, &p.supported, &p.peer, &p.curr_speed, &p.max_speed})
      *v = static_cast<uint32_t>(bits(32));
    return p;
  }
  std::vector<Bucket> buckets() {
    std::vector<Bucket> v(upto(3));
    for (auto& b : v) {
      b = Bucket{static_cast<uint16_t>(bits(16)), static_cast<uint32_t>(bits(32)), static_cast<uint32_t>(bits(32)), actions()};
    }
    return v;
  }

  MultipartRequest mp_request() {
    static constexpr MultipartType kTypes[] = {MultipartType::kDesc, MultipartType::kFlow, MultipartType::kAggregate,
                                               MultipartType::kTable, MultipartType::kPortStats, MultipartType::kGroupDesc,
                                               MultipartType::kMeter, MultipartType::kPortDesc};
    MultipartRequest r;
    r.flags = static_cast<uint16_t>(bits(16));
    r.type = kTypes[upto(7)];
    switch (r.type) {
      case MultipartType::kFlow:
      case MultipartType::kAggregate:
        r.body = FlowStatsRequest{static_cast<uint8_t>(bits(8)), static_cast<uint32_t>(bits(32)),
                                  static_cast<uint32_t>(bits(32)), bits(64), bits(64), match()};
        break;
      case MultipartType::kPortStats: r.body = PortStatsRequest{static_cast<uint32_t>(bits(32))}; break;
      case MultipartType::kMeter: r.body = MeterStatsRequest{static_cast<uint32_t>(bits(32))}; break;
      default: break;
    }
    return r;
  }
  MultipartReply mp_reply() {
    MultipartReply r;
    r.flags = static_cast<uint16_t>(bits(16));
    switch (upto(7)) {
      case 0:
        r.type = MultipartType::kDesc;
        r.body = Desc{str(255), str(255), str(255), str(31), str(255)};
        break;
      case 1: {
        r.type = MultipartType::kFlow;
        std::vector<FlowStats> v(upto(4));
        for (auto& f : v) {
          f = FlowStats{static_cast<uint8_t>(bits(8)), static_cast<uint32_t>(bits(32)), static_cast<uint32_t>(bits(32)),
                        static_cast<uint16_t>(bits(16)), static_cast<uint16_t>(bits(16)), static_cast<uint16_t>(bits(16)),
                        static_cast<uint16_t>(bits(16)), bits(64), bits(64), bits(64), match(), instructions()};
        }
        r.body = std::move(v);
        break;
      }
      case 2:
        r.type = MultipartType::kAggregate;
        r.body = AggregateStats{bits(64), bits(64), static_cast<uint32_t>(bits(32))};
        break;
      case 3: {
        r.type = MultipartType::kTable;
        std::vector<TableStats> v(upto(4));
        for (auto& t : v) t = TableStats{static_cast<uint8_t>(bits(8)), static_cast<uint32_t>(bits(32)), bits(64), bits(64)};
        r.body = std::move(v);
        break;
      }
      case 4: {
        r.type = MultipartType::kPortStats;
        std::vector<PortStats> v(upto(3));
        for (auto& p : v) {
          p.port_no = static_cast<uint32_t>(bits(32));
          for (uint64_t* c : {&p.rx_packets, &p.tx_packets, &p.rx_bytes, &p.tx_bytes, &p.rx_dropped, &p.tx_dropped,
                              &p.rx_errors, &p.tx_errors, &p.rx_frame_err, &p.rx_over_err, &p.rx_crc_err, &p.collisions})
            *c = bits(64);
          p.duration_sec = static_cast<uint32_t>(bits(32));
          p.duration_nsec = static_cast<uint32_t>(bits(32));
        }
        r.body = std::move(v);
        break;
      }
      case 5: {
        r.type = MultipartType::kGroupDesc;
        std::vector<GroupDesc> v(upto(3));
        for (auto& g : v) g = GroupDesc{static_cast<uint8_t>(bits(8)), static_cast<uint32_t>(bits(32)), buckets()};
        r.body = std::move(v);
        break;
      }
      case 6: {
        r.type = MultipartType::kMeter;
        std::vector<MeterStats> v(upto(3));
        for (auto& m : v) {
          m = MeterStats{static_cast<uint32_t>(bits(32)), static_cast<uint32_t>(bits(32)), bits(64), bits(64),
                         static_cast<uint32_t>(bits(32)), static_cast<uint32_t>(bits(32)), {}};
          for (size_t n = upto(3); n > 0; --n) m.bands.push_back({bits(64), bits(64)});
        }
        r.body = std::move(v);
        break;
      }
      default: {
        r.type = MultipartType::kPortDesc;
        std::vector<Port> v(upto(3));
        for (auto& p : v) p = port();
        r.body = std::move(v);
        break;
      }
    }
    return r;
  }

  // A random message; `frame` must outlive the result (PacketIn/PacketOut view it).
  Message message(size_t alternative, std::span<const uint8_t> frame) {
    Message m;
    m.xid = static_cast<uint32_t>(bits(32));
    const auto u8 = [this] { return static_cast<uint8_t>(bits(8)); };
    const auto u16 = [this] { return static_cast<uint16_t>(bits(16)); };
    const auto u32 = [this] { return static_cast<uint32_t>(bits(32)); };
    switch (alternative) {
      case 0: m.body = Hello{u32()}; break;
      case 1: m.body = ErrorMsg{u16(), u16(), bytes(80)}; break;
      case 2: m.body = EchoRequest{bytes(32)}; break;
      case 3: m.body = EchoReply{bytes(32)}; break;
      case 4: m.body = FeaturesRequest{}; break;
      case 5: m.body = FeaturesReply{bits(64), u32(), u8(), u8(), u32()}; break;
      case 6: m.body = GetConfigRequest{}; break;
      case 7: m.body = GetConfigReply{{u16(), u16()}}; break;
      case 8: m.body = SetConfig{{u16(), u16()}}; break;
      case 9: {
        PacketIn p{u32(), u16(), u8(), u8(), bits(64), match(false), frame.first(upto(frame.size()))};
        m.body = p;
        break;
      }
      case 10:
        m.body = FlowRemoved{bits(64), u16(), u8(), u8(), u32(), u32(), u16(), u16(), bits(64), bits(64), match()};
        break;
      case 11: m.body = PortStatus{u8(), port()}; break;
      case 12: {
        PacketOut p{coin() ? kNoBuffer : u32(), u32(), actions(), {}};
        if (p.buffer_id == kNoBuffer) p.data = frame.first(upto(frame.size()));
        m.body = p;
        break;
      }
      case 13:
        m.body = FlowMod{bits(64), bits(64), u8(), static_cast<FlowModCommand>(upto(4)), u16(), u16(), u16(),
                         u32(), u32(), u32(), u16(), match(), instructions()};
        break;
      case 14: m.body = GroupMod{u16(), u8(), u32(), buckets()}; break;
      case 15: {
        MeterMod mm{u16(), u16(), u32(), {}};
        for (size_t n = upto(3); n > 0; --n) {
          const uint16_t type = coin() ? 1 : 2;
          mm.bands.push_back(MeterBand{type, u32(), u32(), type == 2 ? u8() : uint8_t{0}});
        }
        m.body = mm;
        break;
      }
      case 16: m.body = BarrierRequest{}; break;
      case 17: m.body = BarrierReply{}; break;
      case 18: m.body = RoleRequest{{u32(), bits(64)}}; break;
      case 19: m.body = RoleReply{{u32(), bits(64)}}; break;
      case 20: m.body = mp_request(); break;
      default: m.body = mp_reply(); break;
    }
    return m;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace sdn::ofp::test
