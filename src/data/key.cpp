// Key parsing, validation and pattern matching (key.hpp). Errors name the part that is wrong so
// that a typo in an app's interest list is found at init(), not by silence later.
#include "data/key.hpp"

#include <fmt/format.h>

namespace sdn::data {
namespace {

bool allowed_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}

// Checks one name (segment, app id, spec name or value); returns why it is bad, or empty.
std::string check_name(std::string_view s, bool wildcard_ok) {
  if (s.empty()) return "is empty";
  if (s.size() > kMaxSegmentBytes) return fmt::format("is longer than {} bytes", kMaxSegmentBytes);
  if (wildcard_ok && (s == "*" || s == "**")) return {};
  for (char c : s) {
    if (!allowed_char(c)) {
      if (c == '*') return "uses '*' inside a name (wildcards must be a whole segment)";
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        return fmt::format("has the byte 0x{:02x}, not allowed", static_cast<unsigned char>(c));
      return fmt::format("has '{}', not allowed (use A-Z a-z 0-9 _ . : -)", c);
    }
  }
  return {};
}

bool seg_match(std::string_view pat, std::string_view seg) { return pat == "*" || pat == seg; }

}  // namespace

Expected<Key, std::string> Key::parse(std::string_view text) {
  auto fail = [&](std::string why) {
    return unexpected(fmt::format("bad key '{}': {}", text.substr(0, 200), why));
  };
  if (text.empty()) return fail("empty");
  if (text.size() > kMaxKeyBytes) return fail(fmt::format("longer than {} bytes", kMaxKeyBytes));

  Key k;
  std::string_view rest = text;
  std::string_view spec_part;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    spec_part = rest.substr(q + 1);
    rest = rest.substr(0, q);
    if (spec_part.empty()) return fail("'?' with no specs after it");
  }
  std::string_view path = rest;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    path = rest.substr(0, at);
    std::string_view app = rest.substr(at + 1);
    if (app.find('@') != std::string_view::npos) return fail("more than one '@'");
    if (auto why = check_name(app, false); !why.empty() && app != "*")
      return fail(fmt::format("app id '{}' {}", app, why));
    k.app_id_ = std::string(app);
    if (app == "*") k.pattern_ = true;
  }
  if (path.empty()) return fail("no path before '@'");

  std::size_t n = 0;
  while (true) {
    auto slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    ++n;
    if (n > kMaxSegments) return fail(fmt::format("more than {} segments", kMaxSegments));
    if (auto why = check_name(seg, true); !why.empty())
      return fail(seg.empty() ? fmt::format("segment {} is empty", n)
                              : fmt::format("segment {} ('{}') {}", n, seg, why));
    if (seg == "*" || seg == "**") k.pattern_ = true;
    k.segments_.emplace_back(seg);
    if (slash == std::string_view::npos) break;
    path = path.substr(slash + 1);
  }
  for (std::size_t i = 0; i + 1 < k.segments_.size(); ++i) {
    if (k.segments_[i] == "**")
      return fail(fmt::format("segment {} is '**', which may only be the last segment", i + 1));
  }

  while (!spec_part.empty()) {
    auto amp = spec_part.find('&');
    std::string_view one = spec_part.substr(0, amp);
    auto eq = one.find('=');
    if (eq == std::string_view::npos) return fail(fmt::format("spec '{}' has no '='", one));
    std::string_view name = one.substr(0, eq), value = one.substr(eq + 1);
    if (auto why = check_name(name, false); !why.empty())
      return fail(fmt::format("spec name '{}' {}", name, why));
    if (auto why = check_name(value, false); !why.empty())
      return fail(fmt::format("spec '{}' value '{}' {}", name, value, why));
    for (const auto& [n0, v0] : k.specs_)
      if (n0 == name) return fail(fmt::format("spec '{}' given twice", name));
    k.specs_.emplace_back(std::string(name), std::string(value));
    if (amp == std::string_view::npos) break;
    spec_part = spec_part.substr(amp + 1);
    if (spec_part.empty()) return fail("trailing '&'");
  }
  return k;
}

Expected<Key, std::string> Key::parse_concrete(std::string_view text) {
  auto k = parse(text);
  if (!k) return k;
  if (k->is_pattern())
    return unexpected(fmt::format("bad key '{}': wildcards are not allowed here (a value is "
                                  "written to one concrete key)",
                                  text.substr(0, 200)));
  return k;
}

std::optional<std::string_view> Key::spec(std::string_view name) const {
  for (const auto& [n, v] : specs_)
    if (n == name) return std::string_view(v);
  return std::nullopt;
}

std::string Key::path() const {
  std::string out;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    if (i) out += '/';
    out += segments_[i];
  }
  return out;
}

std::string Key::channel() const {
  std::string out = path();
  if (!app_id_.empty()) {
    out += '@';
    out += app_id_;
  }
  return out;
}

std::string Key::str() const {
  std::string out = channel();
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    out += i ? '&' : '?';
    out += specs_[i].first;
    out += '=';
    out += specs_[i].second;
  }
  return out;
}

Key Key::with_app(std::string app_id) const {
  Key k = *this;
  k.app_id_ = std::move(app_id);
  k.pattern_ = k.app_id_ == "*";
  for (const auto& s : k.segments_)
    if (s == "*" || s == "**") k.pattern_ = true;
  return k;
}

bool Key::matches(const Key& k) const {
  if (!app_id_.empty() && app_id_ != "*" && app_id_ != k.app_id_) return false;
  const auto& p = segments_;
  const auto& s = k.segments_;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == "**") return s.size() > i;  // one or more remaining segments
    if (i >= s.size() || !seg_match(p[i], s[i])) return false;
  }
  return p.size() == s.size();
}

bool Key::intersects(const Key& o) const {
  if (!app_id_.empty() && app_id_ != "*" && !o.app_id_.empty() && o.app_id_ != "*" &&
      app_id_ != o.app_id_)
    return false;
  const auto& a = segments_;
  const auto& b = o.segments_;
  for (std::size_t i = 0;; ++i) {
    bool a_end = i >= a.size(), b_end = i >= b.size();
    if (a_end && b_end) return true;
    if (!a_end && a[i] == "**") return !b_end;  // b has at least one segment from here
    if (!b_end && b[i] == "**") return !a_end;
    if (a_end || b_end) return false;
    if (a[i] != "*" && b[i] != "*" && a[i] != b[i]) return false;
  }
}

bool Key::covers(const Key& o) const {
  if (!app_id_.empty() && app_id_ != "*" && o.app_id_ != app_id_) return false;
  const auto& p = segments_;
  const auto& q = o.segments_;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == "**") return q.size() > i;  // q has at least one segment from here on
    if (i >= q.size() || q[i] == "**") return false;
    if (p[i] != "*" && (q[i] == "*" || q[i] != p[i])) return false;
  }
  return p.size() == q.size();
}

std::string redis_glob(const Key& pattern) {
  std::string out = pattern.path();
  // "a/**" -> "a/*": Redis '*' matches any run of characters, '/' included.
  if (out.size() >= 2 && out.compare(out.size() - 2, 2, "**") == 0) out.pop_back();
  out += '@';
  out += pattern.app_id().empty() ? "*" : pattern.app_id();
  return out;
}

}  // namespace sdn::data
