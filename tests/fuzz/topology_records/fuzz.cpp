// Fuzzes the topology records a consumer reads off Data Updates (which may come from another
// process over Redis): the input is "KEY\nJSON". Anything that decodes must encode back to a
// record that decodes to the same thing, and applying any sequence of records to a
// TopologyView must keep it consistent (flood ports never include the in_port, paths only use
// known links).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "apps/topology/view.hpp"
#include "apps/topology/wire.hpp"

using namespace sdn::apps::topology;

namespace {

template <class R>
void round_trip(std::string_view key, const R& r) {
  auto again = decode(key, to_json(r));
  if (!again || !*again || !std::holds_alternative<R>(**again)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TopologyView view;  // state carried across inputs, like a long-lived consumer
  if (view.switches().size() > 32) view = TopologyView{};  // keep the all-pairs checks cheap
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  const std::string_view key = in.substr(0, nl);
  auto json = nlohmann::json::parse(in.substr(nl + 1), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  auto rec = view.apply(key, json);
  if (!rec || !*rec) return 0;
  std::visit([&](const auto& r) { round_trip(key, r); }, **rec);
  for (uint64_t dpid : view.switches()) {
    for (uint32_t p = 0; p < 8; ++p)
      for (uint32_t out : view.flood_ports(dpid, p))
        if (out == p) std::abort();
    for (uint64_t other : view.switches()) {
      auto path = view.paths().path(PortRef{dpid, 1}, PortRef{other, 2});
      if (!path) continue;
      if (path->front().dpid != dpid || path->back().dpid != other) std::abort();
      for (size_t i = 0; i + 1 < path->size(); ++i) {
        auto peer = view.paths().peer(PortRef{(*path)[i].dpid, (*path)[i].out_port});
        if (!peer || peer->dpid != (*path)[i + 1].dpid || peer->port != (*path)[i + 1].in_port) std::abort();
      }
    }
  }
  return 0;
}
