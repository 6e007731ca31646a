// libFuzzer target for the ovs-ofctl syntax the REST API accepts. The first byte picks the
// input: 0 a match, 1 "match\nactions", 2 a JSON flow body (add and filter). Aborts only on a
// broken invariant: what parses prints back to text that parses to the same structs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "northbound/flow_syntax.hpp"

namespace {

using namespace sdn::northbound;

void require(bool ok) {
  if (!ok) std::abort();
}

void round_trip_match(const sdn::ofp::Match& m) {
  auto again = parse_match(format_match(m));
  require(again.has_value() && *again == m);
}

void round_trip_actions(const sdn::ofp::InstructionList& i, const sdn::ofp::Match& m) {
  auto again = parse_actions(format_actions(i), m);
  require(again.has_value() && *again == i);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      if (auto m = parse_match(text)) round_trip_match(*m);
      break;
    }
    case 1: {
      const auto nl = text.find('\n');
      auto m = parse_match(text.substr(0, nl));
      if (!m) break;
      round_trip_match(*m);
      if (nl == std::string_view::npos) break;
      if (auto a = parse_actions(text.substr(nl + 1), *m)) round_trip_actions(*a, *m);
      break;
    }
    default: {
      const auto j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded()) break;
      if (auto fm = flow_add_from_json(j)) {
        round_trip_match(fm->match);
        round_trip_actions(fm->instructions, fm->match);
      }
      if (auto f = flow_filter_from_json(j)) {
        (void)f->to_stats_request();
        (void)f->to_delete();
      }
      break;
    }
  }
  return 0;
}
