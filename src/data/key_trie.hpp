// KeyTrie: many patterns, one value each; match(key) visits the values of every pattern that
// matches a concrete key, walking one trie level per key segment (plus the `*` and `**`
// branches), so the cost does not grow with the number of patterns. Not thread-safe: owners
// guard it (the in-process bus copies-on-write, Redis guards it with its subscription lock).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sdn::data {

template <class T>
class KeyTrie {
 public:
  using Id = uint64_t;

  KeyTrie() : root_(std::make_unique<Node>()) {}
  KeyTrie(const KeyTrie& o) : root_(std::make_unique<Node>()), next_id_(o.next_id_) {
    for (const auto& [id, loc] : o.index_) {
      const Entry& e = loc.node->entries[loc.pos(*loc.node, id)];
      insert_with_id(e.segments_for_copy, e.app, id, e.value);
    }
  }
  KeyTrie& operator=(const KeyTrie& o) {
    if (this != &o) {
      KeyTrie tmp(o);
      *this = std::move(tmp);
    }
    return *this;
  }
  KeyTrie(KeyTrie&&) noexcept = default;
  KeyTrie& operator=(KeyTrie&&) noexcept = default;

  // `pattern` is a Key (concrete or pattern); returns an id for erase().
  template <class K>
  Id insert(const K& pattern, T value) {
    Id id = next_id_++;
    insert_with_id(pattern.segments(), pattern.app_id(), id, std::move(value));
    return id;
  }

  bool erase(Id id) {
    auto it = index_.find(id);
    if (it == index_.end()) return false;
    Node* n = it->second.node;
    auto& v = n->entries;
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(it->second.pos(*n, id)));
    index_.erase(it);
    prune(n);
    return true;
  }

  // f(const T&) for each matching pattern, in no particular order.
  template <class K, class F>
  void match(const K& key, F&& f) const {
    const auto& segs = key.segments();
    walk(*root_, segs, 0, key.app_id(), f);
  }

  // Whether any pattern matches.
  template <class K>
  bool any(const K& key) const {
    bool found = false;
    match(key, [&](const T&) { found = true; });
    return found;
  }

  std::size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }

 private:
  struct Node;
  struct Entry {
    Id id;
    std::string app;  // "" or "*" = any producer
    T value;
    std::vector<std::string> segments_for_copy;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Node {
    Node* parent = nullptr;
    std::string name;  // key in parent (or "*" / "**")
    std::unordered_map<std::string, std::unique_ptr<Node>, Hash, std::equal_to<>> children;
    std::unique_ptr<Node> star;   // '*'
    std::unique_ptr<Node> dstar;  // '**' (always a leaf)
    std::vector<Entry> entries;
  };
  struct Loc {
    Node* node;
    std::size_t pos(const Node& n, Id id) const {
      for (std::size_t i = 0; i < n.entries.size(); ++i)
        if (n.entries[i].id == id) return i;
      return 0;  // unreachable: index_ and entries are kept in step
    }
  };

  void insert_with_id(const std::vector<std::string>& segs, const std::string& app, Id id,
                      T value) {
    Node* n = root_.get();
    for (const auto& s : segs) {
      std::unique_ptr<Node>* slot;
      if (s == "*") {
        slot = &n->star;
      } else if (s == "**") {
        slot = &n->dstar;
      } else {
        auto it = n->children.find(std::string_view(s));
        slot = it != n->children.end() ? &it->second : &n->children[s];
      }
      if (!*slot) {
        *slot = std::make_unique<Node>();
        (*slot)->parent = n;
        (*slot)->name = s;
      }
      n = slot->get();
    }
    n->entries.push_back(Entry{id, app == "*" ? std::string() : app, std::move(value), segs});
    index_[id] = Loc{n};
  }

  void prune(Node* n) {
    while (n->parent && n->entries.empty() && n->children.empty() && !n->star && !n->dstar) {
      Node* p = n->parent;
      if (n->name == "*") {
        p->star.reset();
      } else if (n->name == "**") {
        p->dstar.reset();
      } else {
        p->children.erase(n->name);
      }
      n = p;
    }
  }

  template <class F>
  static void emit(const Node& n, const std::string& app, F& f) {
    for (const auto& e : n.entries)
      if (e.app.empty() || e.app == app) f(e.value);
  }

  template <class F>
  static void walk(const Node& n, const std::vector<std::string>& segs, std::size_t i,
                   const std::string& app, F& f) {
    if (i == segs.size()) {
      emit(n, app, f);
      return;
    }
    if (n.dstar) emit(*n.dstar, app, f);
    if (!n.children.empty()) {
      auto it = n.children.find(std::string_view(segs[i]));
      if (it != n.children.end()) walk(*it->second, segs, i + 1, app, f);
    }
    if (n.star) walk(*n.star, segs, i + 1, app, f);
  }

  std::unique_ptr<Node> root_;
  Id next_id_ = 1;
  std::unordered_map<Id, Loc> index_;
};

}  // namespace sdn::data
