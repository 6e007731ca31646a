// OpenFlow roles in the runtime (southbound/roles.hpp): a real controller with a scripted
// RoleArbiter, driven by byte-level switches that answer ROLE_REQUEST as Open vSwitch does
// (raw_switch.hpp RoleBook: largest generation wins, stale ones refused, a slave's writes
// refused with OFPBRC_IS_SLAVE). Checks that the apps only ever see a switch this instance
// masters, that the arbiter's generation reaches the switch, and that without an arbiter
// nothing changes.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <mutex>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "fakes/eventually.hpp"
#include "southbound/controller.hpp"
#include "unit/southbound/raw_switch.hpp"

namespace sdn::southbound {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::RawSwitch;
using test::RoleBook;

// The arbiter under the test's control: records what the runtime tells it; the test decides.
class ScriptedArbiter : public RoleArbiter {
 public:
  void attach(RoleSink* sink) override { sink_ = sink; }
  void switch_connected(uint64_t dpid) override {
    std::function<void(uint64_t)> hook;
    {
      std::lock_guard lock(mu_);
      connected_.push_back(dpid);
      hook = on_connected;
    }
    if (hook) hook(dpid);
  }
  void switch_disconnected(uint64_t dpid) override {
    std::lock_guard lock(mu_);
    disconnected_.push_back(dpid);
  }
  void mastership_refused(uint64_t dpid, uint64_t generation) override {
    std::lock_guard lock(mu_);
    refused_.emplace_back(dpid, generation);
  }

  void set_role(uint64_t dpid, Role r, uint64_t gen, bool fresh) { sink_.load()->set_role(dpid, r, gen, fresh); }
  std::vector<uint64_t> connected() {
    std::lock_guard lock(mu_);
    return connected_;
  }
  std::vector<uint64_t> disconnected() {
    std::lock_guard lock(mu_);
    return disconnected_;
  }
  std::vector<std::pair<uint64_t, uint64_t>> refused() {
    std::lock_guard lock(mu_);
    return refused_;
  }
  bool attached() const { return sink_ != nullptr; }

  std::function<void(uint64_t)> on_connected;  // set before the switch connects

 private:
  std::atomic<RoleSink*> sink_{nullptr};
  std::mutex mu_;
  std::vector<uint64_t> connected_, disconnected_;
  std::vector<std::pair<uint64_t, uint64_t>> refused_;
};

struct Hooks {
  std::atomic<int> ups{0}, downs{0}, packet_ins{0}, flow_removed{0};
};

class HookApp : public App {
 public:
  explicit HookApp(Hooks& h) : h_(h) {}
  std::string_view name() const override { return "hooks"; }
  void on_switch_up(SwitchContext&) override { h_.ups++; }
  void on_switch_down(uint64_t) override { h_.downs++; }
  Disposition on_packet_in(SwitchContext&, const ofp::PacketIn&, Clock::time_point) override {
    h_.packet_ins++;
    return Disposition::kContinue;
  }
  void on_flow_removed(SwitchContext&, const ofp::FlowRemoved&) override { h_.flow_removed++; }

 private:
  Hooks& h_;
};

// One sdnator instance: shards, controller, app hooks, and (optionally) its arbiter.
struct Instance {
  explicit Instance(bool with_arbiter, SouthboundConfig cfg = {}) {
    cfg.listen_address = "127.0.0.1";
    cfg.listen_port = 0;
    pool = std::make_unique<core::ShardPool>(2);
    ctl = std::make_unique<Controller>(*pool, cfg, metrics,
                                       std::vector<AppFactory>{[this](unsigned) { return std::make_unique<HookApp>(hooks); }});
    if (with_arbiter) {
      arbiter = std::make_shared<ScriptedArbiter>();
      ctl->set_role_arbiter(arbiter);
    }
    pool->start();
    auto ep = ctl->listen();
    if (!ep) throw std::runtime_error(ep.error());
    port = ep->port();
  }
  ~Instance() {
    ctl->stop();
    pool->stop();
    pool->join();
  }
  uint64_t counter(const char* n) const { return metrics.counter_value(n); }
  int64_t gauge(const char* n) const { return metrics.gauge_value(n); }
  std::optional<SwitchSummary> summary(uint64_t dpid) const {
    for (const auto& s : ctl->switches())
      if (s.dpid == dpid) return s;
    return std::nullopt;
  }

  Hooks hooks;
  core::Metrics metrics;
  std::unique_ptr<core::ShardPool> pool;
  std::unique_ptr<Controller> ctl;
  std::shared_ptr<ScriptedArbiter> arbiter;
  uint16_t port = 0;
};

constexpr uint64_t kDpid = 0x2;

bool has_delete(const std::vector<ofp::FlowMod>& flows) {
  for (const auto& f : flows)
    if (f.command == ofp::FlowModCommand::kDelete) return true;
  return false;
}
bool has_table_miss(const std::vector<ofp::FlowMod>& flows) {
  for (const auto& f : flows)
    if (f.command == ofp::FlowModCommand::kAdd && f.priority == 0 && f.match.fields.empty()) return true;
  return false;
}

ofp::PacketIn packet_in() {
  static const uint8_t data[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06};
  ofp::PacketIn p;
  p.total_len = sizeof data;
  p.match.set(ofp::OxmField::kInPort, 1);
  p.data = data;
  return p;
}

ofp::FlowMod some_flow() {
  ofp::FlowMod f;
  f.priority = 100;
  f.cookie = 0x1234;
  f.match.set(ofp::OxmField::kInPort, 1);
  return f;
}

// Connects a switch in `book` to `in` and completes its handshake up to standby.
void connect_standby(Instance& in, RawSwitch& sw, const std::shared_ptr<RoleBook>& book, uint64_t dpid = kDpid) {
  sw.join_book(book);
  ASSERT_TRUE(sw.handshake_ports(dpid));
  ASSERT_TRUE(eventually([&] { return in.arbiter->connected().size() == 1; })) << "switch_connected not called";
}

// Makes `in` master of the switch with `gen` and waits until its apps see it up.
void make_master(Instance& in, RawSwitch& sw, uint64_t gen, bool fresh, int ups_after) {
  in.arbiter->set_role(kDpid, Role::kMaster, gen, fresh);
  ASSERT_TRUE(sw.serve_until([&] { return in.hooks.ups == ups_after; })) << "never up as master";
}

TEST(Roles, NoSwitchUpBeforeMasterIsConfirmedAndTheGenerationReachesTheSwitch) {
  SouthboundConfig cfg;
  cfg.handshake_timeout = 200ms;  // standby is past the handshake: it must not time out
  Instance in(true, cfg);
  ASSERT_TRUE(in.arbiter->attached());
  auto book = std::make_shared<RoleBook>();
  RawSwitch sw(in.port);
  connect_standby(in, sw, book);
  EXPECT_EQ(in.arbiter->connected()[0], kDpid);

  // Standby: registered (so set_role finds it), no set-up, no apps, PacketIns ignored.
  sw.send(7, packet_in());
  sw.serve_for(400ms);
  EXPECT_FALSE(sw.eof()) << "standby must outlive the handshake timeout";
  EXPECT_EQ(in.hooks.ups, 0);
  EXPECT_EQ(in.hooks.packet_ins, 0);
  EXPECT_TRUE(sw.received_of<ofp::FlowMod>().empty()) << "no set-up before MASTER";
  EXPECT_EQ(in.counter("southbound.role.packet_in_not_master"), 1u);
  auto s = in.summary(kDpid);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->up);
  EXPECT_EQ(s->role, Role::kEqual);
  EXPECT_FALSE(in.ctl->is_up(kDpid));
  EXPECT_FALSE(in.ctl->with_switch(kDpid, [](SwitchContext&) {}));

  // MASTER requested, reply held back: still nothing for the apps.
  sw.hold_role_replies = true;
  in.arbiter->set_role(kDpid, Role::kMaster, 7, true);
  ASSERT_TRUE(sw.serve_until([&] { return !sw.received_of<ofp::RoleRequest>().empty(); }));
  const auto rq = sw.received_of<ofp::RoleRequest>();
  ASSERT_EQ(rq.size(), 1u);
  EXPECT_EQ(rq[0].role.role, ofp::kRoleMaster);
  EXPECT_EQ(rq[0].role.generation_id, 7u);
  sw.serve_for(100ms);
  EXPECT_EQ(in.hooks.ups, 0);
  EXPECT_TRUE(sw.received_of<ofp::FlowMod>().empty());

  // Confirmed: set-up (fresh: with the clear-on-connect delete), then up.
  sw.hold_role_replies = false;
  sw.answer_role(*std::find_if(sw.received.begin(), sw.received.end(), [](const ofp::Message& m) {
    return std::holds_alternative<ofp::RoleRequest>(m.body);
  }));
  ASSERT_TRUE(sw.serve_until([&] { return in.hooks.ups == 1; }));
  const auto flows = sw.received_of<ofp::FlowMod>();
  EXPECT_TRUE(has_delete(flows)) << "fresh: clear_flows_on_connect deletes";
  EXPECT_TRUE(has_table_miss(flows));
  EXPECT_TRUE(sw.received_of<ofp::SetConfig>().size() == 1);
  s = in.summary(kDpid);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->up);
  EXPECT_EQ(s->role, Role::kMaster);
  EXPECT_EQ(s->generation, 7u);
  EXPECT_TRUE(in.ctl->is_up(kDpid));
  EXPECT_EQ(in.counter("southbound.role.requests"), 1u);
  EXPECT_EQ(in.counter("southbound.role.master"), 1u);
  EXPECT_EQ(in.gauge("southbound.role.mastered"), 1);
  EXPECT_EQ(in.gauge("southbound.switches.up"), 1);

  // As master the apps get PacketIns.
  sw.send(8, packet_in());
  ASSERT_TRUE(eventually([&] { return in.hooks.packet_ins == 1; }));

  sw.close();
  ASSERT_TRUE(eventually([&] { return in.arbiter->disconnected().size() == 1 && in.hooks.downs == 1; }));
  EXPECT_EQ(in.arbiter->disconnected()[0], kDpid);
  EXPECT_EQ(in.gauge("southbound.role.mastered"), 0);
  EXPECT_EQ(in.gauge("southbound.switches.up"), 0);
}

TEST(Roles, StaleMasterRequestIsRefusedAndTheSwitchStaysDownForTheApps) {
  Instance in(true);
  auto book = std::make_shared<RoleBook>();
  book->have_generation = true;
  book->max_generation = 10;  // another controller already asked with generation 10
  RawSwitch sw(in.port);
  connect_standby(in, sw, book);
  in.arbiter->set_role(kDpid, Role::kMaster, 5, false);
  ASSERT_TRUE(sw.serve_until([&] { return in.arbiter->refused().size() == 1; }));
  EXPECT_EQ(in.arbiter->refused()[0], std::make_pair(kDpid, uint64_t{5}));
  sw.serve_for(100ms);
  EXPECT_EQ(in.hooks.ups, 0);
  EXPECT_TRUE(sw.received_of<ofp::FlowMod>().empty());
  EXPECT_FALSE(sw.eof()) << "a refusal keeps the connection";
  EXPECT_EQ(in.counter("southbound.role.refused"), 1u);
  EXPECT_EQ(in.gauge("southbound.role.mastered"), 0);
  ASSERT_TRUE(in.summary(kDpid));
  EXPECT_FALSE(in.summary(kDpid)->up);

  // A later generation succeeds (takeover: no delete).
  make_master(in, sw, 11, false, 1);
  EXPECT_FALSE(has_delete(sw.received_of<ofp::FlowMod>()));
}

TEST(Roles, DemotionTakesTheSwitchFromTheAppsAndKeepsTheConnection) {
  Instance in(true);
  auto book = std::make_shared<RoleBook>();
  RawSwitch sw(in.port);
  connect_standby(in, sw, book);
  make_master(in, sw, 1, true, 1);

  in.arbiter->set_role(kDpid, Role::kSlave, 2, false);
  ASSERT_TRUE(sw.serve_until([&] { return in.hooks.downs == 1 && in.counter("southbound.role.slave") == 1; }));
  const auto rq = sw.received_of<ofp::RoleRequest>();
  ASSERT_EQ(rq.size(), 2u);
  EXPECT_EQ(rq[1].role.role, ofp::kRoleSlave);
  EXPECT_EQ(rq[1].role.generation_id, 2u);
  EXPECT_EQ(sw.role, ofp::kRoleSlave);
  EXPECT_FALSE(sw.eof());
  EXPECT_EQ(in.ctl->switch_count(), 1u) << "a slave stays registered";
  EXPECT_TRUE(in.ctl->connected(kDpid)) << "a slave's switch counts as connected (the topology's remote_switch)";
  EXPECT_FALSE(in.ctl->with_switch(kDpid, [](SwitchContext&) {})) << "apps only reach up switches";
  auto s = in.summary(kDpid);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->role, Role::kSlave);
  EXPECT_EQ(s->generation, 2u);
  EXPECT_FALSE(s->up);
  EXPECT_EQ(in.counter("southbound.role.demoted"), 1u);
  EXPECT_EQ(in.gauge("southbound.role.mastered"), 0);
  EXPECT_EQ(in.gauge("southbound.switches.up"), 0);
  EXPECT_TRUE(in.arbiter->disconnected().empty());

  // A slave ignores PacketIns and FlowRemoved; PortStatus still updates its port list.
  sw.send(9, packet_in());
  ofp::FlowRemoved fr;
  sw.send(10, fr);
  ofp::PortStatus ps;
  ps.reason = 0;  // OFPPR_ADD
  ps.desc.port_no = 3;
  ps.desc.name = "p3";
  sw.send(11, ps);
  ASSERT_TRUE(sw.serve_until([&] { return in.summary(kDpid) && in.summary(kDpid)->ports == 3; }));
  EXPECT_TRUE(eventually([&] { return in.counter("southbound.role.flow_removed_not_master") == 1; }));
  EXPECT_EQ(in.hooks.packet_ins, 0);
  EXPECT_EQ(in.hooks.flow_removed, 0);
  EXPECT_EQ(in.counter("southbound.role.packet_in_not_master"), 1u);

  // Master again (the lease came back): set up once more, without the delete.
  const size_t flows_before = sw.received_of<ofp::FlowMod>().size();
  make_master(in, sw, 3, false, 2);
  const auto flows = sw.received_of<ofp::FlowMod>();
  EXPECT_FALSE(has_delete({flows.begin() + static_cast<long>(flows_before), flows.end()}));
  EXPECT_EQ(in.hooks.downs, 1);
}

TEST(Roles, PromotedSlaveIsSetUpWithTheDeleteOnlyWhenFresh) {
  for (const bool fresh : {false, true}) {
    SCOPED_TRACE(fresh ? "fresh" : "takeover");
    Instance in(true);
    auto book = std::make_shared<RoleBook>();
    RawSwitch sw(in.port);
    connect_standby(in, sw, book);
    in.arbiter->set_role(kDpid, Role::kSlave, 1, false);
    ASSERT_TRUE(sw.serve_until([&] { return in.counter("southbound.role.slave") == 1; }));
    EXPECT_EQ(in.hooks.downs, 0) << "never up, so never down";
    EXPECT_EQ(in.counter("southbound.role.demoted"), 0u);
    EXPECT_TRUE(sw.received_of<ofp::FlowMod>().empty());
    make_master(in, sw, 2, fresh, 1);
    const auto flows = sw.received_of<ofp::FlowMod>();
    EXPECT_EQ(has_delete(flows), fresh);
    EXPECT_TRUE(has_table_miss(flows));
  }
}

// Two instances, one switch (two connections sharing a RoleBook): B takes over with a newer
// generation; the switch makes A a slave without telling it (the 1.3 spec sends no ROLE_STATUS),
// A's next write gets IS_SLAVE and its arbiter hears of it once; A's arbiter then demotes it.
TEST(Roles, TakeoverByAnotherInstanceReachesTheOldMastersArbiterThroughIsSlave) {
  Instance a(true), b(true);
  auto book = std::make_shared<RoleBook>();
  book->role_status = false;
  RawSwitch to_a(a.port), to_b(b.port);
  connect_standby(a, to_a, book);
  connect_standby(b, to_b, book);
  make_master(a, to_a, 1, true, 1);
  b.arbiter->set_role(kDpid, Role::kSlave, 1, false);
  ASSERT_TRUE(to_b.serve_until([&] { return b.counter("southbound.role.slave") == 1; }));

  // B's lease: generation 2, a takeover (A's flows stay).
  make_master(b, to_b, 2, false, 1);
  EXPECT_FALSE(has_delete(to_b.received_of<ofp::FlowMod>()));
  EXPECT_EQ(to_a.role, ofp::kRoleSlave) << "the switch demoted the old master";

  // A does not know yet: an app writes twice; both are refused, the arbiter is told once.
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(a.ctl->with_switch(kDpid, [](SwitchContext& sw) { sw.send(some_flow()); }));
  ASSERT_TRUE(to_a.serve_until([&] { return a.counter("southbound.role.is_slave_errors") == 2; }));
  EXPECT_EQ(to_a.is_slave_sent, 2u);
  ASSERT_EQ(a.arbiter->refused().size(), 1u);
  EXPECT_EQ(a.arbiter->refused()[0], std::make_pair(kDpid, uint64_t{1}));

  // A's arbiter finds its lease gone and demotes it.
  a.arbiter->set_role(kDpid, Role::kSlave, 2, false);
  ASSERT_TRUE(to_a.serve_until([&] { return a.hooks.downs == 1 && a.counter("southbound.role.slave") == 1; }));
  EXPECT_EQ(a.gauge("southbound.role.mastered"), 0);
  EXPECT_EQ(b.gauge("southbound.role.mastered"), 1);
  EXPECT_EQ(b.hooks.ups, 1);
  EXPECT_EQ(b.hooks.downs, 0);

  // A stale MASTER from A (generation 1 < 2) is refused.
  a.arbiter->set_role(kDpid, Role::kMaster, 1, false);
  ASSERT_TRUE(to_a.serve_until([&] { return a.arbiter->refused().size() == 2; }));
  EXPECT_EQ(a.hooks.ups, 1);
  EXPECT_EQ(to_b.role, ofp::kRoleMaster);
}

// As above with a switch that tells the old master (Open vSwitch 3.1: an ONF ROLE_STATUS
// experimenter message): A's apps stop at once, before any write, and its arbiter is told once.
TEST(Roles, RoleStatusFromTheSwitchDemotesTheOldMasterAtOnce) {
  Instance a(true), b(true);
  auto book = std::make_shared<RoleBook>();
  RawSwitch to_a(a.port), to_b(b.port);
  connect_standby(a, to_a, book);
  connect_standby(b, to_b, book);
  make_master(a, to_a, 4, true, 1);
  make_master(b, to_b, 5, false, 1);
  ASSERT_TRUE(to_a.serve_until([&] { return a.hooks.downs == 1 && a.arbiter->refused().size() == 1; }));
  EXPECT_EQ(a.arbiter->refused()[0], std::make_pair(kDpid, uint64_t{4}));
  EXPECT_EQ(a.counter("southbound.role.status_slave"), 1u);
  EXPECT_EQ(a.counter("southbound.errors.decode"), 0u) << "ROLE_STATUS is not a bad message";
  EXPECT_EQ(a.gauge("southbound.role.mastered"), 0);
  EXPECT_FALSE(a.ctl->is_up(kDpid));
  auto s = a.summary(kDpid);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->role, Role::kSlave);
  EXPECT_EQ(s->generation, 5u);
  EXPECT_EQ(to_a.is_slave_sent, 0u);
  // A's arbiter follows with SLAVE: no second demotion, no second report.
  a.arbiter->set_role(kDpid, Role::kSlave, 5, false);
  ASSERT_TRUE(to_a.serve_until([&] { return a.counter("southbound.role.slave") == 1; }));
  EXPECT_EQ(a.hooks.downs, 1);
  EXPECT_EQ(a.counter("southbound.role.demoted"), 1u);
  EXPECT_EQ(a.arbiter->refused().size(), 1u);
  EXPECT_EQ(b.hooks.ups, 1);
}

// A MASTER decision overtaken by a SLAVE one before the switch answered: the late MASTER reply
// must not bring the switch up.
TEST(Roles, SupersededMasterReplyDoesNotSetTheSwitchUp) {
  Instance in(true);
  auto book = std::make_shared<RoleBook>();
  RawSwitch sw(in.port);
  connect_standby(in, sw, book);
  sw.hold_role_replies = true;
  in.arbiter->set_role(kDpid, Role::kMaster, 1, true);
  in.arbiter->set_role(kDpid, Role::kSlave, 2, false);
  ASSERT_TRUE(sw.serve_until([&] { return sw.received_of<ofp::RoleRequest>().size() == 2; }));
  for (const auto& m : std::vector<ofp::Message>(sw.received))
    if (std::holds_alternative<ofp::RoleRequest>(m.body)) sw.answer_role(m);
  sw.hold_role_replies = false;
  ASSERT_TRUE(sw.serve_until([&] { return in.counter("southbound.role.slave") == 1; }));
  sw.serve_for(100ms);
  EXPECT_EQ(in.counter("southbound.role.master"), 1u);
  EXPECT_EQ(in.hooks.ups, 0);
  EXPECT_TRUE(sw.received_of<ofp::FlowMod>().empty());
  EXPECT_EQ(in.summary(kDpid)->role, Role::kSlave);
  EXPECT_EQ(in.gauge("southbound.role.mastered"), 0);
}

// An arbiter may answer from inside switch_connected (on the shard thread).
TEST(Roles, ArbiterMayDecideInsideSwitchConnected) {
  Instance in(true);
  Instance* inp = &in;
  in.arbiter->on_connected = [inp](uint64_t dpid) { inp->arbiter->set_role(dpid, Role::kMaster, 42, true); };
  auto book = std::make_shared<RoleBook>();
  RawSwitch sw(in.port);
  sw.join_book(book);
  ASSERT_TRUE(sw.handshake_ports(kDpid));
  ASSERT_TRUE(sw.serve_until([&] { return in.hooks.ups == 1; }));
  EXPECT_EQ(sw.received_of<ofp::RoleRequest>().at(0).role.generation_id, 42u);
  EXPECT_EQ(book->max_generation, 42u);
}

TEST(Roles, DecisionsForSwitchesNotConnectedAreIgnored) {
  Instance in(true);
  in.arbiter->set_role(0x99, Role::kMaster, 1, true);
  EXPECT_EQ(in.counter("southbound.role.unknown_switch"), 1u);
  EXPECT_TRUE(in.ctl->switches().empty());
}

TEST(Roles, WithoutAnArbiterNothingChanges) {
  Instance in(false);
  EXPECT_EQ(in.ctl->role_arbiter(), nullptr);
  RawSwitch sw(in.port);
  ASSERT_TRUE(sw.handshake(kDpid));  // the set-up follows the port description directly
  EXPECT_TRUE(has_delete(sw.setup_flows));
  ASSERT_TRUE(eventually([&] { return in.hooks.ups == 1; }));
  auto s = in.summary(kDpid);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->up);
  EXPECT_EQ(s->role, Role::kEqual);
  EXPECT_TRUE(in.ctl->is_up(kDpid));
  EXPECT_TRUE(in.ctl->is_up(0x77)) << "without roles every switch counts as ours";
  sw.serve_for(100ms);
  EXPECT_TRUE(sw.received_of<ofp::RoleRequest>().empty());
  // set_role without an arbiter (nobody should call it) is ignored by the connection.
  in.ctl->set_role(kDpid, Role::kSlave, 1, false);
  sw.serve_for(100ms);
  EXPECT_TRUE(sw.received_of<ofp::RoleRequest>().empty());
  EXPECT_EQ(in.hooks.downs, 0);
  sw.send(3, packet_in());
  ASSERT_TRUE(eventually([&] { return in.hooks.packet_ins == 1; }));
  EXPECT_EQ(in.counter("southbound.role.requests"), 0u);
  EXPECT_EQ(in.counter("southbound.role.packet_in_not_master"), 0u);
  sw.close();
  ASSERT_TRUE(eventually([&] { return in.hooks.downs == 1; }));
}

// Against real Open vSwitch (needs root and a running OVS: scripts/ovs.sh start; opt in with
// SDNATOR_OVS_ROLES=1): one netdev bridge connected to two instances on loopback. A is master
// (fresh) and installs a flow, B is slave; B takes over with generation 2: A's apps see the
// switch go down (OVS tells A with a ROLE_STATUS), B's set-up keeps A's flow; A's stale MASTER
// request is refused.
std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

TEST(RolesOvs, TwoInstancesOneBridge) {
  if (std::getenv("SDNATOR_OVS_ROLES") == nullptr) GTEST_SKIP() << "set SDNATOR_OVS_ROLES=1 (root, OVS running)";
  const std::string br = "br-sdnroles";
  const uint64_t dpid = 0xa2;
  Instance a(true), b(true);
  run("ovs-vsctl --if-exists del-br " + br);
  struct Cleanup {
    std::string br;
    ~Cleanup() { run("ovs-vsctl --if-exists del-br " + br); }
  } cleanup{br};
  run("ovs-vsctl add-br " + br + " -- set bridge " + br +
      " datapath_type=netdev protocols=OpenFlow13 fail_mode=secure other-config:datapath-id=00000000000000a2 -- "
      "set-controller " + br + " tcp:127.0.0.1:" + std::to_string(a.port) + " tcp:127.0.0.1:" + std::to_string(b.port));
  ASSERT_TRUE(eventually([&] { return a.arbiter->connected().size() == 1 && b.arbiter->connected().size() == 1; }, 10s))
      << run("ovs-vsctl show");
  EXPECT_EQ(a.arbiter->connected()[0], dpid);

  a.arbiter->set_role(dpid, Role::kMaster, 1, true);
  b.arbiter->set_role(dpid, Role::kSlave, 1, false);
  ASSERT_TRUE(eventually([&] { return a.hooks.ups == 1 && b.counter("southbound.role.slave") == 1; }));
  ASSERT_TRUE(a.ctl->with_switch(dpid, [](SwitchContext& sw) { sw.send(some_flow()); }));
  ASSERT_TRUE(eventually([&] { return run("ovs-ofctl -O OpenFlow13 dump-flows " + br).find("cookie=0x1234") != std::string::npos; }));
  EXPECT_EQ(b.hooks.ups, 0);

  b.arbiter->set_role(dpid, Role::kMaster, 2, false);
  ASSERT_TRUE(eventually([&] { return b.hooks.ups == 1 && a.hooks.downs == 1 && a.arbiter->refused().size() == 1; }));
  EXPECT_EQ(a.arbiter->refused()[0], std::make_pair(dpid, uint64_t{1}));
  EXPECT_EQ(a.counter("southbound.role.status_slave"), 1u);
  EXPECT_EQ(a.counter("southbound.errors.decode"), 0u);
  EXPECT_FALSE(a.ctl->is_up(dpid));
  EXPECT_TRUE(b.ctl->is_up(dpid));
  EXPECT_NE(run("ovs-ofctl -O OpenFlow13 dump-flows " + br).find("cookie=0x1234"), std::string::npos)
      << "a takeover keeps the previous master's flows";

  a.arbiter->set_role(dpid, Role::kMaster, 1, false);  // stale
  ASSERT_TRUE(eventually([&] { return a.arbiter->refused().size() == 2; }));
  EXPECT_EQ(a.counter("southbound.role.refused"), 1u);
  EXPECT_EQ(a.hooks.ups, 1);
  EXPECT_EQ(b.hooks.downs, 0);

  // A write from the slave through the runtime cannot happen (not up); B's write works.
  EXPECT_FALSE(a.ctl->with_switch(dpid, [](SwitchContext&) {}));
  run("ovs-vsctl --if-exists del-br " + br);
  ASSERT_TRUE(eventually([&] { return a.arbiter->disconnected().size() == 1 && b.arbiter->disconnected().size() == 1; }, 10s));
  EXPECT_EQ(b.hooks.downs, 1);
}

}  // namespace
}  // namespace sdn::southbound
