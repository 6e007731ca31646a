// `sdnator ctl`: one HTTP request (two for `status`) to the northbound REST API per command,
// rendered as aligned tables (ctl_format.cpp, which tolerates any JSON shape) or passed through
// as pretty JSON with --json. Exit status: 0 ok, 1 the server answered an error, 2 no answer.
#include "bin/ctl.hpp"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sdn::bin {

using namespace ctlfmt;

namespace {

constexpr auto R = Table::Align::kRight;
constexpr std::size_t kLineWidth = 100;

// ---- options and registry -------------------------------------------------------------------

struct CtlOpts {
  std::string url = "http://127.0.0.1:8080";
  std::string token;
  std::string cacert, cert, key_file;  // HTTPS: CA to trust, client certificate and its key
  bool json = false;
  double timeout_s = 10;
  std::string dpid, match, actions, cookie, out_port, pattern, key, state, mac, ip;
  std::optional<int64_t> table, priority, idle, hard, limit, latest, from_ns, to_ns, hosts, duration;
  bool strict = false, send_flow_rem = false, check_overlap = false;
  std::vector<std::string> sets;
};
CtlOpts g_ctl_opts;
CLI::App* g_ctl = nullptr;
std::vector<std::pair<CLI::App*, int (*)()>> g_cmds;
int g_exit = 0;  // set by whatever printed a failure

void print_json(const Json& v) { fmt::print("{}\n", v.dump(2, ' ', false, Json::error_handler_t::replace)); }

// ---- HTTP -----------------------------------------------------------------------------------

using Params = std::vector<std::pair<std::string, std::string>>;
std::unique_ptr<httplib::Client> g_http;
std::string g_origin, g_base;  // from --url: scheme://host:port, and a path prefix

std::string url_encode(std::string_view s, std::string_view keep = "") {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || std::strchr("-._~", c) || (c && keep.find(static_cast<char>(c)) != keep.npos))
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}
std::string seg(const std::string& s) { return url_encode(s, ":@"); }
void add(Params& q, const char* k, const std::string& v) { if (!v.empty()) q.emplace_back(k, v); }
void add(Params& q, const char* k, const std::optional<int64_t>& v) { if (v) q.emplace_back(k, std::to_string(*v)); }

bool open_client() {
  std::string u = g_ctl_opts.url;
  if (u.find("://") == std::string::npos) u = "http://" + u;
  const auto slash = u.find('/', u.find("://") + 3);
  g_origin = u.substr(0, slash);
  g_base = slash == std::string::npos ? "" : u.substr(slash);
  while (!g_base.empty() && g_base.back() == '/') g_base.pop_back();
  if (g_base.size() >= 7 && g_base.compare(g_base.size() - 7, 7, "/api/v1") == 0) g_base.resize(g_base.size() - 7);
  if (g_ctl_opts.cert.empty() != g_ctl_opts.key_file.empty()) {
    fmt::print(stderr, "sdnator ctl: --cert and --key go together\n");
    return false;
  }
  const bool https = g_origin.rfind("https://", 0) == 0;
  if (!https && !(g_ctl_opts.cacert.empty() && g_ctl_opts.cert.empty())) {
    fmt::print(stderr, "sdnator ctl: --cacert/--cert need an https:// --url\n");
    return false;
  }
  try {
    g_http = g_ctl_opts.cert.empty() ? std::make_unique<httplib::Client>(g_origin)
                                 : std::make_unique<httplib::Client>(g_origin, g_ctl_opts.cert, g_ctl_opts.key_file);
  } catch (const std::exception&) {  // an unknown scheme
  }
  if (!g_http || !g_http->is_valid()) {
    fmt::print(stderr, "sdnator ctl: bad --url '{}' (want http[s]://HOST[:PORT][/PREFIX]){}\n", g_ctl_opts.url,
               g_ctl_opts.cert.empty() ? "" : " or unusable --cert/--key");
    return false;
  }
  if (https) {
    if (!g_ctl_opts.cacert.empty()) g_http->set_ca_cert_path(g_ctl_opts.cacert);
    g_http->enable_server_certificate_verification(true);
  }
  const auto sec = static_cast<time_t>(g_ctl_opts.timeout_s);
  const auto usec = static_cast<time_t>((g_ctl_opts.timeout_s - static_cast<double>(sec)) * 1e6);
  g_http->set_connection_timeout(sec, usec);
  g_http->set_read_timeout(sec, usec);
  g_http->set_write_timeout(sec, usec);
  g_http->set_url_encode(false);  // paths and queries are encoded here
  g_http->set_default_headers({{"Accept", "application/json"}});
  if (!g_ctl_opts.token.empty()) g_http->set_bearer_token_auth(g_ctl_opts.token);
  return true;
}

// httplib reports every failed connect as Error::Connection: ask the system what went wrong.
std::string connect_failure() {
  const std::string hp = g_origin.substr(g_origin.find("://") + 3);
  std::string host = hp, port = g_origin.starts_with("https") ? "443" : "80";
  const auto colon = hp.rfind(':');
  if (colon != std::string::npos && hp.find(']', colon) == std::string::npos) {
    host = hp.substr(0, colon);
    port = hp.substr(colon + 1);
  }
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return fmt::format("cannot resolve '{}': {}", host, ::gai_strerror(rc));
  std::string why = "connection failed";
  if (const int fd = ::socket(res->ai_family, SOCK_STREAM, 0); fd >= 0) {
    const auto sec = static_cast<time_t>(g_ctl_opts.timeout_s);
    timeval tv{sec, static_cast<suseconds_t>((g_ctl_opts.timeout_s - static_cast<double>(sec)) * 1e6)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, res->ai_addr, res->ai_addrlen) != 0) why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return why;
}

std::string transport_reason(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return connect_failure();
    case httplib::Error::ConnectionTimeout: return fmt::format("no connection within {} s", g_ctl_opts.timeout_s);
    case httplib::Error::Write: return "the request could not be sent";
    case httplib::Error::SSLConnection: return "TLS handshake failed";
    case httplib::Error::SSLServerVerification: return "TLS server certificate not trusted";
    default: return httplib::to_string(e);
  }
}

struct Reply {
  int status = 0;
  Json body;        // null when empty or not JSON
  std::string raw;
  std::string reason;  // the status line's phrase
};

// Sends one request; prints why and returns nullopt (g_exit 2) when there is no HTTP answer.
std::optional<Reply> send(std::string_view method, const std::string& path, const Params& q = {},
                          const Json* body = nullptr) {
  std::string target = g_base + "/api/v1" + path;
  for (std::size_t i = 0; i < q.size(); ++i)
    target += fmt::format("{}{}={}", i ? '&' : '?', url_encode(q[i].first), url_encode(q[i].second));
  const std::string b = body ? compact(*body) : std::string();
  constexpr const char* kType = "application/json";
  httplib::Result r = method == "POST"    ? g_http->Post(target, b, kType)
                      : method == "PATCH" ? g_http->Patch(target, b, kType)
                      : method == "DELETE" ? (body ? g_http->Delete(target, b, kType) : g_http->Delete(target))
                                           : g_http->Get(target);
  if (!r && r.error() == httplib::Error::Read) {
    fmt::print(stderr, "sdnator ctl: no complete answer from {}{} within {} s\n", g_origin, g_base, g_ctl_opts.timeout_s);
    g_exit = 2;
    return std::nullopt;
  }
  if (!r) {
    fmt::print(stderr, "sdnator ctl: cannot reach {}{}: {}\n", g_origin, g_base, transport_reason(r.error()));
    g_exit = 2;
    return std::nullopt;
  }
  Reply out{r->status, Json::parse(r->body, nullptr, false), r->body, r->reason};
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

void report(const Reply& r) {
  std::string msg = text(r.body, "error");
  if (msg == "-") msg = r.raw.empty() ? r.reason : cut(r.raw, 200);
  std::string field = at(r.body, "field").is_null() ? "" : fmt::format(" [field: {}]", text(r.body, "field"));
  fmt::print(stderr, "error (HTTP {}): {}{}\n", r.status, msg, field);
  if (r.status == 401)
    fmt::print(stderr, "hint: {}\n",
               g_ctl_opts.token.empty() ? "this server wants a token: pass --token or set SDNATOR_TOKEN"
                                    : "the server rejected the token (--token / SDNATOR_TOKEN)");
  g_exit = 1;
}

// The JSON of a 2xx answer; nullopt (after printing why) otherwise.
std::optional<Json> call(std::string_view method, const std::string& path, const Params& q = {},
                         const Json* body = nullptr) {
  auto r = send(method, path, q, body);
  if (!r) return std::nullopt;
  if (r->status >= 300) {
    report(*r);
    return std::nullopt;
  }
  if (r->body.is_null() && !r->raw.empty()) {
    fmt::print(stderr, "sdnator ctl: the answer to {} is not JSON: {}\n", path, cut(r->raw, 200));
    g_exit = 1;
    return std::nullopt;
  }
  return r->body;
}

// call(), and under --json the answer printed. Returns what is left to render, if anything.
std::optional<Json> fetch(const std::string& path, const Params& q = {}, std::string_view method = "GET",
                          const Json* body = nullptr) {
  auto j = call(method, path, q, body);
  if (j && g_ctl_opts.json) {
    print_json(*j);
    return std::nullopt;
  }
  return j;
}

std::string sw_path() { return "/switches/" + seg(g_ctl_opts.dpid); }

// ---- commands -------------------------------------------------------------------------------

// GET /cpam's headline rows, shared by `status` and `cpam status`.
void cpam_rows(Table& t, const Json& s) {
  auto interval = number(at(s, "interval_ms"));
  t.add_row({"cpam epoch", text(s, "epoch") + (at(s, "rotating") == true ? " (rotating now)" : "")});
  t.add_row({"next rotation", fmt::format("{} (every {})", from_now(at(s, "next_rotation_ms")),
                                          interval ? span(*interval / 1000) : "-")});
  t.add_row({"hosts", text(s, "hosts")});
  t.add_row({"vips", inline_kv(at(s, "vip_states"))});
}

int cmd_status() {
  auto h = call("GET", "/health");
  if (!h) return g_exit;
  auto c = send("GET", "/cpam");
  if (!c) return g_exit;
  const bool cpam = c->status < 300;
  if (!cpam && c->status != 409) {
    report(*c);
    return g_exit;
  }
  if (g_ctl_opts.json) {
    print_json(Json{{"health", *h}, {"cpam", cpam ? c->body : Json()}});
    return 0;
  }
  Table t({{""}, {""}});
  auto up = number(at(*h, "uptime_s"));
  t.add_row({"controller", fmt::format("{} ({}, version {}, up {})", text(*h, "status"), g_origin + g_base,
                                       text(*h, "version"), up ? span(*up) : "-")});
  t.add_row({"switches", text(*h, "switches")});
  if (cpam) cpam_rows(t, c->body);
  else t.add_row({"cpam", "not running"});
  t.print();
  return 0;
}

int cmd_switches() {
  auto j = fetch("/switches");
  if (!j) return g_exit;
  Table t({{"DPID"}, {"PEER"}, {"SHARD", R}, {"PORTS", R}});
  for (const auto& s : list(*j)) t.add_row({text(s, "dpid"), text(s, "peer"), text(s, "shard"), text(s, "n_ports")});
  t.print();
  return 0;
}

int cmd_switch() {
  auto j = fetch(sw_path());
  if (!j) return g_exit;
  Table t({{""}, {""}});
  for (const char* k : {"dpid", "peer", "shard", "n_tables", "n_buffers", "capabilities"}) t.add_row({k, text(*j, k)});
  t.print();
  fmt::print("\n");
  port_table(at(*j, "ports")).print();
  return 0;
}

int cmd_ports() {
  auto j = fetch(sw_path() + "/ports");
  if (!j) return g_exit;
  port_table(*j).print();
  return 0;
}

// The flow filters, for a query string (GET) or a JSON body (DELETE).
Params filter_params() {
  Params q;
  add(q, "match", g_ctl_opts.match);
  add(q, "table", g_ctl_opts.table);
  add(q, "cookie", g_ctl_opts.cookie);
  add(q, "out_port", g_ctl_opts.out_port);
  add(q, "priority", g_ctl_opts.priority);
  return q;
}

int cmd_flows() {
  auto j = fetch(sw_path() + "/flows", filter_params());
  if (!j) return g_exit;
  for (const auto& f : list(*j)) fmt::print("{}\n", flow_line(f));
  return 0;
}

int cmd_flow_add() {
  Json body{{"match", g_ctl_opts.match}, {"actions", g_ctl_opts.actions}};
  if (g_ctl_opts.priority) body["priority"] = *g_ctl_opts.priority;
  if (g_ctl_opts.table) body["table"] = *g_ctl_opts.table;
  if (g_ctl_opts.idle) body["idle_timeout"] = *g_ctl_opts.idle;
  if (g_ctl_opts.hard) body["hard_timeout"] = *g_ctl_opts.hard;
  if (g_ctl_opts.send_flow_rem) body["send_flow_rem"] = true;
  if (g_ctl_opts.check_overlap) body["check_overlap"] = true;
  if (!g_ctl_opts.cookie.empty()) body["cookie"] = g_ctl_opts.cookie;  // the server parses decimal or 0x-hex text
  auto j = fetch(sw_path() + "/flows", {}, "POST", &body);
  if (!j) return g_exit;
  std::string line = flow_line(at(*j, "flow"));
  fmt::print("added: {}\n", line.substr(std::min(line.find_first_not_of(' '), line.size())));
  return 0;
}

int cmd_flow_del() {
  Json body = Json::object();
  for (const auto& [k, v] : filter_params()) {
    int64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    // table, priority and numeric out_ports go as numbers; match, cookie and named ports as text.
    body[k] = k != "match" && k != "cookie" && ec == std::errc() && p == v.data() + v.size() ? Json(n) : Json(v);
  }
  if (g_ctl_opts.strict) body["strict"] = true;
  auto j = fetch(sw_path() + "/flows", {}, "DELETE", &body);
  if (!j) return g_exit;
  fmt::print("deleted {} flow(s)\n", text(*j, "deleted"));
  return 0;
}

int cmd_topology() {
  auto j = fetch("/topology");
  if (!j) return g_exit;
  const Json& sws = list(at(*j, "switches"));
  fmt::print("switches ({}), topology version {}\n", sws.size(), text(*j, "version"));
  Table s({{"DPID"}, {"STATE"}, {"PORTS BY ROLE"}});
  for (const auto& w : sws) s.add_row({text(w, "dpid"), updown(at(w, "up")), ports_by_role(at(w, "ports"))});
  s.print();
  const Json& links = list(at(*j, "links"));
  fmt::print("\nlinks ({})\n", links.size());
  Table l({{"A"}, {"PORT", R}, {"B"}, {"PORT", R}, {"STATE"}});
  for (const auto& k : links) {
    const std::string why = text(k, "reason");
    l.add_row({text(at(k, "a"), "dpid"), text(at(k, "a"), "port"), text(at(k, "b"), "dpid"), text(at(k, "b"), "port"),
               updown(at(k, "up")) + (at(k, "up") == false && why != "-" && !why.empty() ? " (" + why + ")" : "")});
  }
  l.print();
  const Json& hosts = list(at(*j, "hosts"));
  std::map<std::string, std::size_t> states;
  for (const auto& h : hosts) ++states[text(h, "state")];
  std::string summary;
  for (const auto& [st, n] : states) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, st);
  fmt::print("\nhosts ({}{}{})\n", hosts.size(), summary.empty() ? "" : ": ", summary);
  const std::size_t shown = g_ctl_opts.hosts && *g_ctl_opts.hosts > 0 ? std::min<std::size_t>(hosts.size(), *g_ctl_opts.hosts)
                                                              : hosts.size();
  host_table(hosts, shown).print();
  if (shown < hosts.size()) fmt::print("... {} more (--hosts 0 shows all)\n", hosts.size() - shown);
  return 0;
}

int cmd_cpam_status() {
  auto j = fetch("/cpam");
  if (!j) return g_exit;
  Table t({{""}, {""}});
  t.add_row({"running", text(*j, "running")});
  cpam_rows(t, *j);
  t.add_row({"published", fmt::format("{} ({})", iso(at(*j, "published_ms")), from_now(at(*j, "published_ms")))});
  t.add_row({"last rotation", inline_kv(at(*j, "last_rotation"))});
  t.print();
  if (at(*j, "counters").is_object()) {
    fmt::print("\n");
    Table c({{"COUNTER"}, {"VALUE", R}});
    for (const auto& [k, v] : at(*j, "counters").items()) {
      if (!v.is_object()) {
        c.add_row({k, text(v)});
        continue;
      }
      for (const auto& [k2, v2] : v.items()) c.add_row({k + "." + k2, text(v2)});  // e.g. guard.ipv6_dropped
    }
    c.print();
  }
  return 0;
}

int cmd_cpam_mapping() {
  auto j = fetch("/cpam/mapping");
  if (!j) return g_exit;
  fmt::print("epoch {}, published {}, next rotation {}\n", text(*j, "epoch"), from_now(at(*j, "published_ms")),
             from_now(at(*j, "next_rotation_ms")));
  Table t({{"NAME"}, {"REAL_IP"}, {"VIP"}});
  const Json& hosts = at(*j, "hosts");
  if (hosts.is_object())  // the data key's {name: vip} shape
    for (const auto& [k, v] : hosts.items()) t.add_row({k, "-", text(v)});
  for (const auto& h : list(hosts)) t.add_row({text(h, "name"), text(h, "real_ip"), text(h, "vip")});
  t.print();
  return 0;
}

int cmd_cpam_vips() {
  Params q;
  add(q, "state", g_ctl_opts.state);
  add(q, "limit", g_ctl_opts.limit);
  auto j = fetch("/cpam/vips", q);
  if (!j) return g_exit;
  Table t({{"VIP"}, {"STATE"}, {"OWNER"}, {"SESSIONS", R}, {"FLOWS", R}});
  for (const auto& v : list(*j))
    t.add_row({text(v, "vip"), text(v, "state"), text(v, "owner"), text(v, "sessions"), text(v, "flows")});
  t.print();
  return 0;
}

int cmd_cpam_sessions() {
  Params q;
  add(q, "limit", g_ctl_opts.limit);
  auto j = fetch("/cpam/sessions", q);
  if (!j) return g_exit;
  auto ep = [](const Json& s, const char* host, const char* port) {  // no port for ICMP (0)
    return integer(at(s, port)).value_or(0) == 0 ? text(s, host) : text(s, host) + ":" + text(s, port);
  };
  Table t({{"ID", R}, {"PROTO"}, {"CLIENT"}, {"CLIENT_VIP"}, {"SERVER"}, {"SERVER_VIP"}, {"LIVE", R}, {"SHARD", R},
           {"AGE", R}});
  for (const auto& s : list(*j)) {
    auto age = number(at(s, "age_s"));
    t.add_row({text(s, "id"), text(s, "proto"), ep(s, "client", "client_port"), text(s, "client_vip"),
               ep(s, "server", "server_port"), text(s, "server_vip"), text(s, "live"), text(s, "shard"),
               age ? span(*age) : "-"});
  }
  t.print();
  return 0;
}

int cmd_cpam_rotations() {
  Params q;
  add(q, "limit", g_ctl_opts.limit);
  auto j = fetch("/cpam/rotations", q);
  if (!j) return g_exit;
  Table t({{"EPOCH", R}, {"TIME"}, {"MS", R}, {"HOSTS", R}, {"ROTATED", R}, {"PREINST", R}, {"FAILED", R},
           {"CONFIRMED"}, {"EXHAUSTED", R}, {"GRACE", R}, {"QUARANT", R}, {"FREE", R}});
  for (const auto& e : list(*j)) {
    const Json& r = at(e, "value").is_object() ? at(e, "value") : e;  // an archive record or the bare value
    t.add_row({text(r, "epoch"), iso(at(r, "time_ms")), text(r, "duration_ms"), text(r, "hosts"), text(r, "rotated"),
               text(r, "preinstalled"), text(r, "preinstall_failed"), text(r, "preinstall_confirmed"),
               text(r, "pool_exhausted"), text(r, "grace"), text(r, "quarantine"), text(r, "free")});
  }
  t.print();
  return 0;
}

int cmd_cpam_rotate() {
  auto j = fetch("/cpam/rotate", {}, "POST");
  if (j) fmt::print("rotation started (epoch {} before it)\n", text(*j, "epoch"));
  return g_exit;
}

// ---- ids and mitigation ----

int cmd_ids() {
  auto j = fetch("/ids");
  if (!j) return g_exit;
  const Json& d = at(*j, "detector");
  Table t({{""}, {""}});
  if (d.is_object()) {
    t.add_row({"phase", text(d, "phase")});
    t.add_row({"packets", text(d, "processed")});
    t.add_row({"threshold", fmt::format("{} ({})", text(d, "threshold"), text(d, "threshold_source"))});
    t.add_row({"model", fmt::format("{} features, {} autoencoders", text(d, "features"), text(d, "autoencoders"))});
    for (const auto& [k, v] : at(d, "counters").items()) t.add_row({"ids." + k, text(v)});
  } else {
    t.add_row({"detector", "not running"});
  }
  for (const auto& [k, v] : at(*j, "sampler").items()) t.add_row({"sampler." + k, text(v)});
  t.print();
  fmt::print("\nsuspects\n");
  Table s({{"MAC"}, {"IP"}, {"SCORE", R}, {"THRESHOLD", R}, {"DETECTED"}});
  for (const auto& x : list(at(*j, "suspects")))
    s.add_row({text(x, "mac"), text(x, "ip"), text(x, "score"), text(x, "threshold"), from_now(ns_to_ms(at(x, "detected_ns")))});
  s.print();
  return 0;
}

int cmd_blocks() {
  auto j = fetch("/mitigation/blocks");
  if (!j) return g_exit;
  Table t({{"MAC"}, {"IP"}, {"REASON"}, {"OFFENCE", R}, {"TIMEOUT_S", R}, {"SWITCHES", R}, {"EXPIRES"}, {"COOKIE"}});
  for (const auto& b : list(*j))
    t.add_row({text(b, "mac"), text(b, "ip"), text(b, "reason"), text(b, "offence"), text(b, "hard_timeout_s"),
               text(b, "switches"), from_now(ns_to_ms(at(b, "expires_ns"))), text(b, "cookie")});
  t.print();
  return 0;
}

int cmd_block() {
  Json body = {{"mac", g_ctl_opts.mac}};
  if (!g_ctl_opts.ip.empty()) body["ip"] = g_ctl_opts.ip;
  if (g_ctl_opts.duration) body["duration_s"] = *g_ctl_opts.duration;
  auto j = fetch("/mitigation/blocks", {}, "POST", &body);
  if (j) fmt::print("blocked {} on {} switch(es) for {} s\n", text(*j, "mac"), text(*j, "switches"), text(*j, "hard_timeout_s"));
  return g_exit;
}

int cmd_unblock() {
  auto j = fetch("/mitigation/blocks/" + seg(g_ctl_opts.mac), {}, "DELETE");
  if (j) fmt::print("unblocked {}: rules deleted on {} switch(es)\n", text(*j, "mac"), text(*j, "removed_from"));
  return g_exit;
}

// "key=value" -> JSON: integers, true/false, other numbers, else the text itself.
Json setting_value(const std::string& v) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc() && p == v.data() + v.size()) return n;
  if (v == "true" || v == "false") return v == "true";
  Json j = Json::parse(v, nullptr, false);
  return j.is_number() ? j : Json(v);
}

int cmd_cpam_config() {
  Json body = Json::object();
  for (const auto& s : g_ctl_opts.sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      fmt::print(stderr, "sdnator ctl: --set wants key=value, got '{}'\n", s);
      return 2;
    }
    body[s.substr(0, eq)] = setting_value(s.substr(eq + 1));
  }
  auto j = body.empty() ? fetch("/cpam/config") : fetch("/cpam/config", {}, "PATCH", &body);
  if (!j) return g_exit;
  Table t({{"SETTING"}, {"VALUE"}});  // mixed: numbers, addresses, names
  for (const auto& [k, v] : fields(*j).items()) t.add_row({k, text(v)});
  t.print();
  return 0;
}

int cmd_apps() {
  auto j = fetch("/apps");
  if (!j) return g_exit;
  const Json& apps = j->is_array() ? *j : at(*j, "apps");
  Table t({{"APP"}, {"COUNTER"}, {"VALUE", R}});
  for (const auto& a : list(apps)) {
    std::string name = text(a, "name");
    const Json& c = at(a, "counters");
    if (!c.is_object() || c.empty()) t.add_row({name, "-", text(c)});
    for (const auto& [k, v] : fields(c).items()) {
      t.add_row({name, k, text(v)});
      name.clear();  // the name on the first row of its group only
    }
  }
  t.print();
  const Json& co = at(*j, "coordinator");
  if (!co.is_object()) {
    fmt::print("\ncoordinator: {}\n", co.is_null() ? "not in this process" : text(co));
    return 0;
  }
  std::map<std::pair<std::string, std::string>, std::size_t> assigned;
  for (const auto& s : list(at(co, "assignments")))
    assigned[{text(s, "app_id"), text(s, "instance")}] = list(at(s, "assignments")).size();
  fmt::print("\ncoordinator: epoch {}, {} instance(s)\n", text(co, "epoch"), list(at(co, "instances")).size());
  Table i({{"APP"}, {"INSTANCE"}, {"STATUS"}, {"ACTIVE"}, {"ROLES"}, {"SEEN", R}, {"ASSIGNED", R}});
  for (const auto& x : list(at(co, "instances"))) {
    auto it = assigned.find({text(x, "app_id"), text(x, "instance")});
    i.add_row({text(x, "app_id"), text(x, "instance"), text(x, "status"), text(x, "active"),
               text(at(x, "registration"), "roles"), from_now(ns_to_ms(at(x, "last_seen_ns"))),
               it == assigned.end() ? "-" : std::to_string(it->second)});
  }
  i.print();
  const Json& uns = list(at(co, "unsatisfied"));
  if (!uns.empty()) {
    fmt::print("\nunsatisfied interests ({})\n", uns.size());
    Table u({{"CONSUMER"}, {"KEY"}, {"PRODUCER"}, {"WANTED", R}, {"CAPPED", R}});
    for (const auto& x : uns)
      u.add_row({text(x, "consumer"), text(x, "key"), text(x, "producer"), text(x, "wanted"), text(x, "capped")});
    u.print();
  }
  return 0;
}

// GET /cluster: this instance, its Redis, the members, who masters which switch, leaderships.
int cmd_cluster() {
  auto j = fetch("/cluster");
  if (!j) return g_exit;
  if (at(*j, "enabled") != true) {
    fmt::print("cluster: not enabled (this controller runs on its own; see [cluster] in the config)\n");
    return 0;
  }
  const Json& redis = at(*j, "redis");
  Table t({{""}, {""}});
  t.add_row({"instance", fmt::format("{} (cluster {})", text(*j, "instance_id"), text(*j, "name"))});
  t.add_row({"redis", fmt::format("{} {}", at(redis, "connected") == true ? "connected to" : "NOT connected, last",
                                  text(redis, "address"))});
  std::string members;
  for (const auto& m : list(at(*j, "members"))) members += (members.empty() ? "" : ", ") + text(m);
  t.add_row({"members", fmt::format("{} ({})", list(at(*j, "members")).size(), members)});
  t.add_row({"masters here", std::to_string(fields(at(*j, "masters")).size())});
  std::string leaders;
  for (const auto& [k, v] : fields(at(*j, "leaderships")).items())
    leaders += fmt::format("{}{}: {}", leaders.empty() ? "" : ", ", k, text(v));
  t.add_row({"leaderships", leaders.empty() ? "-" : leaders});
  t.print();
  fmt::print("\n");
  Table sw({{"DPID"}, {"ROLE HERE"}, {"GENERATION", R}, {"MASTER"}});
  for (const auto& [dpid, v] : fields(at(*j, "switches")).items())
    sw.add_row({dpid, text(v, "role"), text(v, "generation"), text(v, "owner")});
  sw.print();
  fmt::print("\n");
  Table c({{"COUNTER"}, {"VALUE", R}});
  for (const auto& [k, v] : fields(at(*j, "counters")).items()) c.add_row({k, text(v)});
  c.print();
  return 0;
}

int cmd_keys() {
  Params q;
  add(q, "pattern", g_ctl_opts.pattern);
  add(q, "limit", g_ctl_opts.limit);
  auto j = fetch("/keys", q);
  if (!j) return g_exit;
  record_table(*j, true, true, kLineWidth).print();
  return 0;
}

int cmd_key() {
  auto j = fetch("/keys/latest", {{"key", g_ctl_opts.key}});
  if (!j) return g_exit;
  const Json ms = ns_to_ms(at(*j, "ts_ns"));
  Table t({{""}, {""}});
  t.add_row({"key", text(*j, "key")});
  t.add_row({"producer", text(*j, "app_id") + (at(*j, "instance").is_string() ? " / " + text(*j, "instance") : "")});
  t.add_row({"time", fmt::format("{} ({})", iso(ms), from_now(ms))});
  t.add_row({"seq", text(*j, "seq")});
  t.print();
  fmt::print("value:\n");
  print_json(at(*j, "value"));
  return 0;
}

int cmd_history() {
  Params q{{"key", g_ctl_opts.key}};
  add(q, "latest", g_ctl_opts.latest);
  add(q, "limit", g_ctl_opts.limit);
  add(q, "from_ns", g_ctl_opts.from_ns);
  add(q, "to_ns", g_ctl_opts.to_ns);
  auto j = fetch("/history", q);
  if (!j) return g_exit;
  std::set<std::string> keys;
  for (const auto& r : list(*j)) keys.insert(text(r, "key"));
  record_table(*j, keys.size() > 1, false, kLineWidth).print();
  return 0;
}

int cmd_metrics() {
  auto j = fetch("/metrics");
  if (!j) return g_exit;
  const Json& reg = at(*j, "counters").is_object() ? *j : at(*j, "metrics");  // flat, or as in the stats file
  const Json& c = at(reg, "counters");
  Table t({{"METRIC"}, {"VALUE", R}});
  t.add_row({"messages in", text(c, "southbound.rx.msgs")});
  t.add_row({"messages out", text(c, "southbound.tx.msgs")});
  t.add_row({"packet-ins", text(c, "southbound.rx.packet_in")});
  t.add_row({"flow-mods out", text(c, "southbound.tx.flow_mod")});
  t.add_row({"connections accepted/closed",
             text(c, "southbound.connections.accepted") + "/" + text(c, "southbound.connections.closed")});
  uint64_t errors = 0;
  std::vector<std::pair<std::string, std::string>> nonzero;
  constexpr std::string_view kErr = "southbound.errors.";
  for (const auto& [k, v] : fields(c).items()) {
    if (k.rfind(kErr, 0) != 0 || integer(v).value_or(0) == 0) continue;
    errors += static_cast<uint64_t>(*integer(v));
    nonzero.emplace_back("  " + k.substr(kErr.size()), text(v));
  }
  t.add_row({"southbound errors", std::to_string(errors)});
  for (auto& e : nonzero) t.add_row({e.first, e.second});
  for (const auto& [name, label] :
       {std::pair{"cpam.rppt", "RPPT"}, std::pair{"southbound.packet_in.service", "packet-in service"}}) {
    const Json& h = at(at(reg, "histograms"), name);
    if (integer(at(h, "count")).value_or(0) == 0) {
      t.add_row({fmt::format("{} p50/p99", label), "-"});
      continue;
    }
    t.add_row({fmt::format("{} p50/p99 (n={})", label, text(h, "count")),
               fmt::format("{:.1f}/{:.1f} us", number(at(h, "p50_us")).value_or(0),
                           number(at(h, "p99_us")).value_or(0))});
  }
  const Json& proc = at(*j, "process").is_object() ? at(*j, "process") : *j;
  if (auto rss = number(at(proc, "rss_bytes"))) t.add_row({"rss", fmt::format("{:.1f} MiB", *rss / 1048576)});
  if (!at(proc, "threads").is_null()) t.add_row({"threads", text(proc, "threads")});
  t.print();
  return 0;
}

// ---- registration ---------------------------------------------------------------------------

CLI::App* cmd(CLI::App* parent, const char* name, const char* help, int (*fn)()) {
  auto* c = parent->add_subcommand(name, help);
  g_cmds.emplace_back(c, fn);
  return c;
}
void dpid_arg(CLI::App* c) {
  c->add_option("dpid", g_ctl_opts.dpid, "datapath id (16 hex digits, 1, 0x1 or 00:..:01)")->required();
}
void filter_opts(CLI::App* c) {
  c->add_option("--match", g_ctl_opts.match, "ovs-ofctl match, e.g. in_port=1,ip,nw_dst=10.0.0.2");
  c->add_option("--table", g_ctl_opts.table, "table id");
  c->add_option("--cookie", g_ctl_opts.cookie, "cookie 0x.. or 0x../0xmask");
  c->add_option("--out-port", g_ctl_opts.out_port, "output port");
  c->add_option("--priority", g_ctl_opts.priority, "exact priority");
}

}  // namespace

void add_ctl_subcommand(CLI::App& app) {
  g_ctl = app.add_subcommand("ctl", "query and drive a running controller over its REST API");
  g_ctl->require_subcommand(1);
  g_ctl->fallthrough();  // global options may also follow the subcommand (inherited)
  g_ctl->add_option("--url", g_ctl_opts.url, "API base URL (default http://127.0.0.1:8080)")->envname("SDNATOR_URL");
  g_ctl->add_option("--token", g_ctl_opts.token, "bearer token for the API")->envname("SDNATOR_TOKEN");
  g_ctl->add_option("--cacert", g_ctl_opts.cacert, "HTTPS: CA certificate (PEM) the server's must chain to")
      ->envname("SDNATOR_CACERT")->check(CLI::ExistingFile);
  g_ctl->add_option("--cert", g_ctl_opts.cert, "HTTPS: client certificate (PEM), when the API asks for one")
      ->envname("SDNATOR_CERT")->check(CLI::ExistingFile);
  g_ctl->add_option("--key", g_ctl_opts.key_file, "HTTPS: the client certificate's private key (PEM)")
      ->envname("SDNATOR_KEY")->check(CLI::ExistingFile);
  g_ctl->add_flag("--json", g_ctl_opts.json, "print the server's JSON (pretty) instead of tables");
  g_ctl->add_option("--timeout", g_ctl_opts.timeout_s, "seconds to wait for the server (default 10)")
      ->check(CLI::PositiveNumber);

  cmd(g_ctl, "status", "health, switch count, CPAM epoch and next rotation", cmd_status);
  cmd(g_ctl, "switches", "connected switches", cmd_switches);
  dpid_arg(cmd(g_ctl, "switch", "one switch: features and ports", cmd_switch));
  dpid_arg(cmd(g_ctl, "ports", "a switch's ports with their counters", cmd_ports));
  auto* flows = cmd(g_ctl, "flows", "a switch's flows, one ovs-ofctl dump-flows line each", cmd_flows);
  dpid_arg(flows);
  filter_opts(flows);
  auto* add_c = cmd(g_ctl, "flow-add", "add a flow (answers once the switch confirmed it)", cmd_flow_add);
  dpid_arg(add_c);
  add_c->add_option("--match", g_ctl_opts.match, "ovs-ofctl match, e.g. in_port=1,ip")->required();
  add_c->add_option("--actions", g_ctl_opts.actions, "ovs-ofctl actions, e.g. output:2")->required();
  add_c->add_option("--priority", g_ctl_opts.priority, "priority (server default when absent)");
  add_c->add_option("--table", g_ctl_opts.table, "table id");
  add_c->add_option("--idle", g_ctl_opts.idle, "idle timeout, s");
  add_c->add_option("--hard", g_ctl_opts.hard, "hard timeout, s");
  add_c->add_option("--cookie", g_ctl_opts.cookie, "cookie (decimal or 0x hex)");
  add_c->add_flag("--send-flow-rem", g_ctl_opts.send_flow_rem, "set OFPFF_SEND_FLOW_REM");
  add_c->add_flag("--check-overlap", g_ctl_opts.check_overlap, "set OFPFF_CHECK_OVERLAP");
  auto* del = cmd(g_ctl, "flow-del", "delete flows matching the filters", cmd_flow_del);
  dpid_arg(del);
  filter_opts(del);
  del->add_flag("--strict", g_ctl_opts.strict, "DELETE_STRICT: exact match and priority")->needs("--priority");
  cmd(g_ctl, "topology", "switches with port roles, links, hosts", cmd_topology)
      ->add_option("--hosts", g_ctl_opts.hosts, "show at most N hosts (0 = all)");

  auto* cpam = g_ctl->add_subcommand("cpam", "the CPAM app (address mutation)");
  cpam->require_subcommand(1);
  cmd(cpam, "status", "epoch, timing, VIP states, counters", cmd_cpam_status);
  cmd(cpam, "mapping", "the current host -> VIP mapping", cmd_cpam_mapping);
  auto* vips = cmd(cpam, "vips", "VIPs with their state and references", cmd_cpam_vips);
  vips->add_option("--state", g_ctl_opts.state, "free, reserved, primary, grace or quarantine");
  vips->add_option("--limit", g_ctl_opts.limit, "at most N (server default 1000)");
  cmd(cpam, "sessions", "bound sessions", cmd_cpam_sessions)
      ->add_option("--limit", g_ctl_opts.limit, "at most N (server default 1000)");
  cmd(cpam, "rotations", "rotation history, newest last", cmd_cpam_rotations)
      ->add_option("--limit", g_ctl_opts.limit, "at most N (server default 50)");
  cmd(cpam, "rotate", "rotate now", cmd_cpam_rotate);
  cmd(cpam, "config", "show the [cpam] values in effect, or change some with --set", cmd_cpam_config)
      ->add_option("--set", g_ctl_opts.sets, "key=value (repeatable; numbers sent as integers)");

  cmd(g_ctl, "ids", "the intrusion detector's state, the sampler's counters, the latest suspects", cmd_ids);
  cmd(g_ctl, "blocks", "the mitigation app's drop rules in force", cmd_blocks);
  auto* blk = cmd(g_ctl, "block", "drop a MAC's traffic on every switch (answers once all confirmed)", cmd_block);
  blk->add_option("mac", g_ctl_opts.mac, "source MAC")->required();
  blk->add_option("--ip", g_ctl_opts.ip, "its IPv4 address (needed with [mitigation] match = \"ip\")");
  blk->add_option("--duration", g_ctl_opts.duration, "hard timeout, s (default by offence)");
  cmd(g_ctl, "unblock", "lift a block (its rules deleted on every switch)", cmd_unblock)
      ->add_option("mac", g_ctl_opts.mac, "source MAC")->required();
  cmd(g_ctl, "apps", "app counters and the Coordinator's instances", cmd_apps);
  cmd(g_ctl, "cluster", "cluster members, who masters each switch, leaderships, lease counters", cmd_cluster);
  auto* keys = cmd(g_ctl, "keys", "latest value of every key matching a pattern", cmd_keys);
  keys->add_option("pattern", g_ctl_opts.pattern, "DUE pattern (server default **)");
  keys->add_option("--limit", g_ctl_opts.limit, "at most N (server default 1000)");
  cmd(g_ctl, "key", "latest value of one key", cmd_key)->add_option("key", g_ctl_opts.key, "concrete key")->required();
  auto* hist = cmd(g_ctl, "history", "archived values of a key (Data Archives)", cmd_history);
  hist->add_option("key", g_ctl_opts.key, "key or pattern")->required();
  hist->add_option("--latest", g_ctl_opts.latest, "only the newest N");
  hist->add_option("--limit", g_ctl_opts.limit, "at most N");
  hist->add_option("--from-ns", g_ctl_opts.from_ns, "timestamp >= (ns since the epoch)");
  hist->add_option("--to-ns", g_ctl_opts.to_ns, "timestamp < (ns since the epoch)");
  cmd(g_ctl, "metrics", "headline figures: messages, packet-ins, errors, RPPT", cmd_metrics);
}

int run_ctl() {
  if (!g_ctl || !g_ctl->parsed()) return -1;
  for (const auto& [sub, fn] : g_cmds) {
    if (!sub->parsed()) continue;
    if (!open_client()) return 2;
    try {
      return fn();
    } catch (const std::exception& e) {  // a JSON shape no accessor above foresaw
      fmt::print(stderr, "sdnator ctl: cannot render the answer: {}\n", e.what());
      return 1;
    }
  }
  return 2;
}

}  // namespace sdn::bin
