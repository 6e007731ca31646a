// Runtime tests: a real controller on 127.0.0.1:0 with two shards, driven by byte-level
// switches (good and malformed). Checks replies, closes, counters, and that one bad or
// flooding switch does not stop the controller from serving the others.
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include <future>

#include <nlohmann/json.hpp>

#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "southbound/connection.hpp"
#include "southbound/controller.hpp"
#include "unit/southbound/raw_switch.hpp"
#include "fakes/eventually.hpp"

namespace sdn::southbound {
namespace {

using namespace std::chrono_literals;
using test::RawSwitch;

// A test app whose behaviour the test sets before start; called on shard threads only.
struct Hooks {
  std::function<void(SwitchContext&, const ofp::PacketIn&)> on_packet_in;
  std::atomic<int> ups{0}, downs{0}, packet_ins{0}, starts{0}, stops{0};
  std::atomic<Runtime*> runtime{nullptr};
  std::atomic<bool> consume{false};  // answer kStop: the apps after this one must not see the packet
};

class HookApp : public App {
 public:
  explicit HookApp(Hooks& h) : h_(h) {}
  std::string_view name() const override { return "hooks"; }
  void on_start(Runtime& rt, unsigned) override {
    h_.runtime = &rt;
    h_.starts++;
  }
  void on_stop() override { h_.stops++; }
  void on_switch_up(SwitchContext&) override { h_.ups++; }
  void on_switch_down(uint64_t) override { h_.downs++; }
  Disposition on_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point) override {
    h_.packet_ins++;
    if (h_.on_packet_in) h_.on_packet_in(sw, pin);
    return h_.consume ? Disposition::kStop : Disposition::kContinue;
  }

 private:
  Hooks& h_;
};

using test::eventually;

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

class RuntimeTest : public ::testing::Test {
 protected:
  void start(SouthboundConfig cfg = {}) {
    cfg.listen_address = "127.0.0.1";
    cfg.listen_port = 0;
    pool_ = std::make_unique<core::ShardPool>(2);
    std::vector<AppFactory> apps{[this](unsigned) { return std::make_unique<HookApp>(hooks_); }};
    if (second_app_) apps.push_back([this](unsigned) { return std::make_unique<HookApp>(second_); });
    ctl_ = std::make_unique<Controller>(*pool_, cfg, metrics_, apps);
    pool_->start();
    auto ep = ctl_->listen();
    ASSERT_TRUE(ep) << ep.error();
    port_ = ep->port();
  }
  void TearDown() override {
    if (ctl_) ctl_->stop();
    if (pool_) {
      pool_->stop();
      pool_->join();
    }
  }
  uint64_t counter(const char* n) { return metrics_.counter_value(n); }
  int64_t gauge(const char* n) { return metrics_.gauge_value(n); }

  static ofp::PacketIn packet_in(std::span<const uint8_t> data, uint32_t in_port = 1) {
    ofp::PacketIn p;
    p.total_len = static_cast<uint16_t>(data.size());
    p.match.set(ofp::OxmField::kInPort, in_port);
    p.data = data;
    return p;
  }

  // Every PACKET_IN is answered with a PACKET_OUT of its data to port 2.
  void answer_packet_ins_on_port_2() {
    hooks_.on_packet_in = [](SwitchContext& sw, const ofp::PacketIn& pin) {
      ofp::PacketOut po;
      po.in_port = pin.in_port();
      po.actions.push_back(ofp::ActionOutput{2, 0});
      po.data = pin.data;
      sw.send(std::move(po));
    };
  }

  Hooks hooks_;
  Hooks second_;              // a second app after the first, when second_app_ is set before start()
  bool second_app_ = false;
  core::Metrics metrics_;
  std::unique_ptr<core::ShardPool> pool_;
  std::unique_ptr<Controller> ctl_;
  uint16_t port_ = 0;
};

TEST_F(RuntimeTest, HandshakeInstallsTableMissAndRegistersSwitch) {
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(0xabc));
  ASSERT_TRUE(sw.set_config.has_value());
  EXPECT_EQ(sw.set_config->config.miss_send_len, 0xffff);
  ASSERT_EQ(sw.setup_flows.size(), 2u);
  EXPECT_EQ(sw.setup_flows[0].command, ofp::FlowModCommand::kDelete);
  const auto& miss = sw.setup_flows[1];
  EXPECT_EQ(miss.command, ofp::FlowModCommand::kAdd);
  EXPECT_EQ(miss.priority, 0);
  EXPECT_TRUE(miss.match.fields.empty());
  ASSERT_EQ(miss.instructions.size(), 1u);
  const auto& apply = std::get<ofp::InstrApplyActions>(miss.instructions[0]);
  ASSERT_EQ(apply.actions.size(), 1u);
  EXPECT_EQ(std::get<ofp::ActionOutput>(apply.actions[0]).port, ofp::port::kController);
  ASSERT_TRUE(eventually([&] { return hooks_.ups == 1; }));
  auto sws = ctl_->switches();
  ASSERT_EQ(sws.size(), 1u);
  EXPECT_EQ(sws[0].dpid, 0xabcu);
  EXPECT_EQ(sws[0].ports, 2u);
  EXPECT_TRUE(ctl_->connected(0xabc));
  EXPECT_FALSE(ctl_->connected(0xabd));
  EXPECT_EQ(gauge("southbound.switches.up"), 1);
  sw.close();
  ASSERT_TRUE(eventually([&] { return hooks_.downs == 1 && ctl_->switch_count() == 0; }));
  EXPECT_FALSE(ctl_->connected(0xabc));
  EXPECT_EQ(gauge("southbound.switches.up"), 0);
}

// An app that consumes a PacketIn (kStop) hides it from the apps after it; kContinue passes it on.
TEST_F(RuntimeTest, ConsumedPacketInStopsAtTheConsumingApp) {
  second_app_ = true;
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(0xc));
  const std::vector<uint8_t> frame(60, 0x22);
  sw.send(1, packet_in(frame));
  ASSERT_TRUE(eventually([&] { return second_.packet_ins == 1; }));
  EXPECT_EQ(hooks_.packet_ins.load(), 1);
  hooks_.consume = true;
  sw.send(2, packet_in(frame));
  sw.send(3, packet_in(frame));
  ASSERT_TRUE(eventually([&] { return hooks_.packet_ins == 3; }));
  // The switch's echo round trip orders the check after both PacketIns were dispatched.
  sw.send(4, ofp::EchoRequest{});
  ASSERT_TRUE(sw.recv_type(ofp::Type::kEchoReply));
  EXPECT_EQ(second_.packet_ins.load(), 1);
}

// Apps reach switches owned by other shards, and other shards, through the Runtime.
TEST_F(RuntimeTest, AppsReachOtherShardsSwitchesThroughTheRuntime) {
  std::atomic<uint64_t> seen_dpid{0};
  std::atomic<int> on_right_thread{0}, timer_fired{0};
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn&) {
    Runtime* rt = hooks_.runtime.load();
    const uint64_t other = sw.dpid() == 0xa ? 0xb : 0xa;
    EXPECT_FALSE(rt->with_switch(0xdead, [](SwitchContext&) { ADD_FAILURE() << "no such switch"; }));
    // The other switch lives on the other shard (round-robin accept): posted there.
    EXPECT_TRUE(rt->with_switch(other, [&, other](SwitchContext& o) {
      seen_dpid = o.dpid();
      if (pool_->at(ctl_->switches()[0].dpid == other ? ctl_->switches()[0].shard : ctl_->switches()[1].shard).on_shard())
        on_right_thread++;
      ofp::PacketOut po;
      po.actions.push_back(ofp::ActionOutput{2});
      o.send(std::move(po));
    }));
    rt->call_after(1, 20ms, [&] {
      if (pool_->at(1).on_shard()) timer_fired++;
    });
  };
  start();
  ASSERT_TRUE(eventually([&] { return hooks_.starts == 2; }));  // one instance per shard
  EXPECT_EQ(ctl_->shard_count(), 2u);
  RawSwitch a(port_), b(port_);
  ASSERT_TRUE(a.handshake(0xa));
  ASSERT_TRUE(b.handshake(0xb));
  ASSERT_TRUE(eventually([&] { return hooks_.ups == 2; }));
  auto sws = ctl_->switches();
  ASSERT_EQ(sws.size(), 2u);
  EXPECT_NE(sws[0].shard, sws[1].shard);
  const std::vector<uint8_t> frame(60, 0x11);
  a.send(77, packet_in(frame));
  auto po = b.recv_type(ofp::Type::kPacketOut);
  ASSERT_TRUE(po) << "the PacketOut sent through with_switch never reached switch b";
  EXPECT_EQ(std::get<ofp::ActionOutput>(std::get<ofp::PacketOut>(po->body).actions.at(0)).port, 2u);
  EXPECT_EQ(seen_dpid.load(), 0xbu);
  EXPECT_EQ(on_right_thread.load(), 1);
  ASSERT_TRUE(eventually([&] { return timer_fired == 1; }));
  ctl_->stop();
  EXPECT_EQ(hooks_.stops.load(), 2);
  // After stop, nothing more runs.
  std::atomic<int> late{0};
  ctl_->post(0, [&] { late++; });
  EXPECT_FALSE(ctl_->with_switch(0xa, [&](SwitchContext&) { late++; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(late.load(), 0);
}

// Bookkeeping posted with post_soon runs after the turn that posted it (after what that turn
// posted itself, i.e. after its replies' writes), in order, and one turn's calls for one shard
// travel in one post.
TEST_F(RuntimeTest, PostSoonRunsAfterTheTurnAndOneTurnWakesAShardOnce) {
  std::mutex mu;
  std::vector<std::string> order;
  auto note = [&](std::string what) {
    std::lock_guard lock(mu);
    order.push_back(std::move(what));
  };
  std::atomic<int> wrong_thread{0};
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn&) {
    Runtime* rt = hooks_.runtime.load();
    const unsigned self = rt->current_shard(), other = 1 - self;
    rt->post_soon(other, [&, other] {
      if (!pool_->at(other).on_shard()) wrong_thread++;
      note("other-1");
    });
    rt->post_soon(self, [&] { note("self-soon"); });
    rt->post_soon(other, [&] { note("other-2"); });
    rt->post(self, [&] { note("self-posted"); });
    ofp::PacketOut po;
    po.actions.push_back(ofp::ActionOutput{3});
    sw.send(std::move(po));
    note("handler");
  };
  start();
  RawSwitch a(port_);
  ASSERT_TRUE(a.handshake(0xa));
  ASSERT_TRUE(eventually([&] { return hooks_.ups == 1; }));
  const uint64_t posts0 = counter("southbound.post_soon.posts");
  const std::vector<uint8_t> frame(60, 0x33);
  a.send(5, packet_in(frame));
  ASSERT_TRUE(a.recv_type(ofp::Type::kPacketOut));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return order.size() == 5;
  }));
  std::lock_guard lock(mu);
  auto at = [&](const char* w) { return std::find(order.begin(), order.end(), w) - order.begin(); };
  EXPECT_EQ(order.front(), "handler");
  EXPECT_LT(at("self-posted"), at("self-soon")) << "post_soon ran inside the turn";
  EXPECT_LT(at("other-1"), at("other-2"));
  EXPECT_EQ(wrong_thread.load(), 0);
  EXPECT_EQ(counter("southbound.post_soon.calls"), 3u);
  EXPECT_EQ(counter("southbound.post_soon.posts") - posts0, 1u) << "one post for the other shard";
}

// with_switch_soon: for the switch the turn is on, at once; for another shard's switch, on that
// shard's thread after the turn (carried by post_soon); for a switch that is not up, false.
TEST_F(RuntimeTest, WithSwitchSoonRunsOnTheOwnerAfterTheTurnOrAtOnceOnItsOwnShard) {
  std::mutex mu;
  std::vector<std::string> order;
  auto note = [&](std::string what) {
    std::lock_guard lock(mu);
    order.push_back(std::move(what));
  };
  std::atomic<int> off_owner{0}, refused{0};
  std::atomic<unsigned> owner_of_b{99};
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn&) {
    if (sw.dpid() != 0xa) return;
    Runtime* rt = hooks_.runtime.load();
    rt->with_switch_soon(0xa, [&](SwitchContext& own) { note(own.dpid() == 0xa ? "own-inline" : "own-wrong"); });
    rt->with_switch_soon(0xb, [&, rt](SwitchContext& other) {
      if (rt->current_shard() != owner_of_b.load()) off_owner++;
      note(other.dpid() == 0xb ? "other" : "other-wrong");
    });
    if (!rt->with_switch_soon(0xdead, [&](SwitchContext&) { note("absent"); })) refused++;
    note("handler");
  };
  start();
  RawSwitch a(port_), b(port_);
  ASSERT_TRUE(a.handshake(0xa));
  ASSERT_TRUE(b.handshake(0xb));
  ASSERT_TRUE(eventually([&] { return hooks_.ups == 2; }));
  for (const auto& s : ctl_->switches())
    if (s.dpid == 0xb) owner_of_b = s.shard;
  unsigned owner_of_a = 99;
  for (const auto& s : ctl_->switches())
    if (s.dpid == 0xa) owner_of_a = s.shard;
  ASSERT_NE(owner_of_a, owner_of_b.load()) << "the test needs a and b on different shards";
  const uint64_t posts0 = counter("southbound.post_soon.posts");
  a.send(5, packet_in(std::vector<uint8_t>(60, 0x33)));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return order.size() == 3;
  }));
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<std::string>{"own-inline", "handler", "other"}));
  EXPECT_EQ(off_owner.load(), 0);
  EXPECT_EQ(refused.load(), 1);
  EXPECT_EQ(counter("southbound.post_soon.posts") - posts0, 1u);
}

// Run to completion: the shard that read a PacketIn writes the batch for a switch another
// shard owns itself. With the owner's loop blocked, the FlowMod and its barrier still reach the
// switch ("direct"); with cross_shard = "post" they wait until the owner runs again. Either way
// the batch settles on the owner's shard, by its own barrier reply or an ERROR in its range.
class CrossShard : public RuntimeTest, public ::testing::WithParamInterface<southbound::CrossShard> {};

TEST_P(CrossShard, ABatchForAnotherShardsSwitchAndTheOwnersLoopBlocked) {
  const bool direct = GetParam() == southbound::CrossShard::kDirect;
  std::atomic<int> queued_by_reader{0}, done_ok{0}, done_failed{0}, done_off_owner{0};
  std::atomic<unsigned> owner{99};
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn& pin) {
    Runtime* rt = hooks_.runtime.load();
    const unsigned reader = rt->current_shard();
    std::vector<ofp::Body> batch;
    for (int i = 0; i < 2; ++i) {
      ofp::FlowMod fm;
      fm.priority = static_cast<uint16_t>(20 + i);
      fm.match.set(ofp::OxmField::kInPort, pin.in_port());
      batch.push_back(fm);
    }
    const bool sent = rt->send_batch_to(
        sw.dpid() == 0xa ? 0xb : 0xa, std::move(batch), Lane::kHigh,
        [&, rt](const BatchResult& r) {
          (r.ok ? done_ok : done_failed)++;
          if (rt->current_shard() != owner.load()) done_off_owner++;
        },
        [&, rt, reader] {
          if (rt->current_shard() == reader) queued_by_reader++;
        });
    EXPECT_TRUE(sent);
  };
  SouthboundConfig cfg;
  cfg.cross_shard = GetParam();
  start(cfg);
  RawSwitch a(port_), b(port_);
  ASSERT_TRUE(a.handshake(0xa));
  ASSERT_TRUE(b.handshake(0xb));
  ASSERT_TRUE(eventually([&] { return hooks_.ups == 2; }));
  for (const auto& s : ctl_->switches())
    if (s.dpid == 0xb) owner = s.shard;
  ASSERT_NE(owner.load(), 99u);
  // Block b's shard.
  std::promise<void> blocked, release;
  auto released = release.get_future().share();
  ctl_->post(owner, [&] {
    blocked.set_value();
    released.wait();
  });
  blocked.get_future().wait();
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  a.send(1, packet_in(frame));
  auto fm = b.recv_type(ofp::Type::kFlowMod, std::chrono::milliseconds(direct ? 2000 : 300));
  if (direct) {
    ASSERT_TRUE(fm) << "the FlowMod waited for the blocked owner's loop";
    ASSERT_TRUE(b.recv_type(ofp::Type::kFlowMod));
    auto barrier = b.recv_type(ofp::Type::kBarrierRequest);
    ASSERT_TRUE(barrier);
    EXPECT_NE(barrier->xid & Connection::kRemoteXid, 0u);
    ASSERT_TRUE(eventually([&] { return queued_by_reader == 1; })) << "queued on the reader's thread";
    b.send(fm->xid, ofp::ErrorMsg{ofp::err::kFlowModFailed, 1, {}});  // read by the owner once it runs
    b.send(barrier->xid, ofp::BarrierReply{});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(done_ok + done_failed, 0) << "settled off the owner's shard";
    release.set_value();
    ASSERT_TRUE(eventually([&] { return done_failed == 1; }));
    EXPECT_EQ(counter("southbound.remote.direct"), 1u);
    EXPECT_EQ(counter("southbound.remote.posted"), 0u);
  } else {
    EXPECT_FALSE(fm) << "posted: nothing may leave while the owner is blocked";
    release.set_value();
    ASSERT_TRUE(b.recv_type(ofp::Type::kFlowMod));
    ASSERT_TRUE(b.recv_type(ofp::Type::kFlowMod));
    auto barrier = b.recv_type(ofp::Type::kBarrierRequest);
    ASSERT_TRUE(barrier);
    EXPECT_EQ(barrier->xid & Connection::kRemoteXid, 0u);
    b.send(barrier->xid, ofp::BarrierReply{});
    ASSERT_TRUE(eventually([&] { return done_ok == 1; }));
    EXPECT_EQ(queued_by_reader.load(), 0);
    EXPECT_EQ(counter("southbound.remote.posted"), 1u);
  }
  EXPECT_EQ(done_off_owner.load(), 0);
  // The owner's own traffic and the remote side's share the socket without tearing a message:
  // 200 PacketIns on each switch, each answered on the other one from the reader's shard.
  done_ok = done_failed = 0;
  for (uint32_t i = 0; i < 200; ++i) {
    a.send(100 + i, packet_in(frame));
    b.send(1000 + i, packet_in(frame));
  }
  const size_t a0 = a.received_of<ofp::BarrierRequest>().size(), b0 = b.received_of<ofp::BarrierRequest>().size();
  const auto t0 = std::chrono::steady_clock::now();
  size_t got_a = 0, got_b = 0;
  while ((got_a < 200 || got_b < 200) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    b.serve_for(std::chrono::milliseconds(20));
    a.serve_for(std::chrono::milliseconds(20));
    got_a = a.received_of<ofp::BarrierRequest>().size() - a0;
    got_b = b.received_of<ofp::BarrierRequest>().size() - b0;
  }
  EXPECT_EQ(got_a, 200u);
  EXPECT_EQ(got_b, 200u);
  EXPECT_EQ(a.received_of<ofp::FlowMod>().size(), 2 * got_a) << "every message whole";
  ASSERT_TRUE(eventually([&] { return done_ok + done_failed >= 400; }));
  EXPECT_EQ(done_failed.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Runtime, CrossShard,
                         ::testing::Values(southbound::CrossShard::kDirect, southbound::CrossShard::kPost),
                         [](const auto& i) { return i.param == southbound::CrossShard::kDirect ? "Direct" : "Post"; });

TEST_F(RuntimeTest, HelloOfOlderVersionGetsHelloFailedAndClose) {
  start();
  RawSwitch sw(port_);
  const uint8_t hello10[] = {0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x07};  // OpenFlow 1.0 HELLO
  sw.send_bytes(hello10);
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  const auto& e = std::get<ofp::ErrorMsg>(err->body);
  EXPECT_EQ(e.type, ofp::err::kHelloFailed);
  EXPECT_EQ(e.code, ofp::err::kHelloIncompatible);
  EXPECT_EQ(err->xid, 7u);
  EXPECT_TRUE(sw.wait_closed());
  EXPECT_EQ(counter("southbound.errors.hello_failed"), 1u);
}

TEST_F(RuntimeTest, HelloBitmapWithoutOneDotThreeFails) {
  start();
  RawSwitch sw(port_);
  // Version 1.5 header with a version bitmap of {1.4, 1.5} only (7.5.1 HELLO_ELEM_VERSIONBITMAP).
  const uint8_t hello[] = {0x06, 0x00, 0x00, 0x10, 0, 0, 0, 9, 0x00, 0x01, 0x00, 0x08, 0x00, 0x00, 0x00, 0x60};
  sw.send_bytes(hello);
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  EXPECT_EQ(std::get<ofp::ErrorMsg>(err->body).type, ofp::err::kHelloFailed);
  EXPECT_TRUE(sw.wait_closed());
}

TEST_F(RuntimeTest, FirstMessageNotHelloIsRefused) {
  start();
  RawSwitch sw(port_);
  sw.send(5, ofp::EchoRequest{});
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  EXPECT_EQ(std::get<ofp::ErrorMsg>(err->body).type, ofp::err::kHelloFailed);
  EXPECT_TRUE(sw.wait_closed());
  EXPECT_EQ(counter("southbound.errors.not_hello"), 1u);
}

TEST_F(RuntimeTest, LengthBelowHeaderClosesConnection) {
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t bad[] = {0x04, 0x02, 0x00, 0x04, 0, 0, 0, 1};  // ECHO_REQUEST claiming 4 bytes
  sw.send_bytes(bad);
  EXPECT_TRUE(sw.wait_closed());
  EXPECT_EQ(counter("southbound.errors.framing"), 1u);
}

TEST_F(RuntimeTest, OversizedMessageClosesConnection) {
  SouthboundConfig cfg;
  cfg.max_message_bytes = 1024;
  start(cfg);
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  std::vector<uint8_t> big(2000, 0);
  big[0] = 0x04; big[1] = 0x02; big[2] = 2000 >> 8; big[3] = 2000 & 0xff;
  sw.send_bytes(big);
  EXPECT_TRUE(sw.wait_closed());
  EXPECT_EQ(counter("southbound.errors.oversize"), 1u);
}

TEST_F(RuntimeTest, TruncatedHeaderTimesOutHandshake) {
  SouthboundConfig cfg;
  cfg.handshake_timeout = 200ms;
  start(cfg);
  RawSwitch sw(port_);
  const uint8_t part[] = {0x04, 0x00, 0x00};  // three bytes of a header, then silence
  sw.send_bytes(part);
  EXPECT_TRUE(sw.wait_closed(3000ms));
  EXPECT_EQ(counter("southbound.errors.handshake_timeout"), 1u);
}

TEST_F(RuntimeTest, BodyShorterThanLengthWaitsThenDeadPeerIsClosed) {
  SouthboundConfig cfg;
  cfg.echo_interval = 100ms;
  cfg.echo_timeout = 300ms;
  start(cfg);
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  // Header promises 64 bytes, only 16 arrive: the controller waits for the rest (it cannot
  // know the peer is lying), keeps probing with ECHO_REQUEST, and closes the silent peer.
  const uint8_t part[] = {0x04, 0x0a, 0x00, 0x40, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  sw.send_bytes(part);
  auto echo = sw.recv_type(ofp::Type::kEchoRequest, 2000ms);
  EXPECT_TRUE(echo.has_value());
  EXPECT_TRUE(sw.wait_closed(3000ms));
  EXPECT_EQ(counter("southbound.errors.echo_timeout"), 1u);
}

TEST_F(RuntimeTest, MalformedBodyGetsBadLenErrorAndConnectionSurvives) {
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  // PACKET_IN whose match claims 200 bytes in a 40-byte message.
  std::vector<uint8_t> m = {0x04, 0x0a, 0x00, 0x28, 0, 0, 0, 0x42,   // header, xid 0x42
                            0xff, 0xff, 0xff, 0xff, 0x00, 0x10, 0x00, 0x00,  // buffer, total_len, reason, table
                            0, 0, 0, 0, 0, 0, 0, 0,                          // cookie
                            0x00, 0x01, 0x00, 0xc8, 0, 0, 0, 0,              // match type OXM, length 200
                            0, 0, 0, 0, 0, 0, 0, 0};
  sw.send_bytes(m);
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->xid, 0x42u);
  const auto& e = std::get<ofp::ErrorMsg>(err->body);
  EXPECT_TRUE(e.type == ofp::err::kBadRequest || e.type == ofp::err::kBadMatch) << e.type;
  EXPECT_GE(e.data.size(), 8u);  // echoes the offending bytes
  EXPECT_EQ(counter("southbound.errors.decode"), 1u);
  // Still alive: an echo is answered.
  sw.send(77, ofp::EchoRequest{{1, 2, 3}});
  auto rep = sw.recv_type(ofp::Type::kEchoReply);
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->xid, 77u);
  EXPECT_EQ(std::get<ofp::EchoReply>(rep->body).data, (ofp::Bytes{1, 2, 3}));
}

TEST_F(RuntimeTest, UnknownTypeGetsBadTypeError) {
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t unk[] = {0x04, 0xc8, 0x00, 0x08, 0, 0, 0, 0x55};
  sw.send_bytes(unk);
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->xid, 0x55u);
  EXPECT_EQ(std::get<ofp::ErrorMsg>(err->body).type, ofp::err::kBadRequest);
  EXPECT_EQ(std::get<ofp::ErrorMsg>(err->body).code, ofp::err::kBrcBadType);
}

TEST_F(RuntimeTest, WrongVersionAfterNegotiationGetsBadVersion) {
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t echo10[] = {0x01, 0x02, 0x00, 0x08, 0, 0, 0, 0x66};
  sw.send_bytes(echo10);
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  EXPECT_EQ(std::get<ofp::ErrorMsg>(err->body).code, ofp::err::kBrcBadVersion);
  EXPECT_EQ(counter("southbound.errors.bad_version"), 1u);
}

TEST_F(RuntimeTest, SwitchSendingFlowModGetsBadType) {
  start();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  sw.send(9, ofp::FlowMod{});
  auto err = sw.recv_type(ofp::Type::kError);
  ASSERT_TRUE(err);
  EXPECT_EQ(std::get<ofp::ErrorMsg>(err->body).code, ofp::err::kBrcBadType);
  EXPECT_EQ(counter("southbound.errors.unexpected_type"), 1u);
}

TEST_F(RuntimeTest, EchoFloodIsRateLimitedAndOtherSwitchesStayServed) {
  SouthboundConfig cfg;
  cfg.echo_rate_limit = 500;
  start(cfg);
  hooks_.on_packet_in = [](SwitchContext& sw, const ofp::PacketIn& pin) {
    ofp::PacketOut po;
    po.in_port = pin.in_port();
    po.actions.push_back(ofp::ActionOutput{ofp::port::kFlood, 0});
    po.data = pin.data;
    sw.send(std::move(po));
  };
  RawSwitch flooder(port_), good(port_);
  ASSERT_TRUE(flooder.handshake(1));
  ASSERT_TRUE(good.handshake(2));
  std::atomic<bool> flooding{false};
  ofp::Bytes burst;
  for (int i = 0; i < 2000; ++i) (void)ofp::encode(static_cast<uint32_t>(i), ofp::EchoRequest{}, burst);
  std::thread flood([&] {
    for (int r = 0; r < 10; ++r) {
      flooder.send_bytes(burst);
      flooding = true;
    }
  });
  ASSERT_TRUE(eventually([&] { return flooding.load(); }));
  // While the flood runs, the good switch's PacketIns are answered.
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    good.send(1000 + i, packet_in(frame));
    if (good.recv_type(ofp::Type::kPacketOut, 2000ms)) ++answered;
  }
  flood.join();
  EXPECT_EQ(answered, 20);
  // Every request was read; the answered ones plus the dropped ones add up, and a 20000-burst
  // at 500/s cannot all have been answered.
  ASSERT_TRUE(eventually([&] { return counter("southbound.rx.echo_request") == 20000; }, 10000ms))
      << metrics_.to_json().dump();
  EXPECT_EQ(counter("southbound.tx.echo_reply") + counter("southbound.echo.rate_limited"), 20000u);
  EXPECT_GT(counter("southbound.echo.rate_limited"), 15000u);
  EXPECT_GE(counter("southbound.tx.echo_reply"), 500u);
}

TEST_F(RuntimeTest, BatchCompletesOnBarrierOrReportsError) {
  start();
  std::mutex mu;
  std::vector<BatchResult> results;
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn& pin) {
    std::vector<ofp::Body> batch;
    for (int i = 0; i < 3; ++i) {
      ofp::FlowMod fm;
      fm.priority = static_cast<uint16_t>(10 + i);
      fm.match.set(ofp::OxmField::kInPort, pin.in_port());
      batch.push_back(fm);
    }
    sw.send_batch(std::move(batch), Lane::kHigh, [&](const BatchResult& r) {
      std::lock_guard l(mu);
      results.push_back(r);
    });
  };
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  // First batch: confirmed.
  sw.send(1, packet_in(frame));
  std::vector<uint32_t> xids;
  for (int i = 0; i < 3; ++i) {
    auto fm = sw.recv_type(ofp::Type::kFlowMod);
    ASSERT_TRUE(fm);
    xids.push_back(fm->xid);
  }
  auto b = sw.recv_type(ofp::Type::kBarrierRequest);
  ASSERT_TRUE(b);
  sw.send(b->xid, ofp::BarrierReply{});
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return results.size() == 1; }));
  EXPECT_TRUE(results[0].ok);
  // Second batch: the switch rejects the middle FlowMod.
  sw.send(2, packet_in(frame));
  xids.clear();
  for (int i = 0; i < 3; ++i) {
    auto fm = sw.recv_type(ofp::Type::kFlowMod);
    ASSERT_TRUE(fm);
    xids.push_back(fm->xid);
  }
  b = sw.recv_type(ofp::Type::kBarrierRequest);
  ASSERT_TRUE(b);
  sw.send(xids[1], ofp::ErrorMsg{ofp::err::kFlowModFailed, 1, {}});
  sw.send(b->xid, ofp::BarrierReply{});
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return results.size() == 2; }));
  EXPECT_FALSE(results[1].ok);
  EXPECT_FALSE(results[1].disconnected);
  EXPECT_EQ(results[1].failed_xid, xids[1]);
  EXPECT_EQ(results[1].error.type, ofp::err::kFlowModFailed);
  // Third batch: the switch disconnects before confirming.
  sw.send(3, packet_in(frame));
  ASSERT_TRUE(sw.recv_type(ofp::Type::kBarrierRequest));
  sw.close();
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return results.size() == 3; }));
  EXPECT_TRUE(results[2].disconnected);
}

TEST_F(RuntimeTest, BarrierSettlesOnlyTheBatchesSentBeforeIt) {
  start();
  std::mutex mu;
  std::vector<char> settled;
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn&) {
    auto note = [&](char name) {
      return [&, name](const BatchResult& r) {
        std::lock_guard l(mu);
        if (r.ok) settled.push_back(name);
      };
    };
    sw.send_batch({ofp::FlowMod{}}, Lane::kHigh, note('A'));
    sw.send(ofp::BarrierRequest{});  // an app's own barrier, not tracked
    sw.send_batch({ofp::FlowMod{}}, Lane::kHigh, note('B'));
  };
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  sw.send(1, packet_in(frame));
  auto a = sw.recv_type(ofp::Type::kBarrierRequest);
  auto own = sw.recv_type(ofp::Type::kBarrierRequest);
  auto b = sw.recv_type(ofp::Type::kBarrierRequest);
  ASSERT_TRUE(a && own && b);
  sw.send(own->xid, ofp::BarrierReply{});  // settles A (sent before it), not B
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return settled.size() == 1; }));
  std::this_thread::sleep_for(50ms);
  {
    std::lock_guard l(mu);
    EXPECT_EQ(settled, (std::vector<char>{'A'}));
  }
  sw.send(b->xid, ofp::BarrierReply{});
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return settled.size() == 2; }));
  EXPECT_EQ(settled[1], 'B');
}

TEST_F(RuntimeTest, RequestRepliesInPartsAndErrorsReachTheCallback) {
  start();
  struct Seen {
    bool reply = false, err = false, more = false;
    size_t ports = 0;
  };
  std::mutex mu;
  std::vector<Seen> seen;
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn&) {
    ofp::MultipartRequest req;
    req.type = ofp::MultipartType::kPortDesc;
    sw.send_request(req, [&](const ofp::Message* m, const ofp::ErrorMsg* e, bool more) {
      Seen x{m != nullptr, e != nullptr, more, 0};
      if (m) x.ports = std::get<std::vector<ofp::Port>>(std::get<ofp::MultipartReply>(m->body).body).size();
      std::lock_guard l(mu);
      seen.push_back(x);
    });
  };
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  // First request: answered in two parts (REPLY_MORE, then the last part).
  sw.send(1, packet_in(frame));
  auto req = sw.recv_type(ofp::Type::kMultipartRequest);
  ASSERT_TRUE(req);
  ofp::MultipartReply part;
  part.type = ofp::MultipartType::kPortDesc;
  part.flags = ofp::kMultipartMore;
  part.body = std::vector<ofp::Port>(2);
  sw.send(req->xid, part);
  part.flags = 0;
  part.body = std::vector<ofp::Port>(1);
  sw.send(req->xid, part);
  // Second request: rejected with an ERROR.
  sw.send(2, packet_in(frame));
  auto req2 = sw.recv_type(ofp::Type::kMultipartRequest);
  ASSERT_TRUE(req2);
  sw.send(req2->xid, ofp::ErrorMsg{ofp::err::kBadRequest, ofp::err::kBrcBadMultipart, {}});
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return seen.size() == 3; }));
  std::lock_guard l(mu);
  EXPECT_TRUE(seen[0].reply && seen[0].more && !seen[0].err);
  EXPECT_EQ(seen[0].ports, 2u);
  EXPECT_TRUE(seen[1].reply && !seen[1].more);
  EXPECT_EQ(seen[1].ports, 1u);
  EXPECT_TRUE(seen[2].err && !seen[2].reply);
}

TEST_F(RuntimeTest, PortStatusKeepsThePortListCurrent) {
  start();
  std::mutex mu;
  std::vector<std::vector<ofp::Port>> views;
  hooks_.on_packet_in = [&](SwitchContext& sw, const ofp::PacketIn&) {
    std::lock_guard l(mu);
    views.push_back(sw.ports());
  };
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1, 2));
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  ofp::PortStatus ps;
  ps.reason = 0;  // ADD
  ps.desc.port_no = 3;
  ps.desc.name = "p3";
  sw.send(10, ps);
  sw.send(11, packet_in(frame));
  ps.reason = 1;  // DELETE
  ps.desc.port_no = 1;
  sw.send(12, ps);
  ps.reason = 2;  // MODIFY: port 2 link down
  ps.desc.port_no = 2;
  ps.desc.state = ofp::kPortStateLinkDown;
  sw.send(13, ps);
  sw.send(14, packet_in(frame));
  ASSERT_TRUE(eventually([&] { std::lock_guard l(mu); return views.size() == 2; }));
  std::lock_guard l(mu);
  ASSERT_EQ(views[0].size(), 3u);
  EXPECT_EQ(views[0][2].port_no, 3u);
  ASSERT_EQ(views[1].size(), 2u);
  EXPECT_EQ(views[1][0].port_no, 2u);
  EXPECT_EQ(views[1][0].state, ofp::kPortStateLinkDown);
  EXPECT_EQ(views[1][1].port_no, 3u);
  EXPECT_EQ(ctl_->switches().at(0).ports, 2u);  // the registry's summary follows too
}

TEST_F(RuntimeTest, HighLaneOvertakesLowLaneBurst) {
  SouthboundConfig cfg;
  cfg.low_lane_quantum = 4096;
  start(cfg);
  hooks_.on_packet_in = [](SwitchContext& sw, const ofp::PacketIn& pin) {
    // A rotation-like burst of 4000 FlowMods in the low lane, then one reactive reply.
    for (int b = 0; b < 200; ++b) {
      std::vector<ofp::Body> batch;
      for (int i = 0; i < 20; ++i) {
        ofp::FlowMod fm;
        fm.priority = 100;
        fm.match.set(ofp::OxmField::kEthType, 0x0800).set(ofp::OxmField::kIpv4Dst, 0x0a000000u + static_cast<uint32_t>(b * 20 + i));
        batch.push_back(fm);
      }
      sw.send_batch(std::move(batch), Lane::kLow, nullptr);
    }
    ofp::PacketOut po;
    po.in_port = pin.in_port();
    po.actions.push_back(ofp::ActionOutput{2, 0});
    po.data = pin.data;
    sw.send(std::move(po), Lane::kHigh);
  };
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  sw.send(1, packet_in(frame));
  auto po = sw.recv_type(ofp::Type::kPacketOut, 3000ms);
  ASSERT_TRUE(po);
  size_t flowmods_before = 0;
  for (const auto& m : sw.skipped()) flowmods_before += ofp::type_of(m.body) == ofp::Type::kFlowMod;
  // The reply came before (almost all of) the burst: at most one quantum of low-lane bytes.
  EXPECT_LT(flowmods_before, 200u);
}

TEST_F(RuntimeTest, RepliesToManyPacketInsAreGatheredIntoFewWrites) {
  start();
  answer_packet_ins_on_port_2();
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  ASSERT_TRUE(eventually([&] { return hooks_.ups == 1; }));
  const uint64_t writes_before = counter("southbound.tx.writes");
  const uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  ofp::Bytes burst;
  for (int i = 0; i < 200; ++i) (void)ofp::encode(static_cast<uint32_t>(i), packet_in(frame), burst);
  sw.send_bytes(burst);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(sw.recv_type(ofp::Type::kPacketOut)) << i;
  const uint64_t writes = counter("southbound.tx.writes") - writes_before;
  EXPECT_LT(writes, 50u) << "200 replies took " << writes << " writes";
  // Every answered PACKET_IN has a service time.
  EXPECT_EQ(metrics_.histogram("southbound.packet_in.service").count(), 200u);
  EXPECT_GT(metrics_.histogram("southbound.packet_in.service").max(), 0u);
}

TEST_F(RuntimeTest, ReadBuffersStartSmallGrowForLargeMessagesAndAreCounted) {
  start();
  answer_packet_ins_on_port_2();
  {
    RawSwitch a(port_), b(port_);
    ASSERT_TRUE(a.handshake(1));
    ASSERT_TRUE(b.handshake(2));
    ASSERT_TRUE(eventually([&] { return hooks_.ups == 2; }));
    // Two idle switches: 4 KiB each, not the 16 KiB each they had before.
    EXPECT_GT(gauge("southbound.rx_buffer_bytes"), 0);
    EXPECT_LE(gauge("southbound.rx_buffer_bytes"), 2 * 4096);
    // One message of 60,000 bytes, written in pieces: the buffer grows and the frame arrives whole.
    std::vector<uint8_t> frame(60000);
    for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 7);
    ofp::Bytes big;
    (void)ofp::encode(9, packet_in(frame), big);
    for (size_t off = 0; off < big.size(); off += 5000) {
      a.send_bytes(std::span<const uint8_t>(big).subspan(off, std::min<size_t>(5000, big.size() - off)));
      std::this_thread::sleep_for(2ms);
    }
    auto po = a.recv_type(ofp::Type::kPacketOut);
    ASSERT_TRUE(po);
    const auto* out = std::get_if<ofp::PacketOut>(&po->body);
    ASSERT_NE(out, nullptr);
    EXPECT_TRUE(std::equal(out->data.begin(), out->data.end(), frame.begin(), frame.end()));
    EXPECT_GE(gauge("southbound.rx_buffer_bytes"), 60000);
  }
  // Closed connections give their buffers back to the gauge.
  ASSERT_TRUE(eventually([&] { return gauge("southbound.connections.active") == 0; }));
  EXPECT_EQ(gauge("southbound.rx_buffer_bytes"), 0);
}

TEST_F(RuntimeTest, NewConnectionWithSameDpidReplacesOld) {
  start();
  RawSwitch a(port_);
  ASSERT_TRUE(a.handshake(42));
  RawSwitch b(port_);
  ASSERT_TRUE(b.handshake(42));
  EXPECT_TRUE(a.wait_closed());
  EXPECT_EQ(counter("southbound.dpid.replaced"), 1u);
  ASSERT_TRUE(eventually([&] { return ctl_->switch_count() == 1 && gauge("southbound.switches.up") == 1; }));
}

TEST_F(RuntimeTest, ThousandReconnectsLeakNoDescriptorOrConnection) {
  start();
  // Warm up once so lazily created descriptors (epoll, eventfd) are counted in the baseline.
  {
    RawSwitch sw(port_);
    ASSERT_TRUE(sw.handshake(7));
  }
  ASSERT_TRUE(eventually([&] { return gauge("southbound.connections.active") == 0; }));
  const size_t fds_before = open_fds();
  for (int i = 0; i < 1000; ++i) {
    RawSwitch sw(port_);
    ASSERT_TRUE(sw.handshake(1000 + static_cast<uint64_t>(i % 10))) << "iteration " << i;
  }
  ASSERT_TRUE(eventually([&] { return gauge("southbound.connections.active") == 0; }, 5000ms));
  EXPECT_EQ(ctl_->switch_count(), 0u);
  EXPECT_EQ(gauge("southbound.switches.up"), 0);
  EXPECT_EQ(counter("southbound.connections.accepted"), 1001u);
  EXPECT_EQ(counter("southbound.connections.closed"), 1001u);
  EXPECT_LE(open_fds(), fds_before);
}

}  // namespace
}  // namespace sdn::southbound

namespace sdn::southbound {
namespace {

TEST(SouthboundConfig, ListenParsingSharedByFileAndFlag) {
  SouthboundConfig c;
  EXPECT_TRUE(set_listen(c, "0.0.0.0:6633"));
  EXPECT_EQ(c.listen_address, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 6633);
  for (const char* bad : {"127.0.0.1:70000", "127.0.0.1:", "127.0.0.1:6x", ":6653", "nocolon"}) {
    auto r = set_listen(c, bad);
    EXPECT_FALSE(r) << bad;
    EXPECT_EQ(c.listen_port, 6633) << "a refused value must leave the config as it was";
  }
  auto cfg = core::Config::parse("[controller]\nlisten = \"10.0.0.1:65536\"\n");
  ASSERT_TRUE(cfg);
  (void)southbound_config_from(*cfg);
  auto problems = cfg->finish();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("controller.listen: bad port"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace sdn::southbound
