// Shortest paths and a broadcast spanning tree over the switch graph, for reactive forwarding.
// Pure and single-threaded: one lazily built shortest-path tree per destination, and an edit drops
// only the trees it can affect, so per-flow lookups stay O(path length) between topology changes.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

namespace sdn::apps::topology {

struct PortRef {
  uint64_t dpid = 0;
  uint32_t port = 0;
  auto operator<=>(const PortRef&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const PortRef& p) {
    return H::combine(std::move(h), p.dpid, p.port);
  }
};

// An undirected switch-to-switch link; normalized so that a < b (see make_link).
struct Link {
  PortRef a, b;
  auto operator<=>(const Link&) const = default;
};

Link make_link(PortRef x, PortRef y);

// One switch on a path: the packet enters on in_port and leaves on out_port.
struct Hop {
  uint64_t dpid = 0;
  uint32_t in_port = 0;
  uint32_t out_port = 0;
  bool operator==(const Hop&) const = default;
};

// Shortest paths by hop count with a deterministic tie-break: at each switch, among the next hops
// at equal distance, the lowest neighbour dpid, then the lowest local port. The answer depends on
// the graph only, never on the order of the edits that built it.
class PathEngine {
 public:
  // Graph edits; each returns true if the graph changed.
  bool add_switch(uint64_t dpid);
  bool remove_switch(uint64_t dpid);  // its links go too
  // Adds missing switches. A port carries at most one link: a link on an already linked port
  // replaces the old link(s) on either port. A link from a port to itself is refused (false).
  bool add_link(Link l);
  bool remove_link(Link l);           // l need not be normalized
  bool remove_port(PortRef p);        // the link on p, if any

  bool has_switch(uint64_t dpid) const { return index_.contains(dpid); }
  bool is_link_port(PortRef p) const { return peer_.contains(p); }
  std::optional<PortRef> peer(PortRef p) const;
  std::vector<Link> links() const;                             // sorted
  std::vector<uint64_t> switches() const { return sorted_; }   // sorted
  size_t link_count() const { return peer_.size() / 2; }

  // The first port out of src towards dst (src != dst); nullopt if unreachable, unknown or equal.
  std::optional<uint32_t> next_port(uint64_t src, uint64_t dst) const;
  // Hops from src to dst, 0 for src == dst; nullopt if unreachable or unknown.
  std::optional<uint32_t> distance(uint64_t src, uint64_t dst) const;
  // The path entering the fabric at `from` and leaving at `to`, one Hop per switch:
  // first.in_port = from.port, last.out_port = to.port, every other in_port is the peer of the
  // previous hop's out_port. from.dpid == to.dpid gives one hop. nullopt if unreachable/unknown.
  std::optional<std::vector<Hop>> path(PortRef from, PortRef to) const;

  // A spanning tree of every connected component, for loop-free flooding: BFS from the lowest
  // dpid of the component, each switch attached to its parent by the lowest (parent dpid, parent
  // port) link at the shortest distance. Recomputed on every change.
  bool is_tree_port(PortRef p) const { return tree_ports_.contains(p); }
  std::vector<uint32_t> tree_ports(uint64_t dpid) const;  // sorted link ports of dpid in the tree

  struct Stats {
    uint64_t changes = 0;            // edits that changed the graph
    uint64_t trees_computed = 0;     // per-destination shortest-path trees (re)computed
    uint64_t trees_invalidated = 0;  // trees dropped by an edit
    uint64_t trees_kept = 0;         // trees an edit provably did not affect (incremental win)
    uint64_t trees_evicted = 0;      // trees given up to stay within the cache's bytes
  };
  Stats stats() const { return stats_; }
  uint64_t version() const { return version_; }  // bumps on every change

  // The trees' memory: one tree is 16 B per switch, and one per destination switch would be
  // O(switches^2) (91 MB for the 2,388 switches of the 100,000-host campus, in every view).
  // Past `bytes` of trees (never fewer than kMinTrees), a new tree takes the memory of one not
  // used since the clock hand last passed it. kDefaultCacheBytes holds every tree up to 724
  // switches.
  static constexpr size_t kDefaultCacheBytes = 8u << 20;
  static constexpr size_t kMinTrees = 16;
  void set_cache_bytes(size_t bytes) { cache_bytes_ = bytes; }
  size_t allocated_trees() const { return allocated_; }

 private:
  static constexpr uint32_t kUnreachable = std::numeric_limits<uint32_t>::max();

  struct Edge {
    uint32_t port = 0;      // local port
    uint32_t nbr = 0;       // switch index of the peer
    uint32_t nbr_port = 0;  // the peer's port
  };
  struct Switch {
    uint64_t dpid = 0;
    bool present = false;
    std::vector<Edge> edges;  // unordered: every choice below is a minimum, not "the first"
  };
  // One switch's entry in the tree towards a destination.
  struct Node {
    uint32_t dist = kUnreachable;
    uint32_t out_port = 0;      // local port of the next hop
    uint32_t next = 0;          // switch index of the next hop
    uint32_t next_in_port = 0;  // the port the next hop receives on
  };
  struct Tree {
    bool valid = false;
    mutable bool used = false;  // since the clock hand last passed
    std::vector<Node> nodes;    // by switch index; indices past the end are unreachable
  };

  uint32_t ensure_switch(uint64_t dpid);
  void link(PortRef a, PortRef b);    // both ports free
  void unlink(PortRef a, PortRef b);  // an existing link
  void erase_edge(uint32_t sw, uint32_t port);
  void drop_tree(uint32_t dst);
  void finish_edit();
  void rebuild_spanning_tree();
  const Tree& tree(uint32_t dst) const;
  void build_tree(uint32_t dst, Tree& t) const;
  void make_room(uint32_t dst, Tree& t) const;
  static uint32_t dist_in(const Tree& t, uint32_t sw) {
    return sw < t.nodes.size() ? t.nodes[sw].dist : kUnreachable;
  }

  // Switches by dense index; a removed switch's index is reused (free_).
  std::vector<Switch> sw_;
  std::vector<uint32_t> free_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;  // dpid -> index
  std::vector<uint64_t> sorted_;                   // present dpids, sorted
  absl::flat_hash_map<PortRef, PortRef> peer_;     // both directions of every link
  absl::flat_hash_set<PortRef> tree_ports_;
  // Query caches: one shortest-path tree per destination index, built on first use.
  mutable std::vector<Tree> trees_;
  mutable std::vector<uint32_t> queue_;  // BFS scratch, reused
  mutable size_t valid_trees_ = 0;
  mutable size_t allocated_ = 0;  // trees holding node memory (valid or kept for a rebuild)
  mutable size_t hand_ = 0;       // the clock hand over trees_
  size_t cache_bytes_ = kDefaultCacheBytes;
  mutable Stats stats_;
  uint64_t version_ = 0;
};

}  // namespace sdn::apps::topology
