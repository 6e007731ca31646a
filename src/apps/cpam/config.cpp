// [cpam] reading and validation.
#include "apps/cpam/config.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "pkt/addr.hpp"

namespace sdn::apps::cpam {
namespace {

std::chrono::milliseconds ms(core::Config& cfg, std::string_view s, std::string_view key,
                             std::chrono::milliseconds def, int64_t min, int64_t max) {
  return std::chrono::milliseconds(cfg.get_int(s, key, def.count(), min, max));
}

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 63) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

// "name=ip" (the hosts list) or "name ip" (a hosts_file line).
bool add_host(CpamConfig& c, std::string_view entry, char sep, std::string* why) {
  const auto at = entry.find(sep);
  if (at == std::string_view::npos) {
    *why = fmt::format("'{}' is not name{}ip", entry, sep == '=' ? "=" : " ");
    return false;
  }
  std::string name(entry.substr(0, at));
  std::string_view ip_text = entry.substr(at + 1);
  while (!ip_text.empty() && ip_text.front() == ' ') ip_text.remove_prefix(1);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto ip = pkt::Ipv4Addr::parse(ip_text);
  if (!valid_name(name) || !ip) {
    *why = fmt::format("'{}': name must be 1-63 of [a-z0-9-] and ip a dotted quad", entry);
    return false;
  }
  c.hosts.push_back({std::move(name), ip->value});
  return true;
}

}  // namespace

RotationPacing rotation_pacing(const CpamConfig& c, size_t hosts) {
  if (c.batch_hosts != 0) return {c.batch_hosts, c.batch_delay};
  const double window = c.rotation_share * static_cast<double>(c.rotation_interval.count());
  const double delay = static_cast<double>(std::max<int64_t>(c.batch_delay.count(), 1));
  const size_t batches = static_cast<size_t>(window / delay) + 1;
  const size_t size = std::max<size_t>(20, (hosts + batches - 1) / batches);
  if (c.rotation_batch_max == 0 || size <= c.rotation_batch_max) return {size, c.batch_delay};
  // More, smaller batches closer together: one batch is one turn of shard 0's loop, and the
  // PacketIns of that shard's switches wait for it.
  const size_t more = (hosts + c.rotation_batch_max - 1) / c.rotation_batch_max;
  const auto gap = static_cast<int64_t>(window / static_cast<double>(more));
  const int64_t most = c.batch_delay.count(), least = std::min<int64_t>(2, most);
  return {c.rotation_batch_max, std::chrono::milliseconds(std::clamp<int64_t>(gap, least, most))};
}

size_t rotation_batch_size(const CpamConfig& c, size_t hosts) { return rotation_pacing(c, hosts).hosts; }

size_t switch_batch_cap(const CpamConfig& c, std::chrono::milliseconds delay) {
  if (c.switch_flowmod_budget == 0) return SIZE_MAX;
  const double per_batch = static_cast<double>(c.switch_flowmod_budget) *
                           static_cast<double>(std::max<int64_t>(delay.count(), 1)) / 1000.0;
  return std::max<size_t>(1, static_cast<size_t>(per_batch));
}

size_t switch_batch_cap(const CpamConfig& c) { return switch_batch_cap(c, c.batch_delay); }

CpamConfig read_cpam_config(core::Config& cfg, std::string_view s) {
  CpamConfig c;
  const std::string p(s);
  c.rotation_interval = ms(cfg, s, "rotation_interval_ms", c.rotation_interval, 1000, 86'400'000);
  c.pool_size = static_cast<uint32_t>(cfg.get_int(s, "vip_pool", c.pool_size, 2, 1 << 22));
  c.batch_hosts = static_cast<uint32_t>(cfg.get_int(s, "rotation_batch", c.batch_hosts, 0, 1 << 20));
  c.batch_delay = ms(cfg, s, "batch_delay_ms", c.batch_delay, 0, 60'000);
  c.rotation_share = cfg.get_double(s, "rotation_share", c.rotation_share, 0.01, 1.0);
  c.rotation_batch_max = static_cast<uint32_t>(cfg.get_int(s, "rotation_batch_max", c.rotation_batch_max, 0, 1 << 20));
  c.switch_flowmod_budget =
      static_cast<uint32_t>(cfg.get_int(s, "switch_flowmod_budget", c.switch_flowmod_budget, 0, 1'000'000));
  c.probe_budget = static_cast<uint32_t>(cfg.get_int(s, "probe_budget", c.probe_budget, 1, 10'000'000));
  c.probe_backoff_max = ms(cfg, s, "probe_backoff_max_ms", c.probe_backoff_max, 500, 3'600'000);
  c.mapping_per_host_max = static_cast<size_t>(
      cfg.get_int(s, "mapping_per_host_max", static_cast<int64_t>(c.mapping_per_host_max), 0, 100'000'000));
  c.tcp_idle = std::chrono::seconds(cfg.get_int(s, "tcp_idle_timeout_s", c.tcp_idle.count(), 1, 0xffff));
  c.udp_active = std::chrono::seconds(cfg.get_int(s, "udp_active_timeout_s", c.udp_active.count(), 1, 0xffff));
  c.reclaim_threshold = ms(cfg, s, "grace_reclaim_ms", c.reclaim_threshold, 0, 3'600'000);
  c.grace_accept = ms(cfg, s, "grace_accept_ms", c.reclaim_threshold, 0, 3'600'000);
  c.quarantine = ms(cfg, s, "quarantine_ms", c.quarantine, 0, 86'400'000);
  c.session_linger = ms(cfg, s, "session_linger_ms", c.session_linger, 0, 3'600'000);
  c.vip_priority = static_cast<uint16_t>(cfg.get_int(s, "vip_priority", c.vip_priority, 1, 0xfffe));
  c.session_priority = static_cast<uint16_t>(cfg.get_int(s, "session_priority", c.vip_priority + 1, 1, 0xffff));
  c.table_miss_priority = static_cast<uint16_t>(cfg.get_int(s, "table_miss_priority", 0, 0, 0));
  c.table_id = static_cast<uint8_t>(cfg.get_int(s, "table", c.table_id, 0, 254));
  c.stats_interval = ms(cfg, s, "stats_interval_ms", c.stats_interval, 100, 3'600'000);
  c.preinstall_timeout = ms(cfg, s, "preinstall_timeout_ms", c.preinstall_timeout, 0, 60'000);
  c.block_real = cfg.get_bool(s, "block_real", c.block_real);
  c.real_block_priority =
      static_cast<uint16_t>(cfg.get_int(s, "real_block_priority", c.real_block_priority, 2, 0xfffe));
  c.real_block_max_rules = static_cast<size_t>(
      cfg.get_int(s, "real_block_max_rules", static_cast<int64_t>(c.real_block_max_rules), 0, 10'000'000));
  c.source_guard = cfg.get_bool(s, "source_guard", c.source_guard);
  c.guard_priority = static_cast<uint16_t>(cfg.get_int(s, "guard_priority", c.guard_priority, 1, 0xffff));
  c.spoof_drop = std::chrono::seconds(cfg.get_int(s, "spoof_drop_s", c.spoof_drop.count(), 1, 3600));
  if (const std::string v6 = cfg.get_string(s, "ipv6", "block"); v6 == "block") {
    c.ipv6 = Ipv6Policy::kBlock;
  } else if (v6 == "allow") {
    c.ipv6 = Ipv6Policy::kAllow;
  } else {
    cfg.add_problem(p + ".ipv6: '" + v6 + "' is not \"block\" or \"allow\"");
  }
  for (const auto& a : cfg.get_string_list(s, "real_allowed_from", {})) {
    if (auto ip = pkt::Ipv4Addr::parse(a)) {
      c.real_allowed_from.push_back(ip->value);
    } else {
      cfg.add_problem(p + ".real_allowed_from: '" + a + "' is not an IPv4 address");
    }
  }
  c.max_sessions_per_shard = static_cast<size_t>(
      cfg.get_int(s, "max_sessions_per_shard", static_cast<int64_t>(c.max_sessions_per_shard), 1, 100'000'000));
  c.rppt_samples = cfg.get_string(s, "rppt_samples", "");
  c.yield_between_batches = cfg.get_bool(s, "yield_between_batches", false);
  c.recovery = cfg.get_bool(s, "recovery", c.recovery);
  c.commit_off_loop = cfg.get_bool(s, "commit_off_loop", c.commit_off_loop);
  c.session_lease = ms(cfg, s, "session_lease_ms", c.session_lease, 1000, 86'400'000);
  c.recovery_hold = ms(cfg, s, "recovery_hold_ms", c.recovery_hold, 0, 3'600'000);
  c.cluster_poll = ms(cfg, s, "cluster_poll_ms", c.cluster_poll, 10, 10'000);
  c.cluster_record_ttl = ms(cfg, s, "cluster_record_ttl_ms", c.cluster_record_ttl, 2000, 600'000);
  c.cluster_pin_hold = ms(cfg, s, "cluster_pin_hold_ms", c.cluster_pin_hold, 0, 3'600'000);
  c.cluster_pin_lag = ms(cfg, s, "cluster_pin_lag_ms", c.cluster_pin_lag, 0, 600'000);
  if (c.session_priority <= c.vip_priority)
    cfg.add_problem(p + ".session_priority: must be above vip_priority (session rules overlap the VIP rules)");
  if (c.guard_priority <= c.session_priority)
    cfg.add_problem(p + ".guard_priority: must be above session_priority (the guard's drops must win)");
  if (c.real_block_priority + 1 >= c.vip_priority)
    cfg.add_problem(p + ".real_block_priority: must be below vip_priority - 1 (its allow rules sit one above it)");

  // Fixed by the design; settable so a config can state them, refused when they differ.
  if (auto v = cfg.get_string(s, "openflow", "1.3"); v != "1.3")
    cfg.add_problem(p + ".openflow: only \"1.3\" is supported");
  if (auto v = cfg.get_string(s, "translation", "last_hop"); v != "last_hop")
    cfg.add_problem(p + ".translation: only \"last_hop\" is supported");
  if (auto v = cfg.get_string(s, "publication", "atomic"); v != "atomic")
    cfg.add_problem(p + ".publication: only \"atomic\" is supported");

  const std::string mode = cfg.get_string(s, "runtime", "sharded");
  if (mode == "sharded") {
    c.mode = RuntimeMode::kSharded;
  } else if (mode == "cooperative") {
    c.mode = RuntimeMode::kCooperative;
  } else {
    cfg.add_problem(p + ".runtime: '" + mode + "' is not sharded or cooperative");
  }

  const std::string range = cfg.get_string(s, "vip_range", "10.0.128.0/18");
  {
    const auto slash = range.find('/');
    const auto base = pkt::Ipv4Addr::parse(std::string_view(range).substr(0, slash));
    int len = -1;
    if (slash != std::string::npos) len = std::atoi(range.c_str() + slash + 1);
    if (!base || len < 8 || len > 30) {
      cfg.add_problem(p + ".vip_range: '" + range + "' is not a.b.c.d/len with len 8..30");
    } else {
      const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
      c.vip_base = base->value & mask;
      c.vip_prefix_len = static_cast<uint8_t>(len);
      const uint64_t usable = (uint64_t{1} << (32 - len)) - 2;
      if (c.pool_size > usable)
        cfg.add_problem(fmt::format("{}.vip_pool: {} VIPs do not fit {} ({} usable)", p, c.pool_size, range, usable));
    }
  }
  c.zone = cfg.get_string(s, "zone", c.zone);
  for (char& ch : c.zone) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (c.zone.empty() || c.zone.front() == '.' || c.zone.back() == '.' || c.zone.size() > 200)
    cfg.add_problem(p + ".zone: '" + c.zone + "' is not a domain name");
  const std::string dns = cfg.get_string(s, "dns_ip", "10.0.255.253");
  if (auto ip = pkt::Ipv4Addr::parse(dns)) {
    c.dns_ip = ip->value;
  } else {
    cfg.add_problem(p + ".dns_ip: '" + dns + "' is not an IPv4 address");
  }

  std::string why;
  for (const auto& e : cfg.get_string_list(s, "hosts", {}))
    if (!add_host(c, e, '=', &why)) cfg.add_problem(p + ".hosts: " + why);
  if (const std::string file = cfg.get_string(s, "hosts_file", ""); !file.empty()) {
    std::ifstream in(file);
    if (!in) cfg.add_problem(p + ".hosts_file: cannot read '" + file + "'");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty() || line[0] == '#') continue;
      if (!add_host(c, line, ' ', &why)) cfg.add_problem(fmt::format("{}.hosts_file:{}: {}", p, n, why));
    }
  }
  std::set<std::string> names;
  std::set<uint32_t> ips;
  const uint32_t vmask = ~uint32_t{0} << (32 - c.vip_prefix_len);
  for (const auto& h : c.hosts) {
    if (!names.insert(h.name).second) cfg.add_problem(p + ".hosts: name '" + h.name + "' twice");
    if (!ips.insert(h.ip).second)
      cfg.add_problem(p + ".hosts: address " + pkt::Ipv4Addr{h.ip}.to_string() + " twice");
    if ((h.ip & vmask) == c.vip_base)
      cfg.add_problem(p + ".hosts: " + h.name + "'s real address lies inside vip_range");
    if (h.ip == c.dns_ip) cfg.add_problem(p + ".hosts: " + h.name + " has the dns_ip");
  }
  if ((c.dns_ip & vmask) == c.vip_base) cfg.add_problem(p + ".dns_ip: inside vip_range");
  for (uint32_t a : c.real_allowed_from)
    if (ips.contains(a))
      cfg.add_problem(p + ".real_allowed_from: " + pkt::Ipv4Addr{a}.to_string() +
                      " is a protected host's real address (infrastructure only)");
  if (c.hosts.size() * 2 + 1 > c.pool_size)
    cfg.add_problem(fmt::format("{}.vip_pool: {} VIPs cannot rotate {} hosts (needs more than two per host)", p,
                                c.pool_size, c.hosts.size()));
  return c;
}

}  // namespace sdn::apps::cpam
