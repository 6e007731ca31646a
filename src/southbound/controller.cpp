// The switch runtime: listener, per-shard apps and connections, datapath registry.
#include "southbound/controller.hpp"

#include <future>

#include <asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "southbound/connection.hpp"
#include "southbound/transport.hpp"

namespace sdn::southbound {

Controller::Controller(core::ShardPool& pool, SouthboundConfig cfg, core::Metrics& metrics,
                       std::vector<AppFactory> apps)
    : pool_(pool), cfg_(std::move(cfg)), metrics_(metrics), counters_(std::make_shared<Counters>(metrics)) {
  for (size_t i = 0; i < pool_.size(); ++i) {
    auto st = std::make_unique<ShardState>();
    st->shard = &pool_.at(i);
    for (auto& make : apps) st->apps.push_back(make(static_cast<unsigned>(i)));
    shards_.push_back(std::move(st));
  }
  // on_start runs on each shard's thread as soon as the pool starts, before any connection.
  for (size_t i = 0; i < shards_.size(); ++i) {
    ShardState* st = shards_[i].get();
    st->shard->post([this, st, i] {
      for (auto& app : st->apps) app->on_start(*this, static_cast<unsigned>(i));
    });
  }
}

unsigned Controller::current_shard() const {
  core::Shard* s = core::Shard::current();
  if (s == nullptr || s->index() >= shards_.size() || shards_[s->index()]->shard != s) return kNoShard;
  return s->index();
}

void Controller::post(unsigned shard, std::function<void()> fn) {
  if (stopping_ || shard >= shards_.size()) return;
  shards_[shard]->shard->post([this, fn = std::move(fn)] {
    if (!stopping_) fn();
  });
}

void Controller::post_soon(unsigned shard, std::function<void()> fn) {
  if (stopping_ || shard >= shards_.size()) return;
  const unsigned self = current_shard();
  if (self == kNoShard) {
    post(shard, std::move(fn));
    return;
  }
  counters_->soon_calls.inc();
  ShardState& me = *shards_[self];
  if (me.outbox.size() < shards_.size()) me.outbox.resize(shards_.size());
  me.outbox[shard].push_back(std::move(fn));
  if (me.outbox_armed) return;
  me.outbox_armed = true;
  // Posted twice: the first runs after this handler, when the flushes it posted for its
  // replies are queued; the second goes behind them. So the other shard is woken after the
  // replies are written, not in front of them.
  me.shard->post([this, self] {
    if (!stopping_) shards_[self]->shard->post([this, self] { flush_outbox(self); });
  });
}

void Controller::flush_outbox(unsigned self) {
  ShardState& me = *shards_[self];
  me.outbox_armed = false;
  if (stopping_) return;
  for (unsigned t = 0; t < me.outbox.size(); ++t) {
    if (me.outbox[t].empty()) continue;
    std::vector<std::function<void()>> fns;
    fns.swap(me.outbox[t]);
    if (t == self) {  // this shard's own: it is after the turn already
      for (auto& f : fns) f();
      continue;
    }
    counters_->soon_posts.inc();
    post(t, [fns = std::move(fns)] {
      for (const auto& f : fns) f();
    });
  }
}

// Where switch `dpid` is up: its weak connection and shard, or false.
bool Controller::locate_up(uint64_t dpid, std::weak_ptr<Connection>& weak, unsigned& shard) const {
  std::lock_guard lock(reg_mu_);
  auto it = registry_.find(dpid);
  // Registered is not enough: mid-handshake, or (cluster mode) standby, the apps keep out.
  if (it == registry_.end() || !it->second.summary.up) return false;
  weak = it->second.conn;
  shard = it->second.summary.shard;
  return true;
}

bool Controller::with_switch(uint64_t dpid, std::function<void(SwitchContext&)> fn) {
  return with_switch_via(dpid, std::move(fn), false);
}

bool Controller::with_switch_soon(uint64_t dpid, std::function<void(SwitchContext&)> fn) {
  return with_switch_via(dpid, std::move(fn), true);
}

bool Controller::with_switch_via(uint64_t dpid, std::function<void(SwitchContext&)> fn, bool soon) {
  std::weak_ptr<Connection> weak;
  unsigned shard = 0;
  if (!locate_up(dpid, weak, shard)) return false;
  if (stopping_ || shard >= shards_.size()) return false;
  core::Shard& target = *shards_[shard]->shard;
  if (target.on_shard()) {
    auto conn = weak.lock();
    if (!conn || conn->state() != Connection::State::kUp) return false;
    fn(*conn);
    return true;
  }
  auto run = [this, weak, fn = std::move(fn)] {
    auto conn = weak.lock();
    if (stopping_ || !conn || conn->state() != Connection::State::kUp) return;
    fn(*conn);
  };
  if (soon)
    post_soon(shard, std::move(run));
  else
    target.post(std::move(run));
  return true;
}

bool Controller::send_batch_to(uint64_t dpid, std::vector<ofp::Body> batch, Lane lane, BatchCallback done,
                               std::function<void()> queued) {
  std::shared_ptr<Connection> conn;
  unsigned shard = 0;
  {
    std::lock_guard lock(reg_mu_);
    auto it = registry_.find(dpid);
    if (it == registry_.end() || !it->second.summary.up) return false;
    conn = it->second.conn.lock();
    shard = it->second.summary.shard;
  }
  if (stopping_ || shard >= shards_.size() || !conn) return false;
  core::Shard& target = *shards_[shard]->shard;
  if (target.on_shard()) {
    if (conn->state() != Connection::State::kUp) return false;
    conn->send_batch(std::move(batch), lane, std::move(done));
    if (queued) queued();
    return true;
  }
  // Another shard's switch: written from here (remote_send.cpp) unless it must be posted.
  if (lane == Lane::kHigh && cfg_.cross_shard == CrossShard::kDirect) {
    switch (conn->send_batch_remote(batch, done)) {
      case Connection::RemoteResult::kSent:
      case Connection::RemoteResult::kRefused:
        if (queued) queued();
        return true;
      case Connection::RemoteResult::kNotUp:
        break;  // TLS, or not up (yet): the owner's thread decides
    }
  }
  counters_->remote_posted.inc();
  std::weak_ptr<Connection> weak = conn;
  target.post([this, weak, b = std::move(batch), lane, d = std::move(done), q = std::move(queued)]() mutable {
    auto c = weak.lock();
    if (stopping_ || !c || c->state() != Connection::State::kUp) return;
    c->send_batch(std::move(b), lane, std::move(d));
    if (q) q();
  });
  return true;
}

bool Controller::is_up(uint64_t dpid) const {
  if (!arbiter_) return true;
  std::lock_guard lock(reg_mu_);
  auto it = registry_.find(dpid);
  return it != registry_.end() && it->second.summary.up;
}

void Controller::call_after(unsigned shard, Clock::duration delay, std::function<void()> fn) {
  if (stopping_ || shard >= shards_.size()) return;
  auto timer = std::make_shared<asio::steady_timer>(shards_[shard]->shard->context(), delay);
  timer->async_wait([this, timer, fn = std::move(fn)](const std::error_code& ec) {
    if (!ec && !stopping_) fn();
  });
}

Controller::~Controller() { stop(); }

Expected<asio::ip::tcp::endpoint, std::string> Controller::listen() {
  if (cfg_.tls.enabled && !tls_) {
    auto tls = TlsContext::create(cfg_.tls, metrics_);
    if (!tls) return unexpected(tls.error());
    tls_ = std::move(*tls);
  }
  std::error_code ec;
  auto addr = asio::ip::make_address(cfg_.listen_address, ec);
  if (ec) return unexpected("bad listen address '" + cfg_.listen_address + "': " + ec.message());
  asio::ip::tcp::endpoint ep(addr, cfg_.listen_port);
  acceptor_.emplace(pool_.at(0).context());
  acceptor_->open(ep.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_->bind(ep, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    acceptor_.reset();
    return unexpected("cannot listen on " + cfg_.listen_address + ":" + std::to_string(cfg_.listen_port) + ": " +
                      ec.message());
  }
  auto bound = acceptor_->local_endpoint();
  // Start accepting on shard 0's thread.
  pool_.at(0).post([this] { accept_next(); });
  return bound;
}

void Controller::accept_next() {
  if (stopping_ || !acceptor_) return;
  core::Shard& target = pool_.next();
  acceptor_->async_accept(target.context(), [this, &target](const std::error_code& ec, asio::ip::tcp::socket sock) {
    if (stopping_) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      counters_->accept_errors.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "accept failed: {}", ec.message());
      // Out of descriptors and similar: back off briefly instead of spinning.
      auto t = std::make_shared<asio::steady_timer>(pool_.at(0).context(), std::chrono::milliseconds(50));
      t->async_wait([this, t](const std::error_code&) { accept_next(); });
      return;
    }
    counters_->accepted.inc();
    ShardState* st = shards_[target.index()].get();
    target.post([this, st, s = std::make_shared<asio::ip::tcp::socket>(std::move(sock))]() mutable {
      if (stopping_) return;
      auto conn = std::make_shared<Connection>(*this, *st, std::move(*s));
      st->connections.insert(conn);
      conn->start();
    });
    accept_next();
  });
}

void Controller::stop() {
  if (stopping_.exchange(true)) return;
  // Close the acceptor and every connection on its own shard, and wait for each shard.
  std::vector<std::future<void>> done;
  for (size_t i = 0; i < shards_.size(); ++i) {
    auto p = std::make_shared<std::promise<void>>();
    done.push_back(p->get_future());
    ShardState* st = shards_[i].get();
    st->shard->post([this, st, p, i] {
      if (i == 0 && acceptor_) {
        std::error_code ec;
        acceptor_->close(ec);
      }
      auto conns = st->connections;  // close() erases from the set
      for (auto& c : conns) c->close("controller shutting down");
      for (auto& app : st->apps) app->on_stop();
      p->set_value();
    });
  }
  for (auto& f : done) {
    if (f.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
      spdlog::warn("a shard did not finish closing its connections within 5 s");
  }
}

void Controller::register_dpid(uint64_t dpid, const std::shared_ptr<Connection>& conn, unsigned shard,
                               std::string peer, size_t ports) {
  std::shared_ptr<Connection> old;
  unsigned old_shard = 0;
  {
    std::lock_guard lock(reg_mu_);
    auto& e = registry_[dpid];
    if (e.raw != nullptr && e.raw != conn.get()) {
      old = e.conn.lock();
      old_shard = e.summary.shard;
    }
    const bool same = e.raw == conn.get();
    e.conn = conn;
    e.raw = conn.get();
    SwitchSummary next{dpid, shard, std::move(peer), ports};
    if (same) {  // a port change: keep what the connection reported of its role
      next.role = e.summary.role;
      next.generation = e.summary.generation;
      next.up = e.summary.up;
    }
    e.summary = std::move(next);
  }
  if (old) {
    counters_->dpid_replaced.inc();
    spdlog::info("switch {:016x} reconnected; closing its previous connection", dpid);
    pool_.at(old_shard).post([old] { old->close("replaced by a newer connection"); });
  }
}

bool Controller::unregister_dpid(uint64_t dpid, const Connection* conn) {
  std::lock_guard lock(reg_mu_);
  auto it = registry_.find(dpid);
  if (it == registry_.end() || it->second.raw != conn) return false;
  registry_.erase(it);
  return true;
}

void Controller::update_summary(uint64_t dpid, const Connection* conn, Role role, uint64_t generation, bool up) {
  std::lock_guard lock(reg_mu_);
  auto it = registry_.find(dpid);
  if (it == registry_.end() || it->second.raw != conn) return;
  it->second.summary.role = role;
  it->second.summary.generation = generation;
  it->second.summary.up = up;
}

void Controller::set_role_arbiter(std::shared_ptr<RoleArbiter> arbiter) {
  arbiter_ = std::move(arbiter);
  if (arbiter_) arbiter_->attach(this);
}

void Controller::set_role(uint64_t dpid, Role role, uint64_t generation, bool fresh) {
  std::weak_ptr<Connection> weak;
  unsigned shard = 0;
  {
    std::lock_guard lock(reg_mu_);
    auto it = registry_.find(dpid);
    if (it != registry_.end()) {
      weak = it->second.conn;
      shard = it->second.summary.shard;
    }
  }
  if (weak.expired() || stopping_ || shard >= shards_.size()) {
    counters_->role_unknown_switch.inc();
    spdlog::debug("set_role {} for switch {:016x} ignored: not connected here", role_name(role), dpid);
    return;
  }
  // Always posted, even from the shard's own thread: an arbiter may answer from inside
  // switch_connected, while the connection is still in the middle of its own handler.
  shards_[shard]->shard->post([this, weak, role, generation, fresh] {
    if (stopping_) return;
    if (auto conn = weak.lock()) conn->apply_role(role, generation, fresh);
  });
}

std::vector<SwitchSummary> Controller::switches() const {
  std::lock_guard lock(reg_mu_);
  std::vector<SwitchSummary> out;
  out.reserve(registry_.size());
  for (const auto& [dpid, e] : registry_) out.push_back(e.summary);
  return out;
}

bool Controller::connected(uint64_t dpid) const {
  std::lock_guard lock(reg_mu_);
  return registry_.find(dpid) != registry_.end();
}

size_t Controller::switch_count() const {
  std::lock_guard lock(reg_mu_);
  return registry_.size();
}

}  // namespace sdn::southbound
