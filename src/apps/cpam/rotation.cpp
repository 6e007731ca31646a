// The rotation engine (Algorithm 1, OnRotationTick), run by shard 0's CPAM instance.
//
// sharded: every step is short and returns to the event loop: reserve the next VIPs, then one
// batch of `rotation_batch` hosts' last-hop rules every `batch_delay` on the low lane, then -
// once the switches confirmed them (or preinstall_timeout passed) - one snapshot swap. Reactive
// work on this shard waits at most one step; on the other shards it never waits.
//
// cooperative: the same steps, but the loop runs to completion on the only thread, sleeping
// through the batch delays (the paper's Ryu port), and its FlowMods share the reactive lane.
// With yield_between_batches the loop returns to the event loop between batches instead.
#include <map>
#include <thread>

#include <fmt/format.h>

#include "apps/cpam/cpam.hpp"
#include "apps/cpam/flows.hpp"
#include "core/log.hpp"
#include "pkt/addr.hpp"

namespace sdn::apps::cpam {

using southbound::SwitchContext;

namespace {
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

void Cpam::arm(Clock::duration d, void (Cpam::*step)()) {
  if (rt_ == nullptr || stopped_) return;
  rt_->call_after(shard_, d, [this, step] {
    if (!stopped_) (this->*step)();
  });
}

void Cpam::arm_engine(Clock::duration d, void (Cpam::*step)()) {
  if (rt_ == nullptr || stopped_) return;
  const uint64_t run = engine_run_;
  rt_->call_after(shard_, d, [this, step, run] {
    if (!stopped_ && run == engine_run_) (this->*step)();
  });
}

void Cpam::engine_start() {
  if (svc_->clustered()) {
    // A follower until the cluster names this instance the rotation leader (cluster_poll).
    // Weak: the link belongs to the service (a strong capture would keep it alive forever).
    svc_->start_cluster([ws = std::weak_ptr<CpamService>(svc_), rt = rt_, shard = shard_] {
      rt->post(shard, [ws, shard] {
        if (auto svc = ws.lock())
          if (Cpam* t = svc->instance(shard)) t->follow();
      });
    });
    arm(cfg_.cluster_poll, &Cpam::cluster_poll);
    return;
  }
  if (svc_->recovered_.life != nullptr) {
    run_engine(std::move(svc_->recovered_.life), true, "reloaded");
    return;
  }
  run_engine(std::make_unique<VipLifecycle>(cfg_, svc_->table_, svc_->dir_.hosts.size()), false, "");
}

bool Cpam::run_engine(std::unique_ptr<VipLifecycle> life, bool reloaded, std::string_view from) {
  life_ = std::move(life);
  const auto now = rt_->now();
  if (reloaded) {
    // Reloaded: the epoch goes on (same mapping, same pins); the next rotation is due when it
    // was, and at least a second from now (a cluster poll from now when a leader took over).
    auto cur = life_->current();
    const auto soon = svc_->clustered() ? Clock::duration(cfg_.cluster_poll) : Clock::duration(std::chrono::seconds(1));
    auto next = std::max(cur->next_rotation, now + soon);
    auto s = std::make_shared<Snapshot>(*cur);
    s->published = now;
    s->next_rotation = next;
    tick_at_ = next - cfg_.rotation_interval;
    if (!persist_vips("start", true)) return false;
    distribute(s);
    publish_mapping(*s);
    {
      std::lock_guard lock(svc_->mu_);
      svc_->last_rotation_ = life_->last();
    }
    spdlog::info("cpam: epoch {} {}: {} protected hosts, {} grace, {} quarantine, {} free; next rotation in "
                 "{} ms",
                 s->epoch, from, svc_->dir_.hosts.size(), life_->grace_count(), life_->quarantine_count(),
                 life_->free_count(), std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count());
    arm_tick(next - now);
  } else {
    // Epoch 1 at once: nothing can be pre-installed before the hosts are known; sessions install
    // the rules they need.
    tick_at_ = now;
    life_->reserve_next(now);
    auto snap = life_->commit(now, now + cfg_.rotation_interval);
    if (!persist_vips("start", true)) return false;
    distribute(snap);
    publish_mapping(*life_->current());
    {
      std::lock_guard lock(svc_->mu_);
      svc_->last_rotation_ = life_->last();
    }
    spdlog::info("cpam: epoch 1: {} protected hosts, pool {} ({}/{}), zone {}, runtime {}", svc_->dir_.hosts.size(),
                 cfg_.pool_size, pkt::Ipv4Addr{cfg_.vip_base}.to_string(), cfg_.vip_prefix_len, cfg_.zone,
                 cfg_.mode == RuntimeMode::kSharded ? "sharded" : "cooperative");
    arm_tick(cfg_.rotation_interval);
  }
  arm_engine(std::chrono::milliseconds(500), &Cpam::reclaim_now);
  arm_engine(cfg_.stats_interval, &Cpam::publish_stats);
  return true;
}

// ---- cluster mode ----------------------------------------------------------------------------
//
// Shard 0 polls every cluster_poll: the generation the cluster's thread set when this instance
// gained (or lost) the "cpam-rotation" leadership, and, while following, the newest shared state
// the worker read. The leader runs the engine exactly as a single instance does, except that
// every state change is written to Redis with a fenced write before anything uses it; a refused
// write means another instance leads: the engine stops there and nothing is published.

void Cpam::cluster_poll() {
  const uint64_t gen = svc_->leader_gen_->load(std::memory_order_acquire);
  if (led_gen_ != 0 && gen != led_gen_) step_down(gen == 0 ? "leadership lost" : "leadership renewed");
  if (gen != 0 && led_gen_ == 0 && rt_->now() >= lead_retry_) become_leader(gen);
  follow();
  arm(cfg_.cluster_poll, &Cpam::cluster_poll);
}

void Cpam::follow() {
  if (stopped_ || led_gen_ != 0) return;
  if (auto s = svc_->link_->take_state(applied_seq_)) apply_shared(*s);
}

void Cpam::become_leader(uint64_t gen) {
  const auto t0 = Clock::now();
  led_gen_ = gen;
  ++engine_run_;
  auto& store = svc_->store_;
  std::unique_ptr<VipLifecycle> life;
  std::string from;
  const auto now = rt_->now();
  const int64_t unix_now = unix_ms();
  if (auto text = store->get(shared::kVipsKey)) {
    auto s = shared::decode_vips(*text, svc_->dir_, cfg_.pool_size);
    if (s) {
      life = std::make_unique<VipLifecycle>(cfg_, svc_->table_, svc_->dir_.hosts.size());
      const auto next = now + std::chrono::milliseconds(std::max<int64_t>(0, s->vips.next_rotation_ms - unix_now));
      life->restore(s->vips, now, unix_now, next);
      write_seq_ = std::max(write_seq_, s->seq);
      from = fmt::format("taken over from {} (seq {})", s->leader, s->seq);
    } else {
      svc_->recover_errors_.fetch_add(1);
      spdlog::error("cpam: the shared VIP state is unusable ({}): not leading", s.error());
      led_gen_ = 0;
      lead_retry_ = now + std::chrono::seconds(1);
      return;
    }
  } else if (life_ != nullptr && applied_seq_ != 0) {
    // Redis answered nothing, but this instance mirrors a state it read before: go on from it
    // (Redis unreachable makes the fenced write below fail anyway).
    life = std::move(life_);
    write_seq_ = std::max(write_seq_, applied_seq_);
    from = "continued from the mirrored state";
  } else if (svc_->recovered_.life != nullptr) {
    life = std::move(svc_->recovered_.life);
    from = "reloaded from the archive";
  }
  pending_.clear();
  const bool ok = life != nullptr
                      ? run_engine(std::move(life), true, from)
                      : run_engine(std::make_unique<VipLifecycle>(cfg_, svc_->table_, svc_->dir_.hosts.size()), false, "");
  if (!ok) {
    lead_retry_ = rt_->now() + std::chrono::seconds(1);
    return;  // step_down ran
  }
  svc_->leading_.store(true, std::memory_order_release);
  svc_->state_ready_.store(true, std::memory_order_release);
  svc_->leader_gains_.fetch_add(1);
  spdlog::info("cpam: {} leads the rotation (generation {}) at epoch {}, {:.1f} ms to take over",
               svc_->link_->instance(), gen, life_->current()->epoch,
               std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
}

void Cpam::step_down(const char* why) {
  if (led_gen_ == 0) return;
  spdlog::warn("cpam: {} no longer leads the rotation (generation {}): {}", svc_->link_->instance(), led_gen_, why);
  led_gen_ = 0;
  ++engine_run_;   // reclaim and stats timers end
  ++tick_token_;   // the next rotation is not ours
  ++rotation_gen_;  // nor the batches and barriers of one in progress
  pending_.clear();
  applied_seq_ = 0;  // mirror the newest shared state, whoever wrote it
  svc_->rotating_.store(false, std::memory_order_relaxed);
  svc_->leading_.store(false, std::memory_order_release);
  svc_->leader_losses_.fetch_add(1);
}

bool Cpam::write_shared(std::string_view phase) {
  if (led_gen_ == 0) return false;  // following: never writes
  shared::SharedVips s;
  s.vips = life_->export_state(rt_->now(), unix_ms());
  s.vips.boot = svc_->boot_;
  s.phase = std::string(phase);
  s.seq = ++write_seq_;
  s.leader = svc_->link_->instance();
  s.generation = led_gen_;
  if (phase == "reserved") s.due_ms = s.vips.time_ms + publication_lead().count();
  const auto t0 = Clock::now();
  auto& store = *svc_->store_;
  // The state, then the small key followers poll: a follower that sees the new seq reads a
  // state at least as new.
  const bool ok = store.fenced_set(shared::kRole, shared::kVipsKey, shared::encode_vips(s, svc_->dir_)) &&
                  store.fenced_set(shared::kRole, shared::kEpochKey, shared::encode_epoch(s));
  const auto us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
  core::raise_max(svc_->shared_write_max_us_, us);
  if (!ok) {
    svc_->fenced_refused_.fetch_add(1);
    spdlog::error("cpam: the shared VIP state ({}, seq {}) was refused: another instance leads, or Redis is away",
                  phase, s.seq);
    step_down("fenced write refused");
    return false;
  }
  svc_->shared_seq_.store(s.seq);
  return true;
}

// A follower mirrors the leader's table (states, owners, Grace times; its own references kept),
// installs the VIP rules of newly live VIPs on the switches it masters (a reservation's rules
// before the leader publishes it, as the leader's pre-install does on its own switches) and
// deletes those of VIPs gone to quarantine; a new epoch's snapshot goes to every shard.
void Cpam::apply_shared(const shared::SharedVips& s) {
  auto& table = svc_->vips();
  std::vector<VipState> before(table.size());
  for (uint32_t v = 0; v < table.size(); ++v) before[v] = table.load(v).state;
  const auto now = rt_->now();
  const int64_t unix_now = unix_ms();
  auto life = std::make_unique<VipLifecycle>(cfg_, svc_->table_, svc_->dir_.hosts.size());
  const auto next = now + std::chrono::milliseconds(std::max<int64_t>(0, s.vips.next_rotation_ms - unix_now));
  const size_t skipped = life->restore(s.vips, now, unix_now, next);
  if (skipped != 0) svc_->recover_errors_.fetch_add(skipped);
  life_ = std::move(life);
  applied_seq_ = s.seq;
  svc_->shared_seq_.store(s.seq);
  svc_->states_applied_.fetch_add(1);
  const auto lane = cfg_.mode == RuntimeMode::kSharded ? southbound::Lane::kLow : southbound::Lane::kHigh;
  auto live = [](VipState st) { return st == VipState::kReserved || st == VipState::kPrimary || st == VipState::kGrace; };
  std::map<uint64_t, std::vector<ofp::Body>> per_switch;
  for (uint32_t v = 0; v < table.size(); ++v) {
    const auto now_v = table.load(v);
    const bool was = live(before[v]), is = live(now_v.state);
    if (was == is || (is && now_v.owner == kNone)) continue;
    if (is) {
      const auto loc = locate(now_v.owner, now);
      if (loc) {
        per_switch[loc->at.dpid].emplace_back(
            flows::vip_rule(cfg_, v, svc_->dir_.hosts[now_v.owner].ip, loc->mac, loc->at.port));
        svc_->note_rule(v, loc->at.dpid);
      }
      continue;
    }
    // Gone: deleted (by exact cookie) where this instance sent or found its rule.
    if (const uint64_t at = svc_->rule_at(v); at != 0) per_switch[at].emplace_back(flows::vip_rule_delete(cfg_, v));
    svc_->note_rule(v, 0);
  }
  for (auto& entry : per_switch)
    rt_->with_switch(entry.first, [batch = std::move(entry.second), lane](SwitchContext& sw) mutable {
      sw.send_batch(std::move(batch), lane, [](const southbound::BatchResult&) {});
    });
  if (snap_ == nullptr || snap_->epoch != s.vips.epoch) {
    if (snap_ != nullptr && s.vips.time_ms > 0) {
      const int64_t lag = std::max<int64_t>(0, unix_now - s.vips.time_ms);
      svc_->epoch_lag_last_ms_.store(lag);
      core::raise_max(svc_->epoch_lag_max_ms_, lag);
    }
    distribute(life_->current());
    std::lock_guard lock(svc_->mu_);
    svc_->last_rotation_ = life_->last();
  }
  svc_->state_ready_.store(true, std::memory_order_release);
}

void Cpam::rotate_now() {
  if (svc_->clustered() && led_gen_ == 0) return;  // a follower never rotates
  if (life_ != nullptr && pending_.empty()) tick();
}

void Cpam::tick() {
  if (!pending_.empty()) return;  // the previous rotation is still pre-installing
  const auto now = rt_->now();
  tick_at_ = now;
  svc_->rotating_.store(true, std::memory_order_relaxed);
  pending_ = life_->reserve_next(now);
  interleave_pending();
  cursor_ = 0;
  carry_.clear();
  ++rotation_gen_;
  const bool run_to_completion = cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches;
  const bool wait = cfg_.recovery && cfg_.commit_off_loop && svc_->due_ != nullptr && life_ != nullptr;
  if (run_to_completion || !wait) {
    // Run to completion (the paper's Ryu model) waits on its own thread, as it does everything.
    if (!persist_vips("reserved", true)) return;  // written ahead: no rule or answer uses these VIPs before
    reserved_committed(rotation_gen_);
    return;
  }
  // Written ahead, committed off this thread: the shard keeps answering PacketIns meanwhile, and
  // no rule or answer uses the reserved VIPs until reserved_committed runs.
  if (!persist_vips("reserved", false)) return;
  svc_->committer_->run([due = svc_->due_, weak = std::weak_ptr<CpamService>(svc_), rt = rt_, home = shard_,
                         gen = rotation_gen_] {
    const auto t0 = Clock::now();
    const bool ok = due->sync(std::chrono::milliseconds(1000));
    auto svc = weak.lock();
    if (svc == nullptr) return;
    if (!ok) {
      svc->vips_sync_failed_.fetch_add(1);
      SDN_LOG_RATELIMITED(spdlog::level::err, "cpam: the VIP state (reserved) was not committed to the archive in 1 s");
    }
    const auto us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
    core::raise_max(svc->vips_sync_max_us_, us);
    rt->post(home, [weak, home, gen] {
      if (auto s = weak.lock())
        if (Cpam* t = s->instance(home)) t->reserved_committed(gen);
    });
  });
}

void Cpam::reserved_committed(uint64_t gen) {
  if (stopped_ || gen != rotation_gen_ || pending_.empty()) return;
  reserved_at_ = rt_->now();
  preinstall_sent_ = 0;
  all_batches_sent_ = false;
  preinstall_ok_shared_->store(0);
  preinstall_left_ = std::make_shared<std::atomic<size_t>>(0);
  if (cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches) {
    // Run to completion: the thread does nothing else until the rotation is published.
    while (!batches_done()) {
      run_batch();
      if (!batches_done()) std::this_thread::sleep_for(batch_delay());
    }
    commit();
    return;
  }
  run_batch();
}

size_t Cpam::batch_size() const { return rotation_pacing(cfg_, pending_.size()).hosts; }
std::chrono::milliseconds Cpam::batch_delay() const { return rotation_pacing(cfg_, pending_.size()).delay; }
size_t Cpam::switch_batch_cap() const { return cpam::switch_batch_cap(cfg_, batch_delay()); }

// Hosts come in directory order, and a directory lists a switch's hosts together (ofbench's
// 100,000 hosts sit 42 to an access switch), so a batch of consecutive hosts met a few switches'
// budgets and most of it waited as carry (189,880 deferrals in a 30-s run at 100,000 hosts). One
// pass ranks each host by its place among the hosts of its switch (in runs of the per-batch
// budget); a counting sort by rank keeps the order within a rank. Hosts nobody located share one
// key and so come last.
void Cpam::interleave_pending() {
  if (pending_.size() < 2) return;
  // A switch's hosts go in runs of what its budget takes per batch: fewer switches a batch, so
  // fewer barriers (one per switch and batch), and still nothing held back.
  const size_t per_switch = std::max<size_t>(1, std::min<size_t>(switch_batch_cap(), batch_size()));
  absl::flat_hash_map<uint64_t, size_t> seen;
  std::vector<uint32_t> rank(pending_.size());
  uint32_t most = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const auto* h = view_.host_of_ip(svc_->dir_.hosts[pending_[i].first].ip);
    const uint64_t dpid = h != nullptr ? h->at.dpid : 0;
    rank[i] = static_cast<uint32_t>(seen[dpid]++ / per_switch);
    most = std::max(most, rank[i]);
  }
  std::vector<size_t> start(static_cast<size_t>(most) + 2, 0);
  for (uint32_t r : rank) ++start[r + 1];
  for (size_t r = 1; r < start.size(); ++r) start[r] += start[r - 1];
  std::vector<std::pair<uint32_t, uint32_t>> out(pending_.size());
  for (size_t i = 0; i < pending_.size(); ++i) out[start[rank[i]]++] = pending_[i];
  pending_ = std::move(out);
}

void Cpam::run_batch() {
  const auto lane = cfg_.mode == RuntimeMode::kSharded ? southbound::Lane::kLow : southbound::Lane::kHigh;
  const auto now = rt_->now();
  const size_t size = batch_size(), cap = switch_batch_cap();
  // One batch (+ barrier) per access switch, each within its budget.
  flows::Plan plan;
  absl::flat_hash_map<uint64_t, size_t> per_switch;
  std::vector<uint32_t> held;
  size_t taken = 0;
  auto take = [&](uint32_t k) {
    ++taken;
    const auto [host, vip] = pending_[k];
    const auto loc = locate(host, now);
    if (!loc) return;  // not seen yet: its first session installs the rule
    if (++per_switch[loc->at.dpid] > cap) {
      held.push_back(k);
      rotation_deferred_.inc();
      return;
    }
    plan.at(loc->at.dpid).batch.emplace_back(
        flows::vip_rule(cfg_, vip, svc_->dir_.hosts[host].ip, loc->mac, loc->at.port));
    svc_->note_rule(vip, loc->at.dpid);
    ++preinstall_sent_;
  };
  for (uint32_t k : std::exchange(carry_, {})) take(k);
  while (cursor_ < pending_.size() && taken < size) take(static_cast<uint32_t>(cursor_++));
  carry_ = std::move(held);
  const uint64_t gen = rotation_gen_;
  for (auto& sb : plan.switches) {
    const size_t n = sb.batch.size();
    preinstall_left_->fetch_add(n);
    auto left = preinstall_left_;
    auto ok_count = preinstall_ok_shared_;
    auto* rt = rt_;
    const unsigned home = shard_;
    auto svc = svc_;
    auto send = [sb = std::move(sb), lane, left, ok_count, n, rt, home, gen, svc](SwitchContext& s) mutable {
      s.send_batch(std::move(sb.batch), lane,
                   [left, ok_count, n, rt, home, gen, svc](const southbound::BatchResult& r) {
                     if (r.ok) ok_count->fetch_add(n);
                     if (left->fetch_sub(n) == n)
                       rt->post(home, [gen, svc, home] {
                         if (Cpam* t = svc->instance(home)) t->preinstall_confirmed(gen);
                       });
                   });
    };
    const uint64_t dpid = sb.dpid;
    if (!rt_->with_switch(dpid, std::move(send))) {
      preinstall_left_->fetch_sub(n);
      // In a cluster a switch this instance does not master gets its rules from its own master
      // (apply_shared): not a failure here.
      if (svc_->clustered()) preinstall_sent_ -= n;
    }
  }
  if (!batches_done()) {
    if (cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches) return;  // the caller loops
    rt_->call_after(shard_, batch_delay(), [this, gen] {
      if (!stopped_ && gen == rotation_gen_) run_batch();
    });
    return;
  }
  all_batches_sent_ = true;
  if (cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches) return;
  // Last batch sent: publish once every rule is confirmed, or after the timeout at the latest.
  if (preinstall_left_->load() == 0) {
    commit();
    return;
  }
  rt_->call_after(shard_, cfg_.preinstall_timeout, [this, gen] {
    if (!stopped_ && gen == rotation_gen_ && !pending_.empty()) commit();
  });
}

void Cpam::preinstall_confirmed(uint64_t gen) {
  if (gen != rotation_gen_ || pending_.empty() || !all_batches_sent_) return;
  if (preinstall_left_->load() == 0) commit();
}

// The earliest the rotation written "reserved" can be published: a poll and a half in a cluster,
// and the pre-install batches' delays (commit waits for both). The "reserved" write names it as
// the due time; followers poll fast from then until the publication.
std::chrono::milliseconds Cpam::publication_lead() const {
  const size_t size = batch_size();
  const size_t batches = (pending_.size() + size - 1) / size;
  const auto batching = batch_delay() *
                        static_cast<int64_t>(batches == 0 ? 0 : batches - 1);
  return std::max(cfg_.cluster_poll + cfg_.cluster_poll / 2, batching);
}

void Cpam::commit() {
  const auto now = rt_->now();
  // Cluster: never before the due time the "reserved" write named (publication_lead after it),
  // so the followers have read that write and poll fast when the publication comes: they apply
  // the new epoch a few ms after this write, not up to a poll later. Run to completion
  // (cooperative, no yield) publishes at once.
  const bool run_to_completion = cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches;
  const auto ready = reserved_at_ + publication_lead();
  if (svc_->clustered() && !run_to_completion && now < ready) {
    rt_->call_after(shard_, ready - now, [this, gen = rotation_gen_] {
      if (!stopped_ && gen == rotation_gen_ && !pending_.empty()) commit();
    });
    return;
  }
  auto snap = life_->commit(now, tick_at_ + cfg_.rotation_interval);
  RotationRecord rec = life_->last();
  // Run to completion, the loop publishes before any barrier reply can be read on its thread:
  // the rules were sent, not (yet) confirmed.
  const bool confirmed = !(cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches);
  rec.preinstalled = confirmed ? preinstall_ok_shared_->load() : preinstall_sent_;
  rec.preinstall_failed = confirmed ? preinstall_sent_ - std::min<size_t>(preinstall_sent_, rec.preinstalled) : 0;
  pending_.clear();
  ++rotation_gen_;
  // Written ahead of the publication: a deposed leader's write is refused and it publishes
  // nothing (its table is overwritten by the new leader's state at the next poll).
  if (!persist_vips("committed", false)) return;
  distribute(snap);
  publish_mapping(*snap);
  svc_->rotating_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard lock(svc_->mu_);
    svc_->last_rotation_ = rec;
  }
  const double took = ms_between(rec.started, now);
  svc_->rotation_->record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - rec.started).count()));
  spdlog::info("cpam: epoch {} published: {} hosts rotated in {:.1f} ms, {} rules pre-installed ({}), "
               "{} grace, {} quarantined, {} free",
               rec.epoch, rec.rotated, took, rec.preinstalled,
               confirmed ? fmt::format("{} failed", rec.preinstall_failed) : std::string("sent, unconfirmed"),
               life_->grace_count(), life_->quarantine_count(), life_->free_count());
  svc_->publish("network/cpam/rotation",
                {{"epoch", rec.epoch},
                 {"time_ms", unix_ms()},
                 {"duration_ms", took},
                 {"hosts", rec.hosts},
                 {"rotated", rec.rotated},
                 {"preinstalled", rec.preinstalled},
                 {"preinstall_failed", rec.preinstall_failed},
                 {"preinstall_confirmed", confirmed},
                 {"pool_exhausted", rec.pool_exhausted},
                 {"grace", life_->grace_count()},
                 {"quarantine", life_->quarantine_count()},
                 {"free", life_->free_count()}},
                0);
  // Ticks keep their cadence: the next one is an interval after this one started.
  const auto next = tick_at_ + cfg_.rotation_interval;
  arm_tick(next > now ? next - now : Clock::duration::zero());
}

void Cpam::arm_tick(Clock::duration d) {
  if (rt_ == nullptr || stopped_) return;
  const uint64_t token = ++tick_token_;
  rt_->call_after(shard_, d, [this, token] {
    if (!stopped_ && token == tick_token_) tick();
  });
}

CpamService::Tunables CpamService::tunables() const {
  std::lock_guard lock(mu_);
  return tunables_;
}

RotationRecord CpamService::last_rotation() const {
  std::lock_guard lock(mu_);
  return last_rotation_;
}

void CpamService::set_tunables(const Tunables& t) {
  {
    std::lock_guard lock(mu_);
    tunables_ = t;
  }
  cfg_.rotation_interval = t.rotation_interval;
  cfg_.batch_hosts = t.batch_hosts;
  cfg_.batch_delay = t.batch_delay;
  Cpam* engine = instance(0);
  if (engine == nullptr || engine->life_ == nullptr || !engine->pending_.empty()) return;
  if (engine->svc_->clustered() && engine->led_gen_ == 0) return;  // followers do not rotate  // a rotation in progress re-arms at its commit
  const auto now = engine->rt_->now();
  const auto next = engine->tick_at_ + t.rotation_interval;
  engine->arm_tick(next > now ? next - now : Clock::duration::zero());
}

void Cpam::distribute(std::shared_ptr<const Snapshot> s) {
  svc_->set_latest(s);
  snap_ = s;
  for (unsigned i = 0; i < rt_->shard_count(); ++i)
    if (i != shard_)
      rt_->post(i, [svc = svc_, i, s] {
        if (Cpam* t = svc->instance(i)) t->snap_ = s;
      });
}

// One record for the whole mapping (the atomic view), then one per host for subscribers that
// follow a single host.
void Cpam::publish_mapping(const Snapshot& s) {
  // Built and written on the committer's thread (a JSON object of every host's name and VIP:
  // at 10,000 hosts and T = 1 s it was a long turn of shard 0's loop every second).
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(s.next_rotation - rt_->now()).count();
  auto job = [weak = std::weak_ptr<CpamService>(svc_), primary = s.primary, epoch = s.epoch, next_ms = unix_ms() + left] {
    auto svc = weak.lock();
    if (svc == nullptr) return;
    const CpamConfig& cfg = svc->config();
    nlohmann::json hosts = nlohmann::json::object();
    const auto& dir = svc->hosts().hosts;
    for (size_t h = 0; h < dir.size() && h < primary.size(); ++h)
      if (primary[h] != kNone) hosts[dir[h].name] = pkt::Ipv4Addr{cfg.vip_ip(primary[h])}.to_string();
    // One record per host is hosts publications per rotation (10,000 a second at 10,000 hosts
    // and T = 1 s): only up to mapping_per_host_max hosts; `current` has them all.
    const bool per_host = hosts.size() <= cfg.mapping_per_host_max;
    nlohmann::json current = {{"epoch", epoch},
                               {"published_ms", unix_ms()},
                               {"next_rotation_ms", next_ms},
                               {"interval_ms", cfg.rotation_interval.count()},
                               {"zone", cfg.zone}};
    current["hosts"] = per_host ? hosts : std::move(hosts);
    svc->publish("network/cpam/mapping/current", std::move(current), 0);
    if (!per_host) return;
    for (const auto& [name, vip] : hosts.items())
      svc->publish(fmt::format("network/cpam/mapping/{}", name), {{"epoch", epoch}, {"vip", vip}}, data::kPubOnly);
  };
  off_loop(std::move(job));
}

void Cpam::off_loop(std::function<void()> job) {
  if (cfg_.commit_off_loop) {
    svc_->committer_->run(std::move(job));
  } else {
    job();  // the ablation, and the fake fabric's manual clock
  }
}

void Cpam::reclaim_now() {
  if (life_ == nullptr || (svc_->clustered() && led_gen_ == 0)) return;
  // After a reload, Grace VIPs wait until the switches had time to reconnect and confirm (or
  // hand over, by adoption) the references of the sessions the archive may have missed.
  if (rt_->now() >= hold_until_) reclaim(rt_->now());
  arm_engine(std::chrono::milliseconds(500), &Cpam::reclaim_now);
}

void Cpam::reclaim(Clock::time_point now) {
  VipLifecycle::Reclaimed r;
  if (svc_->clustered()) {
    // The other instances' sessions hold no reference in this table: their published pins do
    // (and a vanished instance's for the pin hold). A session may bind a Grace VIP until its
    // accept window ends and reach this view up to the pin lag later; with no fresh view of the
    // pins (Redis away) nothing is reclaimed.
    if (!svc_->link_->pins_fresh()) return;
    const auto window = cfg_.grace_accept + cfg_.cluster_pin_lag;
    auto* link = svc_->link_.get();
    r = life_->reclaim(now, [link, now, window](uint32_t vip, Clock::time_point since) {
      return now - since < window || link->remote_referenced(vip);
    });
  } else {
    r = life_->reclaim(now);
  }
  if (r.quarantined.empty() && r.freed == 0) return;
  if (!persist_vips("reclaim", false)) return;
  if (r.quarantined.empty()) return;
  const auto lane = cfg_.mode == RuntimeMode::kSharded ? southbound::Lane::kLow : southbound::Lane::kHigh;
  // The VIP's rule is deleted (by exact cookie) where it was last sent or found (rule_at: the
  // pre-install, a cluster follower's apply, a resync) and on its host's access switch now, if
  // that differs (the host moved). A VIP whose host was never located had no rule: nothing is
  // sent. (Until issue [runtime] a host not located sent the delete to every switch: at 10,000
  // hosts on 246 switches that was 1.7 million FlowMods per rotation.)
  // Per switch the VIP indices only (4 bytes each); each owner builds its FlowMods when it
  // sends them. Building them all here first held every message of a reclaim at once: 10 MB at
  // 10,000 hosts in heaptrack's peak (docs/runtime.md, "Memory per host").
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> per_switch;
  for (const auto& [vip, owner] : r.quarantined) {
    const uint64_t at = svc_->rule_at(vip);
    const auto* h = owner == kNone ? nullptr : view_.host_of_ip(svc_->dir_.hosts[owner].ip);
    if (at != 0) per_switch[at].push_back(vip);
    if (h != nullptr && h->at.dpid != at) per_switch[h->at.dpid].push_back(vip);
    svc_->note_rule(vip, 0);
  }
  for (auto& [dpid, vips] : per_switch)
    rt_->with_switch(dpid, [vips = std::move(vips), table = cfg_.table_id, lane](SwitchContext& s) {
      std::vector<ofp::Body> batch;
      batch.reserve(vips.size());
      for (uint32_t vip : vips) batch.emplace_back(flows::vip_rule_delete(table, vip));
      s.send_batch(std::move(batch), lane, [](const southbound::BatchResult&) {});
    });
  SDN_LOG_RATELIMITED(spdlog::level::debug, "cpam: {} VIPs quarantined, {} back in the pool", r.quarantined.size(),
                      r.freed);
}

void Cpam::publish_stats() {
  nlohmann::json j = svc_->stats_json();
  auto hist = [](const core::Histogram& h) {
    auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    return nlohmann::json{{"count", h.count()},
                          {"mean_ms", h.mean() / 1e6},
                          {"p50_ms", ms(h.quantile(0.50))},
                          {"p90_ms", ms(h.quantile(0.90))},
                          {"p95_ms", ms(h.quantile(0.95))},
                          {"p99_ms", ms(h.quantile(0.99))},
                          {"max_ms", ms(h.max())}};
  };
  j["rppt"] = hist(*svc_->rppt_);
  j["rppt_rotating"] = hist(*svc_->rppt_rotating_);
  j["rppt_quiet"] = hist(*svc_->rppt_quiet_);
  j["setup_confirmed"] = hist(*svc_->setup_confirmed_);
  j["epoch"] = snap_ ? snap_->epoch : 0;
  j["vips"] = {{"grace", life_->grace_count()},
               {"quarantine", life_->quarantine_count()},
               {"free", life_->free_count()},
               {"pool", cfg_.pool_size}};
  j["runtime"] = cfg_.mode == RuntimeMode::kSharded ? "sharded" : "cooperative";
  svc_->publish("network/cpam/stats", std::move(j), data::kPubOnly);
  arm_engine(cfg_.stats_interval, &Cpam::publish_stats);
}

}  // namespace sdn::apps::cpam
