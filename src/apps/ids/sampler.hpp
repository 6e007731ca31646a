// The packet sampler: reads the frames an Open vSwitch mirror copies onto capture interfaces
// (AF_PACKET sockets, one per interface) and produces them on network/traffic/... as batches,
// one record per production interval. On-demand production (seed 002 section 3.7): the sockets
// are open only while a consumer's interest matches the key, and batches go out at the frequency
// the Coordinator assigned (the consumers' highest, capped by this producer's max_freq).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/ids/config.hpp"
#include "data/due.hpp"

namespace sdn::apps::ids {

struct SamplerCounters {
  std::atomic<uint64_t> packets{0};        // frames captured and batched
  std::atomic<uint64_t> bytes{0};          // their wire bytes
  std::atomic<uint64_t> batches{0};        // records written
  std::atomic<uint64_t> batch_full{0};     // frames dropped: the batch was at max_batch
  std::atomic<uint64_t> kernel_drops{0};   // frames the kernel dropped (socket buffer full)
  std::atomic<uint64_t> captures_started{0};
  std::atomic<uint64_t> captures_stopped{0};
  std::atomic<uint64_t> open_errors{0};    // an interface missing or a socket refused
  std::atomic<uint64_t> write_errors{0};
};

class Sampler {
 public:
  Sampler(SamplerConfig cfg, std::shared_ptr<data::Due> due);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  void start();
  void stop();
  bool capturing() const { return capturing_.load(); }
  const SamplerCounters& counters() const { return c_; }
  nlohmann::json stats_json() const;
  // The interfaces `patterns` name now ("pfx*" expands over /sys/class/net), sorted.
  static std::vector<std::string> resolve(const std::vector<std::string>& patterns);

 private:
  struct Socket {
    int fd = -1;
    std::string name;
    uint16_t source = 0;
  };
  void run();
  bool open_sockets();
  void close_sockets();
  void read_socket(const Socket& s);
  void publish();

  SamplerConfig cfg_;
  std::shared_ptr<data::Due> due_;
  SamplerCounters c_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> capturing_{false};
  std::thread thread_;
  std::vector<Socket> socks_;
  // Frames of the batch being built, sorted by time before they are written.
  struct Pending {
    int64_t ts_ns;
    uint32_t wire_len;
    uint16_t source;
    uint32_t offset, len;  // into arena_
  };
  std::vector<Pending> pending_;
  std::vector<uint8_t> arena_;
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace sdn::apps::ids
