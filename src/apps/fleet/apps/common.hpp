// What the fleet apps share: their data keys (README "Data keys"), the job record they pass
// around, and the one-thread work queue each app runs its bus callbacks on (so a record published
// from inside another app's callback never re-enters a caller that holds its own state).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "data/updates.hpp"

namespace sdn::fleet {

using Json = nlohmann::json;

// App ids (the part after '@' in every key they write).
inline constexpr std::string_view kDriverApp = "fleetdriver";
inline constexpr std::string_view kTwinApp = "fleettwin";
inline constexpr std::string_view kCreatorApp = "jobcreator";
inline constexpr std::string_view kSchedulerApp = "jobscheduler";

namespace fkeys {
// Written by the data driver.
inline std::string printers() { return "fleet/printers"; }  // the fleet: names, ports
inline std::string state(std::string_view p) { return "fleet/" + std::string(p) + "/state"; }
inline std::string job(std::string_view p) { return "fleet/" + std::string(p) + "/job"; }
inline std::string queue(std::string_view p) { return "fleet/" + std::string(p) + "/queue"; }
inline std::string events(std::string_view p) { return "fleet/" + std::string(p) + "/events"; }
inline std::string sensor(std::string_view p, std::string_view s) {
  return "fleet/" + std::string(p) + "/sensors/" + std::string(s);
}
// Commands to the driver (enqueue from the scheduler, maintenance from the fleet twin).
inline std::string command(std::string_view p) { return "fleet/" + std::string(p) + "/command"; }
// Written by the twins.
inline std::string twin(std::string_view p, std::string_view kind) {
  return "fleet/" + std::string(p) + "/twin/" + std::string(kind);  // machine, queue, anomaly
}
inline std::string fleet_twin() { return "fleet/twin/fleet"; }
inline std::string maintenance() { return "fleet/maintenance"; }
inline std::string returned() { return "fleet/jobs/returned"; }
// Written by the job creator and the scheduler.
inline std::string orders() { return "fleet/orders"; }
inline std::string decisions() { return "fleet/decisions"; }
// The <p> of a fleet/<p>/... key ("" when the key has no second segment).
inline std::string_view printer_of(std::string_view key) {
  auto a = key.find('/');
  auto b = a == std::string_view::npos ? a : key.find('/', a + 1);
  if (b == std::string_view::npos) return {};
  return key.substr(a + 1, b - a - 1);
}
}  // namespace fkeys

// One print job as the apps pass it: a copy of one part of one order.
struct JobSpec {
  std::string id;        // "o3-2": order o3, copy 2
  std::string order;
  double print_min = 0;  // slicer estimate (the printer's own speed scales it)
  bool urgent = false;   // PPE
  double released = 0;   // sim minute the order was released
};
Json to_json(const JobSpec& j);
std::optional<JobSpec> job_from_json(const Json& j);  // nullopt when a field is missing/wrong

// Sim minutes of a Jedi datetime ("2026-01-01T08:03:00", SimClock::iso); nullopt if malformed.
std::optional<double> sim_min_of_iso(std::string_view iso);

// A single thread running posted tasks in order; stop() runs nothing more and joins.
class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  void post(std::function<void()> fn);
  void post_after(std::chrono::nanoseconds delay, std::function<void()> fn);
  void stop();
  data::Executor executor() {
    return [this](std::function<void()> fn) { post(std::move(fn)); };
  }
  bool on_this_thread() const { return std::this_thread::get_id() == thread_.get_id(); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }  // tasks that threw

 private:
  using Clock = std::chrono::steady_clock;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> ready_;
  std::multimap<Clock::time_point, std::function<void()>> timed_;
  bool stop_ = false;
  std::atomic<uint64_t> errors_{0};
  std::thread thread_;
};

}  // namespace sdn::fleet
