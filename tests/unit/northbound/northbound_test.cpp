// The northbound server on port 0 over the in-process bus, with no switch runtime (as in
// `sdnator fleet run --api`): the fleet view GET /api/v1/fleet built from the last-value cache,
// the dashboard's fleet panel served, and the switch routes answering 503.
#include <httplib.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/due.hpp"
#include "data/updates.hpp"
#include "fakes/eventually.hpp"
#include "core/metrics.hpp"
#include "northbound/server.hpp"

namespace sdn::northbound {
namespace {

using Json = nlohmann::json;
using test::eventually;

class FleetApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backends_ = std::make_shared<data::Backends>(data::make_inproc_updates(), nullptr);  // no archive
    NorthboundConfig cfg;
    cfg.port = 0;
    cfg.threads = 4;
    cfg.max_event_streams = 1;
    Sources src;
    src.controller = nullptr;
    src.backends = backends_;
    src.version = "test";
    src.metrics = &metrics_;
    server_ = std::make_unique<Server>(cfg, std::move(src));
    auto port = server_->start();
    ASSERT_TRUE(port) << port.error();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client_->set_read_timeout(5, 0);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->stop();
    server_.reset();
    backends_.reset();
  }
  // Status and body (JSON when it parses, else discarded).
  std::pair<int, Json> get(const std::string& path) {
    auto r = client_->Get(path);
    if (!r) return {0, Json()};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }
  std::string body(const std::string& path) {
    auto r = client_->Get(path);
    return r && r->status == 200 ? r->body : std::string();
  }

  core::Metrics metrics_;
  std::shared_ptr<data::Backends> backends_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

Json state(const char* status, double sim_min, Json job) {
  return {{"status", status}, {"sim_min", sim_min}, {"queue_length", 2}, {"maintenance_pending", false}, {"job", std::move(job)}};
}

TEST_F(FleetApiTest, FleetViewFromTheCache) {
  {
    auto [st, j] = get("/api/v1/fleet");
    EXPECT_EQ(st, 404);
    EXPECT_EQ(j.value("error", ""), "no fleet data") << j;
  }
  auto [sw, swj] = get("/api/v1/switches");
  EXPECT_EQ(sw, 503) << swj;
  EXPECT_EQ(swj.value("error", ""), "no switch runtime");
  EXPECT_EQ(get("/api/v1/switches/1/flows").first, 503);

  data::Due driver(backends_), twin(backends_), sched(backends_);
  ASSERT_TRUE(driver.init("fleetdriver", data::kProducer));
  ASSERT_TRUE(twin.init("fleettwin", data::kProducer));
  ASSERT_TRUE(sched.init("jobscheduler", data::kProducer));
  const Json job{{"name", "o1-1"}, {"state", "printing"}, {"progress", 0.25}, {"time_elapsed_s", 600.0},
                 {"time_total_s", 2400.0}, {"result", ""}, {"spec", {{"id", "o1-1"}, {"print_min", 40}}}};
  // um3-02 first: the reply sorts by name. um3-03 is only on the roster.
  ASSERT_TRUE(driver.write("fleet/printers", Json{{"printers", {{{"name", "um3-01"}, {"port", 9000}},
                                                                 {{"name", "um3-02"}, {"port", 9001}},
                                                                 {{"name", "um3-03"}, {"port", 9002}}}},
                                                  {"count", 3}}));
  ASSERT_TRUE(driver.write("fleet/um3-02/state", state("maintenance", 100.0, nullptr)));
  ASSERT_TRUE(driver.write("fleet/um3-01/state", state("printing", 101.0, job)));
  ASSERT_TRUE(driver.write("fleet/um3-01/sensors/hotend", Json{{"current", 209.5}, {"target", 210.0}, {"sim_min", 101.0}, {"job_state", "printing"}}));
  ASSERT_TRUE(driver.write("fleet/um3-01/sensors/bed", Json{{"current", 60.0}, {"target", 60.0}, {"sim_min", 101.0}, {"job_state", "printing"}}));
  ASSERT_TRUE(twin.write("fleet/um3-01/twin/machine", Json{{"status", "printing"}, {"available", false}, {"current_end", 131.0},
                                                            {"speed", 1.1}, {"setup", 12.0}, {"maintenance_pending", false},
                                                            {"maintenance_until", 0.0}, {"current", "o1-1"}, {"sim_min", 101.0}}));
  ASSERT_TRUE(twin.write("fleet/um3-01/twin/queue", Json{{"length", 1}, {"finish_time", 190.5}, {"average_wait", 3.0},
                                                          {"jobs", Json::array({"o2-1"})}, {"current", "o1-1"}, {"history", Json::array()}, {"sim_min", 101.0}}));
  ASSERT_TRUE(twin.write("fleet/um3-02/twin/anomaly", Json{{"anomaly", true}, {"sensor", "hotend"}, {"residual", 7.5}, {"sim_min", 100.0}}));
  ASSERT_TRUE(twin.write("fleet/twin/fleet", Json{{"printers", 3}, {"online", 2}, {"in_maintenance", 1}, {"printing", 1},
                                                   {"anomalies", 1}, {"sim_min", 101.0}}));
  ASSERT_TRUE(twin.write("fleet/jobs/returned", Json{{"jobs", Json::array()}, {"sim_min", 100.0}}));
  ASSERT_TRUE(sched.write("fleet/decisions", Json{{"algorithm", "dynamic"}, {"trigger", "orders"}, {"sim_min", 102.5},
                                                   {"jobs", 4}, {"solve_ms", 12.5}}));

  Json j;
  ASSERT_TRUE(eventually([&] {
    auto [st, got] = get("/api/v1/fleet");
    j = got;
    return st == 200 && j.is_object() && j["decision"].is_object();
  })) << j;
  EXPECT_EQ(j["sim_min"], 102.5);  // of the newest record
  EXPECT_TRUE(j["run"].is_null());
  EXPECT_EQ(j["fleet"]["in_maintenance"], 1);
  EXPECT_EQ(j["decision"]["algorithm"], "dynamic");
  EXPECT_EQ(j["truncated"], false);
  ASSERT_TRUE(j["printers"].is_array());
  ASSERT_EQ(j["printers"].size(), 3u) << j["printers"];  // fleet/twin/fleet and fleet/jobs/returned are no printers
  const Json& p1 = j["printers"][0];
  const Json& p2 = j["printers"][1];
  EXPECT_EQ(p1["name"], "um3-01");
  EXPECT_EQ(p2["name"], "um3-02");
  EXPECT_EQ(j["printers"][2]["name"], "um3-03");
  EXPECT_EQ(p1["state"]["status"], "printing");
  EXPECT_EQ(p1["state"]["job"]["progress"], 0.25);
  EXPECT_EQ(p1["state"]["job"]["spec"]["print_min"], 40);
  EXPECT_EQ(p1["machine"]["speed"], 1.1);
  EXPECT_EQ(p1["queue"]["finish_time"], 190.5);
  EXPECT_EQ(p1["hotend"]["current"], 209.5);
  EXPECT_EQ(p1["bed"]["target"], 60.0);
  EXPECT_TRUE(p1["anomaly"].is_null());
  EXPECT_EQ(p2["state"]["status"], "maintenance");
  EXPECT_TRUE(p2["state"]["job"].is_null());
  EXPECT_EQ(p2["anomaly"]["anomaly"], true);
  EXPECT_EQ(p2["anomaly"]["residual"], 7.5);
  EXPECT_TRUE(p2["machine"].is_null());
  for (const char* f : {"state", "machine", "queue", "anomaly", "hotend", "bed"}) EXPECT_TRUE(j["printers"][2].contains(f)) << f;

  // The run's record passes through; unknown query parameters are refused.
  data::Due run(backends_);
  ASSERT_TRUE(run.init("fleetrun", data::kProducer));
  ASSERT_TRUE(run.write("fleet/run", Json{{"phase", "start"}, {"config", {{"algorithm", "dynamic"}, {"scenario", "ppe"}}}}));
  ASSERT_TRUE(eventually([&] {
    j = get("/api/v1/fleet").second;
    return j.is_object() && j["run"].is_object();
  })) << j;
  EXPECT_EQ(j["run"]["config"]["scenario"], "ppe");
  EXPECT_EQ(get("/api/v1/fleet?limit=3").first, 400);
}

TEST_F(FleetApiTest, PrintersSortNaturallyAndAreCapped) {
  data::Due driver(backends_);
  ASSERT_TRUE(driver.init("fleetdriver", data::kProducer));
  Json roster = Json::array();
  for (int i = 1200; i >= 1; --i) roster.push_back({{"name", "um3-" + std::to_string(i)}, {"port", 9000 + i}});
  roster.push_back({{"name", "a/b"}});  // not a name a key could carry
  ASSERT_TRUE(driver.write("fleet/printers", Json{{"printers", roster}, {"count", roster.size()}}));
  Json j;
  ASSERT_TRUE(eventually([&] {
    j = get("/api/v1/fleet").second;
    return j.is_object() && j.contains("printers");
  }));
  ASSERT_EQ(j["printers"].size(), 1000u);
  EXPECT_EQ(j["truncated"], true);
  EXPECT_EQ(j["printers"][0]["name"], "um3-1");
  EXPECT_EQ(j["printers"][8]["name"], "um3-9");
  EXPECT_EQ(j["printers"][9]["name"], "um3-10");
  EXPECT_EQ(j["printers"][999]["name"], "um3-1000");
  EXPECT_TRUE(j["sim_min"].is_null());
}

TEST_F(FleetApiTest, DashboardServesTheFleetPanel) {
  const std::string index = body("/");
  EXPECT_NE(index.find("id=\"fleet\""), std::string::npos);
  EXPECT_NE(index.find("src=\"/fleet.js\""), std::string::npos);
  const std::string js = body("/fleet.js");
  EXPECT_NE(js.find("'/fleet'"), std::string::npos);
  EXPECT_NE(js.find("from '/app.js'"), std::string::npos);
  EXPECT_NE(body("/app.js").find("export {"), std::string::npos);
  EXPECT_NE(body("/style.css").find("#fleet"), std::string::npos);
  // The OpenAPI document, and so the index, lists the route.
  auto [st, idx] = get("/api/v1");
  ASSERT_EQ(st, 200);
  bool listed = false;
  for (const auto& r : idx["routes"]) listed = listed || (r["path"] == "/api/v1/fleet" && r["method"] == "get");
  EXPECT_TRUE(listed);
}

// The last-value cache keeps JSON values packed (CBOR) once the ticker has passed, and serves
// them unchanged from /api/v1/keys and /keys/latest, before and after packing; a newer value
// replaces a packed one, and is packed in turn.
TEST_F(FleetApiTest, TheCacheServesPackedValuesUnchanged) {
  data::Due topo(backends_);
  ASSERT_TRUE(topo.init("topology", data::kProducer));
  const Json host{{"mac", "02:00:00:00:00:07"}, {"at", {{"dpid", "0000000000000004"}, {"port", 3}}}, {"state", "up"},
                  {"ip", "10.0.0.7"}, {"weights", {1.5, -2, true, nullptr}}};
  ASSERT_TRUE(topo.write("network/topology/host/020000000007", host));
  auto latest = [&](const char* key) { return get(std::string("/api/v1/keys/latest?key=") + key); };
  {
    auto [st, j] = latest("network/topology/host/020000000007");  // before packing
    ASSERT_EQ(st, 200) << j;
    EXPECT_EQ(j["value"], host);
  }
  auto& packed = metrics_.counter("northbound.cache.packed");
  ASSERT_TRUE(eventually([&] { return packed.value() >= 1; }, std::chrono::seconds(5)));
  {
    auto [st, j] = latest("network/topology/host/020000000007");
    ASSERT_EQ(st, 200) << j;
    EXPECT_EQ(j["value"], host);
    EXPECT_EQ(j["app_id"], "topology");
    EXPECT_EQ(j["key"], "network/topology/host/020000000007@topology");
    EXPECT_EQ(j["seq"], 1);
    auto [ks, all] = get("/api/v1/keys?pattern=network/topology/**");
    ASSERT_EQ(ks, 200) << all;
    ASSERT_EQ(all.size(), 1u) << all;
    EXPECT_EQ(all[0]["value"], host);
  }
  Json moved = host;
  moved["at"]["port"] = 9;
  ASSERT_TRUE(topo.write("network/topology/host/020000000007", moved));
  ASSERT_TRUE(eventually([&] { return latest("network/topology/host/020000000007").second["value"] == moved; }));
  const uint64_t before = packed.value();
  ASSERT_TRUE(eventually([&] { return packed.value() > before; }, std::chrono::seconds(5)));
  auto [st, j] = latest("network/topology/host/020000000007");
  EXPECT_EQ(j["value"], moved);
  EXPECT_EQ(j["seq"], 2);
}

}  // namespace
}  // namespace sdn::northbound
