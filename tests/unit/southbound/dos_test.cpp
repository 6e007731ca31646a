// Denial-of-service handling (docs/dos.md): the PacketIn limiter's buckets on a manual clock,
// the raw-frame peek, the [southbound] keys, and the runtime with byte-level switches: a
// flooding port or switch is capped while another switch's PacketIns all get through, ARP
// from the flooded port still gets through, and the drop counters add up exactly. Then the
// table-miss meters: installed where METER_FEATURES allows, refused and unsupported switches
// fall back to the plain table-miss without failing the handshake.
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "core/config.hpp"
#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "fakes/eventually.hpp"
#include "southbound/controller.hpp"
#include "southbound/miss_meter.hpp"
#include "southbound/pin_limiter.hpp"
#include "unit/southbound/raw_switch.hpp"

namespace sdn::southbound {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RawSwitch;

// Ethernet frames: IPv4 (UDP), ARP, ARP behind an 802.1Q tag, ARP behind 802.1ad + 802.1Q, LLDP.
std::vector<uint8_t> eth(std::initializer_list<uint16_t> types) {
  std::vector<uint8_t> f = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1};
  for (uint16_t t : types) {
    f.push_back(static_cast<uint8_t>(t >> 8));
    f.push_back(static_cast<uint8_t>(t));
    if (t == 0x8100 || t == 0x88a8) {  // the tag's TCI
      f.push_back(0);
      f.push_back(7);
    }
  }
  f.resize(60, 0);
  return f;
}
const std::vector<uint8_t> kIp = eth({0x0800});
const std::vector<uint8_t> kArp = eth({0x0806});
const std::vector<uint8_t> kVlanArp = eth({0x8100, 0x0806});
const std::vector<uint8_t> kQinQArp = eth({0x88a8, 0x8100, 0x0806});
const std::vector<uint8_t> kLldp = eth({0x88cc});

ofp::Bytes packet_in_frame(const std::vector<uint8_t>& data, std::optional<uint32_t> in_port, uint32_t xid = 9) {
  ofp::PacketIn p;
  p.total_len = static_cast<uint16_t>(data.size());
  if (in_port) p.match.set(ofp::OxmField::kInPort, *in_port);
  p.match.set(ofp::OxmField::kEthType, 0x0800);  // an OXM before or after in_port is skipped
  p.data = data;
  ofp::Bytes out;
  EXPECT_TRUE(ofp::encode(xid, p, out));
  return out;
}

// ---- peek -------------------------------------------------------------------------------

TEST(PinPeek, ReadsInPortAndEthTypeThroughVlanTags) {
  struct Case {
    const std::vector<uint8_t>* data;
    uint16_t eth_type;
    PinClass cls;
  } cases[] = {{&kIp, 0x0800, PinClass::kData},
               {&kArp, 0x0806, PinClass::kControl},
               {&kVlanArp, 0x0806, PinClass::kControl},
               {&kQinQArp, 0x0806, PinClass::kControl},
               {&kLldp, 0x88cc, PinClass::kControl}};
  for (const auto& c : cases) {
    const auto f = packet_in_frame(*c.data, 77);
    const PinPeek p = peek_packet_in(f);
    EXPECT_TRUE(p.ok);
    EXPECT_TRUE(p.has_in_port);
    EXPECT_EQ(p.in_port, 77u);
    EXPECT_EQ(p.eth_type, c.eth_type);
    EXPECT_EQ(p.cls, c.cls);
  }
  const PinPeek no_port = peek_packet_in(packet_in_frame(kArp, std::nullopt));
  EXPECT_TRUE(no_port.ok);
  EXPECT_FALSE(no_port.has_in_port);
  EXPECT_EQ(no_port.cls, PinClass::kControl);
}

TEST(PinPeek, ShortAndCorruptFramesNeverReadOutOfBounds) {
  const auto good = packet_in_frame(kArp, 3);
  // Every prefix: either not ok, or a class read from what is there.
  for (size_t n = 0; n < good.size(); ++n) {
    const PinPeek p = peek_packet_in(std::span<const uint8_t>(good.data(), n));
    if (n < 24 + 4) {
      EXPECT_FALSE(p.ok) << n;
    }
  }
  // A frame with the data cut before the Ethernet type peeks as data (eth_type 0).
  const auto cut = peek_packet_in(std::span<const uint8_t>(good.data(), good.size() - 50));
  EXPECT_TRUE(cut.ok);
  EXPECT_EQ(cut.eth_type, 0);
  EXPECT_EQ(cut.cls, PinClass::kData);
  // A match length past the end, and an OXM overrunning the match, are not ok.
  auto bad = good;
  bad[26] = 0xff;
  EXPECT_FALSE(peek_packet_in(bad).ok);
  bad = good;
  bad[31] = 0xf0;  // first OXM's length
  EXPECT_FALSE(peek_packet_in(bad).ok);
  // Random corruption (run under ASan in the sanitizer tree): never a crash.
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) {
    auto b = good;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    b.resize(rng() % (b.size() + 1));
    (void)peek_packet_in(b);
  }
}

// ---- buckets on a manual clock -------------------------------------------------------------

PinPeek peek_of(uint32_t port, PinClass cls) {
  PinPeek p;
  p.ok = p.has_in_port = true;
  p.in_port = port;
  p.cls = cls;
  return p;
}

TEST(PinLimiter, PortBucketCapsOnePortAndRefillsAtItsRate) {
  DosSettings d;
  d.port_pps = 100;
  d.port_burst = 10;
  d.switch_pps = 0;  // no switch bucket
  PinLimiter l(d);
  const Clock::time_point t0{std::chrono::seconds(100)};
  int admitted = 0;
  for (int i = 0; i < 50; ++i) admitted += l.admit(peek_of(1, PinClass::kData), t0) == PinLimiter::Verdict::kAdmit;
  EXPECT_EQ(admitted, 10);
  EXPECT_EQ(l.admit(peek_of(1, PinClass::kData), t0), PinLimiter::Verdict::kDropPort);
  // Another port of the same switch has its own bucket.
  EXPECT_EQ(l.admit(peek_of(2, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  // 50 ms at 100/s = 5 tokens.
  admitted = 0;
  for (int i = 0; i < 50; ++i) admitted += l.admit(peek_of(1, PinClass::kData), t0 + 50ms) == PinLimiter::Verdict::kAdmit;
  EXPECT_EQ(admitted, 5);
  // Never more than the burst, however long the pause.
  admitted = 0;
  for (int i = 0; i < 50; ++i) admitted += l.admit(peek_of(1, PinClass::kData), t0 + 1h) == PinLimiter::Verdict::kAdmit;
  EXPECT_EQ(admitted, 10);
}

TEST(PinLimiter, SwitchBucketCapsAllPortsTogether) {
  DosSettings d;
  d.port_pps = 1000;
  d.port_burst = 5;
  d.switch_pps = 1000;
  d.switch_burst = 20;
  PinLimiter l(d);
  const Clock::time_point t0{std::chrono::seconds(1)};
  std::map<PinLimiter::Verdict, int> v;
  for (uint32_t port = 1; port <= 10; ++port)
    for (int i = 0; i < 5; ++i) v[l.admit(peek_of(port, PinClass::kData), t0)]++;
  EXPECT_EQ(v[PinLimiter::Verdict::kAdmit], 20);
  EXPECT_EQ(v[PinLimiter::Verdict::kDropSwitch], 30);
  EXPECT_EQ(v[PinLimiter::Verdict::kDropPort], 0);
  // A PacketIn without in_port is held by the switch bucket only.
  PinPeek no_port = peek_of(0, PinClass::kData);
  no_port.has_in_port = false;
  EXPECT_EQ(l.admit(no_port, t0), PinLimiter::Verdict::kDropSwitch);
}

TEST(PinLimiter, ArpAndLldpHaveTheirOwnBudget) {
  DosSettings d;
  d.port_pps = d.switch_pps = 1;
  d.port_burst = d.switch_burst = 1;
  d.control_port_pps = d.control_pps = 1000;
  d.control_port_burst = 3;
  d.control_burst = 5;
  PinLimiter l(d);
  const Clock::time_point t0{std::chrono::seconds(1)};
  EXPECT_EQ(l.admit(peek_of(1, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  for (int i = 0; i < 100; ++i) EXPECT_NE(l.admit(peek_of(1, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  // The IP flood emptied the data buckets; ARP from the same port is admitted up to its own.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.admit(peek_of(1, PinClass::kControl), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.admit(peek_of(1, PinClass::kControl), t0), PinLimiter::Verdict::kDropPort);
  // Another port's ARP: its port bucket is full, the switch's control bucket has 2 left.
  EXPECT_EQ(l.admit(peek_of(2, PinClass::kControl), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.admit(peek_of(2, PinClass::kControl), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.admit(peek_of(2, PinClass::kControl), t0), PinLimiter::Verdict::kDropSwitch);
}

// The port table grows to the highest port that sent a PacketIn (up to 256 slots) and keeps
// each port's bucket on the way; ports below 256 still never share a slot.
TEST(PinLimiter, PortTableIsSizedByThePortsThatSendAndKeepsTheirBuckets) {
  DosSettings d;
  d.port_pps = 1;
  d.port_burst = 2;
  d.switch_pps = 0;
  PinLimiter l(d);
  const Clock::time_point t0{std::chrono::seconds(1)};
  EXPECT_EQ(l.port_slots(), 0u);  // nothing before the first PacketIn
  EXPECT_EQ(l.admit(peek_of(3, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.port_slots(), PinLimiter::kMinPortSlots);
  EXPECT_EQ(l.admit(peek_of(3, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);  // port 3's bucket now empty
  for (uint32_t port = 1; port <= 43; ++port) {
    if (port != 3) {
      EXPECT_EQ(l.admit(peek_of(port, PinClass::kData), t0), PinLimiter::Verdict::kAdmit) << port;
    }
  }
  EXPECT_EQ(l.port_slots(), 64u);
  EXPECT_EQ(l.admit(peek_of(3, PinClass::kData), t0), PinLimiter::Verdict::kDropPort);  // kept through two doublings
  for (int round = 0; round < 2; ++round)
    for (uint32_t port = 1; port <= 255; ++port) (void)l.admit(peek_of(port, PinClass::kData), t0);
  EXPECT_EQ(l.port_slots(), PinLimiter::kPortSlots);
  // Every port of 1..255 has its own slot, now empty (its burst is 2).
  for (uint32_t port = 1; port <= 255; ++port)
    EXPECT_EQ(l.admit(peek_of(port, PinClass::kData), t0), PinLimiter::Verdict::kDropPort) << port;
  // LOCAL (0xfffffffe) is far past the end: the table stops at 256 and it shares a slot.
  EXPECT_EQ(l.admit(peek_of(0xfffffffeu, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.port_slots(), PinLimiter::kPortSlots);
}

TEST(PinLimiter, ZeroRateMeansUnlimited) {
  DosSettings d;
  d.port_pps = d.switch_pps = d.control_pps = d.control_port_pps = 0;
  PinLimiter l(d);
  const Clock::time_point t0{std::chrono::seconds(1)};
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(l.admit(peek_of(1, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
}

TEST(PinLimiter, PortsSharingASlotTakeItOver) {
  DosSettings d;
  d.switch_pps = 0;
  d.port_pps = 1;
  d.port_burst = 2;
  PinLimiter l(d);
  const Clock::time_point t0{std::chrono::seconds(1)};
  const uint32_t a = 5, b = 5 + PinLimiter::kPortSlots;
  EXPECT_EQ(l.admit(peek_of(a, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.admit(peek_of(a, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);
  EXPECT_EQ(l.admit(peek_of(a, PinClass::kData), t0), PinLimiter::Verdict::kDropPort);
  EXPECT_EQ(l.admit(peek_of(b, PinClass::kData), t0), PinLimiter::Verdict::kAdmit);  // fresh bucket for b
}

// ---- [southbound] keys ----------------------------------------------------------------------

TEST(DosSettings, KeysAreReadAndBadValuesNamed) {
  auto cfg = core::Config::parse(R"(
[southbound]
pin_limit = false
pin_port_pps = 300
pin_port_burst = 30
table_miss_meter_pps = 0
control_meter_pps = 10
control_meter_burst = 0
pin_switch_pps = -5
)");
  ASSERT_TRUE(cfg) << cfg.error();
  auto c = southbound_config_from(*cfg);
  EXPECT_FALSE(c.dos.pin_limit);
  EXPECT_EQ(c.dos.port_pps, 300u);
  EXPECT_EQ(c.dos.port_burst, 30u);
  EXPECT_EQ(c.dos.table_miss_meter_pps, 0u);
  const auto problems = cfg->finish();
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("southbound.control_meter_burst must be at least 1"), std::string::npos) << all;
  EXPECT_NE(all.find("pin_switch_pps"), std::string::npos) << all;
  EXPECT_EQ(problems.size(), 2u) << all;
}

// ---- the runtime ---------------------------------------------------------------------------

struct Seen {
  std::mutex mu;
  std::map<std::pair<uint64_t, uint16_t>, int> by_dpid_and_type;  // (dpid, eth type) -> PacketIns seen
  int get(uint64_t dpid, uint16_t t) {
    std::lock_guard l(mu);
    return by_dpid_and_type[{dpid, t}];
  }
};

class CountingApp : public App {
 public:
  explicit CountingApp(Seen& s) : s_(s) {}
  std::string_view name() const override { return "counting"; }
  Disposition on_packet_in(SwitchContext& sw, const ofp::PacketIn& pin, Clock::time_point) override {
    const PinPeek p = [&] {
      ofp::Bytes f;
      (void)ofp::encode(1, pin, f);
      return peek_packet_in(f);
    }();
    std::lock_guard l(s_.mu);
    s_.by_dpid_and_type[{sw.dpid(), p.eth_type}]++;
    return Disposition::kContinue;
  }

 private:
  Seen& s_;
};

class DosRuntimeTest : public ::testing::Test {
 protected:
  void start(SouthboundConfig cfg) {
    cfg.listen_address = "127.0.0.1";
    cfg.listen_port = 0;
    pool_ = std::make_unique<core::ShardPool>(2);
    ctl_ = std::make_unique<Controller>(*pool_, cfg, metrics_,
                                        std::vector<AppFactory>{[this](unsigned) { return std::make_unique<CountingApp>(seen_); }});
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
  uint64_t dropped() {
    return counter("southbound.packet_in.dropped.port") + counter("southbound.packet_in.dropped.switch") +
           counter("southbound.packet_in.dropped.control_port") + counter("southbound.packet_in.dropped.control_switch");
  }
  // Sends n copies of a PacketIn in one write.
  static void burst(RawSwitch& sw, const ofp::Bytes& one, int n) {
    ofp::Bytes b;
    for (int i = 0; i < n; ++i) b.insert(b.end(), one.begin(), one.end());
    sw.send_bytes(b);
  }

  Seen seen_;
  core::Metrics metrics_;
  std::unique_ptr<core::ShardPool> pool_;
  std::unique_ptr<Controller> ctl_;
  uint16_t port_ = 0;
};

TEST_F(DosRuntimeTest, FloodingPortIsCappedWhileOtherSwitchAndArpGetThrough) {
  SouthboundConfig cfg;
  cfg.dos.port_pps = 1;      // ~1 token a second: the test ends long before more than a few refill
  cfg.dos.port_burst = 100;
  cfg.dos.switch_pps = 0;
  start(cfg);
  RawSwitch flooder(port_), good(port_);
  ASSERT_TRUE(flooder.handshake(1));
  ASSERT_TRUE(good.handshake(2));
  const auto t0 = Clock::now();
  constexpr int kFlood = 5000, kGood = 300, kArps = 40;
  std::thread flood([&] { burst(flooder, packet_in_frame(kIp, 1), kFlood); });
  // Meanwhile the other switch sends 100 from each of ports 1..3 (its buckets' bursts): all of
  // it is delivered.
  for (uint32_t p = 1; p <= 3; ++p) burst(good, packet_in_frame(kIp, p), kGood / 3);
  flood.join();
  // ARP and VLAN-tagged ARP from the flooded port still get through.
  burst(flooder, packet_in_frame(kArp, 1), kArps / 2);
  burst(flooder, packet_in_frame(kVlanArp, 1), kArps / 2);
  ASSERT_TRUE(eventually([&] { return counter("southbound.rx.packet_in") == kFlood + kGood + kArps; }, 10000ms));
  ASSERT_TRUE(eventually([&] { return seen_.get(1, 0x0806) == kArps; })) << seen_.get(1, 0x0806);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(seen_.get(2, 0x0800), kGood);
  const int flood_seen = seen_.get(1, 0x0800);
  EXPECT_GE(flood_seen, 100);
  EXPECT_LE(flood_seen, 100 + static_cast<int>(secs) + 1) << secs << " s";
  // Exact accounting: every flood PacketIn was either delivered or dropped by the port bucket.
  EXPECT_EQ(counter("southbound.packet_in.dropped.port"), static_cast<uint64_t>(kFlood - flood_seen));
  EXPECT_EQ(dropped(), static_cast<uint64_t>(kFlood - flood_seen));
  EXPECT_EQ(counter("southbound.packet_in.control"), static_cast<uint64_t>(kArps));
  EXPECT_EQ(counter("southbound.packet_in.unpeeked"), 0u);
}

TEST_F(DosRuntimeTest, FloodingSwitchIsCappedAcrossItsPorts) {
  SouthboundConfig cfg;
  cfg.dos.port_pps = 0;
  cfg.dos.switch_pps = 1;
  cfg.dos.switch_burst = 200;
  start(cfg);
  RawSwitch flooder(port_), good(port_);
  ASSERT_TRUE(flooder.handshake(1));
  ASSERT_TRUE(good.handshake(2));
  const auto t0 = Clock::now();
  // 40 ports x 50: each port is quiet on its own; the switch as a whole floods.
  std::thread flood([&] {
    for (uint32_t p = 1; p <= 40; ++p) burst(flooder, packet_in_frame(kIp, p), 50);
  });
  burst(good, packet_in_frame(kIp, 1), 150);
  flood.join();
  burst(flooder, packet_in_frame(kLldp, 7), 10);  // LLDP: the control class's switch bucket is full
  ASSERT_TRUE(eventually([&] { return counter("southbound.rx.packet_in") == 2000 + 150 + 10; }, 10000ms));
  ASSERT_TRUE(eventually([&] { return seen_.get(1, 0x88cc) == 10; }));
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(seen_.get(2, 0x0800), 150);
  const int flood_seen = seen_.get(1, 0x0800);
  EXPECT_GE(flood_seen, 200);
  EXPECT_LE(flood_seen, 200 + static_cast<int>(secs) + 1);
  EXPECT_EQ(counter("southbound.packet_in.dropped.switch"), static_cast<uint64_t>(2000 - flood_seen));
  EXPECT_EQ(dropped(), static_cast<uint64_t>(2000 - flood_seen));
}

TEST_F(DosRuntimeTest, ArpFloodFromOnePortDoesNotStarveArpFromAnother) {
  SouthboundConfig cfg;
  cfg.dos.control_port_pps = 1;
  cfg.dos.control_port_burst = 50;
  start(cfg);
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  burst(sw, packet_in_frame(kArp, 2), 3000);
  burst(sw, packet_in_frame(kArp, 3), 20);
  ASSERT_TRUE(eventually([&] { return counter("southbound.rx.packet_in") == 3020; }, 10000ms));
  ASSERT_TRUE(eventually([&] { return counter("southbound.packet_in.control") + dropped() == 3020; }));
  const uint64_t delivered = static_cast<uint64_t>(seen_.get(1, 0x0806));
  EXPECT_EQ(counter("southbound.packet_in.control"), delivered);
  EXPECT_GE(delivered, 70u);   // 50 from port 2, all 20 from port 3
  EXPECT_LE(delivered, 75u);
  EXPECT_EQ(counter("southbound.packet_in.dropped.control_port"), 3020 - delivered);
}

TEST_F(DosRuntimeTest, LimiterOffDropsNothing) {
  SouthboundConfig cfg;
  cfg.dos.pin_limit = false;
  cfg.dos.port_pps = 1;
  cfg.dos.port_burst = 1;
  start(cfg);
  RawSwitch sw(port_);
  ASSERT_TRUE(sw.handshake(1));
  burst(sw, packet_in_frame(kIp, 1), 500);
  ASSERT_TRUE(eventually([&] { return seen_.get(1, 0x0800) == 500; }, 10000ms)) << seen_.get(1, 0x0800);
  EXPECT_EQ(dropped(), 0u);
}

// ---- table-miss meters -------------------------------------------------------------------

ofp::MeterFeatures ovs_like() {
  ofp::MeterFeatures f;
  f.max_meter = 262144;
  f.band_types = 1u << 1;
  f.capabilities = 0xf;
  f.max_bands = 8;
  return f;
}

// Reads the meter set-up batch up to its barrier.
std::vector<ofp::Message> read_batch(RawSwitch& sw) {
  std::vector<ofp::Message> out;
  while (auto m = sw.recv(2000ms)) {
    out.push_back(*m);
    if (ofp::type_of(m->body) == ofp::Type::kBarrierRequest) break;
  }
  return out;
}

TEST_F(DosRuntimeTest, MetersInstalledOnTheTableMissWhereSupported) {
  SouthboundConfig cfg;
  cfg.dos.table_miss_meter_pps = 700;
  cfg.dos.table_miss_meter_burst = 70;
  cfg.dos.control_meter_pps = 50;
  cfg.dos.control_meter_burst = 5;
  start(cfg);
  RawSwitch sw(port_);
  sw.meter_features = ovs_like();
  ASSERT_TRUE(sw.handshake(1));
  auto batch = read_batch(sw);
  ASSERT_FALSE(batch.empty());
  ASSERT_EQ(ofp::type_of(batch.back().body), ofp::Type::kBarrierRequest);
  std::vector<ofp::MeterMod> meters;
  std::vector<ofp::FlowMod> flows;
  for (const auto& m : batch) {
    if (auto* mm = std::get_if<ofp::MeterMod>(&m.body)) meters.push_back(*mm);
    if (auto* fm = std::get_if<ofp::FlowMod>(&m.body)) flows.push_back(*fm);
  }
  ASSERT_EQ(meters.size(), 4u);
  EXPECT_EQ(meters[0].command, 2);  // stale ones deleted first
  EXPECT_EQ(meters[1].command, 2);
  EXPECT_EQ(meters[2].command, 0);
  EXPECT_EQ(meters[2].meter_id, kMissMeterId);
  EXPECT_EQ(meters[2].flags & 2, 2);  // PKTPS
  ASSERT_EQ(meters[2].bands.size(), 1u);
  EXPECT_EQ(meters[2].bands[0], (ofp::MeterBand{1, 700, 70, 0}));
  EXPECT_EQ(meters[3].meter_id, kMissMeterId - 1);
  EXPECT_EQ(meters[3].bands[0], (ofp::MeterBand{1, 50, 5, 0}));
  ASSERT_EQ(flows.size(), 3u);
  EXPECT_EQ(flows[0].priority, kControlFlowPriority);
  EXPECT_EQ(flows[0].match.get(ofp::OxmField::kEthType), 0x0806u);
  EXPECT_EQ(flows[1].match.get(ofp::OxmField::kEthType), 0x88ccu);
  EXPECT_EQ(std::get<ofp::InstrMeter>(flows[0].instructions[0]).meter_id, kMissMeterId - 1);
  EXPECT_EQ(flows[0].cookie & kDosCookieMask, kDosCookie);
  const auto& miss = flows[2];
  EXPECT_EQ(miss.priority, 0);
  EXPECT_TRUE(miss.match.fields.empty());
  ASSERT_EQ(miss.instructions.size(), 2u);
  EXPECT_EQ(std::get<ofp::InstrMeter>(miss.instructions[0]).meter_id, kMissMeterId);
  EXPECT_EQ(counter("southbound.meters.installed"), 0u);  // not before the barrier reply
  sw.send(batch.back().xid, ofp::BarrierReply{});
  EXPECT_TRUE(eventually([&] { return counter("southbound.meters.installed") == 1; }));
  EXPECT_EQ(counter("southbound.meters.failed") + counter("southbound.meters.unsupported"), 0u);
}

TEST_F(DosRuntimeTest, RefusedMeterFallsBackToThePlainTableMiss) {
  SouthboundConfig cfg;
  start(cfg);
  RawSwitch sw(port_);
  sw.meter_features = ovs_like();
  ASSERT_TRUE(sw.handshake(1));
  auto batch = read_batch(sw);
  ASSERT_GE(batch.size(), 3u);
  // The first ADD is refused (OFPET_METER_MOD_FAILED / OFPMMFC_OUT_OF_METERS).
  uint32_t add_xid = 0;
  for (const auto& m : batch)
    if (auto* mm = std::get_if<ofp::MeterMod>(&m.body); mm && mm->command == 0 && !add_xid) add_xid = m.xid;
  ASSERT_NE(add_xid, 0u);
  sw.send(add_xid, ofp::ErrorMsg{ofp::err::kMeterModFailed, 6, {}});
  sw.send(batch.back().xid, ofp::BarrierReply{});
  auto fallback = read_batch(sw);
  EXPECT_TRUE(eventually([&] { return counter("southbound.meters.failed") == 1; }));
  ASSERT_FALSE(fallback.empty());
  const auto* miss = std::get_if<ofp::FlowMod>(&fallback.front().body);
  ASSERT_NE(miss, nullptr);
  EXPECT_EQ(miss->priority, 0);
  ASSERT_EQ(miss->instructions.size(), 1u);  // no meter instruction
  EXPECT_TRUE(std::holds_alternative<ofp::InstrApplyActions>(miss->instructions[0]));
  // The switch stays up and served; the limiter still applies.
  burst(sw, packet_in_frame(kIp, 1), 3);
  EXPECT_TRUE(eventually([&] { return seen_.get(1, 0x0800) == 3; }));
  EXPECT_EQ(counter("southbound.meters.installed"), 0u);
}

TEST_F(DosRuntimeTest, SwitchWithoutUsableMetersKeepsThePlainTableMiss) {
  SouthboundConfig cfg;
  start(cfg);
  RawSwitch no_meters(port_);  // answers BAD_MULTIPART
  ASSERT_TRUE(no_meters.handshake(1));
  RawSwitch no_pktps(port_);
  auto f = ovs_like();
  f.capabilities = 1 | 4 | 8;  // KBPS, BURST, STATS: no PKTPS
  no_pktps.meter_features = f;
  ASSERT_TRUE(no_pktps.handshake(2));
  EXPECT_TRUE(eventually([&] { return counter("southbound.meters.unsupported") == 2; }));
  // No meter set-up follows.
  for (auto* s : {&no_meters, &no_pktps}) EXPECT_FALSE(s->recv(200ms).has_value());
  EXPECT_EQ(counter("southbound.meters.installed") + counter("southbound.meters.failed"), 0u);
}

TEST_F(DosRuntimeTest, MetersOffSendsNoProbe) {
  SouthboundConfig cfg;
  cfg.dos.table_miss_meter_pps = 0;
  start(cfg);
  RawSwitch sw(port_);
  sw.meter_features = ovs_like();
  ASSERT_TRUE(sw.handshake(1));
  EXPECT_FALSE(sw.recv(200ms).has_value());
  EXPECT_EQ(counter("southbound.meters.unsupported") + counter("southbound.meters.installed"), 0u);
  EXPECT_EQ(counter("southbound.tx.multipart_request"), 1u);  // the port description only
}

}  // namespace
}  // namespace sdn::southbound
