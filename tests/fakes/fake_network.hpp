// A few FakeSwitches wired together with hosts on their ports, and one app acting as the
// controller: a frame sent by a host follows the fake flow tables hop by hop; a table miss
// becomes a PacketIn to the app, whose PacketOuts/FlowMods move the frame on. Tests use it
// to check end-to-end behaviour ("after the exchange, h1 reaches h2 with no PacketIn").
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fakes/fake_switch.hpp"
#include "southbound/app.hpp"

namespace sdn::test {

class FakeNetwork {
 public:
  explicit FakeNetwork(southbound::App& app) : app_(app) {}

  FakeSwitch& add_switch(uint64_t dpid, std::vector<uint32_t> ports = {1, 2, 3, 4}) {
    auto [it, _] = switches_.emplace(dpid, std::make_unique<FakeSwitch>(dpid, std::move(ports)));
    app_.on_switch_up(*it->second);
    return *it->second;
  }
  FakeSwitch& sw(uint64_t dpid) { return *switches_.at(dpid); }

  void link(uint64_t a, uint32_t pa, uint64_t b, uint32_t pb) {
    peers_[{a, pa}] = Endpoint{b, pb, {}};
    peers_[{b, pb}] = Endpoint{a, pa, {}};
  }
  void attach(const std::string& host, uint64_t dpid, uint32_t port) {
    for (auto it = peers_.begin(); it != peers_.end();)  // a host is in one place at a time
      it = it->second.host == host ? peers_.erase(it) : std::next(it);
    peers_[{dpid, port}] = Endpoint{0, 0, host};
    where_[host] = {dpid, port};
  }

  struct Delivery {
    std::vector<std::string> received_by;  // hosts the frame reached (once per copy)
    size_t packet_ins = 0;                 // table misses on the way
    size_t hops = 0;
  };

  // Host `from` sends `frame`; runs until no copy is in flight.
  Delivery send(const std::string& from, const pkt::Bytes& frame) {
    Delivery d;
    std::deque<std::pair<std::pair<uint64_t, uint32_t>, pkt::Bytes>> q;
    q.push_back({where_.at(from), frame});
    while (!q.empty() && d.hops < kMaxHops) {
      auto [at, bytes] = std::move(q.front());
      q.pop_front();
      ++d.hops;
      FakeSwitch& s = sw(at.first);
      const size_t mark = s.outputs().size();
      if (!s.process(bytes, at.second)) {
        ++d.packet_ins;
        ofp::PacketIn pin = s.packet_in(bytes, at.second);
        app_.on_packet_in(s, pin, s.now());
      }
      for (size_t i = mark; i < s.outputs().size(); ++i) {
        const Output& o = s.outputs()[i];
        auto peer = peers_.find({at.first, o.port});
        if (peer == peers_.end()) continue;  // nothing attached: the frame is lost
        if (!peer->second.host.empty()) {
          d.received_by.push_back(peer->second.host);
        } else {
          q.push_back({{peer->second.dpid, peer->second.port}, o.frame});
        }
      }
    }
    return d;
  }

  void advance(southbound::Clock::duration dt) {
    for (auto& [_, s] : switches_) s->advance(dt);
  }

  static constexpr size_t kMaxHops = 1000;  // a loop in the fake topology, not a hang

 private:
  struct Endpoint {
    uint64_t dpid = 0;
    uint32_t port = 0;
    std::string host;  // non-empty: a host, not a switch port
  };
  southbound::App& app_;
  std::map<uint64_t, std::unique_ptr<FakeSwitch>> switches_;
  std::map<std::pair<uint64_t, uint32_t>, Endpoint> peers_;
  std::map<std::string, std::pair<uint64_t, uint32_t>> where_;
};

}  // namespace sdn::test
