// The Prometheus exposition of the metrics registry: families, labels, histogram re-bucketing.
#include "northbound/prometheus.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/metrics.hpp"

namespace sdn::northbound {
namespace {

TEST(Prometheus, NamesAndLabelEscaping) {
  EXPECT_EQ(metric_name("southbound.rx.msgs"), "sdnator_southbound_rx_msgs");
  EXPECT_EQ(metric_name("a-b c"), "sdnator_a_b_c");
  EXPECT_EQ(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(Prometheus, CountersBecomeLabelledFamilies) {
  core::Metrics m;
  m.counter("southbound.rx.packet_in").inc(7);
  m.counter("southbound.tx.flow_mod").inc(3);
  m.counter("southbound.rx.msgs").inc(10);
  m.counter("southbound.errors.decode").inc(2);
  m.counter("southbound.batches.ok").inc(5);
  m.gauge("southbound.connections.active").set(4);
  const std::string t = prometheus_text(&m, nlohmann::json::object());
  EXPECT_NE(t.find("# TYPE sdnator_openflow_messages_total counter\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_openflow_messages_total{direction=\"rx\",type=\"packet_in\"} 7\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_openflow_messages_total{direction=\"tx\",type=\"flow_mod\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_southbound_rx_msgs_total 10\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_southbound_errors_total{reason=\"decode\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_flowmod_batches_total{result=\"ok\"} 5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE sdnator_southbound_connections_active gauge\nsdnator_southbound_connections_active 4\n"),
            std::string::npos) << t;
  // One TYPE line per family.
  EXPECT_EQ(t.find("# TYPE sdnator_openflow_messages_total"), t.rfind("# TYPE sdnator_openflow_messages_total"));
}

TEST(Prometheus, HistogramIsCumulativeWithSumAndCount) {
  core::Metrics m;
  auto& h = m.histogram("cpam.rppt");
  h.record(800);         // 0.8 us
  h.record(80'000);      // 80 us
  h.record(3'000'000);   // 3 ms
  h.record(20'000'000'000ULL);  // 20 s: only +Inf
  const std::string t = prometheus_text(&m, nlohmann::json::object());
  EXPECT_NE(t.find("# TYPE sdnator_cpam_rppt_seconds histogram\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_bucket{le=\"1e-06\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_bucket{le=\"0.0001\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_bucket{le=\"0.005\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_bucket{le=\"10\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_count 4\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_cpam_rppt_seconds_sum 20.0030808\n"), std::string::npos) << t;
}

TEST(Prometheus, DataLayerAppsAndProcess) {
  nlohmann::json extra = {
      {"data",
       {{"updates", {{"backend", "inproc"}, {"published", 12}, {"delivered", 30}, {"dropped", 1}, {"buffered", 0}, {"connected", true}}},
        {"archive", {{"backend", "sqlite"}, {"appended", 9}, {"written", 8}, {"queued", 1}}}}},
      {"apps", {{"cpam", {{"live_sessions", 3}, {"setups", 40}}}}},
      {"process", {{"rss_bytes", 1000}, {"threads", 5}, {"uptime_s", 1.5}}},
      {"switches", 2}};
  const std::string t = prometheus_text(nullptr, extra);
  EXPECT_NE(t.find("sdnator_data_updates_records_total{backend=\"inproc\",event=\"published\"} 12\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_data_updates_records_total{backend=\"inproc\",event=\"dropped\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_data_archive_records_total{backend=\"sqlite\",event=\"written\"} 8\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_data_archive_queued{backend=\"sqlite\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_app_stat{app=\"cpam\",name=\"setups\"} 40\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_process_resident_memory_bytes 1000\n"), std::string::npos) << t;
  EXPECT_NE(t.find("sdnator_switches_connected 2\n"), std::string::npos) << t;
}

}  // namespace
}  // namespace sdn::northbound
