// The failover mode (RFC 8456 5.4.1 controller failover time, 5.4.2 network re-provisioning
// time) and the multi-controller events behind it. Every emulated switch holds one channel per
// controller (--controllers) and follows OpenFlow roles (roles.hpp). New flows arrive as
// PacketIns at a steady rate; when the controller mastering a switch goes away (killed by
// --kill-cmd, or by the operator), the switch's episode records:
//   failover time        its master's connection loss -> a ROLE_REQUEST(MASTER) from a
//                        controller accepted (without roles: a controller's handshake done);
//   re-provisioning time its master's connection loss -> the answer (FlowMod or PacketOut) to
//                        the first PacketIn sent after the loss;
// and the PacketIns sent in between that were never answered (most were never sent at all:
// a switch without a MASTER or EQUAL controller has nobody to send them to).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <stdexcept>

#include "tools/ofbench/bench.hpp"

namespace sdn::ofbench {

std::vector<asio::ip::tcp::endpoint> Bench::endpoints() const {
  std::vector<asio::ip::tcp::endpoint> eps;
  const std::vector<std::string> names = o_.controllers.empty() ? std::vector<std::string>{o_.controller} : o_.controllers;
  for (const auto& n : names) {
    auto ep = parse_endpoint(n);
    if (!ep)
      throw std::invalid_argument((o_.controllers.empty() ? "bad --controller '" : "bad --controllers entry '") + n +
                                  "' (host:port)");
    eps.push_back(*ep);
  }
  return eps;
}

std::string Bench::controller_name(size_t ch) const {
  if (o_.controllers.empty()) return o_.controller;
  return ch < o_.controllers.size() ? o_.controllers[ch] : "?";
}

// ---- events from the switches ----------------------------------------------------------------

void Bench::on_channel_ready(EmuSwitch& sw, size_t ch) {
  ++channels_ready_;
  if (!failover_armed_ || sw.roles().generation_defined()) return;
  // Without roles (no controller ever sent a MASTER/SLAVE request to this switch), a controller
  // serves the switch as soon as its handshake is done: that ends the switch's failover.
  const double t = now_s();
  for (auto& e : episodes_)
    if (e.sw == sw.index() && e.t_master < 0) {
      e.t_master = t;
      e.new_ch = static_cast<int>(ch);
    }
}

void Bench::on_channel_lost(EmuSwitch& sw, size_t ch, CtlRole role) {
  if (channel_losses_.size() <= ch) channel_losses_.resize(ch + 1, 0);
  ++channel_losses_[ch];
  if (!failover_armed_ || role == CtlRole::kSlave) return;
  // An EQUAL channel's loss interrupts nothing while another MASTER/EQUAL channel is up.
  if (role == CtlRole::kEqual) {
    for (size_t i = 0; i < sw.channels(); ++i)
      if (i != ch && sw.connected(i) && sw.roles().gets_async(i)) return;
  }
  Episode e;
  e.sw = sw.index();
  e.lost_ch = ch;
  e.lost_role = role;
  e.t_loss = now_s();
  e.t_last_answer = last_answer_.size() > sw.index() ? last_answer_[sw.index()] : -1;
  episodes_.push_back(e);
}

void Bench::on_role(EmuSwitch& sw, size_t ch, CtlRole role, uint64_t generation, bool accepted) {
  if (!accepted) {
    ++roles_refused_;
    return;
  }
  if (role == CtlRole::kMaster || role == CtlRole::kSlave) roles_seen_ = true;
  if (role != CtlRole::kMaster) return;
  if (masters_gained_.size() <= ch) masters_gained_.resize(ch + 1, 0);
  ++masters_gained_[ch];
  const double t = now_s();
  for (auto& e : episodes_)
    if (e.sw == sw.index() && e.t_master < 0) {
      e.t_master = t;
      e.new_ch = static_cast<int>(ch);
      e.generation = generation;
    }
}

void Bench::on_slave_write(EmuSwitch& /*sw*/, size_t /*ch*/) { ++slave_writes_; }

// ---- the kill ------------------------------------------------------------------------------

// Runs --kill-cmd through /bin/sh without waiting (the event loop keeps timing), against the
// controller that masters the most switches (the first one when no roles are in use).
void Bench::run_kill_cmd() {
  std::vector<uint32_t> masters(std::max<size_t>(1, o_.controllers.size()), 0);
  for (const auto& s : switches_)
    if (auto m = s->roles().master(); m && *m < masters.size()) ++masters[*m];
  size_t target = 0;
  for (size_t i = 1; i < masters.size(); ++i)
    if (masters[i] > masters[target]) target = i;
  const std::string name = controller_name(target);
  const auto colon = name.rfind(':');
  std::string cmd = o_.kill_cmd;
  auto subst = [&cmd](const std::string& key, const std::string& val) {
    for (size_t p = cmd.find(key); p != std::string::npos; p = cmd.find(key, p + val.size())) cmd.replace(p, key.size(), val);
  };
  subst("{controller}", name);
  subst("{host}", name.substr(0, colon));
  subst("{port}", colon == std::string::npos ? "" : name.substr(colon + 1));
  subst("{index}", std::to_string(target + 1));
  kill_.done = true;
  kill_.target = target;
  kill_.cmd = cmd;
  kill_.t = now_s();
  const pid_t pid = fork();
  if (pid == 0) {
    ::close_range(3, ~0U, 0);  // the switches' sockets stay ours
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  kill_.pid = pid;
  if (!o_.quiet)
    fmt::print(stderr, "ofbench: failover: t={:.3f} s killing {} (masters {} switches): {}\n", kill_.t - measure_begin_,
               name, masters[target], cmd);
}

// ---- the mode ------------------------------------------------------------------------------

void Bench::mode_failover() {
  const auto eps = endpoints();
  const size_t n_ctl = eps.size();
  last_answer_.assign(switches_.size(), -1);
  channel_losses_.assign(n_ctl, 0);
  masters_gained_.assign(n_ctl, 0);
  connect_all();
  // Every channel of every switch handshaken, then (when roles are in use) a MASTER for each.
  const size_t want = switches_.size() * n_ctl;
  if (!run_until([&] { return channels_ready_ >= want; }, o_.handshake_timeout_ms / 1e3))
    throw std::runtime_error(fmt::format("{} of {} switch-controller channels completed the handshake: {}", channels_ready_,
                                         want, last_disconnect_));
  auto all_mastered = [&] {
    for (const auto& s : switches_)
      if (!s->roles().master()) return false;
    return true;
  };
  // A controller that uses roles sends them right after the handshake; give it 2 s to start, then
  // until the handshake timeout to assign every switch.
  run_until([&] { return roles_seen_; }, 2.0);
  if (roles_seen_ && !run_until(all_mastered, o_.handshake_timeout_ms / 1e3))
    throw std::runtime_error("not every switch got a MASTER controller");
  learn_phase();

  // The churn: fresh flows, round robin over the switches, paced by elapsed time.
  on_complete_ = [this](uint32_t ev) {
    const Event& e = events_[ev - 1];
    if (e.kind != Kind::kPacketIn) return;
    last_answer_[e.sw] = std::max(last_answer_[e.sw], e.t1);
    for (auto& ep : episodes_)
      if (ep.sw == e.sw && ep.t_reprov < 0 && e.t0 >= ep.t_loss) ep.t_reprov = e.t1;
  };
  uint64_t made = 0;
  uint32_t next_sw = 0;
  bool sending = true;
  double t0 = now_s();
  tick_every(0.001, [&] {
    if (!sending) return;
    const auto due = static_cast<uint64_t>(o_.rate * (now_s() - t0));
    for (; made < due; ++made) {
      const uint32_t sw = next_sw;
      next_sw = (next_sw + 1) % static_cast<uint32_t>(switches_.size());
      EmuSwitch& s = *switches_[sw];
      const uint64_t k = seq_[sw]++;
      const Bytes frame = cbench_frame(sw, k, true);
      const uint32_t ev = new_event(Kind::kPacketIn, sw);
      const uint32_t m = std::max<uint32_t>(o_.macs_per_switch, 2);
      events_[ev - 1].delivered = s.packet_in(static_cast<uint32_t>(k % m) + 1, frame, ev);
    }
  });
  run_until([] { return false; }, o_.warmup_s);
  measure_begin_ = now_s();
  measuring_ = true;
  failover_armed_ = true;
  {
    nlohmann::json before = nlohmann::json::object();
    for (size_t i = 0; i < n_ctl; ++i) before[controller_name(i)] = 0;
    for (const auto& s : switches_)
      if (auto m = s->roles().master()) before[controller_name(*m)] = before[controller_name(*m)].get<int>() + 1;
    mastership_before_ = before;
  }
  if (!o_.kill_cmd.empty()) {
    run_until([] { return false; }, std::min(o_.kill_at_s, o_.duration_s));
    run_kill_cmd();
  }
  run_until([] { return false; }, std::max(0.0, measure_begin_ + o_.duration_s - now_s()));
  // Not yet re-provisioned everywhere: keep the churn going a while longer.
  run_until([&] {
    for (const auto& e : episodes_)
      if (e.t_reprov < 0) return false;
    return true;
  }, o_.recover_timeout_s);
  measure_end_ = now_s();
  measuring_ = false;
  sending = false;
  run_until([] { return false; }, o_.timeout_ms / 1e3);  // answers still in flight
  stop_ticks();
  on_complete_ = nullptr;
  failover_armed_ = false;
  if (kill_.pid > 0) {
    int st = 0;
    run_until([&] { return waitpid(kill_.pid, &st, WNOHANG) != 0; }, 5.0);
    kill_.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  extra_["failover"] = failover_json();
  main_kind_ = Kind::kPacketIn;
}

nlohmann::json Bench::failover_json() {
  const size_t n_ctl = std::max<size_t>(1, o_.controllers.size());
  std::vector<double> fo, rp, since_answer, from_kill;
  uint64_t in_gap = 0, undelivered = 0, unanswered = 0, in_flight_lost = 0;
  nlohmann::json eps = nlohmann::json::array();
  std::map<uint32_t, bool> affected;
  const double timeout = o_.timeout_ms / 1e3;
  for (const auto& e : episodes_) {
    affected[e.sw] = true;
    const double gap_end = e.t_reprov >= 0 ? e.t_reprov : measure_end_;
    uint64_t g = 0, gu = 0, ga = 0, lost = 0;
    for (const auto& ev : events_) {
      if (ev.kind != Kind::kPacketIn || ev.sw != e.sw) continue;
      if (ev.t0 >= e.t_loss && ev.t0 <= gap_end) {
        ++g;
        if (!ev.delivered) ++gu;
        else if (ev.t1 < 0) ++ga;
      } else if (ev.t0 < e.t_loss && ev.t0 >= e.t_loss - timeout && ev.delivered && ev.t1 < 0) {
        ++lost;  // in flight to the lost controller
      }
    }
    in_gap += g;
    undelivered += gu;
    unanswered += ga;
    in_flight_lost += lost;
    if (e.t_master >= 0) fo.push_back((e.t_master - e.t_loss) * 1e3);
    if (e.t_reprov >= 0) rp.push_back((e.t_reprov - e.t_loss) * 1e3);
    if (e.t_last_answer >= 0 && e.t_master >= 0) since_answer.push_back((e.t_master - e.t_last_answer) * 1e3);
    if (kill_.done && e.t_master >= 0 && e.t_loss >= kill_.t) from_kill.push_back((e.t_master - kill_.t) * 1e3);
    auto ms = [](double a, double b) { return a >= 0 ? nlohmann::json((a - b) * 1e3) : nlohmann::json(); };
    eps.push_back({{"switch", e.sw + 1},
                   {"dpid", switches_[e.sw]->dpid()},
                   {"lost_controller", controller_name(e.lost_ch)},
                   {"lost_role", ctl_role_name(e.lost_role)},
                   {"t_loss_s", e.t_loss - measure_begin_},
                   {"failover_ms", ms(e.t_master, e.t_loss)},
                   {"reprovisioning_ms", ms(e.t_reprov, e.t_loss)},
                   {"since_last_answer_ms", e.t_last_answer >= 0 ? ms(e.t_master, e.t_last_answer) : nlohmann::json()},
                   {"new_controller", e.new_ch >= 0 ? nlohmann::json(controller_name(static_cast<size_t>(e.new_ch))) : nlohmann::json()},
                   {"generation", e.generation},
                   {"packet_ins_in_gap", g},
                   {"undelivered_in_gap", gu},
                   {"unanswered_in_gap", gu + ga},
                   {"in_flight_lost", lost}});
  }
  nlohmann::json end = nlohmann::json::object(), losses = nlohmann::json::object(), gained = nlohmann::json::object();
  uint64_t unexpected = 0;
  for (size_t i = 0; i < n_ctl; ++i) {
    end[controller_name(i)] = 0;
    losses[controller_name(i)] = i < channel_losses_.size() ? channel_losses_[i] : 0;
    gained[controller_name(i)] = i < masters_gained_.size() ? masters_gained_[i] : 0;
    if (kill_.done && i != kill_.target && i < channel_losses_.size()) unexpected += channel_losses_[i];
  }
  uint32_t unmastered = 0;
  for (const auto& s : switches_) {
    if (auto m = s->roles().master()) end[controller_name(*m)] = end[controller_name(*m)].get<int>() + 1;
    else ++unmastered;
  }
  nlohmann::json j;
  j["controllers"] = o_.controllers.empty() ? nlohmann::json::array({o_.controller}) : nlohmann::json(o_.controllers);
  j["roles_in_use"] = roles_seen_;
  j["rate_per_s"] = o_.rate;
  j["kill"] = kill_.done ? nlohmann::json{{"cmd", kill_.cmd},
                                          {"target", controller_name(kill_.target)},
                                          {"t_s", kill_.t - measure_begin_},
                                          {"exit_status", kill_.status}}
                         : nlohmann::json();
  j["mastership_before"] = mastership_before_;
  j["mastership_end"] = end;
  j["switches_without_master_at_end"] = roles_seen_ ? nlohmann::json(unmastered) : nlohmann::json();
  j["masters_gained"] = gained;
  j["channel_losses"] = losses;
  j["unexpected_channel_losses"] = kill_.done ? nlohmann::json(unexpected) : nlohmann::json();
  j["switches_affected"] = affected.size();
  j["episodes_count"] = episodes_.size();
  j["failed_over"] = fo.size();
  j["reprovisioned"] = rp.size();
  j["failover_ms"] = stats_json(fo);
  j["reprovisioning_ms"] = stats_json(rp);
  j["failover_from_kill_ms"] = stats_json(from_kill);
  j["failover_since_last_answer_ms"] = stats_json(since_answer);
  j["packet_ins"] = {{"in_gap", in_gap},
                     {"undelivered_in_gap", undelivered},
                     {"unanswered_in_gap", undelivered + unanswered},
                     {"in_flight_lost", in_flight_lost}};
  j["slave_writes_refused"] = slave_writes_;
  j["role_requests_refused"] = roles_refused_;
  j["episodes"] = eps;
  auto brief = [](const nlohmann::json& s) {
    // (the summary prints p50, p99 and max of every rfc8456 object that has a p50)
    return nlohmann::json{{"count", s["count"]}, {"min", s["min"]}, {"p50", s["p50"]}, {"p99", s["p99"]}, {"max", s["max"]}};
  };
  extra_["rfc8456"]["controller_failover_time_ms"] = brief(j["failover_ms"]);
  extra_["rfc8456"]["network_reprovisioning_time_ms"] = brief(j["reprovisioning_ms"]);
  return j;
}

}  // namespace sdn::ofbench
