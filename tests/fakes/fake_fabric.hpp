// A whole fake controller + fabric for multi-switch app tests: FakeSwitches wired by links,
// hosts on ports, and several shards' worth of app instances (a switch belongs to shard
// dpid % shards, like a real connection belongs to one shard). It is also the apps'
// southbound::Runtime: posts, with_switch and timers are queued and run by run() on a manual
// clock, so cross-shard traffic (topology events to the home shard, flows to other shards'
// switches) really goes through the same calls as in the real runtime. Frames follow the fake
// flow tables hop by hop; a table miss becomes a PacketIn to the apps of the switch's shard.
// FlowRemoved messages (timeouts while the clock moves, deletes by FlowMod) go to the apps of
// the switch's shard too, from run(): every entry point below ends with it, so a test that
// sends to a switch directly (sw(dpid).send(...)) calls run() to have them delivered.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <set>
#include <vector>

#include "fakes/fake_switch.hpp"
#include "southbound/app.hpp"

namespace sdn::test {

class FakeFabric final : public southbound::Runtime {
 public:
  using Factory = std::function<std::vector<std::unique_ptr<southbound::App>>(unsigned shard)>;

  FakeFabric(unsigned shards, const Factory& make) {
    for (unsigned i = 0; i < shards; ++i) apps_.push_back(make(i));
  }
  ~FakeFabric() override {
    for (auto& shard : apps_)
      for (auto& a : shard) a->on_stop();
    posted_.clear();
  }

  void start() {
    for (unsigned i = 0; i < apps_.size(); ++i)
      for (auto& a : apps_[i]) {
        cur_ = i;
        a->on_start(*this, i);
      }
    cur_ = kNoShard;
    run();
  }

  unsigned shard_of(uint64_t dpid) const { return static_cast<unsigned>(dpid % apps_.size()); }
  std::vector<std::unique_ptr<southbound::App>>& apps(unsigned shard) { return apps_.at(shard); }

  FakeSwitch& add_switch(uint64_t dpid, std::vector<uint32_t> ports) {
    auto sw = std::make_unique<FakeSwitch>(dpid, std::move(ports));
    sw->advance(now_ - Clock::time_point{});
    auto& ref = *sw;
    switches_[dpid] = std::move(sw);
    cursor_[dpid] = 0;
    cur_ = shard_of(dpid);
    for (auto& a : apps_[shard_of(dpid)]) a->on_switch_up(ref);
    run();
    return ref;
  }
  void remove_switch(uint64_t dpid) {
    switches_.erase(dpid);
    cursor_.erase(dpid);
    cur_ = shard_of(dpid);
    for (auto& a : apps_[shard_of(dpid)]) a->on_switch_down(dpid);
    run();
  }
  FakeSwitch& sw(uint64_t dpid) { return *switches_.at(dpid); }
  bool has_switch(uint64_t dpid) const { return switches_.contains(dpid); }

  void link(uint64_t a, uint32_t pa, uint64_t b, uint32_t pb) {
    peers_[{a, pa}] = End{b, pb, {}};
    peers_[{b, pb}] = End{a, pa, {}};
  }
  // The cable goes dead without either switch noticing (only LLDP can tell).
  void cut_silently(uint64_t a, uint32_t pa, uint64_t b, uint32_t pb) {
    peers_.erase({a, pa});
    peers_.erase({b, pb});
  }
  // The cable is pulled: both ports go down and both switches send a PORT_STATUS.
  void pull_cable(uint64_t a, uint32_t pa, uint64_t b, uint32_t pb) {
    cut_silently(a, pa, b, pb);
    port_down(a, pa);
    port_down(b, pb);
  }
  void port_down(uint64_t dpid, uint32_t port) {
    ofp::PortStatus ps = sw(dpid).set_link_down(port);
    cur_ = shard_of(dpid);
    for (auto& a : apps_[shard_of(dpid)]) a->on_port_status(sw(dpid), ps);
    run();
  }
  void attach(const std::string& host, uint64_t dpid, uint32_t port) {
    for (auto it = peers_.begin(); it != peers_.end();)
      it = it->second.host == host ? peers_.erase(it) : std::next(it);
    peers_[{dpid, port}] = End{0, 0, host};
    where_[host] = {dpid, port};
  }

  struct Delivery {
    std::vector<std::string> received_by;  // hosts reached (once per copy)
    size_t packet_ins = 0;                 // table misses on the way
  };
  // Host `from` sends `frame`; runs until nothing is in flight.
  Delivery send(const std::string& from, const pkt::Bytes& frame) {
    const size_t pin0 = packet_ins_;
    const size_t inbox0 = deliveries_.size();
    auto [dpid, port] = where_.at(from);
    arrive(dpid, port, frame);
    run();
    Delivery d;
    d.packet_ins = packet_ins_ - pin0;
    for (size_t i = inbox0; i < deliveries_.size(); ++i) d.received_by.push_back(deliveries_[i].first);
    return d;
  }
  // Frames hosts received so far: (host, frame).
  const std::vector<std::pair<std::string, pkt::Bytes>>& deliveries() const { return deliveries_; }
  void clear_deliveries() { deliveries_.clear(); }

  // Moves the clock in steps, firing due timers and expiring flows on the way.
  void advance(Clock::duration d) {
    const Clock::time_point target = now_ + d;
    while (true) {
      Clock::time_point next = target;
      if (!timers_.empty() && timers_.begin()->first < next) next = timers_.begin()->first;
      step_to(next);
      run();  // flows that expired on the way reach the apps before timers due now fire
      while (!timers_.empty() && timers_.begin()->first <= now_) {
        auto fn = std::move(timers_.begin()->second);
        timers_.erase(timers_.begin());
        fn();
        run();
      }
      if (now_ >= target) break;
    }
    run();
  }

  // Runs posted work, moves frames and hands FlowRemoved messages to the apps until the
  // fabric is quiet.
  void run() {
    for (size_t guard = 0; guard < kMaxSteps; ++guard) {
      bool progress = false;
      while (!posted_.empty()) {
        auto fn = std::move(posted_.front());
        posted_.pop_front();
        fn();
        progress = true;
      }
      for (auto& [dpid, s] : switches_) {
        size_t& c = cursor_[dpid];
        while (c < s->outputs().size()) {
          const Output o = s->outputs()[c++];  // copy: delivering may grow outputs()
          progress = true;
          deliver(dpid, o);
        }
        for (const ofp::FlowRemoved& fr : s->take_flow_removed()) {
          progress = true;
          cur_ = shard_of(dpid);
          for (auto& a : apps_[shard_of(dpid)]) a->on_flow_removed(*s, fr);
        }
      }
      if (!progress) return;
    }
    loops_ = true;  // a forwarding loop (or a storm): tests check looped() == false
  }
  bool looped() const { return loops_; }
  size_t packet_ins() const { return packet_ins_; }

  // ---- southbound::Runtime ----
  unsigned shard_count() const override { return static_cast<unsigned>(apps_.size()); }
  void post(unsigned shard, std::function<void()> fn) override {
    posted_.push_back([this, shard, fn = std::move(fn)] {
      cur_ = shard;
      fn();
    });
  }
  // The shard of what is running now, as a real shard thread would know it.
  unsigned current_shard() const override { return cur_; }
  // Like the real runtime: at once when called on the switch's own shard, else posted there.
  bool with_switch(uint64_t dpid, std::function<void(southbound::SwitchContext&)> fn) override {
    if (!switches_.contains(dpid) || remote_.contains(dpid)) return false;
    if (cur_ == shard_of(dpid)) {
      fn(*switches_.at(dpid));
      return true;
    }
    posted_.push_back([this, dpid, fn = std::move(fn)] {
      cur_ = shard_of(dpid);
      if (auto it = switches_.find(dpid); it != switches_.end()) fn(*it->second);
    });
    return true;
  }
  // A cluster peer masters these switches (docs/cluster.md): is_up says no and with_switch
  // refuses, as the real runtime does for a switch it is a slave of. Their PacketIns still reach
  // the apps here, standing in for the peer that continues the path.
  void set_remote(uint64_t dpid, bool remote) {
    if (remote) remote_.insert(dpid); else remote_.erase(dpid);
  }
  bool is_up(uint64_t dpid) const override { return switches_.contains(dpid) && !remote_.contains(dpid); }
  void call_after(unsigned shard, Clock::duration delay, std::function<void()> fn) override {
    timers_.emplace(now_ + delay, [this, shard, fn = std::move(fn)] {
      cur_ = shard;
      fn();
    });
  }
  Clock::time_point now() const override { return now_; }

  static constexpr size_t kMaxSteps = 100000;

 private:
  struct End {
    uint64_t dpid = 0;
    uint32_t port = 0;
    std::string host;
  };

  void step_to(Clock::time_point t) {
    if (t <= now_) return;
    const auto dt = t - now_;
    now_ = t;
    for (auto& [_, s] : switches_) s->advance(dt);
  }
  void deliver(uint64_t dpid, const Output& o) {
    auto peer = peers_.find({dpid, o.port});
    if (peer == peers_.end()) return;  // nothing attached (or a cut cable): lost
    if (!peer->second.host.empty()) {
      deliveries_.emplace_back(peer->second.host, o.frame);
      return;
    }
    arrive(peer->second.dpid, peer->second.port, o.frame);
  }
  void arrive(uint64_t dpid, uint32_t port, const pkt::Bytes& frame) {
    auto it = switches_.find(dpid);
    if (it == switches_.end()) return;
    FakeSwitch& s = *it->second;
    if (s.process(frame, port)) return;
    ++packet_ins_;
    ofp::PacketIn pin = s.packet_in(frame, port);
    cur_ = shard_of(dpid);
    for (auto& a : apps_[shard_of(dpid)])
      if (a->on_packet_in(s, pin, now_) == southbound::Disposition::kStop) break;
  }

  std::vector<std::vector<std::unique_ptr<southbound::App>>> apps_;
  std::map<uint64_t, std::unique_ptr<FakeSwitch>> switches_;
  std::map<uint64_t, size_t> cursor_;
  std::map<std::pair<uint64_t, uint32_t>, End> peers_;
  std::map<std::string, std::pair<uint64_t, uint32_t>> where_;
  unsigned cur_ = kNoShard;
  std::deque<std::function<void()>> posted_;
  std::multimap<Clock::time_point, std::function<void()>> timers_;
  std::vector<std::pair<std::string, pkt::Bytes>> deliveries_;
  Clock::time_point now_{};
  size_t packet_ins_ = 0;
  bool loops_ = false;
  std::set<uint64_t> remote_;
};

}  // namespace sdn::test
