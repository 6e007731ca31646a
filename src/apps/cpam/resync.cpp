// CPAM fault recovery in the app (docs/faults-cpam.md): the archive records written as state
// changes, their reload at start, and the resync of a switch that (re)connects, from its flow
// stats: keep what is right, delete what is stale or unknown in CPAM's cookie range, add what is
// missing, adopt the sessions whose flows are installed but whose bindings were lost.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "apps/cpam/cpam.hpp"
#include "apps/cpam/flows.hpp"
#include "core/log.hpp"

namespace sdn::apps::cpam {

using southbound::SwitchContext;

namespace {
bool live_state(VipState s) { return s == VipState::kReserved || s == VipState::kPrimary || s == VipState::kGrace; }
}  // namespace

// ---- reload ------------------------------------------------------------------------------

void CpamService::recover() {
  if (!cfg_.recovery || !due_) return;
  const std::string app = due_->app_id().empty() ? std::string("cpam") : due_->app_id();
  data::Query q;
  q.key = fmt::format("{}@{}", recovery::kVipsKey, app);
  q.latest = 1;
  auto r = due_->get(q);
  if (!r) {
    spdlog::warn("cpam: no reload ({}): starting at epoch 1", r.error());
    return;
  }
  if (r->empty() || !r->back().value.is_json()) return;  // first run
  auto p = recovery::vips_from_json(r->back().value.json(), dir_, cfg_.pool_size);
  if (!p) {
    recover_errors_.fetch_add(1);
    spdlog::error("cpam: the archived VIP state is unusable ({}): starting at epoch 1", p.error());
    return;
  }
  boot_ = p->boot + 1;
  const auto now = Clock::now();
  const int64_t unix_now = unix_ms();
  const auto next = now + std::chrono::milliseconds(std::max<int64_t>(0, p->next_rotation_ms - unix_now));
  auto life = std::make_unique<VipLifecycle>(cfg_, table_, dir_.hosts.size());
  recovered_.skipped = life->restore(*p, now, unix_now, next);
  recovered_.epoch = p->epoch;

  // Bindings: every live one was archived within the last lease before the newest record. In a
  // cluster several instances share these keys and their bindings outlive any one of them on the
  // switches: the switches' masters adopt them from their flows instead.
  data::Query last;
  last.key = fmt::format("{}*@{}", recovery::kSessionsPrefix, app);
  last.latest = 1;
  auto newest = due_->get(last);
  if (store_ == nullptr && newest && !newest->empty()) {
    data::Query all;
    all.key = last.key;
    all.from_ns = newest->back().ts_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.session_lease).count();
    auto recs = due_->get(all);
    if (!recs) {
      recover_errors_.fetch_add(1);
      spdlog::error("cpam: cannot read the archived bindings: {}", recs.error());
    } else {
      std::map<unsigned, recovery::SessionLog> logs;
      for (const auto& rec : *recs) {
        const auto at = rec.key.find(recovery::kSessionsPrefix);
        const auto end = rec.key.find('@');
        unsigned shard = 0;
        if (at == std::string::npos || !rec.value.is_json() ||
            std::sscanf(rec.key.c_str() + at + recovery::kSessionsPrefix.size(), "%u", &shard) != 1 || shard > 255 ||
            end == std::string::npos) {
          recover_errors_.fetch_add(1);
          continue;
        }
        logs[shard].apply(rec.value.json(), dir_, cfg_.pool_size);
      }
      for (auto& [shard, log] : logs) {
        if (log.bad != 0) recover_errors_.fetch_add(log.bad);
        if (recovered_.sessions.size() <= shard) recovered_.sessions.resize(shard + 1);
        for (const auto& [id, b] : log.live) {
          // A binding's VIPs are never Free in a consistent archive (allocation is written
          // ahead); if one is, take it out of the pool rather than hand it out again.
          for (auto [v, owner] : {std::pair{b.vc, b.client}, std::pair{b.vs, b.server}})
            if (table_->load(v).state == VipState::kFree) life->claim(v, owner, now);
          table_->add_session(b.vc);
          table_->add_session(b.vs);
          recovered_.sessions[shard].push_back(b);
          ++recovered_.bindings;
        }
      }
    }
  }
  recovered_.life = std::move(life);
  recovered_.reloaded = true;
  spdlog::info("cpam: reloaded from the archive: epoch {} (boot {}), {} live bindings, {} bad VIP entries skipped",
               p->epoch, boot_, recovered_.bindings, recovered_.skipped);
}

// The engine's state, archived after each change that matters. `sync` waits for the commit: a
// rotation's reservation is written ahead of any rule or DNS answer using it, so a crash can
// never lose an allocation and a reloaded controller never hands the same VIP out twice.
bool Cpam::persist_vips(std::string_view phase, bool sync) {
  if (life_ == nullptr) return true;
  // Cluster: the shared state first (fenced: refused once another instance leads); the archive
  // keeps its record as before.
  if (svc_->clustered() && !write_shared(phase)) return false;
  if (!cfg_.recovery || !svc_->due_) return true;
  auto p = life_->export_state(rt_->now(), unix_ms());
  p.boot = svc_->boot_;
  auto write = [weak = std::weak_ptr<CpamService>(svc_), p = std::move(p), phase = std::string(phase)] {
    if (auto svc = weak.lock()) svc->publish(recovery::kVipsKey, recovery::vips_to_json(p, svc->dir_, phase), 0);
  };
  if (!sync) {
    // The record's JSON is built and written on the committer's thread, in order with the
    // commit waits there (at 10,000 hosts and T = 1 s it was 8 ms of shard 0's loop per phase,
    // three phases a second, in front of that shard's PacketIns); this loop copies the state.
    off_loop(std::move(write));
    return true;
  }
  if (cfg_.commit_off_loop) svc_->committer_->wait_idle();  // the records queued before this one first
  write();
  const auto t0 = Clock::now();
  if (!svc_->due_->sync(std::chrono::milliseconds(1000))) {
    svc_->vips_sync_failed_.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::err, "cpam: the VIP state ({}) was not committed to the archive in 1 s", phase);
  }
  const auto us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
  core::raise_max(svc_->vips_sync_max_us_, us);
  return true;
}

// This shard's bindings bound or due for renewal since the last record, and those that ended.
void Cpam::persist_sessions(Clock::time_point now, bool all) {
  if (svc_->clustered()) {
    // Cluster: every owned binding and the VIPs they pin, renewed in Redis under this
    // instance's id with a TTL (cluster_state.cpp); the archive log is not kept (its keys are
    // shared by the instances, and a reload never reads it in a cluster).
    nlohmann::json bound = nlohmann::json::array();
    std::set<uint32_t> pins;
    for (const auto& [id, key] : by_id_) {
      auto it = sessions_.find(key);
      if (it == sessions_.end()) continue;
      const Binding& b = it->second;
      pins.insert(b.vc);
      pins.insert(b.vs);
      bound.push_back(recovery::binding_to_json({b.id, b.proto, b.client, b.server, b.vc, b.vs, b.cport, b.sport}, svc_->dir_));
    }
    ended_.clear();
    svc_->link_->put_sessions(shard_, std::move(bound), std::move(pins));
    return;
  }
  if (!cfg_.recovery || !svc_->due_) return;
  nlohmann::json bound = nlohmann::json::array();
  for (const auto& [id, key] : by_id_) {
    auto it = sessions_.find(key);
    if (it == sessions_.end()) continue;
    Binding& b = it->second;
    if (!all && b.persisted != Clock::time_point{} && now - b.persisted < cfg_.session_lease / 2) continue;
    b.persisted = now;
    bound.push_back(recovery::binding_to_json({b.id, b.proto, b.client, b.server, b.vc, b.vs, b.cport, b.sport}, svc_->dir_));
  }
  if (bound.empty() && ended_.empty()) return;
  svc_->publish(fmt::format("{}{}", recovery::kSessionsPrefix, shard_),
                {{"boot", svc_->boot_}, {"next_id", next_id_}, {"bound", std::move(bound)}, {"ended", ended_}}, 0);
  ended_.clear();
}

void Cpam::restore_sessions() {
  // Ids of this run start past every earlier run's (boot in bits 36..43): a new session never
  // takes the cookie of a flow still installed from before.
  next_id_ = (svc_->boot_ & 0xff) << 36;
  if (svc_->clustered()) next_id_ |= uint64_t{VipLifecycle::uniform(1u << 31)} << 4;  // unique across instances
  auto& rec = svc_->recovered_;
  const auto now = rt_->now();
  if (rec.reloaded) hold_until_ = now + cfg_.recovery_hold;
  if (shard_ == 0)  // bindings of shards this run does not have give their references back
    for (size_t s = rt_->shard_count(); s < rec.sessions.size(); ++s)
      for (const auto& b : rec.sessions[s]) {
        svc_->vips().release_session(b.vc);
        svc_->vips().release_session(b.vs);
      }
  if (shard_ >= rec.sessions.size()) return;
  for (const auto& pb : rec.sessions[shard_]) {
    Binding b;
    b.client = pb.client;
    b.server = pb.server;
    b.vc = pb.vc;
    b.vs = pb.vs;
    b.cport = pb.cport;
    b.sport = pb.sport;
    b.proto = pb.proto;
    b.id = pb.id;
    b.owner = shard_;
    b.flowless_since = now + cfg_.recovery_hold;  // its flows get the hold to be confirmed
    const Key k = client_key(b);
    if (!sessions_.try_emplace(k, b).second) {
      svc_->vips().release_session(b.vc);
      svc_->vips().release_session(b.vs);
      continue;
    }
    by_id_.emplace(b.id, k);
  }
  live_sessions_.store(by_id_.size(), std::memory_order_relaxed);
  rec.sessions[shard_].clear();
}

// ---- resync ------------------------------------------------------------------------------

struct Cpam::ResyncJob {
  uint64_t dpid = 0;
  Clock::time_point t0{};
  std::mutex mu;  // owner shards add their verdicts concurrently
  size_t pending = 0;
  recovery::Diff diff;
  std::vector<Binding> replicas;  // server keys the switch's shard must hold (kFirstRev kept)
  uint64_t session_kept = 0, adopted = 0;
};

std::vector<southbound::CookieRange> Cpam::kept_cookies() const {
  if (!cfg_.recovery) return {};
  return {{kCookie, kCookieMask}};
}

void Cpam::on_switch_up(SwitchContext& sw) {
  guard_switch_up(sw);
  if (rt_ != nullptr)
    for (unsigned s = 0; s < rt_->shard_count(); ++s)
      rt_->post(s, [svc = svc_, s, dpid = sw.dpid()] {
        if (Cpam* t = svc->instance(s)) std::erase(t->down_, dpid);
      });
  if (!cfg_.recovery) return;
  ofp::FlowStatsRequest fr;
  fr.table_id = ofp::kTableAll;
  fr.cookie = kCookie;
  fr.cookie_mask = kCookieMask;
  ofp::MultipartRequest req;
  req.type = ofp::MultipartType::kFlow;
  req.body = fr;
  auto acc = std::make_shared<std::vector<ofp::FlowStats>>();
  const uint64_t dpid = sw.dpid();
  const auto t0 = rt_ ? rt_->now() : Clock::now();
  sw.send_request(std::move(req), [this, acc, dpid, t0](const ofp::Message* reply, const ofp::ErrorMsg* err, bool more) {
    if (reply != nullptr)
      if (const auto* mp = std::get_if<ofp::MultipartReply>(&reply->body))
        if (const auto* fs = std::get_if<std::vector<ofp::FlowStats>>(&mp->body))
          acc->insert(acc->end(), fs->begin(), fs->end());
    if (more) return;
    if (reply == nullptr) {
      resync_errors_.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: switch {:016x}: no flow stats ({}): not resynchronised", dpid,
                          err != nullptr ? "error" : "disconnected");
      return;
    }
    if (!stopped_) run_resync(dpid, std::move(*acc), t0, 0);
  });
}

// In a cluster, a switch taken over from another instance holds that instance's sessions: they
// are judged against the VIP states, so the resync waits until this instance mirrors the
// leader's table (or leads); judged against an empty table every one of them would be deleted.
void Cpam::run_resync(uint64_t dpid, std::vector<ofp::FlowStats> flows, Clock::time_point t0, int tries) {
  if (svc_->clustered() && !svc_->state_ready_.load(std::memory_order_acquire) && rt_ != nullptr) {
    if (tries == 0) svc_->resync_deferred_.fetch_add(1);
    if (tries % 50 == 49)
      SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: switch {:016x}: resync waits for the shared VIP state", dpid);
    rt_->call_after(shard_, cfg_.cluster_poll, [this, dpid, f = std::move(flows), t0, tries]() mutable {
      if (!stopped_) run_resync(dpid, std::move(f), t0, tries + 1);
    });
    return;
  }
  resync(dpid, std::move(flows), t0);
}

recovery::VipExpect Cpam::expect_vip(uint64_t dpid, uint32_t vip) {
  recovery::VipExpect e;
  const auto v = svc_->vips().load(vip);
  if (!live_state(v.state) || v.owner == kNone || v.owner >= svc_->dir_.hosts.size()) return e;
  const uint32_t ip = svc_->dir_.hosts[v.owner].ip;
  const auto mac = view_.mac_of(ip);
  const auto* h = mac ? view_.host(*mac) : nullptr;
  if (h == nullptr) {
    e.kind = recovery::VipExpect::kAny;  // not located yet: its rule may well be right
    return e;
  }
  if (h->at.dpid != dpid) return e;  // the host is elsewhere
  e.kind = recovery::VipExpect::kExact;
  e.rule = flows::vip_rule(cfg_, vip, ip, *mac, h->at.port);
  return e;
}

std::span<const uint32_t> Cpam::live_vips_of(uint32_t host) {
  const auto& table = svc_->vips();
  const size_t hosts = svc_->dir_.hosts.size();
  if (const uint64_t version = table.live_version(); version != live_.version) {
    // One walk of the pool (a change during it moves the version on: the next call rebuilds),
    // then a counting sort of what it saw by owner.
    live_.version = version;
    std::vector<std::pair<uint32_t, uint32_t>> seen;  // (owner, vip)
    for (uint32_t v = 0; v < table.size(); ++v)
      if (const auto x = table.load(v); live_state(x.state) && x.owner < hosts) seen.emplace_back(x.owner, v);
    live_.start.assign(hosts + 1, 0);
    for (const auto& [owner, v] : seen) ++live_.start[owner + 1];
    for (size_t h = 1; h < live_.start.size(); ++h) live_.start[h] += live_.start[h - 1];
    live_.vips.resize(seen.size());
    std::vector<uint32_t> at(live_.start.begin(), live_.start.end() - 1);
    for (const auto& [owner, v] : seen) live_.vips[at[owner]++] = v;
  }
  if (host + 1 >= live_.start.size()) return {};
  return std::span<const uint32_t>(live_.vips).subspan(live_.start[host], live_.start[host + 1] - live_.start[host]);
}

std::vector<ofp::FlowMod> Cpam::wanted_vip_rules(uint64_t dpid) {
  std::vector<ofp::FlowMod> out;
  absl::flat_hash_set<uint32_t> seen;  // a host index once, even if two MACs there claim its address
  for (const auto& [mac, loc] : view_.hosts_on(dpid)) {
    const auto h = svc_->dir_.find_ip(loc.ipv4);
    if (!h || !seen.insert(*h).second) continue;
    for (uint32_t v : live_vips_of(*h)) {
      if (auto e = expect_vip(dpid, v); e.kind == recovery::VipExpect::kExact) {
        out.push_back(std::move(e.rule));
        svc_->note_rule(v, dpid);
      }
    }
  }
  return out;
}

// On the switch's shard: the VIP rules are judged here; session flows go to their owner shards,
// which know the bindings; the last verdict sends one batch (deletes, then adds) to the switch.
void Cpam::resync(uint64_t dpid, std::vector<ofp::FlowStats> flows, Clock::time_point t0) {
  auto job = std::make_shared<ResyncJob>();
  job->dpid = dpid;
  job->t0 = t0;
  // A VIP rule the switch holds and keeps (or gets replaced) is where a quarantine must delete it.
  auto judge = [this, dpid](uint32_t v) {
    auto e = expect_vip(dpid, v);
    if (e.kind != recovery::VipExpect::kStale) svc_->note_rule(v, dpid);
    return e;
  };
  job->diff = recovery::diff_switch(cfg_, flows, judge, wanted_vip_rules(dpid));
  std::map<unsigned, std::vector<recovery::SessionFlow>> by_owner;
  for (auto& s : job->diff.sessions) {
    if (rt_ != nullptr && s.owner < rt_->shard_count() && svc_->instance(s.owner) != nullptr) {
      by_owner[s.owner].push_back(s);
    } else {  // no such shard in this run
      job->diff.deletes.push_back(recovery::delete_cookie(cfg_, s.cookie));
      ++job->diff.deleted;
    }
  }
  job->diff.sessions.clear();
  job->pending = by_owner.size();
  if (by_owner.empty()) {
    rt_->with_switch(dpid, [svc = svc_, job, rt = rt_](SwitchContext& sw) {
      if (Cpam* t = svc->instance(rt->current_shard())) t->finish_resync(job, sw);
    });
    return;
  }
  // (a structured binding cannot be captured before clang 16: the fuzz preset builds with clang 14)
  for (auto& entry : by_owner) {
    const auto owner = entry.first;
    rt_->post(owner, [svc = svc_, owner, job, list = std::move(entry.second)] {
      if (Cpam* t = svc->instance(owner)) t->judge_sessions(job, list);
    });
  }
}

// On an owner shard: a flow of a known binding is kept (a first-hop flow gives its binding its
// flow reference back); a first-hop flow of an unknown binding whose VIPs are live and owned as
// it says is adopted (the binding is rebuilt from it: its match and rewrite carry all of it);
// transit and repair flows stay while both their VIPs are live. Everything else is deleted.
void Cpam::judge_sessions(const std::shared_ptr<ResyncJob>& job, const std::vector<recovery::SessionFlow>& flows) {
  auto& vips = svc_->vips();
  const auto now = rt_->now();
  std::vector<uint64_t> doomed;
  std::vector<Binding> replicas;
  uint64_t kept = 0, adopted = 0;
  auto live_vip = [&](uint32_t ip) { return svc_->in_pool(ip) && live_state(vips.load(svc_->vip_index(ip)).state); };
  for (const auto& f : flows) {
    const auto kind = static_cast<CookieKind>(f.kind);
    const bool first = kind == CookieKind::kFirstFwd || kind == CookieKind::kFirstRev;
    const uint8_t bit = kind == CookieKind::kFirstFwd ? 1 : 2;
    auto known = kind == CookieKind::kRepair ? by_id_.end() : by_id_.find(f.id);
    if (known != by_id_.end()) {
      auto bi = sessions_.find(known->second);
      if (bi != sessions_.end()) {
        Binding& b = bi->second;
        if (first) {
          b.edge[bit - 1] = job->dpid;
          confirm(b.id, bit);
          if (b.live != 0) b.flowless_since = now;
          if (kind == CookieKind::kFirstRev) replicas.push_back(b);
        }
        ++kept;
        continue;
      }
    }
    if (!first) {
      if (live_vip(f.src) && live_vip(f.dst)) {
        ++kept;
      } else {
        doomed.push_back(f.cookie);
      }
      continue;
    }
    // Adoption: fwd matches (client real -> server VIP) and rewrites the source to the client
    // VIP; rev matches (server real -> client VIP) and rewrites it to the server VIP.
    const auto src_host = svc_->dir_.find_ip(f.src);
    bool ok = src_host && f.set_src && svc_->in_pool(f.dst) && svc_->in_pool(*f.set_src) && f.owner == shard_;
    Binding b;
    if (ok) {
      const uint32_t vdst = svc_->vip_index(f.dst), vsrc = svc_->vip_index(*f.set_src);
      const auto dv = vips.load(vdst), sv = vips.load(vsrc);
      ok = live_state(dv.state) && live_state(sv.state) && sv.owner == *src_host && dv.owner != kNone &&
           dv.owner != *src_host;
      if (ok) {
        const bool fwd = kind == CookieKind::kFirstFwd;
        b.client = fwd ? *src_host : dv.owner;
        b.server = fwd ? dv.owner : *src_host;
        b.vc = fwd ? vsrc : vdst;
        b.vs = fwd ? vdst : vsrc;
        b.cport = fwd ? f.sport : f.dport;
        b.sport = fwd ? f.dport : f.sport;
      }
    }
    if (ok) {
      b.proto = f.proto;
      b.id = f.id;
      b.owner = shard_;
      b.flowless_since = now;
      const Key k = client_key(b);
      ok = !sessions_.contains(k) && !by_id_.contains(b.id);
      if (ok) {
        vips.add_session(b.vc);
        vips.add_session(b.vs);
        sessions_.emplace(k, b);
        by_id_.emplace(b.id, k);
        live_sessions_.store(by_id_.size(), std::memory_order_relaxed);
        auto& nb = sessions_.find(k)->second;
        nb.edge[bit - 1] = job->dpid;
        confirm(nb.id, bit);
        if (kind == CookieKind::kFirstRev) replicas.push_back(nb);
        ++adopted;
        ++kept;
        SDN_LOG_RATELIMITED(spdlog::level::info, "cpam: adopted session {} ({} -> {}) from switch {:016x}", b.id,
                            svc_->dir_.hosts[b.client].name, svc_->dir_.hosts[b.server].name, job->dpid);
        continue;
      }
    }
    doomed.push_back(f.cookie);
  }
  std::lock_guard lock(job->mu);
  for (uint64_t c : doomed) {
    auto del = recovery::delete_cookie(cfg_, c);
    if (std::find(job->diff.deletes.begin(), job->diff.deletes.end(), del) == job->diff.deletes.end())
      job->diff.deletes.push_back(del);
    ++job->diff.deleted;
  }
  job->session_kept += kept;
  job->adopted += adopted;
  for (auto& r : replicas) job->replicas.push_back(std::move(r));
  if (--job->pending == 0)
    rt_->with_switch(job->dpid, [svc = svc_, job, rt = rt_](SwitchContext& sw) {
      if (Cpam* t = svc->instance(rt->current_shard())) t->finish_resync(job, sw);
    });
}

void Cpam::finish_resync(const std::shared_ptr<ResyncJob>& job, SwitchContext& sw) {
  for (const auto& b : job->replicas) sessions_.try_emplace(server_key(b), b);
  std::vector<ofp::Body> batch;
  for (auto& d : job->diff.deletes) batch.emplace_back(std::move(d));
  for (auto& a : job->diff.adds) batch.emplace_back(std::move(a));
  const uint64_t kept = job->diff.kept + job->session_kept, deleted = job->diff.deleted, added = job->diff.adds.size();
  resyncs_.inc();
  resync_kept_.inc(kept);
  resync_deleted_.inc(deleted);
  resync_added_.inc(added);
  resync_adopted_.inc(job->adopted);
  auto done = [svc = svc_, job, kept, deleted, added, rt = rt_](const southbound::BatchResult& r) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>((rt ? rt->now() : Clock::now()) - job->t0).count();
    svc->resync_last_us_.store(static_cast<uint64_t>(us));
    core::raise_max(svc->resync_max_us_, static_cast<uint64_t>(us));
    if (!r.ok) {
      if (Cpam* t = svc->instance(rt->current_shard())) t->resync_errors_.inc();
    }
    spdlog::info("cpam: switch {:016x} resynchronised in {:.1f} ms: {} flows kept, {} deleted, {} added, {} sessions "
                 "adopted{}",
                 job->dpid, static_cast<double>(us) / 1000.0, kept, deleted, added, job->adopted,
                 r.ok ? "" : fmt::format(" (switch error type {} code {})", r.error.type, r.error.code));
  };
  if (batch.empty()) {
    done(southbound::BatchResult{});
    return;
  }
  sw.send_batch(std::move(batch), southbound::Lane::kHigh, std::move(done));
}

}  // namespace sdn::apps::cpam
