// [sampler] and [ids] reading and validation.
#include "apps/ids/config.hpp"

#include <fmt/format.h>

#include "data/key.hpp"
#include "pkt/addr.hpp"

namespace sdn::apps::ids {

SamplerConfig read_sampler_config(core::Config& cfg, std::string_view s) {
  SamplerConfig c;
  c.interfaces = cfg.get_string_list(s, "interfaces", c.interfaces);
  for (const auto& i : c.interfaces)
    if (i.empty() || i.size() > 15 || i.find('/') != std::string::npos)
      cfg.add_problem(fmt::format("{}.interfaces: '{}' is not an interface name (1-15 characters, optional "
                                  "trailing '*')", s, i));
  c.key = cfg.get_string(s, "key", c.key);
  if (auto k = data::Key::parse_concrete(c.key); !k || c.key.rfind("network/traffic/", 0) != 0)
    cfg.add_problem(fmt::format("{}.key: '{}' must be a concrete key under network/traffic/", s, c.key));
  c.snaplen = static_cast<uint32_t>(cfg.get_int(s, "snaplen", c.snaplen, 64, 65535));
  c.max_freq = cfg.get_double(s, "max_freq", c.max_freq, 0.1, 10000);
  c.default_freq = cfg.get_double(s, "default_freq", c.default_freq, 0.1, 10000);
  c.max_batch = static_cast<uint32_t>(cfg.get_int(s, "max_batch", c.max_batch, 1, 1'000'000));
  c.archive = cfg.get_bool(s, "archive", c.archive);
  return c;
}

DetectorConfig read_detector_config(core::Config& cfg, std::string_view s) {
  DetectorConfig c;
  c.extractor.lambdas = cfg.get_double_list(s, "lambdas", c.extractor.lambdas, 1e-6, 1000);
  c.extractor.max_streams = static_cast<size_t>(cfg.get_int(s, "max_streams", static_cast<int64_t>(c.extractor.max_streams), 16, 10'000'000));
  c.kitnet.max_ae = static_cast<size_t>(cfg.get_int(s, "max_ae", static_cast<int64_t>(c.kitnet.max_ae), 1, 100));
  c.kitnet.fm_grace = static_cast<size_t>(cfg.get_int(s, "fm_grace", static_cast<int64_t>(c.kitnet.fm_grace), 10, 100'000'000));
  c.kitnet.ad_grace = static_cast<size_t>(cfg.get_int(s, "ad_grace", static_cast<int64_t>(c.kitnet.ad_grace), 10, 100'000'000));
  c.kitnet.learning_rate = cfg.get_double(s, "learning_rate", c.kitnet.learning_rate, 1e-6, 10);
  c.kitnet.hidden_ratio = cfg.get_double(s, "hidden_ratio", c.kitnet.hidden_ratio, 0.05, 1);
  c.kitnet.seed = static_cast<uint64_t>(cfg.get_int(s, "seed", static_cast<int64_t>(c.kitnet.seed), 0));
  c.traffic_freq = cfg.get_double(s, "traffic_freq", c.traffic_freq, 0.1, 10000);
  // 0 (the default): fitted on the benign scores that follow training.
  const double th = cfg.get_double(s, "threshold", 0, 0, 1e12);
  if (th > 0) c.threshold = th;
  c.fit_packets = static_cast<size_t>(cfg.get_int(s, "fit_packets", static_cast<int64_t>(c.fit_packets), 2, 100'000'000));
  c.fit_z = cfg.get_double(s, "fit_z", c.fit_z, 0, 100);
  c.fit_floor = cfg.get_double(s, "fit_floor", c.fit_floor, 0, 1000);
  c.min_anomalous = static_cast<uint32_t>(cfg.get_int(s, "min_anomalous", c.min_anomalous, 1, 1'000'000));
  c.window = std::chrono::milliseconds(cfg.get_int(s, "window_ms", c.window.count(), 1, 3'600'000));
  c.holdoff = std::chrono::milliseconds(cfg.get_int(s, "holdoff_ms", c.holdoff.count(), 0, 3'600'000));
  const std::string mode = cfg.get_string(s, "score_mode", "window");
  if (mode == "window") c.score_mode = ScoreMode::kWindow;
  else if (mode == "packet") c.score_mode = ScoreMode::kPacket;
  else cfg.add_problem(fmt::format("{}.score_mode: '{}' is not \"window\" or \"packet\"", s, mode));
  c.score_window = std::chrono::milliseconds(cfg.get_int(s, "score_window_ms", c.score_window.count(), 1, 3'600'000));
  c.max_queued_batches = static_cast<size_t>(cfg.get_int(s, "max_queued_batches", static_cast<int64_t>(c.max_queued_batches), 1, 1'000'000));
  c.ignore_macs = cfg.get_string_list(s, "ignore_macs", {});
  for (const auto& m : c.ignore_macs)
    if (!pkt::Mac::parse(m)) cfg.add_problem(fmt::format("{}.ignore_macs: '{}' is not a MAC address", s, m));
  return c;
}

}  // namespace sdn::apps::ids
