// A rate from arrival counts in fixed bins, with a batch-means confidence interval.
//
// The counts come from a receiver: counts[i] arrivals with a timestamp in
// [first + i * bin_s, first + (i + 1) * bin_s), `first` being the first arrival. The estimate and
// its interval describe one window, the same for both:
//   - bin 0 is left out (start-up: the sender ramps, the first frames cross an empty queue),
//   - the last bin is left out (it ends at the last arrival, so it is partial by construction),
//   - the window is cut to a whole number B of batches of `bins_per_batch` bins; the bins that
//     do not fill a batch at the end are left out too.
// Batch k covers bins [1 + k * per, 1 + (k + 1) * per). Its rate is count_k * scale / (per * bin_s).
//   mean       = (sum of the window's counts) * scale / window_s: the window's overall rate, which
//                is also the mean of the batch rates (equal-length batches), so the interval is
//                centred on the figure it qualifies
//   half_width = t_{(1+confidence)/2, B-1} * sd(batch rates) / sqrt(B)  (Student t, exact quantile)
// Batches of a few hundred ms are long against the correlation time of a paced sender and a
// drop-tail queue, which is what the t interval over batch means assumes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace geotb::emu {

struct BatchMeans {
  size_t batches = 0;       ///< B; 0 when fewer than 2 batches fit (no interval then)
  size_t first_bin = 0;     ///< the window is bins [first_bin, first_bin + bins)
  size_t bins = 0;
  double window_s = 0.0;    ///< bins * bin_s
  uint64_t count = 0;       ///< arrivals in the window
  double mean = 0.0;        ///< scale units per second over the window
  double sd = 0.0;          ///< sample standard deviation of the batch rates (B - 1 in the denominator)
  double half_width = 0.0;  ///< of the confidence interval
  double ci_low = 0.0, ci_high = 0.0;
  std::vector<double> batch_rates;
};

/// See the file comment. `scale`: units per arrival (e.g. wire bits per datagram). Throws
/// std::invalid_argument for bin_s <= 0, bins_per_batch == 0 or confidence outside (0, 1).
BatchMeans batch_means(const std::vector<uint64_t>& counts, double bin_s, size_t bins_per_batch, double scale,
                       double confidence = 0.95);

}  // namespace geotb::emu
