// A blocking, byte-level OpenFlow switch for runtime tests: sends exactly the bytes a test
// wants (including malformed ones) and reads the controller's messages with a deadline.
// serve_until() plays a well-behaved switch instead, with OpenFlow roles as Open vSwitch
// implements them (RoleBook).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "ofp/message.hpp"

namespace sdn::test {

class RawSwitch;

// What one switch keeps across its connections to several controllers (OpenFlow 1.3.5, 6.3.6):
// the largest generation_id a MASTER or SLAVE request carried (a smaller one is stale,
// compared as a signed 64-bit distance), and every connection, so a new master demotes the
// previous one to slave. Connections sharing a book are the same switch; single-threaded use.
struct RoleBook {
  bool role_status = true;  // tell a demoted master with an ONF ROLE_STATUS, as OVS 3.1 does
  bool have_generation = false;
  uint64_t max_generation = 0;
  std::vector<RawSwitch*> conns;
};

class RawSwitch {
 public:
  explicit RawSwitch(uint16_t port) : sock_(io_) {
    sock_.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    sock_.set_option(asio::ip::tcp::no_delay(true));
  }

  void send_bytes(std::span<const uint8_t> b) { asio::write(sock_, asio::buffer(b.data(), b.size())); }
  void send(uint32_t xid, ofp::Body body) {
    ofp::Bytes out;
    auto r = ofp::encode(xid, std::move(body), out);
    if (!r) throw std::runtime_error("test encode failed");
    send_bytes(out);
  }

  // Next whole message, or nullopt on timeout / EOF (eof() tells which).
  std::optional<ofp::Message> recv(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    auto frame = recv_frame(timeout);
    if (!frame) return std::nullopt;
    last_frame_ = std::move(*frame);
    auto m = ofp::decode(last_frame_);
    if (!m) throw std::runtime_error(std::string("controller sent undecodable message: ") + m.error().detail);
    return std::move(*m);
  }

  // Reads until a message of type `t` arrives (others are collected in skipped()).
  std::optional<ofp::Message> recv_type(ofp::Type t, std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto m = recv(left);
      if (!m) return std::nullopt;
      if (ofp::type_of(m->body) == t) return m;
      skipped_.push_back(std::move(*m));
    }
  }

  ~RawSwitch() { leave_book(); }
  RawSwitch(const RawSwitch&) = delete;
  RawSwitch& operator=(const RawSwitch&) = delete;

  // Completes the switch side of the handshake; returns false on any surprise.
  bool handshake(uint64_t dpid, uint32_t n_ports = 2) {
    if (!handshake_ports(dpid, n_ports)) return false;
    return answer_setup();
  }

  // HELLO, FEATURES and the port description only: what a controller in cluster mode needs
  // before it asks its arbiter for a role (no set-up follows until it is master).
  bool handshake_ports(uint64_t dpid, uint32_t n_ports = 2) {
    send(1, ofp::Hello{});
    if (!recv_type(ofp::Type::kHello)) return false;
    auto fr = recv_type(ofp::Type::kFeaturesRequest);
    if (!fr) return false;
    ofp::FeaturesReply f;
    f.datapath_id = dpid;
    f.n_tables = 254;
    f.n_buffers = 0;
    send(fr->xid, f);
    auto pd = recv_type(ofp::Type::kMultipartRequest);
    if (!pd) return false;
    ofp::MultipartReply rep;
    rep.type = ofp::MultipartType::kPortDesc;
    std::vector<ofp::Port> ports;
    for (uint32_t i = 1; i <= n_ports; ++i) {
      ofp::Port p;
      p.port_no = i;
      p.hw_addr = 0x020000000000ull | i;
      p.name = "p" + std::to_string(i);
      ports.push_back(p);
    }
    rep.body = ports;
    send(pd->xid, rep);
    return true;
  }

  // Answers the controller's set-up until its barrier.
  bool answer_setup() {
    // SET_CONFIG, FLOW_MOD delete, FLOW_MOD table-miss, BARRIER_REQUEST
    while (true) {
      auto m = recv();
      if (!m) return false;
      if (ofp::type_of(m->body) == ofp::Type::kFlowMod) setup_flows.push_back(std::get<ofp::FlowMod>(m->body));
      if (ofp::type_of(m->body) == ofp::Type::kSetConfig) set_config = std::get<ofp::SetConfig>(m->body);
      // The controller's meter probe (southbound/miss_meter.hpp): answered with meter_features
      // when a test set it, else with BAD_MULTIPART, as a switch without meters does.
      if (ofp::type_of(m->body) == ofp::Type::kMultipartRequest &&
          std::get<ofp::MultipartRequest>(m->body).type == ofp::MultipartType::kMeterFeatures) {
        if (meter_features) {
          ofp::MultipartReply mf;
          mf.type = ofp::MultipartType::kMeterFeatures;
          mf.body = *meter_features;
          send(m->xid, mf);
        } else {
          send(m->xid, ofp::ErrorMsg{ofp::err::kBadRequest, ofp::err::kBrcBadMultipart, {}});
        }
      }
      if (ofp::type_of(m->body) == ofp::Type::kBarrierRequest) {
        send(m->xid, ofp::BarrierReply{});
        return true;
      }
    }
  }

  // True once the controller closed the connection (reads EOF within the timeout).
  bool wait_closed(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      auto f = recv_frame(left);
      if (!f && eof_) return true;
      if (!f) return false;
    }
    return false;
  }

  // Joins a switch's role book: ROLE_REQUESTs are then answered by serve_until() as OVS does.
  void join_book(std::shared_ptr<RoleBook> book) {
    leave_book();
    book_ = std::move(book);
    book_->conns.push_back(this);
  }

  // Plays the switch until `done()` holds (checked before each read) or `timeout` passes:
  // answers ECHO, BARRIER, the meter probe and (with a book) ROLE_REQUEST; refuses writes
  // from a slave connection with OFPBRC_IS_SLAVE (6.3.6). Every message is kept in received.
  bool serve_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (done()) return true;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return done();
      auto m = recv(std::min(left, std::chrono::milliseconds(5)));
      if (!m) {
        if (eof_) return done();
        continue;
      }
      answer(*m);
      if (auto* po = std::get_if<ofp::PacketOut>(&m->body)) po->data = {};  // it pointed into last_frame_
      received.push_back(std::move(*m));
    }
  }
  // Plays the switch for `d` (to check that something does not happen).
  void serve_for(std::chrono::milliseconds d) {
    serve_until([] { return false; }, d);
  }

  // The messages of type `t` in received.
  template <class T>
  std::vector<T> received_of() const {
    std::vector<T> out;
    for (const auto& m : received)
      if (const auto* b = std::get_if<T>(&m.body)) out.push_back(*b);
    return out;
  }

  bool eof() const { return eof_; }
  std::vector<ofp::Message>& skipped() { return skipped_; }
  void close() {
    std::error_code ec;
    sock_.close(ec);
  }

  std::vector<ofp::FlowMod> setup_flows;
  std::optional<ofp::SetConfig> set_config;
  std::optional<ofp::MeterFeatures> meter_features;  // what to answer the meter probe with
  uint32_t role = ofp::kRoleEqual;                    // this connection's role (with a book)
  bool hold_role_replies = false;                     // serve_until leaves ROLE_REQUESTs unanswered
  std::vector<ofp::Message> received;                 // everything serve_until read
  size_t is_slave_sent = 0;

  // The switch side of one ROLE_REQUEST (6.3.6), as serve_until answers it.
  void answer_role(const ofp::Message& m) {
    const auto& rq = std::get<ofp::RoleRequest>(m.body).role;
    if (rq.role == ofp::kRoleMaster || rq.role == ofp::kRoleSlave) {
      if (book_->have_generation && static_cast<int64_t>(rq.generation_id - book_->max_generation) < 0) {
        send_error(m.xid, ofp::err::kRoleRequestFailed, ofp::err::kRrfcStale);
        return;
      }
      book_->have_generation = true;
      book_->max_generation = rq.generation_id;
    }
    if (rq.role == ofp::kRoleMaster)
      for (auto* c : book_->conns)
        if (c != this && c->role == ofp::kRoleMaster) {
          c->role = ofp::kRoleSlave;
          if (book_->role_status) c->send_role_status(ofp::kRoleSlave, 0, rq.generation_id);
        }
    if (rq.role != ofp::kRoleNoChange) role = rq.role;
    send(m.xid, ofp::RoleReply{ofp::RoleMsg{role, book_->max_generation}});
  }

 private:
  // Reads bytes until one whole frame is buffered.
  std::optional<ofp::Bytes> recv_frame(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (buf_.size() >= 8) {
        size_t len = (size_t{buf_[2]} << 8) | buf_[3];
        if (len >= 8 && buf_.size() >= len) {
          ofp::Bytes f(buf_.begin(), buf_.begin() + static_cast<long>(len));
          buf_.erase(buf_.begin(), buf_.begin() + static_cast<long>(len));
          return f;
        }
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      if (!wait_readable(left)) return std::nullopt;
      uint8_t tmp[65536];
      std::error_code ec;
      size_t n = sock_.read_some(asio::buffer(tmp), ec);
      if (ec) {
        eof_ = true;
        return std::nullopt;
      }
      buf_.insert(buf_.end(), tmp, tmp + n);
    }
  }
  bool wait_readable(std::chrono::milliseconds timeout);

  void leave_book() {
    if (!book_) return;
    std::erase(book_->conns, this);
    book_.reset();
  }
  // ONF ROLE_STATUS (ofp::kOnfRoleStatus): header, experimenter, exp_type, role, reason, pad, generation.
  void send_role_status(uint32_t r, uint8_t reason, uint64_t generation) {
    ofp::Bytes f;
    auto put = [&f](uint64_t v, int n) {
      for (int i = n - 1; i >= 0; --i) f.push_back(static_cast<uint8_t>(v >> (8 * i)));
    };
    put(ofp::kVersion, 1);
    put(static_cast<uint8_t>(ofp::Type::kExperimenter), 1);
    put(ofp::kOnfRoleStatusLen, 2);
    put(0, 4);
    put(ofp::kOnfExperimenterId, 4);
    put(ofp::kOnfRoleStatus, 4);
    put(r, 4);
    put(reason, 1);
    put(0, 3);
    put(generation, 8);
    send_bytes(f);
  }
  // An ERROR carrying the first 64 bytes of the frame last read (7.4.4).
  void send_error(uint32_t xid, uint16_t type, uint16_t code) {
    ofp::ErrorMsg e{type, code, {}};
    e.data.assign(last_frame_.begin(), last_frame_.begin() + static_cast<long>(std::min<size_t>(64, last_frame_.size())));
    send(xid, e);
  }
  void answer(const ofp::Message& m) {
    switch (ofp::type_of(m.body)) {
      case ofp::Type::kEchoRequest:
        send(m.xid, ofp::EchoReply{std::get<ofp::EchoRequest>(m.body).data});
        break;
      case ofp::Type::kBarrierRequest:
        send(m.xid, ofp::BarrierReply{});
        break;
      case ofp::Type::kRoleRequest:
        if (book_ && !hold_role_replies) answer_role(m);
        break;
      case ofp::Type::kMultipartRequest:
        if (std::get<ofp::MultipartRequest>(m.body).type == ofp::MultipartType::kMeterFeatures)
          send(m.xid, ofp::ErrorMsg{ofp::err::kBadRequest, ofp::err::kBrcBadMultipart, {}});
        break;
      case ofp::Type::kFlowMod:
      case ofp::Type::kPacketOut:
      case ofp::Type::kGroupMod:
      case ofp::Type::kMeterMod:
      case ofp::Type::kSetConfig:
      case ofp::Type::kPortMod:
      case ofp::Type::kTableMod:
        if (book_ && role == ofp::kRoleSlave) {
          ++is_slave_sent;
          send_error(m.xid, ofp::err::kBadRequest, ofp::err::kBrcIsSlave);
        }
        break;
      default:
        break;
    }
  }

  asio::io_context io_;
  asio::ip::tcp::socket sock_;
  ofp::Bytes buf_;
  ofp::Bytes last_frame_;
  bool eof_ = false;
  std::vector<ofp::Message> skipped_;
  std::shared_ptr<RoleBook> book_;
};

}  // namespace sdn::test

#include <poll.h>
inline bool sdn::test::RawSwitch::wait_readable(std::chrono::milliseconds timeout) {
  pollfd p{sock_.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}
