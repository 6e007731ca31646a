// PathEngine: hand-checked small graphs (chain, tree, ring, parallel links, the dual-homed campus),
// edits and rerouting, the broadcast spanning tree, and a randomized check that the incremental
// engine answers like a fresh one built in another order and like a reference BFS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "apps/topology/paths.hpp"

namespace sdn::apps::topology {

// Readable failure messages (found by ADL, so outside the unnamed namespace).
void PrintTo(const PortRef& p, std::ostream* os) { *os << p.dpid << ":" << p.port; }
void PrintTo(const Link& l, std::ostream* os) {
  PrintTo(l.a, os);
  *os << "-";
  PrintTo(l.b, os);
}
void PrintTo(const Hop& h, std::ostream* os) { *os << "{" << h.dpid << " " << h.in_port << "->" << h.out_port << "}"; }

namespace {

using Hops = std::vector<Hop>;
using Ports = std::vector<uint32_t>;

Link L(uint64_t a, uint32_t pa, uint64_t b, uint32_t pb) { return make_link({a, pa}, {b, pb}); }

PathEngine build(const std::vector<Link>& links) {
  PathEngine e;
  for (const Link& l : links) EXPECT_TRUE(e.add_link(l));
  return e;
}

// Core 1 (ports 1, 2 to aggs 10, 11); agg port 2 + k to edge 20 + k, which has port 1 to agg 10
// and port 2 to agg 11.
PathEngine campus() {
  PathEngine e;
  e.add_link(L(1, 1, 10, 1));
  e.add_link(L(1, 2, 11, 1));
  for (uint32_t k = 0; k < 4; ++k) {
    e.add_link(L(10, 2 + k, 20 + k, 1));
    e.add_link(L(11, 2 + k, 20 + k, 2));
  }
  return e;
}

// Everything an engine answers; per-pair vectors are indexed [src * n + dst] in switches() order.
struct Answers {
  std::vector<uint64_t> switches;
  std::vector<Link> links;
  std::vector<Ports> tree_ports;  // per switch
  std::vector<std::optional<uint32_t>> next, dist;
  std::vector<std::optional<Hops>> paths;  // from (src, 100) to (dst, 200)
};

Answers answers(const PathEngine& e) {
  Answers a{e.switches(), e.links(), {}, {}, {}, {}};
  const size_t n = a.switches.size();
  a.next.reserve(n * n), a.dist.reserve(n * n), a.paths.reserve(n * n);
  for (uint64_t s : a.switches) {
    a.tree_ports.push_back(e.tree_ports(s));
    for (uint64_t d : a.switches) {
      a.next.push_back(e.next_port(s, d));
      a.dist.push_back(e.distance(s, d));
      a.paths.push_back(e.path({s, 100}, {d, 200}));
    }
  }
  return a;
}

// One failure naming the first differing pair, rather than an assertion per pair.
template <typename T>
void expect_same(const char* what, const std::vector<uint64_t>& sws, const std::vector<T>& x,
                 const std::vector<T>& y) {
  ASSERT_EQ(x.size(), y.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;
    ADD_FAILURE() << what << " " << sws[i / sws.size()] << "->" << sws[i % sws.size()] << ": "
                  << ::testing::PrintToString(x[i]) << " vs " << ::testing::PrintToString(y[i]);
    return;
  }
}

void expect_same_answers(const Answers& a, const Answers& b) {
  ASSERT_EQ(a.switches, b.switches);
  EXPECT_EQ(a.links, b.links);
  EXPECT_EQ(a.tree_ports, b.tree_ports);
  expect_same("next_port", a.switches, a.next, b.next);
  expect_same("distance", a.switches, a.dist, b.dist);
  expect_same("path", a.switches, a.paths, b.paths);
}

void expect_same_paths(const PathEngine& x, const PathEngine& y) { expect_same_answers(answers(x), answers(y)); }

// The spanning tree: each link is in or out at both ends; tree links number V - (components) and
// tree_ports lists exactly their ports; a flood from any switch over tree ports (never back out the
// in_port) reaches each switch of its component exactly once, so there is no cycle either (a
// cycle would deliver twice; V - 1 links reaching all V is a tree).
void expect_spanning_tree(const PathEngine& e) {
  const std::vector<uint64_t> sws = e.switches();
  size_t roots = 0, tree_links = 0;  // a root: no lower dpid reaches it
  for (uint64_t s : sws) {
    roots += std::none_of(sws.begin(), sws.end(), [&](uint64_t t) { return t < s && e.distance(t, s); });
  }
  std::map<uint64_t, Ports> ports;
  for (const Link& l : e.links()) {
    EXPECT_EQ(e.is_tree_port(l.a), e.is_tree_port(l.b)) << ::testing::PrintToString(l);
    if (!e.is_tree_port(l.a)) continue;
    ++tree_links;
    ports[l.a.dpid].push_back(l.a.port);
    ports[l.b.dpid].push_back(l.b.port);
  }
  EXPECT_EQ(tree_links, sws.size() - roots);
  for (uint64_t s : sws) {
    std::sort(ports[s].begin(), ports[s].end());
    EXPECT_EQ(e.tree_ports(s), ports[s]) << s;
  }
  for (uint64_t src : sws) {
    std::map<uint64_t, int> got;
    std::vector<PortRef> frontier{{src, 0}};  // 0: the frame came from a host
    while (!frontier.empty()) {
      const PortRef at = frontier.back();
      frontier.pop_back();
      if (++got[at.dpid] > 1) break;
      for (uint32_t p : e.tree_ports(at.dpid)) {
        if (p != at.port) frontier.push_back(*e.peer({at.dpid, p}));
      }
    }
    for (uint64_t s : sws) {
      if (got[s] == (e.distance(src, s) ? 1 : 0)) continue;
      ADD_FAILURE() << "a flood from " << src << " reaches " << s << " " << got[s] << " times";
      return;
    }
  }
}

TEST(PathEngine, MakeLinkNormalizes) {
  const Link l = make_link({5, 1}, {2, 9});
  EXPECT_EQ(l.a, (PortRef{2, 9}));
  EXPECT_EQ(l.b, (PortRef{5, 1}));
  EXPECT_EQ(make_link({2, 9}, {5, 1}), l);
}

TEST(PathEngine, Chain) {
  const PathEngine e = build({L(1, 2, 2, 1), L(2, 2, 3, 1), L(3, 2, 4, 1)});
  EXPECT_EQ(e.next_port(1, 4), 2u);
  EXPECT_EQ(e.next_port(2, 1), 1u);
  EXPECT_EQ(e.next_port(2, 4), 2u);
  EXPECT_EQ(e.next_port(4, 1), 1u);
  EXPECT_EQ(e.distance(1, 4), 3u);
  EXPECT_EQ(e.distance(4, 2), 2u);
  EXPECT_EQ(e.path({1, 10}, {4, 20}), (Hops{{1, 10, 2}, {2, 1, 2}, {3, 1, 2}, {4, 1, 20}}));
  EXPECT_EQ(e.path({4, 5}, {2, 6}), (Hops{{4, 5, 1}, {3, 2, 1}, {2, 2, 6}}));
  EXPECT_EQ(e.tree_ports(1), (Ports{2}));
  EXPECT_EQ(e.tree_ports(2), (Ports{1, 2}));
  expect_spanning_tree(e);
}

TEST(PathEngine, Tree) {
  //        1
  //      2   3
  //     4 5   6
  const PathEngine e = build({L(1, 1, 2, 1), L(1, 2, 3, 1), L(2, 2, 4, 1), L(2, 3, 5, 1), L(3, 2, 6, 1)});
  EXPECT_EQ(e.path({4, 9}, {6, 9}), (Hops{{4, 9, 1}, {2, 2, 1}, {1, 1, 2}, {3, 1, 2}, {6, 1, 9}}));
  EXPECT_EQ(e.distance(5, 6), 4u);
  EXPECT_EQ(e.next_port(1, 5), 1u);
  EXPECT_EQ(e.next_port(5, 4), 1u);
  EXPECT_EQ(e.next_port(2, 5), 3u);
  for (const Link& l : e.links()) EXPECT_TRUE(e.is_tree_port(l.a)) << ::testing::PrintToString(l);
  expect_spanning_tree(e);
}

TEST(PathEngine, RingBreaksTiesTowardLowestDpid) {
  // 1:1-2:1, 2:2-3:1, 3:2-4:1, 4:2-1:2; added backwards, switches first in descending order.
  PathEngine e;
  for (uint64_t s : {4, 3, 2, 1}) e.add_switch(s);
  for (const Link& l : {L(4, 2, 1, 2), L(3, 2, 4, 1), L(2, 2, 3, 1), L(1, 1, 2, 1)}) e.add_link(l);
  EXPECT_EQ(e.next_port(1, 3), 1u);  // via 2, not 4
  EXPECT_EQ(e.next_port(3, 1), 1u);  // via 2
  EXPECT_EQ(e.next_port(2, 4), 1u);  // via 1, not 3
  EXPECT_EQ(e.next_port(4, 2), 2u);  // via 1
  EXPECT_EQ(e.path({3, 7}, {1, 8}), (Hops{{3, 7, 1}, {2, 2, 1}, {1, 1, 8}}));
  EXPECT_EQ(e.path({4, 7}, {2, 8}), (Hops{{4, 7, 2}, {1, 2, 1}, {2, 1, 8}}));
  // Root 1; 3 hangs off 2 (lower than 4), so 3-4 is the link left out.
  EXPECT_EQ(e.tree_ports(1), (Ports{1, 2}));
  EXPECT_EQ(e.tree_ports(2), (Ports{1, 2}));
  EXPECT_EQ(e.tree_ports(3), (Ports{1}));
  EXPECT_EQ(e.tree_ports(4), (Ports{2}));
  EXPECT_FALSE(e.is_tree_port({3, 2}));
  EXPECT_FALSE(e.is_tree_port({4, 1}));
  expect_spanning_tree(e);
  expect_same_paths(e, build({L(1, 1, 2, 1), L(2, 2, 3, 1), L(3, 2, 4, 1), L(4, 2, 1, 2)}));
}

TEST(PathEngine, ParallelLinksUseTheLowestPort) {
  PathEngine e = build({L(1, 5, 2, 7), L(1, 3, 2, 9), L(1, 4, 2, 8)});
  EXPECT_EQ(e.next_port(1, 2), 3u);
  EXPECT_EQ(e.next_port(2, 1), 7u);  // the lowest local port, chosen at each end
  EXPECT_EQ(e.path({1, 1}, {2, 2}), (Hops{{1, 1, 3}, {2, 9, 2}}));
  EXPECT_EQ(e.path({2, 2}, {1, 1}), (Hops{{2, 2, 7}, {1, 5, 1}}));
  EXPECT_EQ(e.tree_ports(1), (Ports{3}));  // lowest parent port
  EXPECT_EQ(e.tree_ports(2), (Ports{9}));
  expect_spanning_tree(e);
  EXPECT_TRUE(e.remove_link(L(1, 3, 2, 9)));
  EXPECT_EQ(e.next_port(1, 2), 4u);
  EXPECT_EQ(e.next_port(2, 1), 7u);
  EXPECT_EQ(e.tree_ports(2), (Ports{8}));
  EXPECT_TRUE(e.remove_link(L(2, 7, 1, 5)));  // either orientation
  EXPECT_EQ(e.next_port(2, 1), 8u);
  EXPECT_EQ(e.link_count(), 1u);
}

TEST(PathEngine, CampusHandChecked) {
  const PathEngine e = campus();
  EXPECT_EQ(e.link_count(), 10u);
  EXPECT_EQ(e.next_port(20, 21), 1u);  // via agg 10
  EXPECT_EQ(e.path({20, 10}, {21, 10}), (Hops{{20, 10, 1}, {10, 2, 3}, {21, 1, 10}}));
  EXPECT_EQ(e.path({20, 10}, {1, 99}), (Hops{{20, 10, 1}, {10, 2, 1}, {1, 1, 99}}));
  EXPECT_EQ(e.path({1, 99}, {23, 10}), (Hops{{1, 99, 1}, {10, 1, 5}, {23, 1, 10}}));
  EXPECT_EQ(e.next_port(10, 11), 1u);  // via the core: dpid 1 beats edges 20..23
  EXPECT_EQ(e.path({10, 9}, {11, 9}), (Hops{{10, 9, 1}, {1, 1, 2}, {11, 1, 9}}));
  EXPECT_EQ(e.next_port(23, 10), 1u);
  EXPECT_EQ(e.next_port(23, 11), 2u);
  EXPECT_EQ(e.distance(20, 23), 2u);
  EXPECT_EQ(e.distance(1, 20), 2u);
  EXPECT_EQ(e.distance(20, 20), 0u);
  // Root 1, both aggs under it, every edge under agg 10.
  EXPECT_EQ(e.tree_ports(1), (Ports{1, 2}));
  EXPECT_EQ(e.tree_ports(10), (Ports{1, 2, 3, 4, 5}));
  EXPECT_EQ(e.tree_ports(11), (Ports{1}));
  for (uint64_t s = 20; s < 24; ++s) EXPECT_EQ(e.tree_ports(s), (Ports{1})) << s;
  expect_spanning_tree(e);
}

TEST(PathEngine, CampusRemovalReroutesAndReaddRestores) {
  PathEngine e = campus();
  EXPECT_TRUE(e.remove_link(L(10, 2, 20, 1)));
  EXPECT_EQ(e.next_port(20, 21), 2u);
  EXPECT_EQ(e.path({20, 10}, {21, 10}), (Hops{{20, 10, 2}, {11, 2, 3}, {21, 2, 10}}));
  EXPECT_EQ(e.path({1, 99}, {20, 10}), (Hops{{1, 99, 2}, {11, 1, 2}, {20, 2, 10}}));
  EXPECT_EQ(e.path({10, 9}, {20, 10}), (Hops{{10, 9, 1}, {1, 1, 2}, {11, 1, 2}, {20, 2, 10}}));
  EXPECT_EQ(e.distance(10, 20), 3u);
  for (uint64_t s : e.switches()) {
    for (uint64_t d : e.switches()) {
      auto p = e.path({s, 100}, {d, 200});
      ASSERT_TRUE(p) << s << "->" << d;
      for (const Hop& h : *p) {
        EXPECT_FALSE(h.dpid == 10 && (h.in_port == 2 || h.out_port == 2)) << s << "->" << d;
        EXPECT_FALSE(h.dpid == 20 && (h.in_port == 1 || h.out_port == 1)) << s << "->" << d;
      }
    }
  }
  EXPECT_EQ(e.tree_ports(10), (Ports{1, 3, 4, 5}));
  EXPECT_EQ(e.tree_ports(11), (Ports{1, 2}));
  EXPECT_EQ(e.tree_ports(20), (Ports{2}));
  expect_spanning_tree(e);

  EXPECT_TRUE(e.remove_port({20, 2}));  // 20 is now cut off
  EXPECT_EQ(e.next_port(1, 20), std::nullopt);
  EXPECT_EQ(e.next_port(20, 1), std::nullopt);
  EXPECT_EQ(e.distance(21, 20), std::nullopt);
  EXPECT_EQ(e.path({21, 1}, {20, 1}), std::nullopt);
  EXPECT_TRUE(e.has_switch(20));
  EXPECT_EQ(e.tree_ports(20), Ports{});
  expect_spanning_tree(e);

  EXPECT_TRUE(e.add_link(L(20, 2, 11, 2)));
  EXPECT_TRUE(e.add_link(L(20, 1, 10, 2)));
  EXPECT_EQ(e.path({20, 10}, {21, 10}), (Hops{{20, 10, 1}, {10, 2, 3}, {21, 1, 10}}));
  expect_same_paths(e, campus());
}

TEST(PathEngine, PathEdgeCases) {
  PathEngine e = build({L(1, 1, 2, 1), L(3, 1, 4, 1)});  // two components
  e.add_switch(5);
  EXPECT_EQ(e.path({5, 1}, {5, 2}), (Hops{{5, 1, 2}}));
  EXPECT_EQ(e.path({1, 3}, {1, 3}), (Hops{{1, 3, 3}}));
  EXPECT_EQ(e.path({1, 3}, {4, 2}), std::nullopt);
  EXPECT_EQ(e.path({1, 3}, {5, 2}), std::nullopt);
  EXPECT_EQ(e.path({1, 3}, {99, 2}), std::nullopt);
  EXPECT_EQ(e.path({99, 3}, {99, 2}), std::nullopt);
  EXPECT_EQ(e.next_port(1, 1), std::nullopt);
  EXPECT_EQ(e.next_port(1, 3), std::nullopt);
  EXPECT_EQ(e.next_port(1, 99), std::nullopt);
  EXPECT_EQ(e.next_port(99, 1), std::nullopt);
  EXPECT_EQ(e.distance(5, 5), 0u);
  EXPECT_EQ(e.distance(99, 99), std::nullopt);
  EXPECT_EQ(e.distance(2, 3), std::nullopt);
  EXPECT_EQ(e.tree_ports(99), Ports{});
  expect_spanning_tree(e);
}

TEST(PathEngine, APortCarriesOneLink) {
  PathEngine e;
  EXPECT_TRUE(e.add_link(L(1, 1, 2, 1)));
  EXPECT_FALSE(e.add_link(L(2, 1, 1, 1)));  // the same link
  EXPECT_TRUE(e.add_link(L(1, 1, 3, 1)));   // 1:1 moves from 2 to 3
  EXPECT_EQ(e.links(), (std::vector<Link>{L(1, 1, 3, 1)}));
  EXPECT_EQ(e.peer({1, 1}), (PortRef{3, 1}));
  EXPECT_EQ(e.peer({3, 1}), (PortRef{1, 1}));
  EXPECT_EQ(e.peer({2, 1}), std::nullopt);
  EXPECT_FALSE(e.is_link_port({2, 1}));
  EXPECT_TRUE(e.has_switch(2));
  EXPECT_EQ(e.next_port(1, 2), std::nullopt);
  EXPECT_EQ(e.next_port(1, 3), 1u);
  EXPECT_TRUE(e.add_link(L(2, 2, 4, 1)));
  EXPECT_TRUE(e.add_link(L(3, 1, 4, 1)));  // replaces 1:1-3:1 and 2:2-4:1 at once
  EXPECT_EQ(e.links(), (std::vector<Link>{L(3, 1, 4, 1)}));
  EXPECT_EQ(e.link_count(), 1u);
  EXPECT_FALSE(e.add_link(L(5, 1, 5, 1)));  // a port to itself
  EXPECT_FALSE(e.has_switch(5));
  EXPECT_TRUE(e.add_link(L(3, 2, 3, 3)));   // a looped cable: a link, but never a path or tree link
  EXPECT_EQ(e.next_port(3, 4), 1u);
  EXPECT_EQ(e.tree_ports(3), (Ports{1}));
  expect_spanning_tree(e);
}

TEST(PathEngine, RemovingASwitchRemovesItsLinks) {
  PathEngine e = build({L(1, 2, 2, 1), L(2, 2, 3, 1), L(2, 3, 3, 3), L(3, 2, 4, 1)});
  EXPECT_TRUE(e.remove_switch(2));
  EXPECT_FALSE(e.remove_switch(2));
  EXPECT_EQ(e.switches(), (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_EQ(e.links(), (std::vector<Link>{L(3, 2, 4, 1)}));
  EXPECT_EQ(e.peer({1, 2}), std::nullopt);
  EXPECT_FALSE(e.is_link_port({3, 1}));
  EXPECT_EQ(e.next_port(1, 3), std::nullopt);
  EXPECT_EQ(e.next_port(1, 2), std::nullopt);
  EXPECT_EQ(e.distance(3, 4), 1u);
  expect_spanning_tree(e);
  for (const Link& l : {L(1, 2, 2, 1), L(2, 2, 3, 1), L(2, 3, 3, 3)}) e.add_link(l);
  EXPECT_EQ(e.path({1, 10}, {4, 20}), (Hops{{1, 10, 2}, {2, 1, 2}, {3, 1, 2}, {4, 1, 20}}));
}

TEST(PathEngine, EditsReportChangesAndBumpTheVersion) {
  PathEngine e;
  EXPECT_TRUE(e.add_switch(7));
  EXPECT_FALSE(e.add_switch(7));
  EXPECT_FALSE(e.remove_link(L(7, 1, 8, 1)));
  EXPECT_FALSE(e.remove_port({7, 1}));
  EXPECT_FALSE(e.remove_switch(8));
  EXPECT_EQ(e.version(), 1u);
  EXPECT_TRUE(e.add_link(L(7, 1, 8, 1)));
  EXPECT_FALSE(e.remove_link(L(7, 1, 8, 2)));  // not that link
  EXPECT_TRUE(e.remove_port({8, 1}));
  EXPECT_EQ(e.version(), 3u);
  EXPECT_EQ(e.stats().changes, 3u);
  EXPECT_EQ(e.link_count(), 0u);
}

// (trees kept, trees invalidated) by one edit.
using KeptDropped = std::pair<uint64_t, uint64_t>;
template <typename Edit>
KeptDropped kept_dropped(PathEngine& e, Edit edit) {
  const PathEngine::Stats before = e.stats();
  EXPECT_TRUE(edit());
  return {e.stats().trees_kept - before.trees_kept, e.stats().trees_invalidated - before.trees_invalidated};
}

// The invalidation rules, counted exactly. Distances to 2 at first: 9 and 1 at 1, 5 at 2.
TEST(PathEngine, IncrementalInvalidationIsExact) {
  PathEngine e = build({L(2, 1, 9, 1), L(9, 2, 5, 1), L(2, 2, 1, 1)});
  auto query_all = [&e] {
    for (uint64_t s : e.switches()) {
      for (uint64_t d : e.switches()) (void)e.distance(s, d);
    }
    return e.stats().trees_computed;
  };
  EXPECT_EQ(query_all(), 4u);
  EXPECT_EQ(query_all(), 4u);  // cached
  EXPECT_EQ(e.next_port(5, 2), 1u);  // via 9
  // Distances 2 and 1 towards 2: none changes, but 5 gains a lower neighbour (1 < 9) at distance 1.
  EXPECT_EQ(kept_dropped(e, [&] { return e.add_link(L(5, 2, 1, 2)); }), (KeptDropped{0, 4}));
  EXPECT_EQ(e.next_port(5, 2), 2u);
  EXPECT_EQ(query_all(), 8u);
  // 9 and 1 are both at 1 from 2 and from 5: those two trees are kept, those towards 9 and 1 not.
  EXPECT_EQ(kept_dropped(e, [&] { return e.add_link(L(9, 3, 1, 3)); }), (KeptDropped{2, 2}));
  EXPECT_EQ(query_all(), 10u);
  // Removing it: the trees towards 2 and 5 do not use it; those towards 9 and 1 do.
  EXPECT_EQ(kept_dropped(e, [&] { return e.remove_link(L(9, 3, 1, 3)); }), (KeptDropped{2, 2}));
  EXPECT_EQ(query_all(), 12u);
  EXPECT_EQ(kept_dropped(e, [&] { return e.add_switch(100); }), (KeptDropped{4, 0}));  // isolated
  EXPECT_EQ(e.next_port(5, 2), 2u);
  EXPECT_EQ(e.next_port(1, 100), std::nullopt);  // builds 100's own tree
  EXPECT_EQ(kept_dropped(e, [&] { return e.remove_switch(100); }), (KeptDropped{4, 1}));
  EXPECT_EQ(query_all(), 13u);
  expect_same_paths(e, build({L(5, 2, 1, 2), L(2, 1, 9, 1), L(9, 2, 5, 1), L(2, 2, 1, 1)}));
}

// Reference answers from the link list alone: BFS distances, then the tie-break by definition.
struct Reference {
  explicit Reference(const PathEngine& e) {
    for (const Link& l : e.links()) {
      adj[l.a.dpid].push_back({l.a.port, l.b});
      adj[l.b.dpid].push_back({l.b.port, l.a});
    }
    for (uint64_t d : e.switches()) {
      std::map<uint64_t, uint32_t>& dd = dist[d];
      std::vector<uint64_t> q{d};
      dd[d] = 0;
      for (size_t h = 0; h < q.size(); ++h) {
        for (const auto& [port, peer] : adj[q[h]]) {
          if (dd.emplace(peer.dpid, dd[q[h]] + 1).second) q.push_back(peer.dpid);
        }
      }
    }
  }
  std::optional<uint32_t> distance(uint64_t s, uint64_t d) {
    auto it = dist[d].find(s);
    return it == dist[d].end() ? std::nullopt : std::optional<uint32_t>(it->second);
  }
  std::optional<uint32_t> next_port(uint64_t s, uint64_t d) {
    auto ds = distance(s, d);
    if (s == d || !ds) return std::nullopt;
    std::optional<std::pair<uint64_t, uint32_t>> best;
    for (const auto& [port, peer] : adj[s]) {
      if (distance(peer.dpid, d) == *ds - 1 && (!best || std::pair(peer.dpid, port) < *best)) {
        best = std::pair(peer.dpid, port);
      }
    }
    return best->second;
  }
  std::map<uint64_t, std::vector<std::pair<uint32_t, PortRef>>> adj;
  std::map<uint64_t, std::map<uint64_t, uint32_t>> dist;  // by destination
};

// The switches and links of `e`, added to a new engine in a shuffled order (half the switches
// first, links with random orientation, then the rest).
PathEngine rebuild_shuffled(const PathEngine& e, std::mt19937& rng) {
  std::vector<uint64_t> sws = e.switches();
  std::vector<Link> links = e.links();
  std::shuffle(sws.begin(), sws.end(), rng);
  std::shuffle(links.begin(), links.end(), rng);
  PathEngine f;
  for (size_t i = 0; i < sws.size() / 2; ++i) f.add_switch(sws[i]);
  for (const Link& l : links) EXPECT_TRUE(rng() % 2 ? f.add_link(l) : f.add_link(Link{l.b, l.a}));
  for (uint64_t s : sws) f.add_switch(s);
  return f;
}

// Distances and next hops equal the reference; every path follows next_port and real links.
void expect_matches_reference(const PathEngine& e, const Answers& a) {
  Reference ref(e);
  std::vector<std::optional<uint32_t>> next, dist;
  for (uint64_t s : a.switches) {
    for (uint64_t d : a.switches) {
      next.push_back(ref.next_port(s, d));
      dist.push_back(ref.distance(s, d));
    }
  }
  expect_same("reference next_port", a.switches, a.next, next);
  expect_same("reference distance", a.switches, a.dist, dist);
  for (size_t i = 0; i < a.paths.size(); ++i) {
    const uint64_t d = a.switches[i % a.switches.size()];
    const std::optional<Hops>& p = a.paths[i];
    bool ok = p.has_value() == a.dist[i].has_value();
    if (ok && p) {
      ok = p->size() == *a.dist[i] + 1 && p->front().in_port == 100 && p->back().out_port == 200 &&
           p->back().dpid == d;
      for (size_t h = 0; ok && h + 1 < p->size(); ++h) {
        const Hop& hop = (*p)[h];
        ok = e.next_port(hop.dpid, d) == hop.out_port &&
             e.peer({hop.dpid, hop.out_port}) == PortRef{(*p)[h + 1].dpid, (*p)[h + 1].in_port};
      }
    }
    if (!ok) {
      ADD_FAILURE() << "bad path to " << d << ": " << ::testing::PrintToString(p);
      return;
    }
  }
}

// The tree cache holds at most its bytes' worth of trees (never fewer than kMinTrees): with a
// one-byte budget, 60 switches and every pair asked, edits and all, at most 16 trees hold memory,
// trees are evicted, and every answer equals an engine that keeps every tree.
TEST(PathEngine, TheTreeCacheStaysWithinItsBudgetAndAnswersAlike) {
  std::mt19937 rng(7);
  std::vector<Link> links;
  for (uint64_t k = 1; k < 60; ++k) links.push_back(L(k, 1, 1 + rng() % k, 2 + static_cast<uint32_t>(k)));  // a random tree
  for (int extra = 0; extra < 20; ++extra) {  // and some cross links
    const uint64_t a = 1 + rng() % 60, b = 1 + rng() % 60;
    if (a != b) links.push_back(L(a, 100 + static_cast<uint32_t>(extra), b, 200 + static_cast<uint32_t>(extra)));
  }
  PathEngine small, full;
  small.set_cache_bytes(1);
  for (const Link& l : links) {
    small.add_link(l);
    full.add_link(l);
  }
  expect_same_paths(small, full);
  EXPECT_LE(small.allocated_trees(), PathEngine::kMinTrees);
  EXPECT_EQ(full.allocated_trees(), 60u);
  EXPECT_GT(small.stats().trees_evicted, 0u);
  EXPECT_EQ(full.stats().trees_evicted, 0u);
  for (int k = 0; k < 5; ++k) {  // edits drop some trees; the cache keeps working around them
    const auto l = full.links()[rng() % full.links().size()];
    EXPECT_TRUE(small.remove_link(l));
    EXPECT_TRUE(full.remove_link(l));
    expect_same_paths(small, full);
    EXPECT_LE(small.allocated_trees(), PathEngine::kMinTrees);
  }
  EXPECT_TRUE(small.remove_switch(5));
  EXPECT_TRUE(full.remove_switch(5));
  expect_same_paths(small, full);
  EXPECT_LE(small.allocated_trees(), PathEngine::kMinTrees);
}

TEST(PathEngineRandom, IncrementalEqualsFreshBuildInAnotherOrder) {
  constexpr int kEditsPerSeed = 400;
  PathEngine::Stats total;
  int edits = 0, changed = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    std::mt19937 rng(seed);
    const uint32_t n = 5 + rng() % 36;  // 5..40 switches
    std::vector<uint64_t> dpids(n);  // first use is unrelated to dpid order
    for (auto& d : dpids) d = 1 + rng() % 1000;
    auto any_port = [&] { return PortRef{dpids[rng() % n], 1 + static_cast<uint32_t>(rng() % 4)}; };
    PathEngine e;
    if (seed % 2 == 0) e.set_cache_bytes(1);  // 16 trees at most: evictions between edits too
    for (int step = 0; step < kEditsPerSeed; ++step) {
      const uint32_t op = rng() % 100;
      bool ok = false;
      if (op < 50) {  // few ports per switch, so port takeovers are common
        PortRef a = any_port(), b = any_port();
        if (const auto links = e.links(); !links.empty() && rng() % 4 == 0) {  // a parallel link
          const Link& l = links[rng() % links.size()];
          a.dpid = l.a.dpid, b.dpid = l.b.dpid;
        }
        const bool expect = a != b && e.peer(a) != b;
        ok = e.add_link(make_link(a, b));
        EXPECT_EQ(ok, expect);
      } else if (op < 72) {
        const auto links = e.links();
        ok = !links.empty() && e.remove_link(links[rng() % links.size()]);
        EXPECT_EQ(ok, !links.empty());
      } else if (const PortRef p = any_port(); op < 82) {
        const bool linked = e.is_link_port(p);
        EXPECT_EQ(ok = e.remove_port(p), linked);
      } else if (const bool known = e.has_switch(p.dpid); op < 92) {
        EXPECT_EQ(ok = e.add_switch(p.dpid), !known);
      } else {
        EXPECT_EQ(ok = e.remove_switch(p.dpid), known);
        EXPECT_FALSE(e.has_switch(p.dpid));
      }
      ++edits;
      changed += ok;
      const Answers a = answers(e);
      expect_matches_reference(e, a);
      expect_same_answers(a, answers(rebuild_shuffled(e, rng)));
      expect_spanning_tree(e);
      ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed << " step " << step;
    }
    EXPECT_EQ(e.version(), e.stats().changes);
    total.changes += e.stats().changes;
    total.trees_kept += e.stats().trees_kept;
    total.trees_invalidated += e.stats().trees_invalidated;
  }
  EXPECT_EQ(edits, 2000);
  EXPECT_EQ(total.changes, static_cast<uint64_t>(changed));
  EXPECT_GT(total.trees_kept, 0u);
  EXPECT_GT(total.trees_invalidated, 0u);
}

}  // namespace
}  // namespace sdn::apps::topology
