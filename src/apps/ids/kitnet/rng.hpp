// A tiny seeded generator shared by the weight initialisation and the synthetic traffic.
#pragma once

#include <cstdint>

namespace sdn::ids {

// splitmix64: a tiny portable generator, so weights are the same on every standard library
// (std:: distributions are implementation-defined).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t s_;
};

}  // namespace sdn::ids
