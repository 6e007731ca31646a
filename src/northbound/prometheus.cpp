// Prometheus text exposition. Histograms are re-bucketed from the registry's log2/16 buckets
// onto fixed `le` bounds (1 us .. 10 s): a registry bucket counts towards the first bound at or
// above its upper edge, so a bound's count may include samples up to ~6 % above it.
#include "northbound/prometheus.hpp"

#include <array>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/metrics.hpp"

namespace sdn::northbound {

using Json = nlohmann::json;

std::string metric_name(std::string_view dotted) {
  std::string out = "sdnator_";
  for (char ch : dotted) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    out.push_back(ok ? ch : '_');
  }
  return out;
}

std::string label_value(std::string_view v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out.push_back(ch);
  }
  return out;
}

namespace {

// One family: its samples as "name{labels} value" lines, written with HELP and TYPE once.
struct Family {
  std::string type;
  std::string help;
  std::vector<std::string> samples;
};

class Writer {
 public:
  void add(const std::string& name, const std::string& type, const std::string& help, std::string sample) {
    auto& f = fams_[name];
    if (f.type.empty()) {
      f.type = type;
      f.help = help;
    }
    f.samples.push_back(std::move(sample));
  }
  std::string str() const {
    std::string out;
    for (const auto& [name, f] : fams_) {
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, f.type);
      for (const auto& s : f.samples) out += s + "\n";
    }
    return out;
  }

 private:
  std::map<std::string, Family> fams_;
};

std::string labels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  std::string out;
  for (const auto& [k, v] : kv) out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", k, label_value(v));
  return out.empty() ? out : "{" + out + "}";
}

// Registry names that encode a dimension become one labelled family.
bool labelled_counter(Writer& w, const std::string& name, uint64_t v) {
  static const std::set<std::string_view> kTotals = {"msgs", "bytes", "writes"};
  for (std::string_view dir : {"rx", "tx"}) {
    const std::string prefix = fmt::format("southbound.{}.", dir);
    if (name.rfind(prefix, 0) == 0) {
      const std::string_view rest = std::string_view(name).substr(prefix.size());
      if (kTotals.count(rest)) return false;
      w.add("sdnator_openflow_messages_total", "counter", "OpenFlow messages by direction and type",
            fmt::format("sdnator_openflow_messages_total{} {}", labels({{"direction", dir}, {"type", rest}}), v));
      return true;
    }
  }
  if (name.rfind("southbound.errors.", 0) == 0) {
    w.add("sdnator_southbound_errors_total", "counter", "OpenFlow sessions' rejections and surprises by reason",
          fmt::format("sdnator_southbound_errors_total{} {}", labels({{"reason", name.substr(18)}}), v));
    return true;
  }
  if (name.rfind("southbound.batches.", 0) == 0) {
    w.add("sdnator_flowmod_batches_total", "counter", "FlowMod batches settled by their barrier, by result",
          fmt::format("sdnator_flowmod_batches_total{} {}", labels({{"result", name.substr(19)}}), v));
    return true;
  }
  if (name.rfind("northbound.errors.", 0) == 0) {
    w.add("sdnator_northbound_errors_total", "counter", "REST requests answered with an error, by class",
          fmt::format("sdnator_northbound_errors_total{} {}", labels({{"class", name.substr(18)}}), v));
    return true;
  }
  return false;
}

constexpr std::array<double, 19> kBoundsS = {1e-6,   5e-6,   1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                             5e-3,   1e-2,   2.5e-2, 5e-2, 0.1,  0.25, 0.5,    1.0,  10.0};

std::string num(double v) { return fmt::format("{}", v); }

void histogram(Writer& w, const std::string& name, const core::Histogram& h) {
  const std::string fam = metric_name(name) + "_seconds";
  const auto buckets = h.buckets();
  const std::string help = fmt::format("{} (seconds)", name);
  uint64_t total = 0;
  for (const auto& b : buckets) total += b.second;
  size_t i = 0;
  uint64_t cum = 0;
  for (double le : kBoundsS) {
    const auto le_ns = static_cast<uint64_t>(le * 1e9);
    while (i < buckets.size() && buckets[i].first <= le_ns) cum += buckets[i++].second;
    w.add(fam, "histogram", help, fmt::format("{}_bucket{{le=\"{}\"}} {}", fam, num(le), cum));
  }
  w.add(fam, "histogram", help, fmt::format("{}_bucket{{le=\"+Inf\"}} {}", fam, total));
  w.add(fam, "histogram", help, fmt::format("{}_sum {}", fam, num(static_cast<double>(h.sum()) / 1e9)));
  w.add(fam, "histogram", help, fmt::format("{}_count {}", fam, total));
}

uint64_t u(const Json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

void data_layer(Writer& w, const Json& d) {
  if (d.contains("updates") && d["updates"].is_object()) {
    const Json& up = d["updates"];
    const std::string backend = up.value("backend", "");
    for (const char* k : {"published", "sent", "delivered", "dropped", "gaps", "decode_errors", "reconnects", "batches"})
      w.add("sdnator_data_updates_records_total", "counter", "Data Updates records (bus throughput) by what happened",
            fmt::format("sdnator_data_updates_records_total{} {}", labels({{"backend", backend}, {"event", k}}), u(up, k)));
    w.add("sdnator_data_updates_buffered", "gauge", "Data Updates records waiting to be written",
          fmt::format("sdnator_data_updates_buffered{} {}", labels({{"backend", backend}}), u(up, "buffered")));
    w.add("sdnator_data_updates_connected", "gauge", "1 when the Data Updates backend is connected",
          fmt::format("sdnator_data_updates_connected{} {}", labels({{"backend", backend}}), up.value("connected", false) ? 1 : 0));
  }
  if (d.contains("archive") && d["archive"].is_object()) {
    const Json& a = d["archive"];
    const std::string backend = a.value("backend", "");
    for (const char* k : {"appended", "written", "batches", "failed_batches", "dropped", "retention_deleted", "spooled", "replayed"})
      w.add("sdnator_data_archive_records_total", "counter", "Data Archives records (archive throughput) by what happened",
            fmt::format("sdnator_data_archive_records_total{} {}", labels({{"backend", backend}, {"event", k}}), u(a, k)));
    w.add("sdnator_data_archive_queued", "gauge", "records waiting to be archived",
          fmt::format("sdnator_data_archive_queued{} {}", labels({{"backend", backend}}), u(a, "queued")));
    for (const char* k : {"full_errors", "spool_corrupt", "spool_errors"})
      w.add("sdnator_data_archive_faults_total", "counter", "Data Archives faults: disk/database full attempts, damaged spool entries, failed spool appends",
            fmt::format("sdnator_data_archive_faults_total{} {}", labels({{"backend", backend}, {"kind", k}}), u(a, k)));
    w.add("sdnator_data_archive_spool_records", "gauge", "records waiting in the archive's disk spool",
          fmt::format("sdnator_data_archive_spool_records{} {}", labels({{"backend", backend}}), u(a, "spool_records")));
  }
}

}  // namespace

std::string prometheus_text(const core::Metrics* metrics, const Json& extra) {
  Writer w;
  if (metrics) {
    metrics->each_counter([&](const std::string& name, uint64_t v) {
      if (labelled_counter(w, name, v)) return;
      const std::string fam = metric_name(name) + "_total";
      w.add(fam, "counter", name, fmt::format("{} {}", fam, v));
    });
    metrics->each_gauge([&](const std::string& name, int64_t v) {
      const std::string fam = metric_name(name);
      w.add(fam, "gauge", name, fmt::format("{} {}", fam, v));
    });
    metrics->each_histogram([&](const std::string& name, const core::Histogram& h) { histogram(w, name, h); });
  }
  if (extra.contains("data") && extra["data"].is_object()) data_layer(w, extra["data"]);
  if (extra.contains("apps") && extra["apps"].is_object())
    for (const auto& [app, counters] : extra["apps"].items())
      if (counters.is_object())
        for (const auto& [k, v] : counters.items())
          if (v.is_number())
            w.add("sdnator_app_stat", "gauge", "apps' own counters and levels (drops, sessions, paths, ...)",
                  fmt::format("sdnator_app_stat{} {}", labels({{"app", app}, {"name", k}}), num(v.get<double>())));
  if (extra.contains("process") && extra["process"].is_object()) {
    const Json& p = extra["process"];
    if (p.contains("rss_bytes"))
      w.add("sdnator_process_resident_memory_bytes", "gauge", "resident set size",
            fmt::format("sdnator_process_resident_memory_bytes {}", u(p, "rss_bytes")));
    if (p.contains("threads"))
      w.add("sdnator_process_threads", "gauge", "threads", fmt::format("sdnator_process_threads {}", u(p, "threads")));
    if (p.contains("uptime_s") && p["uptime_s"].is_number())
      w.add("sdnator_process_uptime_seconds", "gauge", "seconds since start",
            fmt::format("sdnator_process_uptime_seconds {}", num(p["uptime_s"].get<double>())));
  }
  if (extra.contains("switches") && extra["switches"].is_number())
    w.add("sdnator_switches_connected", "gauge", "switches with a completed handshake",
          fmt::format("sdnator_switches_connected {}", extra["switches"].get<uint64_t>()));
  return w.str();
}

}  // namespace sdn::northbound
