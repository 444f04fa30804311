// Intervals for a proportion.
#pragma once

#include <cstdint>
#include <utility>

namespace geotb::emu {

/// Wilson score interval for k successes in n independent trials at z (1.96 = 95 %);
/// {0, 1} for n == 0.
std::pair<double, double> wilson_interval(uint64_t k, uint64_t n, double z = 1.96);

/// P(X >= k) for X ~ Binomial(n, p): the exact sum of the terms k..n (n <= 1000). 1 for k == 0,
/// 0 for k > n. Throws std::invalid_argument for p outside [0, 1] or n > 1000.
double binomial_upper_tail(uint64_t k, uint64_t n, double p);

/// Distribution-free confidence interval for the median of a continuous distribution from n
/// independent samples (the sign test): the order statistics x_(j) and x_(n+1-j), 1-based, with
/// the largest j such that the coverage 1 - 2 P(Binomial(n, 1/2) <= j - 1) is >= confidence.
/// `j` is 0 (no interval) when even [x_(1), x_(n)] covers less (n < 5 at 95 %).
struct MedianInterval {
  uint64_t j = 0;         ///< lower order statistic; the upper is n + 1 - j
  double coverage = 0.0;  ///< its exact coverage
};
MedianInterval median_interval(uint64_t n, double confidence = 0.95);

}  // namespace geotb::emu
