// Runtime (southbound) settings: listen address, shard count and every cap, all configurable
// from the [controller] and [southbound] sections of the TOML file.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/expected.hpp"
#include "southbound/dos_settings.hpp"

namespace sdn::southbound {

// OpenFlow over TLS (docs/tls.md): [southbound] tls, tls_cert, tls_key, tls_ca, tls_verify_peer.
struct TlsSettings {
  bool enabled = false;
  std::string cert;          // PEM: the controller's certificate (chain)
  std::string key;           // PEM: its private key
  std::string ca;            // PEM: the CA(s) a switch's certificate must chain to
  bool verify_peer = true;   // require and verify the switch's certificate (mutual TLS)
};

enum class CrossShard : uint8_t { kDirect, kPost };

struct SouthboundConfig {
  std::string listen_address = "127.0.0.1";
  uint16_t listen_port = 6653;
  unsigned shards = 0;                                 // 0 = one per core
  int shard_nice = 0;                                  // [controller] shard_nice: the shard threads' nice
  uint32_t max_message_bytes = 65535;                  // larger header.length => close
  uint64_t max_queued_bytes = 16u << 20;               // per-connection output cap
  uint32_t max_pending_xids = 65536;                   // unconfirmed xids per connection
  std::chrono::milliseconds echo_interval{5000};       // idle time before we send ECHO_REQUEST
  std::chrono::milliseconds echo_timeout{15000};       // silence before the peer is declared dead
  std::chrono::milliseconds handshake_timeout{10000};  // HELLO..table-miss barrier
  uint32_t low_lane_quantum = 64 * 1024;               // low-lane bytes written per loop turn
  uint32_t echo_rate_limit = 1000;                     // ECHO_REQUESTs answered per second
  uint16_t miss_send_len = 0xffff;                     // SET_CONFIG; 0xffff = whole packet, no buffer
  bool clear_flows_on_connect = true;                  // delete all flows before table-miss install
  // Runtime::send_batch_to for another shard's switch: written from the calling thread
  // (kDirect, run to completion) or posted to the owner's thread (kPost, the ablation's
  // baseline). TLS connections and low-lane batches are always posted.
  CrossShard cross_shard = CrossShard::kDirect;
  TlsSettings tls;                                     // off: plain TCP
  DosSettings dos;                                     // PacketIn limiter + table-miss meters
};

// Parses "HOST:PORT" (port 0..65535) into the listen fields of `c`; on failure returns why
// and leaves `c` as it was. Shared by the config file and the --listen flag.
Expected<void, std::string> set_listen(SouthboundConfig& c, std::string_view host_port);

// Reads [southbound] tls*: files must exist and be readable (problems name the key). transport.cpp.
void read_tls_settings(core::Config& cfg, TlsSettings& t);

// Reads [controller] listen/shards and [southbound].*; problems are recorded in `cfg`.
SouthboundConfig southbound_config_from(core::Config& cfg);

}  // namespace sdn::southbound
