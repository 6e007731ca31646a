// Rendezvous hashing with bounded loads (placement.hpp).
#include "cluster/placement.hpp"

#include <algorithm>
#include <set>

namespace sdn::cluster {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Candidates best first: higher weight, ties by id.
std::vector<std::string> ranked(uint64_t dpid, std::vector<std::string> members) {
  std::sort(members.begin(), members.end(), [dpid](const std::string& a, const std::string& b) {
    const uint64_t wa = rendezvous_weight(dpid, a);
    const uint64_t wb = rendezvous_weight(dpid, b);
    return wa != wb ? wa > wb : a > b;
  });
  members.erase(std::unique(members.begin(), members.end()), members.end());
  return members;
}

}  // namespace

uint64_t rendezvous_weight(uint64_t dpid, const std::string& member) {
  return mix(mix(dpid) ^ fnv1a(member));
}

std::string rendezvous_owner(uint64_t dpid, const std::vector<std::string>& members) {
  auto r = ranked(dpid, members);
  return r.empty() ? std::string() : r.front();
}

std::map<uint64_t, std::string> assign(const std::map<uint64_t, std::vector<std::string>>& candidates) {
  std::set<std::string> all;
  std::vector<std::pair<uint64_t, uint64_t>> order;  // (mix(dpid), dpid)
  for (const auto& [dpid, c] : candidates) {
    all.insert(c.begin(), c.end());
    order.emplace_back(mix(dpid ^ 0x5bd1e995ull), dpid);
  }
  std::sort(order.begin(), order.end());
  std::map<uint64_t, std::string> out;
  if (all.empty()) return out;
  // n = q * members + r: r members may take q + 1 switches, the others q. A cap of q + 1 for
  // everyone alone lets loads differ by more than one (4 switches over 3 members: 2/2/0).
  const std::size_t q = candidates.size() / all.size(), r = candidates.size() % all.size();
  std::size_t above = 0;  // members that took q + 1
  std::map<std::string, std::size_t> load;
  auto room = [&](const std::string& m) { return load[m] < q || (load[m] == q && above < r); };
  for (const auto& o : order) {
    const uint64_t dpid = o.second;
    auto rk = ranked(dpid, candidates.at(dpid));
    if (rk.empty()) continue;
    std::string pick = rk.front();
    for (const auto& m : rk)
      if (room(m)) {
        pick = m;
        break;
      }
    if (load[pick] == q) ++above;
    ++load[pick];
    out[dpid] = pick;
  }
  return out;
}

}  // namespace sdn::cluster
