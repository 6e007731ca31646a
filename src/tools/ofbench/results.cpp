// The run's JSON (schema in src/tools/ofbench/README.md), latency statistics, and the small
// DNS client the emulated hosts use.
#include <algorithm>
#include <cmath>

#include "pkt/bytes.hpp"
#include "tools/ofbench/bench.hpp"

namespace sdn::ofbench {

nlohmann::json stats_json(std::vector<double> v) {
  nlohmann::json j;
  j["count"] = v.size();
  if (v.empty()) {
    for (const char* k : {"min", "mean", "p50", "p90", "p99", "p999", "max"}) j[k] = nullptr;
    return j;
  }
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  auto rank = [&](double q) {  // nearest rank
    const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
  };
  j["min"] = v.front();
  j["mean"] = sum / static_cast<double>(v.size());
  j["p50"] = rank(0.50);
  j["p90"] = rank(0.90);
  j["p99"] = rank(0.99);
  j["p999"] = rank(0.999);
  j["max"] = v.back();
  return j;
}

Bytes dns_query(uint16_t id, const std::string& name) {
  Bytes q = {static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    const size_t len = std::min<size_t>(dot - start, 63);
    if (len > 0) {
      q.push_back(static_cast<uint8_t>(len));
      q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start),
               name.begin() + static_cast<std::ptrdiff_t>(start + len));
    }
    start = dot + 1;
  }
  q.push_back(0);
  q.insert(q.end(), {0, 1, 0, 1});  // QTYPE A, QCLASS IN
  return q;
}

std::optional<DnsAnswer> parse_dns_answer(std::span<const uint8_t> m) {
  if (m.size() < 12) return std::nullopt;
  DnsAnswer a;
  a.id = pkt::load_be16(m, 0);
  const uint16_t flags = pkt::load_be16(m, 2);
  if ((flags & 0x8000) == 0) return std::nullopt;  // a query, not a response
  a.rcode = static_cast<uint8_t>(flags & 0xf);
  const uint16_t qd = pkt::load_be16(m, 4), an = pkt::load_be16(m, 6);
  size_t off = 12;
  auto skip_name = [&]() -> bool {
    for (int guard = 0; guard < 128; ++guard) {
      if (off >= m.size()) return false;
      const uint8_t len = m[off];
      if ((len & 0xc0) == 0xc0) {  // compression pointer ends the name (4.1.4)
        off += 2;
        return off <= m.size();
      }
      off += 1 + len;
      if (len == 0) return off <= m.size();
    }
    return false;
  };
  for (uint16_t i = 0; i < qd; ++i) {
    if (!skip_name() || off + 4 > m.size()) return std::nullopt;
    off += 4;
  }
  for (uint16_t i = 0; i < an; ++i) {
    if (!skip_name() || off + 10 > m.size()) return std::nullopt;
    const uint16_t type = pkt::load_be16(m, off), rdlen = pkt::load_be16(m, off + 8);
    const uint32_t ttl = pkt::load_be32(m, off + 4);
    off += 10;
    if (off + rdlen > m.size()) return std::nullopt;
    if (type == 1 && rdlen == 4) {
      a.address = pkt::load_be32(m, off);
      a.ttl = ttl;
      return a;
    }
    off += rdlen;
  }
  return a;
}

nlohmann::json Bench::switch_totals() const {
  EmuSwitch::Counters t;
  uint64_t flows = 0, flows_max = 0, connected = 0;
  for (const auto& s : switches_) {
    const auto& c = s->counters();
    t.packet_ins += c.packet_ins;
    t.flow_mods += c.flow_mods;
    t.flow_mods_rejected += c.flow_mods_rejected;
    t.packet_outs += c.packet_outs;
    t.barriers += c.barriers;
    t.multiparts += c.multiparts;
    t.echo_requests += c.echo_requests;
    t.errors_received += c.errors_received;
    t.flow_removed += c.flow_removed;
    t.buffer_unknown += c.buffer_unknown;
    t.malformed_sent += c.malformed_sent;
    t.decode_errors += c.decode_errors;
    t.bytes_in += c.bytes_in;
    t.bytes_out += c.bytes_out;
    t.reconnects += c.reconnects;
    t.role_requests += c.role_requests;
    t.role_stale += c.role_stale;
    t.role_bad += c.role_bad;
    t.slave_writes_refused += c.slave_writes_refused;
    t.packet_ins_undelivered += c.packet_ins_undelivered;
    flows += s->table().size();
    flows_max = std::max<uint64_t>(flows_max, s->table().size());
    connected += s->connected() ? 1 : 0;
  }
  return {{"count", switches_.size()},       {"connected", connected},
          {"disconnects", disconnects_},     {"packet_ins", t.packet_ins},
          {"flow_mods", t.flow_mods},        {"flow_mods_rejected", t.flow_mods_rejected},
          {"packet_outs", t.packet_outs},    {"barriers", t.barriers},
          {"multiparts", t.multiparts},      {"echo_requests", t.echo_requests},
          {"errors_received", t.errors_received}, {"flow_removed", t.flow_removed},
          {"buffer_unknown", t.buffer_unknown},   {"malformed_sent", t.malformed_sent},
          {"decode_errors", t.decode_errors},     {"bytes_from_controller", t.bytes_in},
          {"bytes_to_controller", t.bytes_out},   {"reconnects", t.reconnects},
          {"flows_installed", flows},
          {"controllers", std::max<size_t>(1, o_.controllers.size())},
          {"role_requests", t.role_requests},     {"role_stale_refused", t.role_stale},
          {"role_bad_refused", t.role_bad},       {"slave_writes_refused", t.slave_writes_refused},
          {"packet_ins_undelivered", t.packet_ins_undelivered},
          {"flow_table_max", flows_max},          {"last_disconnect", last_disconnect_}};
}

// Independent switches: host h sits behind port h, so every flow the controller installed
// for eth_dst = host h must output to port h (what a learning switch intends). Entries that
// match no host MAC or have no output are not judged.
nlohmann::json Bench::table_check() const {
  if (o_.topology != "independent") return nullptr;
  uint64_t checked = 0, wrong = 0;
  nlohmann::json examples = nlohmann::json::array();
  for (uint32_t sw = 0; sw < switches_.size(); ++sw) {
    const uint64_t base = o_.unique_macs ? (uint64_t{sw} + 1) << 24 : 0;
    for (const auto& e : switches_[sw]->table().entries()) {
      const auto dst = e.match.get(ofp::OxmField::kEthDst);
      const auto ports = e.output_ports();
      if (!dst || ports.empty() || (*dst & ~uint64_t{0xffffff}) != base) continue;
      const uint64_t host = *dst & 0xffffff;
      if (host == 0 || host > o_.macs_per_switch) continue;
      ++checked;
      if (ports.size() != 1 || ports[0] != host) {
        ++wrong;
        if (examples.size() < 5) examples.push_back({{"switch", sw + 1}, {"eth_dst_host", host}, {"ports", ports}});
      }
    }
  }
  return {{"checked", checked}, {"wrong_port", wrong}, {"examples", examples}};
}

nlohmann::json Bench::result_json(double t_begin, double t_end) {
  const double timeout = (o_.mode == "cpam" ? o_.connect_timeout_ms : o_.timeout_ms) / 1e3;
  // Rotations: bursts of at least --rotation-min-changes proactive changes. Smaller ones (a
  // rule for a host located late, say) are counted apart and tag nothing.
  std::vector<Window> rotations;
  uint64_t small_bursts = 0;
  for (const auto& w : windows_) {
    if (w.flow_mods >= o_.rotation_min_changes) rotations.push_back(w);
    else ++small_bursts;
  }
  // A rotation lasts until its new mapping is published: the first DNS answer that changed
  // after its rules came (before the next rotation's). A controller that installs the rules
  // at once and then stalls (cooperative) shows here: its rules at the start, the DNS change
  // only when it has finished.
  std::vector<double> published(rotations.size(), -1);
  for (size_t i = 0; i < rotations.size(); ++i) {
    const double next = i + 1 < rotations.size() ? rotations[i + 1].start : 1e300;
    auto it = std::lower_bound(dns_change_times_.begin(), dns_change_times_.end(), rotations[i].start);
    if (it != dns_change_times_.end() && *it < next) {
      published[i] = *it;
      rotations[i].end = std::max(rotations[i].end, *it);
    }
  }
  auto overlaps = [&](const Event& e) {
    const double end = e.t1 >= 0 ? e.t1 : e.t0 + timeout;
    for (const auto& w : rotations)
      if (e.t0 <= w.end && end >= w.start) return true;
    return false;
  };
  auto in_window = [&](const Event& e) { return e.t0 >= t_begin && e.t0 < t_end; };
  // cpam: every request that goes to the controller as a PacketIn counts (the DNS query, the
  // ARP for the VIP, the SYN), each from its PacketIn to the reply it needed. A stalled
  // controller delays whichever step a connection is at: the DNS query, mostly.
  auto is_main = [&](const Event& e) {
    return e.kind == main_kind_ || (o_.mode == "cpam" && (e.kind == Kind::kDns || e.kind == Kind::kArp));
  };
  auto answered = [&](const Event& e) { return e.t1 >= 0 && e.t1 - e.t0 <= timeout; };

  nlohmann::json j;
  j["tool"] = "ofbench";
  j["schema"] = 1;
  j["mode"] = o_.mode;
  j["controller"] = o_.controller;
  j["config"] = {{"topology", o_.topology}, {"switches", switches_.size()}, {"macs_per_switch", o_.macs_per_switch},
                 {"unique_macs", o_.unique_macs}, {"hosts", hosts_.size()}, {"cores", o_.cores}, {"aggs", o_.aggs},
                 {"edges", o_.edges}, {"dual_homed", o_.dual_homed}, {"duration_s", o_.duration_s},
                 {"warmup_s", o_.warmup_s}, {"window", o_.window}, {"timeout_ms", o_.timeout_ms},
                 {"no_buffer", o_.no_buffer}, {"malformed", o_.malformed}, {"dos_rate", o_.dos_rate}, {"dos_port", o_.dos_port},
                 {"lambda", o_.lambda}, {"pairs_window", o_.pairs_window}, {"seed", o_.seed}};
  if (!o_.controllers.empty()) {
    j["config"]["controllers"] = o_.controllers;
    j["config"]["rate"] = o_.rate;
    j["config"]["kill_at_s"] = o_.kill_at_s;
    j["config"]["kill_cmd"] = o_.kill_cmd;
  }
  j["duration_s"] = t_end - t_begin;

  std::vector<double> lat;
  uint64_t requests = 0, ok = 0, ok_in_window = 0;
  const size_t nb = static_cast<size_t>(std::max(0.0, std::ceil(t_end - t_begin)));
  struct Bucket {
    uint64_t sent = 0, answered = 0;
    std::vector<double> lat;
  };
  std::vector<Bucket> buckets(nb);
  std::vector<size_t> answered_idx;
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    if (!is_main(e)) continue;
    if (e.t1 >= t_begin && e.t1 < t_end && answered(e)) ++ok_in_window;  // throughput: answers inside
    if (!in_window(e)) continue;
    ++requests;
    const size_t b = std::min(nb ? nb - 1 : 0, static_cast<size_t>(e.t0 - t_begin));
    if (nb) ++buckets[b].sent;
    if (!answered(e)) continue;
    ++ok;
    const double us = (e.t1 - e.t0) * 1e6;
    lat.push_back(us);
    answered_idx.push_back(i);
    if (nb) {
      ++buckets[b].answered;
      buckets[b].lat.push_back(us);
    }
  }
  j["requests"] = requests;
  j["answered"] = ok;
  j["lost"] = requests - ok;
  j["rate_per_s"] = t_end > t_begin ? static_cast<double>(ok_in_window) / (t_end - t_begin) : 0.0;
  j["latency_us"] = stats_json(lat);

  nlohmann::json tl = nlohmann::json::array();
  for (size_t b = 0; b < nb; ++b) {
    auto& v = buckets[b].lat;
    std::sort(v.begin(), v.end());
    auto q = [&](double p) -> nlohmann::json {
      if (v.empty()) return nullptr;
      const auto i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
      return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
    };
    const double s0 = t_begin + static_cast<double>(b), s1 = s0 + 1;
    bool rot = false;
    for (const auto& w : rotations) rot = rot || (s0 <= w.end && s1 >= w.start);
    tl.push_back({{"t_s", static_cast<double>(b + 1)}, {"sent", buckets[b].sent}, {"answered", buckets[b].answered},
                  {"p50_us", q(0.5)}, {"p99_us", q(0.99)}, {"max_us", v.empty() ? nlohmann::json() : nlohmann::json(v.back())},
                  {"rotating", rot}});
  }
  j["timeline"] = tl;

  // A uniform sample of the answered events (all of them when few): CDFs and scatter plots.
  nlohmann::json ts = nlohmann::json::array(), ls = nlohmann::json::array(), rs = nlohmann::json::array();
  const size_t stride = std::max<size_t>(1, (answered_idx.size() + o_.max_samples - 1) / std::max<uint32_t>(o_.max_samples, 1));
  for (size_t k = 0; k < answered_idx.size(); k += stride) {
    const Event& e = events_[answered_idx[k]];
    ts.push_back(e.t0 - t_begin);
    ls.push_back((e.t1 - e.t0) * 1e6);
    rs.push_back(overlaps(e) ? 1 : 0);
  }
  j["samples"] = {{"t_s", ts}, {"latency_us", ls}, {"rotating", rs}, {"stride", stride}};

  nlohmann::json rot = nlohmann::json::array();
  for (size_t i = 0; i < rotations.size(); ++i) {
    const auto& w = rotations[i];
    if (w.end >= t_begin - o_.warmup_s && w.start <= t_end)
      rot.push_back({{"start_s", w.start - t_begin}, {"end_s", w.end - t_begin}, {"flow_mods", w.flow_mods},
                     {"published_s", published[i] >= 0 ? nlohmann::json(published[i] - t_begin) : nlohmann::json()}});
  }
  j["rotations"] = rot;
  nlohmann::json pro = nlohmann::json::object();
  for (const auto& [prio, n] : unsolicited_by_priority_) pro[std::to_string(prio)] = n;
  j["proactive_flow_mods_by_priority"] = pro;
  j["proactive_small_bursts"] = small_bursts;

  nlohmann::json rfc = extra_.contains("rfc8456") ? extra_["rfc8456"] : nlohmann::json::object();
  if (o_.mode == "latency" || o_.mode == "throughput") {
    rfc["async_message_processing_time_us"] = j["latency_us"];
    rfc["async_message_processing_rate_per_s"] = j["rate_per_s"];
  }
  if (o_.mode == "path" || o_.mode == "cpam") {
    rfc["reactive_path_provisioning_time_us"] = j["latency_us"];
    rfc["reactive_path_provisioning_rate_per_s"] = j["rate_per_s"];
  }
  if (extra_.contains("discovery") && extra_["discovery"].value("complete", false))
    rfc["network_topology_discovery_time_ms"] = extra_["discovery"]["from_first_switch_ms"];
  const nlohmann::json sw = switch_totals();
  if (o_.malformed > 0)
    rfc["exception_handling"] = {{"malformed_sent", sw["malformed_sent"]}, {"errors_received", sw["errors_received"]},
                                 {"disconnects", disconnects_}, {"legit_answered_share", requests ? double(ok) / double(requests) : 0.0},
                                 {"legit_latency_us", j["latency_us"]}};
  if (o_.dos_rate > 0) {
    uint64_t fs = 0, fa = 0;
    for (const auto& e : events_)
      if (e.kind == Kind::kFlood && in_window(e)) {
        ++fs;
        fa += answered(e) ? 1 : 0;
      }
    const double window_s = measure_end_ > measure_begin_ ? measure_end_ - measure_begin_ : 0.0;
    rfc["dos_handling"] = {{"flood_rate_offered_per_s", o_.dos_rate}, {"flood_port", o_.dos_port}, {"flood_sent", fs},
                           {"flood_sent_per_s", window_s > 0 ? double(fs) / window_s : 0.0}, {"flood_answered", fa},
                           {"legit_latency_us", j["latency_us"]}, {"legit_answered_share", requests ? double(ok) / double(requests) : 0.0}};
  }
  j["rfc8456"] = rfc;
  j["switches"] = sw;
  j["table_check"] = table_check();

  if (o_.mode == "cpam") {
    nlohmann::json c;
    std::vector<double> all, rotating, quiet, syn, dns, arp, connect;
    uint64_t started = 0, done = 0, failed = 0, unfinished = 0;
    for (const auto& e : events_) {
      if (!in_window(e)) continue;
      const bool a = answered(e);
      const double us = (e.t1 - e.t0) * 1e6;
      if (is_main(e) && a) {
        all.push_back(us);
        (overlaps(e) ? rotating : quiet).push_back(us);
      }
      switch (e.kind) {
        case Kind::kRppt:
          if (a) syn.push_back(us);
          break;
        case Kind::kDns:
          if (a) dns.push_back(us);
          break;
        case Kind::kArp:
          if (a) arp.push_back(us);
          break;
        case Kind::kConnect:
          ++started;
          if (a) {
            connect.push_back(us);
            ++done;
          }
          break;
        default:
          break;
      }
    }
    for (const auto& cn : conns_) {
      if (!in_window(events_[cn.ev_connect - 1])) continue;
      if (cn.failed) ++failed;
      else if (!cn.done) ++unfinished;
    }
    c["rppt_us"] = {{"all", stats_json(all)}, {"rotating", stats_json(rotating)}, {"quiet", stats_json(quiet)}};
    c["syn_us"] = stats_json(syn);
    c["dns_us"] = stats_json(dns);
    c["arp_us"] = stats_json(arp);
    c["connect_us"] = stats_json(connect);
    c["events"] = started;
    c["established"] = done;
    c["failures"] = failed + unfinished;
    c["fail_reasons"] = fail_reasons_;
    c["dns_changes"] = dns_changes_;
    c["misdelivered"] = misdelivered_;
    c["stray_frames"] = stray_frames_;
    c["arp_failures"] = arp_failures_;
    c["hosts_warmed"] = warm_answered_;
    c["hosts_warm_unanswered"] = warm_unanswered_;
    c["hosts_warm_unasked"] = warm_unasked_;
    c["lambda"] = o_.lambda;
    j["cpam"] = c;
  }
  for (auto it = extra_.begin(); it != extra_.end(); ++it)
    if (it.key() != "rfc8456") j[it.key()] = it.value();
  return j;
}

}  // namespace sdn::ofbench
