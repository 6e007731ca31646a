// OpenFlow over TLS: the controller completes the OpenFlow handshake with a switch whose
// certificate chains to the configured CA, and refuses (and counts) a certificate from another
// CA, a client without a certificate, plain TCP, garbage and silence, without harm to others.
// Certificates are made per run with the openssl CLI (EC P-256, fast) in a temporary directory.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/read.hpp>
#include <asio/ssl.hpp>
#include <asio/write.hpp>

#include "core/config.hpp"
#include "core/metrics.hpp"
#include "core/shard.hpp"
#include "fakes/eventually.hpp"
#include "southbound/controller.hpp"
#include "southbound/transport.hpp"
#include "unit/southbound/raw_switch.hpp"

namespace sdn::southbound {
namespace {

using namespace std::chrono_literals;
using test::eventually;
namespace fs = std::filesystem;

// ---- certificates -------------------------------------------------------------------------

struct Pki {
  fs::path dir;
  std::string path(const char* name) const { return (dir / name).string(); }
};

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// CA `ca` (self-signed), then `leaf` signed by it.
bool make_ca(const Pki& p, const char* ca) {
  return sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=" +
            std::string(ca) + " -keyout " + p.path(ca) + "-key.pem -out " + p.path(ca) + "-cert.pem");
}
bool make_leaf(const Pki& p, const char* ca, const char* leaf) {
  const std::string l = p.path(leaf), c = p.path(ca);
  return sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=" + std::string(leaf) +
            " -keyout " + l + "-key.pem -out " + l + ".csr") &&
         sh("openssl x509 -req -days 2 -in " + l + ".csr -CA " + c + "-cert.pem -CAkey " + c +
            "-key.pem -CAcreateserial -out " + l + "-cert.pem");
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/sdnator-tls-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    pki_.dir = tmpl;
    // "switchca" signs switches and the controller here; "otherca" is the impostor's CA.
    ASSERT_TRUE(make_ca(pki_, "switchca") && make_ca(pki_, "otherca")) << "openssl CLI failed";
    ASSERT_TRUE(make_leaf(pki_, "switchca", "controller") && make_leaf(pki_, "switchca", "sw1") &&
                make_leaf(pki_, "otherca", "impostor"));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(pki_.dir, ec);
  }

  TlsSettings settings() {
    TlsSettings t;
    t.enabled = true;
    t.cert = pki_.path("controller-cert.pem");
    t.key = pki_.path("controller-key.pem");
    t.ca = pki_.path("switchca-cert.pem");
    return t;
  }
  void start(SouthboundConfig cfg = {}) {
    cfg.listen_address = "127.0.0.1";
    cfg.listen_port = 0;
    if (!cfg.tls.enabled) cfg.tls = settings();
    pool_ = std::make_unique<core::ShardPool>(2);
    ctl_ = std::make_unique<Controller>(*pool_, cfg, metrics_, std::vector<AppFactory>{});
    pool_->start();
    auto ep = ctl_->listen();
    ASSERT_TRUE(ep) << ep.error();
    port_ = ep->port();
  }
  void TearDown() override {
    if (ctl_) ctl_->stop();
    if (pool_) {
      pool_->stop();
      pool_->join();
    }
  }
  uint64_t counter(const char* n) { return metrics_.counter_value(n); }

  static Pki pki_;
  core::Metrics metrics_;
  std::unique_ptr<core::ShardPool> pool_;
  std::unique_ptr<Controller> ctl_;
  uint16_t port_ = 0;
};
Pki TlsTest::pki_;

// ---- a TLS switch (client side, async under the hood so every step has a deadline) --------

class TlsSwitch {
 public:
  // `leaf` "" = present no certificate. The client verifies the controller against switchca.
  TlsSwitch(const Pki& p, uint16_t port, const std::string& leaf) : ctx_(asio::ssl::context::tls_client) {
    if (!leaf.empty()) {
      ctx_.use_certificate_chain_file(p.path((leaf + "-cert").c_str()) + ".pem");
      ctx_.use_private_key_file(p.path((leaf + "-key").c_str()) + ".pem", asio::ssl::context::pem);
    }
    ctx_.load_verify_file(p.path("switchca-cert.pem"));
    ctx_.set_verify_mode(asio::ssl::verify_peer);
    s_.emplace(io_, ctx_);  // after the context is complete: SSL_new copies cert and key
    s_->next_layer().connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  std::error_code handshake() {
    return run([this](auto h) { s_->async_handshake(asio::ssl::stream_base::client, h); });
  }
  std::error_code send(uint32_t xid, const ofp::Body& body) {
    ofp::Bytes out;
    if (!ofp::encode(xid, body, out)) return std::make_error_code(std::errc::invalid_argument);
    return run([&](auto h) { asio::async_write(*s_, asio::buffer(out), h); });
  }
  // The next message, or nullopt (error() tells why) within `limit`.
  std::optional<ofp::Message> recv(std::chrono::milliseconds limit = 2000ms) {
    uint8_t head[8];
    if ((err_ = run([&](auto h) { asio::async_read(*s_, asio::buffer(head), h); }, limit))) return std::nullopt;
    frame_.assign(head, head + 8);
    const size_t len = (size_t{head[2]} << 8) | head[3];
    if (len < 8) return std::nullopt;
    frame_.resize(len);
    if (len > 8 && (err_ = run([&](auto h) { asio::async_read(*s_, asio::buffer(frame_.data() + 8, len - 8), h); }, limit)))
      return std::nullopt;
    auto m = ofp::decode(frame_);
    if (!m) return std::nullopt;
    return std::move(*m);
  }
  std::optional<ofp::Message> recv_type(ofp::Type t) {
    for (int i = 0; i < 16; ++i) {
      auto m = recv();
      if (!m) return std::nullopt;
      if (ofp::type_of(m->body) == t) return m;
    }
    return std::nullopt;
  }
  // The switch side of the OpenFlow handshake, up to the barrier after the table-miss install.
  bool openflow_handshake(uint64_t dpid) {
    if (send(1, ofp::Hello{})) return false;
    if (!recv_type(ofp::Type::kHello)) return false;
    auto fr = recv_type(ofp::Type::kFeaturesRequest);
    if (!fr) return false;
    ofp::FeaturesReply f;
    f.datapath_id = dpid;
    f.n_tables = 254;
    if (send(fr->xid, f)) return false;
    auto pd = recv_type(ofp::Type::kMultipartRequest);
    if (!pd) return false;
    ofp::MultipartReply rep;
    rep.type = ofp::MultipartType::kPortDesc;
    rep.body = std::vector<ofp::Port>{};
    if (send(pd->xid, rep)) return false;
    auto barrier = recv_type(ofp::Type::kBarrierRequest);
    return barrier && !send(barrier->xid, ofp::BarrierReply{});
  }
  std::error_code error() const { return err_; }

 private:
  template <class Start>
  std::error_code run(Start start, std::chrono::milliseconds limit = 3000ms) {
    std::optional<std::error_code> result;
    start([&result](const std::error_code& ec, auto&&...) { result = ec; });
    io_.restart();
    io_.run_for(limit);
    if (result) return *result;
    std::error_code ignored;
    s_->next_layer().close(ignored);  // cancels the operation
    io_.restart();
    io_.run();
    return asio::error::timed_out;
  }

  asio::io_context io_;
  asio::ssl::context ctx_;
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> s_;
  ofp::Bytes frame_;
  std::error_code err_;
};

// ---- tests --------------------------------------------------------------------------------

TEST_F(TlsTest, SwitchWithCertFromTheCaCompletesTheOpenFlowHandshake) {
  start();
  TlsSwitch sw(pki_, port_, "sw1");
  ASSERT_FALSE(sw.handshake()) << sw.handshake().message();
  ASSERT_TRUE(sw.openflow_handshake(0x42));
  ASSERT_TRUE(eventually([&] { return metrics_.gauge_value("southbound.switches.up") == 1; }));
  ASSERT_EQ(ctl_->switches().size(), 1u);
  EXPECT_EQ(ctl_->switches()[0].dpid, 0x42u);
  EXPECT_EQ(counter("southbound.tls.handshakes"), 1u);
  EXPECT_EQ(counter("southbound.tls.handshake_failed"), 0u);
  // Echo round trip over the established session.
  ASSERT_FALSE(sw.send(77, ofp::EchoRequest{}));
  auto echo = sw.recv_type(ofp::Type::kEchoReply);
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->xid, 77u);
}

// TLS 1.3 finishes the client's side before the server has checked the client's certificate, so
// the refusal may show up at the handshake or at the first read: either way, no OpenFlow HELLO.
void expect_refused(TlsSwitch& sw) {
  if (sw.handshake()) return;
  (void)sw.send(1, ofp::Hello{});
  EXPECT_FALSE(sw.recv(2000ms)) << "the controller spoke OpenFlow to a refused peer";
  EXPECT_NE(sw.error(), asio::error::timed_out) << "the connection should be closed, not left hanging";
}

TEST_F(TlsTest, CertFromAnotherCaIsRefusedAndCounted) {
  start();
  TlsSwitch impostor(pki_, port_, "impostor");
  expect_refused(impostor);
  EXPECT_TRUE(eventually([&] { return counter("southbound.tls.handshake_failed") == 1; }));
  EXPECT_EQ(counter("southbound.tls.handshakes"), 0u);
  EXPECT_EQ(ctl_->switch_count(), 0u);
  EXPECT_TRUE(eventually([&] { return metrics_.gauge_value("southbound.connections.active") == 0; }));
}

TEST_F(TlsTest, ClientWithoutCertIsRefusedAndCounted) {
  start();
  TlsSwitch anonymous(pki_, port_, "");
  expect_refused(anonymous);
  EXPECT_TRUE(eventually([&] { return counter("southbound.tls.handshake_failed") == 1; }));
  EXPECT_EQ(counter("southbound.tls.handshakes"), 0u);
  EXPECT_EQ(ctl_->switch_count(), 0u);
}

TEST_F(TlsTest, PlainTcpHelloIsRefusedAndCounted) {
  start();
  test::RawSwitch plain(port_);
  plain.send(1, ofp::Hello{});
  EXPECT_TRUE(plain.wait_closed());
  EXPECT_TRUE(eventually([&] { return counter("southbound.tls.handshake_failed") == 1; }));
  EXPECT_EQ(counter("southbound.rx.msgs"), 0u) << "plain OpenFlow must never reach the codec";
}

TEST_F(TlsTest, GarbageAndSilenceAreRefusedAndTheNextSwitchIsServed) {
  SouthboundConfig cfg;
  cfg.handshake_timeout = 300ms;
  cfg.echo_interval = 100ms;
  cfg.echo_timeout = 1000ms;
  start(cfg);
  std::mt19937 rng(11);
  for (int i = 0; i < 20; ++i) {
    test::RawSwitch junk(port_);
    std::vector<uint8_t> bytes(1 + rng() % 70000);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    if (i % 2) bytes[0] = 0x16;  // a TLS handshake record type, then nonsense
    try {
      junk.send_bytes(bytes);
    } catch (const std::exception&) {  // the controller may have closed mid-write
    }
  }
  test::RawSwitch silent(port_);  // connects, never speaks: the handshake timeout must end it
  EXPECT_TRUE(silent.wait_closed(3000ms));
  EXPECT_TRUE(eventually([&] { return counter("southbound.tls.handshake_failed") == 21; }))
      << counter("southbound.tls.handshake_failed");
  EXPECT_EQ(counter("southbound.tls.handshake_timeout"), 1u);
  EXPECT_EQ(counter("southbound.rx.msgs"), 0u);
  TlsSwitch sw(pki_, port_, "sw1");
  ASSERT_FALSE(sw.handshake());
  ASSERT_TRUE(sw.openflow_handshake(7));
  EXPECT_TRUE(eventually([&] { return metrics_.gauge_value("southbound.switches.up") == 1; }));
  EXPECT_EQ(counter("southbound.tls.handshakes"), 1u);
}

TEST_F(TlsTest, VerifyPeerOffAcceptsAClientWithoutCert) {
  SouthboundConfig cfg;
  cfg.tls = settings();
  cfg.tls.verify_peer = false;
  start(cfg);
  TlsSwitch sw(pki_, port_, "");
  ASSERT_FALSE(sw.handshake());
  ASSERT_TRUE(sw.openflow_handshake(9));
  EXPECT_TRUE(eventually([&] { return ctl_->switch_count() == 1; }));
}

TEST_F(TlsTest, ContextErrorsNameTheKey) {
  auto s = settings();
  s.key = pki_.path("sw1-key.pem");  // another certificate's key
  auto r = TlsContext::create(s, metrics_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("southbound.tls_key"), std::string::npos) << r.error();
  s = settings();
  s.ca = pki_.path("controller-key.pem");  // not a certificate
  r = TlsContext::create(s, metrics_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("southbound.tls_ca"), std::string::npos) << r.error();
  // listen() reports it instead of serving plain TCP.
  pool_ = std::make_unique<core::ShardPool>(1);
  SouthboundConfig cfg;
  cfg.listen_port = 0;
  cfg.tls = settings();
  cfg.tls.cert = pki_.path("otherca-cert.pem");
  ctl_ = std::make_unique<Controller>(*pool_, cfg, metrics_, std::vector<AppFactory>{});
  pool_->start();
  auto ep = ctl_->listen();
  ASSERT_FALSE(ep);
  EXPECT_NE(ep.error().find("southbound.tls_key"), std::string::npos) << ep.error();
}

TEST(TlsConfig, ProblemsNameTheKey) {
  auto cfg = core::Config::parse("[southbound]\ntls = true\ntls_cert = \"/nonexistent/c.pem\"\n");
  ASSERT_TRUE(cfg);
  auto c = southbound_config_from(*cfg);
  EXPECT_TRUE(c.tls.enabled);
  auto problems = cfg->finish();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].find("southbound.tls_cert: cannot read '/nonexistent/c.pem'"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("southbound.tls_key is required"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("southbound.tls_ca is required"), std::string::npos) << problems[2];

  auto off = core::Config::parse("[southbound]\ntls_cert = \"/etc/hostname\"\n");
  ASSERT_TRUE(off);
  (void)southbound_config_from(*off);
  problems = off->finish();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("southbound.tls_cert is set but southbound.tls is not true"), std::string::npos);

  auto dir = core::Config::parse("[southbound]\ntls = true\ntls_cert = \"/tmp\"\ntls_key = \"/tmp\"\ntls_verify_peer = false\n");
  ASSERT_TRUE(dir);
  (void)southbound_config_from(*dir);
  problems = dir->finish();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("southbound.tls_cert: cannot read '/tmp': not a regular file"), std::string::npos) << problems[0];

  auto plain = core::Config::parse("[southbound]\nmiss_send_len = 128\n");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(southbound_config_from(*plain).tls.enabled);
  EXPECT_TRUE(plain->finish().empty());
}

}  // namespace
}  // namespace sdn::southbound
