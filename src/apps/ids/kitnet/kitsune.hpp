// Kitsune (Mirsky et al., NDSS 2018) in C++: the AfterImage feature extractor (damped incremental
// statistics per MAC-IP, channel, channel jitter and socket, at several decay factors) and KitNET
// (a feature mapper that clusters correlated features into small groups, an ensemble of tied-weight
// autoencoders, one per group, and an output autoencoder over their RMSEs). Pure computation: no
// I/O, no clock, no threads; the caller owns the instance and feeds it packets in time order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sdn::ids {

// What the extractor needs of one packet (parsed by the caller). Addresses in host byte order.
struct PacketInfo {
  enum class Kind : uint8_t { kIpv4 = 0, kArp = 1, kOther = 2 };
  double ts = 0;            // seconds (any origin; must not go backwards by much: a packet older
                            // than the stream's last one is treated as arriving at that time)
  uint32_t len = 0;         // frame length in bytes (wire length, not the captured length)
  uint64_t src_mac = 0;     // 48-bit MACs in the low bits
  uint64_t dst_mac = 0;
  Kind kind = Kind::kOther;
  uint32_t src_ip = 0;      // IPv4: the header's addresses; ARP: sender/target protocol address
  uint32_t dst_ip = 0;
  uint8_t proto = 0;        // IPv4 protocol number (6 TCP, 17 UDP, 1 ICMP, ...); 0 otherwise
  uint16_t src_port = 0;    // TCP/UDP ports; 0 for everything else
  uint16_t dst_port = 0;
  uint16_t tcp_flags = 0;   // TCP only (not a Kitsune feature: the detector uses it to tell who
                            // started a conversation)
};

struct ExtractorConfig {
  std::vector<double> lambdas{5, 3, 1, 0.1, 0.01};  // decay factors (1/s): weight halves every 1/λ s
  std::size_t max_streams = 200000;  // cap on tracked streams per statistic family (spoofed
                                     // sources must not grow memory without bound); when full,
                                     // the longest-idle streams are evicted and counted
};

struct ExtractorStats {
  uint64_t packets = 0;
  uint64_t evicted = 0;       // streams dropped at the cap
  std::size_t streams = 0;    // streams tracked now (all families)
};

// AfterImage. dim() = 20 x lambdas: per λ, MI (w, μ, σ of frame size per source MAC+IP), channel
// src IP -> dst IP (w, μ, σ + magnitude, radius, covariance, correlation with the reverse
// channel), channel jitter (w, μ, σ of inter-arrival times), socket src IP:port -> dst IP:port
// (same 7 as the channel). Feature order is documented in the .cpp and stable.
class FeatureExtractor {
 public:
  explicit FeatureExtractor(ExtractorConfig cfg = {});
  ~FeatureExtractor();
  FeatureExtractor(FeatureExtractor&&) noexcept;
  FeatureExtractor& operator=(FeatureExtractor&&) noexcept;
  std::size_t dim() const;
  // Updates the statistics with `p` and writes the dim() features it yields into `out`
  // (out.size() must be dim()). Never allocates on the steady path once a stream exists.
  void extract(const PacketInfo& p, std::span<double> out);
  ExtractorStats stats() const;
  // Human-readable name of feature i ("MI_dir_L5_weight", ...), for reports and tests.
  std::string feature_name(std::size_t i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct KitNetConfig {
  std::size_t max_ae = 10;          // m: at most this many features per autoencoder
  std::size_t fm_grace = 5000;      // packets that train the feature mapper
  std::size_t ad_grace = 50000;     // packets after that which train the autoencoders
  double learning_rate = 0.1;
  double hidden_ratio = 0.75;       // hidden units = ceil(ratio x inputs)
  uint64_t seed = 1;                // weight initialisation (deterministic)
};

// The ensemble. Phases by packet count: mapping (the first fm_grace: the clustering's
// correlation sums are updated, score 0), training (the next ad_grace: every autoencoder learns,
// score 0), executing (scores only, the model no longer changes).
class KitNet {
 public:
  enum class Phase : uint8_t { kMapping = 0, kTraining = 1, kExecuting = 2 };
  KitNet(std::size_t dim, KitNetConfig cfg);
  ~KitNet();
  KitNet(KitNet&&) noexcept;
  KitNet& operator=(KitNet&&) noexcept;
  // One instance: trains or scores according to the phase; returns the RMSE score (0 before
  // executing).
  double process(std::span<const double> x);
  // Scores without training, whatever the phase (0 before the map exists).
  double execute(std::span<const double> x) const;
  Phase phase() const;
  uint64_t processed() const;
  // The feature groups the mapper chose (empty before the training phase starts).
  const std::vector<std::vector<std::size_t>>& feature_map() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The extractor and the ensemble together: Kitsune's per-packet pipeline.
class Kitsune {
 public:
  Kitsune(ExtractorConfig ecfg, KitNetConfig kcfg);
  double process(const PacketInfo& p);   // extract + KitNet::process
  const FeatureExtractor& extractor() const { return fe_; }
  const KitNet& net() const { return net_; }
  // The features of the last packet processed (extractor().dim() values), e.g. to explain an
  // alert; valid until the next process().
  std::span<const double> last_features() const { return x_; }

 private:
  FeatureExtractor fe_;
  KitNet net_;
  std::vector<double> x_;
};

// A threshold from benign scores: fits a log-normal to `scores` (those > 0) and returns
// exp(mean(ln s) + z * sd(ln s)), never below the largest benign score times `floor_factor`
// (0 disables the floor). Returns 0 when fewer than 2 positive scores are given.
double fit_threshold(std::span<const double> scores, double z, double floor_factor = 0.0);

}  // namespace sdn::ids
