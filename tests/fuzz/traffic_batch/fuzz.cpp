// Fuzzes the sampler's batch format and everything the detector does with a batch: a batch that
// decodes must re-encode to the same bytes; every frame goes through packet_info and a detector
// with tiny grace periods (so inputs reach the mapping, training, fitting and detecting phases),
// whose scores must be finite and non-negative whatever the timestamps and frames.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "apps/ids/detector.hpp"
#include "apps/ids/traffic.hpp"

using namespace sdn::apps::ids;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  BatchWriter w;
  DetectorConfig cfg;
  cfg.kitnet.fm_grace = 10;
  cfg.kitnet.ad_grace = 10;
  cfg.fit_packets = 5;
  cfg.min_anomalous = 1;
  cfg.score_mode = ScoreMode::kPacket;
  cfg.extractor.max_streams = 64;
  // Two decay factors (40 features): the mapper's clustering at the end of fm_grace is cubic in
  // the feature count, and with 100 features it held the fuzzer to ~100 inputs a second.
  cfg.extractor.lambdas = {5, 0.1};
  DetectorCore core(cfg);
  DetectorCore::Output out;
  auto r = for_each_frame(in, [&](const Frame& f) {
    w.add(f.ts_ns, f.wire_len, f.source, f.bytes);
    (void)packet_info(f, 0);
    core.on_frame(f, 0, out);
  });
  core.flush(out);
  for (const auto& [key, value] : out.records) {
    if (key == "network/ids/score")
      for (const auto& s : value["scores"])
        if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() < 0) std::abort();
  }
  if (r && w.take() != in) std::abort();
  return 0;
}
