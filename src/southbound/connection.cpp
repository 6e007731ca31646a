// One switch connection: handshake, framing, keep-alive, xid tracking, two-lane writes.
#include "southbound/connection.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include <asio/post.hpp>
#include <asio/write.hpp>
#include <spdlog/spdlog.h>

#include "core/log.hpp"
#include "southbound/controller.hpp"
#include "southbound/miss_meter.hpp"

namespace sdn::southbound {
namespace {

// A connection starts with a small read buffer and grows it when a read fills it (a busy
// switch) or a message does not fit: at 100,000 hosts (2,388 switches) a fixed 16 KiB each was
// 39.5 MB of the heap's peak (docs/runtime.md).
constexpr size_t kInitialReadBuffer = 4 * 1024;
constexpr size_t kMinReadSpace = 1024;
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxFreeChunks = 64;               // pooled low-lane chunk buffers
constexpr size_t kMaxPooledChunkBytes = 256 * 1024; // larger ones are freed, not pooled


}  // namespace

Connection::Connection(Controller& ctl, ShardState& shard, asio::ip::tcp::socket socket)
    : ctl_(ctl),
      shard_(shard),
      counters_holder_(ctl.counters_ptr()),
      counters_(*counters_holder_),
      cfg_(ctl.config()),
      tls_(ctl.tls_context()),
      transport_(std::move(socket), tls_ ? &tls_->ssl() : nullptr),
      tick_(transport_.get_executor()),
      arbiter_(ctl.role_arbiter()),
      rbuf_(kInitialReadBuffer) {
  counters_.rx_buffer_bytes.add(static_cast<int64_t>(rbuf_.capacity()));
  std::error_code ec;
  auto ep = transport_.remote_endpoint(ec);
  peer_ = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  transport_.tcp().set_option(asio::ip::tcp::no_delay(true), ec);
  counters_.active.add(1);
}

Connection::~Connection() {
  counters_.active.add(-1);
  counters_.rx_buffer_bytes.add(-static_cast<int64_t>(rbuf_.capacity()));
}

void Connection::resize_rbuf(size_t n) {
  const auto before = static_cast<int64_t>(rbuf_.capacity());
  const bool shrink = n < rbuf_.size();
  rbuf_.resize(n);
  if (shrink) rbuf_.shrink_to_fit();
  counters_.rx_buffer_bytes.add(static_cast<int64_t>(rbuf_.capacity()) - before);
}

void Connection::start() {
  started_ = last_rx_ = echo_refill_ = Clock::now();
  echo_tokens_ = cfg_.echo_rate_limit;
  spdlog::debug("switch connection from {}", peer_);
  arm_tick();  // its handshake_timeout covers the TLS handshake too
  if (transport_.is_tls()) {
    tls_pending_ = true;
    transport_.async_handshake([self = shared_from_this()](const std::error_code& ec) { self->on_tls_handshake(ec); });
    return;
  }
  begin_openflow();
}

void Connection::on_tls_handshake(const std::error_code& ec) {
  if (state_ == State::kClosed) return;  // timed out or shut down meanwhile (counted there)
  tls_pending_ = false;
  TlsCounters& tc = tls_->counters();
  if (ec) {
    // A peer without a certificate, with one from another CA, or not speaking TLS at all.
    tc.handshake_failed.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: TLS handshake failed: {}", peer_, ec.message());
    close("TLS handshake failed");
    return;
  }
  tc.handshakes.inc();
  tc.handshake_time.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started_).count()));
  spdlog::info("switch connection from {} over TLS ({})", peer_, transport_.tls_summary());
  begin_openflow();
}

void Connection::begin_openflow() {
  // 7.5.1: both sides send HELLO first; ours carries a version bitmap with only 1.3.
  enqueue(next_xid(), ofp::Hello{1u << ofp::kVersion}, Lane::kHigh);
  read_some();
}

void Connection::close(std::string_view reason) {
  if (state_ == State::kClosed) return;
  const bool was_up = state_ == State::kUp;
  state_ = State::kClosed;
  if (registered_) spdlog::info("switch {:016x} ({}) disconnected: {}", features_.datapath_id, peer_, reason);
  else SDN_LOG_RATELIMITED(spdlog::level::info, "{} disconnected before its features reply: {}", peer_, reason);  // any peer can cause these
  counters_.closed.inc();
  tick_.cancel();
  remote_shut();  // before the descriptor closes: no remote thread may write to a reused number
  std::error_code ec;
  transport_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  transport_.close(ec);

  BatchResult gone;
  gone.ok = false;
  gone.disconnected = true;
  auto batches = std::move(batches_);
  batches_.clear();
  batch_xids_ = 0;
  for (auto& b : batches) {
    counters_.batches_failed.inc();
    if (b.done) b.done(gone);
  }
  auto requests = std::move(requests_);
  requests_.clear();
  for (auto& [xid, cb] : requests) cb(nullptr, nullptr, false);
  remote_settle_all();

  // A connection a newer one of the same dpid replaced does not report a disconnect: the
  // arbiter already heard switch_connected (or will) from the newer one.
  const bool held_entry = registered_ && ctl_.unregister_dpid(features_.datapath_id, this);
  if (role_ == Role::kMaster) counters_.role_mastered.add(-1);
  if (was_up) {
    counters_.switches_up.add(-1);
    for (auto& app : shard_.apps) app->on_switch_down(features_.datapath_id);
  }
  if (arbiter_connected_ && held_entry) arbiter_->switch_disconnected(features_.datapath_id);
  hi_.clear();
  lo_.clear();
  // Drop the shard's reference; pending handlers hold their own until they run.
  auto self = shared_from_this();
  shard_.connections.erase(self);
}

void Connection::close_after_flush(std::string_view reason) {
  if (state_ == State::kClosed || closing_) return;
  closing_ = true;
  close_reason_ = std::string(reason);
  closing_since_ = Clock::now();
  std::error_code ec;
  transport_.shutdown(asio::ip::tcp::socket::shutdown_receive, ec);
  if (!writing_) flush();
}

// ---- read side --------------------------------------------------------------------------

void Connection::read_some() {
  if (state_ == State::kClosed) return;
  // Grow by doubling when little room is left (a message larger than the buffer), or when the
  // last read filled the buffer (more was waiting) up to a read chunk.
  if (rbuf_.size() - rlen_ < kMinReadSpace || (read_filled_ && rbuf_.size() < kReadChunk))
    resize_rbuf(std::max(rbuf_.size() * 2, rlen_ + kMinReadSpace));
  read_filled_ = false;
  transport_.async_read_some(asio::buffer(rbuf_.data() + rlen_, rbuf_.size() - rlen_),
                             [self = shared_from_this()](const std::error_code& ec, size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(const std::error_code& ec, size_t n) {
  if (state_ == State::kClosed || closing_) return;
  if (ec) {
    close(ec == asio::error::eof ? "peer closed" : ec.message());
    return;
  }
  read_filled_ = rlen_ + n == rbuf_.size();
  rlen_ += n;
  last_rx_ = Clock::now();
  echo_outstanding_ = false;
  counters_.rx_bytes.inc(n);
  if (!process_frames()) return;
  // Shrink a buffer that grew for one large message once it is drained, and halve one that
  // the last 64 reads each used less than an eighth of (a burst is over).
  if (rlen_ == 0 && rbuf_.size() > 4 * kReadChunk) {
    resize_rbuf(kInitialReadBuffer);
  } else if (rbuf_.size() > kInitialReadBuffer) {
    small_reads_ = n < rbuf_.size() / 8 ? small_reads_ + 1 : 0;
    if (rlen_ == 0 && small_reads_ >= 64) {
      resize_rbuf(std::max(rbuf_.size() / 2, kInitialReadBuffer));
      small_reads_ = 0;
    }
  }
  read_some();
}

bool Connection::process_frames() {
  size_t off = 0;
  while (rlen_ - off >= ofp::kHeaderLen) {
    std::span<const uint8_t> rest(rbuf_.data() + off, rlen_ - off);
    auto h = ofp::decode_header(rest);
    if (!h) {  // length < 8: the stream cannot be re-synchronized
      counters_.err_framing.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: framing error ({}), closing", peer_, h.error().detail);
      close("framing error");
      return false;
    }
    if (h->length > cfg_.max_message_bytes) {
      counters_.err_oversize.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: message of {} bytes exceeds cap {}, closing", peer_,
                          h->length, cfg_.max_message_bytes);
      close("oversized message");
      return false;
    }
    if (rest.size() < h->length) break;  // wait for the rest
    if (!handle_frame(rest.first(h->length))) return false;
    if (closing_) return false;
    off += h->length;
  }
  if (off > 0) {
    std::memmove(rbuf_.data(), rbuf_.data() + off, rlen_ - off);
    rlen_ -= off;
  }
  return state_ != State::kClosed;
}

bool Connection::handle_frame(std::span<const uint8_t> frame) {
  counters_.rx_msgs.inc();
  const auto h = *ofp::decode_header(frame);
  counters_.rx_by_type[type_index(h.type)]->inc();

  if (state_ == State::kHello) {
    on_hello(h, frame);
    return state_ != State::kClosed;
  }
  if (h.version != ofp::kVersion) {
    counters_.err_bad_version.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: message with version {} after negotiating 1.3", peer_, h.version);
    reply_error(ofp::Error{ofp::Errc::kBadVersion, ofp::err::kBadRequest, ofp::err::kBrcBadVersion, "version"}, frame);
    return true;
  }
  // A flooding switch or port is cut here, before the decode and the apps (docs/dos.md).
  if (h.type == ofp::Type::kPacketIn && state_ == State::kUp && cfg_.dos.pin_limit &&
      !admit_packet_in(pin_limiter_, frame, last_rx_, counters_, features_.datapath_id))
    return true;
  // The codec has no experimenter messages; in cluster mode one of them matters (ROLE_STATUS).
  if (h.type == ofp::Type::kExperimenter && arbiter_ && handshake_done_ && on_role_status(frame)) return true;
  auto msg = ofp::decode(frame);
  if (!msg) {
    counters_.err_decode.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: bad {} message: {} ({})", peer_, ofp::type_name(h.type),
                        ofp::errc_name(msg.error().code), msg.error().detail);
    reply_error(msg.error(), frame);
    return true;
  }
  handle_message(*msg, frame);
  return state_ != State::kClosed;
}

void Connection::on_hello(const ofp::Header& h, std::span<const uint8_t> frame) {
  if (h.type != ofp::Type::kHello) {
    counters_.err_not_hello.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: first message is {} not HELLO", peer_, ofp::type_name(h.type));
    reply_error(ofp::Error{ofp::Errc::kBadType, ofp::err::kHelloFailed, ofp::err::kHelloIncompatible, "expected HELLO"}, frame);
    close_after_flush("no HELLO");
    return;
  }
  // 7.5.1: with a version bitmap, the common version is the highest bit set in both; without
  // one, the negotiated version is min(ours, theirs).
  bool ok = false;
  auto msg = ofp::decode(frame);
  if (msg) {
    const auto& hello = std::get<ofp::Hello>(msg->body);
    ok = hello.version_bitmap != 0 ? (hello.version_bitmap >> ofp::kVersion) & 1u : h.version >= ofp::kVersion;
  } else {
    ok = h.version > ofp::kVersion;  // a newer HELLO we cannot parse: min() is still 1.3
  }
  if (!ok) {
    counters_.err_hello_failed.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: no common OpenFlow version (peer HELLO version {})", peer_, h.version);
    ofp::ErrorMsg e{ofp::err::kHelloFailed, ofp::err::kHelloIncompatible, {}};
    const char* text = "sdnator speaks OpenFlow 1.3 (0x04) only";
    e.data.assign(text, text + std::strlen(text));
    enqueue(h.xid, e, Lane::kHigh);
    close_after_flush("version negotiation failed");
    return;
  }
  state_ = State::kFeatures;
  enqueue(next_xid(), ofp::FeaturesRequest{}, Lane::kHigh);
}

void Connection::handle_message(const ofp::Message& msg, std::span<const uint8_t> frame) {
  const auto t = ofp::type_of(msg.body);
  switch (t) {
    case ofp::Type::kHello:
      break;  // a second HELLO is harmless
    case ofp::Type::kEchoRequest:
      if (!echo_allowed()) {
        counters_.echo_rate_limited.inc();
        SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: ECHO_REQUEST flood, dropping", peer_);
        break;
      }
      enqueue(msg.xid, ofp::EchoReply{std::get<ofp::EchoRequest>(msg.body).data}, Lane::kHigh);
      break;
    case ofp::Type::kEchoReply:
      break;  // liveness already refreshed by the read
    case ofp::Type::kError:
      on_error(msg.xid, std::get<ofp::ErrorMsg>(msg.body));
      break;
    case ofp::Type::kFeaturesReply:
      if (state_ == State::kFeatures) on_features(std::get<ofp::FeaturesReply>(msg.body));
      break;
    case ofp::Type::kMultipartReply: {
      const auto& mp = std::get<ofp::MultipartReply>(msg.body);
      const bool more = mp.flags & ofp::kMultipartMore;
      if (msg.xid == port_desc_xid_ && mp.type == ofp::MultipartType::kPortDesc) {
        const auto& ports = std::get<std::vector<ofp::Port>>(mp.body);
        ports_pending_.insert(ports_pending_.end(), ports.begin(), ports.end());
        if (!more) on_port_desc_complete();
        break;
      }
      route_reply(msg, more);
      break;
    }
    case ofp::Type::kGetConfigReply:
    case ofp::Type::kRoleReply:
      route_reply(msg, false);
      break;
    case ofp::Type::kBarrierReply:
      on_barrier_reply(msg.xid);
      break;
    case ofp::Type::kPacketIn:
      if (state_ != State::kUp) {
        // A switch sends none to a slave (6.3.6); a standby EQUAL connection may get some.
        (handshake_done_ ? counters_.packet_in_not_master : counters_.packet_in_before_up).inc();
        break;
      }
      {
        const uint64_t before = enqueued_;
        for (auto& app : shard_.apps)
          if (app->on_packet_in(*this, std::get<ofp::PacketIn>(msg.body), last_rx_) == Disposition::kStop) break;
        if (enqueued_ != before) pin_pending_.push_back(last_rx_);
      }
      break;
    case ofp::Type::kFlowRemoved:
      if (state_ == State::kUp)
        for (auto& app : shard_.apps) app->on_flow_removed(*this, std::get<ofp::FlowRemoved>(msg.body));
      else if (handshake_done_)
        counters_.flow_removed_not_master.inc();
      break;
    case ofp::Type::kPortStatus: {
      const auto& ps = std::get<ofp::PortStatus>(msg.body);
      auto it = std::find_if(ports_.begin(), ports_.end(), [&](const ofp::Port& p) { return p.port_no == ps.desc.port_no; });
      if (ps.reason == 1) {  // OFPPR_DELETE
        if (it != ports_.end()) ports_.erase(it);
      } else if (it != ports_.end()) {
        *it = ps.desc;
      } else {
        ports_.push_back(ps.desc);
      }
      if (registered_) ctl_.register_dpid(features_.datapath_id, shared_from_this(), shard_.shard->index(), peer_, ports_.size());
      if (state_ == State::kUp)
        for (auto& app : shard_.apps) app->on_port_status(*this, ps);
      break;
    }
    default:
      // Controller-to-switch messages (FLOW_MOD, PACKET_OUT, ...) make no sense from a switch.
      counters_.err_unexpected.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: unexpected {} from switch", peer_, ofp::type_name(t));
      reply_error(ofp::Error{ofp::Errc::kBadType, ofp::err::kBadRequest, ofp::err::kBrcBadType, "unexpected type"}, frame);
      break;
  }
}

void Connection::on_features(const ofp::FeaturesReply& f) {
  features_ = f;
  state_ = State::kPortDesc;
  ctl_.register_dpid(f.datapath_id, shared_from_this(), shard_.shard->index(), peer_, 0);
  registered_ = true;
  ofp::MultipartRequest req;
  req.type = ofp::MultipartType::kPortDesc;
  port_desc_xid_ = next_xid();
  enqueue(port_desc_xid_, req, Lane::kHigh);
}

void Connection::on_port_desc_complete() {
  if (state_ != State::kPortDesc) return;
  ports_ = std::move(ports_pending_);
  ports_pending_.clear();
  ctl_.register_dpid(features_.datapath_id, shared_from_this(), shard_.shard->index(), peer_, ports_.size());
  if (arbiter_) {
    // Cluster mode: registered (set_role can find it) but not up; the arbiter decides.
    state_ = State::kStandby;
    handshake_done_ = true;
    arbiter_connected_ = true;
    spdlog::info("switch {:016x} connected ({}, {} ports, shard {}): standby until a role is decided",
                 features_.datapath_id, peer_, ports_.size(), shard_.shard->index());
    arbiter_->switch_connected(features_.datapath_id);
    return;
  }
  state_ = State::kConfiguring;
  run_setup(cfg_.clear_flows_on_connect);
}

void Connection::run_setup(bool clear_flows) {
  const uint64_t epoch = ++setup_epoch_;
  std::vector<ofp::Body> setup;
  setup.push_back(ofp::SetConfig{ofp::SwitchConfig{0, cfg_.miss_send_len}});
  if (clear_flows) {
    // Everything but the cookie ranges apps resynchronise themselves (one delete-all if none).
    std::vector<CookieRange> keep;
    for (auto& app : shard_.apps)
      for (const auto& r : app->kept_cookies()) keep.push_back(r);
    for (const auto& r : cookie_complement(keep)) {
      ofp::FlowMod del;
      del.command = ofp::FlowModCommand::kDelete;
      del.table_id = ofp::kTableAll;
      del.cookie = r.cookie;
      del.cookie_mask = r.mask;
      setup.push_back(std::move(del));
    }
  }
  // Table-miss entry (5.4): priority 0, match all, send the whole packet to the controller.
  ofp::FlowMod miss;
  miss.priority = 0;
  miss.instructions.push_back(ofp::InstrApplyActions{{ofp::ActionOutput{ofp::port::kController, ofp::kControllerMaxLenNoBuffer}}});
  setup.push_back(std::move(miss));
  // Asked before the set-up goes out, answered before its barrier; a switch with usable meters
  // then gets them after the set-up (miss_meter.hpp). Its absence never fails the handshake.
  start_miss_meters(*this, cfg_.dos, counters_);
  send_batch(std::move(setup), Lane::kHigh, [this, epoch](const BatchResult& r) {
    if (state_ != State::kConfiguring || epoch != setup_epoch_) return;  // closed or demoted meanwhile
    if (!r.ok) {
      if (arbiter_ && r.error.type == ofp::err::kBadRequest && r.error.code == ofp::err::kBrcIsSlave) {
        // Another instance took the switch between our ROLE_REPLY and the set-up; on_error
        // already told the arbiter. Stay connected as standby.
        to_standby("set-up refused: not master");
        return;
      }
      spdlog::warn("switch {:016x}: set-up rejected (error type {} code {})", features_.datapath_id, r.error.type, r.error.code);
      close("set-up rejected");
      return;
    }
    on_up();
  });
}

void Connection::on_up() {
  state_ = State::kUp;
  remote_open();
  was_up_ = true;
  handshake_done_ = true;
  counters_.switches_up.add(1);
  publish_summary();
  spdlog::info("switch {:016x} up ({}, {} ports, {} tables, shard {})", features_.datapath_id, peer_, ports_.size(),
               features_.n_tables, shard_.shard->index());
  for (auto& app : shard_.apps) {
    if (state_ != State::kUp) break;
    app->on_switch_up(*this);
  }
}

void Connection::publish_summary() {
  if (registered_) ctl_.update_summary(features_.datapath_id, this, role_, role_gen_, state_ == State::kUp);
}

void Connection::on_error(uint32_t xid, const ofp::ErrorMsg& e) {
  counters_.err_from_switch.inc();
  // 6.3.6: a slave's writes are refused; another instance holds a newer generation.
  if (arbiter_ && e.type == ofp::err::kBadRequest && e.code == ofp::err::kBrcIsSlave) on_is_slave(xid);
  if (remote_error(xid, e)) return;  // a batch another shard sent
  for (auto& b : batches_) {
    if (xid >= b.first_xid && xid <= b.barrier_xid) {
      if (b.result.ok) {
        b.result.ok = false;
        b.result.error = e;
        b.result.failed_xid = xid;
      }
      return;
    }
  }
  if (auto it = requests_.find(xid); it != requests_.end()) {
    auto cb = std::move(it->second);
    requests_.erase(it);
    cb(nullptr, &e, false);
    return;
  }
  SDN_LOG_RATELIMITED(spdlog::level::warn, "switch {:016x}: OFPT_ERROR type {} code {} for xid {}", features_.datapath_id,
                      e.type, e.code, xid);
  if (state_ == State::kUp)
    for (auto& app : shard_.apps) app->on_error(*this, xid, e);
}

void Connection::on_barrier_reply(uint32_t xid) {
  if (remote_barrier(xid)) return;  // a batch another shard sent settles by its own barrier alone
  // Barriers are answered in order (6.2): every batch whose barrier was sent no later than
  // this one is settled. xids increase in send order (serial-number comparison for wrap), so
  // a barrier an app sent on its own settles the batches before it and none after it.
  while (!batches_.empty() && xid_not_after(batches_.front().barrier_xid, xid)) {
    PendingBatch b = std::move(batches_.front());
    batches_.pop_front();
    batch_xids_ -= b.barrier_xid - b.first_xid + 1;
    (b.result.ok ? counters_.batches_ok : counters_.batches_failed).inc();
    if (b.done) b.done(b.result);
    if (state_ == State::kClosed) return;
  }
}

bool Connection::route_reply(const ofp::Message& msg, bool more) {
  auto it = requests_.find(msg.xid);
  if (it == requests_.end()) return false;
  if (more) {
    it->second(&msg, nullptr, true);
    return true;
  }
  auto cb = std::move(it->second);
  requests_.erase(it);
  cb(&msg, nullptr, false);
  return true;
}

void Connection::reply_error(const ofp::Error& e, std::span<const uint8_t> offending) {
  const uint32_t xid = offending.size() >= 8
                           ? (uint32_t{offending[4]} << 24) | (uint32_t{offending[5]} << 16) |
                                 (uint32_t{offending[6]} << 8) | offending[7]
                           : 0;
  enqueue(xid, ofp::error_reply(e, offending), Lane::kHigh);
}

// ---- write side -------------------------------------------------------------------------

uint32_t Connection::next_xid() {
  if (++xid_ >= kRemoteXid) xid_ = 1;  // the top half is the remote side's
  return xid_;
}

size_t Connection::pending_xids() const { return batch_xids_ + requests_.size(); }

bool Connection::encode_counted(uint32_t xid, const ofp::Body& body, ofp::Bytes& buf) {
  auto r = ofp::encode(xid, body, buf);
  if (!r) {
    counters_.err_encode.inc();
    SDN_LOG_RATELIMITED(spdlog::level::err, "switch {:016x}: cannot encode {}: {} ({})", features_.datapath_id,
                        ofp::type_name(ofp::type_of(body)), ofp::errc_name(r.error().code), r.error().detail);
    return false;
  }
  counters_.tx_by_type[type_index(ofp::type_of(body))]->inc();
  return true;
}

bool Connection::enqueue_to(uint32_t xid, const ofp::Body& body, ofp::Bytes& buf) {
  if (!encode_counted(xid, body, buf)) return false;
  ++enqueued_;
  return true;
}

bool Connection::enqueue(uint32_t xid, const ofp::Body& body, Lane lane) {
  if (state_ == State::kClosed) return false;
  if (hi_.size() + lo_bytes_ > cfg_.max_queued_bytes) {
    counters_.err_queue_overflow.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: output queue over {} bytes, closing", peer_, cfg_.max_queued_bytes);
    close("output queue overflow");
    return false;
  }
  bool ok;
  if (lane == Lane::kHigh) {
    ok = enqueue_to(xid, body, hi_);
    if (ok) ++hi_msgs_;
  } else {
    lo_.push_back(take_chunk());
    ok = enqueue_to(xid, body, lo_.back());
    if (ok) {
      lo_bytes_ += lo_.back().size();
      lo_msgs_.push_back(1);
    } else {
      lo_.pop_back();
    }
  }
  if (ok) schedule_flush();
  return ok;
}

void Connection::send(ofp::Body body, Lane lane) { enqueue(next_xid(), body, lane); }

void Connection::send_batch(std::vector<ofp::Body> batch, Lane lane, BatchCallback done) {
  BatchResult fail;
  fail.ok = false;
  if (state_ == State::kClosed) {
    fail.disconnected = true;
    if (done) done(fail);
    return;
  }
  if (pending_xids() + batch.size() + 1 > cfg_.max_pending_xids) {
    counters_.err_pending_xids.inc();
    SDN_LOG_RATELIMITED(spdlog::level::warn, "switch {:016x}: {} unconfirmed xids, refusing batch", features_.datapath_id,
                        pending_xids());
    fail.error = ofp::ErrorMsg{ofp::err::kBadRequest, ofp::err::kBrcMultipartBufferOverflow, {}};
    if (done) done(fail);
    return;
  }
  if (hi_.size() + lo_bytes_ > cfg_.max_queued_bytes) {
    counters_.err_queue_overflow.inc();
    fail.error = ofp::ErrorMsg{ofp::err::kBadRequest, ofp::err::kBrcMultipartBufferOverflow, {}};
    if (done) done(fail);
    return;
  }
  // Contiguous xids: the batch is [first, barrier]; an ERROR with an xid in that range
  // belongs to it.
  if (xid_ > kRemoteXid - 1 - batch.size() - 2) xid_ = 0;
  const uint32_t first = xid_ + 1;
  ofp::Bytes* buf = &hi_;
  if (lane == Lane::kLow) {
    lo_.push_back(take_chunk());
    buf = &lo_.back();
  }
  const size_t before = buf->size();
  uint32_t n = 0;
  for (const auto& body : batch) {
    if (enqueue_to(next_xid(), body, *buf)) ++n;
  }
  const uint32_t barrier = next_xid();
  enqueue_to(barrier, ofp::BarrierRequest{}, *buf);
  ++n;
  if (lane == Lane::kLow) {
    lo_bytes_ += buf->size() - before;
    lo_msgs_.push_back(n);
  } else {
    hi_msgs_ += n;
  }
  batches_.push_back(PendingBatch{first, barrier, std::move(done), BatchResult{}});
  batch_xids_ += barrier - first + 1;
  schedule_flush();
}

void Connection::send_request(ofp::Body request, ReplyCallback on_reply) {
  if (state_ == State::kClosed) {
    on_reply(nullptr, nullptr, false);
    return;
  }
  if (pending_xids() + 1 > cfg_.max_pending_xids) {
    counters_.err_pending_xids.inc();
    ofp::ErrorMsg e{ofp::err::kBadRequest, ofp::err::kBrcMultipartBufferOverflow, {}};
    on_reply(nullptr, &e, false);
    return;
  }
  const uint32_t xid = next_xid();
  if (!enqueue(xid, request, Lane::kHigh)) {
    ofp::ErrorMsg e{ofp::err::kBadRequest, ofp::err::kBrcBadLen, {}};
    on_reply(nullptr, &e, false);
    return;
  }
  requests_.emplace(xid, std::move(on_reply));
}

void Connection::schedule_flush() {
  if (flush_posted_ || writing_ || state_ == State::kClosed) return;
  flush_posted_ = true;
  // Posted, not run now: everything queued in this loop turn goes out in one write.
  asio::post(transport_.get_executor(), [self = shared_from_this()] {
    self->flush_posted_ = false;
    self->flush();
  });
}

void Connection::flush() {
  if (writing_ || state_ == State::kClosed) return;
  // Buffers are swapped and recycled, never freed, so a steady flow of replies allocates
  // nothing: the high lane alternates between two buffers, low-lane chunks return to a pool.
  recycle_inflight();
  bool idle = false;
  {
    // What remote threads left (possibly the rest of a message already half on the wire) goes
    // first; from here until the write completes they queue behind it instead of writing.
    std::lock_guard lk(wmu_);
    remote_inflight_.swap(remote_tail_);
    idle = hi_.empty() && lo_.empty() && remote_inflight_.empty();
    if (!idle) wbusy_ = true;
  }
  if (idle) {
    if (closing_) close(close_reason_);
    return;
  }
  bufs_.clear();
  uint32_t msgs = 0;
  size_t bytes = 0;
  if (!remote_inflight_.empty()) {
    bufs_.emplace_back(asio::buffer(remote_inflight_));  // counted when the remote thread queued it
  }
  if (!hi_.empty()) {
    std::swap(hi_, hi_inflight_);
    bufs_.emplace_back(asio::buffer(hi_inflight_));
    bytes += hi_inflight_.size();
    msgs += hi_msgs_;
    hi_msgs_ = 0;
  }
  // The high lane always goes first; the low lane gets at most one quantum per write, cut at
  // chunk (whole message) boundaries, so a reactive reply never waits behind a burst.
  size_t lo_taken = 0;
  while (!lo_.empty() && (lo_taken == 0 || lo_taken + lo_.front().size() <= cfg_.low_lane_quantum)) {
    lo_taken += lo_.front().size();
    lo_bytes_ -= lo_.front().size();
    lo_inflight_.push_back(std::move(lo_.front()));
    lo_.pop_front();
    bufs_.emplace_back(asio::buffer(lo_inflight_.back()));
    msgs += lo_msgs_.front();
    lo_msgs_.pop_front();
  }
  bytes += lo_taken;
  if (!pin_pending_.empty()) {
    const auto now = Clock::now();
    for (auto t : pin_pending_)
      counters_.packet_in_service.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - t).count()));
    pin_pending_.clear();
  }
  writing_ = true;
  counters_.writes.inc();
  counters_.tx_msgs.inc(msgs);
  counters_.tx_bytes.inc(bytes);
  // A span, not the vector: asio keeps a copy of the buffer sequence for the operation.
  transport_.async_write(std::span<const asio::const_buffer>(bufs_), [self = shared_from_this()](const std::error_code& ec, size_t) {
    self->writing_ = false;
    {
      std::lock_guard lk(self->wmu_);
      self->wbusy_ = false;
    }
    if (self->state_ == State::kClosed) return;
    if (ec) {
      self->close(ec.message());
      return;
    }
    self->flush();
  });
}

ofp::Bytes Connection::take_chunk() {
  if (lo_free_.empty()) return {};
  ofp::Bytes b = std::move(lo_free_.back());
  lo_free_.pop_back();
  return b;
}

void Connection::recycle_inflight() {
  hi_inflight_.clear();
  remote_inflight_.clear();
  for (auto& b : lo_inflight_) {
    if (lo_free_.size() < kMaxFreeChunks && b.capacity() <= kMaxPooledChunkBytes) {
      b.clear();
      lo_free_.push_back(std::move(b));
    }
  }
  lo_inflight_.clear();
}

// ---- timers -----------------------------------------------------------------------------

void Connection::arm_tick() {
  auto period = std::max(std::chrono::milliseconds(5), std::min(cfg_.echo_interval, cfg_.handshake_timeout) / 2);
  tick_.expires_after(period);
  tick_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->on_tick();
  });
}

void Connection::on_tick() {
  if (state_ == State::kClosed) return;
  const auto now = Clock::now();
  if (closing_) {
    if (now - closing_since_ > std::chrono::seconds(1)) close(close_reason_);
    else arm_tick();
    return;
  }
  if (!handshake_done_ && now - started_ > cfg_.handshake_timeout) {
    counters_.err_handshake_timeout.inc();
    if (tls_pending_) {
      tls_->counters().handshake_failed.inc();
      tls_->counters().handshake_timeout.inc();
      SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: TLS handshake timed out", peer_);
    }
    close("handshake timeout");
    return;
  }
  const auto idle = now - last_rx_;
  if (idle > cfg_.echo_timeout) {
    counters_.err_echo_timeout.inc();
    close("echo timeout (dead peer)");
    return;
  }
  if (idle > cfg_.echo_interval && !echo_outstanding_ && state_ != State::kHello) {
    echo_outstanding_ = true;
    enqueue(next_xid(), ofp::EchoRequest{}, Lane::kHigh);
  }
  arm_tick();
}

bool Connection::echo_allowed() {
  const auto now = Clock::now();
  const double secs = std::chrono::duration<double>(now - echo_refill_).count();
  echo_refill_ = now;
  echo_tokens_ = std::min<double>(cfg_.echo_rate_limit, echo_tokens_ + secs * cfg_.echo_rate_limit);
  if (echo_tokens_ < 1.0) return false;
  echo_tokens_ -= 1.0;
  return true;
}

}  // namespace sdn::southbound
