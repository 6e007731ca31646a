// Detector: DetectorCore's per-frame logic (score windows, threshold fit, suspects) and the
// thread that feeds it from the bus.
#include "apps/ids/detector.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "pkt/addr.hpp"

namespace sdn::apps::ids {
namespace {
constexpr std::size_t kMaxSources = 65536;
constexpr std::size_t kMaxIpsPerSource = 1024;
constexpr std::size_t kFlowGeneration = 131072;

std::string mac_text(uint64_t m) { return pkt::Mac{m}.to_string(); }
std::string ip_text(uint32_t ip) { return pkt::Ipv4Addr{ip}.to_string(); }
}  // namespace

std::string_view phase_name(DetectorPhase p) {
  switch (p) {
    case DetectorPhase::kMapping: return "mapping";
    case DetectorPhase::kTraining: return "training";
    case DetectorPhase::kFitting: return "fitting";
    case DetectorPhase::kDetecting: return "detecting";
  }
  return "?";
}

DetectorCore::DetectorCore(DetectorConfig cfg) : cfg_(std::move(cfg)), kit_(cfg_.extractor, cfg_.kitnet) {
  for (const auto& m : cfg_.ignore_macs)
    if (auto mac = pkt::Mac::parse(m)) ignore_.insert(mac->value);
  if (cfg_.threshold) threshold_ = cfg_.threshold;
}

nlohmann::json DetectorCore::state_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : kit_.net().feature_map()) groups.push_back(g);
  const auto es = kit_.extractor().stats();
  return {{"phase", phase_name(phase_)},
          {"processed", kit_.net().processed()},
          {"threshold", threshold_ ? nlohmann::json(*threshold_) : nlohmann::json(nullptr)},
          {"threshold_source", cfg_.threshold ? "config" : "fit"},
          {"fit_packets", cfg_.fit_packets},
          {"fit_max", fit_max_},
          {"fm_grace", cfg_.kitnet.fm_grace},
          {"ad_grace", cfg_.kitnet.ad_grace},
          {"max_ae", cfg_.kitnet.max_ae},
          {"features", kit_.extractor().dim()},
          {"autoencoders", kit_.net().feature_map().size()},
          {"feature_map", groups},
          {"streams", es.streams},
          {"streams_evicted", es.evicted}};
}

void DetectorCore::set_phase(DetectorPhase p, Output& out) {
  phase_ = p;
  spdlog::info("ids: {} (after {} packets{})", phase_name(p), kit_.net().processed(),
               threshold_ ? fmt::format(", threshold {:.4g}", *threshold_) : std::string());
  out.records.emplace_back("network/ids/state", state_json());
}

void DetectorCore::on_frame(const Frame& in, int64_t now_wall_ns, Output& out) {
  // Times come off the wire (any producer may write a batch): kept in [0, 2^62] ns so that window
  // arithmetic cannot overflow.
  Frame f = in;
  f.ts_ns = std::clamp<int64_t>(in.ts_ns, 0, int64_t{1} << 62);
  if (!origin_s_) origin_s_ = std::floor(static_cast<double>(f.ts_ns) * 1e-9);
  auto info = packet_info(f, *origin_s_);
  if (!info) {
    c_.unparsed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const double score = kit_.process(*info);
  c_.packets.fetch_add(1, std::memory_order_relaxed);
  const Endpoint who = initiator(*info);
  // Phase changes follow the model.
  if (phase_ == DetectorPhase::kMapping && kit_.net().phase() != KitNet::Phase::kMapping) set_phase(DetectorPhase::kTraining, out);
  if (phase_ == DetectorPhase::kTraining && kit_.net().phase() == KitNet::Phase::kExecuting)
    set_phase(threshold_ ? DetectorPhase::kDetecting : DetectorPhase::kFitting, out);
  else if (phase_ == DetectorPhase::kFitting) {
    fit_scores_.push_back(score);
    fit_max_ = std::max(fit_max_, score);
    if (fit_scores_.size() >= cfg_.fit_packets) {
      const double t = fit_threshold(fit_scores_, cfg_.fit_z, cfg_.fit_floor);
      if (t > 0) threshold_ = t;
      else threshold_ = fit_max_ > 0 ? fit_max_ * std::max(1.0, cfg_.fit_floor) : 1.0;
      fit_scores_.clear();
      fit_scores_.shrink_to_fit();
      set_phase(DetectorPhase::kDetecting, out);
    }
  } else if (phase_ == DetectorPhase::kDetecting) {
    // Only a conversation's initiator is judged by its packets: a victim's answers to a flood
    // (RSTs, proxied ARP replies) score high too, and so do its answers to benign clients while
    // its statistics are disturbed, but they are evidence against nobody.
    if (who.mac == info->src_mac) judge(*info, f.ts_ns, score, now_wall_ns, out);
    else if (threshold_ && score > *threshold_) c_.anomalous_replies.fetch_add(1, std::memory_order_relaxed);
  }
  score_window(f.ts_ns, score, out);
}

void DetectorCore::score_window(int64_t ts, double score, Output& out) {
  const int64_t width = std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.score_window).count();
  if (win_n_ > 0 && ts >= win_start_ + width) flush(out);
  if (win_n_ == 0) win_start_ = ts - ts % width;
  ++win_n_;
  win_sum_ += score;
  win_max_ = std::max(win_max_, score);
  if (threshold_ && phase_ == DetectorPhase::kDetecting && score > *threshold_) ++win_anom_;
  if (cfg_.score_mode == ScoreMode::kPacket) {
    win_t_.push_back(ts - win_start_);
    win_s_.push_back(score);
  }
}

void DetectorCore::flush(Output& out) {
  if (win_n_ == 0) return;
  nlohmann::json j = {{"t_ns", win_start_},
                      {"window_ms", cfg_.score_window.count()},
                      {"packets", win_n_},
                      {"mean", win_sum_ / static_cast<double>(win_n_)},
                      {"max", win_max_},
                      {"anomalous", win_anom_},
                      {"phase", phase_name(phase_)},
                      {"threshold", threshold_ ? nlohmann::json(*threshold_) : nlohmann::json(nullptr)}};
  if (cfg_.score_mode == ScoreMode::kPacket) {
    j["offsets_ns"] = std::move(win_t_);
    j["scores"] = std::move(win_s_);
    win_t_.clear();
    win_s_.clear();
  }
  out.records.emplace_back("network/ids/score", std::move(j));
  c_.score_records.fetch_add(1, std::memory_order_relaxed);
  win_n_ = win_anom_ = 0;
  win_sum_ = win_max_ = 0;
}

DetectorCore::Endpoint DetectorCore::initiator(const PacketInfo& p) {
  const Endpoint src{p.src_mac, p.src_ip};
  const Endpoint dst{p.dst_mac, p.dst_ip};
  uint64_t x, y;
  if (p.kind == PacketInfo::Kind::kOther) {
    x = p.src_mac, y = p.dst_mac;
  } else {
    x = (uint64_t{p.src_ip} << 16) | p.src_port;
    y = (uint64_t{p.dst_ip} << 16) | p.dst_port;
  }
  const uint8_t proto = p.kind == PacketInfo::Kind::kArp ? 0xff : p.kind == PacketInfo::Kind::kOther ? 0xfe : p.proto;
  const bool src_low = x <= y;
  const FlowKey k{src_low ? x : y, src_low ? y : x, proto};
  // TCP says who started: a SYN without ACK comes from the initiator, a SYN+ACK goes to it.
  std::optional<Endpoint> known;
  if (p.proto == 6 && p.kind == PacketInfo::Kind::kIpv4 && (p.tcp_flags & 0x02)) known = (p.tcp_flags & 0x10) ? dst : src;
  auto it = flows_new_.find(k);
  if (it != flows_new_.end()) {
    if (known) it->second = *known;
    return it->second;
  }
  Endpoint who = src;
  if (auto old = flows_old_.find(k); old != flows_old_.end()) who = old->second;
  if (known) who = *known;
  if (flows_new_.size() >= kFlowGeneration) {
    flows_old_ = std::move(flows_new_);
    flows_new_.clear();
  }
  flows_new_.emplace(k, who);
  return who;
}

void DetectorCore::judge(const PacketInfo& p, int64_t ts, double score, int64_t now_wall_ns, Output& out) {
  if (!threshold_ || score <= *threshold_) return;
  c_.anomalous.fetch_add(1, std::memory_order_relaxed);
  const pkt::Mac src{p.src_mac};
  if (src.is_multicast() || src.value == 0 || ignore_.count(p.src_mac)) return;
  if (sources_.size() >= kMaxSources && !sources_.count(p.src_mac)) {
    // Forget the sources that have been quiet for a window; if none, start over (counted as
    // evictions in the state only through the smaller map: a flood of forged MACs must not grow
    // memory).
    const int64_t width = std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.window).count();
    std::erase_if(sources_, [&](const auto& kv) {
      const auto& s = kv.second;
      const int64_t last = s.filled ? s.ring[(s.next + s.ring.size() - 1) % s.ring.size()] : INT64_MIN;
      return last < ts - width;
    });
    if (sources_.size() >= kMaxSources) sources_.clear();
  }
  Source& s = sources_[p.src_mac];
  if (s.ring.empty()) s.ring.assign(cfg_.min_anomalous, 0);
  s.ring[s.next] = ts;
  s.next = (s.next + 1) % s.ring.size();
  s.filled = std::min(s.filled + 1, s.ring.size());
  s.max_score = std::max(s.max_score, score);
  if (p.kind != PacketInfo::Kind::kOther) {
    s.last_ip = p.src_ip;
    if (s.ips.size() < kMaxIpsPerSource) s.ips.insert(p.src_ip);
  }
  if (s.filled < s.ring.size()) return;
  const int64_t oldest = s.ring[s.next];  // the min_anomalous-th most recent
  const int64_t width = std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.window).count();
  if (ts - oldest > width) return;
  const int64_t holdoff = std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.holdoff).count();
  if (s.last_published != INT64_MIN && ts - s.last_published < holdoff) return;
  s.last_published = ts;
  nlohmann::json j = {{"mac", mac_text(p.src_mac)},
                      {"ip", s.last_ip ? ip_text(s.last_ip) : std::string()},
                      {"ips", s.ips.size()},
                      {"score", s.max_score},
                      {"threshold", *threshold_},
                      {"anomalous", s.ring.size()},
                      {"window_ms", cfg_.window.count()},
                      {"first_ns", oldest},
                      {"packet_ns", ts},
                      {"detected_ns", now_wall_ns}};
  out.records.emplace_back("network/ids/suspect/" + mac_text(p.src_mac), std::move(j));
  c_.suspects.fetch_add(1, std::memory_order_relaxed);
  s.max_score = 0;
}

// ---------------------------------------------------------------- Detector (thread + bus)

Detector::Detector(DetectorConfig cfg, std::shared_ptr<data::Due> due)
    : cfg_(cfg), due_(std::move(due)), core_(std::move(cfg)) {}

Detector::~Detector() { stop(); }

Expected<void, std::string> Detector::start() {
  if (!due_) return unexpected(std::string("ids: no data layer"));
  if (thread_.joinable()) return {};
  auto sub = due_->observe(kTrafficPattern, [this](const data::RecordPtr& r) {
    std::lock_guard lock(mu_);
    if (queue_.size() >= cfg_.max_queued_batches) {
      core_.counters().queue_drops.fetch_add(1, std::memory_order_relaxed);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "ids: detector {} batches behind; dropping one", queue_.size());
      return;
    }
    queue_.push_back(r);
    cv_.notify_one();
  });
  if (!sub) return unexpected(sub.error());
  sub_ = std::move(*sub);
  {
    std::lock_guard lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { run(); });
  return {};
}

void Detector::stop() {
  sub_.cancel();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Detector::run() {
  for (;;) {
    data::RecordPtr r;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      r = std::move(queue_.front());
      queue_.pop_front();
    }
    process(r);
  }
  DetectorCore::Output out;
  {
    std::lock_guard lock(core_mu_);
    core_.flush(out);
  }
  for (auto& [k, v] : out.records) (void)due_->write(k, std::move(v), data::kNoWait);
}

void Detector::process(const data::RecordPtr& r) {
  auto& c = core_.counters();
  if (!r->value.is_bytes()) {
    c.bad_batches.fetch_add(1, std::memory_order_relaxed);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "ids: {} from {} is not a packet batch (JSON); skipped", r->key, r->app_id);
    return;
  }
  DetectorCore::Output out;
  {
    std::lock_guard lock(core_mu_);
    const int64_t now = data::wall_ns();
    auto n = for_each_frame(r->value.bytes(), [&](const Frame& f) { core_.on_frame(f, now, out); });
    c.batches.fetch_add(1, std::memory_order_relaxed);
    if (!n) {
      c.bad_batches.fetch_add(1, std::memory_order_relaxed);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "ids: bad batch on {} from {}: {}", r->key, r->app_id, n.error());
    }
  }
  for (auto& [k, v] : out.records) {
    // Suspects go out at once; score windows and states ride the normal batching.
    const unsigned flags = k.rfind("network/ids/suspect/", 0) == 0 ? data::kNoWait : 0u;
    if (auto w = due_->write(k, std::move(v), flags); !w) {
      c.write_errors.fetch_add(1, std::memory_order_relaxed);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "ids: cannot write {}: {}", k, w.error());
    }
  }
}

nlohmann::json Detector::stats_json() const {
  const auto& c = core_.counters();
  return {{"batches", c.batches.load()},         {"packets", c.packets.load()},
          {"unparsed", c.unparsed.load()},       {"bad_batches", c.bad_batches.load()},
          {"queue_drops", c.queue_drops.load()}, {"anomalous", c.anomalous.load()},
          {"suspects", c.suspects.load()},       {"score_records", c.score_records.load()},
          {"anomalous_replies", c.anomalous_replies.load()},
          {"write_errors", c.write_errors.load()}};
}

nlohmann::json Detector::status_json() const {
  nlohmann::json j;
  {
    std::lock_guard lock(core_mu_);
    j = core_.state_json();
  }
  j["counters"] = stats_json();
  {
    std::lock_guard lock(mu_);
    j["queued_batches"] = queue_.size();
  }
  return j;
}

}  // namespace sdn::apps::ids
