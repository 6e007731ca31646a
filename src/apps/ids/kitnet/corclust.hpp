// KitNET's feature mapper (Kitsune section V-A, "corClust"): incremental correlation distances
// between features over the mapping phase, then agglomerative clustering cut so that no group
// has more than m features.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace sdn::ids {

class CorClust {
 public:
  explicit CorClust(std::size_t n);
  // Adds one instance (x.size() must be n). O(n²): only run during the mapping phase.
  void update(std::span<const double> x);
  // D = 1 − correlation (clamped at 0), over the instances seen; 1 for a feature that never
  // varied. Row-major n x n.
  std::vector<double> distance() const;
  // Average-linkage agglomerative clustering of the features by distance(), with the dendrogram
  // split top-down until every group has at most max_size features. Each group is sorted; the
  // groups follow the dendrogram's left-to-right order. Deterministic (ties go to lower indices).
  std::vector<std::vector<std::size_t>> cluster(std::size_t max_size) const;
  std::size_t seen() const { return n_seen_; }

 private:
  std::size_t n_;
  std::size_t n_seen_ = 0;
  std::vector<double> sum_;    // Σ x
  std::vector<double> sum_r_;  // Σ r, r = x − running mean (kept as in the paper; not needed by D)
  std::vector<double> sum_rs_; // Σ r²
  std::vector<double> sum_c_;  // Σ r rᵀ, upper triangle row-major
  std::vector<double> r_;      // scratch
};

}  // namespace sdn::ids
