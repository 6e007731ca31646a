// Per-app access control on a real Redis (docs/acl.md): the Coordinator turns each app's grant
// into a Redis ACL user; each "process" (its own Backends) connects as its app's user with the
// HMAC-derived password. The apps' local checks are off here, so every refusal seen is Redis's:
// NOPERM for a publish or a subscription outside the grant (counted, no crash), and after a
// revocation the app's connections are killed and its password no longer authenticates.
#include <atomic>
#include <mutex>
#include <thread>

#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include "data/acl.hpp"
#include "data/coordinator.hpp"
#include "data/due.hpp"
#include "fakes/eventually.hpp"
#include "fakes/redis_server.hpp"

namespace sdn::data {
namespace {

using namespace std::chrono_literals;

constexpr const char* kAdminPassword = "admin-pw-for-the-test";
constexpr const char* kSecret = "0123456789abcdef-secret";

template <class F>
bool eventually(F&& f, std::chrono::milliseconds limit = 5000ms) {
  return test::eventually(std::forward<F>(f), limit);
}

// One raw command on a fresh connection, for what the test checks behind DUE's back.
std::string raw(uint16_t port, std::vector<std::string> auth, std::vector<std::string> cmd) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (!c || c->err) {
    if (c) redisFree(c);
    return "connect failed";
  }
  auto run = [&](const std::vector<std::string>& argv) {
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (const auto& s : argv) {
      a.push_back(s.c_str());
      l.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, int(a.size()), a.data(), l.data()));
    std::string out = !r ? "no reply"
                      : r->type == REDIS_REPLY_ERROR ? "ERR:" + std::string(r->str, r->len)
                      : r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING
                          ? std::string(r->str, r->len)
                      : r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer)
                                                       : "array";
    if (r) freeReplyObject(r);
    return out;
  };
  std::vector<std::string> a = {"AUTH"};
  a.insert(a.end(), auth.begin(), auth.end());
  std::string out = run(a);
  if (out == "OK" && !cmd.empty()) out = run(cmd);
  redisFree(c);
  return out;
}

class AclRedis : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_.set_extra_args({"--requirepass", kAdminPassword});
    ASSERT_TRUE(redis_.start()) << redis_.error();
  }
  RedisConfig rc(std::string user, std::string password) {
    RedisConfig c;
    c.port = redis_.port();
    c.user = std::move(user);
    c.password = std::move(password);
    c.flush_interval = 200us;
    c.reconnect_max = 200ms;
    return c;
  }
  // A process running as one app: its Redis user, local ACL checks off (Redis enforces).
  std::shared_ptr<Backends> app_process(const std::string& app) {
    auto u = make_redis_updates(rc("sdnator:" + app, app_password(kSecret, app)));
    EXPECT_TRUE(u) << (u ? "" : u.error());
    return std::make_shared<Backends>(std::move(*u), nullptr);
  }
  std::shared_ptr<Backends> coordinator_process() {
    auto u = make_redis_updates(rc("default", kAdminPassword));
    EXPECT_TRUE(u) << (u ? "" : u.error());
    auto b = std::make_shared<Backends>(std::move(*u), nullptr);
    AclConfig a;
    a.mode = AclMode::kEnforce;
    a.secret = kSecret;
    a.apps = {"sensor", "twin"};
    a.redis_users = true;
    a.admin = rc("default", kAdminPassword);
    b->acl().set_config(a);
    return b;
  }
  DueConfig fast() {
    DueConfig c;
    c.heartbeat_interval = 50ms;
    return c;
  }
  test::RedisServer redis_;
};

TEST_F(AclRedis, RedisRefusesWhatTheGrantDoesNotAllowAndRevocationLocksOut) {
  auto pc = coordinator_process();
  CoordinatorConfig cc;
  cc.check_interval = 10ms;
  Coordinator coord(pc, cc, fast());
  ASSERT_TRUE(coord.start());
  const uint16_t port = redis_.port();
  const std::string sensor_pw = app_password(kSecret, "sensor");
  const std::string twin_pw = app_password(kSecret, "twin");
  // Pre-provisioned at start: the users exist and may only use the coordination keys.
  EXPECT_EQ(raw(port, {"sdnator:sensor", sensor_pw}, {"PING"}), "PONG");
  EXPECT_EQ(raw(port, {"sdnator:sensor", sensor_pw}, {"PUBLISH", "fleet/p1/temp@sensor", "x"})
                .rfind("ERR:NOPERM", 0), 0u);
  EXPECT_EQ(raw(port, {"sdnator:sensor", "wrong"}, {}).rfind("ERR:WRONGPASS", 0), 0u);
  EXPECT_EQ(raw(port, {"sdnator:sensor", sensor_pw}, {"GET", "k"}).rfind("ERR:NOPERM", 0), 0u);

  auto ps = app_process("sensor");
  auto pt = app_process("twin");
  Due sensor(ps, fast()), twin(pt, fast());
  ASSERT_TRUE(sensor.init("sensor", kProducer, {}, {Capability{"fleet/*/temp", {}, false}}));
  ASSERT_TRUE(twin.init("twin", kConsumer, {Interest{"fleet/*/temp@sensor", {}}}));
  // Their assignment sets come after the Coordinator widened their users to the full grant.
  ASSERT_TRUE(eventually([&] {
    return sensor.assignments().epoch != 0 && twin.assignments().epoch != 0;
  }));
  EXPECT_EQ(raw(port, {"sdnator:sensor", sensor_pw}, {"PUBLISH", "fleet/p1/temp@sensor", "x"}), "0");

  std::atomic<int> got{0};
  auto sub = twin.observe("fleet/*/temp@sensor", [&](const RecordPtr&) { ++got; });
  ASSERT_TRUE(sub) << sub.error();
  ASSERT_TRUE(sensor.write("fleet/p1/temp", 1, kNoWait));
  ASSERT_TRUE(eventually([&] { return got.load() == 1; }));

  // Outside the capability: accepted locally (checks off), refused by Redis, counted dropped.
  ASSERT_TRUE(sensor.write("fleet/p1/secret", 1, kNoWait));
  // Another app's key: Redis refuses it too (the user may only publish "@sensor" keys).
  EXPECT_EQ(raw(port, {"sdnator:sensor", sensor_pw}, {"PUBLISH", "fleet/p1/temp@twin", "x"})
                .rfind("ERR:NOPERM", 0), 0u);
  ASSERT_TRUE(sensor.sync(2s));
  auto us = ps->updates().stats();
  EXPECT_EQ(us.acl_denied, 1u);
  EXPECT_EQ(us.dropped, 1u);
  EXPECT_NE(us.last_error.find("NOPERM"), std::string::npos) << us.last_error;
  EXPECT_TRUE(us.connected);  // no crash, no disconnect: the next write goes through
  ASSERT_TRUE(sensor.write("fleet/p2/temp", 2, kNoWait));
  ASSERT_TRUE(eventually([&] { return got.load() == 2; }));

  // Subscriptions outside the interest: a glob (PSUBSCRIBE) and a literal channel (SUBSCRIBE).
  for (const char* p : {"fleet/**", "secret/x@sensor"}) {
    auto bad = twin.observe(p, [&](const RecordPtr&) { ++got; });
    ASSERT_FALSE(bad) << p;
    EXPECT_NE(bad.error().find("NOPERM"), std::string::npos) << bad.error();
  }
  EXPECT_EQ(pt->updates().stats().acl_denied, 2u);
  EXPECT_GE(twin.stats().acl_denied, 2u);
  // The allowed subscription still delivers.
  ASSERT_TRUE(sensor.write("fleet/p3/temp", 3, kNoWait));
  ASSERT_TRUE(eventually([&] { return got.load() == 3; }));

  // Revoke twin: its connections are killed, its password stops working, nothing more arrives.
  const auto reconnects_before = pt->updates().stats().reconnects;
  ASSERT_TRUE(coord.revoke("twin"));
  EXPECT_EQ(raw(port, {"sdnator:twin", twin_pw}, {}).rfind("ERR:WRONGPASS", 0), 0u);
  ASSERT_TRUE(eventually([&] {
    auto s = pt->updates().stats();
    return !s.connected && s.last_error.find("AUTH") != std::string::npos;
  })) << pt->updates().stats().last_error;
  ASSERT_TRUE(sensor.write("fleet/p4/temp", 4, kNoWait));
  ASSERT_TRUE(sensor.sync(2s));
  std::this_thread::sleep_for(200ms);  // give a (wrong) delivery the time to arrive
  EXPECT_EQ(got.load(), 3);
  EXPECT_EQ(pt->updates().stats().reconnects, reconnects_before);  // never got back in
  // The Coordinator also dropped twin from its registry and lists it as revoked.
  ASSERT_TRUE(eventually([&] {
    Json s = coord.state();
    for (const auto& i : s["instances"])
      if (i["app_id"] == "twin") return false;
    return s["revoked"].size() == 1;
  })) << coord.state().dump();
  coord.stop();
}

}  // namespace
}  // namespace sdn::data
