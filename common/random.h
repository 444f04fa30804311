// Seeded random stream for the link model. Every model object gets its own stream, assigned
// explicitly by whoever builds it (ns-3's AssignStreams idea), so a run with the same seed
// repeats exactly. Never seeded from time or rand().
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace geotb::emu {

class RandomStream {
 public:
  /// `seed` chooses the run, `stream` the object inside the run (e.g. link index * 2 + direction).
  RandomStream(uint64_t seed, uint64_t stream) : eng_(mix(seed, stream)) {}

  /// Uniform in [0, 1) with 53 random bits: resolution 2^-53 ~ 1.1e-16, so probabilities down to
  /// 1e-12 are represented without a floor.
  double uniform01() { return static_cast<double>(eng_() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  /// Bernoulli(p): true with probability p. p <= 0 is never true, p >= 1 always.
  bool bernoulli(double p) { return uniform01() < p; }
  /// Standard normal via Box-Muller on our own uniforms (std::normal_distribution's output is
  /// implementation-defined, which would make runs differ between standard libraries).
  double normal() {
    if (has_spare_) { has_spare_ = false; return spare_; }
    double u1 = 0.0;
    while (u1 <= 0.0) u1 = uniform01();
    const double u2 = uniform01();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }
  uint64_t next_u64() { return eng_(); }

 private:
  static uint64_t mix(uint64_t seed, uint64_t stream) {
    // splitmix64 of both, so nearby seeds/streams give unrelated engines.
    auto sm = [](uint64_t z) {
      z += 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    return sm(sm(seed) ^ (stream * 0xd1342543de82ef95ULL + 1));
  }
  std::mt19937_64 eng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace geotb::emu
