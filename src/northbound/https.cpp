// HTTPS for the northbound API: [northbound] tls_cert/tls_key (and optional tls_ca for client
// certificates), checked at start-up, served by cpp-httplib's SSLServer on the same routes.
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/config.hpp"
#include "northbound/server_internal.hpp"

namespace sdn::northbound {
namespace {

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

}  // namespace

void read_https_settings(core::Config& cfg, NorthboundConfig& c) {
  const char* s = "northbound";
  c.tls_cert = cfg.get_string(s, "tls_cert", c.tls_cert);
  c.tls_key = cfg.get_string(s, "tls_key", c.tls_key);
  c.tls_ca = cfg.get_string(s, "tls_ca", c.tls_ca);
  if (c.tls_cert.empty() != c.tls_key.empty())
    cfg.add_problem("northbound.tls_cert and northbound.tls_key must be set together (HTTPS needs both)");
  if (c.tls_cert.empty() && !c.tls_ca.empty())
    cfg.add_problem("northbound.tls_ca is set but HTTPS is off (set northbound.tls_cert and tls_key)");
  for (auto [key, path] : {std::pair{"tls_cert", &c.tls_cert}, {"tls_key", &c.tls_key}, {"tls_ca", &c.tls_ca}}) {
    if (path->empty()) continue;
    // stat + access, never open: a FIFO named here would block start-up.
    struct stat st{};
    if (::stat(path->c_str(), &st) != 0 || ::access(path->c_str(), R_OK) != 0)
      cfg.add_problem(fmt::format("northbound.{}: cannot read '{}': {}", key, *path, std::strerror(errno)));
    else if (!S_ISREG(st.st_mode))
      cfg.add_problem(fmt::format("northbound.{}: '{}' is not a regular file", key, *path));
  }
}

std::unique_ptr<httplib::Server> make_http_server(const NorthboundConfig& cfg, std::string& error) {
  if (cfg.tls_cert.empty()) return std::make_unique<httplib::Server>();
  // The callback constructor: our own checks, each failure naming the key at fault.
  auto setup = [&cfg, &error](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, cfg.tls_cert.c_str()) != 1) {
      error = fmt::format("northbound.tls_cert: cannot load '{}': {}", cfg.tls_cert, openssl_error());
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, cfg.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
      error = fmt::format("northbound.tls_key: cannot load '{}': {}", cfg.tls_key, openssl_error());
      return false;
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      error = fmt::format("northbound.tls_key: '{}' does not match northbound.tls_cert", cfg.tls_key);
      return false;
    }
    if (!cfg.tls_ca.empty()) {
      if (SSL_CTX_load_verify_locations(&ctx, cfg.tls_ca.c_str(), nullptr) != 1) {
        error = fmt::format("northbound.tls_ca: cannot load '{}': {}", cfg.tls_ca, openssl_error());
        return false;
      }
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(cfg.tls_ca.c_str())) SSL_CTX_set_client_CA_list(&ctx, names);
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      static constexpr unsigned char kSidCtx[] = "sdnator-api";
      SSL_CTX_set_session_id_context(&ctx, kSidCtx, sizeof kSidCtx - 1);
    }
    return true;
  };
  auto server = std::make_unique<httplib::SSLServer>(setup);
  if (!server->is_valid() && error.empty()) error = "HTTPS: cannot create the TLS context";
  return server;
}

}  // namespace sdn::northbound
