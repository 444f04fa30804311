// Top-k selection by magnitude (building blocks of compress_ef, exposed for tests/benchmarks).
//
// Order: larger |v| first; equal |v| -> lower index first (the tie rule of compress.h).
// Magnitudes are compared through magnitude_key(): the IEEE-754 bits of |v|, which as unsigned
// integers order exactly like |v| for all finite floats (and -0 == +0). Keys >= kNonFiniteKey
// are Inf/NaN; compress_ef rejects those.
//
// How compress_ef selects (CPU and CUDA alike):
//   1. Sample: s = kSampleChunks chunks of kSampleChunk consecutive elements at seeded positions
//      (sample_chunk_start); their keys give two thresholds (sample_thresholds):
//        t_low  the r_low-th largest sample key, r_low = s*k/n + 4*sqrt(s*k/n) + 1: with iid data,
//               fewer than k elements reach it with probability < 1e-4;
//        t_est  the round(s*k/n)-th largest sample key: the DGC estimate of the k-th magnitude.
//      Tensors with n < kSampleMinElements skip sampling (t_low = t_est = 0: all candidates).
//   2. One pass: v = acc + residual, residual = v, every element with key >= t_low appended
//      (index, v) to a candidate list, in index order.
//   3. Exact mode: the exact top-k of the candidates (kth_largest_key + compact_topk); if fewer
//      than k candidates were found (unlucky sample) the exact top-k of all n is taken instead.
//      The result never depends on the sample: it is always the exact top-k under the tie rule.
//   4. Sampled-threshold mode (DGC): k' = #{i : key_i >= t_est}. Guarantee on the count:
//        k' is clamped into [sampled_k_min(k), sampled_k_max(k)] = [ceil(0.8k), ceil(1.25k)] (within
//        [1, n]), and the sent set is always a top-k' set under the tie rule (every sent |v| >=
//        every unsent |v|). Inside the bounds every element >= t_est is sent (no selection work);
//        outside, the exact top-(clamped k') is taken. It depends on cfg.seed through the sample.
//      Tensors with n < kSampleMinElements are not sampled: sampled mode sends the exact top-k.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/hd.h"

namespace geotb::kernels {

inline constexpr uint32_t kNonFiniteKey = 0x7F800000u;
inline constexpr uint64_t kSampleChunk = 64;          ///< consecutive elements per sample chunk
inline constexpr uint64_t kSampleChunks = 512;        ///< chunks per sample (32768 elements)
inline constexpr uint64_t kSampleMinElements = 1u << 18;  ///< below this, no sampling
inline constexpr double kSampleSigmas = 4.0;          ///< safety margin of t_low, in binomial sd
/// Sample seed of exact mode (its result does not depend on it; it only sizes the candidates).
inline constexpr uint64_t kExactSampleSeed = 0x243F6A8885A308D3ull;

GEOTB_HD inline uint32_t magnitude_key(float v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__float_as_uint(v)) & 0x7FFFFFFFu;
#else
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b & 0x7FFFFFFFu;
#endif
}

/// First element of sample chunk j (0 <= j < kSampleChunks) for a tensor of n >=
/// kSampleMinElements elements: a multiple of kSampleChunk, chunk inside [0, n).
GEOTB_HD inline uint64_t sample_chunk_start(uint64_t seed, uint64_t j, uint64_t n) {
  uint64_t z = (seed ^ 0x5A3D1E0F2B4C6978ull) + 0x9E3779B97F4A7C15ull * (j + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z % (n / kSampleChunk)) * kSampleChunk;
}

/// k = max(1, ceil(density * n)) computed in double, clamped to n; 0 when n == 0.
/// Precondition: density in (0, 1] (compress_ef validates it).
uint64_t topk_count(uint64_t n, double density);

/// Bounds of the sampled-threshold count k' (see 4. above), within [1, n].
uint64_t sampled_k_min(uint64_t k, uint64_t n);
uint64_t sampled_k_max(uint64_t k, uint64_t n);

struct SampleThresholds {
  uint32_t t_low = 0;               ///< candidate threshold (key)
  uint32_t t_est = 0;               ///< DGC estimate of the k-th largest key
  uint64_t expected_candidates = 0; ///< n * r_low / s: sizing hint for the candidate buffer
};

/// The two sample ranks (1-based, descending) the thresholds are read at, from the sample size s,
/// tensor size n and target count k alone: t_low = key of rank r_low (r_low == 0: the margin covers
/// the whole sample, t_low = 0 and every element is a candidate), t_est = key of rank r_est,
/// raised to t_low on ties. Both backends use it (the CUDA one reads the ranks off a sorted sample).
struct SampleRanks {
  uint64_t r_low = 0;
  uint64_t r_est = 1;
  uint64_t expected_candidates = 0;  ///< as in SampleThresholds
};
SampleRanks sample_ranks(size_t s, uint64_t n, uint64_t k);

/// Thresholds from the keys of a sample (sample_keys is reordered). s = sample size,
/// n = tensor size, k = target count.
SampleThresholds thresholds_from_sample(uint32_t* sample_keys, size_t s, uint64_t n, uint64_t k);

/// Draws the sample of v = acc + residual (without writing anything) and returns thresholds.
SampleThresholds sample_thresholds(const float* acc, const float* residual, size_t n, uint64_t k,
                                   uint64_t seed);

/// The k-th largest magnitude key of v[0..c) (1 <= k <= c) and how many keys are larger.
/// Two radix passes (15 + 16 bits); exact.
struct KthKey {
  uint32_t key;
  size_t above;
};
KthKey kth_largest_key(const float* v, size_t c, size_t k);

/// In place and in order, keeps the top-k of the pairs (idx[j], val[j]), j < c, where idx is
/// ascending (tie rule: lower index first). Returns k (k <= c).
size_t compact_topk(uint32_t* idx, float* val, size_t c, size_t k);

/// In place and in order, keeps the pairs whose magnitude key is >= t. Returns their count.
size_t compact_at_least(uint32_t* idx, float* val, size_t c, uint32_t t);

/// How many times compress_ef on this thread had to fall back to selecting from the whole tensor
/// because the sample misjudged it (statistics for tests and benchmarks).
uint64_t compress_fallbacks();

/// Exact top-k of v[0..n) under the tie rule, indices ascending, into out. Any k in [0, n].
void topk_exact(const float* v, size_t n, size_t k, std::vector<uint32_t>& out);

}  // namespace geotb::kernels
