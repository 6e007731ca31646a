// One switch connection, its role part (cluster mode, roles.hpp): asking the switch for a role,
// its answers and refusals, and ROLE_STATUS from the switch. The rest is connection.cpp.
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "southbound/connection.hpp"
#include "southbound/controller.hpp"

namespace sdn::southbound {

void Connection::apply_role(Role role, uint64_t generation, bool fresh) {
  if (!arbiter_ || !arbiter_connected_ || state_ == State::kClosed || closing_) {
    counters_.role_unknown_switch.inc();
    return;
  }
  if (role == Role::kEqual) {
    SDN_LOG_RATELIMITED(spdlog::level::warn, "switch {:016x}: the arbiter asked for EQUAL; only MASTER/SLAVE are used",
                        features_.datapath_id);
    return;
  }
  const uint64_t seq = ++role_seq_;
  wanted_gen_ = generation;
  is_slave_reported_ = false;
  // A slave stops acting at once: the apps must not write while the SLAVE request is in flight.
  if (role == Role::kSlave) to_standby("slave");
  counters_.role_requests.inc();
  ofp::RoleRequest req;
  req.role.role = role == Role::kMaster ? ofp::kRoleMaster : ofp::kRoleSlave;
  req.role.generation_id = generation;
  const auto sent = Clock::now();
  send_request(req, [this, seq, role, generation, fresh, sent](const ofp::Message* reply, const ofp::ErrorMsg* err, bool) {
    on_role_reply(seq, role, generation, fresh, sent, reply, err);
  });
}

void Connection::on_role_reply(uint64_t seq, Role asked, uint64_t generation, bool fresh, Clock::time_point sent,
                               const ofp::Message* reply, const ofp::ErrorMsg* err) {
  if (reply == nullptr && err == nullptr) return;  // disconnected
  counters_.role_rtt.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - sent).count()));
  const bool current = seq == role_seq_;  // else a newer decision was sent after this one
  const auto* rr = reply ? std::get_if<ofp::RoleReply>(&reply->body) : nullptr;
  if (reply && rr == nullptr) {  // a reply of another type with our xid
    counters_.err_unexpected.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "switch {:016x}: {} answered a ROLE_REQUEST", features_.datapath_id,
                        ofp::type_name(ofp::type_of(reply->body)));
  }
  if (asked == Role::kSlave) {
    if (rr == nullptr || rr->role.role != ofp::kRoleSlave) {
      counters_.role_slave_refused.inc();
      spdlog::info("switch {:016x}: SLAVE request (generation {}) refused{}", features_.datapath_id, generation,
                   err ? fmt::format(" (error type {} code {})", err->type, err->code) : std::string());
      return;
    }
    if (role_ != Role::kSlave || role_gen_ != generation)
      spdlog::info("switch {:016x}: slave (generation {})", features_.datapath_id, generation);
    set_confirmed_role(Role::kSlave, generation);
    counters_.role_slave.inc();  // counted once the state shows it (tests and stats read both)
    return;
  }
  if (rr == nullptr || rr->role.role != ofp::kRoleMaster) {
    if (err && err->type == ofp::err::kRoleRequestFailed && err->code == ofp::err::kRrfcStale)
      refuse_mastership(seq, generation, "stale generation");
    else if (err)
      refuse_mastership(seq, generation, "refused");
    else
      refuse_mastership(seq, generation, "reply not MASTER");
    return;
  }
  if (role_ != Role::kMaster || role_gen_ != generation)
    spdlog::info("switch {:016x}: master (generation {}, {})", features_.datapath_id, generation, fresh ? "fresh" : "takeover");
  set_confirmed_role(Role::kMaster, generation);
  counters_.role_master.inc();
  if (current && state_ == State::kStandby) {
    // fresh: nobody mastered the switch before, so clear-on-connect may delete; a takeover
    // keeps the previous master's flows and the apps resynchronise on on_switch_up.
    state_ = State::kConfiguring;
    run_setup(cfg_.clear_flows_on_connect && fresh);
  }
}

void Connection::refuse_mastership(uint64_t seq, uint64_t generation, const char* why) {
  counters_.role_refused.inc();
  spdlog::info("switch {:016x}: mastership refused (generation {}: {})", features_.datapath_id, generation, why);
  if (seq != role_seq_) return;  // the arbiter already decided again
  // A newer generation exists: another instance asked for a role after us, and whatever the
  // switch still holds for us, we do not act as master on it.
  if (role_ == Role::kMaster) set_confirmed_role(Role::kSlave, role_gen_);
  to_standby("mastership refused");
  arbiter_->mastership_refused(features_.datapath_id, generation);
}

void Connection::on_is_slave(uint32_t xid) {
  counters_.role_is_slave_errors.inc();
  if (is_slave_reported_) return;  // once per decision: a burst of writes brings a burst of these
  is_slave_reported_ = true;
  spdlog::info("switch {:016x}: OFPBRC_IS_SLAVE for xid {} (generation {}): telling the arbiter", features_.datapath_id,
               xid, wanted_gen_);
  arbiter_->mastership_refused(features_.datapath_id, wanted_gen_);
}

bool Connection::on_role_status(std::span<const uint8_t> f) {
  if (f.size() != ofp::kOnfRoleStatusLen) return false;  // every index below is < 32
  auto be = [&](size_t off, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | f[off + i];
    return v;
  };
  if (be(8, 4) != ofp::kOnfExperimenterId || be(12, 4) != ofp::kOnfRoleStatus) return false;
  const auto role = static_cast<uint32_t>(be(16, 4));
  const uint8_t reason = f[20];  // 0 OFPCRR_MASTER_REQUEST, 1 CONFIG, 2 EXPERIMENTER
  const uint64_t generation = be(24, 8);
  if (role != ofp::kRoleSlave) {
    spdlog::debug("switch {:016x}: ROLE_STATUS role {} reason {} generation {}", features_.datapath_id, role, reason, generation);
    return true;
  }
  if (static_cast<int64_t>(generation - wanted_gen_) < 0) {
    // Older than our latest decision, whose ROLE_REQUEST the switch answers after this notice.
    spdlog::debug("switch {:016x}: ROLE_STATUS slave generation {} older than ours ({})", features_.datapath_id,
                  generation, wanted_gen_);
    return true;
  }
  // Another controller became master with `generation`: the switch no longer takes our writes.
  // Act on it now (the apps stop) instead of waiting for OFPBRC_IS_SLAVE, and let the arbiter
  // re-check its lease; its set_role follows.
  const bool acting = role_ == Role::kMaster || state_ == State::kUp || state_ == State::kConfiguring;
  spdlog::info("switch {:016x}: slave (generation {}: another controller became master)", features_.datapath_id,
               generation);
  set_confirmed_role(Role::kSlave, generation);
  to_standby("another controller became master");
  counters_.role_status_slave.inc();
  if (acting && !is_slave_reported_) {
    is_slave_reported_ = true;
    arbiter_->mastership_refused(features_.datapath_id, wanted_gen_);
  }
  return true;
}

void Connection::to_standby(const char* why) {
  if (state_ != State::kUp && state_ != State::kConfiguring) return;
  const bool was_up = state_ == State::kUp;
  state_ = State::kStandby;
  remote_shut();
  ++setup_epoch_;  // a set-up still in flight no longer brings the switch up
  counters_.role_demoted.inc();
  publish_summary();
  if (!was_up) return;
  counters_.switches_up.add(-1);
  spdlog::info("switch {:016x} down for the apps ({}); connection kept", features_.datapath_id, why);
  for (auto& app : shard_.apps) app->on_switch_down(features_.datapath_id);
}

void Connection::set_confirmed_role(Role r, uint64_t generation) {
  if (r == Role::kMaster && role_ != Role::kMaster) counters_.role_mastered.add(1);
  if (r != Role::kMaster && role_ == Role::kMaster) counters_.role_mastered.add(-1);
  role_ = r;
  role_gen_ = generation;
  publish_summary();
}

}  // namespace sdn::southbound
