// The interface between the switch runtime and controller apps. An app instance is created
// per shard (AppFactory) and only ever called on that shard's thread, so per-switch state in
// an app needs no lock: a switch lives on one shard for life.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "ofp/message.hpp"

namespace sdn::southbound {

using Clock = std::chrono::steady_clock;

// Which write lane a batch goes into: kHigh (reactive replies) is always flushed before
// kLow (bulk/periodic work such as rotations), so a reply never queues behind a burst.
enum class Lane : uint8_t { kHigh = 0, kLow = 1 };

// Outcome of a confirmed batch: ok when the switch's BARRIER_REPLY arrived with no ERROR for
// any message of the batch; otherwise the first ERROR (or a disconnect) is reported.
struct BatchResult {
  bool ok = true;
  bool disconnected = false;
  ofp::ErrorMsg error;     // valid when !ok && !disconnected
  uint32_t failed_xid = 0;
};
using BatchCallback = std::function<void(const BatchResult&)>;

// A cookie range (flows with cookie & mask == cookie & mask), mask a run of high bits.
struct CookieRange {
  uint64_t cookie = 0;
  uint64_t mask = 0;
  bool operator==(const CookieRange&) const = default;
};
// Ranges covering every cookie outside `keep` (each mask a run of high bits; others are
// ignored): one delete-all when `keep` is empty, else at most 64 per kept prefix. What the
// runtime's clear-on-connect deletes when apps resynchronise their own range (App::kept_cookies).
inline std::vector<CookieRange> cookie_complement(const std::vector<CookieRange>& keep) {
  auto prefix_len = [](uint64_t m) { return m == 0 ? 0 : __builtin_popcountll(m); };
  auto contiguous = [&](uint64_t m) { return m == 0 || m == ~uint64_t{0} << (64 - prefix_len(m)); };
  auto mask_of = [](int len) { return len == 0 ? uint64_t{0} : ~uint64_t{0} << (64 - len); };
  std::vector<CookieRange> k;
  for (const auto& r : keep)
    if (contiguous(r.mask)) k.push_back({r.cookie & r.mask, r.mask});
  std::vector<CookieRange> out;
  // Walks the binary prefix tree: a subtree with no kept prefix inside is deleted whole.
  std::function<void(uint64_t, int)> walk = [&](uint64_t value, int len) {
    const uint64_t m = mask_of(len);
    bool inside = false;
    for (const auto& r : k) {
      const int rl = prefix_len(r.mask);
      if (rl <= len && (value & r.mask) == r.cookie) return;  // all of it is kept
      if (rl > len && (r.cookie & m) == value) inside = true;
    }
    if (!inside) {
      out.push_back({value, m});
      return;
    }
    walk(value, len + 1);
    walk(value | (uint64_t{1} << (63 - len)), len + 1);
  };
  walk(0, 0);
  return out;
}

// Reply to a request (multipart, role, get-config). Called once per reply message (a
// multipart reply in several parts calls it once per part; `more` is true until the last),
// or once with reply == nullptr when an ERROR (err != nullptr) or a disconnect settles it.
using ReplyCallback =
    std::function<void(const ofp::Message* reply, const ofp::ErrorMsg* err, bool more)>;

// What an app sees of one connected switch.
class SwitchContext {
 public:
  virtual ~SwitchContext() = default;
  virtual uint64_t dpid() const = 0;
  virtual const ofp::FeaturesReply& features() const = 0;
  virtual const std::vector<ofp::Port>& ports() const = 0;
  // Queue one message (xid assigned by the runtime). Written at the end of this loop turn.
  virtual void send(ofp::Body body, Lane lane = Lane::kHigh) = 0;
  // Queue a batch followed by a BARRIER_REQUEST; `done` runs on this shard when the barrier
  // reply (or an ERROR for one of the batch's xids, or a disconnect) settles it.
  virtual void send_batch(std::vector<ofp::Body> batch, Lane lane, BatchCallback done) = 0;
  // Send a request whose reply is routed to `on_reply` (on this shard) instead of the apps.
  virtual void send_request(ofp::Body request, ReplyCallback on_reply) = 0;
};

// What an app instance reaches beyond the switch it is called for (Seastar-style: state owned
// by one shard, reached from the others by posting a message). Thread-safe; every function it
// runs runs on the named shard's thread.
class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual unsigned shard_count() const = 0;
  // Runs `fn` on shard `shard`'s thread, after what is already queued there.
  virtual void post(unsigned shard, std::function<void()> fn) = 0;
  // Bookkeeping (a confirm, a host refresh, an erase): runs `fn` on shard `shard` as post does,
  // but only once the calling shard's current turn is over, the writes of its replies included,
  // and what one turn has for one shard goes in one post (one wake-up of that thread). Off the
  // shards, and by default: post.
  virtual void post_soon(unsigned shard, std::function<void()> fn) { post(shard, std::move(fn)); }
  // Runs `fn` with switch `dpid` on the thread of the shard that owns it: at once when called
  // from that thread, else posted. False (fn dropped) when no switch of that dpid is up; a
  // switch that goes away before a posted `fn` runs drops it too.
  virtual bool with_switch(uint64_t dpid, std::function<void(SwitchContext&)> fn) = 0;
  // with_switch for bookkeeping: at once on the owner's thread, else carried by post_soon (after
  // the calling turn's replies are written, one wake-up of the owner per turn). The default:
  // with_switch.
  virtual bool with_switch_soon(uint64_t dpid, std::function<void(SwitchContext&)> fn) {
    return with_switch(dpid, std::move(fn));
  }
  // Run to completion (docs/runtime.md, "Replies across shards"): `batch` and a barrier go to
  // switch `dpid` from the calling thread, whichever shard owns it, so a reply never waits for
  // the owner's thread to wake up. `queued` runs as soon as the batch is on the wire or queued
  // for it (on the calling thread; on the owner's when the runtime had to post it there: TLS,
  // the low lane, or [southbound] cross_shard = "post"); `done` runs on the owner's shard when
  // the barrier reply, an ERROR or the disconnect settles the batch. False (neither runs) when
  // no switch of that dpid is up. The default goes through with_switch.
  virtual bool send_batch_to(uint64_t dpid, std::vector<ofp::Body> batch, Lane lane, BatchCallback done,
                             std::function<void()> queued = {}) {
    return with_switch(dpid, [b = std::move(batch), lane, d = std::move(done), q = std::move(queued)](SwitchContext& sw) mutable {
      sw.send_batch(std::move(b), lane, std::move(d));
      if (q) q();
    });
  }
  // Whether the apps of this instance act on switch `dpid`: it is up here (connected, set up,
  // and in a cluster mastered by this instance, docs/cluster.md). A path that crosses a switch
  // another instance masters stops at the boundary; that instance continues it from the
  // PacketIn the packet causes there. The default (a runtime without roles) says yes.
  virtual bool is_up(uint64_t /*dpid*/) const { return true; }
  // Runs `fn` on shard `shard` after `delay`, unless the runtime stops first.
  virtual void call_after(unsigned shard, Clock::duration delay, std::function<void()> fn) = 0;
  virtual Clock::time_point now() const { return Clock::now(); }
  // The shard whose thread calls this (kNoShard off the shards): what a function run by
  // with_switch uses to find its own shard's state.
  static constexpr unsigned kNoShard = ~0u;
  virtual unsigned current_shard() const { return kNoShard; }
};

// What a PacketIn handler tells the runtime: kStop when the app consumed the packet and the
// apps after it in [controller] apps must not see it (e.g. CPAM answering for its addresses
// before forwarding would flood them).
enum class Disposition : uint8_t { kContinue = 0, kStop = 1 };

class App {
 public:
  virtual ~App() = default;
  virtual std::string_view name() const = 0;
  // Called once on the app's own shard before any other call (timers may be armed here).
  virtual void on_start(Runtime& /*rt*/, unsigned /*shard*/) {}
  // Called on the app's shard when the runtime stops, after its switches were closed.
  virtual void on_stop() {}
  // Called after the handshake (features, port description, config, table-miss) completes.
  virtual void on_switch_up(SwitchContext& /*sw*/) {}
  // Cookie ranges whose flows [southbound] clear_flows_on_connect leaves in place: the app
  // resynchronises them itself in on_switch_up (CPAM keeps established sessions flowing across
  // a reconnect or a controller restart). Asked on the switch's shard at each connect.
  virtual std::vector<CookieRange> kept_cookies() const { return {}; }
  virtual void on_switch_down(uint64_t /*dpid*/) {}
  virtual Disposition on_packet_in(SwitchContext& /*sw*/, const ofp::PacketIn& /*pin*/, Clock::time_point /*now*/) {
    return Disposition::kContinue;
  }
  virtual void on_port_status(SwitchContext& /*sw*/, const ofp::PortStatus& /*ps*/) {}
  virtual void on_flow_removed(SwitchContext& /*sw*/, const ofp::FlowRemoved& /*fr*/) {}
  virtual void on_error(SwitchContext& /*sw*/, uint32_t /*xid*/, const ofp::ErrorMsg& /*e*/) {}
};

using AppFactory = std::function<std::unique_ptr<App>(unsigned shard_index)>;

}  // namespace sdn::southbound
