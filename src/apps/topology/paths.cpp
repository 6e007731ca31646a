// The path engine: graph edits with per-destination tree invalidation, lazy BFS trees with the
// deterministic tie-break, and the eagerly rebuilt broadcast spanning tree.
#include "apps/topology/paths.hpp"

#include <algorithm>
#include <tuple>

namespace sdn::apps::topology {

Link make_link(PortRef x, PortRef y) { return x < y ? Link{x, y} : Link{y, x}; }

// ---- graph edits ----

uint32_t PathEngine::ensure_switch(uint64_t dpid) {
  if (auto it = index_.find(dpid); it != index_.end()) return it->second;
  uint32_t i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    i = static_cast<uint32_t>(sw_.size());
    sw_.emplace_back();
    trees_.emplace_back();
  }
  sw_[i].dpid = dpid;
  sw_[i].present = true;
  index_.emplace(dpid, i);
  sorted_.insert(std::lower_bound(sorted_.begin(), sorted_.end(), dpid), dpid);
  // An isolated switch is unreachable in every tree, which is what a tree built before it says
  // (its index is past the tree's end, or was left unreachable when its previous owner went).
  return i;
}

bool PathEngine::add_switch(uint64_t dpid) {
  if (has_switch(dpid)) return false;
  ensure_switch(dpid);
  finish_edit();
  return true;
}

bool PathEngine::remove_switch(uint64_t dpid) {
  auto it = index_.find(dpid);
  if (it == index_.end()) return false;
  const uint32_t i = it->second;
  while (!sw_[i].edges.empty()) {
    const Edge e = sw_[i].edges.back();
    unlink({dpid, e.port}, {sw_[e.nbr].dpid, e.nbr_port});
  }
  // With its links gone, the switch is unreachable in every kept tree (a tree that reached it
  // used its next-hop link and was dropped), so reusing the index later needs no cleanup there.
  drop_tree(i);
  if (trees_[i].nodes.capacity() > 0) --allocated_;
  trees_[i] = Tree{};  // release the memory; it is rebuilt if the index is reused
  sw_[i].present = false;
  sw_[i].edges.clear();
  index_.erase(it);
  sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), dpid));
  free_.push_back(i);
  finish_edit();
  return true;
}

bool PathEngine::add_link(Link l) {
  l = make_link(l.a, l.b);
  if (l.a == l.b) return false;
  if (auto p = peer_.find(l.a); p != peer_.end() && p->second == l.b) return false;
  for (const PortRef& end : {l.a, l.b}) {
    if (auto p = peer_.find(end); p != peer_.end()) unlink(end, p->second);
  }
  link(l.a, l.b);
  finish_edit();
  return true;
}

bool PathEngine::remove_link(Link l) {
  auto p = peer_.find(l.a);
  if (p == peer_.end() || p->second != l.b) return false;
  unlink(l.a, l.b);
  finish_edit();
  return true;
}

bool PathEngine::remove_port(PortRef port) {
  auto p = peer_.find(port);
  if (p == peer_.end()) return false;
  unlink(port, p->second);
  finish_edit();
  return true;
}

// Adding link (u,v) to G gives G'. For a destination d write D for dist_d in G.
//  * D(u) == D(v) (both finite, or both unreachable): the tree stays exact. Every edge of G' has
//    |D(x) - D(y)| <= 1 (the new one has 0), and D(d) = 0, so D is a lower bound on distances in
//    G' (walk any path: D drops by at most 1 per hop); G' only adds edges, so it is also an upper
//    bound, hence dist' == D everywhere (if both were unreachable, d's component is unchanged).
//    The tie-break at x chooses among edges to neighbours at D(x) - 1; the new edge joins no such
//    set (its ends are at equal distance), every other set is unchanged, so every choice is too.
//  * |D(u) - D(v)| == 1: distances stay the same by the argument above, but the new edge joins
//    the candidate set of the farther end and may win its tie-break (a lower neighbour dpid or
//    port at equal distance), so the tree is dropped.
//  * larger difference, or one end unreachable: distances shrink; dropped.
void PathEngine::link(PortRef a, PortRef b) {
  const uint32_t ia = ensure_switch(a.dpid), ib = ensure_switch(b.dpid);
  for (uint32_t d = 0; d < trees_.size(); ++d) {
    const Tree& t = trees_[d];
    if (t.valid && dist_in(t, ia) != dist_in(t, ib)) drop_tree(d);
  }
  sw_[ia].edges.push_back({a.port, ib, b.port});
  sw_[ib].edges.push_back({b.port, ia, a.port});
  peer_[a] = b;
  peer_[b] = a;
}

// Removing link (u,v): a tree whose next hop at u and at v is not this link keeps all its paths,
// so no distance grows, and none shrinks in a subgraph; each switch's candidate set at most loses
// this link, which was not its minimum, so every choice stands. Only trees using it are dropped.
void PathEngine::unlink(PortRef a, PortRef b) {
  const uint32_t ia = index_.at(a.dpid), ib = index_.at(b.dpid);
  auto uses = [](const Tree& t, uint32_t sw, uint32_t port) {
    if (sw >= t.nodes.size()) return false;
    const Node& n = t.nodes[sw];
    return n.dist != kUnreachable && n.dist != 0 && n.out_port == port;
  };
  for (uint32_t d = 0; d < trees_.size(); ++d) {
    const Tree& t = trees_[d];
    if (t.valid && (uses(t, ia, a.port) || uses(t, ib, b.port))) drop_tree(d);
  }
  erase_edge(ia, a.port);
  erase_edge(ib, b.port);
  peer_.erase(a);
  peer_.erase(b);
}

void PathEngine::erase_edge(uint32_t sw, uint32_t port) {
  auto& edges = sw_[sw].edges;
  auto it = std::find_if(edges.begin(), edges.end(), [port](const Edge& e) { return e.port == port; });
  if (it == edges.end()) return;
  *it = edges.back();
  edges.pop_back();
}

void PathEngine::drop_tree(uint32_t dst) {
  if (!trees_[dst].valid) return;
  trees_[dst].valid = false;  // keeps the node vector's capacity for the rebuild
  --valid_trees_;
  ++stats_.trees_invalidated;
}

// Trees cannot be built during an edit, so the valid ones at its end are the ones it kept.
void PathEngine::finish_edit() {
  ++version_;
  ++stats_.changes;
  stats_.trees_kept += valid_trees_;
  rebuild_spanning_tree();
}

// ---- views ----

std::optional<PortRef> PathEngine::peer(PortRef p) const {
  auto it = peer_.find(p);
  if (it == peer_.end()) return std::nullopt;
  return it->second;
}

std::vector<Link> PathEngine::links() const {
  std::vector<Link> out;
  out.reserve(link_count());
  for (const auto& [p, q] : peer_) {
    if (p < q) out.push_back({p, q});
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint32_t> PathEngine::tree_ports(uint64_t dpid) const {
  std::vector<uint32_t> out;
  auto it = index_.find(dpid);
  if (it == index_.end()) return out;
  for (const Edge& e : sw_[it->second].edges) {
    if (tree_ports_.contains(PortRef{dpid, e.port})) out.push_back(e.port);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---- shortest paths ----

const PathEngine::Tree& PathEngine::tree(uint32_t dst) const {
  Tree& t = trees_[dst];
  if (!t.valid) {
    if (t.nodes.capacity() == 0) make_room(dst, t);
    build_tree(dst, t);
  }
  t.used = true;
  return t;
}

// A tree about to be built without memory of its own: within the budget it allocates; past it,
// it takes the node vector of the first tree the clock hand finds unused since its last pass
// (a dropped tree's at once, a valid one's after a second chance).
void PathEngine::make_room(uint32_t dst, Tree& t) const {
  const size_t per_tree = std::max<size_t>(1, sw_.size()) * sizeof(Node);
  const size_t limit = std::max(kMinTrees, cache_bytes_ / per_tree);
  if (allocated_ < limit) {
    ++allocated_;
    return;
  }
  for (size_t steps = 0; steps < 2 * trees_.size() + 1; ++steps) {
    const size_t i = hand_;
    hand_ = (hand_ + 1) % trees_.size();
    Tree& v = trees_[i];
    if (i == dst || v.nodes.capacity() == 0) continue;
    if (v.valid && v.used) {
      v.used = false;
      continue;
    }
    if (v.valid) {
      v.valid = false;
      --valid_trees_;
      ++stats_.trees_evicted;
    }
    t.nodes = std::move(v.nodes);
    v.nodes = std::vector<Node>();
    return;
  }
  ++allocated_;  // nothing to take (cannot happen with limit >= 1): allocate
}

// BFS from the destination (links are undirected, so the reverse graph is the graph). All
// switches at distance k are dequeued before any at k + 1, so each switch at k + 1 sees every
// candidate next hop at k and keeps the lowest (neighbour dpid, local port).
void PathEngine::build_tree(uint32_t dst, Tree& t) const {
  t.nodes.assign(sw_.size(), Node{});
  t.nodes[dst].dist = 0;
  queue_.clear();
  queue_.push_back(dst);
  for (size_t head = 0; head < queue_.size(); ++head) {
    const uint32_t x = queue_[head];
    const uint32_t d = t.nodes[x].dist + 1;
    const uint64_t x_dpid = sw_[x].dpid;
    for (const Edge& e : sw_[x].edges) {
      Node& y = t.nodes[e.nbr];
      const Node via{d, e.nbr_port, x, e.port};
      if (y.dist == kUnreachable) {
        y = via;
        queue_.push_back(e.nbr);
      } else if (y.dist == d && std::tie(x_dpid, e.nbr_port) < std::tie(sw_[y.next].dpid, y.out_port)) {
        y = via;
      }
    }
  }
  t.valid = true;
  ++valid_trees_;
  ++stats_.trees_computed;
}

std::optional<uint32_t> PathEngine::next_port(uint64_t src, uint64_t dst) const {
  if (src == dst) return std::nullopt;
  auto s = index_.find(src), d = index_.find(dst);
  if (s == index_.end() || d == index_.end()) return std::nullopt;
  const Tree& t = tree(d->second);
  if (dist_in(t, s->second) == kUnreachable) return std::nullopt;
  return t.nodes[s->second].out_port;
}

std::optional<uint32_t> PathEngine::distance(uint64_t src, uint64_t dst) const {
  auto s = index_.find(src), d = index_.find(dst);
  if (s == index_.end() || d == index_.end()) return std::nullopt;
  if (src == dst) return 0;
  const uint32_t dist = dist_in(tree(d->second), s->second);
  if (dist == kUnreachable) return std::nullopt;
  return dist;
}

std::optional<std::vector<Hop>> PathEngine::path(PortRef from, PortRef to) const {
  auto s = index_.find(from.dpid), d = index_.find(to.dpid);
  if (s == index_.end() || d == index_.end()) return std::nullopt;
  if (from.dpid == to.dpid) return std::vector<Hop>{{from.dpid, from.port, to.port}};
  const Tree& t = tree(d->second);
  uint32_t at = s->second;
  const uint32_t dist = dist_in(t, at);
  if (dist == kUnreachable) return std::nullopt;
  std::vector<Hop> hops;
  hops.reserve(dist + 1);
  uint32_t in_port = from.port;
  while (at != d->second) {
    const Node& n = t.nodes[at];
    hops.push_back({sw_[at].dpid, in_port, n.out_port});
    in_port = n.next_in_port;
    at = n.next;
  }
  hops.push_back({to.dpid, in_port, to.port});
  return hops;
}

// ---- spanning tree ----

// Components are rooted in ascending dpid order, so each root is its component's lowest dpid.
// As in build_tree, a switch at level k + 1 sees every parent candidate at level k.
void PathEngine::rebuild_spanning_tree() {
  tree_ports_.clear();
  struct Parent {
    uint32_t sw = 0;
    uint32_t port = 0;        // on the parent
    uint32_t child_port = 0;  // on the child
  };
  std::vector<uint32_t> level(sw_.size(), kUnreachable);
  std::vector<Parent> parent(sw_.size());
  std::vector<uint32_t> order;
  order.reserve(sw_.size());
  for (uint64_t root_dpid : sorted_) {
    const uint32_t root = index_.at(root_dpid);
    if (level[root] != kUnreachable) continue;
    level[root] = 0;
    const size_t first = order.size();
    order.push_back(root);
    for (size_t head = first; head < order.size(); ++head) {
      const uint32_t x = order[head];
      for (const Edge& e : sw_[x].edges) {
        const uint32_t y = e.nbr;
        if (level[y] == kUnreachable) {
          level[y] = level[x] + 1;
          parent[y] = {x, e.port, e.nbr_port};
          order.push_back(y);
        } else if (level[y] == level[x] + 1 &&
                   std::tie(sw_[x].dpid, e.port) < std::tie(sw_[parent[y].sw].dpid, parent[y].port)) {
          parent[y] = {x, e.port, e.nbr_port};
        }
      }
    }
    for (size_t k = first + 1; k < order.size(); ++k) {
      const uint32_t y = order[k];
      tree_ports_.insert(PortRef{sw_[y].dpid, parent[y].child_port});
      tree_ports_.insert(PortRef{sw_[parent[y].sw].dpid, parent[y].port});
    }
  }
}

}  // namespace sdn::apps::topology
