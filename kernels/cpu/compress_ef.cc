// CPU compress_ef: fused error-feedback accumulate + top-k + quantise + encode.
// Memory traffic: one streaming pass (read acc and residual, write residual) plus O(k) work on a
// compact candidate list; see kernels/topk.h for the selection scheme and its guarantees.
#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cmath>
#include <string>

#include "kernels/compress.h"
#include "kernels/quantize.h"
#include "kernels/topk.h"
#include "kernels/validate.h"
#include "kernels/wire_format.h"

namespace geotb::kernels {
namespace {

thread_local uint64_t t_fallbacks = 0;

struct PassResult {
  size_t candidates;  ///< elements with key >= t_low (may exceed cap: then only cap were stored)
  size_t non_finite;
};

// v = acc + residual -> residual; append (i, v) with key(v) >= t_low. Portable version: chunks
// of 16 whose inner loop has no branches; the rare chunk with a hit is rescanned from L1.
PassResult ef_pass_portable(const float* __restrict acc, float* __restrict res, size_t n, uint32_t t_low,
                            uint32_t* __restrict cidx, float* __restrict cval, size_t cap) {
  constexpr size_t W = 16;
  size_t c = 0, bad = 0, i = 0;
  auto append = [&](size_t from, size_t to) {
    for (size_t j = from; j < to; ++j) {
      const float v = res[j];
      if (magnitude_key(v) >= t_low) {
        if (c < cap) {
          cidx[c] = static_cast<uint32_t>(j);
          cval[c] = v;
        }
        ++c;
      }
    }
  };
  for (; i + W <= n; i += W) {
    unsigned hits = 0, nf = 0;
    for (size_t j = 0; j < W; ++j) {
      const float v = acc[i + j] + res[i + j];
      res[i + j] = v;
      const uint32_t key = magnitude_key(v);
      hits += key >= t_low;
      nf += key >= kNonFiniteKey;
    }
    bad += nf;
    if (hits != 0) append(i, i + W);
  }
  for (size_t j = i; j < n; ++j) {
    const float v = acc[j] + res[j];
    res[j] = v;
    bad += magnitude_key(v) >= kNonFiniteKey;
  }
  append(i, n);
  return {c, bad};
}

#if defined(__x86_64__)
// Same pass with AVX2: 16 elements per step, hits found with a movemask, candidates appended by
// walking the set bits. Keys are < 2^31, so signed 32-bit compares order them correctly.
__attribute__((target("avx2,popcnt,bmi"))) PassResult ef_pass_avx2(const float* __restrict acc,
                                                                   float* __restrict res, size_t n,
                                                                   uint32_t t_low, uint32_t* __restrict cidx,
                                                                   float* __restrict cval, size_t cap) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i t_minus1 = _mm256_set1_epi32(static_cast<int>(t_low) - 1);  // t_low 0 -> -1: all hit
  const __m256i max_finite = _mm256_set1_epi32(0x7F7FFFFF);
  __m256i nf = _mm256_setzero_si256();
  size_t c = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_loadu_ps(res + i));
    const __m256 v1 = _mm256_add_ps(_mm256_loadu_ps(acc + i + 8), _mm256_loadu_ps(res + i + 8));
    _mm256_storeu_ps(res + i, v0);
    _mm256_storeu_ps(res + i + 8, v1);
    const __m256i k0 = _mm256_and_si256(_mm256_castps_si256(v0), abs_mask);
    const __m256i k1 = _mm256_and_si256(_mm256_castps_si256(v1), abs_mask);
    nf = _mm256_or_si256(nf, _mm256_or_si256(_mm256_cmpgt_epi32(k0, max_finite), _mm256_cmpgt_epi32(k1, max_finite)));
    const unsigned m0 = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k0, t_minus1))));
    const unsigned m1 = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k1, t_minus1))));
    unsigned m = m0 | (m1 << 8);
    if (m != 0) {
      if (c + static_cast<size_t>(__builtin_popcount(m)) <= cap) {
        do {
          const unsigned j = static_cast<unsigned>(__builtin_ctz(m));
          cidx[c] = static_cast<uint32_t>(i + j);
          cval[c] = res[i + j];
          ++c;
          m &= m - 1;
        } while (m != 0);
      } else {
        c += static_cast<size_t>(__builtin_popcount(m));  // overflow: count only
        if (c > cap) cap = 0;                             // and never store again
      }
    }
  }
  PassResult tail = ef_pass_portable(acc + i, res + i, n - i, t_low, cidx + c, cval + c, c <= cap ? cap - c : 0);
  for (size_t j = 0; j < std::min(tail.candidates, c <= cap ? cap - c : 0); ++j) cidx[c + j] += static_cast<uint32_t>(i);
  size_t bad = tail.non_finite;
  if (!_mm256_testz_si256(nf, nf)) {
    for (size_t j = 0; j < i; ++j) bad += magnitude_key(res[j]) >= kNonFiniteKey;  // error path only
  }
  return {c + tail.candidates, bad};
}
#endif

PassResult ef_pass(const float* acc, float* res, size_t n, uint32_t t_low, uint32_t* cidx, float* cval, size_t cap) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
                           __builtin_cpu_supports("bmi");
  if (avx2) return ef_pass_avx2(acc, res, n, t_low, cidx, cval, cap);
#endif
  return ef_pass_portable(acc, res, n, t_low, cidx, cval, cap);
}

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
  const PassResult pr = ef_pass(acc, residual, n, th.t_low, cidx.data(), cval.data(), cap);
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
