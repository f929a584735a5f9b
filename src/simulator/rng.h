// The simulator's random numbers: splitmix64 with Box-Muller normals, so a
// seed gives the same run on every platform (the standard library's
// distributions are implementation-defined).

#ifndef LAGGARD_SIMULATOR_RNG_H_
#define LAGGARD_SIMULATOR_RNG_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace laggard::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Normal() {
    double u1 = std::max(Uniform(), 1e-300), u2 = Uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace laggard::sim

#endif  // LAGGARD_SIMULATOR_RNG_H_
