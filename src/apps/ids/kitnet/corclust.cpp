// CorClust: the running residual sums and the average-linkage dendrogram over 1 − correlation.
#include "apps/ids/kitnet/corclust.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sdn::ids {

CorClust::CorClust(std::size_t n) : n_(n), sum_(n), sum_r_(n), sum_rs_(n), sum_c_(n * (n + 1) / 2), r_(n) {}

void CorClust::update(std::span<const double> x) {
  if (x.size() != n_) return;
  ++n_seen_;
  const double inv = 1.0 / static_cast<double>(n_seen_);
  for (std::size_t i = 0; i < n_; ++i) {
    sum_[i] += x[i];
    const double r = x[i] - sum_[i] * inv;
    r_[i] = r;
    sum_r_[i] += r;
    sum_rs_[i] += r * r;
  }
  double* c = sum_c_.data();
  for (std::size_t i = 0; i < n_; ++i) {
    const double ri = r_[i];
    for (std::size_t j = i; j < n_; ++j) *c++ += ri * r_[j];
  }
}

std::vector<double> CorClust::distance() const {
  std::vector<double> d(n_ * n_, 0.0);
  std::size_t idx = 0;
  for (std::size_t i = 0; i < n_; ++i) {
    for (std::size_t j = i; j < n_; ++j, ++idx) {
      if (i == j) continue;
      const double den = std::sqrt(sum_rs_[i]) * std::sqrt(sum_rs_[j]);
      double v = den > 0 ? 1.0 - sum_c_[idx] / den : 1.0;
      v = std::max(v, 0.0);
      d[i * n_ + j] = d[j * n_ + i] = v;
    }
  }
  return d;
}

std::vector<std::vector<std::size_t>> CorClust::cluster(std::size_t max_size) const {
  max_size = std::max<std::size_t>(max_size, 1);
  std::vector<std::vector<std::size_t>> groups;
  if (n_ == 0) return groups;
  // Dendrogram nodes: leaves 0..n-1, merges n..2n-2 with their children and sizes.
  const std::size_t nodes = 2 * n_ - 1;
  std::vector<std::size_t> left(nodes, 0), right(nodes, 0), size(nodes, 1);
  std::vector<double> d = distance();
  std::vector<std::size_t> node_of(n_);  // cluster in row i -> its dendrogram node
  std::vector<bool> active(n_, true);
  for (std::size_t i = 0; i < n_; ++i) node_of[i] = i;
  for (std::size_t step = 0; step + 1 < n_; ++step) {
    double best = std::numeric_limits<double>::infinity();
    std::size_t bi = 0, bj = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      if (!active[i]) continue;
      for (std::size_t j = i + 1; j < n_; ++j) {
        if (active[j] && d[i * n_ + j] < best) {
          best = d[i * n_ + j];
          bi = i;
          bj = j;
        }
      }
    }
    const std::size_t node = n_ + step;
    const std::size_t si = size[node_of[bi]], sj = size[node_of[bj]];
    left[node] = node_of[bi];
    right[node] = node_of[bj];
    size[node] = si + sj;
    // Average linkage (Lance-Williams): the merged cluster's distance to k is the size-weighted
    // mean of its parts'. Chosen over the paper's single linkage, whose chaining tends to leave
    // one giant cluster that the size cap then shreds into singletons.
    for (std::size_t k = 0; k < n_; ++k) {
      if (!active[k] || k == bi || k == bj) continue;
      const double v = (static_cast<double>(si) * d[bi * n_ + k] + static_cast<double>(sj) * d[bj * n_ + k]) /
                       static_cast<double>(si + sj);
      d[bi * n_ + k] = d[k * n_ + bi] = v;
    }
    active[bj] = false;
    node_of[bi] = node;
  }
  // Split top-down: a node within the cap is a group, else its children are tried.
  std::vector<std::size_t> stack{nodes - 1};
  while (!stack.empty()) {
    const std::size_t node = stack.back();
    stack.pop_back();
    if (size[node] <= max_size) {
      std::vector<std::size_t> g;
      std::vector<std::size_t> walk{node};
      while (!walk.empty()) {
        const std::size_t v = walk.back();
        walk.pop_back();
        if (v < n_) {
          g.push_back(v);
        } else {
          walk.push_back(right[v]);
          walk.push_back(left[v]);
        }
      }
      std::sort(g.begin(), g.end());
      groups.push_back(std::move(g));
    } else {
      stack.push_back(right[node]);
      stack.push_back(left[node]);
    }
  }
  return groups;
}

}  // namespace sdn::ids
