// Rendering for `sdnator ctl` (ctl.cpp): the Table printer and JSON -> cell text conversions that
// accept any shape the server might send.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <ctime>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bin/ctl.hpp"

namespace sdn::bin {

using namespace ctlfmt;

std::vector<std::size_t> Table::widths() const {
  std::vector<std::size_t> w;
  for (const auto& c : cols_) w.push_back(text_width(c.title));
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < w.size() && i < r.size(); ++i) w[i] = std::max(w[i], text_width(r[i]));
  return w;
}

void Table::print(std::FILE* out) const {
  if (cols_.empty()) return;
  auto w = widths();
  std::size_t before = 0;
  for (std::size_t i = 0; i + 1 < w.size(); ++i) before += w[i] + 2;
  if (max_width_ > 0)  // at least 20 for the last column, even when that overflows
    w.back() = std::min(w.back(), std::max<std::size_t>(max_width_ - std::min(max_width_, before), 20));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < cols_.size(); ++i) {
      std::string c = i < cells.size() ? cells[i] : std::string();
      if (i + 1 == cols_.size()) c = cut(c, w[i]);
      const std::size_t pad = w[i] - std::min(w[i], text_width(c));
      if (cols_[i].align == Align::kRight) s.append(pad, ' ');
      s += c;
      if (cols_[i].align == Align::kLeft) s.append(pad, ' ');
      s += "  ";
    }
    s.erase(s.find_last_not_of(' ') + 1);
    s += '\n';
    std::fwrite(s.data(), 1, s.size(), out);
  };
  std::vector<std::string> titles;
  for (const auto& c : cols_) titles.push_back(c.title);
  if (std::any_of(titles.begin(), titles.end(), [](const std::string& t) { return !t.empty(); })) line(titles);
  for (const auto& r : rows_) line(r);
  if (rows_.empty()) std::fputs("(none)\n", out);
}

namespace ctlfmt {

// ---- text ------------------------------------------------------------------------------------

std::size_t text_width(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// `s` cut to `w` code points, the last three of them "..." when something was cut.
std::string cut(std::string_view s, std::size_t w) {
  if (text_width(s) <= w) return std::string(s);
  if (w <= 3) return std::string(w, '.');
  std::size_t i = 0, n = 0;
  for (; i < s.size(); ++i)
    if ((s[i] & 0xC0) != 0x80 && n++ == w - 3) break;
  return std::string(s.substr(0, i)) + "...";
}

namespace {
const Json kNull;
const Json kEmpty = Json::array();
const Json kNoFields = Json::object();
}  // namespace

const Json& at(const Json& j, const char* k) {
  if (!j.is_object()) return kNull;
  auto it = j.find(k);
  return it == j.end() ? kNull : *it;
}
const Json& list(const Json& j) { return j.is_array() ? j : kEmpty; }
const Json& fields(const Json& j) { return j.is_object() ? j : kNoFields; }
std::string compact(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::optional<int64_t> integer(const Json& v) {
  if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number() && std::abs(v.get<double>()) < 9e18) return static_cast<int64_t>(v.get<double>());
  return std::nullopt;
}
std::optional<double> number(const Json& v) { return v.is_number() ? std::optional(v.get<double>()) : std::nullopt; }

// One cell: strings as they are, numbers in full, yes/no, "-" for nothing.
std::string text(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_structured() && v.empty()) return "-";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::abs(d) < 1e12 ? fmt::format("{:.2f}", d) : fmt::format("{:g}", d);
  }
  if (v.is_array() && std::none_of(v.begin(), v.end(), [](const Json& e) { return e.is_structured(); })) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ",") + text(e);
    return s;
  }
  return compact(v);
}
std::string text(const Json& j, const char* k) { return text(at(j, k)); }
std::string updown(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? "up" : "down") : text(v); }
// "k=v k=v" for a flat object (the CPAM counters, a rotation record).
std::string inline_kv(const Json& o) {
  if (!o.is_object()) return text(o);
  std::string s;
  for (const auto& [k, v] : o.items()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, text(v));
  return s;
}

// ---- time and units -------------------------------------------------------------------------

namespace {
int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string span(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  const auto t = static_cast<int64_t>(s);
  if (t < 3600) return fmt::format("{} m {} s", t / 60, t % 60);
  if (t < 86400) return fmt::format("{} h {} m", t / 3600, t % 3600 / 60);
  return fmt::format("{} d {} h", t / 86400, t % 86400 / 3600);
}
std::string from_now(const Json& ms) {
  auto v = integer(ms);
  if (!v || *v <= 0) return "-";
  const double d = static_cast<double>(*v - now_ms()) / 1000.0;
  return d >= 0 ? "in " + span(d) : span(-d) + " ago";
}
std::string iso(const Json& ms) {
  auto v = integer(ms);
  if (!v || *v < 0) return text(ms);
  const std::time_t t = static_cast<std::time_t>(*v / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, *v % 1000);
}
Json ns_to_ms(const Json& ns) {
  auto v = integer(ns);
  return v ? Json(*v / 1'000'000) : kNull;
}
std::string speed(const Json& kbps) {
  auto v = integer(kbps);
  if (!v) return text(kbps);
  if (*v >= 1'000'000 && *v % 1'000'000 == 0) return fmt::format("{}G", *v / 1'000'000);
  if (*v >= 1000 && *v % 1000 == 0) return fmt::format("{}M", *v / 1000);
  return fmt::format("{}k", *v);
}
std::string port_name(const Json& p) {
  auto v = integer(p);
  if (v && *v == 0xfffffffe) return "LOCAL";
  if (v && *v == 0xfffffffd) return "CONTROLLER";
  return text(p);
}

// Port numbers grouped by role, runs compressed: "edge 1-4,7  link 5,6".
std::string ports_by_role(const Json& ports) {
  std::map<std::string, std::vector<int64_t>> by;
  std::map<std::string, std::vector<std::string>> odd;  // ports that are not numbers, as they came
  for (const auto& p : list(ports)) {
    if (auto n = integer(at(p, "port")))
      by[text(p, "role")].push_back(*n);
    else
      odd[text(p, "role")].push_back(text(p, "port"));
  }
  std::string out;
  for (auto& [role, v] : by) {
    std::sort(v.begin(), v.end());
    std::string runs;
    for (std::size_t i = 0; i < v.size();) {
      std::size_t k = i;
      while (k + 1 < v.size() && v[k + 1] == v[k] + 1) ++k;
      runs += (runs.empty() ? "" : ",") + (k > i + 1 ? fmt::format("{}-{}", v[i], v[k]) : std::to_string(v[i]));
      if (k == i + 1) runs += "," + std::to_string(v[k]);
      i = k + 1;
    }
    for (const auto& o : odd[role]) runs += "," + o;
    out += fmt::format("{}{} {}", out.empty() ? "" : "  ", role, runs);
  }
  for (const auto& [role, v] : odd)
    if (!by.count(role)) out += fmt::format("{}{} {}", out.empty() ? "" : "  ", role, fmt::join(v, ","));
  return out.empty() ? "-" : out;
}

Table port_table(const Json& ports) {
  constexpr auto R = Table::Align::kRight;
  Table t({{"PORT", R}, {"NAME"}, {"HW_ADDR"}, {"LINK"}, {"SPEED", R}, {"RX_PKTS", R}, {"TX_PKTS", R},
           {"RX_BYTES", R}, {"TX_BYTES", R}, {"DROP_RX/TX", R}, {"ERR_RX/TX", R}});
  for (const auto& p : list(ports)) {
    const Json& s = at(p, "stats");
    t.add_row({port_name(at(p, "port_no")), text(p, "name"), text(p, "hw_addr"), updown(at(p, "up")),
               speed(at(p, "curr_speed_kbps")), text(s, "rx_packets"), text(s, "tx_packets"), text(s, "rx_bytes"),
               text(s, "tx_bytes"), text(s, "rx_dropped") + "/" + text(s, "tx_dropped"),
               text(s, "rx_errors") + "/" + text(s, "tx_errors")});
  }
  return t;
}

Table record_table(const Json& rows, bool with_key, bool age, std::size_t max_width) {
  constexpr auto R = Table::Align::kRight, L = Table::Align::kLeft;
  std::vector<Table::Column> cols{{"APP"}, {age ? "AGE" : "TIME", age ? R : L}, {"SEQ", R}, {"VALUE"}};
  if (with_key) cols.insert(cols.begin(), {"KEY"});
  Table t(std::move(cols));
  t.set_max_width(max_width);
  for (const auto& r : list(rows)) {
    std::vector<std::string> cells;
    if (with_key) {  // without the "@app" the APP column shows anyway
      std::string k = text(r, "key");
      const std::string suffix = "@" + text(r, "app_id");
      if (k.ends_with(suffix)) k.resize(k.size() - suffix.size());
      cells.push_back(std::move(k));
    }
    const Json ms = ns_to_ms(at(r, "ts_ns"));
    std::string when = age ? from_now(ms) : iso(ms);
    if (age && when.ends_with(" ago")) when.resize(when.size() - 4);
    cells.insert(cells.end(), {text(r, "app_id"), when, text(r, "seq"), compact(at(r, "value"))});
    t.add_row(std::move(cells));
  }
  return t;
}

// One ovs-ofctl dump-flows line: the server's `text`, else one built from the fields present
// (POST's answer has no duration or counters).
std::string flow_line(const Json& f) {
  if (at(f, "text").is_string()) return at(f, "text").get<std::string>();
  std::string s;
  auto put = [&s](const char* name, const std::string& v) {
    s += fmt::format("{}{}={}", s.empty() ? " " : ", ", name, v);
  };
  const Json& c = at(f, "cookie");
  if (!c.is_null()) put("cookie", c.is_number_integer() ? fmt::format("{:#x}", c.get<uint64_t>()) : text(c));
  if (auto d = number(at(f, "duration_s"))) put("duration", fmt::format("{:.3f}s", *d));
  for (const auto& [k, name] : {std::pair{"table", "table"}, std::pair{"packets", "n_packets"},
                                std::pair{"bytes", "n_bytes"}, std::pair{"idle_timeout", "idle_timeout"},
                                std::pair{"hard_timeout", "hard_timeout"}})
    if (!at(f, k).is_null() && !(std::string_view(k).ends_with("_timeout") && integer(at(f, k)) == 0))
      put(name, text(f, k));
  put("priority", text(f, "priority"));
  const std::string m = text(f, "match");
  return s + (m == "-" || m.empty() ? "" : "," + m) + " actions=" + text(f, "actions");
}

Table host_table(const Json& hosts, std::size_t limit) {
  std::vector<const Json*> v;
  for (const auto& h : list(hosts)) v.push_back(&h);
  // Grouped by where they attach: one switch's hosts together, in port order.
  std::stable_sort(v.begin(), v.end(), [](const Json* a, const Json* b) {
    auto key = [](const Json* h) {
      return std::pair(text(at(*h, "at"), "dpid"), integer(at(at(*h, "at"), "port")).value_or(-1));
    };
    return key(a) < key(b);
  });
  Table t({{"MAC"}, {"IPV4"}, {"SWITCH"}, {"PORT", Table::Align::kRight}, {"STATE"}});
  for (std::size_t i = 0; i < v.size() && i < limit; ++i) {
    const Json& a = at(*v[i], "at");
    t.add_row({text(*v[i], "mac"), text(*v[i], "ipv4"), text(a, "dpid"), text(a, "port"), text(*v[i], "state")});
  }
  return t;
}

}  // namespace ctlfmt
}  // namespace sdn::bin
