// /api/v1/switches...: the connected switches, their ports with statistics, and their flow
// tables (list with filters, add, delete) in ovs-ofctl's match and action syntax.
#include <future>
#include <map>

#include <fmt/format.h>

#include "northbound/flow_syntax.hpp"
#include "northbound/server_internal.hpp"
#include "southbound/controller.hpp"

namespace sdn::northbound {

namespace {

constexpr const char* kDpidRoute = R"(/api/v1/switches/([^/]+))";

Expected<uint64_t, ApiError> dpid_of(const httplib::Request& req) {
  auto d = parse_dpid(req.matches[1].str());
  if (!d) return unexpected(ApiError{400, fmt::format("'{}' is not a datapath id (hex)", req.matches[1].str()), "dpid"});
  return *d;
}

ApiError field_error(const FieldError& e) { return ApiError{400, e.message, e.field}; }

Json port_json(const ofp::Port& p) {
  const bool down = (p.config & ofp::kPortConfigPortDown) || (p.state & ofp::kPortStateLinkDown);
  return {{"port_no", p.port_no},   {"name", p.name},   {"hw_addr", mac_string(p.hw_addr)}, {"up", !down},
          {"config", p.config},     {"state", p.state}, {"curr_speed_kbps", p.curr_speed}};
}

Json flow_json(const ofp::FlowStats& f) {
  return {{"table", f.table_id},
          {"priority", f.priority},
          {"cookie", fmt::format("0x{:x}", f.cookie)},
          {"duration_s", f.duration_sec + f.duration_nsec / 1e9},
          {"idle_timeout", f.idle_timeout},
          {"hard_timeout", f.hard_timeout},
          {"flags", f.flags},
          {"packets", f.packet_count},
          {"bytes", f.byte_count},
          {"match", format_match(f.match)},
          {"actions", format_actions(f.instructions)},
          {"text", format_flow(f)}};
}

// The switch's flows that `filter` selects (the switch filters by table, match, cookie and
// out_port; priority and strictness are applied here).
Expected<std::vector<ofp::FlowStats>, ApiError> list_flows(Server::Impl& s, uint64_t dpid, const FlowFilter& filter) {
  ofp::MultipartRequest mp;
  mp.type = ofp::MultipartType::kFlow;
  mp.body = filter.to_stats_request();
  auto replies = s.round_trip(dpid, mp);
  if (!replies) return unexpected(replies.error());
  std::vector<ofp::FlowStats> out;
  for (const auto& m : *replies)
    if (const auto* rep = std::get_if<ofp::MultipartReply>(&m.body))
      if (const auto* flows = std::get_if<std::vector<ofp::FlowStats>>(&rep->body))
        for (const auto& f : *flows)
          if (filter.accepts(f)) out.push_back(f);
  return out;
}

}  // namespace

void add_switch_routes(Server::Impl& s) {
  auto& http = s.http;

  http.Get("/api/v1/switches", [&s](const httplib::Request&, httplib::Response& res) {
    Json out = Json::array();
    for (const auto& sw : s.src.controller->switches())
      out.push_back({{"dpid", dpid_hex(sw.dpid)}, {"peer", sw.peer}, {"shard", sw.shard}, {"n_ports", sw.ports},
                     {"role", southbound::role_name(sw.role)}});
    reply_json(res, 200, out);
  });

  http.Get(std::string(kDpidRoute), [&s](const httplib::Request& req, httplib::Response& res) {
    auto dpid = dpid_of(req);
    if (!dpid) return reply_error(res, dpid.error());
    Json info;
    const bool up = [&] {
      // Features and ports are read on the switch's shard (they belong to its connection).
      auto done = std::make_shared<std::promise<Json>>();
      auto fut = done->get_future();
      if (!s.src.controller->with_switch(*dpid, [done](southbound::SwitchContext& sw) {
            const auto& f = sw.features();
            Json ports = Json::array();
            for (const auto& p : sw.ports()) ports.push_back(port_json(p));
            done->set_value({{"dpid", dpid_hex(sw.dpid())},
                             {"n_tables", f.n_tables},
                             {"n_buffers", f.n_buffers},
                             {"capabilities", f.capabilities},
                             {"ports", std::move(ports)}});
          }))
        return false;
      if (fut.wait_for(s.cfg.request_timeout) != std::future_status::ready) return false;
      info = fut.get();
      return true;
    }();
    if (!up) return reply_error(res, ApiError{404, fmt::format("no switch {} is connected", dpid_hex(*dpid)), "dpid"});
    for (const auto& sw : s.src.controller->switches())
      if (sw.dpid == *dpid) {
        info["peer"] = sw.peer;
        info["shard"] = sw.shard;
      }
    reply_json(res, 200, info);
  });

  http.Get(std::string(kDpidRoute) + "/ports", [&s](const httplib::Request& req, httplib::Response& res) {
    auto dpid = dpid_of(req);
    if (!dpid) return reply_error(res, dpid.error());
    ofp::MultipartRequest desc;
    desc.type = ofp::MultipartType::kPortDesc;
    auto d = s.round_trip(*dpid, desc);
    if (!d) return reply_error(res, d.error());
    ofp::MultipartRequest stats;
    stats.type = ofp::MultipartType::kPortStats;
    stats.body = ofp::PortStatsRequest{};
    auto st = s.round_trip(*dpid, stats);
    if (!st) return reply_error(res, st.error());
    std::map<uint32_t, Json> by_port;
    for (const auto& m : *d)
      if (const auto* rep = std::get_if<ofp::MultipartReply>(&m.body))
        if (const auto* ports = std::get_if<std::vector<ofp::Port>>(&rep->body))
          for (const auto& p : *ports) by_port[p.port_no] = port_json(p);
    for (const auto& m : *st)
      if (const auto* rep = std::get_if<ofp::MultipartReply>(&m.body))
        if (const auto* ps = std::get_if<std::vector<ofp::PortStats>>(&rep->body))
          for (const auto& p : *ps) {
            auto& j = by_port[p.port_no];
            if (!j.contains("port_no")) j["port_no"] = p.port_no;
            j["stats"] = {{"rx_packets", p.rx_packets}, {"tx_packets", p.tx_packets}, {"rx_bytes", p.rx_bytes},
                          {"tx_bytes", p.tx_bytes},     {"rx_dropped", p.rx_dropped}, {"tx_dropped", p.tx_dropped},
                          {"rx_errors", p.rx_errors},   {"tx_errors", p.tx_errors},
                          {"duration_s", p.duration_sec + p.duration_nsec / 1e9}};
          }
    Json out = Json::array();
    for (auto& [no, j] : by_port) out.push_back(std::move(j));
    reply_json(res, 200, out);
  });

  http.Get(std::string(kDpidRoute) + "/flows", [&s](const httplib::Request& req, httplib::Response& res) {
    auto dpid = dpid_of(req);
    if (!dpid) return reply_error(res, dpid.error());
    auto filter = flow_filter_from_json(query_object(req));
    if (!filter) return reply_error(res, field_error(filter.error()));
    auto flows = list_flows(s, *dpid, *filter);
    if (!flows) return reply_error(res, flows.error());
    Json out = Json::array();
    for (const auto& f : *flows) out.push_back(flow_json(f));
    reply_json(res, 200, out);
  });

  http.Post(std::string(kDpidRoute) + "/flows", [&s](const httplib::Request& req, httplib::Response& res) {
    auto dpid = dpid_of(req);
    if (!dpid) return reply_error(res, dpid.error());
    auto body = body_object(req);
    if (!body) return reply_error(res, body.error());
    auto fm = flow_add_from_json(*body);
    if (!fm) return reply_error(res, field_error(fm.error()));
    ofp::FlowStats shown;
    shown.table_id = fm->table_id;
    shown.priority = fm->priority;
    shown.idle_timeout = fm->idle_timeout;
    shown.hard_timeout = fm->hard_timeout;
    shown.cookie = fm->cookie;
    shown.flags = fm->flags;
    shown.match = fm->match;
    shown.instructions = fm->instructions;
    if (auto r = s.send_batch(*dpid, {*fm}); !r) return reply_error(res, r.error());
    Json flow = flow_json(shown);
    flow.erase("duration_s");
    flow.erase("packets");
    flow.erase("bytes");
    flow.erase("text");
    reply_json(res, 201, {{"ok", true}, {"dpid", dpid_hex(*dpid)}, {"flow", flow}});
  });

  http.Delete(std::string(kDpidRoute) + "/flows", [&s](const httplib::Request& req, httplib::Response& res) {
    auto dpid = dpid_of(req);
    if (!dpid) return reply_error(res, dpid.error());
    auto body = body_object(req);
    if (!body) return reply_error(res, body.error());
    Json spec = query_object(req);
    for (const auto& [k, v] : body->items()) spec[k] = v;
    auto filter = flow_filter_from_json(spec);
    if (!filter) return reply_error(res, field_error(filter.error()));
    // What is about to go, for the count; then one DELETE (non-strict semantics as OpenFlow
    // defines them), or one DELETE_STRICT per selected flow when a priority narrows it.
    auto flows = list_flows(s, *dpid, *filter);
    if (!flows) return reply_error(res, flows.error());
    std::vector<ofp::Body> batch;
    if (filter->priority && !filter->strict) {
      for (const auto& f : *flows) {
        ofp::FlowMod del;
        del.command = ofp::FlowModCommand::kDeleteStrict;
        del.table_id = f.table_id;
        del.priority = f.priority;
        del.match = f.match;
        del.cookie = f.cookie;
        del.cookie_mask = ~uint64_t{0};
        batch.emplace_back(std::move(del));
      }
    } else {
      batch.emplace_back(filter->to_delete());
    }
    if (!batch.empty())
      if (auto r = s.send_batch(*dpid, std::move(batch)); !r) return reply_error(res, r.error());
    reply_json(res, 200, {{"ok", true}, {"dpid", dpid_hex(*dpid)}, {"deleted", flows->size()}});
  });
}

}  // namespace sdn::northbound
