// Tests of the Machine Assets app: digest, clock, RNG and the printer model with a manual clock,
// then the Jedi contract of real servers on ephemeral loopback ports (httplib::Client).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <regex>
#include <set>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/fleet/assets/assets.hpp"
#include "apps/fleet/assets/auth.hpp"
#include "apps/fleet/assets/digest.hpp"
#include "apps/fleet/assets/gcode.hpp"
#include "apps/fleet/assets/printer.hpp"
#include "apps/fleet/assets/sim_clock.hpp"
#include "apps/fleet/assets/sim_rng.hpp"

namespace sdn::fleet {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// ---------------------------------------------------------------- digest

TEST(Digest, Md5KnownValues) {
  EXPECT_EQ(digest::md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(digest::md5_hex("The quick brown fox jumps over the lazy dog"), "9e107d9d372bb6826bd81d3542a419d6");
}

// RFC 2617 section 3.5.
TEST(Digest, Rfc2617Example) {
  auto c = digest::parse_challenge(
      "Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", "
      "opaque=\"5ccc069c403ebaf9f0171e9517f40e41\"");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->realm, "testrealm@host.com");
  EXPECT_EQ(c->qop, "auth");
  EXPECT_EQ(c->algorithm, "MD5");
  EXPECT_EQ(c->opaque, "5ccc069c403ebaf9f0171e9517f40e41");
  const std::string h = digest::authorization(*c, "GET", "/dir/index.html", "Mufasa", "Circle Of Life", 1, "0a4f113b");
  EXPECT_NE(h.find("response=\"6629fae49393a05397450978507c4ef1\""), std::string::npos) << h;
  EXPECT_NE(h.find("nc=00000001"), std::string::npos) << h;
  EXPECT_EQ(digest::request_digest("Mufasa", "testrealm@host.com", "Circle Of Life", "GET", "/dir/index.html",
                                   "dcd98b7102dd2f0e8b11d0f600bfb0c093", "00000001", "0a4f113b", "auth"),
            "6629fae49393a05397450978507c4ef1");

  auto f = digest::parse_authorization(h);
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->at("username"), "Mufasa");
  EXPECT_EQ(f->at("uri"), "/dir/index.html");
  EXPECT_EQ(f->at("qop"), "auth");
  EXPECT_EQ(f->at("cnonce"), "0a4f113b");
  EXPECT_EQ(f->at("opaque"), "5ccc069c403ebaf9f0171e9517f40e41");
}

TEST(Digest, BadHeaders) {
  EXPECT_FALSE(digest::parse_challenge("Basic realm=\"x\""));
  auto no_nonce = digest::parse_challenge("Digest realm=\"x\"");
  ASSERT_FALSE(no_nonce);
  EXPECT_NE(no_nonce.error().find("nonce"), std::string::npos);
  EXPECT_FALSE(digest::parse_challenge("Digest nonce=\"n\""));                       // no realm
  EXPECT_FALSE(digest::parse_challenge("Digest realm=\"x\", nonce=\"n\", algorithm=SHA-256"));
  EXPECT_FALSE(digest::parse_challenge("Digest realm=\"x\", nonce=\"n\", qop=\"auth-int\""));
  EXPECT_FALSE(digest::parse_challenge("Digest realm=\"x, nonce=\"n\""));  // unterminated
  EXPECT_FALSE(digest::parse_challenge("Digest realm=\"x\" nonce=\"n\""));  // missing comma
  EXPECT_FALSE(digest::parse_challenge("Digest realm=\"x\", realm=\"y\", nonce=\"n\""));
  EXPECT_FALSE(digest::parse_challenge(std::string(digest::kMaxHeaderBytes + 1, 'a')));
  EXPECT_FALSE(digest::parse_authorization("Digest username=\"a\", realm=\"r\""));  // no nonce/uri/response
  EXPECT_FALSE(digest::parse_authorization(""));
  // Escapes inside quoted strings, tokens, and stray separators are fine.
  auto ok = digest::parse_challenge("digest  realm=\"a\\\"b\" ,, nonce=abc ,qop=auth");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->realm, "a\"b");
  EXPECT_EQ(ok->nonce, "abc");
  // Without qop the RFC 2069 form is used, with no nc/cnonce.
  digest::Challenge legacy{"r", "n", "", "", "MD5"};
  const std::string h = digest::authorization(legacy, "GET", "/", "u", "p", 1, "c");
  EXPECT_EQ(h.find("qop"), std::string::npos);
}

// ---------------------------------------------------------------- clock, rng, gcode

TEST(SimClock, IsoAndScaling) {
  SimClock c(60);  // 1 real second = 1 sim minute
  EXPECT_EQ(c.iso(0), "2026-01-01T08:00:00");
  EXPECT_EQ(c.iso(0.5), "2026-01-01T08:00:30");
  EXPECT_EQ(c.iso(16 * 60 + 1), "2026-01-02T00:01:00");
  EXPECT_EQ(c.iso(-1), "2026-01-01T07:59:00");
  EXPECT_EQ(c.iso(365.0 * 24 * 60), "2027-01-01T08:00:00");
  EXPECT_EQ(c.iso(std::nan("")), "");
  EXPECT_EQ(c.real_for(1), std::chrono::nanoseconds(1'000'000'000));
  EXPECT_EQ(c.real_for(-1), std::chrono::nanoseconds(0));
  EXPECT_EQ(SimClock(0).factor(), 1.0);
  SimClock fast(600000);
  const double a = fast.now_min();
  std::this_thread::sleep_for(2ms);
  const double b = fast.now_min();
  EXPECT_GE(b - a, 19.0);  // 2 ms = 20 sim minutes
}

TEST(SimRng, TriangularIsDeterministicAndInRange) {
  SimRng a(42, 1), b(42, 1), other(43, 1);
  double sum = 0;
  bool differs = false;
  for (int i = 0; i < 4000; ++i) {
    const double x = a.triangular(48, 240, 600);
    EXPECT_EQ(x, b.triangular(48, 240, 600));
    if (x != other.triangular(48, 240, 600)) differs = true;
    ASSERT_GE(x, 48);
    ASSERT_LE(x, 600);
    sum += x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 4000, (48.0 + 240 + 600) / 3, 8.0);
  EXPECT_DOUBLE_EQ(SimRng::triangular_quantile(0, 48, 240, 600), 48);
  EXPECT_DOUBLE_EQ(SimRng::triangular_quantile(1, 48, 240, 600), 600);
  EXPECT_NEAR(SimRng::triangular_quantile((240.0 - 48) / (600 - 48), 48, 240, 600), 240, 1e-9);
}

TEST(Fleet, MakeFleetIsDeterministic) {
  const auto a = make_fleet(20, 7), b = make_fleet(20, 7), c = make_fleet(20, 8);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_EQ(a.front().name, "um3-01");
  EXPECT_EQ(a.back().name, "um3-20");
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].speed, b[i].speed);
    EXPECT_EQ(a[i].cleanup_min, b[i].cleanup_min);
    if (a[i].speed != c[i].speed) differs = true;
    EXPECT_GE(a[i].speed, 0.8);
    EXPECT_LE(a[i].speed, 1.3);
    EXPECT_GE(a[i].heat_min, 3);
    EXPECT_LE(a[i].heat_min, 6);
    EXPECT_GE(a[i].post_min, 2);
    EXPECT_LE(a[i].post_min, 4);
    EXPECT_GE(a[i].cleanup_min, 5);
    EXPECT_LE(a[i].cleanup_min, 25);
  }
  EXPECT_TRUE(differs);
}

TEST(Fleet, ValidateRejectsBadConfigs) {
  auto base = [] {
    AssetsConfig c;
    c.printers = make_fleet(2, 1);
    return c;
  };
  EXPECT_TRUE(validate(base()));
  AssetsConfig c = base();
  c.printers.clear();
  EXPECT_FALSE(validate(c));
  EXPECT_FALSE(MachineAssets::start(c));
  c = base();
  c.printers[1].name = c.printers[0].name;
  ASSERT_FALSE(validate(c));
  EXPECT_NE(validate(c).error().find("duplicate"), std::string::npos);
  c = base();
  c.factor = 0;
  EXPECT_FALSE(validate(c));
  c.factor = -5;
  EXPECT_FALSE(MachineAssets::start(c));
  c = base();
  c.printers[0].heat_min = -1;
  ASSERT_FALSE(validate(c));
  EXPECT_NE(validate(c).error().find("heat_min"), std::string::npos);
  c = base();
  c.printers[1].cleanup_min = std::nan("");
  EXPECT_FALSE(validate(c));
  c = base();
  c.printers[0].speed = 0;
  EXPECT_FALSE(validate(c));
  c = base();
  c.base_port = 65535;
  EXPECT_FALSE(validate(c));
  c = base();
  c.anomaly_probability = 1.5;
  EXPECT_FALSE(validate(c));
  c = base();
  c.printers[0].name.clear();
  EXPECT_FALSE(validate(c));
}

std::string gcode(const std::string& print_time_line = "") {
  std::string g = ";START_OF_HEADER\n;HEADER_VERSION:0.1\n;FLAVOR:Griffin\n";
  if (!print_time_line.empty()) g += print_time_line + "\n";
  return g + ";END_OF_HEADER\nG28\nG1 X10 Y10\n";
}

TEST(Gcode, Inspect) {
  auto ok = inspect_gcode("part.gcode", gcode(";PRINT.TIME:3600"));
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->flavor, "Griffin");
  EXPECT_EQ(ok->print_time_s, 3600.0);
  auto crlf = inspect_gcode("PART.GCODE", ";FLAVOR:Griffin\r\n;PRINT.TIME:12.5\r\nG28\r\n");
  ASSERT_TRUE(crlf) << crlf.error();
  EXPECT_EQ(crlf->print_time_s, 12.5);
  auto none = inspect_gcode("p.gcode", "; plain comment\nG28\n;PRINT.TIME:abc\n");  // after the header: ignored
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->print_time_s);
  EXPECT_FALSE(inspect_gcode("p.gcode", ""));
  EXPECT_FALSE(inspect_gcode("p.stl", gcode()));
  EXPECT_FALSE(inspect_gcode("p.gcode", "G28\nG1 X1\n"));
  EXPECT_FALSE(inspect_gcode("p.gcode", std::string(";x\n\0\1\2", 6)));
  for (const char* bad : {";PRINT.TIME:", ";PRINT.TIME:-5", ";PRINT.TIME:0", ";PRINT.TIME:12x", ";PRINT.TIME:1e9",
                          ";PRINT.TIME:nan"}) {
    EXPECT_FALSE(inspect_gcode("p.gcode", gcode(bad))) << bad;
  }
}

// ---------------------------------------------------------------- printer model, manual clock

PrinterSpec spec(double speed = 1.0) {
  PrinterSpec s;
  s.name = "m";
  s.speed = speed;
  s.heat_min = 4;
  s.post_min = 3;
  s.cleanup_min = 12;
  s.boot_min = 1;
  return s;
}

TEST(PrinterModel, JobLifecycle) {
  PrinterModel m(spec(1.2), 1, 0);
  EXPECT_EQ(m.status(0.5), PrinterStatus::kBooting);
  EXPECT_FALSE(m.start_job("a", 3600, 0.5));  // booting: busy
  EXPECT_EQ(m.status(1.0), PrinterStatus::kIdle);
  EXPECT_FALSE(m.job(1.0));
  EXPECT_NEAR(m.nominal_temperature(Sensor::kHotend, 1.0).current, kAmbientC, 1e-9);
  EXPECT_EQ(m.nominal_temperature(Sensor::kHotend, 1.0).target, 0);

  auto j = m.start_job("a", 3600, 2.0);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->state, JobState::kPrePrint);
  EXPECT_DOUBLE_EQ(j->time_total_s, 4320);  // 3600 * 1.2: 72 sim minutes
  EXPECT_EQ(j->result, JobResult::kNone);
  EXPECT_EQ(j->uuid.size(), 36u);
  EXPECT_EQ(m.status(2.0), PrinterStatus::kPrinting);
  EXPECT_FALSE(m.start_job("b", 60, 2.5));  // busy

  // pre_print: linear ramp from ambient over heat_min.
  auto hot = m.nominal_temperature(Sensor::kHotend, 4.0);
  EXPECT_DOUBLE_EQ(hot.target, kHotendTargetC);
  EXPECT_NEAR(hot.current, (kAmbientC + kHotendTargetC) / 2, 1e-9);
  EXPECT_NEAR(m.nominal_temperature(Sensor::kBed, 4.0).current, (kAmbientC + kBedTargetC) / 2, 1e-9);
  EXPECT_EQ(m.job(5.9)->state, JobState::kPrePrint);

  // printing from 6 to 78.
  auto p = m.job(6.0);
  EXPECT_EQ(p->state, JobState::kPrinting);
  EXPECT_DOUBLE_EQ(p->progress, 0);
  p = m.job(42.0);
  EXPECT_NEAR(p->progress, 0.5, 1e-9);
  EXPECT_NEAR(p->time_elapsed_s, 2160, 1e-6);
  EXPECT_NEAR(m.nominal_temperature(Sensor::kHotend, 42.0).current, kHotendTargetC, 1e-9);
  const auto noisy = m.temperature(Sensor::kBed, 42.0);
  EXPECT_NEAR(noisy.current, kBedTargetC, 2.0);
  EXPECT_FALSE(p->finished_min);

  p = m.job(78.0);
  EXPECT_EQ(p->state, JobState::kPostPrint);
  EXPECT_DOUBLE_EQ(p->progress, 1);
  EXPECT_DOUBLE_EQ(*p->finished_min, 78);
  EXPECT_EQ(p->result, JobResult::kNone);
  EXPECT_EQ(m.nominal_temperature(Sensor::kHotend, 78.0).target, 0);
  EXPECT_NEAR(m.nominal_temperature(Sensor::kHotend, 80.0).current,
              kAmbientC + (kHotendTargetC - kAmbientC) * std::exp(-2.0 / kHotendCoolTauMin), 1e-9);

  p = m.job(81.0);
  EXPECT_EQ(p->state, JobState::kWaitCleanup);
  EXPECT_EQ(p->result, JobResult::kFinished);
  EXPECT_EQ(m.status(92.9), PrinterStatus::kPrinting);
  EXPECT_EQ(m.status(93.0), PrinterStatus::kIdle);
  EXPECT_FALSE(m.job(93.0));
  const auto& h = m.history(93.0);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_DOUBLE_EQ(*h[0].cleaned_min, 93);
  EXPECT_EQ(h[0].result, JobResult::kFinished);
  EXPECT_EQ(m.counters().jobs_started, 1u);
  EXPECT_EQ(m.counters().jobs_finished, 1u);

  // A long gap replays every transition of a second job at once.
  ASSERT_TRUE(m.start_job("b", 60, 100));
  EXPECT_EQ(m.status(1000), PrinterStatus::kIdle);
  EXPECT_EQ(m.history(1000).size(), 2u);
  EXPECT_DOUBLE_EQ(*m.history(1000)[1].finished_min, 100 + 4 + 1.2);  // 60 s * 1.2
}

TEST(PrinterModel, PauseResumeAbort) {
  PrinterModel m(spec(), 1, 0);
  EXPECT_EQ(m.pause(0.5).error(), ModelError::kNoJob);
  ASSERT_TRUE(m.start_job("a", 600, 1));  // printing 5..15
  EXPECT_EQ(m.pause(3).error(), ModelError::kNotAllowed);  // pre_print
  EXPECT_EQ(m.resume(3).error(), ModelError::kNotAllowed);
  ASSERT_TRUE(m.pause(7));
  EXPECT_EQ(m.job(7)->state, JobState::kPaused);
  EXPECT_NEAR(m.job(50)->time_elapsed_s, 120, 1e-9);  // stopped while paused
  EXPECT_EQ(m.nominal_temperature(Sensor::kHotend, 50).target, kHotendTargetC);
  EXPECT_EQ(m.pause(50).error(), ModelError::kNotAllowed);
  ASSERT_TRUE(m.resume(100));
  EXPECT_EQ(m.job(107.9)->state, JobState::kPrinting);
  EXPECT_EQ(m.job(108)->state, JobState::kPostPrint);

  ASSERT_TRUE(m.abort(109));  // post_print may still be aborted
  auto j = m.job(109);
  EXPECT_EQ(j->state, JobState::kWaitCleanup);
  EXPECT_EQ(j->result, JobResult::kAborted);
  EXPECT_DOUBLE_EQ(*j->finished_min, 108);  // the print itself had ended
  EXPECT_EQ(m.abort(110).error(), ModelError::kNotAllowed);
  EXPECT_EQ(m.counters().jobs_aborted, 1u);
  EXPECT_EQ(m.counters().jobs_finished, 0u);

  EXPECT_EQ(m.status(121), PrinterStatus::kIdle);
  ASSERT_TRUE(m.start_job("b", 600, 121));
  ASSERT_TRUE(m.abort(122));  // from pre_print: heaters off, half-way up the ramp
  j = m.job(122);
  EXPECT_DOUBLE_EQ(*j->finished_min, 122);
  EXPECT_DOUBLE_EQ(j->time_elapsed_s, 0);
  EXPECT_EQ(m.nominal_temperature(Sensor::kHotend, 122).target, 0);
  EXPECT_LT(m.nominal_temperature(Sensor::kHotend, 130).current, 40);
}

TEST(PrinterModel, Maintenance) {
  PrinterModel m(spec(), 1, 0);
  ASSERT_TRUE(m.start_job("a", 600, 1));
  EXPECT_EQ(m.start_maintenance(30, 2).error(), ModelError::kBusy);
  EXPECT_EQ(m.start_maintenance(-1, 2).error(), ModelError::kBadArgument);
  ASSERT_TRUE(m.abort(6));
  ASSERT_TRUE(m.start_maintenance(30, 8));  // wait_cleanup: the job is cleared at once
  EXPECT_FALSE(m.job(8));
  ASSERT_EQ(m.history(8).size(), 1u);
  EXPECT_DOUBLE_EQ(*m.history(8)[0].cleaned_min, 8);
  EXPECT_EQ(m.status(37.9), PrinterStatus::kMaintenance);
  EXPECT_FALSE(m.start_job("b", 600, 20));
  EXPECT_EQ(m.status(38), PrinterStatus::kIdle);
  EXPECT_TRUE(m.start_job("b", 600, 38));
}

TEST(PrinterModel, AnomalyDriftsUntilMaintenanceAndFailsThePrint) {
  PrinterModel m(spec(), 1, 0);
  EXPECT_TRUE(m.inject_anomaly(Sensor::kHotend, 10));
  EXPECT_FALSE(m.inject_anomaly(Sensor::kHotend, 11));  // already drifting
  EXPECT_NEAR(m.nominal_temperature(Sensor::kHotend, 20).current, kAmbientC - 15, 1e-9);
  EXPECT_NEAR(m.nominal_temperature(Sensor::kBed, 20).current, kAmbientC, 1e-9);
  ASSERT_TRUE(m.start_job("a", 600, 20));  // printing 24..34
  EXPECT_NEAR(m.nominal_temperature(Sensor::kHotend, 30).current, kHotendTargetC - 30, 1e-9);
  EXPECT_EQ(m.job(38)->result, JobResult::kFailed);
  EXPECT_EQ(m.counters().jobs_failed, 1u);
  EXPECT_EQ(m.counters().anomalies, 1u);
  ASSERT_TRUE(m.start_maintenance(5, 60));
  EXPECT_FALSE(m.anomaly_since(Sensor::kHotend, 60));
  EXPECT_NEAR(m.nominal_temperature(Sensor::kHotend, 200).current, kAmbientC, 0.01);
  ASSERT_TRUE(m.inject_anomaly(Sensor::kBed, 200));
  EXPECT_NEAR(m.nominal_temperature(Sensor::kBed, 210).current, kAmbientC + 15, 0.01);
}

TEST(PrinterModel, RandomAnomalyIsDeterministicAndInsidePrinting) {
  auto run = [](uint64_t seed) {
    PrinterModel m(spec(), seed, 1.0);
    EXPECT_TRUE(m.start_job("a", 6000, 1));  // printing 5..105
    EXPECT_EQ(m.job(110)->result, JobResult::kFailed);
    const auto h = m.anomaly_since(Sensor::kHotend, 200), b = m.anomaly_since(Sensor::kBed, 200);
    EXPECT_NE(h.has_value(), b.has_value());
    const double at = h ? *h : *b;
    EXPECT_GT(at, 5);
    EXPECT_LT(at, 105);
    EXPECT_EQ(m.counters().anomalies, 1u);
    return at;
  };
  EXPECT_EQ(run(5), run(5));
  PrinterModel never(spec(), 5, 0.0);
  ASSERT_TRUE(never.start_job("a", 6000, 1));
  EXPECT_EQ(never.job(110)->result, JobResult::kFinished);
}

TEST(PrinterModel, SensorNoiseAndTriangularDraws) {
  PrinterModel a(spec(), 9, 0), b(spec(), 9, 0);
  double sum = 0, sq = 0;
  for (int i = 0; i < 2000; ++i) {
    const double d = a.temperature(Sensor::kBed, 5).current - kAmbientC;
    sum += d;
    sq += d * d;
  }
  EXPECT_NEAR(sum / 2000, 0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / 2000), kSensorNoiseSdC, 0.05);
  // The noise drawn above does not shift the print-time draws.
  for (double t = 10; t < 10 + 5 * 2000; t += 2000) {
    const auto ja = a.start_job("x", std::nullopt, t), jb = b.start_job("x", std::nullopt, t);
    ASSERT_TRUE(ja && jb);
    EXPECT_EQ(ja->estimate_s, jb->estimate_s);
    EXPECT_GE(ja->estimate_s, kTriMinMin * 60);
    EXPECT_LE(ja->estimate_s, kTriMaxMin * 60);
    EXPECT_EQ(ja->uuid, jb->uuid);
  }
}

// ---------------------------------------------------------------- over HTTP

// Polls f until it holds or the deadline passes (no fixed sleeps for state changes).
bool eventually(const std::function<bool()>& f, std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(500us);
  }
  return f();
}

PrinterSpec named(std::string name, double heat = 4, double post = 3, double cleanup = 12, double boot = 0,
                  double speed = 1.0) {
  PrinterSpec s;
  s.name = std::move(name);
  s.heat_min = heat;
  s.post_min = post;
  s.cleanup_min = cleanup;
  s.boot_min = boot;
  s.speed = speed;
  return s;
}

std::unique_ptr<MachineAssets> start_fleet(std::vector<PrinterSpec> printers, double factor = 60000,
                                           std::function<void(AssetsConfig&)> tweak = {}) {
  AssetsConfig cfg;
  cfg.printers = std::move(printers);
  cfg.factor = factor;  // 60000: one real millisecond is one sim minute
  cfg.authorize_after_min = 0.5;
  if (tweak) tweak(cfg);
  auto fleet = MachineAssets::start(cfg);
  EXPECT_TRUE(fleet) << (fleet ? "" : fleet.error());
  return fleet ? std::move(fleet).value() : nullptr;
}

json body_json(const httplib::Result& r) { return r ? json::parse(r->body, nullptr, false) : json(); }

// A Jedi client: pairing, digest signing (with digest::authorization), uploads.
class Jedi {
 public:
  explicit Jedi(uint16_t port) : cli_("127.0.0.1", port) {
    cli_.set_connection_timeout(2);
    cli_.set_read_timeout(5);
  }

  httplib::Result get(const std::string& path) { return cli_.Get(path.c_str()); }
  json get_json(const std::string& path) { return body_json(get(path)); }

  digest::Challenge challenge() {
    auto r = get("/api/v1/auth/verify");
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    auto c = digest::parse_challenge(r->get_header_value("WWW-Authenticate"));
    EXPECT_TRUE(c) << (c ? "" : c.error());
    return c ? *c : digest::Challenge{};
  }

  // Pairs and waits for the emulated button press.
  void pair() {
    auto r = cli_.Post("/api/v1/auth/request", httplib::Params{{"application", "sdnator-test"}, {"user", "ci"}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    const json j = body_json(r);
    id_ = j.at("id").get<std::string>();
    key_ = j.at("key").get<std::string>();
    ASSERT_TRUE(eventually([&] { return get_json("/api/v1/auth/check/" + id_)["message"] == "authorized"; }));
    challenge_ = challenge();
  }

  httplib::Headers sign(const std::string& method, const std::string& uri, const std::string& key_override = "") {
    const std::string a = digest::authorization(challenge_, method, uri, id_, key_override.empty() ? key_ : key_override,
                                                ++nc_, "c0ffee");
    return {{"Authorization", a}};
  }

  httplib::Result put(const std::string& path, const std::string& body, bool auth = true) {
    return cli_.Put(path.c_str(), auth ? sign("PUT", path) : httplib::Headers{}, body, "application/json");
  }
  httplib::Result post_json(const std::string& path, const std::string& body, bool auth = true) {
    return cli_.Post(path.c_str(), auth ? sign("POST", path) : httplib::Headers{}, body, "application/json");
  }
  httplib::Result upload(const std::string& content, const std::string& filename = "part.gcode",
                         const std::string& jobname = "", bool auth = true) {
    httplib::MultipartFormDataItems items{{"file", content, filename, "text/x-gcode"}};
    if (!jobname.empty()) items.push_back({"jobname", jobname, "", ""});
    return cli_.Post("/api/v1/print_job", auth ? sign("POST", "/api/v1/print_job") : httplib::Headers{}, items);
  }
  httplib::Result set_state(const std::string& target) {
    return put("/api/v1/print_job/state", json{{"target", target}}.dump());
  }

  httplib::Client& raw() { return cli_; }
  const std::string& id() const { return id_; }
  const std::string& key() const { return key_; }

 private:
  httplib::Client cli_;
  std::string id_, key_;
  digest::Challenge challenge_;
  uint32_t nc_ = 0;
};

TEST(JediApi, ReadEndpoints) {
  auto fleet = start_fleet({named("um3-a"), named("um3-b", 4, 3, 12, /*boot=*/1e6)});
  ASSERT_TRUE(fleet);
  ASSERT_EQ(fleet->endpoints().size(), 2u);
  EXPECT_EQ(fleet->endpoints()[0].name, "um3-a");
  EXPECT_NE(fleet->endpoints()[0].port, fleet->endpoints()[1].port);
  Jedi a(fleet->endpoints()[0].port), b(fleet->endpoints()[1].port);

  auto st = a.get("/api/v1/printer/status");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, 200);
  EXPECT_EQ(st->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(body_json(st), "idle");
  EXPECT_EQ(b.get_json("/api/v1/printer/status"), "booting");
  EXPECT_EQ(a.get_json("/api/v1/system/name"), "um3-a");

  const json p = a.get_json("/api/v1/printer");
  EXPECT_EQ(p["status"], "idle");
  EXPECT_EQ(p["name"], "um3-a");
  EXPECT_EQ(p["bed"]["type"], "glass");
  EXPECT_NEAR(p["bed"]["temperature"]["current"].get<double>(), kAmbientC, 2);
  EXPECT_EQ(p["bed"]["temperature"]["target"].get<double>(), 0);
  EXPECT_NEAR(p["heads"][0]["extruders"][0]["hotend"]["temperature"]["current"].get<double>(), kAmbientC, 2);

  for (const char* path : {"/api/v1/printer/bed/temperature", "/api/v1/printer/heads/0/extruders/0/hotend/temperature"}) {
    const json t = a.get_json(path);
    ASSERT_TRUE(t.is_object()) << path;
    EXPECT_TRUE(t["current"].is_number()) << path;
    EXPECT_EQ(t["target"].get<double>(), 0) << path;
  }

  auto none = a.get("/api/v1/print_job");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  EXPECT_EQ(body_json(none)["message"], "No print job");
  EXPECT_EQ(a.get("/api/v1/print_job/state")->status, 404);
  auto unknown = a.get("/api/v1/no/such/thing");
  EXPECT_EQ(unknown->status, 404);
  EXPECT_TRUE(body_json(unknown)["message"].is_string());
  EXPECT_EQ(a.get_json("/api/v1/history/print_jobs"), json::array());
}

TEST(JediApi, PairingFlow) {
  auto fleet = start_fleet({named("um3-a")}, 6000, [](AssetsConfig& c) { c.authorize_after_min = 50; });  // 500 ms
  auto never = start_fleet({named("um3-n")}, 60000, [](AssetsConfig& c) { c.authorize_after_min = -1; });
  ASSERT_TRUE(fleet && never);
  Jedi a(fleet->endpoints()[0].port), n(never->endpoints()[0].port);

  EXPECT_EQ(a.get_json("/api/v1/auth/check/0123456789abcdef0123456789abcdef")["message"], "unknown");
  auto r = a.raw().Post("/api/v1/auth/request", httplib::Params{{"application", "app"}, {"user", "me"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const json j = body_json(r);
  const std::string id = j["id"], key = j["key"];
  EXPECT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{32}")));
  EXPECT_TRUE(std::regex_match(key, std::regex("[0-9a-f]{64}")));
  auto check = a.get("/api/v1/auth/check/" + id);
  EXPECT_EQ(check->status, 200);
  EXPECT_EQ(body_json(check)["message"], "unauthorized");
  EXPECT_TRUE(eventually([&] { return a.get_json("/api/v1/auth/check/" + id)["message"] == "authorized"; }));

  // Missing fields; a JSON body is accepted too.
  EXPECT_EQ(a.raw().Post("/api/v1/auth/request", httplib::Params{{"application", "app"}})->status, 400);
  EXPECT_EQ(a.raw().Post("/api/v1/auth/request", R"({"application":"a","user":"u"})", "application/json")->status, 200);

  // An id that is never authorized cannot sign requests.
  auto rn = n.raw().Post("/api/v1/auth/request", httplib::Params{{"application", "app"}, {"user", "me"}});
  const json jn = body_json(rn);
  std::this_thread::sleep_for(2ms);
  EXPECT_EQ(n.get_json("/api/v1/auth/check/" + jn["id"].get<std::string>())["message"], "unauthorized");
  const auto c = n.challenge();
  const std::string nid = jn["id"], nkey = jn["key"];
  httplib::Headers h{{"Authorization", digest::authorization(c, "GET", "/api/v1/auth/verify", nid, nkey, 1, "x")}};
  EXPECT_EQ(n.raw().Get("/api/v1/auth/verify", h)->status, 401);

  // Authorized: /auth/verify with our digest and with cpp-httplib's own digest client.
  const auto ca = a.challenge();
  httplib::Headers ok{{"Authorization", digest::authorization(ca, "GET", "/api/v1/auth/verify", id, key, 1, "abc")}};
  auto v = a.raw().Get("/api/v1/auth/verify", ok);
  EXPECT_EQ(v->status, 200);
  EXPECT_EQ(body_json(v)["message"], "ok");
  httplib::Client lib("127.0.0.1", fleet->endpoints()[0].port);
  lib.set_digest_auth(id, key);
  EXPECT_EQ(lib.Get("/api/v1/auth/verify")->status, 200);
}

TEST(JediApi, DigestChallengeAndFailures) {
  auto fleet = start_fleet({named("um3-a")});
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port);
  a.pair();
  const std::string path = "/api/v1/emulator/maintenance";
  const std::string body = R"({"minutes": 0})";

  auto r = a.put(path, body, /*auth=*/false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  const std::string www = r->get_header_value("WWW-Authenticate");
  EXPECT_NE(www.find("Digest realm=\"Jedi-API\""), std::string::npos) << www;
  EXPECT_NE(www.find("qop=\"auth\""), std::string::npos) << www;
  EXPECT_NE(www.find("algorithm=MD5"), std::string::npos) << www;
  auto c = digest::parse_challenge(www);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->realm, "Jedi-API");
  EXPECT_FALSE(c->nonce.empty());

  // Wrong password, signed for another uri, other nonce, other realm, garbage.
  EXPECT_EQ(a.raw().Put(path.c_str(), a.sign("PUT", path, std::string(64, '0')), body, "application/json")->status, 401);
  EXPECT_EQ(a.raw().Put(path.c_str(), a.sign("PUT", "/api/v1/emulator/stats"), body, "application/json")->status, 401);
  EXPECT_EQ(a.raw().Put(path.c_str(), a.sign("GET", path), body, "application/json")->status, 401);
  digest::Challenge other = *c;
  other.nonce = "00000000000000000000000000000000";
  httplib::Headers h{{"Authorization", digest::authorization(other, "PUT", path, a.id(), a.key(), 1, "x")}};
  EXPECT_EQ(a.raw().Put(path.c_str(), h, body, "application/json")->status, 401);
  other = *c;
  other.realm = "elsewhere";
  h = {{"Authorization", digest::authorization(other, "PUT", path, a.id(), a.key(), 1, "x")}};
  EXPECT_EQ(a.raw().Put(path.c_str(), h, body, "application/json")->status, 401);
  h = {{"Authorization", "Digest garbage"}};
  EXPECT_EQ(a.raw().Put(path.c_str(), h, body, "application/json")->status, 401);
  h = {{"Authorization", "Basic dXNlcjpwYXNz"}};
  EXPECT_EQ(a.raw().Put(path.c_str(), h, body, "application/json")->status, 401);

  EXPECT_EQ(a.put(path, body)->status, 204);
  const auto s = fleet->stats();
  EXPECT_EQ(s.auth_failures, 9u);  // 1 from pair()'s challenge + 8 above
  EXPECT_GE(s.client_errors, 9u);
  EXPECT_GE(s.requests, 12u);

  // /emulator/stats is protected too.
  EXPECT_EQ(a.get("/api/v1/emulator/stats")->status, 401);
  auto st = a.raw().Get("/api/v1/emulator/stats", a.sign("GET", "/api/v1/emulator/stats"));
  ASSERT_EQ(st->status, 200);
  const json sj = body_json(st);
  EXPECT_EQ(sj["name"], "um3-a");
  EXPECT_GE(sj["auth_failures"].get<int>(), 10);
  EXPECT_TRUE(sj["jobs_started"].is_number());
}

TEST(JediApi, BadUploads) {
  auto fleet = start_fleet({named("um3-a", /*heat=*/1e6), named("um3-b", 4, 3, 12, /*boot=*/1e6)}, 60000,
                           [](AssetsConfig& c) { c.max_upload_bytes = 4096; });
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port), b(fleet->endpoints()[1].port);
  a.pair();
  b.pair();

  EXPECT_EQ(a.upload(gcode(), "part.gcode", "", /*auth=*/false)->status, 401);
  EXPECT_EQ(a.post_json("/api/v1/print_job", "{}")->status, 400);  // not multipart
  {
    httplib::MultipartFormDataItems items{{"jobname", "x", "", ""}};
    auto r = a.raw().Post("/api/v1/print_job", a.sign("POST", "/api/v1/print_job"), items);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(body_json(r)["message"].get<std::string>().find("file"), std::string::npos);
  }
  EXPECT_EQ(a.upload("")->status, 400);
  EXPECT_EQ(a.upload(gcode(), "part.stl")->status, 400);
  EXPECT_EQ(a.upload("G28\nG1 X0\n")->status, 400);
  auto bad_time = a.upload(gcode(";PRINT.TIME:soon"));
  EXPECT_EQ(bad_time->status, 400);
  EXPECT_NE(body_json(bad_time)["message"].get<std::string>().find("PRINT.TIME"), std::string::npos);
  std::string big = gcode();
  while (big.size() <= 4096) big += ";padding padding padding\n";
  auto too_big = a.upload(big);
  EXPECT_EQ(too_big->status, 413);
  EXPECT_TRUE(body_json(too_big)["message"].is_string());
  // Past cpp-httplib's payload cap (limit + 1 MiB multipart slack) the library answers 413 itself.
  auto way_too_big = a.upload(gcode() + std::string(2 << 20, ';'));
  ASSERT_TRUE(way_too_big);
  EXPECT_EQ(way_too_big->status, 413);
  EXPECT_TRUE(body_json(way_too_big)["message"].is_string());

  EXPECT_EQ(b.upload(gcode())->status, 405);  // booting
  auto ok = a.upload(gcode(), "part.gcode", "first");
  ASSERT_EQ(ok->status, 201);
  EXPECT_EQ(body_json(ok)["name"], "first");
  auto busy = a.upload(gcode());
  EXPECT_EQ(busy->status, 405);
  EXPECT_EQ(body_json(busy)["message"], "Printer is busy");
  EXPECT_GE(fleet->stats().client_errors, 11u);
  EXPECT_EQ(fleet->stats().jobs_started, 1u);
}

TEST(JediApi, JobRunsThroughEveryState) {
  // Each phase is 200 sim minutes = 200 ms real.
  auto fleet = start_fleet({named("um3-a", 200, 200, 200)});
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port);
  a.pair();
  auto r = a.upload(gcode(";PRINT.TIME:12000"), "bracket.gcode");
  ASSERT_EQ(r->status, 201);
  const json j0 = body_json(r);
  EXPECT_EQ(j0["name"], "bracket");
  EXPECT_EQ(j0["state"], "pre_print");
  EXPECT_EQ(j0["time_total"], 12000);
  EXPECT_EQ(j0["time_elapsed"], 0);
  EXPECT_EQ(j0["result"], "");
  EXPECT_EQ(j0["source"], "WEB_API");
  EXPECT_EQ(j0["datetime_finished"], "");
  EXPECT_EQ(j0["datetime_cleaned"], "");
  EXPECT_TRUE(std::regex_match(j0["datetime_started"].get<std::string>(),
                               std::regex(R"(2026-01-01T\d\d:\d\d:\d\d)")));
  EXPECT_TRUE(std::regex_match(j0["uuid"].get<std::string>(),
                               std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  EXPECT_EQ(a.get_json("/api/v1/printer/status"), "printing");
  EXPECT_EQ(a.get_json("/api/v1/printer/heads/0/extruders/0/hotend/temperature")["target"], kHotendTargetC);

  std::vector<std::string> seen;
  double last_progress = 0;
  bool fields_ok = true;
  std::string finished;
  ASSERT_TRUE(eventually([&] {
    auto g = a.get("/api/v1/print_job");
    if (!g) return false;
    if (g->status == 404) return true;  // cleaned up
    const json j = body_json(g);
    const std::string state = j["state"];
    if (seen.empty() || seen.back() != state) seen.push_back(state);
    const double progress = j["progress"], elapsed = j["time_elapsed"], total = j["time_total"];
    if (progress < last_progress || progress > 1 || std::fabs(progress * total - elapsed) > 2 || total != 12000) {
      fields_ok = false;
    }
    last_progress = progress;
    if (state == "post_print" || state == "wait_cleanup") {
      if (progress != 1 || j["datetime_finished"] == "") fields_ok = false;
      finished = j["datetime_finished"];
    }
    if (state == "post_print" && j["result"] != "") fields_ok = false;
    if (state == "wait_cleanup" && j["result"] != "Finished") fields_ok = false;
    return false;
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"pre_print", "printing", "post_print", "wait_cleanup"}));
  EXPECT_TRUE(fields_ok);
  EXPECT_EQ(a.get_json("/api/v1/printer/status"), "idle");
  const json h = a.get_json("/api/v1/history/print_jobs");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0]["result"], "Finished");
  EXPECT_EQ(h[0]["datetime_finished"], finished);
  EXPECT_GT(h[0]["datetime_cleaned"].get<std::string>(), finished);  // ISO strings sort by time
  const auto s = fleet->stats();
  EXPECT_EQ(s.jobs_started, 1u);
  EXPECT_EQ(s.jobs_finished, 1u);
}

TEST(JediApi, PrintTimeScaledBySpeedAndFieldResources) {
  auto fleet = start_fleet({named("um3-a", 1e6, 3, 12, 0, /*speed=*/1.2), named("um3-b", 1e6)});
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port), b(fleet->endpoints()[1].port);
  a.pair();
  b.pair();
  auto r = a.upload(gcode(";PRINT.TIME:3600"));
  ASSERT_EQ(r->status, 201);
  EXPECT_EQ(body_json(r)["time_total"], 4320);
  auto rb = b.upload(gcode());  // no ;PRINT.TIME: triangular draw
  ASSERT_EQ(rb->status, 201);
  const int64_t drawn = body_json(rb)["time_total"];
  EXPECT_GE(drawn, kTriMinMin * 60);
  EXPECT_LE(drawn, kTriMaxMin * 60);

  const json whole = a.get_json("/api/v1/print_job");
  for (const char* f : {"name", "uuid", "state", "progress", "time_elapsed", "time_total", "datetime_started",
                        "datetime_finished", "datetime_cleaned", "result", "source"}) {
    auto g = a.get(std::string("/api/v1/print_job/") + f);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 200) << f;
    EXPECT_EQ(body_json(g), whole[f]) << f;
  }
  EXPECT_EQ(a.get_json("/api/v1/print_job/state"), "pre_print");
  EXPECT_EQ(a.get("/api/v1/print_job/colour")->status, 404);
}

TEST(JediApi, SameSeedSameDraws) {
  auto specs = [] { return std::vector<PrinterSpec>{named("um3-a", 1e6), named("um3-b", 1e6)}; };
  auto seed = [](uint64_t s) { return [s](AssetsConfig& c) { c.seed = s; }; };
  auto f1 = start_fleet(specs(), 60000, seed(11)), f2 = start_fleet(specs(), 60000, seed(11)),
       f3 = start_fleet(specs(), 60000, seed(12));
  ASSERT_TRUE(f1 && f2 && f3);
  auto draw = [](MachineAssets& f, std::size_t i) {
    Jedi c(f.endpoints()[i].port);
    c.pair();
    return body_json(c.upload(gcode()));
  };
  const json a0 = draw(*f1, 0), a1 = draw(*f1, 1), b0 = draw(*f2, 0), b1 = draw(*f2, 1), c0 = draw(*f3, 0);
  EXPECT_EQ(a0["time_total"], b0["time_total"]);
  EXPECT_EQ(a1["time_total"], b1["time_total"]);
  EXPECT_EQ(a0["uuid"], b0["uuid"]);
  EXPECT_NE(a0["time_total"], a1["time_total"]);  // per printer: seed + index
  EXPECT_NE(a0["time_total"], c0["time_total"]);
}

TEST(JediApi, PausePrintAbortAndMaintenance) {
  auto fleet = start_fleet({named("um3-a", /*heat=*/0, 3, /*cleanup=*/1e6), named("um3-b")});
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port), b(fleet->endpoints()[1].port);
  a.pair();
  b.pair();
  EXPECT_EQ(b.set_state("pause")->status, 404);  // no job
  ASSERT_EQ(a.upload(gcode(";PRINT.TIME:1000000"))->status, 201);  // ~16 s real of printing
  ASSERT_TRUE(eventually([&] { return a.get_json("/api/v1/print_job/state") == "printing"; }));

  EXPECT_EQ(a.set_state("pause")->status, 204);
  EXPECT_EQ(a.get_json("/api/v1/print_job/state"), "paused");
  const json e1 = a.get_json("/api/v1/print_job/time_elapsed");
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(a.get_json("/api/v1/print_job/time_elapsed"), e1);
  EXPECT_EQ(a.set_state("pause")->status, 405);
  EXPECT_EQ(a.set_state("print")->status, 204);
  EXPECT_EQ(a.get_json("/api/v1/print_job/state"), "printing");
  EXPECT_TRUE(eventually([&] { return a.get_json("/api/v1/print_job/time_elapsed") > e1; }));
  EXPECT_EQ(a.set_state("print")->status, 405);
  EXPECT_EQ(a.set_state("explode")->status, 400);
  EXPECT_EQ(a.put("/api/v1/print_job/state", "not json")->status, 400);
  EXPECT_EQ(a.put("/api/v1/print_job/state", R"({"target": 5})")->status, 400);
  EXPECT_EQ(a.put("/api/v1/emulator/maintenance", R"({"minutes": 10})")->status, 405);  // still printing

  EXPECT_EQ(a.set_state("abort")->status, 204);
  const json j = a.get_json("/api/v1/print_job");
  EXPECT_EQ(j["state"], "wait_cleanup");
  EXPECT_EQ(j["result"], "Aborted");
  EXPECT_NE(j["datetime_finished"], "");
  EXPECT_LT(j["progress"].get<double>(), 1);
  EXPECT_EQ(a.set_state("abort")->status, 405);
  EXPECT_EQ(a.get_json("/api/v1/printer/status"), "printing");  // the bed still has to be cleared

  // Maintenance clears the bed at once, then the printer is idle again.
  EXPECT_EQ(a.put("/api/v1/emulator/maintenance", R"({"minutes": -1})")->status, 400);
  EXPECT_EQ(a.put("/api/v1/emulator/maintenance", R"({"minutes": "ten"})")->status, 400);
  EXPECT_EQ(a.put("/api/v1/emulator/maintenance", R"({"minutes": 300})")->status, 204);  // 300 ms
  EXPECT_EQ(a.get("/api/v1/print_job")->status, 404);
  EXPECT_EQ(a.get_json("/api/v1/printer/status"), "maintenance");
  EXPECT_EQ(a.upload(gcode())->status, 405);
  const json h = a.get_json("/api/v1/history/print_jobs");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0]["result"], "Aborted");
  EXPECT_NE(h[0]["datetime_cleaned"], "");
  EXPECT_TRUE(eventually([&] { return a.get_json("/api/v1/printer/status") == "idle"; }));
  EXPECT_EQ(fleet->stats().jobs_aborted, 1u);
}

TEST(JediApi, AnomalyDriftsTheSensor) {
  auto fleet = start_fleet({named("um3-a"), named("um3-b")});
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port), b(fleet->endpoints()[1].port);
  a.pair();
  const std::string bed = "/api/v1/printer/bed/temperature";
  const std::string hotend = "/api/v1/printer/heads/0/extruders/0/hotend/temperature";
  EXPECT_EQ(a.post_json("/api/v1/emulator/anomaly", R"({"sensor": "nozzle"})")->status, 400);
  EXPECT_EQ(a.post_json("/api/v1/emulator/anomaly", R"({"sensor": "bed"})", /*auth=*/false)->status, 401);
  const double before = a.get_json(bed)["current"];
  EXPECT_EQ(a.post_json("/api/v1/emulator/anomaly", R"({"sensor": "bed"})")->status, 204);
  // 1.5 degC per sim minute; one real millisecond is a sim minute here.
  EXPECT_TRUE(eventually([&] { return a.get_json(bed)["current"].get<double>() > before + 15; }));
  EXPECT_NEAR(a.get_json(hotend)["current"].get<double>(), kAmbientC, 2);

  EXPECT_FALSE(fleet->inject_anomaly("um3-zz", "bed"));
  EXPECT_FALSE(fleet->inject_anomaly("um3-b", "nozzle"));
  EXPECT_TRUE(fleet->inject_anomaly("um3-b", "hotend"));
  EXPECT_TRUE(eventually([&] { return b.get_json(hotend)["current"].get<double>() < kAmbientC - 10; }));
  EXPECT_EQ(fleet->stats().anomalies, 2u);
  ASSERT_TRUE(fleet->stats("um3-b"));
  EXPECT_EQ(fleet->stats("um3-b")->anomalies, 1u);
  EXPECT_FALSE(fleet->stats("um3-zz"));

  // Maintenance repairs the sensor.
  EXPECT_EQ(a.put("/api/v1/emulator/maintenance", R"({"minutes": 0})")->status, 204);
  EXPECT_NEAR(a.get_json(bed)["current"].get<double>(), kAmbientC, 2);
}

TEST(JediApi, RandomAnomalyFailsTheJob) {
  auto fleet = start_fleet({named("um3-a", 1, 1, 1)}, 60000, [](AssetsConfig& c) { c.anomaly_probability = 1; });
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port);
  a.pair();
  ASSERT_EQ(a.upload(gcode(";PRINT.TIME:600"))->status, 201);
  ASSERT_TRUE(eventually([&] { return a.get_json("/api/v1/history/print_jobs").size() == 1; }));
  EXPECT_EQ(a.get_json("/api/v1/history/print_jobs")[0]["result"], "Failed");
  EXPECT_EQ(fleet->stats().anomalies, 1u);
  EXPECT_EQ(fleet->stats().jobs_failed, 1u);
}

TEST(JediApi, OddInputNeverCrashes) {
  auto fleet = start_fleet({named("um3-a", 1e6)});
  ASSERT_TRUE(fleet);
  Jedi a(fleet->endpoints()[0].port);
  a.pair();
  auto r = a.upload(gcode(), "part.gcode", "bad \xff\xfe utf8 \xc3");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201);
  EXPECT_FALSE(body_json(r).is_discarded());
  EXPECT_FALSE(a.get_json("/api/v1/print_job").is_discarded());
  EXPECT_EQ(a.raw().Delete("/api/v1/print_job")->status, 404);
  EXPECT_EQ(a.get("/api/v1/auth/check/")->status, 200);
  EXPECT_EQ(a.put("/api/v1/emulator/maintenance", std::string(100000, '['))->status, 400);
  EXPECT_EQ(fleet->stats().server_errors, 0u);
}

TEST(JediApi, ConcurrentClients) {
  auto fleet = start_fleet({named("um3-a"), named("um3-b")});
  ASSERT_TRUE(fleet);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Jedi c(fleet->endpoints()[t % 2].port);
      for (int i = 0; i < 25; ++i) {
        auto r = c.get(i % 2 ? "/api/v1/printer" : "/api/v1/printer/status");
        if (r && r->status == 200) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_GE(fleet->stats().requests, 100u);
}

TEST(MachineAssets, FiftyPrintersAndPortErrors) {
  AssetsConfig cfg;
  cfg.printers = make_fleet(50, 3);
  cfg.factor = 60000;
  auto fleet = MachineAssets::start(cfg);
  ASSERT_TRUE(fleet) << fleet.error();
  ASSERT_EQ((*fleet)->endpoints().size(), 50u);
  std::set<uint16_t> ports;
  for (const auto& e : (*fleet)->endpoints()) {
    ports.insert(e.port);
    Jedi c(e.port);
    EXPECT_EQ(c.get_json("/api/v1/system/name"), e.name);
  }
  EXPECT_EQ(ports.size(), 50u);
  EXPECT_EQ((*fleet)->clock().factor(), 60000);
  EXPECT_EQ((*fleet)->clock_ptr().get(), &(*fleet)->clock());

  // A port that is taken: start() fails with an error naming it, and cleans up.
  AssetsConfig clash;
  clash.printers = make_fleet(2, 3);
  clash.base_port = (*fleet)->endpoints()[1].port;
  auto bad = MachineAssets::start(clash);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find(std::to_string(clash.base_port)), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace sdn::fleet
