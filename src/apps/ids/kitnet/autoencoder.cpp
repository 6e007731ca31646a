// Autoencoder: forward pass, the SGD step, and the min/max scaling.
#include "apps/ids/kitnet/autoencoder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sdn::ids {

namespace {
double sigmoid(double a) { return 1.0 / (1.0 + std::exp(-a)); }
// Keeps a feature that was constant in training from dividing by zero; such a feature then
// reads any later change as a very large deviation, as in the original.
constexpr double kRangeEpsilon = 1e-16;
}  // namespace

Autoencoder::Autoencoder(std::size_t n_visible, std::size_t n_hidden, double learning_rate, uint64_t seed)
    : n_v_(n_visible),
      n_h_(std::max<std::size_t>(n_hidden, 1)),
      lr_(learning_rate),
      w_(n_v_ * n_h_),
      bh_(n_h_, 0.0),
      bv_(n_v_, 0.0),
      min_(n_v_, std::numeric_limits<double>::infinity()),
      max_(n_v_, -std::numeric_limits<double>::infinity()),
      xs_(n_v_),
      h_(n_h_),
      z_(n_v_),
      dv_(n_v_),
      dh_(n_h_) {
  // Glorot-uniform initial weights: keeps the sigmoids out of saturation at the start.
  SplitMix64 rng(seed);
  const double a = std::sqrt(6.0 / static_cast<double>(n_v_ + n_h_));
  for (double& w : w_) w = (2 * rng.uniform() - 1) * a;
}

double Autoencoder::forward(std::span<const double> x) const {
  for (std::size_t i = 0; i < n_v_; ++i) xs_[i] = (x[i] - min_[i]) / (max_[i] - min_[i] + kRangeEpsilon);
  for (std::size_t j = 0; j < n_h_; ++j) h_[j] = bh_[j];
  for (std::size_t i = 0; i < n_v_; ++i) {
    const double xi = xs_[i];
    const double* row = &w_[i * n_h_];
    for (std::size_t j = 0; j < n_h_; ++j) h_[j] += xi * row[j];
  }
  for (std::size_t j = 0; j < n_h_; ++j) h_[j] = sigmoid(h_[j]);
  double se = 0;
  for (std::size_t i = 0; i < n_v_; ++i) {
    const double* row = &w_[i * n_h_];
    double a = bv_[i];
    for (std::size_t j = 0; j < n_h_; ++j) a += row[j] * h_[j];
    z_[i] = sigmoid(a);
    const double e = xs_[i] - z_[i];
    se += e * e;
  }
  return std::sqrt(se / static_cast<double>(n_v_));
}

double Autoencoder::train(std::span<const double> x) {
  if (x.size() != n_v_) return 0.0;
  for (std::size_t i = 0; i < n_v_; ++i) {
    min_[i] = std::min(min_[i], x[i]);
    max_[i] = std::max(max_[i], x[i]);
  }
  ++trained_;
  const double rmse = forward(x);
  // Gradient of the cross-entropy loss between the scaled input and the sigmoid output (both in
  // [0,1] here): at the output it is simply x − z, which, unlike squared error through the
  // sigmoid, does not vanish when an output saturates. The score stays the RMSE.
  for (std::size_t i = 0; i < n_v_; ++i) dv_[i] = xs_[i] - z_[i];
  for (std::size_t j = 0; j < n_h_; ++j) dh_[j] = 0;
  for (std::size_t i = 0; i < n_v_; ++i) {
    const double* row = &w_[i * n_h_];
    for (std::size_t j = 0; j < n_h_; ++j) dh_[j] += row[j] * dv_[i];
  }
  for (std::size_t j = 0; j < n_h_; ++j) dh_[j] *= h_[j] * (1 - h_[j]);
  // Tied weights: W gets the encoder's and the decoder's gradient.
  for (std::size_t i = 0; i < n_v_; ++i) {
    double* row = &w_[i * n_h_];
    for (std::size_t j = 0; j < n_h_; ++j) row[j] += lr_ * (xs_[i] * dh_[j] + dv_[i] * h_[j]);
  }
  for (std::size_t j = 0; j < n_h_; ++j) bh_[j] += lr_ * dh_[j];
  for (std::size_t i = 0; i < n_v_; ++i) bv_[i] += lr_ * dv_[i];
  return rmse;
}

double Autoencoder::execute(std::span<const double> x) const {
  if (x.size() != n_v_ || trained_ == 0) return 0.0;
  return forward(x);
}

}  // namespace sdn::ids
