// Comparing a quantity measured under two conditions A and B in alternating, adjacent pairs
// (a_1, b_1, a_2, b_2, ...): how large B is relative to A.
//
// The fidelity runner uses it for "delay only vs plain io-forwarding" TCP goodput. Both are bound
// by the CPU the TCP endpoints share, whose speed drifts between runs (other tenants, steal time,
// compiles) while one run is steady (per-second goodput within a few %): a pair measured back to
// back sees nearly the same machine, so a pair's ratio b_k / a_k cancels most of that drift, and
// the median of the pair ratios ignores one pair spoiled by a stall.
//   pair_ratios[k]     = b_k / a_k
//   median_pair_ratio  = median of pair_ratios (mean of the middle two for an even count)
//   ratio_of_means     = mean(b) / mean(a)
//   ratio_of_medians   = median(b) / median(a)
//   geometric_mean     = exp(mean of ln pair_ratios): the ratio the pairs agree on, a ratio and
//                        its inverse weighing the same
//   ci_low, ci_high    = exp(mean ± t_{(1+confidence)/2, n-1} · sd(ln ratios) / sqrt(n)): Student t
//                        interval of the log ratio's mean (pairs independent, log ratios roughly
//                        normal), for n >= 2; both equal to geometric_mean for one pair; all
//                        three 0 when a b_k is 0
#pragma once

#include <vector>

namespace geotb::emu {

struct PairedRatio {
  std::vector<double> pair_ratios;
  double median_pair_ratio = 0.0;
  double min_pair_ratio = 0.0, max_pair_ratio = 0.0;
  double ratio_of_means = 0.0;
  double ratio_of_medians = 0.0;
  double geometric_mean = 0.0;
  double log_ratio_sd = 0.0;  ///< sample sd of ln pair_ratios (n - 1 in the denominator); 0 for one pair
  double confidence = 0.95;
  double ci_low = 0.0, ci_high = 0.0;
};

double median(std::vector<double> v);  ///< of a copy; throws std::invalid_argument when empty

/// Throws std::invalid_argument when a and b differ in size, are empty, an a_k is not > 0, or
/// confidence is outside (0, 1).
PairedRatio paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95);

}  // namespace geotb::emu
