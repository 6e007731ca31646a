// What travels on Data Updates and is kept in Data Archives: a value (JSON or raw bytes) with the
// key it was written to, the producer's app id and instance, a timestamp and a sequence number
// per (instance, key). Records are immutable and shared: in-process subscribers receive the same
// object the producer wrote, never a copy.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace sdn::data {

using Json = nlohmann::json;

// Raw bytes, kept apart from JSON so that a binary payload is never parsed or re-encoded.
struct Bytes {
  std::string data;
  friend bool operator==(const Bytes&, const Bytes&) = default;
};

class Value {
 public:
  Value() : v_(Json()) {}
  Value(Json j) : v_(std::move(j)) {}  // NOLINT: implicit by design
  Value(Bytes b) : v_(std::move(b)) {}  // NOLINT
  // Convenience: anything nlohmann can turn into JSON.
  template <class T>
    requires(!std::is_same_v<std::decay_t<T>, Value> && !std::is_same_v<std::decay_t<T>, Json> &&
             !std::is_same_v<std::decay_t<T>, Bytes> && std::is_constructible_v<Json, T>)
  Value(T&& t) : v_(Json(std::forward<T>(t))) {}  // NOLINT

  bool is_json() const { return v_.index() == 0; }
  bool is_bytes() const { return v_.index() == 1; }
  const Json& json() const { return std::get<0>(v_); }  // precondition: is_json()
  const std::string& bytes() const { return std::get<1>(v_).data; }  // precondition: is_bytes()
  // Payload size in bytes (JSON: its compact dump length; counted only for stats/benchmarks).
  std::size_t approx_size() const;

  friend bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

 private:
  std::variant<Json, Bytes> v_;
};

struct Record {
  std::string key;       // concrete channel: "network/s1/port/3/stats@stats"
  Value value;
  std::string app_id;    // producer app id
  std::string instance;  // producer instance id (one app id may run several instances)
  int64_t ts_ns = 0;     // producer wall clock, ns since the Unix epoch
  uint64_t seq = 0;      // sequence number per (instance, key), starts at 1
};

using RecordPtr = std::shared_ptr<const Record>;

inline int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sdn::data
