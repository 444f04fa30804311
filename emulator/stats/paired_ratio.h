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
#pragma once

#include <vector>

namespace geotb::emu {

struct PairedRatio {
  std::vector<double> pair_ratios;
  double median_pair_ratio = 0.0;
  double min_pair_ratio = 0.0, max_pair_ratio = 0.0;
  double ratio_of_means = 0.0;
  double ratio_of_medians = 0.0;
};

double median(std::vector<double> v);  ///< of a copy; throws std::invalid_argument when empty

/// Throws std::invalid_argument when a and b differ in size, are empty, or an a_k is not > 0.
PairedRatio paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace geotb::emu
