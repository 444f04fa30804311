#include "kernels/topk.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace geotb::kernels {

uint64_t topk_count(uint64_t n, double density) {
  if (n == 0) return 0;
  double c = std::ceil(density * static_cast<double>(n));
  uint64_t k = c < 1.0 ? 1 : static_cast<uint64_t>(c);
  return k > n ? n : k;
}

uint64_t sampled_k_min(uint64_t k, uint64_t n) {
  uint64_t m = (4 * k + 4) / 5;  // ceil(0.8 k)
  return std::clamp<uint64_t>(m, n ? 1 : 0, n);
}

uint64_t sampled_k_max(uint64_t k, uint64_t n) {
  uint64_t m = (5 * k + 3) / 4;  // ceil(1.25 k)
  return std::min<uint64_t>(m, n);
}

SampleRanks sample_ranks(size_t s, uint64_t n, uint64_t k) {
  SampleRanks r;
  const double mean = static_cast<double>(s) * static_cast<double>(k) / static_cast<double>(n);
  const double r_low_d = std::ceil(mean + kSampleSigmas * std::sqrt(mean) + 1.0);
  const double r_est_d = std::max(1.0, std::round(mean));
  if (r_low_d >= static_cast<double>(s)) {
    r.expected_candidates = n;  // the margin covers the whole sample: everything is a candidate
  } else {
    r.r_low = static_cast<uint64_t>(r_low_d);
    r.expected_candidates = static_cast<uint64_t>(static_cast<double>(n) * r_low_d / static_cast<double>(s)) + 1;
  }
  r.r_est = std::min<uint64_t>(s, static_cast<uint64_t>(r_est_d));
  return r;
}

SampleThresholds thresholds_from_sample(uint32_t* keys, size_t s, uint64_t n, uint64_t k) {
  const SampleRanks r = sample_ranks(s, n, k);
  SampleThresholds t;
  t.expected_candidates = r.expected_candidates;
  // rank r (1-based) among the sample, descending: nth_element with greater<>.
  auto rank_key = [&](size_t rank) {
    std::nth_element(keys, keys + (rank - 1), keys + s, std::greater<uint32_t>());
    return keys[rank - 1];
  };
  if (r.r_low != 0) t.t_low = rank_key(r.r_low);
  t.t_est = rank_key(r.r_est);
  if (t.t_est < t.t_low) t.t_est = t.t_low;  // ties in the sample
  return t;
}

SampleThresholds sample_thresholds(const float* acc, const float* residual, size_t n, uint64_t k,
                                   uint64_t seed) {
  if (n < kSampleMinElements) {
    SampleThresholds t;
    t.expected_candidates = n;
    return t;
  }
  thread_local std::vector<uint32_t> keys;
  keys.resize(kSampleChunks * kSampleChunk);
  for (uint64_t j = 0; j < kSampleChunks; ++j) {
    const uint64_t i0 = sample_chunk_start(seed, j, n);
    uint32_t* out = keys.data() + j * kSampleChunk;
    for (uint64_t e = 0; e < kSampleChunk; ++e) out[e] = magnitude_key(acc[i0 + e] + residual[i0 + e]);
  }
  return thresholds_from_sample(keys.data(), keys.size(), n, k);
}

KthKey kth_largest_key(const float* v, size_t c, size_t k) {
  // Level 1: the top 15 bits of the 31-bit key; level 2: the low 16 bits inside that bin.
  thread_local std::vector<uint32_t> hist;
  hist.assign(1u << 16, 0);
  for (size_t j = 0; j < c; ++j) ++hist[magnitude_key(v[j]) >> 16];
  size_t above = 0;
  uint32_t b1 = 1u << 15;
  while (above + hist[b1 - 1] < k) above += hist[--b1];
  --b1;
  hist.assign(1u << 16, 0);
  for (size_t j = 0; j < c; ++j) {
    uint32_t key = magnitude_key(v[j]);
    if ((key >> 16) == b1) ++hist[key & 0xFFFFu];
  }
  uint32_t b2 = 1u << 16;
  while (above + hist[b2 - 1] < k) above += hist[--b2];
  --b2;
  return {(b1 << 16) | b2, above};
}

size_t compact_topk(uint32_t* idx, float* val, size_t c, size_t k) {
  if (k == 0) return 0;
  if (k >= c) return c;
  const KthKey t = kth_largest_key(val, c, k);
  size_t take_equal = k - t.above;
  size_t o = 0;
  for (size_t j = 0; j < c; ++j) {
    const uint32_t key = magnitude_key(val[j]);
    const bool eq = key == t.key;
    if (key > t.key || (eq && take_equal > 0)) {
      take_equal -= eq;
      idx[o] = idx[j];
      val[o] = val[j];
      ++o;
    }
  }
  return o;
}

size_t compact_at_least(uint32_t* idx, float* val, size_t c, uint32_t t) {
  size_t o = 0;
  for (size_t j = 0; j < c; ++j) {
    if (magnitude_key(val[j]) >= t) {
      idx[o] = idx[j];
      val[o] = val[j];
      ++o;
    }
  }
  return o;
}

void topk_exact(const float* v, size_t n, size_t k, std::vector<uint32_t>& out) {
  thread_local std::vector<float> val;
  val.assign(v, v + n);
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint32_t>(i);
  out.resize(compact_topk(out.data(), val.data(), n, k));
}

}  // namespace geotb::kernels
