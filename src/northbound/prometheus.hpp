// The Prometheus text exposition format (version 0.0.4) of the metrics registry and of the
// figures that live outside it (data layer, apps, process): one family per metric, labelled
// where a registry name encodes a dimension (message type, error reason, batch result).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace sdn::core {
class Metrics;
}

namespace sdn::northbound {

// `extra` may hold "data" (updates/archive stats as in the stats file), "apps" ({app: {name: n}}),
// "process" ({rss_bytes, threads, uptime_s}) and "switches" (n).
std::string prometheus_text(const core::Metrics* metrics, const nlohmann::json& extra);

// A registry name as a metric name: "southbound.rx.msgs" -> "sdnator_southbound_rx_msgs".
std::string metric_name(std::string_view dotted);
// A label value with \, " and newline escaped.
std::string label_value(std::string_view v);

}  // namespace sdn::northbound
