// Resolves the runtime's counters from the registry.
#include "southbound/counters.hpp"

#include <cctype>
#include <string>

#include "ofp/message.hpp"

namespace sdn::southbound {

Counters::Counters(core::Metrics& m)
    : accepted(m.counter("southbound.connections.accepted")),
      closed(m.counter("southbound.connections.closed")),
      active(m.gauge("southbound.connections.active")),
      switches_up(m.gauge("southbound.switches.up")),
      rx_buffer_bytes(m.gauge("southbound.rx_buffer_bytes")),
      rx_msgs(m.counter("southbound.rx.msgs")),
      rx_bytes(m.counter("southbound.rx.bytes")),
      tx_msgs(m.counter("southbound.tx.msgs")),
      tx_bytes(m.counter("southbound.tx.bytes")),
      writes(m.counter("southbound.tx.writes")),
      err_framing(m.counter("southbound.errors.framing")),
      err_oversize(m.counter("southbound.errors.oversize")),
      err_decode(m.counter("southbound.errors.decode")),
      err_bad_version(m.counter("southbound.errors.bad_version")),
      err_hello_failed(m.counter("southbound.errors.hello_failed")),
      err_not_hello(m.counter("southbound.errors.not_hello")),
      err_unexpected(m.counter("southbound.errors.unexpected_type")),
      err_handshake_timeout(m.counter("southbound.errors.handshake_timeout")),
      err_echo_timeout(m.counter("southbound.errors.echo_timeout")),
      err_queue_overflow(m.counter("southbound.errors.queue_overflow")),
      err_pending_xids(m.counter("southbound.errors.pending_xids")),
      err_from_switch(m.counter("southbound.errors.from_switch")),
      err_encode(m.counter("southbound.errors.encode")),
      echo_rate_limited(m.counter("southbound.echo.rate_limited")),
      packet_in_before_up(m.counter("southbound.packet_in.before_up")),
      dpid_replaced(m.counter("southbound.dpid.replaced")),
      batches_ok(m.counter("southbound.batches.ok")),
      batches_failed(m.counter("southbound.batches.failed")),
      accept_errors(m.counter("southbound.errors.accept")),
      remote_direct(m.counter("southbound.remote.direct")),
      remote_queued(m.counter("southbound.remote.queued")),
      remote_refused(m.counter("southbound.remote.refused")),
      remote_posted(m.counter("southbound.remote.posted")),
      soon_calls(m.counter("southbound.post_soon.calls")),
      soon_posts(m.counter("southbound.post_soon.posts")),
      pin_dropped_port(m.counter("southbound.packet_in.dropped.port")),
      pin_dropped_switch(m.counter("southbound.packet_in.dropped.switch")),
      pin_dropped_control_port(m.counter("southbound.packet_in.dropped.control_port")),
      pin_dropped_control_switch(m.counter("southbound.packet_in.dropped.control_switch")),
      pin_control(m.counter("southbound.packet_in.control")),
      pin_unpeeked(m.counter("southbound.packet_in.unpeeked")),
      meters_installed(m.counter("southbound.meters.installed")),
      meters_unsupported(m.counter("southbound.meters.unsupported")),
      meters_failed(m.counter("southbound.meters.failed")),
      packet_in_service(m.histogram("southbound.packet_in.service")),
      role_requests(m.counter("southbound.role.requests")),
      role_master(m.counter("southbound.role.master")),
      role_slave(m.counter("southbound.role.slave")),
      role_refused(m.counter("southbound.role.refused")),
      role_slave_refused(m.counter("southbound.role.slave_refused")),
      role_is_slave_errors(m.counter("southbound.role.is_slave_errors")),
      role_demoted(m.counter("southbound.role.demoted")),
      role_status_slave(m.counter("southbound.role.status_slave")),
      role_unknown_switch(m.counter("southbound.role.unknown_switch")),
      packet_in_not_master(m.counter("southbound.role.packet_in_not_master")),
      flow_removed_not_master(m.counter("southbound.role.flow_removed_not_master")),
      role_mastered(m.gauge("southbound.role.mastered")),
      role_rtt(m.histogram("southbound.role.rtt")) {
  for (size_t t = 0; t < rx_by_type.size(); ++t) {
    std::string name = t + 1 == rx_by_type.size() ? "unknown" : ofp::type_name(static_cast<ofp::Type>(t));
    if (name.rfind("OFPT_", 0) == 0) name.erase(0, 5);
    for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    rx_by_type[t] = &m.counter("southbound.rx." + name);
    tx_by_type[t] = &m.counter("southbound.tx." + name);
  }
}

}  // namespace sdn::southbound
