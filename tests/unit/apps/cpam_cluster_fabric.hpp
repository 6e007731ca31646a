// A fake fabric shared by several controller instances, for CPAM's cluster tests: one set of
// FakeSwitches, links and hosts on one manual clock; each instance is a southbound::Runtime
// with its own shards' apps and sees only the switches it masters (on_switch_up when it
// becomes master, on_switch_down when it stops; with_switch refuses the others, as a SLAVE's
// writes are refused). An observer instance (the topology app) sees every switch: a PacketIn
// goes to its apps first, then to the master's. The same event loop as tests/fakes/fake_fabric
// (posted work, timers, frames hop by hop, FlowRemoved to the master), single-threaded, except
// that post() may come from the tests' real threads (CPAM's hand-off thread posts its answers
// back to a shard, as on the real runtime): that queue has a lock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fakes/fake_switch.hpp"
#include "southbound/app.hpp"

namespace sdn::test {

class ClusterFabric {
 public:
  using Factory = std::function<std::vector<std::unique_ptr<southbound::App>>(unsigned shard)>;

  class Instance final : public southbound::Runtime {
   public:
    Instance(ClusterFabric& f, unsigned shards, const Factory& make, bool sees_all)
        : f_(f), sees_all_(sees_all) {
      for (unsigned i = 0; i < shards; ++i) apps_.push_back(make(i));
    }
    ~Instance() override { stop(); }
    void stop() {
      if (stopped_) return;
      stopped_ = true;
      for (auto& shard : apps_)
        for (auto& a : shard) a->on_stop();
    }
    unsigned shard_of(uint64_t dpid) const { return static_cast<unsigned>(dpid % apps_.size()); }
    std::vector<std::unique_ptr<southbound::App>>& apps(unsigned shard) { return apps_.at(shard); }
    bool masters(uint64_t dpid) const { return sees_all_ || f_.master_of(dpid) == this; }

    unsigned shard_count() const override { return static_cast<unsigned>(apps_.size()); }
    void post(unsigned shard, std::function<void()> fn) override {
      f_.push_posted([this, shard, fn = std::move(fn)] {
        if (stopped_) return;
        cur_ = shard;
        fn();
      });
    }
    unsigned current_shard() const override { return cur_; }
    bool is_up(uint64_t dpid) const override { return f_.switches_.contains(dpid) && masters(dpid); }
    bool with_switch(uint64_t dpid, std::function<void(southbound::SwitchContext&)> fn) override {
      if (!f_.switches_.contains(dpid) || !masters(dpid)) return false;
      if (cur_ == shard_of(dpid)) {
        fn(*f_.switches_.at(dpid));
        return true;
      }
      f_.push_posted([this, dpid, fn = std::move(fn)] {
        if (stopped_ || !masters(dpid)) return;
        cur_ = shard_of(dpid);
        if (auto it = f_.switches_.find(dpid); it != f_.switches_.end()) fn(*it->second);
      });
      return true;
    }
    void call_after(unsigned shard, Clock::duration delay, std::function<void()> fn) override {
      f_.timers_.emplace(f_.now_ + delay, [this, shard, fn = std::move(fn)] {
        if (stopped_) return;
        cur_ = shard;
        fn();
      });
    }
    Clock::time_point now() const override { return f_.now_; }

    // Switch events, run as on the switch's shard.
    void up(southbound::SwitchContext& sw) {
      if (stopped_) return;
      cur_ = shard_of(sw.dpid());
      for (auto& a : apps_[cur_]) a->on_switch_up(sw);
    }
    void down(uint64_t dpid) {
      if (stopped_) return;
      cur_ = shard_of(dpid);
      for (auto& a : apps_[cur_]) a->on_switch_down(dpid);
    }
    southbound::Disposition packet_in(FakeSwitch& s, const ofp::PacketIn& pin) {
      if (stopped_) return southbound::Disposition::kContinue;
      cur_ = shard_of(s.dpid());
      for (auto& a : apps_[cur_])
        if (a->on_packet_in(s, pin, f_.now_) == southbound::Disposition::kStop) return southbound::Disposition::kStop;
      return southbound::Disposition::kContinue;
    }
    void flow_removed(FakeSwitch& s, const ofp::FlowRemoved& fr) {
      if (stopped_) return;
      cur_ = shard_of(s.dpid());
      for (auto& a : apps_[cur_]) a->on_flow_removed(s, fr);
    }
    void start() {
      for (unsigned i = 0; i < apps_.size(); ++i)
        for (auto& a : apps_[i]) {
          cur_ = i;
          a->on_start(*this, i);
        }
      cur_ = kNoShard;
    }

   private:
    ClusterFabric& f_;
    bool sees_all_;
    bool stopped_ = false;
    unsigned cur_ = kNoShard;
    std::vector<std::vector<std::unique_ptr<southbound::App>>> apps_;
  };

  ~ClusterFabric() {
    for (auto& i : instances_) i->stop();
    std::lock_guard lock(posted_mu_);
    posted_.clear();
    timers_.clear();
  }

  Instance& add_instance(unsigned shards, const Factory& make, bool sees_all = false) {
    instances_.push_back(std::make_unique<Instance>(*this, shards, make, sees_all));
    auto& i = *instances_.back();
    i.start();
    run();
    return i;
  }
  // The instance stops (its apps' on_stop; its timers and posted work are void). Its switches
  // stay where they are until set_master hands them over.
  void stop_instance(Instance& i) {
    i.stop();
    for (auto& [d, m] : master_)
      if (m == &i) m = nullptr;
  }

  FakeSwitch& add_switch(uint64_t dpid, std::vector<uint32_t> ports, Instance* master) {
    auto sw = std::make_unique<FakeSwitch>(dpid, std::move(ports));
    sw->advance(now_ - Clock::time_point{});
    auto& ref = *sw;
    switches_[dpid] = std::move(sw);
    cursor_[dpid] = 0;
    master_[dpid] = master;
    for (auto& i : instances_)
      if (i->masters(dpid)) up(*i, ref);
    run();
    return ref;
  }
  // Mastership moves: the old master's apps see the switch go, the new one's see it come (and
  // CPAM's flow-stats request is answered from the switch's table).
  void set_master(uint64_t dpid, Instance* to) {
    Instance* from = master_[dpid];
    if (from == to) return;
    if (from != nullptr) from->down(dpid);
    run();
    master_[dpid] = to;
    if (to != nullptr) up(*to, *switches_.at(dpid));
    run();
  }
  Instance* master_of(uint64_t dpid) const {
    auto it = master_.find(dpid);
    return it == master_.end() ? nullptr : it->second;
  }
  FakeSwitch& sw(uint64_t dpid) { return *switches_.at(dpid); }

  void link(uint64_t a, uint32_t pa, uint64_t b, uint32_t pb) {
    peers_[{a, pa}] = End{b, pb, {}};
    peers_[{b, pb}] = End{a, pa, {}};
  }
  void attach(const std::string& host, uint64_t dpid, uint32_t port) {
    peers_[{dpid, port}] = End{0, 0, host};
    where_[host] = {dpid, port};
  }

  struct Delivery {
    std::vector<std::string> received_by;
    size_t packet_ins = 0;
  };
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
  const std::vector<std::pair<std::string, pkt::Bytes>>& deliveries() const { return deliveries_; }
  void clear_deliveries() { deliveries_.clear(); }

  void advance(Clock::duration d) {
    const Clock::time_point target = now_ + d;
    while (true) {
      Clock::time_point next = target;
      if (!timers_.empty() && timers_.begin()->first < next) next = timers_.begin()->first;
      step_to(next);
      run();
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

  void run() {
    for (size_t guard = 0; guard < 100000; ++guard) {
      bool progress = false;
      while (auto fn = pop_posted()) {
        fn();
        progress = true;
      }
      for (auto& [dpid, s] : switches_) {
        size_t& c = cursor_[dpid];
        while (c < s->outputs().size()) {
          const Output o = s->outputs()[c++];
          progress = true;
          deliver(dpid, o);
        }
        for (const ofp::FlowRemoved& fr : s->take_flow_removed()) {
          progress = true;
          for (auto& i : instances_)
            if (i->masters(dpid)) i->flow_removed(*s, fr);
        }
        if (!s->requests().empty()) {
          progress = true;
          answer_flow_stats(*s);
        }
      }
      if (!progress) return;
    }
  }
  Clock::time_point now() const { return now_; }

 private:
  struct End {
    uint64_t dpid = 0;
    uint32_t port = 0;
    std::string host;
  };
  void up(Instance& i, FakeSwitch& s) {
    i.up(s);
  }
  // CPAM's flow-stats request on switch-up, answered from the switch's table.
  static void answer_flow_stats(FakeSwitch& sw) {
    auto reqs = std::exchange(sw.requests(), {});
    for (auto& r : reqs) {
      const auto* mp = std::get_if<ofp::MultipartRequest>(&r.body);
      if (mp == nullptr || mp->type != ofp::MultipartType::kFlow) continue;
      const auto& fr = std::get<ofp::FlowStatsRequest>(mp->body);
      std::vector<ofp::FlowStats> all;
      for (const auto& e : sw.flows_in_cookie_range(fr.cookie, fr.cookie_mask)) {
        ofp::FlowStats f;
        f.table_id = e.table_id;
        f.priority = e.priority;
        f.cookie = e.cookie;
        f.idle_timeout = e.idle_timeout;
        f.hard_timeout = e.hard_timeout;
        f.flags = e.flags;
        f.match = e.match;
        f.instructions = e.instructions;
        all.push_back(std::move(f));
      }
      ofp::MultipartReply rep;
      rep.type = ofp::MultipartType::kFlow;
      rep.body = std::move(all);
      ofp::Message m{1, rep};
      r.on_reply(&m, nullptr, false);
    }
  }
  void step_to(Clock::time_point t) {
    if (t <= now_) return;
    const auto dt = t - now_;
    now_ = t;
    for (auto& [_, s] : switches_) s->advance(dt);
  }
  void deliver(uint64_t dpid, const Output& o) {
    auto peer = peers_.find({dpid, o.port});
    if (peer == peers_.end()) return;
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
    // The observer (topology) first, then the master: as the apps' order on one instance.
    for (auto& i : instances_)
      if (i->masters(dpid) && i->packet_in(s, pin) == southbound::Disposition::kStop) break;
  }

  void push_posted(std::function<void()> fn) {
    std::lock_guard lock(posted_mu_);
    posted_.push_back(std::move(fn));
  }
  std::function<void()> pop_posted() {
    std::lock_guard lock(posted_mu_);
    if (posted_.empty()) return {};
    auto fn = std::move(posted_.front());
    posted_.pop_front();
    return fn;
  }

  friend class Instance;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::map<uint64_t, std::unique_ptr<FakeSwitch>> switches_;
  std::map<uint64_t, Instance*> master_;
  std::map<uint64_t, size_t> cursor_;
  std::map<std::pair<uint64_t, uint32_t>, End> peers_;
  std::map<std::string, std::pair<uint64_t, uint32_t>> where_;
  std::mutex posted_mu_;
  std::deque<std::function<void()>> posted_;
  std::multimap<Clock::time_point, std::function<void()>> timers_;
  std::vector<std::pair<std::string, pkt::Bytes>> deliveries_;
  Clock::time_point now_{};
  size_t packet_ins_ = 0;
};

}  // namespace sdn::test
