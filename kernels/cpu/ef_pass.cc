#include "kernels/cpu/ef_pass.h"

#include <algorithm>
#include <cstdlib>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/topk.h"

namespace geotb::kernels::cpu {


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
__attribute__((target("avx2,popcnt,bmi"))) PassResult ef_pass_avx2(const float* __restrict acc, float* __restrict res,
                                                                   size_t n, uint32_t t_low,
                                                                   uint32_t* __restrict cidx,
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
      } else {  // reaching cap: store what fits, count the rest
        do {
          const unsigned j = static_cast<unsigned>(__builtin_ctz(m));
          if (c < cap) {
            cidx[c] = static_cast<uint32_t>(i + j);
            cval[c] = res[i + j];
          }
          ++c;
          m &= m - 1;
        } while (m != 0);
      }
    }
  }
  const size_t room = c < cap ? cap - c : 0;
  const size_t at = c < cap ? c : cap;
  const PassResult tail = ef_pass_portable(acc + i, res + i, n - i, t_low, cidx + at, cval + at, room);
  for (size_t j = 0; j < std::min(tail.candidates, room); ++j) cidx[at + j] += static_cast<uint32_t>(i);
  size_t bad = tail.non_finite;
  if (!_mm256_testz_si256(nf, nf)) {
    for (size_t j = 0; j < i; ++j) bad += magnitude_key(res[j]) >= kNonFiniteKey;  // error path only
  }
  return {c + tail.candidates, bad};
}
#endif

bool has_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
                           __builtin_cpu_supports("bmi");
  return avx2;
#else
  return false;
#endif
}

#if !defined(__x86_64__)
PassResult ef_pass_avx2(const float*, float*, size_t, uint32_t, uint32_t*, float*, size_t) { std::abort(); }
#endif

PassResult ef_pass(const float* acc, float* res, size_t n, uint32_t t_low, uint32_t* cidx, float* cval, size_t cap) {
  if (has_avx2()) return ef_pass_avx2(acc, res, n, t_low, cidx, cval, cap);
  return ef_pass_portable(acc, res, n, t_low, cidx, cval, cap);
}


}  // namespace geotb::kernels::cpu
