// `sdnator ctl ...`: a command-line client over the northbound REST API (src/northbound/README.md),
// printing aligned tables for people and, with --json, the server's JSON for scripts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

namespace sdn::bin {

// Adds "ctl" and its subcommands to `app`; after parsing, run_ctl() runs the chosen one and
// returns its exit status (0 ok, 1 the server answered an error, 2 usage or transport), or -1
// when `ctl` was not on the command line.
void add_ctl_subcommand(CLI::App& app);
int run_ctl();

// A text table: a header row, then rows, columns padded to their widest cell and two spaces
// apart. Widths count UTF-8 code points; the last column is not padded (no trailing blanks).
// An empty table prints its header and "(none)".
class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit Table(std::vector<Column> columns) : cols_(std::move(columns)) {}
  // Missing cells print empty; cells beyond the columns are ignored.
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::size_t rows() const { return rows_.size(); }
  // Lines longer than `w` get their last column cut short, ending in "..." (0 = no limit).
  void set_max_width(std::size_t w) { max_width_ = w; }
  void print(std::FILE* out = stdout) const;

 private:
  std::vector<std::size_t> widths() const;

  std::vector<Column> cols_;
  std::vector<std::vector<std::string>> rows_;
  std::size_t max_width_ = 0;
};

// JSON -> cell text for ctl's tables (ctl_format.cpp). Each accepts any JSON shape: a missing
// field or one of an unexpected type renders as "-", never throws.
namespace ctlfmt {

using Json = nlohmann::json;

const Json& at(const Json& j, const char* key);  // j[key], or null when absent / j not an object
const Json& list(const Json& j);                 // j when an array, else []
const Json& fields(const Json& j);               // j when an object, else {}
std::optional<int64_t> integer(const Json& v);
std::optional<double> number(const Json& v);
std::string compact(const Json& v);              // one-line dump, bad UTF-8 replaced
// Strings as they are, integers in full, floats to 2 places (huge ones %g), yes/no, scalar arrays as
// a,b,c, "-" for null and empty containers, anything else compact JSON.
std::string text(const Json& v);
std::string text(const Json& j, const char* key);
std::string updown(const Json& v);               // booleans as up/down
std::string inline_kv(const Json& o);            // "k=v k=v" for a flat object
std::string cut(std::string_view s, std::size_t width);  // ending in "..." when cut
std::size_t text_width(std::string_view s);      // UTF-8 code points

std::string span(double seconds);                // "12.3 s", "4 m 5 s", "2 h 13 m", "3 d 1 h"
std::string from_now(const Json& ms);            // epoch ms -> "in 12.3 s" / "4 m 5 s ago"
std::string iso(const Json& ms);                 // epoch ms -> 2024-05-01T12:00:00.123Z
Json ns_to_ms(const Json& ns);
std::string speed(const Json& kbps);             // 10000000 -> 10G
std::string port_name(const Json& port_no);      // reserved ports by name (LOCAL, CONTROLLER)
// Topology port list [{port, role}] -> "edge 1-4,7  link 5" (roles sorted, runs compressed).
std::string ports_by_role(const Json& ports);
// Port rows [{port_no, name, hw_addr, up, curr_speed_kbps, stats: {...}}] as a table.
Table port_table(const Json& ports);
// Data records [{key, app_id, instance, ts_ns, seq, value}], one line each, within max_width:
// with a KEY column or not, the time as an age (keys) or a time stamp (history).
Table record_table(const Json& rows, bool with_key, bool age, std::size_t max_width);
// One ovs-ofctl dump-flows line for a flow: its `text`, else one built from the fields.
std::string flow_line(const Json& flow);
// Topology hosts [{mac, ipv4, at: {dpid, port}, state}], sorted by attachment, the first `limit`.
Table host_table(const Json& hosts, std::size_t limit);

}  // namespace ctlfmt
}  // namespace sdn::bin
