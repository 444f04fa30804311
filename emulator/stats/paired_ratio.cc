#include "emulator/stats/paired_ratio.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "emulator/stats/student_t.h"

namespace geotb::emu {

double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median: no values");
  const size_t n = v.size(), h = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  if (n % 2 == 1) return v[h];
  const double hi = v[h];
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
  return (lo + hi) / 2;
}

PairedRatio paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  if (a.empty() || a.size() != b.size())
    throw std::invalid_argument("paired_ratio: " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                                " samples: need the same number, at least one");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("paired_ratio: confidence " + std::to_string(confidence) + ": must be in (0, 1)");
  PairedRatio r;
  r.confidence = confidence;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!(a[k] > 0)) throw std::invalid_argument("paired_ratio: a[" + std::to_string(k) + "] = " + std::to_string(a[k]) + " is not > 0");
    r.pair_ratios.push_back(b[k] / a[k]);
  }
  r.median_pair_ratio = median(r.pair_ratios);
  const auto [mn, mx] = std::minmax_element(r.pair_ratios.begin(), r.pair_ratios.end());
  r.min_pair_ratio = *mn;
  r.max_pair_ratio = *mx;
  r.ratio_of_means = std::accumulate(b.begin(), b.end(), 0.0) / std::accumulate(a.begin(), a.end(), 0.0);
  r.ratio_of_medians = median(b) / median(a);
  if (*mn <= 0) return r;  // a zero ratio: no log, geometric mean and interval 0
  const double n = static_cast<double>(r.pair_ratios.size());
  double sum = 0.0;
  for (double x : r.pair_ratios) sum += std::log(x);
  const double mean = sum / n;
  r.geometric_mean = std::exp(mean);
  r.ci_low = r.ci_high = r.geometric_mean;
  if (r.pair_ratios.size() >= 2) {
    double ss = 0.0;
    for (double x : r.pair_ratios) ss += (std::log(x) - mean) * (std::log(x) - mean);
    r.log_ratio_sd = std::sqrt(ss / (n - 1));
    const double h = student_t_quantile(0.5 + confidence / 2, n - 1) * r.log_ratio_sd / std::sqrt(n);
    r.ci_low = std::exp(mean - h);
    r.ci_high = std::exp(mean + h);
  }
  return r;
}

}  // namespace geotb::emu
