// Mitigation: decisions (history from Data Archives), drop rules confirmed by barriers on every
// switch, and the action records.
#include "apps/mitigation/mitigation.hpp"

#include <algorithm>
#include <cmath>
#include <future>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "pkt/addr.hpp"
#include "pkt/ethernet.hpp"

namespace sdn::apps::mitigation {
namespace {
int64_t sec_ns(int64_t s) { return s * 1'000'000'000; }
std::string_view match_name(MatchOn m) { return m == MatchOn::kMac ? "eth_src" : "ipv4_src"; }
}  // namespace

MitigationConfig read_mitigation_config(core::Config& cfg, std::string_view s) {
  MitigationConfig c;
  c.priority = static_cast<uint16_t>(cfg.get_int(s, "priority", c.priority, 1, 65535));
  c.table = static_cast<uint8_t>(cfg.get_int(s, "table", c.table, 0, 254));
  c.block = std::chrono::seconds(cfg.get_int(s, "block_s", c.block.count(), 1, 65535));
  c.repeat_factor = cfg.get_double(s, "repeat_factor", c.repeat_factor, 1, 1000);
  c.max_block = std::chrono::seconds(cfg.get_int(s, "max_block_s", c.max_block.count(), 1, 65535));
  c.history = std::chrono::seconds(cfg.get_int(s, "history_s", c.history.count(), 0, 365LL * 86400));
  const std::string m = cfg.get_string(s, "match", "mac");
  if (m == "mac") c.match = MatchOn::kMac;
  else if (m == "ip") c.match = MatchOn::kIp;
  else cfg.add_problem(fmt::format("{}.match: '{}' is not \"mac\" or \"ip\"", s, m));
  c.allow = cfg.get_string_list(s, "allow", {});
  for (const auto& a : c.allow)
    if (!pkt::Mac::parse(a) && !pkt::Ipv4Addr::parse(a))
      cfg.add_problem(fmt::format("{}.allow: '{}' is neither a MAC nor an IPv4 address", s, a));
  c.min_score = cfg.get_double(s, "min_score", c.min_score, 0);
  c.confirm_timeout = std::chrono::milliseconds(cfg.get_int(s, "confirm_timeout_ms", c.confirm_timeout.count(), 1, 60'000));
  if (c.max_block < c.block) cfg.add_problem(fmt::format("{}.max_block_s: below block_s", s));
  return c;
}

nlohmann::json Block::to_json() const {
  return {{"id", id},
          {"cookie", fmt::format("0x{:016x}", kCookieBase | id)},
          {"mac", mac},
          {"ip", ip},
          {"match", match_name(match)},
          {"offence", offence},
          {"hard_timeout_s", hard_timeout_s},
          {"score", score},
          {"reason", reason},
          {"detected_ns", detected_ns},
          {"decided_ns", decided_ns},
          {"installed_ns", installed_ns},
          {"expires_ns", expires_ns},
          {"switches", confirmed.size()},
          {"pending_switches", pending.size()}};
}

MitigationService::MitigationService(MitigationConfig cfg, std::shared_ptr<data::Due> due)
    : cfg_(std::move(cfg)), due_(std::move(due)) {
  for (const auto& a : cfg_.allow) {
    if (auto m = pkt::Mac::parse(a)) allow_macs_.insert(m->to_string());
    else if (auto ip = pkt::Ipv4Addr::parse(a)) allow_ips_.insert(ip->to_string());
  }
}

MitigationService::~MitigationService() { stop(); }

Expected<void, std::string> MitigationService::start(southbound::Runtime& rt) {
  std::lock_guard lock(mu_);
  if (rt_) return {};
  rt_ = &rt;
  if (!due_) return unexpected(std::string("mitigation: no data layer"));
  std::weak_ptr<MitigationService> weak = weak_from_this();
  auto sub = due_->observe(kSuspectPattern, [weak](const data::RecordPtr& r) {
    auto self = weak.lock();
    if (!self) return;
    if (!r->value.is_json()) {
      self->c_.bad_suspects.fetch_add(1);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: {} from {} is not JSON; ignored", r->key, r->app_id);
      return;
    }
    self->on_suspect(r->value.json());
  });
  if (!sub) return unexpected(sub.error());
  sub_ = std::move(*sub);
  return {};
}

void MitigationService::stop() {
  sub_.cancel();
  std::lock_guard lock(mu_);
  rt_ = nullptr;
}

uint32_t MitigationService::offences_in_history(const std::string& mac) {
  uint32_t in_archive = 0;
  data::Query q;
  q.key = "network/mitigation/action/" + mac;
  q.from_ns = data::wall_ns() - sec_ns(cfg_.history.count());
  if (auto recs = due_->get(q); recs) {
    for (const auto& r : *recs)
      if (r.value.is_json() && r.value.json().value("action", "") == "block") ++in_archive;
  } else {
    c_.history_errors.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: history of {} unavailable ({}); using this process's own",
                        mac, recs.error());
  }
  std::lock_guard lock(mu_);
  // The archive may not have committed the newest action yet: this process's own count is a floor.
  return std::max(in_archive, offences_[mac]);
}

std::shared_ptr<Block> MitigationService::decide(const std::string& mac, const std::string& ip, double score,
                                                 int64_t detected_ns, std::string reason,
                                                 std::optional<uint32_t> duration_s) {
  const uint32_t earlier = offences_in_history(mac);
  auto b = std::make_shared<Block>();
  b->mac = mac;
  b->ip = ip;
  b->match = cfg_.match;
  b->offence = earlier + 1;
  double t = static_cast<double>(cfg_.block.count()) * std::pow(cfg_.repeat_factor, earlier);
  t = std::min(t, static_cast<double>(cfg_.max_block.count()));
  b->hard_timeout_s = duration_s ? *duration_s : static_cast<uint32_t>(std::max(1.0, t));
  b->score = score;
  b->reason = std::move(reason);
  b->detected_ns = detected_ns;
  b->decided_ns = data::wall_ns();
  b->expires_ns = b->decided_ns + sec_ns(b->hard_timeout_s);
  std::lock_guard lock(mu_);
  b->id = next_id_++ & 0x00ff'ffff'ffff'ffffULL;
  active_[mac] = b;
  offences_[mac] = b->offence;
  c_.blocks.fetch_add(1);
  if (earlier > 0) c_.repeat_blocks.fetch_add(1);
  return b;
}

ofp::FlowMod MitigationService::rule(const Block& b, uint16_t hard_timeout) const {
  ofp::FlowMod fm;
  fm.cookie = kCookieBase | b.id;
  fm.table_id = cfg_.table;
  fm.priority = cfg_.priority;
  fm.hard_timeout = hard_timeout;
  fm.flags = ofp::kFlowFlagSendFlowRem;
  if (b.match == MatchOn::kIp && !b.ip.empty()) {
    fm.match.set(ofp::OxmField::kEthType, pkt::ethertype::kIpv4);
    fm.match.set(ofp::OxmField::kIpv4Src, pkt::Ipv4Addr::parse(b.ip)->value);
  } else {
    fm.match.set(ofp::OxmField::kEthSrc, pkt::Mac::parse(b.mac)->value);
  }
  // No instructions: matching packets are dropped (OpenFlow 1.3.5 section 5.10).
  return fm;
}

void MitigationService::install(const std::shared_ptr<Block>& b, std::function<void()> on_all_confirmed) {
  std::vector<uint64_t> dpids;
  southbound::Runtime* rt = nullptr;
  {
    std::lock_guard lock(mu_);
    dpids.assign(switches_.begin(), switches_.end());
    rt = rt_;
    for (auto d : dpids) b->pending.insert(d);
  }
  auto settle = [this, b, on_all_confirmed](uint64_t dpid, bool ok) {
    bool done = false;
    {
      std::lock_guard lock(mu_);
      if (!b->pending.erase(dpid)) return;
      if (ok) b->confirmed.insert(dpid);
      if (b->pending.empty() && b->installed_ns == 0) {
        b->installed_ns = data::wall_ns();
        done = true;
      }
    }
    (ok ? c_.rules_installed : c_.rules_failed).fetch_add(1);
    if (done) {
      publish("block", *b);
      if (on_all_confirmed) on_all_confirmed();
    }
  };
  const int64_t now = data::wall_ns();
  const auto remaining = static_cast<uint16_t>(std::clamp<int64_t>((b->expires_ns - now + 999'999'999) / 1'000'000'000, 1, 65535));
  const ofp::FlowMod fm = rule(*b, remaining);
  for (auto dpid : dpids) {
    const bool posted = rt && rt->with_switch(dpid, [fm, settle, dpid](southbound::SwitchContext& sw) {
      sw.send_batch({ofp::Body(fm)}, southbound::Lane::kHigh, [settle, dpid](const southbound::BatchResult& r) {
        if (!r.ok) SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: drop rule on {:016x} failed", dpid);
        settle(dpid, r.ok);
      });
    });
    if (!posted) settle(dpid, false);
  }
  if (dpids.empty()) {
    {
      std::lock_guard lock(mu_);
      b->installed_ns = data::wall_ns();
    }
    SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: no switch connected; block of {} recorded only", b->mac);
    publish("block", *b);
    if (on_all_confirmed) on_all_confirmed();
  }
}

void MitigationService::publish(const std::string& action, const Block& b, nlohmann::json extra) {
  nlohmann::json j;
  {
    std::lock_guard lock(mu_);
    j = b.to_json();
  }
  j["action"] = action;
  j["time_ns"] = data::wall_ns();
  if (extra.is_object())
    for (auto& [k, v] : extra.items()) j[k] = v;
  spdlog::info("mitigation: {} {} ({}; offence {}, {} s, {} switch(es))", action, b.mac, b.reason, b.offence,
               b.hard_timeout_s, j["switches"].get<size_t>());
  if (!due_) return;
  if (auto r = due_->write("network/mitigation/action/" + b.mac, std::move(j), data::kNoWait); !r) {
    c_.write_errors.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: cannot publish: {}", r.error());
  }
}

void MitigationService::expire_due(int64_t now_ns) {
  std::vector<std::shared_ptr<Block>> gone;
  {
    std::lock_guard lock(mu_);
    for (auto it = active_.begin(); it != active_.end();) {
      if (it->second->expires_ns <= now_ns) {
        gone.push_back(it->second);
        it = active_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& b : gone) {
    c_.expired.fetch_add(1);
    publish("expired", *b);
  }
}

void MitigationService::on_suspect(const nlohmann::json& s) {
  c_.suspects.fetch_add(1);
  const auto* mac_j = s.is_object() && s.contains("mac") ? &s["mac"] : nullptr;
  std::optional<pkt::Mac> mac;
  if (mac_j && mac_j->is_string()) mac = pkt::Mac::parse(mac_j->get<std::string>());
  if (!mac || mac->is_multicast() || mac->value == 0) {
    c_.bad_suspects.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: suspect without a unicast 'mac': {}", s.dump().substr(0, 200));
    return;
  }
  std::string ip;
  if (s.contains("ip") && s["ip"].is_string()) {
    if (auto a = pkt::Ipv4Addr::parse(s["ip"].get<std::string>())) ip = a->to_string();
  }
  const double score = s.contains("score") && s["score"].is_number() ? s["score"].get<double>() : 0.0;
  const int64_t detected = s.contains("detected_ns") && s["detected_ns"].is_number_integer() ? s["detected_ns"].get<int64_t>() : 0;
  const std::string m = mac->to_string();
  if (allow_macs_.count(m) || (!ip.empty() && allow_ips_.count(ip))) {
    c_.allowed.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::info, "mitigation: suspect {} ({}) is on the allow list; not blocked", m, ip);
    return;
  }
  if (score <= cfg_.min_score) {
    c_.below_min_score.fetch_add(1);
    return;
  }
  if (cfg_.match == MatchOn::kIp && ip.empty()) {
    c_.bad_suspects.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: match = \"ip\" but suspect {} has no IPv4 address", m);
    return;
  }
  const int64_t now = data::wall_ns();
  expire_due(now);
  {
    std::lock_guard lock(mu_);
    if (active_.count(m)) {
      c_.already_blocked.fetch_add(1);
      return;
    }
  }
  install(decide(m, ip, score, detected, "ids", std::nullopt), {});
}

Expected<nlohmann::json, std::string> MitigationService::block(const std::string& mac_text, const std::string& ip_text,
                                                               std::optional<uint32_t> duration_s) {
  auto mac = pkt::Mac::parse(mac_text);
  if (!mac || mac->is_multicast() || mac->value == 0) return unexpected(std::string("mac: not a unicast MAC address"));
  std::string ip;
  if (!ip_text.empty()) {
    auto a = pkt::Ipv4Addr::parse(ip_text);
    if (!a) return unexpected(std::string("ip: not an IPv4 address"));
    ip = a->to_string();
  }
  if (cfg_.match == MatchOn::kIp && ip.empty()) return unexpected(std::string("ip: required when [mitigation] match = \"ip\""));
  if (duration_s && (*duration_s < 1 || *duration_s > 65535)) return unexpected(std::string("duration_s: 1 to 65535"));
  const std::string m = mac->to_string();
  if (allow_macs_.count(m) || (!ip.empty() && allow_ips_.count(ip)))
    return unexpected(std::string("mac: on the [mitigation] allow list"));
  expire_due(data::wall_ns());
  {
    std::lock_guard lock(mu_);
    if (active_.count(m)) return unexpected(std::string("mac: already blocked"));
  }
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  auto b = decide(m, ip, 0, 0, "api", duration_s);
  install(b, [done] { done->set_value(); });
  if (fut.wait_for(cfg_.confirm_timeout) != std::future_status::ready)
    return unexpected(std::string("timeout: a switch did not confirm the rule in time"));
  std::lock_guard lock(mu_);
  return b->to_json();
}

Expected<nlohmann::json, std::string> MitigationService::unblock(const std::string& mac_text) {
  auto mac = pkt::Mac::parse(mac_text);
  if (!mac) return unexpected(std::string("mac: not a MAC address"));
  const std::string m = mac->to_string();
  std::shared_ptr<Block> b;
  std::vector<uint64_t> dpids;
  southbound::Runtime* rt = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = active_.find(m);
    if (it == active_.end()) return unexpected(std::string("not blocked"));
    b = it->second;
    active_.erase(it);
    dpids.assign(switches_.begin(), switches_.end());
    rt = rt_;
  }
  ofp::FlowMod del;
  del.command = ofp::FlowModCommand::kDelete;
  del.table_id = cfg_.table;
  del.cookie = kCookieBase | b->id;
  del.cookie_mask = ~0ULL;
  auto left = std::make_shared<std::atomic<size_t>>(dpids.size());
  auto ok = std::make_shared<std::atomic<size_t>>(0);
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  if (dpids.empty()) done->set_value();
  for (auto dpid : dpids) {
    auto settle = [left, ok, done](bool good) {
      if (good) ok->fetch_add(1);
      if (left->fetch_sub(1) == 1) done->set_value();
    };
    const bool posted = rt && rt->with_switch(dpid, [del, settle](southbound::SwitchContext& sw) {
      sw.send_batch({ofp::Body(del)}, southbound::Lane::kHigh, [settle](const southbound::BatchResult& r) { settle(r.ok); });
    });
    if (!posted) settle(false);
  }
  const bool in_time = fut.wait_for(cfg_.confirm_timeout) == std::future_status::ready;
  c_.unblocks.fetch_add(1);
  publish("unblock", *b, {{"removed_from", ok->load()}});
  if (!in_time) return unexpected(std::string("timeout: a switch did not confirm the delete in time"));
  std::lock_guard lock(mu_);
  nlohmann::json j = b->to_json();
  j["removed_from"] = ok->load();
  return j;
}

nlohmann::json MitigationService::blocks_json() {
  expire_due(data::wall_ns());
  nlohmann::json arr = nlohmann::json::array();
  std::lock_guard lock(mu_);
  for (const auto& [mac, b] : active_) arr.push_back(b->to_json());
  return arr;
}

nlohmann::json MitigationService::stats_json() const {
  return {{"suspects", c_.suspects.load()},
          {"bad_suspects", c_.bad_suspects.load()},
          {"allowed", c_.allowed.load()},
          {"below_min_score", c_.below_min_score.load()},
          {"already_blocked", c_.already_blocked.load()},
          {"blocks", c_.blocks.load()},
          {"repeat_blocks", c_.repeat_blocks.load()},
          {"rules_installed", c_.rules_installed.load()},
          {"rules_failed", c_.rules_failed.load()},
          {"unblocks", c_.unblocks.load()},
          {"expired", c_.expired.load()},
          {"history_errors", c_.history_errors.load()},
          {"write_errors", c_.write_errors.load()}};
}

void MitigationService::switch_up(southbound::SwitchContext& sw) {
  const uint64_t dpid = sw.dpid();
  std::vector<std::shared_ptr<Block>> blocks;
  {
    std::lock_guard lock(mu_);
    switches_.insert(dpid);
    for (const auto& [mac, b] : active_) blocks.push_back(b);
  }
  // Stale rules from an earlier session of this switch, then the blocks still in force.
  ofp::FlowMod del;
  del.command = ofp::FlowModCommand::kDelete;
  del.table_id = ofp::kTableAll;
  del.cookie = kCookieBase;
  del.cookie_mask = kCookieMask;
  std::vector<ofp::Body> batch{ofp::Body(del)};
  const int64_t now = data::wall_ns();
  for (const auto& b : blocks) {
    if (b->expires_ns <= now) continue;
    batch.emplace_back(rule(*b, static_cast<uint16_t>(std::clamp<int64_t>((b->expires_ns - now + 999'999'999) / 1'000'000'000, 1, 65535))));
  }
  sw.send_batch(std::move(batch), southbound::Lane::kHigh, [this, dpid](const southbound::BatchResult& r) {
    if (!r.ok && !r.disconnected) {
      c_.rules_failed.fetch_add(1);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "mitigation: re-installing blocks on {:016x} failed", dpid);
    }
  });
}

void MitigationService::switch_down(uint64_t dpid) {
  std::lock_guard lock(mu_);
  switches_.erase(dpid);
}

void MitigationService::flow_removed(uint64_t /*dpid*/, const ofp::FlowRemoved& fr) {
  // A hard timeout on any switch ends the block (they all expire together).
  if (fr.reason != 1) return;
  const uint64_t id = fr.cookie & ~kCookieMask;
  std::shared_ptr<Block> b;
  {
    std::lock_guard lock(mu_);
    for (auto it = active_.begin(); it != active_.end(); ++it) {
      if (it->second->id == id) {
        b = it->second;
        active_.erase(it);
        break;
      }
    }
  }
  if (b) {
    c_.expired.fetch_add(1);
    publish("expired", *b);
  }
}

void Mitigation::on_start(southbound::Runtime& rt, unsigned shard) {
  if (shard != 0) return;
  if (auto r = svc_->start(rt); !r) spdlog::error("mitigation: {}", r.error());
}

void Mitigation::on_stop() {
  if (shard_ == 0) svc_->stop();
}

}  // namespace sdn::apps::mitigation
