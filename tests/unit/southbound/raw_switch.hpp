// A blocking, byte-level OpenFlow switch for runtime tests: sends exactly the bytes a test
// wants (including malformed ones) and reads the controller's messages with a deadline.
#pragma once

#include <chrono>
#include <cstdint>
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

  // Completes the switch side of the handshake; returns false on any surprise.
  bool handshake(uint64_t dpid, uint32_t n_ports = 2) {
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

  bool eof() const { return eof_; }
  std::vector<ofp::Message>& skipped() { return skipped_; }
  void close() {
    std::error_code ec;
    sock_.close(ec);
  }

  std::vector<ofp::FlowMod> setup_flows;
  std::optional<ofp::SetConfig> set_config;
  std::optional<ofp::MeterFeatures> meter_features;  // what to answer the meter probe with

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

  asio::io_context io_;
  asio::ip::tcp::socket sock_;
  ofp::Bytes buf_;
  ofp::Bytes last_frame_;
  bool eof_ = false;
  std::vector<ofp::Message> skipped_;
};

}  // namespace sdn::test

#include <poll.h>
inline bool sdn::test::RawSwitch::wait_readable(std::chrono::milliseconds timeout) {
  pollfd p{sock_.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}
