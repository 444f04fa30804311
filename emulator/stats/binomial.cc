#include "emulator/stats/binomial.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace geotb::emu {

std::pair<double, double> wilson_interval(uint64_t k, uint64_t n, double z) {
  if (n == 0) return {0.0, 1.0};
  const double p = static_cast<double>(k) / static_cast<double>(n), nn = static_cast<double>(n);
  const double d = 1 + z * z / nn;
  const double c = (p + z * z / (2 * nn)) / d;
  const double h = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / d;
  return {std::max(0.0, c - h), std::min(1.0, c + h)};
}

double binomial_upper_tail(uint64_t k, uint64_t n, double p) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument("binomial_upper_tail: p " + std::to_string(p) + ": must be in [0, 1]");
  if (n > 1000) throw std::invalid_argument("binomial_upper_tail: n " + std::to_string(n) + ": at most 1000");
  if (k == 0) return 1.0;
  if (k > n) return 0.0;
  if (p == 0) return 0.0;
  if (p == 1) return 1.0;
  double sum = 0.0;
  for (uint64_t i = k; i <= n; ++i) {
    const double x = static_cast<double>(i), nn = static_cast<double>(n);
    sum += std::exp(std::lgamma(nn + 1) - std::lgamma(x + 1) - std::lgamma(nn - x + 1) + x * std::log(p) + (nn - x) * std::log1p(-p));
  }
  return std::min(1.0, sum);
}

MedianInterval median_interval(uint64_t n, double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("median_interval: confidence " + std::to_string(confidence) + ": must be in (0, 1)");
  MedianInterval m;
  // Coverage of [x_(j), x_(n+1-j)]: 1 - 2 P(B <= j - 1) = 1 - 2 (1 - P(B >= j)), B ~ Bin(n, 1/2).
  for (uint64_t j = 1; 2 * j <= n; ++j) {
    const double cov = 1 - 2 * (1 - binomial_upper_tail(j, n, 0.5));
    if (cov < confidence) break;
    m.j = j;
    m.coverage = cov;
  }
  return m;
}

}  // namespace geotb::emu
