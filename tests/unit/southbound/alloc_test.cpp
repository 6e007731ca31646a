// Checks DESIGN.md's hot-path claim: once warmed up, a PACKET_IN answered with a PACKET_OUT
// costs the shard no heap allocation (read, decode, app, encode, gathered write). Replaces
// global operator new to count allocations made on the shard thread during a steady window.
#include <atomic>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "southbound/controller.hpp"
#include "unit/southbound/raw_switch.hpp"

namespace {
thread_local bool t_on_shard = false;
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_shard_allocs{0};
}  // namespace

// GCC 12 at -O2 inlines these replacements into callers and then warns that free() meets a
// pointer from operator new; with both replaced together that pairing is exactly right.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  if (t_on_shard && g_counting.load(std::memory_order_relaxed)) g_shard_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace sdn::southbound {
namespace {

using namespace std::chrono_literals;

class EchoApp : public App {
 public:
  std::string_view name() const override { return "echo"; }
  Disposition on_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point) override {
    t_on_shard = true;  // from now on this shard thread's allocations are counted
    ofp::PacketOut po;
    po.in_port = pin.in_port();
    po.actions.push_back(ofp::ActionOutput{2, 0});
    po.data = pin.data;
    sw.send(std::move(po));
    return Disposition::kContinue;
  }
};

TEST(HotPath, SteadyPacketInToPacketOutAllocatesNothingOnTheShard) {
  core::Metrics metrics;
  core::ShardPool pool(1);
  SouthboundConfig cfg;
  cfg.listen_port = 0;
  Controller ctl(pool, cfg, metrics, {[](unsigned) { return std::make_unique<EchoApp>(); }});
  pool.start();
  auto ep = ctl.listen();
  ASSERT_TRUE(ep);
  test::RawSwitch sw(ep->port());
  ASSERT_TRUE(sw.handshake(1));
  const uint8_t frame[64] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45};
  ofp::PacketIn pin;
  pin.total_len = sizeof frame;
  pin.match.set(ofp::OxmField::kInPort, 1);
  pin.data = frame;
  ofp::Bytes one;
  ASSERT_TRUE(ofp::encode(7, pin, one));
  auto round = [&](int n) {
    ofp::Bytes burst;
    for (int i = 0; i < n; ++i) burst.insert(burst.end(), one.begin(), one.end());
    sw.send_bytes(burst);
    for (int i = 0; i < n; ++i) ASSERT_TRUE(sw.recv_type(ofp::Type::kPacketOut)) << i;
  };
  // Warm-up: buffers grow to their working size, asio's handler memory gets recycled.
  for (int i = 0; i < 200; ++i) round(1 + i % 8);
  const uint64_t before = metrics.counter_value("southbound.rx.packet_in");
  g_counting = true;
  uint64_t sent = 0;
  for (int i = 0; i < 500; ++i) {
    round(1 + i % 8);
    sent += 1 + i % 8;
  }
  g_counting = false;
  EXPECT_EQ(metrics.counter_value("southbound.rx.packet_in") - before, sent);
  EXPECT_EQ(g_shard_allocs.load(), 0u) << "allocations on the shard during " << sent << " PACKET_IN -> PACKET_OUT";
  ctl.stop();
  pool.stop();
  pool.join();
}

}  // namespace
}  // namespace sdn::southbound
