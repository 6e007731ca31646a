// GET /api/v1/fleet: the additive-manufacturing fleet (src/apps/fleet/) as one document, built
// from the last-value cache: each printer's state, twins and sensors, the fleet twin, the run and
// the latest scheduling decision. Read-only; the fleet apps may run in this process or elsewhere.
#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <vector>

#include "northbound/server_internal.hpp"

namespace sdn::northbound {

namespace {

// Sized so that one reply stays a dashboard's worth (the fleet twin counts them all anyway).
constexpr size_t kMaxPrinters = 1000;
constexpr size_t kMaxNameLength = 128;
constexpr std::string_view kFleet = "fleet/";

// Per-printer keys ("fleet/<p>/<suffix>"): those with a field are passed through under it; the
// others only say that <p> is a printer. Keys with other suffixes (fleet/twin/fleet,
// fleet/jobs/returned) are not printers.
struct PrinterKey {
  std::string_view suffix;
  const char* field;  // null: names the printer, not shown
};
constexpr std::array<PrinterKey, 10> kPrinterKeys = {{{"state", "state"},
                                                      {"twin/machine", "machine"},
                                                      {"twin/queue", "queue"},
                                                      {"twin/anomaly", "anomaly"},
                                                      {"sensors/hotend", "hotend"},
                                                      {"sensors/bed", "bed"},
                                                      {"job", nullptr},
                                                      {"queue", nullptr},
                                                      {"events", nullptr},
                                                      {"command", nullptr}}};

std::string_view bare_key(const std::string& key) { return std::string_view(key).substr(0, key.find('@')); }

Json value_of(const data::RecordPtr& r) { return r && r->value.is_json() ? r->value.json() : Json(); }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Natural order, so that "um3-9" comes before "um3-10": runs of digits compare by value, the rest
// byte by byte; names equal but for leading zeros fall back to plain order (a strict weak order).
bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      const size_t i0 = i, j0 = j;
      while (i < a.size() && is_digit(a[i])) ++i;
      while (j < b.size() && is_digit(b[j])) ++j;
      auto significant = [](std::string_view d) {
        const auto k = d.find_first_not_of('0');
        return k == std::string_view::npos ? std::string_view() : d.substr(k);
      };
      const std::string_view x = significant(a.substr(i0, i - i0)), y = significant(b.substr(j0, j - j0));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i, ++j;
  }
  if (i == a.size() && j == b.size()) return a < b;
  return i == a.size();
}

// Splits "fleet/<p>/<suffix>" (bare key); false for fleet-wide keys.
bool printer_key(std::string_view bare, std::string_view& name, const PrinterKey*& which) {
  if (!bare.starts_with(kFleet)) return false;
  bare.remove_prefix(kFleet.size());
  const auto slash = bare.find('/');
  if (slash == 0 || slash == std::string_view::npos) return false;
  const std::string_view suffix = bare.substr(slash + 1);
  for (const auto& k : kPrinterKeys)
    if (k.suffix == suffix) {
      name = bare.substr(0, slash);
      which = &k;
      return true;
    }
  return false;
}

// nullopt: the cache holds no fleet/ key.
std::optional<Json> fleet_json(Server::Impl& s) {
  // The lock is held only while the record pointers are copied (cached()); the rest runs on the
  // copies, which keep their records alive.
  const std::vector<data::RecordPtr> recs = s.cached(kFleet);
  if (recs.empty()) return std::nullopt;

  // One record per bare key: the newest of its producers.
  std::map<std::string_view, data::RecordPtr, std::less<>> newest;
  for (const auto& r : recs) {
    auto [it, fresh] = newest.try_emplace(bare_key(r->key), r);
    if (!fresh && r->ts_ns > it->second->ts_ns) it->second = r;
  }
  auto get = [&](std::string_view bare) {
    const auto it = newest.find(bare);
    return it == newest.end() ? data::RecordPtr() : it->second;
  };

  // The simulated time of the newest record that carries one.
  Json sim_min;
  int64_t sim_ts = 0;
  std::set<std::string_view> names;
  std::map<std::string_view, std::vector<std::pair<const char*, data::RecordPtr>>> slots;
  for (const auto& [bare, r] : newest) {
    if (r->value.is_json() && r->value.json().is_object()) {
      const Json& v = r->value.json();
      if (const auto it = v.find("sim_min"); it != v.end() && it->is_number() && (sim_min.is_null() || r->ts_ns >= sim_ts)) {
        sim_min = *it;
        sim_ts = r->ts_ns;
      }
    }
    std::string_view name;
    const PrinterKey* which = nullptr;
    if (!printer_key(bare, name, which)) continue;
    names.insert(name);
    if (which->field) slots[name].emplace_back(which->field, r);
  }
  // fleet/printers names printers that have published nothing yet.
  const data::RecordPtr roster = get("fleet/printers");
  const Json roster_v = value_of(roster);
  if (roster_v.is_object())
    if (const auto it = roster_v.find("printers"); it != roster_v.end() && it->is_array())
      for (const auto& p : *it) {
        const auto n = p.is_object() ? p.find("name") : p.end();
        const Json& name = n != p.end() ? *n : p;  // {"name", "port"}, or just the name
        if (!name.is_string()) continue;
        const auto& text = name.get_ref<const std::string&>();
        if (!text.empty() && text.size() <= kMaxNameLength && text.find('/') == std::string::npos) names.insert(text);
      }

  std::vector<std::string_view> order(names.begin(), names.end());
  std::sort(order.begin(), order.end(), natural_less);
  const bool truncated = order.size() > kMaxPrinters;
  if (truncated) order.resize(kMaxPrinters);

  Json printers = Json::array();
  for (const auto name : order) {
    Json p{{"name", name}, {"state", nullptr}, {"machine", nullptr}, {"queue", nullptr},
           {"anomaly", nullptr}, {"hotend", nullptr}, {"bed", nullptr}};
    if (const auto it = slots.find(name); it != slots.end())
      for (const auto& [field, r] : it->second) p[field] = value_of(r);
    printers.push_back(std::move(p));
  }
  return Json{{"sim_min", std::move(sim_min)},
              {"fleet", value_of(get("fleet/twin/fleet"))},
              {"run", value_of(get("fleet/run"))},
              {"decision", value_of(get("fleet/decisions"))},
              {"printers", std::move(printers)},
              {"truncated", truncated}};
}

}  // namespace

void add_fleet_routes(Server::Impl& s) {
  s.http.Get("/api/v1/fleet", [&s](const httplib::Request& req, httplib::Response& res) {
    if (auto ok = only_params(req, {}); !ok) return reply_error(res, ok.error());
    auto j = fleet_json(s);
    if (!j) return reply_error(res, ApiError{404, "no fleet data"});
    reply_json(res, 200, *j);
  });
}

}  // namespace sdn::northbound
