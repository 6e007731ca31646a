// Resource sampling of another process from /proc (ofbench watches the controller under test):
// CPU % per thread and in total, RSS and context switches, once per interval on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace sdn::ofbench {

struct ProcTimes {
  uint64_t utime_ticks = 0, stime_ticks = 0;
  std::string comm;
};

struct ProcSnapshot {
  std::chrono::steady_clock::time_point at{};
  ProcTimes total;
  std::map<int, ProcTimes> threads;  // tid -> times
  uint64_t rss_kib = 0;
  uint64_t voluntary_ctxt = 0, nonvoluntary_ctxt = 0;  // whole process (sum over threads)
};

// Reads /proc/<pid>/{stat,status,task/*/stat}; nullopt when the process is gone.
std::optional<ProcSnapshot> read_proc(int pid);

// Parses the fields of a /proc/<pid>/stat line that we use (comm may hold spaces and ')').
std::optional<ProcTimes> parse_stat_line(const std::string& line);

struct ResourceSample {
  double t_s = 0;  // since sampling started
  double cpu_pct = 0;  // 100 = one core busy
  uint64_t rss_kib = 0;
  uint64_t voluntary_ctxt = 0, nonvoluntary_ctxt = 0;
  std::map<std::string, double> threads;  // "tid:comm" -> cpu %
};

class ResourceSampler {
 public:
  ResourceSampler(int pid, std::chrono::milliseconds interval);
  ~ResourceSampler();
  void start();
  void stop();
  // {"pid", "samples": [...], "cpu_pct_mean", "cpu_pct_max", "rss_kib_max", "rss_kib_last",
  //  "ctxt_switches"} over the samples taken since start().
  nlohmann::json to_json() const;
  bool process_gone() const { return gone_.load(); }

 private:
  void run();
  int pid_;
  std::chrono::milliseconds interval_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, gone_{false};
  mutable std::mutex mu_;
  std::vector<ResourceSample> samples_;
  std::optional<ProcSnapshot> first_;
};

}  // namespace sdn::ofbench
