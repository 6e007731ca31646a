// The cluster's lease thread (cluster.hpp, docs/cluster.md "Leases and fencing"). One thread owns
// one Redis connection and every lease decision: shard threads only queue events for it, so no
// RoleArbiter call ever blocks. Each renew_interval it sends, in one round trip, the member
// heartbeat and the renewal of every lease it holds; each check_interval (or at once after an
// event) it reads the lease and the connected members of every switch connected here and takes
// what is free and preferred (or free for longer than claim_delay), and hands over what another
// member should hold (balance). A lease this instance could not renew is given up locally at its
// own deadline (last renewal sent + lease), before Redis lets anyone else take it.
#include "cluster/cluster.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cluster/placement.hpp"
#include "cluster/redis_link.hpp"
#include "core/log.hpp"

namespace sdn::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using southbound::Role;
using std::chrono::milliseconds;

std::string hex16(uint64_t d) { return fmt::format("{:016x}", d); }

uint64_t unix_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// A lease's value: "<owner id> <generation>".
struct LeaseValue {
  std::string owner;
  uint64_t gen = 0;
};

std::optional<LeaseValue> parse_lease(const std::string& v) {
  const auto sp = v.rfind(' ');
  if (sp == std::string::npos || sp == 0) return std::nullopt;
  auto g = parse_u64(std::string_view(v).substr(sp + 1));
  if (!g) return std::nullopt;
  return LeaseValue{v.substr(0, sp), *g};
}

std::string lease_value(const std::string& id, uint64_t gen) { return id + " " + std::to_string(gen); }

std::string default_instance_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof(host), "host");
  return fmt::format("{}-{}", host, ::getpid());
}

// hiredis writes with write(2): a Redis that went away must not raise SIGPIPE in our thread.
void block_sigpipe() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

void consume_pending_sigpipe() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  timespec zero{0, 0};
  while (sigtimedwait(&s, nullptr, &zero) > 0) {
  }
}

data::RedisEndpoint endpoint_of(const ClusterConfig& c) {
  data::RedisEndpoint ep;
  if (c.sentinel_master.empty()) {
    if (auto hp = data::parse_host_port(c.redis.empty() ? "" : c.redis.front())) {
      ep.host = hp->host;
      ep.port = hp->port;
    }
  } else {
    ep.sentinels = c.redis;
    ep.sentinel_master = c.sentinel_master;
  }
  ep.user = c.user;
  ep.password = c.password;
  // No call on the lease thread may block much longer than a renewal interval or two: a lease
  // is given up locally at its deadline only once the thread gets to look.
  const milliseconds t = std::clamp(c.lease / 3, milliseconds(20), milliseconds(1000));
  ep.timeout = t;
  ep.sentinel_timeout = t;
  return ep;
}

struct AtomicCounters {
  std::atomic<uint64_t> leases_acquired{0}, leases_lost{0}, handovers{0}, renew_failures{0},
      redis_errors{0}, reconnects{0}, sentinel_lookups{0}, fenced_writes_refused{0},
      self_demotions{0};
};

struct Event {
  enum Kind { kConnected, kDisconnected, kRefused, kLead } kind;
  uint64_t dpid = 0;
  uint64_t gen = 0;
  std::string role;
  LeaderEvents ev;
};

}  // namespace

struct Cluster::Impl {
  explicit Impl(const ClusterConfig& c)
      : cfg(c),
        id(c.instance_id.empty() ? default_instance_id() : c.instance_id),
        prefix("sdnator:cluster:" + c.name + ":"),
        lease_ms(std::to_string(c.lease.count())),
        link(endpoint_of(c)),
        app_link(endpoint_of(c)) {}

  // ---- fixed ----
  const ClusterConfig cfg;
  const std::string id;
  const std::string prefix;
  const std::string lease_ms;
  std::string member_json;

  std::string member_key(const std::string& m) const { return prefix + "member:" + m; }
  std::string master_key(uint64_t d) const { return prefix + "master:" + hex16(d); }
  std::string gen_key(uint64_t d) const { return prefix + "gen:" + hex16(d); }
  std::string conn_key(uint64_t d) const { return prefix + "conn:" + hex16(d); }
  std::string leader_key(const std::string& r) const { return prefix + "leader:" + r; }
  std::string leadergen_key(const std::string& r) const { return prefix + "leadergen:" + r; }

  // ---- shared with other threads ----
  std::mutex ev_mu;
  std::condition_variable ev_cv;
  std::condition_variable start_cv;  // first_attempt_done
  std::deque<Event> events;
  bool stopping = false;
  bool frozen = false;
  bool first_attempt_done = false;
  std::thread thread;

  std::mutex sink_mu;
  southbound::RoleSink* sink = nullptr;

  AtomicCounters ctr;

  struct SwitchView {
    Role role = Role::kEqual;  // as last told to the sink (kEqual: nothing told yet)
    uint64_t gen = 0;
    std::string owner;
  };
  mutable std::mutex snap_mu;
  std::vector<std::string> snap_members;
  std::map<uint64_t, uint64_t> snap_masters;
  std::map<uint64_t, SwitchView> snap_switches;
  std::map<std::string, uint64_t> snap_leaders;  // role -> generation, held now
  bool snap_connected = false;
  std::string snap_address;

  std::mutex app_mu;  // get/set/fenced_set: app threads, their own connection

  // ---- owned by the lease thread ----
  RedisLink link;
  RedisLink app_link;
  bool ever_connected = false;
  milliseconds backoff{50};
  Clock::time_point next_connect{}, next_renew{}, next_check{}, next_conn_refresh{};
  bool check_now = false;

  std::set<uint64_t> connected;
  struct Owned {
    uint64_t gen = 0;
    Clock::time_point since;     // acquired
    Clock::time_point deadline;  // last successful renewal sent + lease
  };
  std::map<uint64_t, Owned> owned;
  struct Told {
    Role role;
    uint64_t gen;
  };
  std::map<uint64_t, Told> told;
  std::map<uint64_t, Clock::time_point> free_since;
  std::map<uint64_t, LeaseValue> others;  // leases held by other members, as last read
  std::set<uint64_t> ever_seen;           // switches whose lease this instance saw held
  std::map<uint64_t, uint64_t> refused;   // dpid -> generation the switch refused or reported
  std::vector<std::string> members;
  std::map<std::string, Clock::time_point> member_since;  // continuously live since (our view)
  std::set<uint64_t> conn_add, conn_remove;
  std::map<std::string, std::string> release;  // lease key -> value it must hold
  struct Leader {
    LeaderEvents ev;
    bool held = false;
    uint64_t gen = 0;
    Clock::time_point deadline;
  };
  std::map<std::string, Leader> leaders;

  // ------------------------------------------------------------------------------------------

  void post(Event e) {
    {
      std::lock_guard l(ev_mu);
      events.push_back(std::move(e));
    }
    ev_cv.notify_one();
  }

  void tell(uint64_t dpid, Role role, uint64_t gen, bool fresh) {
    if (connected.count(dpid) == 0) return;
    auto it = told.find(dpid);
    if (it != told.end() && it->second.role == role && it->second.gen == gen) return;
    told[dpid] = Told{role, gen};
    publish_switch(dpid);  // masters() and the status JSON agree with the sink from this call on
    std::lock_guard l(sink_mu);
    if (sink != nullptr) sink->set_role(dpid, role, gen, fresh);
  }

  // One switch's part of the snapshot (publish_snapshot does all of it once a loop).
  void publish_switch(uint64_t d) {
    std::lock_guard l(snap_mu);
    if (auto o = owned.find(d); o != owned.end()) snap_masters[d] = o->second.gen;
    else snap_masters.erase(d);
    if (connected.count(d) == 0) {
      snap_switches.erase(d);
      return;
    }
    snap_switches[d] = switch_view(d);
  }

  SwitchView switch_view(uint64_t d) const {
    SwitchView v;
    if (auto t = told.find(d); t != told.end()) {
      v.role = t->second.role;
      v.gen = t->second.gen;
    }
    if (owned.count(d) != 0) v.owner = id;
    else if (auto o = others.find(d); o != others.end()) v.owner = o->second.owner;
    return v;
  }

  std::string proposal(uint64_t floor = 0) const {
    return std::to_string(std::max(unix_ms() * 1000, floor));
  }

  Argv acquire_cmd(uint64_t d, uint64_t floor = 0) const {
    return RedisLink::eval(Script::kAcquire, {master_key(d), gen_key(d)}, {id, lease_ms, proposal(floor)});
  }

  void count_error_replies(const std::vector<Reply>& rs) {
    for (const auto& r : rs)
      if (reply_is_error(r.get())) {
        ctr.redis_errors.fetch_add(1);
        SDN_LOG_RATELIMITED(spdlog::level::warn, "cluster: Redis answered an error: {}",
                            reply_string(r.get()));
      }
  }

  void link_lost(const char* what) {
    ctr.redis_errors.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "cluster {}: Redis connection lost during {}: {}", id,
                        what, link.last_error());
    consume_pending_sigpipe();
    next_connect = Clock::now();
    backoff = milliseconds(50);
  }

  // ---- leadership ----

  void set_leader_snapshot(const std::string& role, std::optional<uint64_t> gen) {
    std::lock_guard l(snap_mu);
    if (gen) snap_leaders[role] = *gen;
    else snap_leaders.erase(role);
  }

  void gain_leader(const std::string& role, uint64_t gen, Clock::time_point sent) {
    auto& L = leaders[role];
    L.held = true;
    L.gen = gen;
    L.deadline = sent + cfg.lease;
    ctr.leases_acquired.fetch_add(1);
    set_leader_snapshot(role, gen);
    spdlog::info("cluster {}: leader of '{}' (generation {})", id, role, gen);
    if (L.ev.gained) L.ev.gained(gen);
  }

  enum class Why { kLost, kSelfDemoted, kStopped };

  void lose_leader(const std::string& role, Why why) {
    auto& L = leaders[role];
    if (!L.held) return;
    L.held = false;
    if (why == Why::kSelfDemoted) ctr.self_demotions.fetch_add(1);
    if (why == Why::kLost) ctr.leases_lost.fetch_add(1);
    set_leader_snapshot(role, std::nullopt);
    spdlog::log(why == Why::kStopped ? spdlog::level::info : spdlog::level::warn,
                "cluster {}: no longer leader of '{}' (generation {}){}", id, role, L.gen,
                why == Why::kSelfDemoted ? ": not renewed in time" : "");
    if (L.ev.lost) L.ev.lost();
  }

  // ---- switches ----

  void lose_switch(uint64_t d, const std::optional<LeaseValue>& other) {
    auto it = owned.find(d);
    if (it == owned.end()) return;
    const uint64_t gen = it->second.gen;
    owned.erase(it);
    ctr.leases_lost.fetch_add(1);
    if (other) others[d] = *other;
    spdlog::warn("cluster {}: lost switch {:016x} (generation {}) to {}", id, d, gen,
                 other ? other->owner : std::string("nobody"));
    tell(d, Role::kSlave, other ? std::max(other->gen, gen) : gen, false);
  }

  // Applies an acquire reply for switch d; `retake` = we held it and Redis lost the lease.
  void on_acquire_reply(uint64_t d, const redisReply* r, Clock::time_point sent) {
    if (reply_is_error(r) || reply_elements(r) < 2) return;  // counted by the caller; retried
    if (reply_int(reply_element(r, 0)) == 1) {
      auto gen = parse_u64(reply_string(reply_element(r, 1)));
      if (!gen) return;
      const bool fresh = reply_int(reply_element(r, 2)) == 1 && ever_seen.count(d) == 0;
      ever_seen.insert(d);
      free_since.erase(d);
      others.erase(d);
      auto& o = owned[d];
      o.gen = *gen;
      o.since = sent;
      o.deadline = sent + cfg.lease;
      ctr.leases_acquired.fetch_add(1);
      spdlog::info("cluster {}: master of switch {:016x} (generation {}{})", id, d, *gen,
                   fresh ? ", fresh" : "");
      if (connected.count(d) == 0) {  // disconnected meanwhile: give it back
        release[master_key(d)] = lease_value(id, *gen);
        owned.erase(d);
        return;
      }
      tell(d, Role::kMaster, *gen, fresh);
    } else {
      auto cur = parse_lease(reply_string(reply_element(r, 1)));
      if (owned.count(d) != 0) {
        lose_switch(d, cur);
      } else if (cur) {
        ever_seen.insert(d);
        others[d] = *cur;
        if (cur->owner != id) tell(d, Role::kSlave, cur->gen, false);
      }
    }
  }

  // ---- the loop ----

  void try_connect(Clock::time_point now) {
    if (link.via_sentinel()) ctr.sentinel_lookups.fetch_add(1);
    if (link.connect()) {
      if (ever_connected) {
        ctr.reconnects.fetch_add(1);
        spdlog::info("cluster {}: reconnected to Redis at {}", id, link.address());
      } else {
        spdlog::info("cluster {}: connected to Redis at {}", id, link.address());
      }
      ever_connected = true;
      backoff = milliseconds(50);
      next_renew = next_check = next_conn_refresh = now;
      std::lock_guard l(snap_mu);
      snap_connected = true;
      snap_address = link.address();
      return;
    }
    ctr.redis_errors.fetch_add(1);
    consume_pending_sigpipe();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "cluster {}: cannot reach Redis: {}", id, link.last_error());
    next_connect = now + backoff;
    // Capped low: a refused connection costs little, and after a Redis failover the new master
    // is found by the first attempt after Sentinel names it.
    backoff = std::min(backoff * 2, std::clamp(cfg.renew_interval, milliseconds(50), milliseconds(500)));
  }

  void handle(Event& e) {
    switch (e.kind) {
      case Event::kConnected:
        connected.insert(e.dpid);
        conn_remove.erase(e.dpid);
        conn_add.insert(e.dpid);
        told.erase(e.dpid);  // a new connection needs its role, whatever the old one had
        if (auto it = owned.find(e.dpid); it != owned.end())
          tell(e.dpid, Role::kMaster, it->second.gen, false);
        check_now = true;
        break;
      case Event::kDisconnected:
        connected.erase(e.dpid);
        conn_add.erase(e.dpid);
        conn_remove.insert(e.dpid);
        told.erase(e.dpid);
        free_since.erase(e.dpid);
        refused.erase(e.dpid);
        others.erase(e.dpid);
        if (auto it = owned.find(e.dpid); it != owned.end()) {
          // The others that still see the switch take it at once instead of after the lease.
          release[master_key(e.dpid)] = lease_value(id, it->second.gen);
          owned.erase(it);
        }
        break;
      case Event::kRefused:
        refused[e.dpid] = std::max(refused[e.dpid], e.gen);
        check_now = true;
        break;
      case Event::kLead: {
        auto& L = leaders[e.role];
        L.ev = std::move(e.ev);
        check_now = true;
        break;
      }
    }
  }

  void self_demote(Clock::time_point now) {
    for (auto it = owned.begin(); it != owned.end();) {
      if (now < it->second.deadline) {
        ++it;
        continue;
      }
      const uint64_t d = it->first;
      const uint64_t gen = it->second.gen;
      it = owned.erase(it);
      ctr.self_demotions.fetch_add(1);
      spdlog::warn("cluster {}: lease of switch {:016x} not renewed in time: acting as slave", id, d);
      tell(d, Role::kSlave, gen, false);
    }
    for (auto& entry : leaders)
      if (entry.second.held && now >= entry.second.deadline) lose_leader(entry.first, Why::kSelfDemoted);
  }

  void renew(Clock::time_point now) {
    std::vector<Argv> cmds;
    cmds.push_back(RedisLink::eval(Script::kHeartbeat, {member_key(id), prefix + "members"},
                                   {id, lease_ms, member_json, prefix + "member:"}));
    std::vector<std::string> keys, args{lease_ms};
    std::vector<uint64_t> dps;
    std::vector<std::string> roles;
    for (const auto& o : owned) {
      keys.push_back(master_key(o.first));
      args.push_back(lease_value(id, o.second.gen));
      dps.push_back(o.first);
    }
    for (const auto& L : leaders)
      if (L.second.held) {
        keys.push_back(leader_key(L.first));
        args.push_back(lease_value(id, L.second.gen));
        roles.push_back(L.first);
      }
    const bool have_renew = !keys.empty();
    if (have_renew) cmds.push_back(RedisLink::eval(Script::kRenew, keys, args));
    const bool refresh = now >= next_conn_refresh && !connected.empty();
    if (refresh) {
      std::vector<std::string> ck;
      for (uint64_t d : connected) ck.push_back(conn_key(d));
      cmds.push_back(RedisLink::eval(Script::kConn, ck, {id, lease_ms, "1"}));
    }
    const auto sent = Clock::now();
    auto res = link.run(cmds);
    if (!res) {
      ctr.renew_failures.fetch_add(1);
      link_lost("renewal");
      return;
    }
    count_error_replies(*res);
    // Live members.
    if (const redisReply* hb = (*res)[0].get(); hb != nullptr && hb->type == REDIS_REPLY_ARRAY) {
      std::vector<std::string> live;
      for (std::size_t i = 0; i < hb->elements; ++i) live.push_back(reply_string(hb->element[i]));
      std::sort(live.begin(), live.end());
      for (auto it = member_since.begin(); it != member_since.end();)
        it = std::binary_search(live.begin(), live.end(), it->first) ? std::next(it) : member_since.erase(it);
      for (const auto& m : live) member_since.try_emplace(m, now);
      members = std::move(live);
    }
    if (refresh) next_conn_refresh = now + cfg.lease / 3;
    if (!have_renew) return;
    const redisReply* rr = (*res)[1].get();
    if (reply_is_error(rr) || reply_elements(rr) != keys.size()) {
      ctr.renew_failures.fetch_add(1);
      return;
    }
    std::vector<uint64_t> retake;
    for (std::size_t i = 0; i < dps.size(); ++i) {
      const redisReply* e = reply_element(rr, i);
      if (reply_int(e, 0) == 1) {
        owned[dps[i]].deadline = sent + cfg.lease;
        continue;
      }
      const std::string v = reply_string(e);
      if (v.empty()) retake.push_back(dps[i]);  // Redis lost it (flush, failover): take it back
      else lose_switch(dps[i], parse_lease(v));
    }
    for (std::size_t j = 0; j < roles.size(); ++j) {
      const redisReply* e = reply_element(rr, dps.size() + j);
      if (reply_int(e, 0) == 1) leaders[roles[j]].deadline = sent + cfg.lease;
      else {
        lose_leader(roles[j], Why::kLost);
        check_now = true;  // free: may be ours again at once (a new generation)
      }
    }
    if (retake.empty()) return;
    std::vector<Argv> acq;
    for (uint64_t d : retake) acq.push_back(acquire_cmd(d, owned[d].gen + 1));
    const auto sent2 = Clock::now();
    auto res2 = link.run(acq);
    if (!res2) {
      link_lost("retaking leases");
      return;
    }
    count_error_replies(*res2);
    for (std::size_t i = 0; i < retake.size(); ++i) on_acquire_reply(retake[i], (*res2)[i].get(), sent2);
  }

  void check(Clock::time_point now, bool inspect) {
    std::vector<Argv> cmds;
    auto keys_of = [this](const std::set<uint64_t>& s) {
      std::vector<std::string> k;
      for (uint64_t d : s) k.push_back(conn_key(d));
      return k;
    };
    if (!conn_add.empty()) cmds.push_back(RedisLink::eval(Script::kConn, keys_of(conn_add), {id, lease_ms, "1"}));
    if (!conn_remove.empty())
      cmds.push_back(RedisLink::eval(Script::kConn, keys_of(conn_remove), {id, lease_ms, "0"}));
    if (!release.empty()) {
      std::vector<std::string> k, v;
      for (const auto& r : release) {
        k.push_back(r.first);
        v.push_back(r.second);
      }
      cmds.push_back(RedisLink::eval(Script::kRelease, k, v));
    }
    const std::vector<uint64_t> dps(connected.begin(), connected.end());
    std::size_t inspect_at = SIZE_MAX;
    if (inspect && !dps.empty()) {
      std::vector<std::string> k;
      for (uint64_t d : dps) {
        k.push_back(master_key(d));
        k.push_back(conn_key(d));
      }
      inspect_at = cmds.size();
      cmds.push_back(RedisLink::eval(Script::kInspect, k, {}));
    }
    std::vector<std::string> roles;
    std::size_t leaders_at = cmds.size();
    if (inspect)
      for (const auto& L : leaders)
        if (!L.second.held) {
          roles.push_back(L.first);
          cmds.push_back(RedisLink::eval(Script::kAcquire, {leader_key(L.first), leadergen_key(L.first)},
                                         {id, lease_ms, proposal()}));
        }
    if (cmds.empty()) return;
    const auto sent = Clock::now();
    auto res = link.run(cmds);
    if (!res) {
      link_lost("checking");
      return;  // pending conn updates and releases stay queued for the next connection
    }
    count_error_replies(*res);
    conn_add.clear();
    conn_remove.clear();
    release.clear();

    for (std::size_t j = 0; j < roles.size(); ++j) {
      const redisReply* r = (*res)[leaders_at + j].get();
      if (reply_is_error(r) || reply_elements(r) < 2) continue;
      if (reply_int(reply_element(r, 0)) == 1) {
        if (auto g = parse_u64(reply_string(reply_element(r, 1)))) gain_leader(roles[j], *g, sent);
      } else if (auto cur = parse_lease(reply_string(reply_element(r, 1))); cur && cur->owner == id) {
        // Our own lease from before a local demotion (or an earlier run with this id): free it,
        // so the next check takes it with a new generation.
        release[leader_key(roles[j])] = reply_string(reply_element(r, 1));
      }
    }
    if (inspect_at == SIZE_MAX) return;
    const redisReply* ir = (*res)[inspect_at].get();
    if (reply_is_error(ir) || reply_elements(ir) != 2 * dps.size()) return;

    const std::set<std::string> live(members.begin(), members.end());
    std::map<uint64_t, std::vector<std::string>> cand;
    std::vector<std::optional<LeaseValue>> lease(dps.size());
    std::map<std::string, std::size_t> load;
    for (std::size_t i = 0; i < dps.size(); ++i) {
      const std::string v = reply_string(reply_element(ir, 2 * i));
      if (!v.empty()) lease[i] = parse_lease(v);
      if (lease[i]) ++load[lease[i]->owner];
      std::vector<std::string> c{id};
      const redisReply* cr = reply_element(ir, 2 * i + 1);
      for (std::size_t k = 0; k < reply_elements(cr); ++k) {
        std::string m = reply_string(reply_element(cr, k));
        if (m != id && live.count(m) != 0) c.push_back(std::move(m));
      }
      cand[dps[i]] = std::move(c);
    }
    const auto target = assign(cand);

    std::vector<std::pair<uint64_t, uint64_t>> acquire;  // (dpid, generation floor)
    for (std::size_t i = 0; i < dps.size(); ++i) {
      const uint64_t d = dps[i];
      const auto& l = lease[i];
      auto own = owned.find(d);
      if (l && l->owner == id) {
        if (own != owned.end() && own->second.gen == l->gen) {
          tell(d, Role::kMaster, l->gen, false);
          auto rf = refused.find(d);
          if (rf != refused.end() && rf->second > l->gen) {
            // The switch knows a newer generation than ours (Redis lost increments): take a
            // generation above it, so our ROLE_REQUEST is no longer stale.
            release[master_key(d)] = lease_value(id, l->gen);
            acquire.emplace_back(d, rf->second + 1);
          }
        } else {
          release[master_key(d)] = lease_value(id, l->gen);  // stale: ours from before a demotion
        }
      } else if (l) {
        ever_seen.insert(d);
        free_since.erase(d);
        others[d] = *l;
        if (own != owned.end()) lose_switch(d, l);
        else tell(d, Role::kSlave, l->gen, false);
      } else {
        auto fs = free_since.try_emplace(d, now).first;
        auto t = target.find(d);
        const bool preferred = t != target.end() && t->second == id;
        if (own != owned.end()) acquire.emplace_back(d, own->second.gen + 1);  // Redis lost it
        else if (preferred || now - fs->second >= cfg.claim_delay) acquire.emplace_back(d, 0);
      }
    }
    refused.clear();

    if (cfg.balance) {
      std::map<std::string, std::size_t> share;  // switches the placement gives each member
      for (const auto& t : target) ++share[t.second];
      for (std::size_t i = 0; i < dps.size(); ++i) {
        const uint64_t d = dps[i];
        auto own = owned.find(d);
        if (own == owned.end() || !lease[i] || lease[i]->owner != id) continue;
        auto t = target.find(d);
        if (t == target.end() || t->second == id) continue;
        const std::string& p = t->second;
        auto since = member_since.find(p);
        // No flapping: only to a member live (in our view) for longer than a lease, only a
        // switch held for a lease, and only when the move narrows the gap between the two, or
        // we hold more than our share and the target fewer than we do. The second case breaks
        // chains such as 2/1/0 over three switches, where our extra switch belongs to a member
        // that holds one already and that member's switch belongs to the empty one: each move
        // puts a switch on its placement target, so the switches off target only decrease and
        // nothing moves back.
        if (since == member_since.end() || now - since->second <= cfg.lease) continue;
        if (now - own->second.since < cfg.lease) continue;
        const bool narrows = load[id] > load[p] + 1;
        const bool over_share = load[id] > share[id] && load[id] > load[p];
        if (!narrows && !over_share) continue;
        --load[id];
        ++load[p];
        ctr.handovers.fetch_add(1);
        release[master_key(d)] = lease_value(id, own->second.gen);
        const uint64_t gen = own->second.gen;
        owned.erase(own);
        spdlog::info("cluster {}: handing switch {:016x} over to {}", id, d, p);
        tell(d, Role::kSlave, gen, false);
      }
    }

    if (release.empty() && acquire.empty()) return;
    std::vector<Argv> cmds2;
    if (!release.empty()) {
      std::vector<std::string> k, v;
      for (const auto& r : release) {
        k.push_back(r.first);
        v.push_back(r.second);
      }
      cmds2.push_back(RedisLink::eval(Script::kRelease, k, v));
    }
    const std::size_t acq_at = cmds2.size();
    for (const auto& a : acquire) cmds2.push_back(acquire_cmd(a.first, a.second));
    const auto sent2 = Clock::now();
    auto res2 = link.run(cmds2);
    if (!res2) {
      link_lost("acquiring");
      return;
    }
    count_error_replies(*res2);
    release.clear();
    for (std::size_t j = 0; j < acquire.size(); ++j) {
      const redisReply* r = (*res2)[acq_at + j].get();
      on_acquire_reply(acquire[j].first, r, sent2);
    }
  }

  void publish_snapshot() {
    std::lock_guard l(snap_mu);
    snap_members = members;
    snap_masters.clear();
    for (const auto& o : owned) snap_masters[o.first] = o.second.gen;
    snap_switches.clear();
    for (uint64_t d : connected) snap_switches[d] = switch_view(d);
    snap_connected = link.connected();
    if (link.connected()) snap_address = link.address();
  }

  std::size_t held_leaders() const {
    std::size_t n = 0;
    for (const auto& L : leaders) n += L.second.held ? 1 : 0;
    return n;
  }

  Clock::time_point next_wake() const {
    auto t = Clock::now() + std::chrono::seconds(1);
    if (!link.connected()) t = std::min({t, next_connect, next_renew});
    else t = std::min({t, next_renew, next_check});
    for (const auto& o : owned) t = std::min(t, o.second.deadline);
    for (const auto& L : leaders)
      if (L.second.held) t = std::min(t, L.second.deadline);
    return t;
  }

  void run() {
    block_sigpipe();
    try_connect(Clock::now());
    {
      std::lock_guard l(ev_mu);
      first_attempt_done = true;
    }
    start_cv.notify_all();
    publish_snapshot();
    std::deque<Event> evs;
    for (;;) {
      {
        std::unique_lock l(ev_mu);
        ev_cv.wait_until(l, next_wake(), [this] { return stopping || (!frozen && !events.empty()); });
        ev_cv.wait(l, [this] { return stopping || !frozen; });
        if (stopping) break;
        evs.swap(events);
      }
      for (auto& e : evs) handle(e);
      evs.clear();
      auto now = Clock::now();
      self_demote(now);
      if (!link.connected() && now >= next_connect) try_connect(now);
      if (now >= next_renew) {
        next_renew = now + cfg.renew_interval;
        if (link.connected()) renew(now);
        else if (!owned.empty() || held_leaders() > 0) ctr.renew_failures.fetch_add(1);
      }
      now = Clock::now();
      if (link.connected()) {
        const bool due = check_now || now >= next_check;
        if (due) {
          next_check = now + cfg.check_interval;
          check_now = false;
        }
        check(now, due);
      }
      publish_snapshot();
    }
    shutdown();
  }

  // Gives every lease back (so the others take over at once) and leaves the member list.
  void shutdown() {
    if (!link.connected() && ever_connected) try_connect(Clock::now());
    std::vector<std::string> k, v;
    for (const auto& o : owned) {
      k.push_back(master_key(o.first));
      v.push_back(lease_value(id, o.second.gen));
    }
    for (const auto& L : leaders)
      if (L.second.held) {
        k.push_back(leader_key(L.first));
        v.push_back(lease_value(id, L.second.gen));
      }
    for (const auto& r : release) {
      k.push_back(r.first);
      v.push_back(r.second);
    }
    if (link.connected()) {
      std::vector<Argv> cmds;
      if (!k.empty()) cmds.push_back(RedisLink::eval(Script::kRelease, k, v));
      std::vector<std::string> ck;
      for (uint64_t d : connected) ck.push_back(conn_key(d));
      for (uint64_t d : conn_remove) ck.push_back(conn_key(d));
      if (!ck.empty()) cmds.push_back(RedisLink::eval(Script::kConn, ck, {id, lease_ms, "0"}));
      cmds.push_back({"DEL", member_key(id)});
      cmds.push_back({"SREM", prefix + "members", id});
      if (!link.run(cmds)) ctr.redis_errors.fetch_add(1);
    }
    const auto mine = owned;
    owned.clear();
    for (const auto& o : mine) tell(o.first, Role::kSlave, o.second.gen, false);
    for (auto& L : leaders) lose_leader(L.first, Why::kStopped);
    link.drop();
    members.clear();
    connected.clear();
    publish_snapshot();
    std::lock_guard l(snap_mu);
    snap_switches.clear();
  }

  // ---- app-thread side (app_mu held) ----
  std::optional<std::vector<Reply>> app_run(const std::vector<Argv>& cmds) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!app_link.connected()) {
        if (app_link.via_sentinel()) ctr.sentinel_lookups.fetch_add(1);
        if (!app_link.connect()) {
          ctr.redis_errors.fetch_add(1);
          consume_pending_sigpipe();
          SDN_LOG_RATELIMITED(spdlog::level::warn, "cluster {}: cannot reach Redis: {}", id,
                              app_link.last_error());
          return std::nullopt;
        }
      }
      if (auto r = app_link.run(cmds)) {
        count_error_replies(*r);
        return r;
      }
      ctr.redis_errors.fetch_add(1);
      consume_pending_sigpipe();
    }
    return std::nullopt;
  }
};

// ---- Cluster ----

Cluster::Cluster(ClusterConfig cfg) : cfg_(std::move(cfg)), impl_(std::make_unique<Impl>(cfg_)) {}

Cluster::~Cluster() { stop(); }

const std::string& Cluster::instance_id() const { return impl_->id; }

Expected<void, std::string> Cluster::start() {
  if (auto ok = check_cluster_config(cfg_); !ok) return ok;
  auto& m = *impl_;
  if (m.thread.joinable()) return {};
  {
    std::lock_guard l(m.ev_mu);
    m.stopping = false;
    m.first_attempt_done = false;
  }
  m.member_json = nlohmann::json{{"id", m.id}, {"pid", ::getpid()}, {"started", unix_ms()}}.dump();
  m.thread = std::thread([&m] { m.run(); });
  // The first connection attempt is bounded by the timeouts: after start() returns,
  // redis_connected() and state() say whether Redis was there.
  std::unique_lock l(m.ev_mu);
  m.start_cv.wait(l, [&m] { return m.first_attempt_done; });
  return {};
}

void Cluster::stop() {
  auto& m = *impl_;
  {
    std::lock_guard l(m.ev_mu);
    if (!m.thread.joinable()) return;
    m.stopping = true;
  }
  m.ev_cv.notify_all();
  m.thread.join();
}

void Cluster::attach(southbound::RoleSink* sink) {
  std::lock_guard l(impl_->sink_mu);
  impl_->sink = sink;
}

void Cluster::switch_connected(uint64_t dpid) { impl_->post({Event::kConnected, dpid, 0, {}, {}}); }

void Cluster::switch_disconnected(uint64_t dpid) {
  impl_->post({Event::kDisconnected, dpid, 0, {}, {}});
}

void Cluster::mastership_refused(uint64_t dpid, uint64_t generation) {
  impl_->post({Event::kRefused, dpid, generation, {}, {}});
}

void Cluster::lead(const std::string& role, LeaderEvents ev) {
  impl_->post({Event::kLead, 0, 0, role, std::move(ev)});
}

bool Cluster::is_leader(const std::string& role) const {
  std::lock_guard l(impl_->snap_mu);
  return impl_->snap_leaders.count(role) != 0;
}

bool Cluster::fenced_set(const std::string& role, const std::string& key, const std::string& value) {
  auto& m = *impl_;
  std::optional<uint64_t> gen;
  {
    std::lock_guard l(m.snap_mu);
    if (auto it = m.snap_leaders.find(role); it != m.snap_leaders.end()) gen = it->second;
  }
  if (!gen) {
    m.ctr.fenced_writes_refused.fetch_add(1);
    return false;
  }
  std::lock_guard l(m.app_mu);
  auto r = m.app_run({RedisLink::eval(Script::kFencedSet, {m.leader_key(role), m.prefix + key},
                                      {lease_value(m.id, *gen), value, "0"})});
  if (r && reply_int((*r)[0].get(), 0) == 1) return true;
  m.ctr.fenced_writes_refused.fetch_add(1);
  return false;
}

std::optional<std::string> Cluster::get(const std::string& key) {
  auto& m = *impl_;
  std::lock_guard l(m.app_mu);
  auto r = m.app_run({{"GET", m.prefix + key}});
  if (!r) return std::nullopt;
  const redisReply* rep = (*r)[0].get();
  if (rep == nullptr || rep->type != REDIS_REPLY_STRING) return std::nullopt;
  return reply_string(rep);
}

bool Cluster::set(const std::string& key, const std::string& value, std::chrono::milliseconds ttl) {
  auto& m = *impl_;
  std::lock_guard l(m.app_mu);
  Argv cmd{"SET", m.prefix + key, value};
  if (ttl.count() > 0) {
    cmd.emplace_back("PX");
    cmd.push_back(std::to_string(ttl.count()));
  }
  auto r = m.app_run({cmd});
  return r && !reply_is_error((*r)[0].get());
}

ClusterCounters Cluster::counters() const {
  const auto& c = impl_->ctr;
  ClusterCounters o;
  o.leases_acquired = c.leases_acquired.load();
  o.leases_lost = c.leases_lost.load();
  o.handovers = c.handovers.load();
  o.renew_failures = c.renew_failures.load();
  o.redis_errors = c.redis_errors.load();
  o.reconnects = c.reconnects.load();
  o.sentinel_lookups = c.sentinel_lookups.load();
  o.fenced_writes_refused = c.fenced_writes_refused.load();
  o.self_demotions = c.self_demotions.load();
  return o;
}

std::map<uint64_t, uint64_t> Cluster::masters() const {
  std::lock_guard l(impl_->snap_mu);
  return impl_->snap_masters;
}

std::vector<std::string> Cluster::members() const {
  std::lock_guard l(impl_->snap_mu);
  return impl_->snap_members;
}

bool Cluster::redis_connected() const {
  std::lock_guard l(impl_->snap_mu);
  return impl_->snap_connected;
}

std::string Cluster::redis_address() const {
  std::lock_guard l(impl_->snap_mu);
  return impl_->snap_address;
}

void Cluster::freeze_for_test(bool frozen) {
  {
    std::lock_guard l(impl_->ev_mu);
    impl_->frozen = frozen;
  }
  impl_->ev_cv.notify_all();
}

nlohmann::json Cluster::state() const {
  const auto c = counters();
  auto& m = *impl_;
  std::lock_guard l(m.snap_mu);
  nlohmann::json masters = nlohmann::json::object();
  for (const auto& e : m.snap_masters) masters[hex16(e.first)] = e.second;
  nlohmann::json switches = nlohmann::json::object();
  for (const auto& e : m.snap_switches)
    switches[hex16(e.first)] = {{"role", e.second.role == Role::kEqual ? "waiting" : southbound::role_name(e.second.role)},
                                {"generation", e.second.gen},
                                {"owner", e.second.owner}};
  nlohmann::json leaders = nlohmann::json::object();
  for (const auto& e : m.snap_leaders) leaders[e.first] = e.second;
  return {{"instance_id", m.id},
          {"name", cfg_.name},
          {"redis", {{"connected", m.snap_connected}, {"address", m.snap_address}}},
          {"members", m.snap_members},
          {"masters", masters},
          {"switches", switches},
          {"leaderships", leaders},
          {"counters",
           {{"leases_acquired", c.leases_acquired},
            {"leases_lost", c.leases_lost},
            {"handovers", c.handovers},
            {"renew_failures", c.renew_failures},
            {"redis_errors", c.redis_errors},
            {"reconnects", c.reconnects},
            {"sentinel_lookups", c.sentinel_lookups},
            {"fenced_writes_refused", c.fenced_writes_refused},
            {"self_demotions", c.self_demotions}}}};
}

}  // namespace sdn::cluster
