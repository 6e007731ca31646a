// The byte stream under a switch connection: plain TCP or TLS (asio::ssl over OpenSSL). Plain
// TCP costs one predictable branch per I/O call; TLS adds the server-side handshake, with mutual
// authentication against a CA, before the OpenFlow HELLO exchange (docs/tls.md).
#pragma once

#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>

#include "core/expected.hpp"
#include "core/metrics.hpp"
#include "southbound/config.hpp"

namespace sdn::southbound {

// southbound.tls.*: resolved once, bumped by the connections.
struct TlsCounters {
  explicit TlsCounters(core::Metrics& m);
  core::Counter& handshakes;         // completed and (when verify_peer) the peer verified
  core::Counter& handshake_failed;   // any refusal: bad or missing peer cert, not TLS, timeout
  core::Counter& handshake_timeout;  // the part of handshake_failed that ran out of time
  core::Histogram& handshake_time;   // accept -> TLS handshake done, ns
};

// The server's TLS context, built once from [southbound] tls_*; every TLS connection holds a
// reference, so it outlives them (handlers can run after the controller is gone).
class TlsContext {
 public:
  // Loads the certificate chain, key and CA; an error names the config key at fault.
  static Expected<std::shared_ptr<TlsContext>, std::string> create(const TlsSettings& s, core::Metrics& m);

  asio::ssl::context& ssl() { return ctx_; }
  TlsCounters& counters() { return counters_; }
  const TlsSettings& settings() const { return settings_; }

  TlsContext(const TlsSettings& s, core::Metrics& m);

 private:
  TlsSettings settings_;
  asio::ssl::context ctx_;
  TlsCounters counters_;
};

class Transport {
 public:
  using Tcp = asio::ip::tcp::socket;
  using Tls = asio::ssl::stream<Tcp>;

  // Plain TCP when `tls` is null; otherwise TLS (server side): async_handshake() first.
  Transport(Tcp sock, asio::ssl::context* tls);
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  bool is_tls() const { return s_.index() == 1; }
  Tcp& tcp() { return is_tls() ? std::get<1>(s_).next_layer() : std::get<0>(s_); }
  Tcp::executor_type get_executor() { return tcp().get_executor(); }

  template <class Handler>
  void async_handshake(Handler&& h) {
    std::get<1>(s_).async_handshake(asio::ssl::stream_base::server, std::forward<Handler>(h));
  }
  template <class Buffers, class Handler>
  void async_read_some(const Buffers& b, Handler&& h) {
    if (auto* t = std::get_if<0>(&s_)) t->async_read_some(b, std::forward<Handler>(h));
    else std::get<1>(s_).async_read_some(b, std::forward<Handler>(h));
  }
  template <class Buffers, class Handler>
  void async_write(const Buffers& b, Handler&& h) {
    if (auto* t = std::get_if<0>(&s_)) asio::async_write(*t, b, std::forward<Handler>(h));
    else asio::async_write(std::get<1>(s_), b, std::forward<Handler>(h));
  }
  // On the TCP socket: TLS ends without close_notify (the OpenFlow session is over either way).
  void shutdown(asio::socket_base::shutdown_type what, std::error_code& ec) { tcp().shutdown(what, ec); }
  void close(std::error_code& ec) { tcp().close(ec); }
  asio::ip::tcp::endpoint remote_endpoint(std::error_code& ec) { return tcp().remote_endpoint(ec); }

  // After a TLS handshake: "TLSv1.3 TLS_AES_256_GCM_SHA384, CN=..." (the peer's subject); "" for TCP.
  std::string tls_summary();

 private:
  std::variant<Tcp, Tls> s_;
};

}  // namespace sdn::southbound
