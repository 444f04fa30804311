// CPU compress_ef: fused error-feedback accumulate + top-k + quantise + encode.
// Memory traffic: one streaming pass (read acc and residual, write residual) plus O(k) work on a
// compact candidate list; see kernels/topk.h for the selection scheme and its guarantees.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/compress.h"
#include "kernels/cpu/ef_pass.h"
#include "kernels/quantize.h"
#include "kernels/topk.h"
#include "kernels/validate.h"
#include "kernels/wire_format.h"

namespace geotb::kernels {
namespace {

thread_local uint64_t t_fallbacks = 0;

}  // namespace

uint64_t compress_fallbacks() { return t_fallbacks; }

CompressStats compress_ef(const float* acc, float* residual, size_t n, const CompressConfig& cfg,
                          std::vector<uint8_t>& wire) {
  validate_compress_args(acc, residual, n, cfg);
  const uint64_t k = topk_count(n, cfg.density);
  const bool sampled = cfg.topk == TopkMode::kSampledThreshold;
  // Exact mode: the sample only sizes the candidate set, so any fixed seed will do.
  const SampleThresholds th = sample_thresholds(acc, residual, n, k, sampled ? cfg.seed : kExactSampleSeed);

  thread_local std::vector<uint32_t> cidx;
  thread_local std::vector<float> cval;
  const size_t cap = std::min<size_t>(n, 2 * th.expected_candidates + 4096);
  if (cidx.size() < cap) {
    cidx.resize(cap);
    cval.resize(cap);
  }
  const cpu::PassResult pr = cpu::ef_pass(acc, residual, n, th.t_low, cidx.data(), cval.data(), cap);
  if (pr.non_finite != 0) throw_non_finite(residual, n, pr.non_finite);

  // Target count.
  uint64_t target = k;
  bool take_all_at_est = false;
  if (sampled && n >= kSampleMinElements) {
    size_t at_est = 0;
    const size_t stored = std::min(pr.candidates, cap);
    for (size_t j = 0; j < stored; ++j) at_est += magnitude_key(cval[j]) >= th.t_est;
    if (pr.candidates > cap) at_est = sampled_k_max(k, n) + 1;  // overflow: surely above the bound
    target = std::clamp<uint64_t>(at_est, sampled_k_min(k, n), sampled_k_max(k, n));
    take_all_at_est = target == at_est;
  }

  size_t kk;
  uint32_t* sel;
  float* vals;
  thread_local std::vector<uint32_t> fb_idx;
  thread_local std::vector<float> fb_val;
  if (pr.candidates <= cap && pr.candidates >= target) {
    kk = take_all_at_est ? compact_at_least(cidx.data(), cval.data(), pr.candidates, th.t_est)
                         : compact_topk(cidx.data(), cval.data(), pr.candidates, target);
    sel = cidx.data();
    vals = cval.data();
  } else {
    // The sample misjudged the tensor (too few or too many candidates): select from all of it.
    ++t_fallbacks;
    topk_exact(residual, n, target, fb_idx);
    kk = fb_idx.size();
    fb_val.resize(kk);
    for (size_t j = 0; j < kk; ++j) fb_val[j] = residual[fb_idx[j]];
    sel = fb_idx.data();
    vals = fb_val.data();
  }

  CompressStats st;
  st.n = n;
  st.k = kk;
  if (cfg.values == ValueCoding::kInt8) {
    thread_local std::vector<float> scales;
    thread_local std::vector<int8_t> q;
    scales.resize(num_blocks(kk, cfg.block));
    q.resize(kk);
    quantize_int8_blocks(vals, sel, kk, cfg.block, cfg.rounding, cfg.seed, scales.data(), q.data());
    // residual = v - dequantised(sent)
    for (size_t b0 = 0, b = 0; b0 < kk; b0 += cfg.block, ++b) {
      const size_t b1 = std::min<size_t>(kk, b0 + cfg.block);
      const float s = scales[b];
      for (size_t j = b0; j < b1; ++j) residual[sel[j]] = vals[j] - static_cast<float>(q[j]) * s;
    }
    st.index_bytes = encode_wire(n, kk, cfg.block, cfg.values, sel, scales.data(), q.data(), nullptr, wire);
  } else {
    for (size_t j = 0; j < kk; ++j) residual[sel[j]] = 0.0f;  // sent exactly: v - v
    st.index_bytes = encode_wire(n, kk, cfg.block, cfg.values, sel, nullptr, nullptr, vals, wire);
  }
  st.wire_bytes = wire.size();
  return st;
}

}  // namespace geotb::kernels
