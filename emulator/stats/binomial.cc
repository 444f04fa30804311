#include "emulator/stats/binomial.h"

#include <algorithm>
#include <cmath>

namespace geotb::emu {

std::pair<double, double> wilson_interval(uint64_t k, uint64_t n, double z) {
  if (n == 0) return {0.0, 1.0};
  const double p = static_cast<double>(k) / static_cast<double>(n), nn = static_cast<double>(n);
  const double d = 1 + z * z / nn;
  const double c = (p + z * z / (2 * nn)) / d;
  const double h = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / d;
  return {std::max(0.0, c - h), std::min(1.0, c + h)};
}

}  // namespace geotb::emu
