// Reads the southbound settings from the TOML configuration.
#include "southbound/config.hpp"

#include <charconv>

#include <fmt/format.h>

namespace sdn::southbound {

Expected<void, std::string> set_listen(SouthboundConfig& c, std::string_view host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return unexpected(fmt::format("'{}' is not HOST:PORT", host_port));
  const std::string_view port_text = host_port.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port_text.empty() || port > 65535)
    return unexpected(fmt::format("bad port in '{}'", host_port));
  c.listen_address = std::string(host_port.substr(0, colon));
  c.listen_port = static_cast<uint16_t>(port);
  return {};
}

SouthboundConfig southbound_config_from(core::Config& cfg) {
  SouthboundConfig c;
  const std::string listen = cfg.get_string("controller", "listen", "127.0.0.1:6653");
  if (auto r = set_listen(c, listen); !r) cfg.add_problem("controller.listen: " + r.error());
  c.shards = static_cast<unsigned>(cfg.get_int("controller", "shards", 0, 0, 256));
  c.shard_nice = static_cast<int>(cfg.get_int("controller", "shard_nice", 0, -20, 19));
  const char* s = "southbound";
  c.max_message_bytes = static_cast<uint32_t>(cfg.get_int(s, "max_message_bytes", c.max_message_bytes, 64, 65535));
  c.max_queued_bytes = static_cast<uint64_t>(cfg.get_int(s, "max_queued_bytes", static_cast<int64_t>(c.max_queued_bytes), 65536, int64_t{1} << 34));
  c.max_pending_xids = static_cast<uint32_t>(cfg.get_int(s, "max_pending_xids", c.max_pending_xids, 16, 1 << 24));
  c.echo_interval = std::chrono::milliseconds(cfg.get_int(s, "echo_interval_ms", c.echo_interval.count(), 10, 3600000));
  c.echo_timeout = std::chrono::milliseconds(cfg.get_int(s, "echo_timeout_ms", c.echo_timeout.count(), 20, 3600000));
  c.handshake_timeout = std::chrono::milliseconds(cfg.get_int(s, "handshake_timeout_ms", c.handshake_timeout.count(), 10, 3600000));
  c.low_lane_quantum = static_cast<uint32_t>(cfg.get_int(s, "low_lane_quantum", c.low_lane_quantum, 1024, 1 << 26));
  c.echo_rate_limit = static_cast<uint32_t>(cfg.get_int(s, "echo_rate_limit", c.echo_rate_limit, 1, 1 << 24));
  c.miss_send_len = static_cast<uint16_t>(cfg.get_int(s, "miss_send_len", c.miss_send_len, 0, 0xffff));
  c.clear_flows_on_connect = cfg.get_bool(s, "clear_flows_on_connect", c.clear_flows_on_connect);
  if (const std::string x = cfg.get_string(s, "cross_shard", "direct"); x == "direct") {
    c.cross_shard = CrossShard::kDirect;
  } else if (x == "post") {
    c.cross_shard = CrossShard::kPost;
  } else {
    cfg.add_problem("southbound.cross_shard: '" + x + "' is not \"direct\" or \"post\"");
  }
  read_tls_settings(cfg, c.tls);
  read_dos_settings(cfg, c.dos);
  if (c.echo_timeout <= c.echo_interval)
    cfg.add_problem("southbound.echo_timeout_ms must be larger than echo_interval_ms");
  return c;
}

}  // namespace sdn::southbound
