// Wires the northbound API to this binary's runtime, data layer and apps: the CPAM hooks reach
// the CpamService (VIP table, snapshot, tunables) and its per-shard instances (sessions,
// rotate-now) by posting to their shards, so the API never touches shard state directly.
#include "bin/northbound_wiring.hpp"

#include <future>

#include <fmt/format.h>

#include "apps/cpam/cpam.hpp"
#include "apps/ids/detector.hpp"
#include "apps/ids/sampler.hpp"
#include "apps/mitigation/mitigation.hpp"
#include "pkt/addr.hpp"
#include "southbound/controller.hpp"

namespace sdn::bin {

namespace {

using Json = nlohmann::json;
using northbound::ApiError;
using Clock = std::chrono::steady_clock;

int64_t to_unix_ms(Clock::time_point t) {
  const auto now_sys = std::chrono::system_clock::now();
  const auto delta = t - Clock::now();
  return std::chrono::duration_cast<std::chrono::milliseconds>((now_sys + std::chrono::duration_cast<std::chrono::system_clock::duration>(delta)).time_since_epoch()).count();
}

std::string ip(uint32_t a) { return pkt::Ipv4Addr{a}.to_string(); }

// Runs `fn` on `shard` and waits for it (at most `timeout`).
template <class T>
std::optional<T> on_shard(southbound::Controller& ctl, unsigned shard, std::chrono::milliseconds timeout, std::function<T()> fn) {
  auto p = std::make_shared<std::promise<T>>();
  auto fut = p->get_future();
  ctl.post(shard, [p, fn = std::move(fn)] { p->set_value(fn()); });
  if (fut.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  return fut.get();
}

Json config_json(const apps::cpam::CpamService& svc) {
  const auto& c = svc.config();
  const auto t = svc.tunables();
  return {{"rotation_interval_ms", t.rotation_interval.count()},
          {"batch_hosts", t.batch_hosts},
          {"batch_delay_ms", t.batch_delay.count()},
          {"pool_size", c.pool_size},
          {"vip_range", fmt::format("{}/{}", ip(c.vip_base), c.vip_prefix_len)},
          {"zone", c.zone},
          {"dns_ip", ip(c.dns_ip)},
          {"tcp_idle_timeout_s", c.tcp_idle.count()},
          {"udp_active_timeout_s", c.udp_active.count()},
          {"reclaim_threshold_ms", c.reclaim_threshold.count()},
          {"grace_accept_ms", c.grace_accept.count()},
          {"quarantine_ms", c.quarantine.count()},
          {"session_linger_ms", c.session_linger.count()},
          {"vip_priority", c.vip_priority},
          {"session_priority", c.session_priority},
          {"table_id", c.table_id},
          {"runtime", c.mode == apps::cpam::RuntimeMode::kSharded ? "sharded" : "cooperative"},
          {"block_real", c.block_real},
          {"stats_interval_ms", c.stats_interval.count()},
          {"hosts", c.hosts.size()},
          {"tunable", {"rotation_interval_ms", "batch_hosts", "batch_delay_ms"}}};
}

Expected<apps::cpam::CpamService::Tunables, ApiError> parse_tunables(const apps::cpam::CpamService& svc, const Json& patch) {
  auto t = svc.tunables();
  const Json current = config_json(svc);
  if (patch.empty()) return unexpected(ApiError{400, "nothing to change (send e.g. {\"rotation_interval_ms\": 30000})", "body"});
  for (const auto& [k, v] : patch.items()) {
    struct Range {
      const char* name;
      int64_t lo, hi;
    };
    static const Range kRanges[] = {{"rotation_interval_ms", 1000, 86'400'000}, {"batch_hosts", 0, 1 << 20}, {"batch_delay_ms", 0, 60000}};
    const Range* r = nullptr;
    for (const auto& cand : kRanges)
      if (k == cand.name) r = &cand;
    if (!r) {
      if (current.contains(k) && k != "tunable")
        return unexpected(ApiError{400, fmt::format("{} cannot change while running (set it in [cpam] and restart)", k), k});
      return unexpected(ApiError{400, fmt::format("unknown field '{}'", k), k});
    }
    if (!v.is_number_integer())
      return unexpected(ApiError{400, fmt::format("{} must be an integer", k), k});
    const int64_t n = v.get<int64_t>();
    if (n < r->lo || n > r->hi) return unexpected(ApiError{400, fmt::format("{} must be in {}..{} (got {})", k, r->lo, r->hi, n), k});
    if (k == "rotation_interval_ms") t.rotation_interval = std::chrono::milliseconds(n);
    if (k == "batch_hosts") t.batch_hosts = static_cast<uint32_t>(n);
    if (k == "batch_delay_ms") t.batch_delay = std::chrono::milliseconds(n);
  }
  return t;
}

northbound::CpamHooks cpam_hooks(std::shared_ptr<apps::cpam::CpamService> svc, southbound::Controller& ctl,
                                 std::chrono::milliseconds timeout) {
  using apps::cpam::VipState;
  northbound::CpamHooks h;
  h.mapping = [svc] {
    auto snap = svc->latest();
    Json hosts = Json::array();
    const auto& dir = svc->hosts().hosts;
    for (size_t i = 0; i < dir.size(); ++i) {
      const uint32_t v = snap && i < snap->primary.size() ? snap->primary[i] : apps::cpam::kNone;
      hosts.push_back({{"name", dir[i].name}, {"real_ip", ip(dir[i].ip)}, {"vip", v == apps::cpam::kNone ? Json() : Json(ip(svc->config().vip_ip(v)))}});
    }
    return Json{{"epoch", snap ? snap->epoch : 0},
                {"published_ms", snap ? Json(to_unix_ms(snap->published)) : Json()},
                {"next_rotation_ms", snap ? Json(to_unix_ms(snap->next_rotation)) : Json()},
                {"zone", svc->config().zone},
                {"hosts", std::move(hosts)}};
  };
  h.status = [svc] {
    auto snap = svc->latest();
    Json states = {{"free", 0}, {"reserved", 0}, {"primary", 0}, {"grace", 0}, {"quarantine", 0}};
    auto& table = svc->vips();
    for (uint32_t i = 0; i < table.size(); ++i) {
      const auto st = table.load(i).state;
      states[apps::cpam::state_name(st)] = states[apps::cpam::state_name(st)].get<uint64_t>() + 1;
    }
    const auto last = svc->last_rotation();
    return Json{{"running", true},
                {"epoch", snap ? snap->epoch : 0},
                {"rotating", svc->rotating()},
                {"interval_ms", svc->tunables().rotation_interval.count()},
                {"published_ms", snap ? Json(to_unix_ms(snap->published)) : Json()},
                {"next_rotation_ms", snap ? Json(to_unix_ms(snap->next_rotation)) : Json()},
                {"hosts", svc->hosts().hosts.size()},
                {"vip_states", states},
                {"counters", svc->stats_json()},
                {"last_rotation",
                 {{"epoch", last.epoch},
                  {"hosts", last.hosts},
                  {"rotated", last.rotated},
                  {"preinstalled", last.preinstalled},
                  {"preinstall_failed", last.preinstall_failed},
                  {"pool_exhausted", last.pool_exhausted},
                  {"duration_ms", std::chrono::duration<double, std::milli>(last.published - last.started).count()}}}};
  };
  h.vips = [svc](const std::string& state, size_t limit) {
    Json out = Json::array();
    auto& table = svc->vips();
    const auto& dir = svc->hosts().hosts;
    for (uint32_t i = 0; i < table.size() && out.size() < limit; ++i) {
      const auto v = table.load(i);
      const std::string name = apps::cpam::state_name(v.state);
      if (state.empty() ? v.state == VipState::kFree : name != state) continue;
      out.push_back({{"vip", ip(svc->config().vip_ip(i))},
                     {"state", name},
                     {"owner", v.owner < dir.size() ? Json(dir[v.owner].name) : Json()},
                     {"sessions", v.sessions},
                     {"flows", v.flows}});
    }
    return out;
  };
  h.sessions = [svc, &ctl, timeout](size_t limit) -> Expected<Json, ApiError> {
    Json out = Json::array();
    for (unsigned shard = 0; shard < ctl.shard_count() && out.size() < limit; ++shard) {
      const size_t room = limit - out.size();
      auto part = on_shard<Json>(ctl, shard, timeout, [svc, shard, room] {
        auto* inst = svc->instance(shard);
        return inst ? inst->sessions_json(room) : Json::array();
      });
      if (!part) return unexpected(ApiError{504, fmt::format("shard {} did not answer within {} ms", shard, timeout.count())});
      for (auto& s : *part) out.push_back(std::move(s));
    }
    return out;
  };
  h.rotate = [svc, &ctl, timeout]() -> Expected<Json, ApiError> {
    if (svc->rotating()) return unexpected(ApiError{409, "a rotation is in progress"});
    auto before = on_shard<Json>(ctl, 0, timeout, [svc] {
      auto* engine = svc->instance(0);
      const auto snap = svc->latest();
      const uint64_t epoch = snap ? snap->epoch : 0;
      if (engine == nullptr) return Json();
      engine->rotate_now();
      return Json(epoch);
    });
    if (!before) return unexpected(ApiError{504, "the rotation engine did not answer"});
    if (before->is_null()) return unexpected(ApiError{409, "the rotation engine is not running yet"});
    return Json{{"ok", true}, {"epoch", *before}, {"next_epoch", before->get<uint64_t>() + 1}};
  };
  h.config = [svc] { return config_json(*svc); };
  h.update_config = [svc, &ctl, timeout](const Json& patch) -> Expected<Json, ApiError> {
    auto t = parse_tunables(*svc, patch);
    if (!t) return unexpected(t.error());
    auto done = on_shard<bool>(ctl, 0, timeout, [svc, tun = *t] {
      svc->set_tunables(tun);
      return true;
    });
    if (!done) return unexpected(ApiError{504, "the rotation engine did not answer"});
    return config_json(*svc);
  };
  return h;
}

// The mitigation service's errors as API errors: "field: why" names the field (400), the rest by
// what they say.
ApiError mitigation_error(const std::string& e) {
  if (e == "not blocked") return ApiError{404, "not blocked", "mac"};
  if (e.rfind("timeout", 0) == 0) return ApiError{504, e};
  if (e == "mac: already blocked") return ApiError{409, e, "mac"};
  const auto colon = e.find(':');
  return ApiError{400, e, colon == std::string::npos ? std::string() : e.substr(0, colon)};
}

northbound::IdsHooks ids_hooks(const AppSet& apps) {
  northbound::IdsHooks h;
  if (auto d = apps.detector) h.detector = [d] { return d->status_json(); };
  if (auto sm = apps.sampler) h.sampler = [sm] { return sm->stats_json(); };
  if (auto m = apps.mitigation) {
    h.blocks = [m] { return m->blocks_json(); };
    h.block = [m](const std::string& mac, const std::string& ip, std::optional<uint32_t> d) -> Expected<Json, ApiError> {
      auto r = m->block(mac, ip, d);
      if (!r) return unexpected(mitigation_error(r.error()));
      return *r;
    };
    h.unblock = [m](const std::string& mac) -> Expected<Json, ApiError> {
      auto r = m->unblock(mac);
      if (!r) return unexpected(mitigation_error(r.error()));
      return *r;
    };
  }
  return h;
}

}  // namespace

northbound::Sources northbound_sources(southbound::Controller& ctl, core::Metrics& metrics,
                                       std::shared_ptr<data::Backends> backends, const data::Coordinator* coordinator,
                                       const AppSet& apps, std::chrono::milliseconds timeout,
                                       std::function<nlohmann::json()> data_stats,
                                       std::function<nlohmann::json()> process_stats) {
  northbound::Sources s;
  s.controller = &ctl;
  s.metrics = &metrics;
  s.backends = std::move(backends);
  s.coordinator = coordinator;
  s.app_stats = [&apps] { return apps.stats(); };
  s.data_stats = std::move(data_stats);
  s.process_stats = std::move(process_stats);
  if (apps.cpam) s.cpam = cpam_hooks(apps.cpam, ctl, timeout);
  s.ids = ids_hooks(apps);
  return s;
}

}  // namespace sdn::bin
