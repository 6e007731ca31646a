// The runtime's counters, resolved once from the metrics registry so the hot path bumps a
// pointer instead of looking names up.
#pragma once

#include <array>

#include "core/metrics.hpp"
#include "ofp/types.hpp"

namespace sdn::southbound {

struct Counters {
  explicit Counters(core::Metrics& m);

  core::Counter& accepted;
  core::Counter& closed;
  core::Gauge& active;          // open connections
  core::Gauge& switches_up;     // handshake complete
  core::Gauge& rx_buffer_bytes; // read buffers of open connections, in bytes
  core::Counter& rx_msgs;
  core::Counter& rx_bytes;
  core::Counter& tx_msgs;
  core::Counter& tx_bytes;
  core::Counter& writes;        // gathered socket writes (tx_msgs / writes = batching factor)
  // Indexed by ofp::Type; the last slot counts types this codec does not know.
  std::array<core::Counter*, 31> rx_by_type{};
  std::array<core::Counter*, 31> tx_by_type{};

  // rejections and surprises, one counter per reason
  core::Counter& err_framing;        // header length < 8: close
  core::Counter& err_oversize;       // header length > max_message_bytes: close
  core::Counter& err_decode;         // message failed to decode: OFPT_ERROR reply
  core::Counter& err_bad_version;    // non-1.3 message after negotiation: BAD_VERSION reply
  core::Counter& err_hello_failed;   // no common version: HELLO_FAILED + close
  core::Counter& err_not_hello;      // first message was not HELLO: HELLO_FAILED + close
  core::Counter& err_unexpected;     // a switch sent a controller-to-switch type: BAD_TYPE reply
  core::Counter& err_handshake_timeout;
  core::Counter& err_echo_timeout;
  core::Counter& err_queue_overflow; // output beyond max_queued_bytes
  core::Counter& err_pending_xids;   // batch/request refused: too many unconfirmed xids
  core::Counter& err_from_switch;    // OFPT_ERROR received
  core::Counter& err_encode;         // a message an app asked to send did not encode
  core::Counter& echo_rate_limited;
  core::Counter& packet_in_before_up;
  core::Counter& dpid_replaced;      // a new connection took over a datapath id
  core::Counter& batches_ok;
  core::Counter& batches_failed;
  core::Counter& accept_errors;
  // Batches sent from another shard's thread (remote_send.cpp): written by that thread at once,
  // left (partly) for the owner's next write, refused at a cap; and posted to the owner instead
  // (TLS, a low-lane batch, or [southbound] cross_shard = "post").
  core::Counter& remote_direct;
  core::Counter& remote_queued;
  core::Counter& remote_refused;
  core::Counter& remote_posted;
  // Runtime::post_soon: calls, and the cross-shard posts that carried them (one per turn and target).
  core::Counter& soon_calls;
  core::Counter& soon_posts;
  // PacketIn admission (pin_limiter.hpp): drops per bucket that was empty, ARP/LLDP admitted
  // on their own budget, frames too malformed to peek (left to the decoder).
  core::Counter& pin_dropped_port;
  core::Counter& pin_dropped_switch;
  core::Counter& pin_dropped_control_port;
  core::Counter& pin_dropped_control_switch;
  core::Counter& pin_control;
  core::Counter& pin_unpeeked;
  // Table-miss meters (miss_meter.hpp): installed, switch without usable meters, refused.
  core::Counter& meters_installed;
  core::Counter& meters_unsupported;
  core::Counter& meters_failed;
  // Reactive per-packet processing time (RPPT): from the read that delivered a PACKET_IN to
  // the socket write that carries the first reply an app queued for it.
  core::Histogram& packet_in_service;
  // OpenFlow roles in a cluster (roles.hpp); all zero without a RoleArbiter.
  core::Counter& role_requests;        // ROLE_REQUESTs sent (MASTER or SLAVE)
  core::Counter& role_master;          // ROLE_REPLY confirming MASTER
  core::Counter& role_slave;           // ROLE_REPLY confirming SLAVE
  core::Counter& role_refused;         // MASTER request refused (stale generation, or a reply not MASTER)
  core::Counter& role_slave_refused;   // SLAVE request refused (stale generation)
  core::Counter& role_is_slave_errors; // OFPBRC_IS_SLAVE received for something we wrote
  core::Counter& role_demoted;         // an up (or configuring) switch returned to standby
  core::Counter& role_status_slave;    // ONF ROLE_STATUS: the switch made us slave (another master)
  core::Counter& role_unknown_switch;  // set_role for a dpid not connected here (ignored)
  core::Counter& packet_in_not_master; // PACKET_IN on a connection that is not up as master
  core::Counter& flow_removed_not_master;
  core::Gauge& role_mastered;          // switches on which the switch confirmed us MASTER
  core::Histogram& role_rtt;           // ROLE_REQUEST -> ROLE_REPLY (or ERROR), ns
};

}  // namespace sdn::southbound
