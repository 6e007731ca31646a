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
#include <thread>

#include <fmt/format.h>

#include "apps/cpam/cpam.hpp"
#include "apps/cpam/flows.hpp"
#include "core/log.hpp"
#include "pkt/addr.hpp"

namespace sdn::apps::cpam {

using southbound::SwitchContext;

namespace {
int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
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

void Cpam::engine_start() {
  if (svc_->recovered_.life != nullptr) {
    // Reloaded: the archived epoch goes on (same mapping, same pins); the next rotation is due
    // when it was, and at least a second from now.
    life_ = std::move(svc_->recovered_.life);
    const auto now = rt_->now();
    auto cur = life_->current();
    auto next = std::max(cur->next_rotation, now + std::chrono::seconds(1));
    auto s = std::make_shared<Snapshot>(*cur);
    s->published = now;
    s->next_rotation = next;
    tick_at_ = next - cfg_.rotation_interval;
    distribute(s);
    publish_mapping(*s);
    {
      std::lock_guard lock(svc_->mu_);
      svc_->last_rotation_ = life_->last();
    }
    persist_vips("start", true);
    spdlog::info("cpam: epoch {} reloaded: {} protected hosts, {} grace, {} quarantine, {} free; next rotation in "
                 "{} ms",
                 s->epoch, svc_->dir_.hosts.size(), life_->grace_count(), life_->quarantine_count(), life_->free_count(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count());
    arm_tick(next - now);
    arm(std::chrono::milliseconds(500), &Cpam::reclaim_now);
    arm(cfg_.stats_interval, &Cpam::publish_stats);
    return;
  }
  life_ = std::make_unique<VipLifecycle>(cfg_, svc_->table_, svc_->dir_.hosts.size());
  // Epoch 1 at once: nothing can be pre-installed before the hosts are known; sessions install
  // the rules they need.
  const auto now = rt_->now();
  tick_at_ = now;
  life_->reserve_next(now);
  distribute(life_->commit(now, now + cfg_.rotation_interval));
  persist_vips("start", true);
  publish_mapping(*life_->current());
  {
    std::lock_guard lock(svc_->mu_);
    svc_->last_rotation_ = life_->last();
  }
  spdlog::info("cpam: epoch 1: {} protected hosts, pool {} ({}/{}), zone {}, runtime {}", svc_->dir_.hosts.size(),
               cfg_.pool_size, pkt::Ipv4Addr{cfg_.vip_base}.to_string(), cfg_.vip_prefix_len, cfg_.zone,
               cfg_.mode == RuntimeMode::kSharded ? "sharded" : "cooperative");
  arm_tick(cfg_.rotation_interval);
  arm(std::chrono::milliseconds(500), &Cpam::reclaim_now);
  arm(cfg_.stats_interval, &Cpam::publish_stats);
}

void Cpam::rotate_now() {
  if (life_ != nullptr && pending_.empty()) tick();
}

void Cpam::tick() {
  if (!pending_.empty()) return;  // the previous rotation is still pre-installing
  const auto now = rt_->now();
  tick_at_ = now;
  svc_->rotating_.store(true, std::memory_order_relaxed);
  pending_ = life_->reserve_next(now);
  persist_vips("reserved", true);  // written ahead: no rule or answer uses these VIPs before
  ++rotation_gen_;
  preinstall_sent_ = 0;
  all_batches_sent_ = false;
  preinstall_ok_shared_->store(0);
  preinstall_left_ = std::make_shared<std::atomic<size_t>>(0);
  const size_t batches = (pending_.size() + cfg_.batch_hosts - 1) / cfg_.batch_hosts;
  if (cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches) {
    // Run to completion: the thread does nothing else until the rotation is published.
    for (size_t i = 0; i < batches; ++i) {
      run_batch(i);
      if (i + 1 < batches) std::this_thread::sleep_for(cfg_.batch_delay);
    }
    commit();
    return;
  }
  if (batches == 0) {
    commit();
    return;
  }
  run_batch(0);
}

void Cpam::run_batch(size_t i) {
  const size_t from = i * cfg_.batch_hosts;
  const size_t to = std::min(pending_.size(), from + cfg_.batch_hosts);
  const auto lane = cfg_.mode == RuntimeMode::kSharded ? southbound::Lane::kLow : southbound::Lane::kHigh;
  const auto now = rt_->now();
  // One batch (+ barrier) per access switch.
  flows::Plan plan;
  for (size_t k = from; k < to; ++k) {
    const auto [host, vip] = pending_[k];
    const auto loc = locate(host, now);
    if (!loc) continue;  // not seen yet: its first session installs the rule
    plan.at(loc->at.dpid).batch.emplace_back(
        flows::vip_rule(cfg_, vip, svc_->dir_.hosts[host].ip, loc->mac, loc->at.port));
    ++preinstall_sent_;
  }
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
    if (!rt_->with_switch(dpid, std::move(send))) preinstall_left_->fetch_sub(n);
  }
  const size_t batches = (pending_.size() + cfg_.batch_hosts - 1) / cfg_.batch_hosts;
  if (i + 1 < batches) {
    if (cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches) return;  // tick() loops
    rt_->call_after(shard_, cfg_.batch_delay, [this, i, gen] {
      if (!stopped_ && gen == rotation_gen_) run_batch(i + 1);
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

void Cpam::commit() {
  const auto now = rt_->now();
  auto snap = life_->commit(now, tick_at_ + cfg_.rotation_interval);
  RotationRecord rec = life_->last();
  // Run to completion, the loop publishes before any barrier reply can be read on its thread:
  // the rules were sent, not (yet) confirmed.
  const bool confirmed = !(cfg_.mode == RuntimeMode::kCooperative && !cfg_.yield_between_batches);
  rec.preinstalled = confirmed ? preinstall_ok_shared_->load() : preinstall_sent_;
  rec.preinstall_failed = confirmed ? preinstall_sent_ - std::min<size_t>(preinstall_sent_, rec.preinstalled) : 0;
  pending_.clear();
  ++rotation_gen_;
  persist_vips("committed", false);
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
  if (engine == nullptr || engine->life_ == nullptr || !engine->pending_.empty()) return;  // a rotation in progress re-arms at its commit
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
  nlohmann::json hosts = nlohmann::json::object();
  const auto& dir = svc_->dir_.hosts;
  for (size_t h = 0; h < dir.size(); ++h)
    if (s.primary[h] != kNone) hosts[dir[h].name] = pkt::Ipv4Addr{cfg_.vip_ip(s.primary[h])}.to_string();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(s.next_rotation - rt_->now()).count();
  svc_->publish("network/cpam/mapping/current",
                {{"epoch", s.epoch},
                 {"published_ms", unix_ms()},
                 {"next_rotation_ms", unix_ms() + left},
                 {"interval_ms", cfg_.rotation_interval.count()},
                 {"zone", cfg_.zone},
                 {"hosts", hosts}},
                0);
  for (const auto& [name, vip] : hosts.items())
    svc_->publish(fmt::format("network/cpam/mapping/{}", name), {{"epoch", s.epoch}, {"vip", vip}}, data::kPubOnly);
}

void Cpam::reclaim_now() {
  if (life_ == nullptr) return;
  // After a reload, Grace VIPs wait until the switches had time to reconnect and confirm (or
  // hand over, by adoption) the references of the sessions the archive may have missed.
  if (rt_->now() >= hold_until_) reclaim(rt_->now());
  arm(std::chrono::milliseconds(500), &Cpam::reclaim_now);
}

void Cpam::reclaim(Clock::time_point now) {
  auto r = life_->reclaim(now);
  if (r.quarantined.empty() && r.freed == 0) return;
  persist_vips("reclaim", false);
  if (r.quarantined.empty()) return;
  const auto lane = cfg_.mode == RuntimeMode::kSharded ? southbound::Lane::kLow : southbound::Lane::kHigh;
  // The VIP's rule lives on its host's access switch; delete it there (and wherever the host
  // was seen last, which is the same switch unless it moved). A host not located now (its switch
  // reconnected, or the controller restarted, and it has not been seen since) may have left its
  // rule anywhere: the delete (by exact cookie) goes to every switch.
  std::vector<std::pair<uint64_t, std::vector<ofp::Body>>> per_switch;
  auto add = [&](uint64_t dpid, uint32_t vip) {
    auto it = std::find_if(per_switch.begin(), per_switch.end(), [&](const auto& p) { return p.first == dpid; });
    if (it == per_switch.end()) {
      per_switch.emplace_back(dpid, std::vector<ofp::Body>{});
      it = per_switch.end() - 1;
    }
    it->second.emplace_back(flows::vip_rule_delete(cfg_, vip));
  };
  for (const auto& [vip, owner] : r.quarantined) {
    auto mac = owner == kNone ? std::nullopt : view_.mac_of(svc_->dir_.hosts[owner].ip);
    const auto* h = mac ? view_.host(*mac) : nullptr;
    if (h != nullptr) {
      add(h->at.dpid, vip);
    } else {
      for (uint64_t dpid : view_.switches()) add(dpid, vip);
    }
  }
  for (auto& [dpid, batch] : per_switch)
    rt_->with_switch(dpid, [batch = std::move(batch), lane](SwitchContext& s) mutable {
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
  arm(cfg_.stats_interval, &Cpam::publish_stats);
}

}  // namespace sdn::apps::cpam
