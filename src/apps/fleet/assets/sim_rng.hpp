// The emulator's random numbers: a seeded 64-bit generator with hand-written distributions, so a
// seed gives the same fleet, print times, anomalies and sensor noise with any standard library
// (std::*_distribution output is implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>

namespace sdn::fleet {

class SimRng {
 public:
  // stream separates independent sequences drawn from one seed (jobs, noise, ids, ...).
  explicit SimRng(uint64_t seed, uint64_t stream = 0) : state_(seed * 0x9E3779B97F4A7C15ULL ^ (stream + 1) * 0xD1B54A32D192ED03ULL) {
    for (int k = 0; k < 4; ++k) next();
  }

  // SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, passes BigCrush; enough for an emulator.
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1): never exactly 0 (for logs and "a point strictly inside a phase").
  double uniform_open() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Normal(0, sd) by Box-Muller (one of the pair; simplicity over speed).
  double gaussian(double sd) {
    const double u1 = uniform_open();
    const double u2 = uniform();
    return sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }
  // Triangular(lo, mode, hi) by inverting its CDF.
  double triangular(double lo, double mode, double hi) { return triangular_quantile(uniform(), lo, mode, hi); }

  static double triangular_quantile(double u, double lo, double mode, double hi) {
    if (!(hi > lo)) return lo;
    const double f = (mode - lo) / (hi - lo);
    if (u < f) return lo + std::sqrt(u * (hi - lo) * (mode - lo));
    return hi - std::sqrt((1 - u) * (hi - lo) * (hi - mode));
  }

 private:
  uint64_t state_;
};

}  // namespace sdn::fleet
