// One switch connection: OpenFlow 1.3 handshake, framing with caps, echo keep-alive, xid
// tracking, and the two-lane output queue flushed as one gathered write per loop turn.
// Lives on one shard for life; every method runs on that shard's thread. With a RoleArbiter
// (roles.hpp) a switch whose handshake completed waits in kStandby until the arbiter names this
// instance MASTER and the switch confirms it; only then is it set up and shown to the apps.
#pragma once

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "southbound/app.hpp"
#include "southbound/config.hpp"
#include "southbound/counters.hpp"
#include "southbound/pin_limiter.hpp"
#include "southbound/roles.hpp"
#include "southbound/transport.hpp"

namespace sdn::southbound {

class Controller;
struct ShardState;

// Counter slot of a message type (the last slot counts types the codec does not know).
inline size_t type_index(ofp::Type t) { return std::min<size_t>(static_cast<size_t>(t), 30); }
// Serial order of the owner's xids (31 bits: the top half is the remote side's): a <= b.
inline bool xid_not_after(uint32_t a, uint32_t b) {
  const uint32_t d = (b - a) & 0x7fff'ffffu;
  return d < 0x4000'0000u;
}

class Connection final : public SwitchContext, public std::enable_shared_from_this<Connection> {
 public:
  // kStandby: handshake done, registered, not shown to the apps (cluster mode only: waiting for
  // a role, SLAVE, or MASTER requested and not yet confirmed).
  enum class State : uint8_t { kHello, kFeatures, kPortDesc, kStandby, kConfiguring, kUp, kClosed };

  Connection(Controller& ctl, ShardState& shard, asio::ip::tcp::socket socket);
  ~Connection() override;

  void start();
  void close(std::string_view reason);
  // Stops reading, writes what is queued (e.g. an OFPT_ERROR), then closes.
  void close_after_flush(std::string_view reason);

  State state() const { return state_; }
  std::string peer() const { return peer_; }
  // The arbiter's decision for this switch (Controller::set_role posts it here): sends a
  // ROLE_REQUEST carrying `generation`; MASTER sets the switch up once confirmed, SLAVE takes it
  // away from the apps at once. Ignored without an arbiter or before standby.
  void apply_role(Role role, uint64_t generation, bool fresh);
  Role role() const { return role_; }  // as last confirmed by the switch

  // SwitchContext
  uint64_t dpid() const override { return features_.datapath_id; }
  const ofp::FeaturesReply& features() const override { return features_; }
  const std::vector<ofp::Port>& ports() const override { return ports_; }
  void send(ofp::Body body, Lane lane = Lane::kHigh) override;
  void send_batch(std::vector<ofp::Body> batch, Lane lane, BatchCallback done) override;
  void send_request(ofp::Body request, ReplyCallback on_reply) override;

  // Run to completion across shards (remote_send.cpp, docs/runtime.md): a batch (+ a barrier)
  // for this switch from another shard's thread, encoded on that thread and written to the
  // socket from it when none of this connection's bytes are being written (plain TCP);
  // otherwise it waits for the owner's write in progress, which takes it next. No hop to this
  // shard's thread sits in front of it. `done` runs on this connection's shard when the barrier
  // reply (or an ERROR, or the disconnect) settles it. Any thread. kNotUp: the connection is not
  // up, or is TLS (nothing sent, `done` not called: post instead); kRefused: a cap was hit
  // (`done` was called with the error).
  enum class RemoteResult : uint8_t { kSent, kNotUp, kRefused };
  RemoteResult send_batch_remote(std::vector<ofp::Body>& batch, BatchCallback& done);
  // xids of remote batches have the top bit set (a 30-bit counter below it); the owner's own
  // never do, so a barrier reply or an ERROR names its side by its xid alone.
  static constexpr uint32_t kRemoteXid = 0x8000'0000;

 private:
  struct PendingBatch {
    uint32_t first_xid;
    uint32_t barrier_xid;
    BatchCallback done;
    BatchResult result;
  };

  void on_tls_handshake(const std::error_code& ec);
  void begin_openflow();  // after TLS (if any): our HELLO, then reading
  void read_some();
  void on_read(const std::error_code& ec, size_t n);
  // Processes whole frames in the read buffer; returns false once the connection closed.
  bool process_frames();
  bool handle_frame(std::span<const uint8_t> frame);
  void handle_message(const ofp::Message& msg, std::span<const uint8_t> frame);
  void on_hello(const ofp::Header& h, std::span<const uint8_t> frame);
  void on_features(const ofp::FeaturesReply& f);
  void on_port_desc_complete();
  // SetConfig, the clear-on-connect deletes (when `clear_flows`), the table-miss, the meters;
  // on_up() once the barrier confirms them.
  void run_setup(bool clear_flows);
  void on_up();
  void on_role_reply(uint64_t seq, Role asked, uint64_t generation, bool fresh, Clock::time_point sent,
                     const ofp::Message* reply, const ofp::ErrorMsg* err);
  void refuse_mastership(uint64_t seq, uint64_t generation, const char* why);
  void on_is_slave(uint32_t xid);
  // An ONF ROLE_STATUS (Open vSwitch's notice that another controller took the switch); false
  // when the frame is not one (it then takes the normal path).
  bool on_role_status(std::span<const uint8_t> frame);
  // From kConfiguring or kUp back to kStandby (apps see the switch go down; connection kept).
  void to_standby(const char* why);
  void set_confirmed_role(Role r, uint64_t generation);
  void publish_summary();
  void on_error(uint32_t xid, const ofp::ErrorMsg& e);
  void on_barrier_reply(uint32_t xid);
  bool route_reply(const ofp::Message& msg, bool more);
  void reply_error(const ofp::Error& e, std::span<const uint8_t> offending);

  uint32_t next_xid();
  // Encodes into the lane's buffer; false if it did not encode or the queue cap was hit.
  bool enqueue(uint32_t xid, const ofp::Body& body, Lane lane);
  bool enqueue_to(uint32_t xid, const ofp::Body& body, ofp::Bytes& buf);
  // Encodes one message, counting it (or the failure) and logging a failure; any thread (the
  // remote side uses it: enqueue_to's count of enqueued messages is the owner's alone).
  bool encode_counted(uint32_t xid, const ofp::Body& body, ofp::Bytes& buf);
  ofp::Bytes take_chunk();
  void recycle_inflight();
  void schedule_flush();
  void flush();
  void on_tick();
  void arm_tick();
  bool echo_allowed();
  size_t pending_xids() const;

  Controller& ctl_;
  ShardState& shard_;
  std::shared_ptr<Counters> counters_holder_;
  Counters& counters_;
  const SouthboundConfig& cfg_;
  std::shared_ptr<TlsContext> tls_;  // null for plain TCP; outlives transport_
  Transport transport_;
  asio::steady_timer tick_;
  std::string peer_;

  State state_ = State::kHello;
  bool was_up_ = false;
  bool tls_pending_ = false;  // TLS handshake in progress: no OpenFlow yet
  bool closing_ = false;
  std::string close_reason_;
  Clock::time_point closing_since_;
  bool registered_ = false;
  bool handshake_done_ = false;  // up, or (with an arbiter) standby: the handshake timeout is over

  // roles (cluster mode); all unused when arbiter_ is null
  std::shared_ptr<RoleArbiter> arbiter_;
  bool arbiter_connected_ = false;  // switch_connected was called: switch_disconnected is owed
  Role role_ = Role::kEqual;        // as confirmed by the switch's last ROLE_REPLY
  uint64_t role_gen_ = 0;
  uint64_t wanted_gen_ = 0;         // generation of the arbiter's latest decision
  uint64_t role_seq_ = 0;           // one per decision: replies to older ones only update role_
  uint64_t setup_epoch_ = 0;        // one per set-up started and per demotion
  bool is_slave_reported_ = false;  // IS_SLAVE told to the arbiter once per decision
  ofp::FeaturesReply features_;
  std::vector<ofp::Port> ports_;
  std::vector<ofp::Port> ports_pending_;
  uint32_t port_desc_xid_ = 0;

  // read side
  std::vector<uint8_t> rbuf_;
  size_t rlen_ = 0;
  bool read_filled_ = false;  // the last read filled rbuf_: grow before the next
  uint32_t small_reads_ = 0;  // reads in a row that used less than an eighth of rbuf_
  void resize_rbuf(size_t n);  // and keep southbound.rx_buffer_bytes
  Clock::time_point started_;
  Clock::time_point last_rx_;
  bool echo_outstanding_ = false;
  double echo_tokens_ = 0;
  Clock::time_point echo_refill_;

  // write side: high lane is one buffer of whole messages; low lane is whole chunks
  // (one per batch) so a flush can stop at a message boundary after `low_lane_quantum`.
  ofp::Bytes hi_;
  std::deque<ofp::Bytes> lo_;
  size_t lo_bytes_ = 0;
  uint32_t hi_msgs_ = 0;
  std::deque<uint32_t> lo_msgs_;
  ofp::Bytes hi_inflight_;                    // the high-lane buffer being written
  std::vector<ofp::Bytes> lo_inflight_;       // low-lane chunks being written
  std::vector<ofp::Bytes> lo_free_;           // recycled chunk buffers
  std::vector<asio::const_buffer> bufs_;      // the gathered write's buffer list
  bool writing_ = false;
  bool flush_posted_ = false;

  uint64_t enqueued_ = 0;                        // messages encoded so far
  std::vector<Clock::time_point> pin_pending_;   // read times of PACKET_INs whose reply is queued
  uint32_t xid_ = 0;
  std::deque<PendingBatch> batches_;
  size_t batch_xids_ = 0;
  std::unordered_map<uint32_t, ReplyCallback> requests_;
  PinLimiter pin_limiter_{cfg_.dos};  // PacketIn admission (pin_limiter.hpp), before decoding

  // Remote (cross-shard) side, remote_send.cpp. wmu_ guards these and the socket's write side:
  // a remote thread writes only while the owner has no write in flight (wbusy_), and the owner
  // starts one only under wmu_. Bytes the socket did not take (remote_tail_, possibly the rest
  // of a message) go first in the owner's next write.
  void remote_open();                  // on_up, plain TCP: remote sends allowed
  void remote_shut();                  // close / standby: no more remote sends
  void remote_settle_all();            // close: every remote batch settles as disconnected
  bool remote_barrier(uint32_t xid);   // true: a remote batch's barrier reply, handled
  bool remote_error(uint32_t xid, const ofp::ErrorMsg& e);
  std::mutex wmu_;
  int fd_ = -1;                        // the TCP socket while remote sends are allowed, else -1
  bool wbusy_ = false;                 // the owner's write is in flight
  bool remote_flush_posted_ = false;
  ofp::Bytes remote_tail_;
  ofp::Bytes remote_inflight_;         // owner thread only: the tail taken into its write
  std::map<uint32_t, PendingBatch> remote_batches_;  // by barrier xid
  size_t remote_xids_ = 0;
  std::atomic<uint32_t> remote_seq_{0};
};

}  // namespace sdn::southbound
