// fit_threshold: a log-normal fitted to benign scores (Kitsune section VI fits the RMSEs of
// benign traffic this way and alarms above a tail quantile of the fit).
#include <algorithm>
#include <cmath>

#include "apps/ids/kitnet/kitsune.hpp"

namespace sdn::ids {

double fit_threshold(std::span<const double> scores, double z, double floor_factor) {
  // Two passes over the logs (mean, then the sample standard deviation with n − 1), no copy.
  std::size_t n = 0;
  double sum = 0, top = 0;
  for (double s : scores) {
    if (!(s > 0) || !std::isfinite(s)) continue;
    ++n;
    sum += std::log(s);
    top = std::max(top, s);
  }
  if (n < 2) return 0.0;
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (double s : scores) {
    if (!(s > 0) || !std::isfinite(s)) continue;
    const double d = std::log(s) - mean;
    ss += d * d;
  }
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  const double t = std::exp(mean + z * sd);
  return floor_factor > 0 ? std::max(t, top * floor_factor) : t;
}

}  // namespace sdn::ids
