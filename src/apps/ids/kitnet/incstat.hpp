// Damped incremental statistics (Kitsune, NDSS 2018, section IV-B, Table 1): the (w, LS, SS)
// summary of one stream at one decay factor, and the helpers the extractor's multi-λ slots use.
#pragma once

#include <cmath>
#include <cstdint>

namespace sdn::ids {

// γ = 2^(−λ·dt): the factor by which a stream's memory shrinks over a silence of dt seconds, so
// its weight halves every 1/λ seconds. dt <= 0 (same time, or a late packet) leaves it whole.
inline double decay_factor(double lambda, double dt) { return dt > 0 ? std::exp2(-lambda * dt) : 1.0; }

// μ and σ from a decayed (w, LS, SS). The variance SS/w − μ² cancels catastrophically for a
// constant stream (a noise of ~1e-16·μ² instead of 0), and that noise would make σ, and the
// correlation divided by it, jitter; so a variance below kVarEpsilon·μ² counts as 0.
inline constexpr double kVarEpsilon = 1e-10;
inline double stat_mean(double w, double ls) { return w > 0 ? ls / w : 0.0; }
inline double stat_var(double w, double ls, double ss) {
  if (w <= 0) return 0.0;
  const double mu = ls / w;
  const double v = std::fabs(ss / w - mu * mu);
  return v <= kVarEpsilon * mu * mu ? 0.0 : v;
}

// One stream at one λ: the reference form of the statistics (the extractor keeps the same numbers
// for all λs of a stream in one flat slot, see extractor.cpp). Used by tests and by anyone who
// needs a single damped statistic.
class IncStat {
 public:
  explicit IncStat(double lambda) : lambda_(lambda) {}
  // Decays to time t (a t before the last update counts as that time), then adds x.
  void insert(double x, double t);
  // Decays to time t without adding anything (what a 2D update does to the other stream).
  void decay_to(double t);
  double weight() const { return w_; }
  double mean() const { return stat_mean(w_, ls_); }
  double var() const { return stat_var(w_, ls_, ss_); }
  double std() const { return std::sqrt(var()); }
  double last_time() const { return t_last_; }
  double lambda() const { return lambda_; }

 private:
  double lambda_;
  double w_ = 0, ls_ = 0, ss_ = 0;
  double t_last_ = 0;
  bool started_ = false;
};

// The 2D statistics between a stream i and its reverse j at one λ: each update of either side
// decays both sides and SR_ij to now, inserts the value into its side, and adds r_i·r_j to SR_ij
// (r_i = x − μ_i after the insert, r_j = j's most recent residual).
class IncStat2D {
 public:
  explicit IncStat2D(double lambda) : side_{IncStat(lambda), IncStat(lambda)} {}
  void insert(int side, double x, double t);  // side 0 = i, 1 = j
  const IncStat& stream(int side) const { return side_[side]; }
  double magnitude() const;    // sqrt(μ_i² + μ_j²)
  double radius() const;       // sqrt(σ_i² + σ_j²)
  double covariance() const;   // SR_ij / (w_i + w_j)
  double correlation() const;  // cov / (σ_i σ_j), 0 when either σ is 0
  double sr() const { return sr_; }

 private:
  IncStat side_[2];
  double residual_[2] = {0, 0};
  double sr_ = 0;
};

}  // namespace sdn::ids
