// A minimal value-or-error type (std::expected is C++23; we build with C++20).
// Decoders and other fallible functions on the hot path return this instead of throwing.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace sdn {

template <class E>
struct Unexpected {
  E error;
};

template <class E>
Unexpected<std::decay_t<E>> unexpected(E&& e) {
  return {std::forward<E>(e)};
}

template <class T, class E>
class [[nodiscard]] Expected {
 public:
  Expected(const T& v) : v_(std::in_place_index<0>, v) {}  // NOLINT: implicit by design
  Expected(T&& v) : v_(std::in_place_index<0>, std::move(v)) {}  // NOLINT
  template <class G>
  Expected(Unexpected<G> u) : v_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

// Expected<void, E>: success carries no value.
template <class E>
class [[nodiscard]] Expected<void, E> {
 public:
  Expected() = default;
  template <class G>
  Expected(Unexpected<G> u) : err_(std::move(u.error)), ok_(false) {}  // NOLINT
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const { assert(!ok_); return err_; }

 private:
  E err_{};
  bool ok_ = true;
};

}  // namespace sdn
