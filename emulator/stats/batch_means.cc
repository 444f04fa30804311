#include "emulator/stats/batch_means.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "emulator/stats/student_t.h"

namespace geotb::emu {

BatchMeans batch_means(const std::vector<uint64_t>& counts, double bin_s, size_t bins_per_batch, double scale,
                       double confidence) {
  if (!(bin_s > 0)) throw std::invalid_argument("batch_means: bin_s " + std::to_string(bin_s) + ": must be > 0");
  if (bins_per_batch == 0) throw std::invalid_argument("batch_means: bins_per_batch 0: must be >= 1");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("batch_means: confidence " + std::to_string(confidence) + ": must be in (0, 1)");
  BatchMeans r;
  if (counts.size() < 2 + 2 * bins_per_batch) return r;  // bin 0, two batches, the last bin
  const size_t nb = (counts.size() - 2) / bins_per_batch;
  r.batches = nb;
  r.first_bin = 1;
  r.bins = nb * bins_per_batch;
  r.window_s = static_cast<double>(r.bins) * bin_s;
  const double batch_s = static_cast<double>(bins_per_batch) * bin_s;
  for (size_t k = 0; k < nb; ++k) {
    uint64_t c = 0;
    for (size_t i = 0; i < bins_per_batch; ++i) c += counts[r.first_bin + k * bins_per_batch + i];
    r.count += c;
    r.batch_rates.push_back(static_cast<double>(c) * scale / batch_s);
  }
  r.mean = static_cast<double>(r.count) * scale / r.window_s;
  double ss = 0.0;
  for (double x : r.batch_rates) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / static_cast<double>(nb - 1));
  const double t = student_t_quantile(0.5 + confidence / 2, static_cast<double>(nb - 1));
  r.half_width = t * r.sd / std::sqrt(static_cast<double>(nb));
  r.ci_low = r.mean - r.half_width;
  r.ci_high = r.mean + r.half_width;
  return r;
}

}  // namespace geotb::emu
