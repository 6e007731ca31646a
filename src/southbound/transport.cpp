// TLS settings, the server TLS context and the plain/TLS byte stream of a switch connection.
#include "southbound/transport.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/config.hpp"

namespace sdn::southbound {
namespace {

// "" when `path` is a readable regular file; otherwise why not. Never opens it (a FIFO would block).
std::string unreadable(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || ::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  return {};
}

}  // namespace

void read_tls_settings(core::Config& cfg, TlsSettings& t) {
  const char* s = "southbound";
  t.enabled = cfg.get_bool(s, "tls", t.enabled);
  t.cert = cfg.get_string(s, "tls_cert", t.cert);
  t.key = cfg.get_string(s, "tls_key", t.key);
  t.ca = cfg.get_string(s, "tls_ca", t.ca);
  t.verify_peer = cfg.get_bool(s, "tls_verify_peer", t.verify_peer);
  if (!t.enabled) {
    // Certificates configured but TLS off would silently serve plain TCP: refuse.
    for (const char* k : {"tls_cert", "tls_key", "tls_ca"})
      if (cfg.has(s, k)) cfg.add_problem(fmt::format("southbound.{} is set but southbound.tls is not true", k));
    return;
  }
  auto need = [&](const char* key, const std::string& path) {
    if (path.empty()) {
      cfg.add_problem(fmt::format("southbound.{} is required when southbound.tls = true", key));
    } else if (auto why = unreadable(path); !why.empty()) {
      cfg.add_problem(fmt::format("southbound.{}: cannot read '{}': {}", key, path, why));
    }
  };
  need("tls_cert", t.cert);
  need("tls_key", t.key);
  if (t.verify_peer || !t.ca.empty()) need("tls_ca", t.ca);
}

TlsCounters::TlsCounters(core::Metrics& m)
    : handshakes(m.counter("southbound.tls.handshakes")),
      handshake_failed(m.counter("southbound.tls.handshake_failed")),
      handshake_timeout(m.counter("southbound.tls.handshake_timeout")),
      handshake_time(m.histogram("southbound.tls.handshake_time")) {}

TlsContext::TlsContext(const TlsSettings& s, core::Metrics& m)
    : settings_(s), ctx_(asio::ssl::context::tls_server), counters_(m) {}

Expected<std::shared_ptr<TlsContext>, std::string> TlsContext::create(const TlsSettings& s, core::Metrics& m) {
  auto tls = std::make_shared<TlsContext>(s, m);
  auto& ctx = tls->ctx_;
  SSL_CTX* raw = ctx.native_handle();
  std::error_code ec;
  // TLS 1.2 or later (OVS offers 1.2 and, with OpenSSL 3, 1.3); no compression, no renegotiation.
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression |
                      asio::ssl::context::single_dh_use,
                  ec);
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION);
  ctx.use_certificate_chain_file(s.cert, ec);
  if (ec) return unexpected(fmt::format("southbound.tls_cert: cannot load '{}': {}", s.cert, ec.message()));
  ctx.use_private_key_file(s.key, asio::ssl::context::pem, ec);
  if (ec) return unexpected(fmt::format("southbound.tls_key: cannot load '{}': {}", s.key, ec.message()));
  if (SSL_CTX_check_private_key(raw) != 1)
    return unexpected(fmt::format("southbound.tls_key: '{}' does not match the certificate in southbound.tls_cert", s.key));
  if (!s.ca.empty()) {
    ctx.load_verify_file(s.ca, ec);
    if (ec) return unexpected(fmt::format("southbound.tls_ca: cannot load '{}': {}", s.ca, ec.message()));
    // Names the acceptable CAs in the CertificateRequest, so a switch with several certs picks right.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.ca.c_str())) SSL_CTX_set_client_CA_list(raw, names);
  }
  if (s.verify_peer) {
    ctx.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return unexpected(fmt::format("southbound.tls_verify_peer: {}", ec.message()));
  } else {
    ctx.set_verify_mode(asio::ssl::verify_none, ec);
  }
  // Session resumption with client certificates needs a session id context (OpenSSL refuses to
  // resume otherwise, failing the reconnecting switch's handshake).
  static constexpr unsigned char kSidCtx[] = "sdnator-openflow";
  SSL_CTX_set_session_id_context(raw, kSidCtx, sizeof kSidCtx - 1);
  return tls;
}

Transport::Transport(Tcp sock, asio::ssl::context* tls) : s_(std::in_place_index<0>, std::move(sock)) {
  if (!tls) return;
  Tcp plain = std::move(std::get<0>(s_));  // out of the variant before emplace destroys it
  s_.emplace<1>(std::move(plain), *tls);
}

std::string Transport::tls_summary() {
  auto* t = std::get_if<1>(&s_);
  if (!t) return {};
  SSL* ssl = t->native_handle();
  std::string out = fmt::format("{} {}", SSL_get_version(ssl), SSL_get_cipher_name(ssl));
  if (X509* peer = SSL_get0_peer_certificate(ssl)) {
    char name[256];
    X509_NAME_oneline(X509_get_subject_name(peer), name, sizeof name);
    out += fmt::format(", peer {}", name);
  } else {
    out += ", no peer certificate";
  }
  return out;
}

}  // namespace sdn::southbound
