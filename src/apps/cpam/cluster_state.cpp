// CPAM's shared state in Redis: record formats and the worker thread (cluster_state.hpp).
#include "apps/cpam/cluster_state.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/log.hpp"
#include "pkt/addr.hpp"

namespace sdn::apps::cpam::shared {

namespace {
nlohmann::json parse(std::string_view text) { return nlohmann::json::parse(text, nullptr, false); }
}  // namespace

std::string sessions_key(const std::string& instance, unsigned shard) {
  return fmt::format("cpam:sessions:{}:{}", instance, shard);
}
std::string pins_key(const std::string& instance) { return fmt::format("cpam:pins:{}", instance); }

std::string encode_vips(const SharedVips& s, const HostDirectory& dir) {
  auto j = recovery::vips_to_json(s.vips, dir, s.phase);
  j["seq"] = s.seq;
  j["leader"] = s.leader;
  j["generation"] = s.generation;
  if (s.due_ms != 0) j["due_ms"] = s.due_ms;
  return j.dump();
}

Expected<SharedVips, std::string> decode_vips(std::string_view text, const HostDirectory& dir, uint32_t pool) {
  const auto j = parse(text);
  if (!j.is_object()) return unexpected(std::string("not a JSON object"));
  SharedVips s;
  const auto seq = j.find("seq");
  if (seq == j.end() || !seq->is_number_unsigned()) return unexpected(std::string("seq: missing or not a count"));
  s.seq = seq->get<uint64_t>();
  if (auto l = j.find("leader"); l != j.end() && l->is_string()) s.leader = l->get<std::string>();
  if (auto g = j.find("generation"); g != j.end() && g->is_number_unsigned()) s.generation = g->get<uint64_t>();
  if (auto p = j.find("phase"); p != j.end() && p->is_string()) s.phase = p->get<std::string>();
  if (auto d = j.find("due_ms"); d != j.end() && d->is_number_integer()) s.due_ms = d->get<int64_t>();
  auto v = recovery::vips_from_json(j, dir, pool);
  if (!v) return unexpected(v.error());
  s.vips = std::move(*v);
  return s;
}

std::string encode_epoch(const SharedVips& s) {
  return nlohmann::json{{"epoch", s.vips.epoch}, {"seq", s.seq}, {"phase", s.phase}}.dump();
}

std::optional<uint64_t> epoch_seq(std::string_view text) {
  const auto j = parse(text);
  if (!j.is_object()) return std::nullopt;
  const auto seq = j.find("seq");
  if (seq == j.end() || !seq->is_number_unsigned()) return std::nullopt;
  return seq->get<uint64_t>();
}

std::string handoff_key(uint8_t proto, uint32_t server_ip, uint32_t vc_ip, uint16_t sport, uint16_t cport) {
  return fmt::format("cpam:handoff:{}:{}:{}:{}:{}", proto, pkt::Ipv4Addr{server_ip}.to_string(),
                     pkt::Ipv4Addr{vc_ip}.to_string(), sport, cport);
}

std::string encode_handoff(const Handoff& h, const HostDirectory& dir) {
  return nlohmann::json{{"proto", h.proto},
                        {"client", pkt::Ipv4Addr{dir.hosts.at(h.client).ip}.to_string()},
                        {"server", pkt::Ipv4Addr{dir.hosts.at(h.server).ip}.to_string()},
                        {"vc", h.vc},
                        {"vs", h.vs},
                        {"cport", h.cport},
                        {"sport", h.sport},
                        {"instance", h.instance}}
      .dump();
}

Expected<Handoff, std::string> decode_handoff(std::string_view text, const HostDirectory& dir, uint32_t pool) {
  const auto j = parse(text);
  if (!j.is_object()) return unexpected(std::string("not a JSON object"));
  Handoff h;
  auto count = [&](const char* f, uint64_t max) -> Expected<uint64_t, std::string> {
    const auto it = j.find(f);
    if (it == j.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max)
      return unexpected(fmt::format("{}: missing or out of range", f));
    return it->get<uint64_t>();
  };
  auto host = [&](const char* f) -> Expected<uint32_t, std::string> {
    const auto it = j.find(f);
    if (it == j.end() || !it->is_string()) return unexpected(fmt::format("{}: missing", f));
    auto ip = pkt::Ipv4Addr::parse(it->get<std::string>());
    if (!ip) return unexpected(fmt::format("{}: not an IPv4 address", f));
    auto idx = dir.find_ip(ip->value);
    if (!idx) return unexpected(fmt::format("{}: {} is not a protected host", f, it->get<std::string>()));
    return *idx;
  };
  auto proto = count("proto", 255);
  auto vc = count("vc", pool - 1);
  auto vs = count("vs", pool - 1);
  auto cport = count("cport", 0xffff);
  auto sport = count("sport", 0xffff);
  auto client = host("client");
  auto server = host("server");
  for (const auto* e : {&proto, &vc, &vs, &cport, &sport})
    if (!*e) return unexpected(e->error());
  if (!client) return unexpected(client.error());
  if (!server) return unexpected(server.error());
  h.proto = static_cast<uint8_t>(*proto);
  h.vc = static_cast<uint32_t>(*vc);
  h.vs = static_cast<uint32_t>(*vs);
  h.cport = static_cast<uint16_t>(*cport);
  h.sport = static_cast<uint16_t>(*sport);
  h.client = *client;
  h.server = *server;
  if (auto i = j.find("instance"); i != j.end() && i->is_string()) h.instance = i->get<std::string>();
  return h;
}

std::string encode_pins(const std::string& instance, int64_t time_ms, const std::set<uint32_t>& vips) {
  return nlohmann::json{{"instance", instance}, {"time_ms", time_ms}, {"vips", vips}}.dump();
}

std::optional<std::set<uint32_t>> decode_pins(std::string_view text, uint32_t pool) {
  const auto j = parse(text);
  if (!j.is_object()) return std::nullopt;
  const auto v = j.find("vips");
  if (v == j.end() || !v->is_array()) return std::nullopt;
  std::set<uint32_t> out;
  for (const auto& e : *v) {
    if (!e.is_number_unsigned() || e.get<uint64_t>() >= pool) return std::nullopt;
    out.insert(e.get<uint32_t>());
  }
  return out;
}

std::vector<std::string> decode_instances(std::string_view text) {
  std::vector<std::string> out;
  const auto j = parse(text);
  if (!j.is_array()) return out;
  for (const auto& e : j)
    if (e.is_string() && !e.get<std::string>().empty()) out.push_back(e.get<std::string>());
  return out;
}

// ---- RemotePins ---------------------------------------------------------------------------

void RemotePins::present(const std::string& instance, std::set<uint32_t> vips, Clock::time_point /*now*/) {
  auto& e = by_instance_[instance];
  e.vips = std::move(vips);
  e.seen = true;
  e.gone_since.reset();
}

void RemotePins::absent(const std::string& instance, Clock::time_point now) {
  auto& e = by_instance_[instance];
  if (!e.gone_since) e.gone_since = now;
}

bool RemotePins::referenced(uint32_t vip, Clock::time_point now) const {
  for (const auto& [id, e] : by_instance_) {
    if (e.gone_since && now - *e.gone_since >= hold_) continue;  // its sessions were adopted by now
    if (!e.seen) return true;  // listed, never read: it may pin anything
    if (e.vips.contains(vip)) return true;
  }
  return false;
}

std::vector<std::string> RemotePins::known() const {
  std::vector<std::string> out;
  for (const auto& [id, e] : by_instance_) out.push_back(id);
  return out;
}

std::vector<std::string> RemotePins::expired(Clock::time_point now) const {
  std::vector<std::string> out;
  for (const auto& [id, e] : by_instance_)
    if (e.gone_since && now - *e.gone_since >= hold_) out.push_back(id);
  return out;
}

size_t RemotePins::pinned_count() const {
  size_t n = 0;
  for (const auto& [id, e] : by_instance_)
    if (!e.gone_since) n += e.vips.size();
  return n;
}

// ---- Link -----------------------------------------------------------------------------------

Link::Link(std::shared_ptr<Store> store, const CpamConfig& cfg, const HostDirectory& dir)
    : store_(std::move(store)), cfg_(cfg), dir_(dir), instance_(store_->instance_id()), remote_(cfg.cluster_pin_hold) {}

Link::~Link() { stop(); }

void Link::start(std::function<void()> on_state) {
  if (thread_.joinable()) return;
  on_state_ = std::move(on_state);  // before the thread: it only reads it
  thread_ = std::thread([this] { run(); });
  // Under the lock: the shards' handoff_put/handoff_get look at it from their own threads.
  std::lock_guard lock(mu_);
  handoff_thread_ = std::thread([this] { run_handoffs(); });
}

void Link::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  handoff_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (handoff_thread_.joinable()) handoff_thread_.join();
  on_state_ = nullptr;  // the thread that called it is gone
}

bool Link::handoff_put(std::string key, std::string value, std::chrono::milliseconds ttl,
                       std::function<void(bool)> done) {
  std::lock_guard lock(mu_);
  if (stop_ || !handoff_thread_.joinable() || handoffs_.size() >= kHandoffQueue) {
    ++counters_.handoff_refused;
    return false;
  }
  handoffs_.push_back([this, key = std::move(key), value = std::move(value), ttl, done = std::move(done)] {
    const bool ok = store_->set(key, value, ttl);
    {
      std::lock_guard l(mu_);
      ++(ok ? counters_.handoff_puts : counters_.handoff_put_errors);
    }
    done(ok);
  });
  handoff_cv_.notify_one();
  return true;
}

bool Link::handoff_get(std::string key, std::function<void(std::optional<std::string>)> done) {
  std::lock_guard lock(mu_);
  if (stop_ || !handoff_thread_.joinable() || handoffs_.size() >= kHandoffQueue) {
    ++counters_.handoff_refused;
    return false;
  }
  handoffs_.push_back([this, key = std::move(key), done = std::move(done)] {
    auto v = store_->get(key);
    {
      std::lock_guard l(mu_);
      ++counters_.handoff_gets;
      if (v) ++counters_.handoff_found;
    }
    done(std::move(v));
  });
  handoff_cv_.notify_one();
  return true;
}

// Requests still queued at stop are dropped: their packets are lost as on any shutdown.
void Link::run_handoffs() {
  std::unique_lock lock(mu_);
  while (true) {
    handoff_cv_.wait(lock, [this] { return stop_ || !handoffs_.empty(); });
    if (stop_) return;
    auto job = std::move(handoffs_.front());
    handoffs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void Link::put_sessions(unsigned shard, nlohmann::json bound, std::set<uint32_t> pins) {
  {
    std::lock_guard lock(mu_);
    own_[shard] = {std::move(bound), std::move(pins)};
    dirty_ = true;
  }
  cv_.notify_all();
}

std::optional<SharedVips> Link::take_state(uint64_t after) {
  std::lock_guard lock(mu_);
  if (!state_ || state_->seq <= after) return std::nullopt;
  return state_;
}

bool Link::remote_referenced(uint32_t vip) const {
  std::lock_guard lock(mu_);
  return remote_.referenced(vip, Clock::now());
}

bool Link::pins_fresh() const {
  std::lock_guard lock(mu_);
  return pins_read_ != Clock::time_point{} && Clock::now() - pins_read_ < std::chrono::seconds(2) + cfg_.cluster_poll;
}

size_t Link::remote_pinned() const {
  std::lock_guard lock(mu_);
  return remote_.pinned_count();
}

Link::Counters Link::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

// Every poll interval: the epoch key (and the state when it moved); every second, or at once
// when a shard handed over new bindings: this instance's records; every second: the others'.
void Link::run() {
  auto next_own = Clock::now();
  auto next_pins = Clock::now();
  std::unique_lock lock(mu_);
  while (!stop_) {
    const auto now = Clock::now();
    const bool own = dirty_ || now >= next_own;
    const bool pins = now >= next_pins;
    lock.unlock();
    poll_epoch();
    if (own) {
      publish_own();
      next_own = Clock::now() + std::chrono::seconds(1);
    }
    if (pins) {
      read_pins();
      next_pins = Clock::now() + std::chrono::seconds(1);
    }
    lock.lock();
    bool fast = false;
    const auto wait = next_poll(fast);
    if (fast) ++counters_.fast_polls;
    cv_.wait_for(lock, wait, [this] { return stop_ || dirty_; });
  }
}

Clock::duration Link::next_poll(bool& fast) const {
  const Clock::duration poll = cfg_.cluster_poll;
  fast = false;
  // The leader's own rotation: it publishes itself, nothing to wait for.
  if (!state_ || state_->phase != "reserved" || state_->leader == instance_) return poll;
  const Clock::duration step = std::min<Clock::duration>(kFastPoll, poll);
  if (state_->due_ms == 0) {  // a leader that names no due time: fast from the reserved write on
    fast = Clock::now() - reserved_seen_ < kFastWindow;
    return fast ? step : poll;
  }
  const auto to_due = std::chrono::milliseconds(state_->due_ms - unix_ms());
  if (to_due > kFastPoll) return std::min<Clock::duration>(poll, to_due - kFastPoll);  // not yet
  fast = -to_due < cfg_.preinstall_timeout + kFastWindow;
  return fast ? step : poll;
}

void Link::poll_epoch() {
  auto e = store_->get(kEpochKey);
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    ++counters_.polls;
    if (!e) return;
    auto s = epoch_seq(*e);
    if (!s) {
      ++counters_.bad_records;
      return;
    }
    seq = *s;
    if (seq <= polled_seq_) return;
  }
  auto v = store_->get(kVipsKey);
  if (!v) return;
  auto s = decode_vips(*v, dir_, cfg_.pool_size);
  {
    std::lock_guard lock(mu_);
    if (!s) {
      ++counters_.bad_records;
      SDN_LOG_RATELIMITED(spdlog::level::err, "cpam: the shared VIP state is unusable: {}", s.error());
      return;
    }
    ++counters_.states_read;
    polled_seq_ = std::max(polled_seq_, s->seq);
    if (state_ && s->seq <= state_->seq) return;
    state_ = std::move(*s);
    if (state_->phase == "reserved") reserved_seen_ = Clock::now();
  }
  if (on_state_) on_state_();
}

void Link::publish_own() {
  std::map<unsigned, std::pair<nlohmann::json, std::set<uint32_t>>> own;
  {
    std::lock_guard lock(mu_);
    own = own_;
    dirty_ = false;
  }
  const int64_t t = unix_ms();
  std::set<uint32_t> pins;
  uint64_t ok = 0, bad = 0;
  for (const auto& entry : own) {
    pins.insert(entry.second.second.begin(), entry.second.second.end());
    const auto rec = nlohmann::json{{"instance", instance_}, {"time_ms", t}, {"bound", entry.second.first}}.dump();
    (store_->set(sessions_key(instance_, entry.first), rec, cfg_.cluster_record_ttl) ? ok : bad)++;
  }
  (store_->set(pins_key(instance_), encode_pins(instance_, t, pins), cfg_.cluster_record_ttl) ? ok : bad)++;
  // The registry: read, add ourselves if missing, write. Two instances adding at once may lose
  // one entry; it is back within a second (every instance checks on every renewal), and the
  // leader holds an instance it lost sight of for the pin hold anyway.
  auto reg = store_->get(kInstancesKey);
  auto ids = decode_instances(reg.value_or(""));
  if (std::find(ids.begin(), ids.end(), instance_) == ids.end()) {
    ids.push_back(instance_);
    (store_->set(kInstancesKey, nlohmann::json(ids).dump(), {}) ? ok : bad)++;
  }
  std::lock_guard lock(mu_);
  counters_.writes += ok;
  counters_.write_errors += bad;
}

void Link::read_pins() {
  auto reg = store_->get(kInstancesKey);
  if (!reg) {
    // Unreachable, or no instance ever registered (then there is nobody to ask): a missing
    // registry is only fresh when nothing was ever seen.
    std::lock_guard lock(mu_);
    if (remote_.known().empty()) pins_read_ = Clock::now();
    return;
  }
  auto ids = decode_instances(*reg);
  {
    std::lock_guard lock(mu_);
    const auto gone = remote_.expired(Clock::now());
    for (auto& id : remote_.known())
      if (std::find(ids.begin(), ids.end(), id) == ids.end() && std::find(gone.begin(), gone.end(), id) == gone.end())
        ids.push_back(id);
  }
  std::vector<std::pair<std::string, std::optional<std::set<uint32_t>>>> read;
  uint64_t bad = 0;
  for (const auto& id : ids) {
    if (id == instance_) continue;  // our own bindings hold references in our table
    auto rec = store_->get(pins_key(id));
    if (!rec) {
      read.emplace_back(id, std::nullopt);
      continue;
    }
    auto p = decode_pins(*rec, cfg_.pool_size);
    if (!p) {
      ++bad;
      p = std::set<uint32_t>{};
      for (uint32_t v = 0; v < cfg_.pool_size; ++v) p->insert(v);  // unreadable: it pins everything
    }
    read.emplace_back(id, std::move(p));
  }
  const auto now = Clock::now();
  std::vector<std::string> gone;
  {
  std::lock_guard lock(mu_);
  counters_.bad_records += bad;
  for (auto& r : read) {
    if (r.second) {
      remote_.present(r.first, std::move(*r.second), now);
    } else {
      remote_.absent(r.first, now);
    }
  }
  pins_read_ = now;
  gone = remote_.expired(now);
  }
  // Instances gone for longer than the hold leave the registry (one write, now and then). An
  // entry of a live instance lost to a concurrent write is re-added by it within a second.
  std::vector<std::string> keep;
  for (const auto& id : decode_instances(*reg))
    if (std::find(gone.begin(), gone.end(), id) == gone.end()) keep.push_back(id);
  if (keep.size() != decode_instances(*reg).size()) store_->set(kInstancesKey, nlohmann::json(keep).dump(), {});
}

}  // namespace sdn::apps::cpam::shared
