// [sampler] and [ids]: configuration of the packet sampler and the detector, read and validated
// (every problem names its key).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/ids/kitnet/kitsune.hpp"
#include "core/config.hpp"

namespace sdn::apps::ids {

// The detector library (src/apps/ids/kitnet) lives in sdn::ids.
using sdn::ids::ExtractorConfig;
using sdn::ids::fit_threshold;
using sdn::ids::KitNet;
using sdn::ids::KitNetConfig;
using sdn::ids::Kitsune;
using sdn::ids::PacketInfo;

inline constexpr std::string_view kTrafficPattern = "network/traffic/**";
inline constexpr std::string_view kIdsPattern = "network/ids/**";

struct SamplerConfig {
  // Interfaces to read (the mirror ports' root-namespace ends); "pfx*" matches every interface
  // whose name starts with "pfx", resolved each time capture starts.
  std::vector<std::string> interfaces;
  std::string key = "network/traffic/packets";  // concrete key of the batches (under network/traffic/)
  uint32_t snaplen = 128;          // bytes kept of each frame (headers; the wire length is kept too)
  double max_freq = 200;           // capability: the most batches per second it produces
  double default_freq = 20;        // batches per second when the consumer asks for every value
  uint32_t max_batch = 50000;      // packets per batch; beyond it packets are dropped and counted
  bool archive = false;            // keep the batches in Data Archives (large: off by default)
};

enum class ScoreMode : uint8_t { kWindow = 0, kPacket = 1 };

struct DetectorConfig {
  // 50,000 streams per family (Kitsune's own default is 200,000, about 200 MB at the worst): a
  // spoofed-source flood must not grow a controller's memory much.
  ExtractorConfig extractor{.lambdas = {5, 3, 1, 0.1, 0.01}, .max_streams = 50000};
  KitNetConfig kitnet;
  double traffic_freq = 20;        // the interest's frequency: batches per second wanted
  // Threshold: a fixed RMSE, or fitted (log-normal, z) on the scores of the `fit_packets`
  // benign packets that follow training.
  std::optional<double> threshold;  // [ids] threshold > 0: fixed; 0 or absent: fitted
  std::size_t fit_packets = 5000;
  double fit_z = 5.0;
  double fit_floor = 1.5;          // the fit is never below 1.5 x the largest benign score seen
  // A source (MAC) is a suspect once `min_anomalous` of its packets scored above the threshold
  // within `window`; it is published again at most every `holdoff` while it keeps scoring.
  uint32_t min_anomalous = 50;
  std::chrono::milliseconds window{1000};
  std::chrono::milliseconds holdoff{2000};
  ScoreMode score_mode = ScoreMode::kWindow;
  std::chrono::milliseconds score_window{250};  // one score record per window of packet time
  std::size_t max_queued_batches = 256;          // batches waiting for the detector thread
  std::vector<std::string> ignore_macs;          // never reported (e.g. the controller's own)
};

SamplerConfig read_sampler_config(core::Config& cfg, std::string_view section = "sampler");
DetectorConfig read_detector_config(core::Config& cfg, std::string_view section = "ids");

}  // namespace sdn::apps::ids
