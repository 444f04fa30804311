// Top-k selection by magnitude (building block of compress_ef, exposed for tests/benchmarks).
//
// Order: larger |v| first; equal |v| -> lower index first (the tie rule of compress.h).
// Magnitudes are compared through magnitude_key(): the IEEE-754 bits of |v|, which as unsigned
// integers order exactly like |v| for all finite floats (and -0 == +0). Keys >= kNonFiniteKey
// are Inf/NaN; compress_ef rejects those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace geotb::kernels {

inline constexpr uint32_t kNonFiniteKey = 0x7F800000u;

inline uint32_t magnitude_key(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b & 0x7FFFFFFFu;
}

/// k = max(1, ceil(density * n)) computed in double, clamped to n; 0 when n == 0.
/// Precondition: density in (0, 1] (compress_ef validates it).
uint64_t topk_count(uint64_t n, double density);

/// Exact top-k of v[0..n) under the tie rule. Writes the k selected indices in ascending
/// index order into out (resized). Any valid k in [0, n]. O(n) expected time.
void topk_exact(const float* v, size_t n, size_t k, std::vector<uint32_t>& out);

/// Given candidates cand[0..c) in ascending index order that contain every index of the exact
/// top-k of v (e.g. all i with magnitude_key(v[i]) >= t for a t whose count is >= k), writes the
/// exact top-k (tie rule) in ascending index order into out. Precondition c >= k.
void topk_from_candidates(const float* v, const uint32_t* cand, size_t c, size_t k,
                          std::vector<uint32_t>& out);

}  // namespace geotb::kernels
