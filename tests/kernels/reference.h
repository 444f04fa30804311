// Straightforward reference implementation of the compress.h contract, written for clarity
// (full sort, one element at a time), used to check the fast kernels element by element.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/compress.h"

namespace geotb::kernels::testing {

struct RefResult {
  std::vector<uint32_t> idx;       ///< sent indices, ascending
  std::vector<float> scales;       ///< INT8 only
  std::vector<int8_t> q;           ///< INT8 only
  std::vector<float> fvals;        ///< float32 only
  std::vector<float> residual;     ///< residual after the exchange
  std::vector<float> dequantised;  ///< dense: dequantised(sent), 0 elsewhere
};

/// Indices of the k largest |v| (ties -> lower index), ascending. Full stable sort.
std::vector<uint32_t> ref_topk(const std::vector<float>& v, size_t k);

/// compress_ef by the book for TopkMode::kExact.
RefResult ref_compress(const std::vector<float>& acc, const std::vector<float>& residual,
                       const CompressConfig& cfg);

}  // namespace geotb::kernels::testing
