#include "kernels/quantize.h"

#include <algorithm>

#include "kernels/wire_format.h"

namespace geotb::kernels {

void quantize_int8_blocks(const float* vals, const uint32_t* idx, size_t k, uint32_t block,
                          Rounding rounding, uint64_t seed, float* scales, int8_t* q) {
  for (size_t b0 = 0, b = 0; b0 < k; b0 += block, ++b) {
    const size_t b1 = std::min<size_t>(k, b0 + block);
    float m = 0.0f;
    for (size_t j = b0; j < b1; ++j) m = std::max(m, std::fabs(vals[j]));
    const float s = block_scale(m);
    scales[b] = s;
    for (size_t j = b0; j < b1; ++j) q[j] = quantize_one(vals[j], s, rounding, seed, idx[j]);
  }
}

}  // namespace geotb::kernels
