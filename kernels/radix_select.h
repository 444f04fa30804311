// The k-th largest 31-bit magnitude key by radix select, as the CUDA backend finds it
// (kernels/cuda/compress_ef.cu: kth_hist_kernel and kth_find_kernel, one pass per field below):
// each pass counts the keys whose bits above its field equal the prefix chosen so far, by the
// field's value, and takes the value at which the count from the top reaches k. The answer and the
// count of larger keys equal kth_largest_key's (kernels/topk.h); tests/kernels checks the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/topk.h"

namespace geotb::kernels {

/// The bit fields of the passes, from the top: [20, 31), [9, 20), [0, 9).
struct RadixField {
  unsigned shift, bits;
};
inline constexpr RadixField kRadixFields[3] = {{20, 11}, {9, 11}, {0, 9}};

/// The host's sequential version of the passes over keys[0..c) (1 <= k <= c).
inline KthKey kth_key_radix(const uint32_t* keys, size_t c, size_t k) {
  uint32_t prefix = 0;
  size_t above = 0;
  for (const RadixField f : kRadixFields) {
    const unsigned nb = 1u << f.bits, hi = f.shift + f.bits;
    std::vector<size_t> hist(nb, 0);
    for (size_t j = 0; j < c; ++j)
      if ((keys[j] >> hi) == (prefix >> hi)) ++hist[(keys[j] >> f.shift) & (nb - 1)];
    unsigned b = nb;
    while (above + hist[b - 1] < k) above += hist[--b];
    prefix |= (b - 1) << f.shift;
  }
  return {prefix, above};
}

}  // namespace geotb::kernels
