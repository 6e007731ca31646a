// Fuzzes Key::parse with two keys cut from the input at the first newline, and checks the
// invariants that must hold for anything that parses: the canonical text parses back to the same
// key, a concrete key matches itself, a pattern matches a key iff... (one-way checks only), and
// intersects is symmetric.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "data/key.hpp"

using sdn::data::Key;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nl = in.find('\n');
  std::string_view a_text = in.substr(0, nl);
  std::string_view b_text = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  auto a = Key::parse(a_text);
  auto b = Key::parse(b_text);
  if (a) {
    auto again = Key::parse(a->str());
    if (!again || !(*again == *a)) std::abort();
    (void)sdn::data::redis_glob(*a);
    if (!a->is_pattern() && !a->matches(*a)) std::abort();
  }
  if (a && b) {
    if (a->intersects(*b) != b->intersects(*a)) std::abort();
    // A pattern that matches a concrete key must intersect it.
    if (!b->is_pattern() && a->matches(*b) && !a->intersects(*b)) std::abort();
    sdn::data::KeyTrie<int> trie;
    trie.insert(*a, 1);
    if (!b->is_pattern()) {
      bool hit = trie.any(*b);
      if (hit != a->matches(*b)) std::abort();
    }
  }
  return 0;
}
