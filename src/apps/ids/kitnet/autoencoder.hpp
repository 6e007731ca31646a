// One of KitNET's autoencoders (Kitsune section V-B): three layers with tied weights (W encodes,
// Wᵀ decodes), sigmoid activations, inputs scaled to [0,1] by the min/max seen while training,
// trained online by SGD; its score is the reconstruction RMSE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "apps/ids/kitnet/rng.hpp"

namespace sdn::ids {

class Autoencoder {
 public:
  Autoencoder(std::size_t n_visible, std::size_t n_hidden, double learning_rate, uint64_t seed);
  // Widens the min/max with x, scales it, takes one SGD step; returns the RMSE before the step.
  double train(std::span<const double> x);
  // The RMSE of x's reconstruction, scaled by the training min/max (values outside that range
  // scale outside [0,1], which is what makes novel traffic score high). 0 before any training.
  // Uses internal scratch buffers: not for concurrent calls on one instance.
  double execute(std::span<const double> x) const;
  std::size_t visible() const { return n_v_; }
  std::size_t hidden() const { return n_h_; }
  uint64_t trained() const { return trained_; }

 private:
  // Scales x into xs_, encodes into h_, decodes into z_; returns the RMSE.
  double forward(std::span<const double> x) const;

  std::size_t n_v_, n_h_;
  double lr_;
  std::vector<double> w_;  // n_v x n_h, row-major (row = visible unit)
  std::vector<double> bh_, bv_;
  std::vector<double> min_, max_;
  uint64_t trained_ = 0;
  mutable std::vector<double> xs_, h_, z_, dv_, dh_;
};

}  // namespace sdn::ids
