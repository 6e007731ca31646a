// The ids apps: the traffic batch format (round trip and every length rule), frames to Kitsune's
// fields, the detector's phases, threshold fit and suspects on a synthetic stream, the sampler's
// on-demand production through the real in-process bus and Coordinator (it captures on loopback),
// and configuration errors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "apps/ids/config.hpp"
#include "apps/ids/detector.hpp"
#include "apps/ids/sampler.hpp"
#include "apps/ids/traffic.hpp"
#include "apps/mitigation/mitigation.hpp"
#include "data/coordinator.hpp"
#include "pkt/build.hpp"
#include "../../../fakes/eventually.hpp"

namespace sdn::apps::ids {
namespace {

using namespace std::chrono_literals;

std::span<const uint8_t> view(const pkt::Bytes& b) { return {b.data(), b.size()}; }

pkt::Bytes tcp_frame(uint64_t smac, uint64_t dmac, uint32_t sip, uint32_t dip, uint16_t sp, uint16_t dp, uint16_t flags,
                     size_t payload) {
  pkt::EthSpec e{pkt::Mac{dmac}, pkt::Mac{smac}};
  pkt::Ipv4Spec ip{pkt::Ipv4Addr{sip}, pkt::Ipv4Addr{dip}};
  pkt::TcpSpec t{sp, dp, 1, 0, flags};
  pkt::Bytes data(payload, 0x61);
  return pkt::build_tcp(e, ip, t, view(data));
}

TEST(TrafficBatch, RoundTripsFramesInOrder) {
  BatchWriter w;
  auto a = tcp_frame(1, 2, 0x0a000001, 0x0a000002, 1000, 80, pkt::tcpflag::kSyn, 0);
  auto b = pkt::arp_request(pkt::Mac{3}, pkt::Ipv4Addr{0x0a000003}, pkt::Ipv4Addr{0x0a000004});
  w.add(1'000'000'123, 1514, 2, view(a));
  w.add(1'000'000'456, static_cast<uint32_t>(b.size()), 0, view(b));
  EXPECT_EQ(w.count(), 2u);
  const std::string batch = w.take();
  EXPECT_TRUE(w.empty());
  std::vector<Frame> got;
  std::vector<std::vector<uint8_t>> bytes;
  auto n = for_each_frame(batch, [&](const Frame& f) {
    got.push_back(f);
    bytes.emplace_back(f.bytes.begin(), f.bytes.end());
  });
  ASSERT_TRUE(n) << n.error();
  ASSERT_EQ(*n, 2u);
  EXPECT_EQ(got[0].ts_ns, 1'000'000'123);
  EXPECT_EQ(got[0].wire_len, 1514u);
  EXPECT_EQ(got[0].source, 2);
  EXPECT_EQ(bytes[0], a);
  EXPECT_EQ(got[1].ts_ns, 1'000'000'456);
  EXPECT_EQ(bytes[1], b);
  // A writer is reusable after take().
  w.add(5, 60, 0, view(b));
  EXPECT_TRUE(for_each_frame(w.take(), [](const Frame&) {}));
}

TEST(TrafficBatch, EveryLengthRuleIsAnError) {
  BatchWriter w;
  auto a = tcp_frame(1, 2, 1, 2, 3, 4, pkt::tcpflag::kSyn, 10);
  w.add(7, static_cast<uint32_t>(a.size()), 0, view(a));
  const std::string good = w.take();
  auto err = [](std::string_view b) {
    auto r = for_each_frame(b, [](const Frame&) {});
    return r ? std::string() : r.error();
  };
  EXPECT_EQ(err(""), "batch shorter than its 8-byte header");
  EXPECT_EQ(err(std::string_view("XXXX\x01\x00\x00\x00", 8)), "batch does not start with SDT1");
  EXPECT_NE(err(good.substr(0, 12)).find("header past the end"), std::string::npos);
  EXPECT_NE(err(good.substr(0, good.size() - 1)).find("captured bytes past the end"), std::string::npos);
  EXPECT_EQ(err(good + "x"), "bytes after the last frame");
  std::string lying = good;
  lying[4] = '\x05';  // count 5, one frame present
  EXPECT_NE(err(lying).find("frame 1"), std::string::npos);
  std::string wire_short = good;
  wire_short[8 + 8] = 1, wire_short[8 + 9] = 0, wire_short[8 + 10] = 0, wire_short[8 + 11] = 0;  // wire_len 1
  EXPECT_NE(err(wire_short).find("captured length above the wire length"), std::string::npos);
  // A huge count with no frames fails at once (nothing is sized from it).
  std::string huge = "SDT1\xff\xff\xff\xff";
  EXPECT_NE(err(huge).find("frame 0"), std::string::npos);
}

TEST(TrafficBatch, PacketInfoTakesKitsunesFields) {
  auto tcp = tcp_frame(0x0000000000aa, 0x0000000000bb, 0x0a000001, 0x0a000002, 40000, 443, pkt::tcpflag::kAck, 100);
  Frame f{2'000'000'000, 1500, 0, view(tcp)};
  auto p = packet_info(f, 1.0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, PacketInfo::Kind::kIpv4);
  EXPECT_DOUBLE_EQ(p->ts, 1.0);
  EXPECT_EQ(p->len, 1500u);
  EXPECT_EQ(p->src_mac, 0xaau);
  EXPECT_EQ(p->dst_mac, 0xbbu);
  EXPECT_EQ(p->src_ip, 0x0a000001u);
  EXPECT_EQ(p->proto, 6);
  EXPECT_EQ(p->src_port, 40000);
  EXPECT_EQ(p->dst_port, 443);
  // Cut after the IPv4 header (a short snaplen): still an IPv4 packet, ports unknown.
  Frame cut{0, 1500, 0, view(tcp).subspan(0, 34)};
  auto pc = packet_info(cut);
  ASSERT_TRUE(pc);
  EXPECT_EQ(pc->kind, PacketInfo::Kind::kIpv4);
  EXPECT_EQ(pc->dst_port, 0);
  auto arp = pkt::arp_request(pkt::Mac{0xcc}, pkt::Ipv4Addr{0x0a000009}, pkt::Ipv4Addr{0x0a00000a});
  auto pa = packet_info(Frame{0, 42, 0, view(arp)});
  ASSERT_TRUE(pa);
  EXPECT_EQ(pa->kind, PacketInfo::Kind::kArp);
  EXPECT_EQ(pa->src_ip, 0x0a000009u);
  EXPECT_EQ(pa->dst_ip, 0x0a00000au);
  const uint8_t junk[5] = {1, 2, 3, 4, 5};
  EXPECT_FALSE(packet_info(Frame{0, 5, 0, std::span<const uint8_t>(junk, 5)}));
}

// A benign office: 6 hosts, each talking to two servers (request/response TCP with ACKs,
// at about 900 packets/s in all); then, from t_attack, host 99 floods the first server with SYNs
// at 3000/s from changing source ports, and the server answers each with a RST.
struct Stream {
  std::vector<pkt::Bytes> frames;
  std::vector<int64_t> ts;
};

Stream synthetic(double benign_s, double attack_s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  struct Ev {
    int64_t t;
    pkt::Bytes f;
  };
  std::vector<Ev> ev;
  const int64_t s = 1'000'000'000;
  const int64_t t0 = 1'700'000'000LL * s;
  const double total = benign_s + attack_s;
  for (uint64_t h = 1; h <= 6; ++h) {
    const uint32_t ip = 0x0a000000 + static_cast<uint32_t>(h);
    for (uint64_t srv = 101; srv <= 102; ++srv) {
      const uint32_t sip = 0x0a000000 + static_cast<uint32_t>(srv);
      for (double t = u(rng) * 0.05; t < total; t += 0.04 + 0.01 * u(rng)) {
        const int64_t at = t0 + static_cast<int64_t>(t * 1e9);
        const auto port = static_cast<uint16_t>(40000 + h * 10 + (srv - 100));
        ev.push_back({at, tcp_frame(h, srv, ip, sip, port, 80, pkt::tcpflag::kAck | pkt::tcpflag::kPsh,
                                    80 + static_cast<size_t>(40 * u(rng)))});
        ev.push_back({at + 300'000, tcp_frame(srv, h, sip, ip, 80, port, pkt::tcpflag::kAck | pkt::tcpflag::kPsh,
                                              600 + static_cast<size_t>(400 * u(rng)))});
        ev.push_back({at + 400'000, tcp_frame(h, srv, ip, sip, port, 80, pkt::tcpflag::kAck, 0)});
      }
    }
  }
  if (attack_s > 0) {
    uint16_t sp = 1024;
    for (double t = benign_s; t < total; t += 1.0 / 3000) {
      const int64_t at = t0 + static_cast<int64_t>(t * 1e9);
      ev.push_back({at, tcp_frame(99, 101, 0x0a000063, 0x0a000065, sp, 80, pkt::tcpflag::kSyn, 0)});
      // The victim answers each SYN with a RST: anomalous too, but blamed on the flood's source.
      ev.push_back({at + 200'000, tcp_frame(101, 99, 0x0a000065, 0x0a000063, 80, sp, pkt::tcpflag::kRst | pkt::tcpflag::kAck, 0)});
      ++sp;
    }
  }
  std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  Stream out;
  for (auto& e : ev) {
    out.ts.push_back(e.t);
    out.frames.push_back(std::move(e.f));
  }
  return out;
}

// The synthetic streams train for 10 s of packet time: the slow decay factors (0.1, 0.01: half-lives
// of 10 and 100 s) would still be growing their weights long after training ends, and score a
// steady benign stream as drifting. Short runs use the fast three (as integration.ids does).
DetectorConfig small_detector() {
  DetectorConfig c;
  c.extractor.lambdas = {5, 3, 1};
  c.kitnet.fm_grace = 1000;
  c.kitnet.ad_grace = 8000;
  c.fit_packets = 2000;
  c.min_anomalous = 10;
  c.window = 1000ms;
  c.holdoff = 2000ms;
  return c;
}

TEST(DetectorCore, TrainsFitsAThresholdAndNamesOnlyTheFlooder) {
  auto st = synthetic(60.0, 2.0, 7);
  DetectorCore core(small_detector());
  DetectorCore::Output out;
  std::vector<std::string> phases;
  std::vector<nlohmann::json> suspects;
  uint64_t windows = 0;
  int64_t attack_start = 0;
  for (size_t i = 0; i < st.frames.size(); ++i) {
    const auto& b = st.frames[i];
    if (!attack_start && b[11] == 99) attack_start = st.ts[i];
    out.records.clear();
    core.on_frame(Frame{st.ts[i], static_cast<uint32_t>(b.size()), 0, view(b)}, st.ts[i], out);
    for (auto& [k, v] : out.records) {
      if (k == "network/ids/state") phases.push_back(v["phase"]);
      if (k.rfind("network/ids/suspect/", 0) == 0) suspects.push_back(v);
      if (k == "network/ids/score") ++windows;
    }
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"training", "fitting", "detecting"}));
  ASSERT_TRUE(core.threshold());
  EXPECT_GT(*core.threshold(), 0);
  EXPECT_GT(windows, 200u);  // 62 s of packet time in 250 ms windows
  ASSERT_FALSE(suspects.empty()) << "the SYN flood was not reported";
  for (const auto& s : suspects) EXPECT_EQ(s["mac"], "00:00:00:00:00:63") << s.dump();
  EXPECT_EQ(suspects[0]["ip"], "10.0.0.99");
  // Reported within 100 ms of packet time after the flood began (10 anomalous packets at 3000/s).
  EXPECT_LT(suspects[0]["packet_ns"].get<int64_t>() - attack_start, 100'000'000) << suspects[0].dump();
  // Held off: at most one report per 2 s of flood.
  EXPECT_LE(suspects.size(), 2u);
  EXPECT_EQ(core.counters().unparsed.load(), 0u);
}

TEST(DetectorCore, AFixedThresholdSkipsTheFitAndIgnoredMacsAreNeverNamed) {
  auto st = synthetic(40.0, 1.0, 11);
  auto cfg = small_detector();
  cfg.threshold = 1e-9;  // everything is anomalous once trained
  cfg.ignore_macs = {"00:00:00:00:00:63"};
  DetectorCore core(cfg);
  DetectorCore::Output out;
  std::set<std::string> named;
  std::vector<std::string> phases;
  for (size_t i = 0; i < st.frames.size(); ++i) {
    const auto& b = st.frames[i];
    core.on_frame(Frame{st.ts[i], static_cast<uint32_t>(b.size()), 0, view(b)}, st.ts[i], out);
  }
  for (auto& [k, v] : out.records) {
    if (k == "network/ids/state") phases.push_back(v["phase"]);
    if (k.rfind("network/ids/suspect/", 0) == 0) named.insert(v["mac"]);
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"training", "detecting"}));
  EXPECT_FALSE(named.count("00:00:00:00:00:63"));
  EXPECT_TRUE(named.count("00:00:00:00:00:01"));  // a benign host over a 1e-9 threshold
}

TEST(Detector, ABadRecordIsCountedAndTheNextBatchStillScores) {
  auto backends = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
  auto due = std::make_shared<data::Due>(backends);
  ASSERT_TRUE(due->init("ids", data::kProducer | data::kConsumer, {{"network/traffic/**", std::nullopt}},
                        {{"network/ids/**", std::nullopt}}));
  Detector det(small_detector(), due);
  ASSERT_TRUE(det.start());
  data::Due impostor(backends);
  ASSERT_TRUE(impostor.init("sampler", data::kProducer, {}, {{"network/traffic/**", std::nullopt}}));
  ASSERT_TRUE(impostor.write("network/traffic/packets", nlohmann::json{{"not", "a batch"}}));
  ASSERT_TRUE(impostor.write("network/traffic/packets", data::Bytes{std::string("SDT1\x09\x00\x00\x00garbage", 15)}));
  BatchWriter w;
  auto f = tcp_frame(1, 2, 1, 2, 3, 4, pkt::tcpflag::kSyn, 0);
  for (int i = 0; i < 5; ++i) w.add(1'000'000'000 + i, static_cast<uint32_t>(f.size()), 0, view(f));
  ASSERT_TRUE(impostor.write("network/traffic/packets", data::Bytes{w.take()}));
  EXPECT_TRUE(test::eventually([&] { return det.stats_json()["packets"] == 5; }));
  EXPECT_EQ(det.stats_json()["bad_batches"], 2);
  EXPECT_EQ(det.status_json()["phase"], "mapping");
}

// The sampler captures only while a consumer wants network/traffic/**: through the real bus and
// Coordinator, on loopback (it needs CAP_NET_RAW: the suite runs as root).
TEST(Sampler, ProducesOnlyWhileAConsumerIsInterested) {
  if (::geteuid() != 0) GTEST_SKIP() << "AF_PACKET needs root";
  auto backends = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);
  data::CoordinatorConfig cc;
  cc.check_interval = 20ms;
  data::Coordinator coord(backends, cc);
  ASSERT_TRUE(coord.start());
  data::DueConfig dc;
  dc.heartbeat_interval = 100ms;
  auto sdue = std::make_shared<data::Due>(backends, dc);
  SamplerConfig scfg;
  scfg.interfaces = {"lo"};
  ASSERT_TRUE(sdue->init("sampler", data::kProducer, {}, {{"network/traffic/**", scfg.max_freq}}));
  Sampler sampler(scfg, sdue);
  sampler.start();
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(sampler.capturing()) << "captures with no consumer";

  // A UDP sender on loopback with a recognisable destination port.
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(47999);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto send_some = [&] {
    for (int i = 0; i < 20; ++i) ::sendto(fd, "ids", 3, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  };

  std::atomic<uint64_t> seen{0}, batches{0};
  {
    auto consumer = std::make_unique<data::Due>(backends, dc);
    ASSERT_TRUE(consumer->init("ids", data::kConsumer, {{"network/traffic/**", 50.0}}));
    auto sub = consumer->observe("network/traffic/**", [&](const data::RecordPtr& r) {
      ASSERT_TRUE(r->value.is_bytes());
      batches.fetch_add(1);
      (void)for_each_frame(r->value.bytes(), [&](const Frame& f) {
        auto p = packet_info(f);
        if (p && p->proto == 17 && p->dst_port == 47999) seen.fetch_add(1);
      });
    });
    ASSERT_TRUE(sub);
    ASSERT_TRUE(test::eventually([&] { return sampler.capturing(); }, 3000ms)) << "never started capturing";
    EXPECT_EQ(sdue->assigned_freq("network/traffic/packets"), 50.0);
    // Loopback delivers each datagram once as incoming (the outgoing copy is skipped): 20 sent,
    // 20 seen, in batches at about 50 a second.
    send_some();
    EXPECT_TRUE(test::eventually([&] { return seen.load() >= 20; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(seen.load(), 20u);
  }  // the consumer says goodbye
  EXPECT_TRUE(test::eventually([&] { return !sampler.capturing(); }, 3000ms)) << "still capturing with no consumer";
  const uint64_t after = batches.load();
  send_some();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(batches.load(), after);
  EXPECT_EQ(sampler.counters().captures_started.load(), 1u);
  EXPECT_EQ(sampler.counters().captures_stopped.load(), 1u);
  ::close(fd);
  sampler.stop();
}

TEST(IdsConfig, BadValuesAreErrorsNamingTheKey) {
  auto cfg = core::Config::parse(R"(
[sampler]
interfaces = ["this-name-is-far-too-long"]
key = "fleet/traffic"
[ids]
score_mode = "sometimes"
ignore_macs = ["zz"]
fm_grace = 1
lambdas = [5, -1]
[mitigation]
match = "port"
allow = ["nope"]
block_s = 100
max_block_s = 10
)");
  ASSERT_TRUE(cfg) << cfg.error();
  (void)read_sampler_config(*cfg);
  (void)read_detector_config(*cfg);
  (void)mitigation::read_mitigation_config(*cfg);
  const auto problems = cfg->finish();
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  for (const char* key : {"sampler.interfaces", "sampler.key", "ids.score_mode", "ids.ignore_macs", "ids.fm_grace", "ids.lambdas",
                          "mitigation.match", "mitigation.allow", "mitigation.max_block_s"})
    EXPECT_NE(all.find(key), std::string::npos) << key << " not reported in:\n" << all;
}

}  // namespace
}  // namespace sdn::apps::ids
