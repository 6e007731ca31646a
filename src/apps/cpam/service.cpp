// CPAM: the service every shard's instance shares (directory, guard blocks, snapshots,
// counters and stats). The instances are in cpam.cpp.
#include "apps/cpam/cpam.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "apps/cpam/flows.hpp"
#include "apps/cpam/guard.hpp"
#include "core/log.hpp"
#include "pkt/build.hpp"
#include "pkt/dns.hpp"
#include "pkt/parse.hpp"

namespace sdn::apps::cpam {

CpamService::CpamService(CpamConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics)
    : CpamService(std::move(cfg), std::move(due), metrics, std::shared_ptr<shared::Store>{}) {}

CpamService::CpamService(CpamConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics,
                         std::shared_ptr<shared::Store> store)
    : store_(std::move(store)),
      cfg_(std::move(cfg)),
      dir_(cfg_.hosts),
      table_(std::make_shared<VipTable>(cfg_.pool_size)),
      due_(std::move(due)),
      committer_(std::make_unique<Committer>()) {
  rule_at_ = std::make_unique<std::atomic<uint64_t>[]>(cfg_.pool_size);
  rppt_ = metrics ? &metrics->histogram("cpam.rppt") : &local_rppt_;
  rppt_rotating_ = metrics ? &metrics->histogram("cpam.rppt_rotating") : &local_rppt_rotating_;
  rppt_quiet_ = metrics ? &metrics->histogram("cpam.rppt_quiet") : &local_rppt_quiet_;
  setup_confirmed_ = metrics ? &metrics->histogram("cpam.setup_confirmed") : &local_setup_;
  rotation_ = metrics ? &metrics->histogram("cpam.rotation") : &local_rotation_;
  tunables_ = {cfg_.rotation_interval, cfg_.batch_hosts, cfg_.batch_delay};
  if (!cfg_.rppt_samples.empty()) {
    samples_ = std::fopen(cfg_.rppt_samples.c_str(), "w");
    if (samples_ == nullptr) {
      spdlog::error("cpam: cannot write RPPT samples to {}", cfg_.rppt_samples);
    } else {
      std::fputs("rx_ns,rppt_ns,kind,rotating,epoch,shard\n", samples_);
    }
  }
  recover();
  {
    std::vector<uint32_t> ips;
    ips.reserve(dir_.hosts.size());
    for (const auto& h : dir_.hosts) ips.push_back(h.ip);
    real_blocks_ = guard::cover(std::move(ips));
    real_per_host_ = cfg_.block_real && real_blocks_.size() * guard::rules_per_prefix(cfg_) > cfg_.real_block_max_rules;
    if (real_per_host_)
      spdlog::info("cpam: {} protected addresses make {} blocks ({} rules a switch, over real_block_max_rules {}): "
                   "each address's drops go to the switch it is located at; elsewhere the controller drops",
                   dir_.hosts.size(), real_blocks_.size(), real_blocks_.size() * guard::rules_per_prefix(cfg_),
                   cfg_.real_block_max_rules);
  }
  if (cfg_.ipv6 == Ipv6Policy::kAllow)
    spdlog::warn("cpam: ipv6 = \"allow\": every protected host stays reachable on its fixed IPv6 addresses "
                 "(link-local from its MAC, all-nodes multicast); the defense does not hold over IPv6");
  if (store_ != nullptr) {
    link_ = std::make_unique<shared::Link>(store_, cfg_, dir_);
    // Session ids must not collide across instances (a switch's new master adopts the flows of
    // another instance's sessions by id): a random boot number and a random start per shard.
    boot_ = VipLifecycle::uniform(256);
  }
}

CpamService::~CpamService() {
  if (link_ != nullptr) link_->stop();
  if (samples_ != nullptr) std::fclose(samples_);
}

void CpamService::start_cluster(std::function<void()> on_state) {
  if (store_ == nullptr) return;
  link_->start(std::move(on_state));
  auto gen = leader_gen_;
  store_->lead(
      shared::kRole, [gen](uint64_t g) { gen->store(g, std::memory_order_release); },
      [gen] { gen->store(0, std::memory_order_release); });
}

nlohmann::json CpamService::cluster_json() const {
  if (store_ == nullptr) return nlohmann::json::object();
  const auto lc = link_->counters();
  return {{"instance", link_->instance()},
          {"leading", leading() ? 1 : 0},
          {"generation", leader_gen_->load()},
          {"seq", shared_seq_.load()},
          {"state_ready", state_ready_.load() ? 1 : 0},
          {"fenced_refused", fenced_refused_.load()},
          {"leader_gains", leader_gains_.load()},
          {"leader_losses", leader_losses_.load()},
          {"states_applied", states_applied_.load()},
          {"shared_write_max_ms", static_cast<double>(shared_write_max_us_.load()) / 1000.0},
          {"epoch_lag_ms", epoch_lag_last_ms_.load()},
          {"epoch_lag_max_ms", epoch_lag_max_ms_.load()},
          {"resync_deferred", resync_deferred_.load()},
          {"remote_pinned", link_->remote_pinned()},
          {"pins_fresh", link_->pins_fresh() ? 1 : 0},
          {"writes", lc.writes},
          {"write_errors", lc.write_errors},
          {"polls", lc.polls},
          {"fast_polls", lc.fast_polls},
          {"states_read", lc.states_read},
          {"bad_records", lc.bad_records},
          {"handoff_puts", lc.handoff_puts},
          {"handoff_put_errors", lc.handoff_put_errors},
          {"handoff_gets", lc.handoff_gets},
          {"handoff_found", lc.handoff_found},
          {"handoff_refused", lc.handoff_refused}};
}

void CpamService::attach(unsigned shard, Cpam* inst) {
  if (shard < instances_.size()) instances_[shard].store(inst, std::memory_order_release);
}

void CpamService::detach(unsigned shard) {
  if (shard < instances_.size()) instances_[shard].store(nullptr, std::memory_order_release);
}

void CpamService::set_latest(std::shared_ptr<const Snapshot> s) {
  std::lock_guard lock(mu_);
  latest_ = std::move(s);
}

std::shared_ptr<const Snapshot> CpamService::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

void CpamService::publish(std::string_view key, nlohmann::json value, unsigned flags) {
  if (!due_) return;
  if (auto r = due_->write(key, data::Value(std::move(value)), flags | data::kNoWait); !r) {
    publish_errors_.fetch_add(1, std::memory_order_relaxed);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "cpam: cannot publish {}: {}", key, r.error());
  }
}

void CpamService::write_samples(const std::vector<std::string>& lines) {
  if (samples_ == nullptr || lines.empty()) return;
  std::lock_guard lock(mu_);
  for (const auto& l : lines) std::fputs(l.c_str(), samples_);
  std::fflush(samples_);
}

CpamCounters CpamService::counters() const {
  CpamCounters c;
  for (const auto& slot : instances_) {
    const Cpam* i = slot.load(std::memory_order_acquire);
    if (i == nullptr) continue;
    c.packet_ins += i->packet_ins_.get();
    c.sessions_bound += i->bound_.get();
    c.sessions_reused += i->reused_.get();
    c.sessions_expired += i->expired_.get();
    c.setups += i->setups_.get();
    c.setup_failed += i->setup_failed_.get();
    c.repairs += i->repairs_.get();
    c.arp_answered += i->arp_answered_.get();
    c.arp_refused += i->arp_refused_.get();
    c.dns_answered += i->dns_answered_.get();
    c.dns_nxdomain += i->dns_nxdomain_.get();
    c.dns_refused += i->dns_refused_.get();
    c.dns_errors += i->dns_errors_.get();
    c.stale_vip += i->stale_vip_.get();
    c.unprotected_src += i->unprotected_src_.get();
    c.real_blocked += i->real_blocked_.get();
    c.spoofed += i->spoofed_.get();
    c.unlocated += i->unlocated_.get();
    c.no_path += i->no_path_.get();
    c.not_ready += i->not_ready_.get();
    c.parse_errors += i->parse_errors_.get();
    c.sessions_full += i->sessions_full_.get();
    c.flows_removed += i->flows_removed_.get();
    c.delivered_only += i->delivered_only_.get();
    c.reroutes += i->reroutes_.get();
    c.resyncs += i->resyncs_.get();
    c.resync_kept += i->resync_kept_.get();
    c.resync_added += i->resync_added_.get();
    c.resync_deleted += i->resync_deleted_.get();
    c.resync_adopted += i->resync_adopted_.get();
    c.resync_errors += i->resync_errors_.get();
    c.handoffs_out += i->handoffs_out_.get();
    c.handoffs_in += i->handoffs_in_.get();
    c.handoff_misses += i->handoff_misses_.get();
    c.handoff_errors += i->handoff_errors_.get();
    c.handoff_dropped += i->handoff_dropped_.get();
    c.onward += i->onward_.get();
    c.spoofed_src += i->spoofed_src_.get();
    c.guard_rules += i->guard_rules_.get();
    c.guard_errors += i->guard_errors_.get();
    c.probes += i->probes_.get();
    c.probes_deferred += i->probes_deferred_.get();
    c.rotation_deferred += i->rotation_deferred_.get();
    for (int k = 0; k < guard::kKinds; ++k) c.switch_dropped[k] += i->switch_dropped_[k].get();
    c.live_sessions += i->live_sessions_.load(std::memory_order_relaxed);
  }
  return c;
}


nlohmann::json CpamService::stats_json() const {
  const CpamCounters c = counters();
  nlohmann::json j = {{"packet_ins", c.packet_ins},       {"sessions_bound", c.sessions_bound},
                      {"sessions_reused", c.sessions_reused}, {"sessions_expired", c.sessions_expired},
                      {"live_sessions", c.live_sessions}, {"setups", c.setups},
                      {"setup_failed", c.setup_failed},   {"repairs", c.repairs},
                      {"arp_answered", c.arp_answered},   {"arp_refused", c.arp_refused},
                      {"dns_answered", c.dns_answered},   {"dns_nxdomain", c.dns_nxdomain},
                      {"dns_refused", c.dns_refused},     {"dns_errors", c.dns_errors},
                      {"stale_vip", c.stale_vip},
                      {"unprotected_src", c.unprotected_src}, {"real_blocked", c.real_blocked},
                      {"spoofed", c.spoofed},             {"unlocated", c.unlocated},
                      {"no_path", c.no_path},             {"not_ready", c.not_ready},
                      {"parse_errors", c.parse_errors},   {"sessions_full", c.sessions_full},
                      {"flows_removed", c.flows_removed}, {"delivered_only", c.delivered_only}, {"reroutes", c.reroutes},
                      {"publish_errors", publish_errors_.load()}};
  j["probes"] = c.probes;
  j["probes_deferred"] = c.probes_deferred;
  j["rotation_deferred"] = c.rotation_deferred;
  j["resyncs"] = c.resyncs;
  j["resync_kept"] = c.resync_kept;
  j["resync_added"] = c.resync_added;
  j["resync_deleted"] = c.resync_deleted;
  j["resync_adopted"] = c.resync_adopted;
  j["resync_errors"] = c.resync_errors;
  j["handoffs_out"] = c.handoffs_out;
  j["handoffs_in"] = c.handoffs_in;
  j["handoff_misses"] = c.handoff_misses;
  j["handoff_errors"] = c.handoff_errors;
  j["handoff_dropped"] = c.handoff_dropped;
  j["onward"] = c.onward;
  // The edge guard (docs/threat-model.md): frames the source guard dropped at the controller,
  // rules sent, and what the switches' guard rules dropped (packet counts from flow stats every
  // second; a spoof drop rule's count when it expires).
  using guard::Kind;
  auto dropped = [&](Kind k) { return c.switch_dropped[static_cast<int>(k)]; };
  j["guard"] = {{"ipv6", cfg_.ipv6 == Ipv6Policy::kBlock ? "block" : "allow"},
                {"source_guard", cfg_.source_guard},
                {"real_blocks", real_blocks_.size()},
                {"real_placement", real_per_host_ ? "host_switch" : "every_switch"},
                {"spoofed_src", c.spoofed_src},
                {"rules", c.guard_rules},
                {"rule_errors", c.guard_errors},
                {"ipv6_dropped", dropped(Kind::kIpv6)},
                {"real_dropped", dropped(Kind::kRealDrop)},
                {"vip_source_dropped", dropped(Kind::kVipSource)},
                {"spoof_dropped", dropped(Kind::kSpoof)}};
  j["resync_last_ms"] = static_cast<double>(resync_last_us_.load()) / 1000.0;
  j["resync_max_ms"] = static_cast<double>(resync_max_us_.load()) / 1000.0;
  j["boot"] = boot_;
  j["reloaded"] = recovered_.reloaded ? 1 : 0;
  j["reloaded_epoch"] = recovered_.epoch;
  j["reloaded_bindings"] = recovered_.bindings;
  j["recover_errors"] = recover_errors_.load();
  j["vips_sync_failed"] = vips_sync_failed_.load();
  j["vips_sync_max_ms"] = static_cast<double>(vips_sync_max_us_.load()) / 1000.0;
  if (store_ != nullptr) j["cluster"] = cluster_json();
  return j;
}

}  // namespace sdn::apps::cpam
