// The northbound API over HTTPS ([northbound] tls_cert/tls_key, optional tls_ca): a client that
// trusts the CA gets answers, plain HTTP and untrusting clients do not; with tls_ca, only clients
// presenting a certificate from that CA are served; bad keys and files are errors naming the key.
// Certificates are made per run with the openssl CLI (EC P-256) in a temporary directory.
#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/config.hpp"
#include "northbound/server.hpp"

namespace sdn::northbound {
namespace {

namespace fs = std::filesystem;

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

class HttpsTest : public ::testing::Test {
 protected:
  static std::string p(const std::string& name) { return (dir_ / name).string(); }
  static bool ca(const std::string& n) {
    return sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=" + n +
              " -keyout " + p(n + "-key.pem") + " -out " + p(n + "-cert.pem"));
  }
  // `leaf` signed by `ca`; `san` an extension line or "".
  static bool leaf(const std::string& ca, const std::string& n, const std::string& san) {
    if (!san.empty()) std::ofstream(p(n + ".ext")) << san << "\n";
    return sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=" + n + " -keyout " +
              p(n + "-key.pem") + " -out " + p(n + ".csr")) &&
           sh("openssl x509 -req -days 2 -in " + p(n + ".csr") + " -CA " + p(ca + "-cert.pem") + " -CAkey " +
              p(ca + "-key.pem") + " -CAcreateserial -out " + p(n + "-cert.pem") +
              (san.empty() ? "" : " -extfile " + p(n + ".ext")));
  }
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/sdnator-https-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(ca("apica") && ca("otherca")) << "openssl CLI failed";
    ASSERT_TRUE(leaf("apica", "server", "subjectAltName = IP:127.0.0.1") && leaf("apica", "operator", "") &&
                leaf("otherca", "stranger", ""));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Expected<uint16_t, std::string> start(bool client_ca) {
    NorthboundConfig cfg;
    cfg.port = 0;
    cfg.threads = 4;
    cfg.max_event_streams = 1;
    cfg.tls_cert = p("server-cert.pem");
    cfg.tls_key = p("server-key.pem");
    if (client_ca) cfg.tls_ca = p("apica-cert.pem");
    Sources src;
    src.version = "test";
    server_ = std::make_unique<Server>(cfg, std::move(src));
    return server_->start();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  // Status of GET /api/v1/health (0: no HTTP answer) over https with the given trust and identity.
  static int health(uint16_t port, const std::string& ca_file, const std::string& who = "") {
    const std::string origin = "https://127.0.0.1:" + std::to_string(port);
    auto cli = who.empty() ? httplib::Client(origin) : httplib::Client(origin, p(who + "-cert.pem"), p(who + "-key.pem"));
    cli.set_connection_timeout(3, 0);
    cli.set_read_timeout(3, 0);
    if (!ca_file.empty()) cli.set_ca_cert_path(ca_file);
    cli.enable_server_certificate_verification(true);
    auto r = cli.Get("/api/v1/health");
    return r ? r->status : 0;
  }

  static fs::path dir_;
  std::unique_ptr<Server> server_;
};
fs::path HttpsTest::dir_;

TEST_F(HttpsTest, ServesHttpsToClientsThatTrustTheCaOnly) {
  auto port = start(false);
  ASSERT_TRUE(port) << port.error();
  EXPECT_EQ(health(*port, p("apica-cert.pem")), 200);
  EXPECT_EQ(health(*port, p("otherca-cert.pem")), 0) << "a client trusting another CA must refuse the server";
  httplib::Client plain("127.0.0.1", *port);
  plain.set_read_timeout(3, 0);
  auto r = plain.Get("/api/v1/health");
  EXPECT_FALSE(r && r->status == 200) << "plain HTTP must not be served on the HTTPS port";
}

TEST_F(HttpsTest, WithTlsCaOnlyClientsWithACertFromItAreServed) {
  auto port = start(true);
  ASSERT_TRUE(port) << port.error();
  EXPECT_EQ(health(*port, p("apica-cert.pem"), "operator"), 200);
  EXPECT_EQ(health(*port, p("apica-cert.pem")), 0) << "no client certificate";
  EXPECT_EQ(health(*port, p("apica-cert.pem"), "stranger"), 0) << "a client certificate from another CA";
}

TEST_F(HttpsTest, AKeyThatDoesNotMatchIsAnErrorNamingTheKey) {
  NorthboundConfig cfg;
  cfg.port = 0;
  cfg.tls_cert = p("server-cert.pem");
  cfg.tls_key = p("operator-key.pem");
  server_ = std::make_unique<Server>(cfg, Sources{});
  auto r = server_->start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("northbound.tls_key"), std::string::npos) << r.error();
}

TEST(HttpsConfig, ProblemsNameTheKey) {
  auto cfg = core::Config::parse("[northbound]\ntls_cert = \"/nonexistent/c.pem\"\n");
  ASSERT_TRUE(cfg);
  (void)northbound_config_from(*cfg);
  auto problems = cfg->finish();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("tls_cert and northbound.tls_key must be set together"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("northbound.tls_cert: cannot read '/nonexistent/c.pem'"), std::string::npos) << problems[1];
  auto ca_only = core::Config::parse("[northbound]\ntls_ca = \"/etc/hostname\"\n");
  ASSERT_TRUE(ca_only);
  (void)northbound_config_from(*ca_only);
  problems = ca_only->finish();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("northbound.tls_ca is set but HTTPS is off"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace sdn::northbound
