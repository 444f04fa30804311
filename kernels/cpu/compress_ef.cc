// CPU compress_ef: fused error-feedback accumulate + top-k + quantise + encode.
#include <cmath>
#include <string>

#include "kernels/compress.h"
#include "kernels/quantize.h"
#include "kernels/topk.h"
#include "kernels/validate.h"
#include "kernels/wire_format.h"

namespace geotb::kernels {

CompressStats compress_ef(const float* acc, float* residual, size_t n, const CompressConfig& cfg,
                          std::vector<uint8_t>& wire) {
  validate_compress_args(acc, residual, n, cfg);
  const uint64_t k = topk_count(n, cfg.density);

  // Pass 1: v = acc + residual, stored in residual (it becomes the residual of every unsent
  // element unchanged); count non-finite values on the way (branch-free, vectorises).
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float v = acc[i] + residual[i];
    residual[i] = v;
    bad += magnitude_key(v) >= kNonFiniteKey;
  }
  if (bad != 0) throw_non_finite(residual, n, bad);

  thread_local std::vector<uint32_t> sel;
  topk_exact(residual, n, k, sel);

  thread_local std::vector<float> vals;
  vals.resize(k);
  for (size_t j = 0; j < k; ++j) vals[j] = residual[sel[j]];

  CompressStats st;
  st.n = n;
  st.k = k;
  if (cfg.values == ValueCoding::kInt8) {
    thread_local std::vector<float> scales;
    thread_local std::vector<int8_t> q;
    scales.resize(num_blocks(k, cfg.block));
    q.resize(k);
    quantize_int8_blocks(vals.data(), sel.data(), k, cfg.block, cfg.rounding, cfg.seed, scales.data(), q.data());
    // residual = v - dequantised(sent)
    for (size_t b0 = 0, b = 0; b0 < k; b0 += cfg.block, ++b) {
      const size_t b1 = b0 + cfg.block < k ? b0 + cfg.block : k;
      const float s = scales[b];
      for (size_t j = b0; j < b1; ++j) residual[sel[j]] = vals[j] - static_cast<float>(q[j]) * s;
    }
    st.index_bytes = encode_wire(n, k, cfg.block, cfg.values, sel.data(), scales.data(), q.data(), nullptr, wire);
  } else {
    for (size_t j = 0; j < k; ++j) residual[sel[j]] = 0.0f;  // sent exactly: v - v
    st.index_bytes = encode_wire(n, k, cfg.block, cfg.values, sel.data(), nullptr, nullptr, vals.data(), wire);
  }
  st.wire_bytes = wire.size();
  return st;
}

}  // namespace geotb::kernels
