// KitNET's phases (map, train, execute) over the feature mapper and the autoencoders, and the
// Kitsune pipeline that feeds it from the extractor.
#include <algorithm>
#include <cmath>
#include <optional>

#include "apps/ids/kitnet/autoencoder.hpp"
#include "apps/ids/kitnet/corclust.hpp"
#include "apps/ids/kitnet/kitsune.hpp"

namespace sdn::ids {

struct KitNet::Impl {
  Impl(std::size_t d, KitNetConfig c) : dim(d), cfg(c), mapper(d) {
    if (cfg.fm_grace == 0) build();
  }

  // Ends the mapping phase: the groups, one autoencoder each, the output autoencoder, and every
  // buffer the per-packet path needs (nothing is allocated after this).
  void build() {
    groups = mapper.cluster(cfg.max_ae);
    mapper = CorClust(0);  // the O(n²) sums are no longer needed
    SplitMix64 seeds(cfg.seed);
    std::size_t widest = 0;
    ensemble.reserve(groups.size());
    for (const auto& g : groups) {
      const auto hidden = static_cast<std::size_t>(std::ceil(cfg.hidden_ratio * static_cast<double>(g.size())));
      ensemble.emplace_back(g.size(), hidden, cfg.learning_rate, seeds.next());
      widest = std::max(widest, g.size());
    }
    const auto out_hidden = static_cast<std::size_t>(std::ceil(cfg.hidden_ratio * static_cast<double>(groups.size())));
    output.emplace(groups.size(), out_hidden, cfg.learning_rate, seeds.next());
    sub.resize(widest);
    scores.resize(groups.size());
    built = true;
  }

  std::span<const double> gather(std::span<const double> x, const std::vector<std::size_t>& g) const {
    for (std::size_t i = 0; i < g.size(); ++i) sub[i] = x[g[i]];
    return {sub.data(), g.size()};
  }

  void train(std::span<const double> x) {
    for (std::size_t a = 0; a < ensemble.size(); ++a) scores[a] = ensemble[a].train(gather(x, groups[a]));
    output->train(scores);
  }

  double execute(std::span<const double> x) const {
    if (!built || x.size() != dim) return 0.0;
    for (std::size_t a = 0; a < ensemble.size(); ++a) scores[a] = ensemble[a].execute(gather(x, groups[a]));
    return output->execute(scores);
  }

  Phase phase() const {
    if (n < cfg.fm_grace) return Phase::kMapping;
    if (n < cfg.fm_grace + cfg.ad_grace) return Phase::kTraining;
    return Phase::kExecuting;
  }

  std::size_t dim;
  KitNetConfig cfg;
  CorClust mapper;
  bool built = false;
  uint64_t n = 0;
  std::vector<std::vector<std::size_t>> groups;
  std::vector<Autoencoder> ensemble;
  std::optional<Autoencoder> output;
  mutable std::vector<double> sub;     // one group's features
  mutable std::vector<double> scores;  // the ensemble's RMSEs, the output layer's input
};

KitNet::KitNet(std::size_t dim, KitNetConfig cfg) : impl_(std::make_unique<Impl>(dim, cfg)) {}
KitNet::~KitNet() = default;
KitNet::KitNet(KitNet&&) noexcept = default;
KitNet& KitNet::operator=(KitNet&&) noexcept = default;

double KitNet::process(std::span<const double> x) {
  Impl& m = *impl_;
  if (x.size() != m.dim) return 0.0;
  switch (m.phase()) {
    case Phase::kMapping:
      m.mapper.update(x);
      if (++m.n == m.cfg.fm_grace) m.build();
      return 0.0;
    case Phase::kTraining:
      m.train(x);
      ++m.n;
      return 0.0;
    case Phase::kExecuting:
      break;
  }
  ++m.n;
  return m.execute(x);
}

double KitNet::execute(std::span<const double> x) const { return impl_->execute(x); }
KitNet::Phase KitNet::phase() const { return impl_->phase(); }
uint64_t KitNet::processed() const { return impl_->n; }
const std::vector<std::vector<std::size_t>>& KitNet::feature_map() const { return impl_->groups; }

Kitsune::Kitsune(ExtractorConfig ecfg, KitNetConfig kcfg)
    : fe_(std::move(ecfg)), net_(fe_.dim(), kcfg), x_(fe_.dim()) {}

double Kitsune::process(const PacketInfo& p) {
  fe_.extract(p, x_);
  return net_.process(x_);
}

}  // namespace sdn::ids
