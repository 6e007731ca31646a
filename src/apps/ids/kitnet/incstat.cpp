// The single-λ reference statistics of incstat.hpp (Kitsune Table 1).
#include "apps/ids/kitnet/incstat.hpp"

#include <algorithm>

namespace sdn::ids {

void IncStat::decay_to(double t) {
  if (!started_) {
    started_ = true;
    t_last_ = t;
    return;
  }
  const double g = decay_factor(lambda_, t - t_last_);
  w_ *= g;
  ls_ *= g;
  ss_ *= g;
  t_last_ = std::max(t_last_, t);
}

void IncStat::insert(double x, double t) {
  decay_to(t);
  w_ += 1;
  ls_ += x;
  ss_ += x * x;
}

void IncStat2D::insert(int side, double x, double t) {
  const int other = 1 - side;
  // SR shares the pair's clock: both sides are decayed to now on every update, so one γ serves
  // all three (side 0's clock is the pair's, as both sides always end at the same time).
  const double t_pair = std::max(side_[0].last_time(), side_[1].last_time());
  const bool any = side_[0].weight() > 0 || side_[1].weight() > 0;
  if (any) sr_ *= decay_factor(side_[0].lambda(), t - t_pair);
  side_[side].insert(x, t);
  side_[other].decay_to(std::max(t, t_pair));
  const double r = x - side_[side].mean();
  sr_ += r * residual_[other];
  residual_[side] = r;
}

double IncStat2D::magnitude() const {
  const double a = side_[0].mean(), b = side_[1].mean();
  return std::sqrt(a * a + b * b);
}

double IncStat2D::radius() const { return std::sqrt(side_[0].var() + side_[1].var()); }

double IncStat2D::covariance() const {
  const double w = side_[0].weight() + side_[1].weight();
  return w > 0 ? sr_ / w : 0.0;
}

double IncStat2D::correlation() const {
  const double s = side_[0].std() * side_[1].std();
  return s > 0 ? covariance() / s : 0.0;
}

}  // namespace sdn::ids
