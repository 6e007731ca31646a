// CoordinatorCore driven with a manual clock: matching with wildcards, frequency consolidation,
// unsatisfied interests, re-pushes on join/leave, heartbeat timeouts, active/standby failover,
// checkpoint round trips, hellos and malformed registrations. No threads, no sleeps.
#include <gtest/gtest.h>

#include "data/coordinator.hpp"

namespace sdn::data {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000 * kMs;
constexpr int64_t kT0 = 1'000 * kSec;  // the manual clock starts here

struct I {
  I(const char* k, std::optional<double> f = std::nullopt) : key(k), freq(f) {}  // NOLINT
  std::string key;
  std::optional<double> freq;
};

Json reg_json(const std::string& app, const std::string& inst, std::vector<I> interests,
              std::vector<I> caps, int heartbeat_ms = 100) {
  Json in = Json::array(), cp = Json::array(), roles = Json::array();
  for (const auto& i : interests) {
    Json o = {{"key", i.key}};
    if (i.freq) o["freq"] = *i.freq;
    in.push_back(o);
  }
  for (const auto& c : caps) {
    Json o = {{"key", c.key}};
    if (c.freq) o["freq"] = *c.freq;
    cp.push_back(o);
  }
  if (!caps.empty()) roles.push_back("producer");
  if (!interests.empty()) roles.push_back("consumer");
  return Json{{"app_id", app},        {"instance", inst},     {"roles", roles},
              {"interests", in},      {"capabilities", cp},   {"heartbeat_ms", heartbeat_ms}};
}

Record rec(const std::string& key, Value v, const std::string& app = "",
           const std::string& inst = "") {
  Record r;
  r.key = key;
  r.value = std::move(v);
  r.app_id = app;
  r.instance = inst;
  return r;
}

Record reg(const std::string& app, const std::string& inst, std::vector<I> interests,
           std::vector<I> caps, int heartbeat_ms = 100) {
  return rec("sdnator/apps/" + app + "/" + inst + "/register@" + app,
             reg_json(app, inst, std::move(interests), std::move(caps), heartbeat_ms), app, inst);
}

Record heartbeat(const std::string& app, const std::string& inst, int heartbeat_ms = 100) {
  return rec("sdnator/apps/" + app + "/" + inst + "/heartbeat@" + app,
             Json{{"seq", 1}, {"heartbeat_ms", heartbeat_ms}}, app, inst);
}

Record goodbye(const std::string& app, const std::string& inst) {
  return rec("sdnator/apps/" + app + "/" + inst + "/goodbye@" + app, Json::object(), app, inst);
}

std::string akey(const std::string& app, const std::string& inst) {
  return "sdnator/apps/" + app + "/" + inst + "/assignment@coordinator";
}

const Publication* find(const std::vector<Publication>& pubs, const std::string& key) {
  for (const auto& p : pubs)
    if (p.key == key) return &p;
  return nullptr;
}

std::size_t count_assignments(const std::vector<Publication>& pubs) {
  std::size_t n = 0;
  for (const auto& p : pubs)
    if (p.key.find("/assignment@") != std::string::npos) ++n;
  return n;
}

CoordinatorConfig cfg() {
  CoordinatorConfig c;
  c.missed_beats = 3;
  c.checkpoint_interval = std::chrono::milliseconds(5000);
  return c;
}

TEST(CoordinatorCore, MatchesWildcardsOnBothSides) {
  CoordinatorCore core(cfg());
  core.start(kT0);
  core.on_record(reg("stats", "p1", {}, {{"network/*/port/*/stats@stats", 50}}), kT0 + 1);
  auto pubs = core.on_record(
      reg("mon", "c1", {{"network/s1/port/**", 10}, {"network/*/flows"}}, {}), kT0 + 2);

  const Publication* p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->archive);
  EXPECT_EQ(p->value["active"], true);
  ASSERT_EQ(p->value["assignments"].size(), 1u);
  EXPECT_EQ(p->value["assignments"][0]["key"], "network/*/port/*/stats@stats");
  EXPECT_EQ(p->value["assignments"][0]["freq"], 10.0);
  EXPECT_EQ(p->value["assignments"][0]["consumers"], Json::array({"mon"}));
  ASSERT_NE(find(pubs, std::string(keys::kCoordinatorState)), nullptr);

  // An interest naming a producer app matches only that app; `*` as app id matches any.
  core.on_record(reg("other", "o1", {{"network/s2/port/7/stats@stats", 5},
                                     {"network/s2/port/7/stats@nobody", 5},
                                     {"**@*", 1}}, {}),
                 kT0 + 3);
  auto set = core.assignment("stats", "p1");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->items.size(), 1u);
  EXPECT_EQ(set->items[0].consumers, (std::vector<std::string>{"mon", "other"}));
  EXPECT_EQ(set->items[0].freq, 10.0);

  auto uns = core.unsatisfied();
  // "network/*/flows" and "...@nobody" have no producer.
  ASSERT_EQ(uns.size(), 2u);
  EXPECT_EQ(uns[0].consumer, "mon");
  EXPECT_EQ(uns[0].key, "network/*/flows");
  EXPECT_FALSE(uns[0].wanted);
  EXPECT_FALSE(uns[0].capped);
  EXPECT_EQ(uns[0].producer, "");
  EXPECT_EQ(uns[1].consumer, "other");
  EXPECT_EQ(uns[1].key, "network/s2/port/7/stats@nobody");
  EXPECT_EQ(uns[1].wanted, 5.0);
}

TEST(CoordinatorCore, CapabilityWithoutAppIdGetsTheProducers) {
  CoordinatorCore core(cfg());
  core.on_record(reg("stats", "p1", {}, {{"network/*/stats"}}), kT0);
  core.on_record(reg("mon", "c1", {{"network/s1/stats@stats", 2}}, {}), kT0 + 1);
  auto set = core.assignment("stats", "p1");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->items.size(), 1u);
  EXPECT_EQ(set->items[0].key, "network/*/stats@stats");
  EXPECT_EQ(set->items[0].freq, 2.0);
}

TEST(CoordinatorCore, FrequencyConsolidation) {
  CoordinatorCore core(cfg());
  core.on_record(reg("prod", "p1", {}, {{"a/*@prod", 15}, {"b/*@prod"}, {"c/*@prod", 5}}), kT0);
  core.on_record(reg("c1", "i1", {{"a/x", 10}, {"b/x", 3}, {"c/x"}}, {}), kT0 + 1);
  core.on_record(reg("c2", "i1", {{"a/*", 20}, {"b/y", 7}}, {}), kT0 + 2);

  auto set = core.assignment("prod", "p1");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->items.size(), 3u);
  // a: max(10, 20) = 20, capped by the producer's 15.
  EXPECT_EQ(set->items[0].key, "a/*@prod");
  EXPECT_EQ(set->items[0].freq, 15.0);
  EXPECT_EQ(set->items[0].consumers, (std::vector<std::string>{"c1", "c2"}));
  // b: the producer has no limit; the highest interest wins.
  EXPECT_EQ(set->items[1].freq, 7.0);
  // c: an interest without freq wants every value; the producer's own limit still applies.
  EXPECT_EQ(set->items[2].freq, 5.0);

  // Only c2's 20 Hz exceeds what the producer can do.
  auto uns = core.unsatisfied();
  ASSERT_EQ(uns.size(), 1u);
  EXPECT_EQ(uns[0].consumer, "c2");
  EXPECT_EQ(uns[0].key, "a/*");
  EXPECT_EQ(uns[0].wanted, 20.0);
  EXPECT_EQ(uns[0].capped, 15.0);
  EXPECT_EQ(uns[0].producer, "prod");

  // An interest without freq on an unlimited capability leaves it unpaced.
  core.on_record(reg("c3", "i1", {{"b/z"}}, {}), kT0 + 3);
  set = core.assignment("prod", "p1");
  ASSERT_TRUE(set);
  EXPECT_FALSE(set->items[1].freq);
  EXPECT_EQ(set->items[1].consumers, (std::vector<std::string>{"c1", "c2", "c3"}));
  // ... and the published JSON has no "freq" for it.
  Json st = core.state();
  bool seen = false;
  for (const auto& s : st["assignments"]) {
    if (s["app_id"] != "prod") continue;
    seen = true;
    EXPECT_FALSE(s["assignments"][1].contains("freq"));
  }
  EXPECT_TRUE(seen);
}

TEST(CoordinatorCore, UnmatchedCapabilityIsNotAssigned) {
  CoordinatorCore core(cfg());
  auto pubs = core.on_record(reg("prod", "p1", {}, {{"a/*@prod", 15}}), kT0);
  const Publication* p = find(pubs, akey("prod", "p1"));
  ASSERT_NE(p, nullptr);  // a newcomer always gets its set, even an empty one
  EXPECT_TRUE(p->value["assignments"].empty());
  EXPECT_TRUE(core.unsatisfied().empty());
}

TEST(CoordinatorCore, AssignmentsFollowConsumersJoiningAndLeaving) {
  CoordinatorCore core(cfg());
  core.start(kT0);
  core.on_record(reg("stats", "p1", {}, {{"net/*/stats@stats", 100}}), kT0 + 1);
  auto e0 = core.assignment("stats", "p1")->epoch;

  auto pubs = core.on_record(reg("mon", "c1", {{"net/*/stats", 10}}, {}), kT0 + 2);
  auto* p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_GT(p->value["epoch"].get<uint64_t>(), e0);
  EXPECT_EQ(p->value["assignments"][0]["freq"], 10.0);

  pubs = core.on_record(reg("graph", "g1", {{"net/s1/stats", 25}}, {}), kT0 + 3);
  p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value["assignments"][0]["freq"], 25.0);
  EXPECT_EQ(p->value["assignments"][0]["consumers"], Json::array({"graph", "mon"}));
  // Consumers whose own (empty) set did not change get nothing but their first set.
  EXPECT_EQ(find(pubs, akey("mon", "c1")), nullptr);
  EXPECT_NE(find(pubs, akey("graph", "g1")), nullptr);

  auto before = core.assignment("stats", "p1")->epoch;
  pubs = core.on_record(goodbye("graph", "g1"), kT0 + 4);
  p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_GT(p->value["epoch"].get<uint64_t>(), before);
  EXPECT_EQ(p->value["assignments"][0]["freq"], 10.0);
  EXPECT_EQ(p->value["assignments"][0]["consumers"], Json::array({"mon"}));

  pubs = core.on_record(goodbye("mon", "c1"), kT0 + 5);
  p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->value["assignments"].empty());
  EXPECT_EQ(core.apps(), (std::vector<std::string>{"stats"}));
}

TEST(CoordinatorCore, ReRegistrationWithChangedInterestsRecomputes) {
  CoordinatorCore core(cfg());
  core.on_record(reg("stats", "p1", {}, {{"net/*/stats@stats"}}), kT0);
  core.on_record(reg("mon", "c1", {{"net/*/stats", 10}}, {}), kT0 + 1);
  auto e = core.assignment("stats", "p1")->epoch;

  // Same registration again (e.g. after a hello): nothing changes, only the sender's set goes
  // out again, same epoch.
  auto pubs = core.on_record(reg("mon", "c1", {{"net/*/stats", 10}}, {}), kT0 + 2);
  EXPECT_EQ(count_assignments(pubs), 1u);
  ASSERT_NE(find(pubs, akey("mon", "c1")), nullptr);
  EXPECT_EQ(find(pubs, std::string(keys::kCoordinatorState)), nullptr);
  EXPECT_EQ(core.assignment("stats", "p1")->epoch, e);

  pubs = core.on_record(reg("mon", "c1", {{"net/*/stats", 30}}, {}), kT0 + 3);
  auto* p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value["assignments"][0]["freq"], 30.0);
  EXPECT_GT(p->value["epoch"].get<uint64_t>(), e);
  EXPECT_NE(find(pubs, std::string(keys::kCoordinatorState)), nullptr);
}

TEST(CoordinatorCore, HeartbeatTimeoutAfterMissedBeats) {
  CoordinatorCore core(cfg());
  core.on_record(reg("stats", "p1", {}, {{"net/*/stats@stats"}}, 100), kT0);
  core.on_record(reg("mon", "c1", {{"net/*/stats", 10}}, {}, 100), kT0);
  // mon keeps beating, stats goes silent after its registration.
  int64_t t = kT0;
  for (int i = 0; i < 3; ++i) {
    t += 100 * kMs;
    core.on_record(heartbeat("mon", "c1"), t);
    EXPECT_EQ(count_assignments(core.tick(t)), 0u);
  }
  // Exactly 3 intervals of silence is still online ("more than missed_beats intervals").
  ASSERT_EQ(core.instances()[0].status, InstanceStatus::kOnline);
  auto pubs = core.tick(kT0 + 300 * kMs + 1);
  auto inst = core.instances();
  ASSERT_EQ(inst.size(), 2u);
  EXPECT_EQ(inst[0].app_id, "stats");
  EXPECT_EQ(inst[0].status, InstanceStatus::kOffline);
  EXPECT_FALSE(inst[0].active);
  EXPECT_EQ(inst[1].status, InstanceStatus::kOnline);
  // Offline: no set for it, and the consumer's interest now has no producer.
  EXPECT_FALSE(core.assignment("stats", "p1"));
  EXPECT_NE(find(pubs, std::string(keys::kCoordinatorState)), nullptr);
  ASSERT_EQ(core.unsatisfied().size(), 1u);
  EXPECT_EQ(core.unsatisfied()[0].producer, "");

  // A heartbeat brings it back; it is the only instance, so active again, and it gets its set.
  pubs = core.on_record(heartbeat("stats", "p1"), kT0 + 400 * kMs);
  auto* p = find(pubs, akey("stats", "p1"));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value["active"], true);
  EXPECT_TRUE(core.unsatisfied().empty());
}

TEST(CoordinatorCore, HeartbeatIntervalComesFromTheInstance) {
  CoordinatorCore core(cfg());
  core.on_record(reg("slow", "s1", {}, {}, 1000), kT0);
  core.tick(kT0 + 2999 * kMs);
  EXPECT_EQ(core.instances()[0].status, InstanceStatus::kOnline);
  // A heartbeat that announces a shorter interval shortens the timeout.
  core.on_record(heartbeat("slow", "s1", 10), kT0 + 3000 * kMs);
  core.tick(kT0 + 3031 * kMs);
  EXPECT_EQ(core.instances()[0].status, InstanceStatus::kOffline);
}

TEST(CoordinatorCore, ActiveStandbyAndFailoverOnSilence) {
  CoordinatorCore core(cfg());
  core.on_record(reg("sensor", "a", {}, {{"env/*/temp@sensor", 4}}), kT0);
  core.on_record(reg("sensor", "b", {}, {{"env/*/temp@sensor", 4}}), kT0 + 1 * kMs);
  core.on_record(reg("ui", "u", {{"env/room1/temp", 1}}, {}), kT0 + 2 * kMs);

  auto a = core.assignment("sensor", "a");
  auto b = core.assignment("sensor", "b");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->active);
  EXPECT_FALSE(b->active);
  // The standby gets the same list, so it can take over without waiting for anything else.
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0].key, a->items[0].key);
  EXPECT_EQ(b->items[0].freq, 1.0);

  // "a" goes silent; "b" and "ui" keep beating.
  int64_t t = kT0;
  std::vector<Publication> pubs;
  for (int i = 1; i <= 4; ++i) {
    t = kT0 + i * 100 * kMs;
    core.on_record(heartbeat("sensor", "b"), t);
    core.on_record(heartbeat("ui", "u"), t);
    pubs = core.tick(t + 1);
    if (!pubs.empty() && count_assignments(pubs)) break;
  }
  EXPECT_EQ(t, kT0 + 300 * kMs);  // the first tick more than three intervals after its last beat
  auto* p = find(pubs, akey("sensor", "b"));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value["active"], true);
  EXPECT_EQ(p->value["assignments"][0]["freq"], 1.0);
  EXPECT_EQ(find(pubs, akey("sensor", "a")), nullptr);  // offline: nothing sent to it
  EXPECT_EQ(find(pubs, akey("ui", "u")), nullptr);      // its set did not change

  // "a" comes back: "b" stays active, "a" is told it is a standby now.
  pubs = core.on_record(heartbeat("sensor", "a"), t + 10 * kMs);
  p = find(pubs, akey("sensor", "a"));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value["active"], false);
  EXPECT_EQ(find(pubs, akey("sensor", "b")), nullptr);
  EXPECT_TRUE(core.assignment("sensor", "b")->active);
}

TEST(CoordinatorCore, StandbyCapabilitiesDoNotCount) {
  CoordinatorCore core(cfg());
  core.on_record(reg("sensor", "a", {}, {{"env/*/temp@sensor", 4}}), kT0);
  // A standby (e.g. a newer version) with more capabilities: only the active's count.
  core.on_record(reg("sensor", "b", {}, {{"env/*/temp@sensor", 4}, {"env/*/hum@sensor"}}),
                 kT0 + 1);
  core.on_record(reg("ui", "u", {{"env/*/hum"}}, {}), kT0 + 2);
  EXPECT_TRUE(core.assignment("sensor", "b")->items.empty());
  ASSERT_EQ(core.unsatisfied().size(), 1u);
  EXPECT_EQ(core.unsatisfied()[0].key, "env/*/hum");
  // Interests of a standby do count.
  core.on_record(reg("ui", "v", {{"env/*/temp", 2}}, {}), kT0 + 3);
  EXPECT_EQ(core.assignment("sensor", "a")->items.at(0).consumers,
            (std::vector<std::string>{"ui"}));
}

TEST(CoordinatorCore, GoodbyeFailsOverImmediately) {
  CoordinatorCore core(cfg());
  core.on_record(reg("sensor", "a", {}, {{"env/*/temp@sensor"}}), kT0);
  core.on_record(reg("sensor", "b", {}, {{"env/*/temp@sensor"}}), kT0 + 1);
  core.on_record(reg("sensor", "c", {}, {{"env/*/temp@sensor"}}), kT0 + 2);
  core.on_record(reg("ui", "u", {{"env/*/temp"}}, {}), kT0 + 3);
  auto pubs = core.on_record(goodbye("sensor", "a"), kT0 + 4);
  // The standby registered longest ago takes over.
  auto* p = find(pubs, akey("sensor", "b"));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value["active"], true);
  ASSERT_EQ(p->value["assignments"].size(), 1u);
  EXPECT_EQ(find(pubs, akey("sensor", "c")), nullptr);
  EXPECT_FALSE(core.assignment("sensor", "c")->active);
  EXPECT_EQ(core.instances().size(), 3u);
  // A goodbye from someone unknown changes nothing.
  EXPECT_TRUE(core.on_record(goodbye("sensor", "zz"), kT0 + 5).empty());
}

TEST(CoordinatorCore, RestartFromCheckpointRoundTrips) {
  CoordinatorCore core(cfg());
  core.start(kT0);
  core.on_record(reg("sensor", "a", {}, {{"env/*/temp@sensor", 4}}), kT0 + 1 * kMs);
  core.on_record(reg("sensor", "b", {}, {{"env/*/temp@sensor", 4}}), kT0 + 2 * kMs);
  core.on_record(reg("ui", "u", {{"env/room1/temp", 10}, {"env/*/light"}}, {}), kT0 + 3 * kMs);
  core.on_record(reg("old", "o", {}, {}), kT0 + 4 * kMs);
  core.on_record(heartbeat("sensor", "a"), kT0 + 500 * kMs);
  core.on_record(heartbeat("sensor", "b"), kT0 + 500 * kMs);
  core.on_record(heartbeat("ui", "u"), kT0 + 500 * kMs);
  core.tick(kT0 + 500 * kMs);  // "old" goes offline
  Json cp = core.state();
  ASSERT_EQ(cp["instances"].size(), 4u);
  ASSERT_EQ(cp["unsatisfied"].size(), 2u);  // capped 10 > 4, and no producer of light

  // Same checkpoint into a fresh Coordinator a bit later.
  const int64_t t1 = kT0 + 700 * kMs;
  CoordinatorCore next(cfg());
  auto pubs = next.start(t1, &cp);
  // Only the hello: every DUE already holds the set the checkpoint says it holds.
  ASSERT_EQ(pubs.size(), 1u);
  EXPECT_EQ(pubs[0].key, keys::kCoordinatorHello);
  EXPECT_EQ(pubs[0].value["started_ns"], t1);

  Json again = next.state();
  for (auto* j : {&cp, &again})
    for (auto& i : (*j)["instances"]) i.erase("last_seen_ns");
  EXPECT_EQ(again, cp);
  for (const auto& i : next.instances()) {
    if (i.status == InstanceStatus::kOnline) {
      EXPECT_EQ(i.last_seen_ns, t1);
    }
  }
  EXPECT_TRUE(next.assignment("sensor", "a")->active);
  EXPECT_FALSE(next.assignment("sensor", "b")->active);

  // The DUEs answer the hello with the same registrations: nothing changes, no epoch bump.
  auto epoch = next.state()["epoch"];
  for (auto r : {reg("sensor", "a", {}, {{"env/*/temp@sensor", 4}}),
                 reg("sensor", "b", {}, {{"env/*/temp@sensor", 4}}),
                 reg("ui", "u", {{"env/room1/temp", 10}, {"env/*/light"}}, {})}) {
    auto out = next.on_record(r, t1 + 1);
    EXPECT_EQ(find(out, std::string(keys::kCoordinatorState)), nullptr);
  }
  EXPECT_EQ(next.state()["epoch"], epoch);

  // Restored instances that never come back time out from the restart.
  next.tick(t1 + 301 * kMs);
  for (const auto& i : next.instances()) EXPECT_EQ(i.status, InstanceStatus::kOffline);
}

TEST(CoordinatorCore, UnreadableCheckpointStartsEmptyOrPartial) {
  for (Json cp : {Json("junk"), Json::object(), Json{{"instances", 3}}}) {
    CoordinatorCore core(cfg());
    auto pubs = core.start(kT0, &cp);
    ASSERT_EQ(pubs.size(), 1u);
    EXPECT_EQ(pubs[0].key, keys::kCoordinatorHello);
    EXPECT_TRUE(core.instances().empty());
  }
  // One good instance and one broken one: the good one is kept.
  CoordinatorCore first(cfg());
  first.on_record(reg("x", "1", {{"a/b", 1}}, {}), kT0);
  Json cp = first.state();
  cp["instances"].push_back(Json{{"registration", {{"app_id", "y"}, {"instance", "1"},
                                                   {"interests", {{{"key", "a//b"}}}}}}});
  CoordinatorCore core(cfg());
  core.start(kT0 + 1, &cp);
  ASSERT_EQ(core.instances().size(), 1u);
  EXPECT_EQ(core.instances()[0].app_id, "x");
}

TEST(CoordinatorCore, EpochGrowsAcrossRestartWithoutCheckpoint) {
  CoordinatorCore core(cfg());
  core.start(kT0);
  core.on_record(reg("x", "1", {}, {}), kT0 + 5 * kMs);
  core.on_record(reg("y", "1", {}, {}), kT0 + 5 * kMs);
  auto e = core.state()["epoch"].get<uint64_t>();
  CoordinatorCore next(cfg());
  next.start(kT0 + 1 * kSec);
  next.on_record(reg("x", "1", {}, {}), kT0 + 1 * kSec);
  EXPECT_GT(next.assignment("x", "1")->epoch, e);
}

TEST(CoordinatorCore, UnknownHeartbeatAsksForHelloRateLimited) {
  CoordinatorCore core(cfg());
  auto pubs = core.start(kT0);
  ASSERT_EQ(pubs.size(), 1u);
  EXPECT_EQ(pubs[0].key, keys::kCoordinatorHello);
  EXPECT_FALSE(pubs[0].archive);

  // Within a second of the start hello: no second one.
  EXPECT_TRUE(core.on_record(heartbeat("x", "1"), kT0 + 500 * kMs).empty());
  pubs = core.on_record(heartbeat("x", "1"), kT0 + 1 * kSec);
  ASSERT_EQ(pubs.size(), 1u);
  EXPECT_EQ(pubs[0].key, keys::kCoordinatorHello);
  EXPECT_TRUE(core.on_record(heartbeat("y", "1"), kT0 + 1500 * kMs).empty());
  EXPECT_EQ(core.on_record(heartbeat("y", "1"), kT0 + 2 * kSec).size(), 1u);
  // A heartbeat never registers anybody by itself.
  EXPECT_TRUE(core.instances().empty());
  EXPECT_EQ(core.malformed(), 0u);
}

TEST(CoordinatorCore, MalformedRecordsAreCountedAndIgnored) {
  CoordinatorCore core(cfg());
  auto bad_reg = [&](Json j) {
    return rec("sdnator/apps/x/1/register@x", std::move(j), "x", "1");
  };
  Json good = reg_json("x", "1", {{"a/b", 1}}, {{"c/*@x", 2}});
  uint64_t n = 0;
  auto expect_bad = [&](const Record& r) {
    auto pubs = core.on_record(r, kT0);
    EXPECT_TRUE(pubs.empty()) << r.key;
    EXPECT_EQ(core.malformed(), ++n)
        << r.key << " " << (r.value.is_json() ? r.value.json().dump() : "");
  };
  expect_bad(bad_reg(Json::array()));
  expect_bad(rec("sdnator/apps/x/1/register@x", Bytes{"{}"}));
  {
    Json j = good;
    j["interests"][0]["key"] = "a//b";
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["capabilities"][0]["key"] = "c/**/d@x";
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["capabilities"][0]["key"] = "c/*@someone-else";
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["interests"][0]["freq"] = 0;
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["interests"][0]["freq"] = "10";
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["capabilities"][0]["freq"] = -1;
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["roles"] = {"producer", "sink"};
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["heartbeat_ms"] = 0;
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["interests"] = Json::object();
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["instance"] = "2";
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j.erase("app_id");
    expect_bad(bad_reg(j));
  }
  {
    Json j = good;
    j["interests"] = Json::array();
    for (int i = 0; i < 1025; ++i) j["interests"].push_back(Json{{"key", "a"}});
    expect_bad(bad_reg(j));
  }
  // The key's app id must be the app in its path.
  expect_bad(rec("sdnator/apps/x/1/register@y", good));
  expect_bad(rec("sdnator/apps/x/1/heartbeat@y", Json{{"seq", 1}}));
  expect_bad(rec("sdnator/apps/x/1/heartbeat@x", Json{{"seq", 1}, {"heartbeat_ms", "fast"}}));
  expect_bad(rec("sdnator/apps/x/1/goodbye@x", Json("bye")));
  EXPECT_TRUE(core.instances().empty());

  // Our own assignment sets and unknown kinds pass by without counting.
  EXPECT_TRUE(core.on_record(rec(akey("x", "1"), Json::object()), kT0).empty());
  EXPECT_TRUE(core.on_record(rec("sdnator/apps/x/1/metrics@x", Json::object()), kT0).empty());
  EXPECT_TRUE(core.on_record(rec("sdnator/apps/x@x", Json::object()), kT0).empty());
  EXPECT_EQ(core.malformed(), n);

  // The good one still registers, with optional fields left out.
  EXPECT_FALSE(core.on_record(bad_reg(good), kT0).empty());
  EXPECT_FALSE(core.on_record(rec("sdnator/apps/y/1/register@y",
                                  Json{{"app_id", "y"}, {"instance", "1"}}), kT0).empty());
  EXPECT_EQ(core.instances().size(), 2u);
  EXPECT_EQ(core.instances()[1].heartbeat_interval, std::chrono::milliseconds(1000));
  EXPECT_EQ(core.malformed(), n);
}

TEST(CoordinatorCore, PeriodicCheckpointInTick) {
  CoordinatorCore core(cfg());
  core.start(kT0);
  core.on_record(reg("x", "1", {}, {}, 10'000), kT0);  // a change: checkpoint now
  EXPECT_TRUE(core.tick(kT0 + 4999 * kMs).empty());
  auto pubs = core.tick(kT0 + 5000 * kMs);
  ASSERT_EQ(pubs.size(), 1u);
  EXPECT_EQ(pubs[0].key, keys::kCoordinatorState);
  EXPECT_TRUE(pubs[0].archive);
  EXPECT_EQ(pubs[0].value, core.state());
  EXPECT_TRUE(core.tick(kT0 + 6000 * kMs).empty());
}

TEST(CoordinatorCore, StateListsEverything) {
  CoordinatorCore core(cfg());
  core.on_record(reg("stats", "p1", {}, {{"n/*@stats", 5}}), kT0);
  core.on_record(reg("mon", "c1", {{"n/a", 9}}, {}), kT0 + 1);
  Json s = core.state();
  EXPECT_EQ(s["apps"], Json::array({"mon", "stats"}));
  ASSERT_EQ(s["instances"].size(), 2u);
  const Json& i0 = s["instances"][0];
  EXPECT_EQ(i0["app_id"], "stats");
  EXPECT_EQ(i0["status"], "online");
  EXPECT_EQ(i0["active"], true);
  EXPECT_EQ(i0["registered_ns"], kT0);
  EXPECT_EQ(i0["registration"]["roles"], Json::array({"producer"}));
  EXPECT_EQ(i0["registration"]["capabilities"][0]["freq"], 5.0);
  EXPECT_EQ(i0["registration"]["heartbeat_ms"], 100);
  ASSERT_EQ(s["assignments"].size(), 2u);
  EXPECT_EQ(s["assignments"][0]["app_id"], "stats");
  EXPECT_EQ(s["assignments"][0]["assignments"][0]["freq"], 5.0);
  ASSERT_EQ(s["unsatisfied"].size(), 1u);
  EXPECT_EQ(s["unsatisfied"][0],
            (Json{{"consumer", "mon"}, {"key", "n/a"}, {"producer", "stats"}, {"wanted", 9.0},
                  {"capped", 5.0}}));
  EXPECT_EQ(s["epoch"], core.assignment("mon", "c1")->epoch);
}

}  // namespace
}  // namespace sdn::data
