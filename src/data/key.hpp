// Data keys: `domain/segment/.../leaf@app_id?spec=value&...` (DESIGN.md "Data keys", seed 002
// section 3.5). A key names one data item; a pattern (a key with `*` = exactly one segment and a
// trailing `**` = one or more segments) names a set of them. Matching many patterns against a key
// goes through KeyTrie, never a scan.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.hpp"

namespace sdn::data {

// Transparent hash for string-keyed maps looked up by string_view (no temporary std::string).
struct StrHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Limits on what a key may hold; a key past any of them is refused with an error naming it.
inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxSegments = 32;
inline constexpr std::size_t kMaxSegmentBytes = 128;

// Segment, app id, spec names and spec values use [A-Za-z0-9_.:-] (no '/', '@', '?', '&', '=',
// no glob characters, so a concrete key is also a literal Redis channel name). `*` and `**` are
// the only wildcards and only as whole segments; `**` only as the last segment. The app id may be
// `*` in a pattern. Specs are metadata (`freq=10`, `index=true`): they never take part in
// matching and are not part of the channel.
class Key {
 public:
  Key() = default;

  // Parses and validates; the error names the offending segment, e.g.
  // "bad key 'network//s1': segment 2 is empty".
  static Expected<Key, std::string> parse(std::string_view text);
  // Like parse, and also refuses wildcards (a key you can write to).
  static Expected<Key, std::string> parse_concrete(std::string_view text);

  const std::vector<std::string>& segments() const { return segments_; }
  // Empty when the key carries no `@app_id`.
  const std::string& app_id() const { return app_id_; }
  const std::vector<std::pair<std::string, std::string>>& specs() const { return specs_; }
  std::optional<std::string_view> spec(std::string_view name) const;

  bool is_pattern() const { return pattern_; }
  // Segments joined by '/': "network/s1/port/3/stats".
  std::string path() const;
  // path + "@app" when there is an app id: the channel a value travels on, the record's key.
  std::string channel() const;
  // Canonical text: channel + "?k=v&..." with specs in the order given.
  std::string str() const;

  // Same key with a different app id (DUE stamps the producer's id on writes without one).
  Key with_app(std::string app_id) const;

  // Does this pattern (or key) match the concrete key `k`? Paths segment by segment; the app id
  // only when the pattern has one (`*` matches any). Specs ignored.
  bool matches(const Key& k) const;
  // Could some concrete key match both patterns? (Coordinator: interest vs capability.)
  bool intersects(const Key& other) const;
  // Does every concrete key that `other` matches also match this pattern? (ACL: is a requested
  // subscription inside a granted one.) Conservative: `*` does not cover `**`.
  bool covers(const Key& other) const;

  friend bool operator==(const Key& a, const Key& b) {
    return a.segments_ == b.segments_ && a.app_id_ == b.app_id_ && a.specs_ == b.specs_;
  }

 private:
  std::vector<std::string> segments_;
  std::string app_id_;
  std::vector<std::pair<std::string, std::string>> specs_;
  bool pattern_ = false;
};

// The Redis PSUBSCRIBE glob covering a pattern's channels (a superset: Redis `*` also crosses
// '/'; subscribers filter what arrives with Key::matches / KeyTrie). "network/*/stats" ->
// "network/*/stats@*"; with an app id "x@app" the app part is kept.
std::string redis_glob(const Key& pattern);

// Many patterns, each with a value; `match(key)` visits the values of every pattern matching a
// concrete key in time proportional to the key's depth and the number of wildcard branches, not
// the number of patterns.
template <class T>
class KeyTrie;

}  // namespace sdn::data

#include "data/key_trie.hpp"
