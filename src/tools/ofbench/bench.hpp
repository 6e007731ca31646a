// ofbench: emulated OpenFlow 1.3 switches and hosts that measure a controller as a black box
// (RFC 8456). One Bench owns the switches (each a TCP connection to the controller with an
// emulated datapath, emu/), the hosts behind their ports, the links between them, and the
// events it times. Everything runs on one asio io_context per thread; switches on one thread
// hand frames to each other directly, so a campus runs on one thread (the default).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_map.h"
#include "emu/datapath.hpp"
#include "ofp/message.hpp"
#include "tools/ofbench/procstat.hpp"
#include "tools/ofbench/roles.hpp"

namespace sdn::ofbench {

using Bytes = std::vector<uint8_t>;
using SteadyClock = std::chrono::steady_clock;

struct Options {
  std::string mode = "latency";  // latency | throughput | path | cpam | discovery | sessions | table | lossfree | failover
  std::string controller = "127.0.0.1:6653";
  // --controllers: every switch connects to each of these (one channel per controller, with
  // OpenFlow roles); empty = `controller` alone.
  std::vector<std::string> controllers;
  // failover (RFC 8456 5.4.1/5.4.2): new-flow PacketIns at `rate` per second over all switches;
  // `kill_cmd` (if any) runs `kill_at_s` into the measured period, with {controller}, {host},
  // {port} and {index} replaced by the controller that masters the most switches. Without it
  // the operator kills a controller by hand during the run.
  double rate = 200;
  double kill_at_s = 3;
  std::string kill_cmd;
  double recover_timeout_s = 10;          // failover: after the period, wait this long for re-provisioning
  std::string topology = "independent";  // independent | campus
  uint32_t switches = 16;                 // independent; campus: cores + aggs + edges
  uint32_t macs_per_switch = 100;         // independent (cbench -M)
  bool unique_macs = true;                // independent: MACs differ across switches
  uint32_t hosts = 500;                   // campus
  uint32_t cores = 1, aggs = 6, edges = 12;
  bool dual_homed = false;
  uint32_t threads = 1;                   // independent only
  double duration_s = 10;                 // measured period (cbench: loops x ms-per-loop)
  double warmup_s = 1;                    // after the learn phase, not measured
  uint32_t window = 100;                  // throughput: outstanding requests per switch
  double timeout_ms = 1000;               // a request unanswered this long is lost
  bool no_buffer = false;                 // PacketIn with buffer_id = OFP_NO_BUFFER
  double malformed = 0;                   // share of PacketIns replaced by malformed messages
  double dos_rate = 0;                    // PacketIns/s from switch 0 (0 = no flood)
  uint32_t dos_port = 0;                  // the flood's in_port (0 = spread over the switch's ports)
  // cpam
  double lambda = 50;                     // new connections per second (Poisson)
  std::string dns_ip = "10.0.255.253";
  std::string zone = "cpam.lan";
  uint16_t service_port = 80;
  double connect_timeout_ms = 5000;
  double rotation_gap_ms = 1000;          // quiet time that ends a rotation window
  uint64_t rotation_min_changes = 10;     // a smaller burst of proactive changes is no rotation
  // path
  uint32_t pairs_window = 20;             // path: concurrent first packets
  // host addressing (campus): host n -> host_base + ((n-1)/250 << 8) + (n-1)%250 + 1
  std::string host_base = "10.0.0.0";
  // sessions / table / lossfree
  uint32_t session_step = 100;
  double handshake_timeout_ms = 5000;
  // TLS to the controller (docs/tls.md): the switches' certificate, key, and the CA the
  // controller's certificate must chain to. Empty cert: plain TCP.
  std::string tls_cert, tls_key, tls_ca;
  uint64_t max_flows = 1'000'000;         // table: stop after this many flows in all tables
  double plateau_s = 3;                   // table: no growth this long = capacity reached
  double trial_s = 3;                     // lossfree: length of one trial
  double rate_lo = 1000, rate_hi = 200000;
  uint32_t max_flows_per_switch = 0;      // emulated table size (0 = unlimited)
  // output
  int pid = 0;                            // controller pid for /proc sampling (0 = none)
  std::string json_path;
  std::string controller_stats;           // sdnator --stats-file: its own histograms, read at the end
  std::string hosts_file;                 // campus: write "name ip" lines and exit
  uint32_t max_samples = 50000;
  uint64_t seed = 0;                      // 0 = random
  bool quiet = false;
};

// One timed request.
enum class Kind : uint8_t {
  kPacketIn,   // cbench, failover: PacketIn sent -> first FlowMod/PacketOut that names its buffer/frame
  kLearn,      // warm-up PacketIns (not measured)
  kFlood,      // DoS flood PacketIns (not legitimate)
  kPath,       // path: first packet sent by the host -> delivered at the destination host
  kDns,        // cpam: DNS query sent -> answer delivered
  kArp,        // cpam: ARP request sent -> reply delivered
  kRppt,       // cpam: the SYN's PacketIn sent -> SYN delivered at the server
  kConnect,    // cpam: DNS query sent -> SYN-ACK delivered at the client
};
inline constexpr size_t kKinds = 8;
const char* kind_name(Kind k);

struct Event {
  double t0 = 0;   // seconds since the bench epoch
  double t1 = -1;  // completion; < 0 = unanswered
  Kind kind = Kind::kPacketIn;
  uint32_t sw = 0;
  bool delivered = true;  // failover: false = no MASTER/EQUAL controller to send the PacketIn to
};

class Bench;

// One emulated switch: a datapath and one OpenFlow 1.3 channel per controller (--controllers;
// one by default). With several, the channels follow the roles of OpenFlow 1.3.5 6.3.6
// (roles.hpp): PacketIns and FlowRemoved go to MASTER and EQUAL channels, a SLAVE's writes are
// refused, a stale generation is refused. The flow table and packet buffers are the switch's.
class EmuSwitch {
 public:
  EmuSwitch(Bench& bench, asio::io_context& io, uint32_t index, uint64_t dpid);  // ports: Bench::ports_of
  ~EmuSwitch();

  // One channel per endpoint (controller index = position); connect(ep) is the one-controller case.
  void connect(const std::vector<asio::ip::tcp::endpoint>& eps);
  void connect(const asio::ip::tcp::endpoint& ep) { connect(std::vector<asio::ip::tcp::endpoint>{ep}); }
  void close();
  bool connected() const;                          // to at least one controller
  bool connected(size_t ch) const;                 // to controller `ch`
  bool ready() const { return features_sent_; }   // some controller completed the handshake
  bool ready(size_t ch) const;                     // controller `ch` did, on its current connection
  size_t channels() const { return ch_.size(); }
  const SwitchRoles& roles() const { return roles_; }
  uint32_t index() const { return index_; }
  uint64_t dpid() const { return dpid_; }
  asio::io_context& io() { return io_; }

  // A frame arrives on `port` (from a host or a link): table lookup, actions or PacketIn.
  void ingress(uint32_t port, const Bytes& frame);
  // A PacketIn for a frame the bench made up (cbench modes: no table lookup first). False when
  // no controller may receive it (none connected, or only SLAVEs).
  bool packet_in(uint32_t in_port, const Bytes& frame, uint32_t event, uint8_t reason = 0);
  // A message that breaks a rule inside an intact header (exception handling).
  void send_malformed(uint32_t which);
  void echo_request();
  void expire(emu::Clock::time_point now);
  size_t backlog() const;  // bytes queued for the controllers

  const emu::FlowTable& table() const { return table_; }
  struct Counters {
    uint64_t packet_ins = 0, flow_mods = 0, flow_mods_rejected = 0, packet_outs = 0, barriers = 0;
    uint64_t multiparts = 0, echo_requests = 0, echo_replies = 0, errors_received = 0;
    uint64_t flow_removed = 0, buffer_unknown = 0, malformed_sent = 0, decode_errors = 0;
    uint64_t other = 0, bytes_in = 0, bytes_out = 0, reconnects = 0;
    uint64_t role_requests = 0, role_stale = 0, role_bad = 0, slave_writes_refused = 0;
    uint64_t packet_ins_undelivered = 0;  // no MASTER or EQUAL channel connected
  };
  const Counters& counters() const { return c_; }
  double handshake_done_s() const { return handshake_s_; }
  double last_echo_rtt_ms() const;

 private:
  // One controller connection (a channel, in the spec's words).
  struct Channel {
    explicit Channel(asio::io_context& io, size_t i) : index(i), sock(io) {}
    size_t index;
    asio::ip::tcp::endpoint ep;
    asio::ip::tcp::socket sock;
    // With --tls-cert: the session runs over this stream on sock (replaced per connection; an
    // old one is kept until then, so the aborted handlers of a lost session never see it freed).
    std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls;
    uint64_t gen = 0;  // bumped per connection: handlers of an older socket stop
    bool connected = false, handshaken = false, ever_up = false;
    Bytes in;
    size_t in_len = 0;
    Bytes out, writing;
    bool write_pending = false;
    ofp::SwitchConfig config;  // per connection, as Open vSwitch keeps miss_send_len
    double echo_sent_s = -1, echo_rtt_ms = -1;
  };

  void connect(Channel& c);
  void send(Channel& c, uint32_t xid, ofp::Body body);
  void send_async(const ofp::Body& body);  // to every MASTER/EQUAL channel
  void send_bytes(Channel& c, const Bytes& b);
  void flush(Channel& c);
  void read_more(Channel& c);
  void on_bytes(Channel& c, size_t n);
  void handle(Channel& c, const ofp::Message& m, std::span<const uint8_t> raw);
  void handle_role(Channel& c, uint32_t xid, const ofp::RoleRequest& r, std::span<const uint8_t> raw);
  void handle_multipart(Channel& c, uint32_t xid, const ofp::MultipartRequest& r);
  template <class Item>
  void send_parts(Channel& c, uint32_t xid, ofp::MultipartType type, std::vector<Item> items, size_t per);
  void handle_flow_mod(Channel& c, uint32_t xid, const ofp::FlowMod& fm, std::span<const uint8_t> raw);
  void handle_packet_out(Channel& c, const ofp::PacketOut& po);
  void run(const ofp::ActionList& actions, const Bytes& frame, uint32_t in_port, int depth);
  void output(uint32_t port, const Bytes& frame, uint32_t in_port, int depth);
  void send_error(Channel& c, uint16_t type, uint16_t code, std::span<const uint8_t> offending);
  void lost(Channel& c, const std::string& why);
  void classify_proactive();
  uint32_t buffer(uint32_t in_port, const Bytes& frame, uint32_t event);
  void lookup_and_run(uint32_t port, const Bytes& frame, int depth);
  Channel* first_async_channel();

  Bench& bench_;
  asio::io_context& io_;
  std::vector<std::unique_ptr<Channel>> ch_;
  SwitchRoles roles_;
  uint32_t index_;
  uint64_t dpid_;
  bool features_sent_ = false, closing_ = false;
  double handshake_s_ = -1;
  uint32_t next_xid_ = 1;
  emu::FlowTable table_;
  struct Buffered {
    uint32_t in_port;
    Bytes frame;
    uint32_t event;
  };
  absl::flat_hash_map<uint32_t, Buffered> buffers_;
  std::deque<uint32_t> buffer_order_;
  uint32_t next_buffer_ = 1;
  absl::flat_hash_map<uint64_t, uint32_t> by_data_;  // frame hash -> event (no_buffer)
  struct Proactive {
    std::optional<uint64_t> ipv4_dst;
    uint16_t priority;
    double t;
  };
  std::vector<Proactive> pending_proactive_;  // this read's candidates (classify_proactive)
  std::vector<uint64_t> read_session_dsts_;   // ipv4_dst of this read's session FlowMods
  Counters c_;
};

// A host behind an edge port (path and cpam modes).
struct Host {
  uint32_t id = 0;  // 1-based
  std::string name;
  uint32_t ip = 0;
  uint64_t mac = 0;
  uint32_t sw = 0, port = 0;
  absl::flat_hash_map<uint32_t, std::pair<uint64_t, double>> arp;  // ip -> (mac, expiry s)
  absl::flat_hash_map<uint32_t, std::vector<std::function<void(uint64_t)>>> arp_waiting;
  absl::flat_hash_map<uint32_t, std::pair<uint32_t, double>> dns;  // server host id -> (vip, expiry s)
};

class Bench {
 public:
  explicit Bench(Options o);
  ~Bench();
  // Runs the mode; returns the run's JSON (schema in the README).
  nlohmann::json run();

  // ---- called by the switches ----
  double now_s() const { return std::chrono::duration<double>(SteadyClock::now() - epoch_).count(); }
  void on_ready(EmuSwitch& sw);
  void on_disconnect(EmuSwitch& sw, const std::string& why);
  void on_response(uint32_t event, double t);  // a FlowMod/PacketOut named the event's buffer/frame
  void on_packet_in_sent(EmuSwitch& sw, const Bytes& frame);
  void on_unsolicited_flow_mod(uint16_t priority, double t);
  // Multi-controller events (failover.cpp): a channel finished its handshake, closed (with the
  // role it held), answered a ROLE_REQUEST, or a SLAVE tried to write.
  void on_channel_ready(EmuSwitch& sw, size_t ch);
  void on_channel_lost(EmuSwitch& sw, size_t ch, CtlRole role);
  void on_role(EmuSwitch& sw, size_t ch, CtlRole role, uint64_t generation, bool accepted);
  void on_slave_write(EmuSwitch& sw, size_t ch);
  // A frame leaves switch `sw` by `port`: to a peer switch, a host, or nowhere.
  void transmit(uint32_t sw, uint32_t port, const Bytes& frame, int depth);
  bool is_link_port(uint32_t sw, uint32_t port) const;
  const std::vector<uint32_t>& ports_of(uint32_t sw) const { return ports_[sw]; }
  const Options& options() const { return o_; }
  asio::ssl::context* tls() { return tls_ ? &*tls_ : nullptr; }  // null: plain TCP
  bool reconnect() const { return o_.mode != "sessions"; }  // capacity runs count a drop as a drop
  uint64_t malformed_counter() { return malformed_seq_++; }

 private:
  struct Peer {
    uint32_t sw = 0, port = 0;  // link: the other end
    uint32_t host = 0;          // host port: 1-based host id
  };
  void build_topology();
  void write_hosts_file() const;
  void connect_all();
  bool run_until(const std::function<bool()>& done, double timeout_s);
  void tick_every(double s, std::function<void()> fn);
  void stop_ticks();
  uint32_t new_event(Kind k, uint32_t sw);
  void complete(uint32_t event, double t);
  bool wait_connected(double timeout_s);
  bool wait_discovery(double timeout_s);
  void learn_phase();

  // modes
  void mode_cbench(bool throughput);
  void mode_path();
  void mode_cpam();
  void mode_sessions();
  void mode_table();
  void mode_lossfree();
  void mode_discovery();
  void mode_failover();

  // failover helpers (failover.cpp)
  std::vector<asio::ip::tcp::endpoint> endpoints() const;
  std::string controller_name(size_t ch) const;
  void run_kill_cmd();
  nlohmann::json failover_json();

  // cbench helpers
  Bytes cbench_frame(uint32_t sw, uint64_t k, bool fresh_ip);
  // in_port 0: the next of ports 1..M in turn.
  void cbench_send(uint32_t sw, Kind kind, bool fresh_ip = false, uint32_t in_port = 0);
  void keep_windows_full(uint32_t first_sw, uint32_t per_switch, bool fresh_ip, const bool& sending);

  // hosts
  void host_rx(uint32_t host, const Bytes& frame);
  void host_send(const Host& h, const Bytes& frame);
  // `then` hears the MAC, or 0 when three requests a second apart went unanswered.
  void host_arp(Host& h, uint32_t ip, std::function<void(uint64_t)> then);
  void start_connection();
  void send_dns(uint32_t conn, int tries);
  void resolve_mac(uint32_t conn);
  void send_syn(uint32_t conn);
  void fail_connection(uint32_t conn, const char* why);
  void warm_hosts(uint32_t target_of(const Bench&, uint32_t), double timeout_s);
  void campus_setup();

  // results
  nlohmann::json result_json(double t_begin, double t_end);
  nlohmann::json switch_totals() const;
  nlohmann::json table_check() const;

  Options o_;
  SteadyClock::time_point epoch_ = SteadyClock::now();
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  std::optional<asio::ssl::context> tls_;
  std::vector<std::unique_ptr<EmuSwitch>> switches_;
  std::vector<std::vector<uint32_t>> ports_;               // per switch: its port numbers
  std::vector<absl::flat_hash_map<uint32_t, Peer>> peers_;  // per switch: port -> peer
  std::vector<Host> hosts_;                                 // index = id - 1
  std::vector<uint32_t> edge_of_;                           // campus: edge switch indices
  struct DirLink {
    uint32_t sw, port;
  };
  std::vector<DirLink> links_;  // directed links (both directions listed)
  absl::flat_hash_map<uint64_t, double> lldp_seen_;  // (sw << 32 | port) of the sending end -> first time
  double first_ready_s_ = -1, all_ready_s_ = -1, discovery_done_s_ = -1;
  uint32_t ready_count_ = 0, disconnects_ = 0;
  std::string last_disconnect_;

  std::vector<Event> events_;
  std::mt19937_64 rng_;
  uint64_t malformed_seq_ = 0;
  bool measuring_ = false;
  double measure_begin_ = 0, measure_end_ = 0;
  Kind main_kind_ = Kind::kPacketIn;  // what latency_us / rate_per_s are about
  struct Tick {
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::function<void()>> step;
  };
  std::vector<Tick> ticks_;
  std::function<void(uint32_t event)> on_complete_;  // mode driver

  // cbench state
  std::vector<uint64_t> seq_;                 // per switch: frames made
  std::vector<std::deque<uint32_t>> outstanding_;  // per switch: events in flight (send order)

  // cpam state
  struct Conn {
    uint32_t client = 0, server = 0;
    uint16_t sport = 0;
    uint32_t vip = 0;
    uint64_t vip_mac = 0;
    uint32_t ev_connect = 0, ev_dns = 0, ev_arp = 0, ev_rppt = 0;
    uint16_t dns_id = 0;
    int syn_tries = 0;
    bool done = false, failed = false;
  };
  std::vector<Conn> conns_;
  absl::flat_hash_map<uint64_t, uint32_t> dns_pending_;  // client << 16 | query id -> conn
  std::deque<uint32_t> pending_conns_;                   // started, not yet done or failed
  absl::flat_hash_map<uint32_t, uint32_t> last_vip_;     // server host -> last address seen
  absl::flat_hash_map<uint32_t, uint32_t> path_dst_;     // path event -> destination host
  uint16_t next_dns_id_ = 1;
  uint64_t arp_failures_ = 0, stray_frames_ = 0, misdelivered_ = 0;
  size_t warm_answered_ = 0, warm_unanswered_ = 0, warm_unasked_ = 0;
  uint32_t dns_ip_ = 0;
  uint16_t next_sport_ = 1024;
  struct Window {
    double start, end;
    uint64_t flow_mods;
  };
  std::vector<Window> windows_;
  uint64_t dns_changes_ = 0;
  std::vector<double> dns_change_times_;  // when a name first resolved to a new address
  std::map<uint16_t, uint64_t> unsolicited_by_priority_;  // proactive ADDs seen, by priority
  absl::flat_hash_map<std::string, uint64_t> fail_reasons_;

  // failover state: one episode per interruption of a switch's service (its MASTER lost, or its
  // only EQUAL controller), closed by a new MASTER (or EQUAL handshake) and by the first PacketIn
  // sent after the loss that gets answered.
  struct Episode {
    uint32_t sw = 0;
    size_t lost_ch = 0;
    CtlRole lost_role = CtlRole::kEqual;
    double t_loss = 0, t_last_answer = -1;
    double t_master = -1;  // new MASTER accepted (or EQUAL handshake done)
    int new_ch = -1;
    uint64_t generation = 0;
    double t_reprov = -1;  // the first post-loss PacketIn's answer
  };
  std::vector<Episode> episodes_;
  std::vector<double> last_answer_;                // per switch: last PacketIn answered
  std::vector<uint64_t> channel_losses_;           // per controller
  std::vector<uint64_t> masters_gained_;           // per controller: MASTER requests accepted
  uint64_t roles_refused_ = 0, slave_writes_ = 0, channels_ready_ = 0;
  bool roles_seen_ = false, failover_armed_ = false;
  struct Kill {
    bool done = false;
    size_t target = 0;
    double t = -1;
    int pid = -1, status = -1;
    std::string cmd;
  } kill_;
  nlohmann::json mastership_before_;

  // extra per-mode JSON (rfc8456 metrics, trials, ...)
  nlohmann::json extra_ = nlohmann::json::object();
};

// Parses "host:port" (IPv4 literal or a name resolved once).
std::optional<asio::ip::tcp::endpoint> parse_endpoint(const std::string& text);

// Small DNS client pieces the emulated hosts need (RFC 1035 4.1): a query for an A record,
// and the first A record of a response (id, rcode, address, ttl).
Bytes dns_query(uint16_t id, const std::string& name);
struct DnsAnswer {
  uint16_t id = 0;
  uint8_t rcode = 0;
  std::optional<uint32_t> address;
  uint32_t ttl = 0;
};
std::optional<DnsAnswer> parse_dns_answer(std::span<const uint8_t> msg);

// Latency figures over a set of values (µs): count, min, mean, p50, p90, p99, p999, max.
nlohmann::json stats_json(std::vector<double> v);

// What sdnator reports about itself (its --stats-file), for side-by-side figures.
nlohmann::json read_controller_stats(const std::string& path);

}  // namespace sdn::ofbench
