// The detector: consumes the packet stream on network/traffic/** (at the frequency it asks the
// Coordinator for), runs Kitsune on every frame on its own thread, and produces on
// network/ids/...: score records per window of packet time (with every packet's score in
// "packet" mode), the model's state at each phase change, and a suspect record per source MAC
// whose packets keep scoring above the threshold. The threshold is fixed or fitted on the scores
// of benign packets right after training.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/ids/config.hpp"
#include "apps/ids/kitnet/kitsune.hpp"
#include "apps/ids/traffic.hpp"
#include "data/due.hpp"

namespace sdn::apps::ids {

// Where the detector is: Kitsune's three phases, then fitting the threshold, then detecting.
enum class DetectorPhase : uint8_t { kMapping = 0, kTraining = 1, kFitting = 2, kDetecting = 3 };
std::string_view phase_name(DetectorPhase p);

struct DetectorCounters {
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> packets{0};          // frames scored
  std::atomic<uint64_t> unparsed{0};         // frames too short or malformed to score
  std::atomic<uint64_t> bad_batches{0};      // records that are not a valid batch (counted, skipped)
  std::atomic<uint64_t> queue_drops{0};      // batches dropped: the detector thread was behind
  std::atomic<uint64_t> anomalous{0};        // packets above the threshold sent by their
                                             // conversation's initiator (judged)
  std::atomic<uint64_t> anomalous_replies{0};  // above the threshold but sent by the responder
  std::atomic<uint64_t> suspects{0};         // suspect records published
  std::atomic<uint64_t> score_records{0};
  std::atomic<uint64_t> write_errors{0};
};

// The per-packet logic without threads or the bus: fed frames in time order, it returns what to
// publish. Tests drive it directly.
class DetectorCore {
 public:
  explicit DetectorCore(DetectorConfig cfg);
  struct Output {
    std::vector<std::pair<std::string, nlohmann::json>> records;  // (key, value)
  };
  // One frame; appends to `out` what it causes (a closed score window, a suspect, a state).
  void on_frame(const Frame& f, int64_t now_wall_ns, Output& out);
  // Closes the open score window (end of stream, stop).
  void flush(Output& out);
  DetectorPhase phase() const { return phase_; }
  std::optional<double> threshold() const { return threshold_; }
  const DetectorCounters& counters() const { return c_; }
  DetectorCounters& counters() { return c_; }
  nlohmann::json state_json() const;
  const Kitsune& kitsune() const { return kit_; }

 private:
  struct Source {
    std::vector<int64_t> ring;  // times (ns) of the last min_anomalous anomalous packets
    std::size_t next = 0, filled = 0;
    int64_t last_published = INT64_MIN;
    double max_score = 0;
    uint32_t last_ip = 0;
    std::unordered_set<uint32_t> ips;  // distinct source IPs seen anomalous (capped)
  };
  void set_phase(DetectorPhase p, Output& out);
  void score_window(int64_t ts, double score, Output& out);
  void judge(const PacketInfo& p, int64_t ts, double score, int64_t now_wall_ns, Output& out);
  // Who started the conversation (socket, or ARP exchange) this packet belongs to: only the
  // initiator's packets are judged.
  struct Endpoint {
    uint64_t mac = 0;
    uint32_t ip = 0;
  };
  Endpoint initiator(const PacketInfo& p);

  DetectorConfig cfg_;
  Kitsune kit_;
  DetectorCounters c_;
  DetectorPhase phase_ = DetectorPhase::kMapping;
  std::optional<double> threshold_;
  std::vector<double> fit_scores_;
  double fit_max_ = 0;
  std::optional<double> origin_s_;  // packet time origin (seconds): keeps Kitsune's times small
  std::unordered_set<uint64_t> ignore_;
  std::unordered_map<uint64_t, Source> sources_;
  // Conversations' initiators, in two generations (the older is dropped when the newer fills).
  struct FlowKey {
    uint64_t a, b;  // the endpoints' (address, port) in a canonical order
    uint8_t proto;
    bool operator==(const FlowKey&) const = default;
  };
  struct FlowKeyHash {
    size_t operator()(const FlowKey& k) const noexcept {
      return std::hash<uint64_t>{}(k.a * 0x9e3779b97f4a7c15ULL ^ (k.b + k.proto));
    }
  };
  std::unordered_map<FlowKey, Endpoint, FlowKeyHash> flows_new_, flows_old_;
  // The open score window.
  int64_t win_start_ = 0;
  uint64_t win_n_ = 0, win_anom_ = 0;
  double win_sum_ = 0, win_max_ = 0;
  std::vector<int64_t> win_t_;
  std::vector<double> win_s_;
};

class Detector {
 public:
  Detector(DetectorConfig cfg, std::shared_ptr<data::Due> due);
  ~Detector();
  Detector(const Detector&) = delete;
  Detector& operator=(const Detector&) = delete;
  Expected<void, std::string> start();
  void stop();
  nlohmann::json stats_json() const;   // counters (the stats file and /api/v1/apps)
  nlohmann::json status_json() const;  // phase, threshold, model, counters (/api/v1/ids)

 private:
  void run();
  void process(const data::RecordPtr& r);

  DetectorConfig cfg_;
  std::shared_ptr<data::Due> due_;
  DetectorCore core_;
  data::Due::Subscription sub_;
  std::thread thread_;
  mutable std::mutex mu_;       // queue_, stop_
  mutable std::mutex core_mu_;  // core_ (the worker per batch; status_json)
  std::condition_variable cv_;
  std::deque<data::RecordPtr> queue_;
  bool stop_ = false;
};

}  // namespace sdn::apps::ids
