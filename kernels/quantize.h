// INT8 quantisation with one float scale per block of consecutive *sent* elements.
//
// For a block with m = max |v| over its elements: scale = m / 127.0f (IEEE float division).
//   nearest:    q = rint(v / scale)                       (round half to even)
//   stochastic: x = v / scale; q = floor(x) + (u < x - floor(x)), u = stochastic_uniform(seed, i)
//               where i is the element's index in the dense tensor, so the draw of an element does
//               not depend on which other elements were selected or on thread layout.
//   q is clamped to [-127, 127]; scale == 0 (all-zero block, or m < 127 * FLT_TRUE_MIN) gives q = 0.
// Dequantised value: float(q) * scale (one rounding). Bounds, for normal scales:
//   |deq - v| <= scale/2 (nearest), < scale (stochastic), E[deq] = v (stochastic, up to 2^-24).
// Every operation is IEEE-exact-rounded, so the CUDA kernels reproduce it bit for bit.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/compress.h"
#include "kernels/hd.h"

namespace geotb::kernels {

/// Counter-based uniform in [0, 1) with 24 random bits (splitmix64 finaliser of seed and index).
GEOTB_HD inline float stochastic_uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1p-24f;
}

GEOTB_HD inline float block_scale(float max_abs) { return max_abs / 127.0f; }

GEOTB_HD inline int8_t quantize_one(float v, float scale, Rounding r, uint64_t seed, uint64_t index) {
  if (!(scale > 0.0f)) return 0;
  float x = v / scale;
  float q;
  if (r == Rounding::kNearest) {
    q = rintf(x);
  } else {
    float f = floorf(x);
    q = f + (stochastic_uniform(seed, index) < (x - f) ? 1.0f : 0.0f);
  }
  q = q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
  return static_cast<int8_t>(q);
}

/// Quantises the k selected values vals[0..k) (in index order; idx[j] is the dense index of
/// vals[j], used only by stochastic rounding) in blocks of `block`. Writes num_blocks(k, block)
/// scales and k codes.
void quantize_int8_blocks(const float* vals, const uint32_t* idx, size_t k, uint32_t block,
                          Rounding rounding, uint64_t seed, float* scales, int8_t* q);

}  // namespace geotb::kernels
