// Building blocks: top-k selection, k from density, INT8 rounding rules.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "kernels/quantize.h"
#include "kernels/radix_select.h"
#include "kernels/topk.h"
#include "reference.h"
#include "test_util.h"

namespace geotb::kernels {
namespace {

TEST(Topk, CountFromDensity) {
  EXPECT_EQ(topk_count(0, 0.5), 0u);
  EXPECT_EQ(topk_count(1, 1e-9), 1u);
  EXPECT_EQ(topk_count(1000, 0.01), 10u);
  EXPECT_EQ(topk_count(1001, 0.01), 11u);
  EXPECT_EQ(topk_count(100003, 1.0), 100003u);
  EXPECT_EQ(topk_count(7, 0.5), 4u);
}

// The CUDA backend's radix select (three bit fields) against the two-level histogram of the CPU
// backend, on random magnitudes, on many ties and on keys that differ only in their low bits.
TEST(Topk, RadixSelectMatchesKthLargestKey) {
  for (int shape = 0; shape < 3; ++shape) {
    const size_t c = 5003;
    std::vector<float> v = testing::random_normal(c, 17 + shape);
    if (shape == 1)
      for (size_t j = 0; j < c; ++j) v[j] = static_cast<float>(j % 7) * 0.25f;  // 7 distinct values
    if (shape == 2)
      for (size_t j = 0; j < c; ++j) v[j] = std::bit_cast<float>(0x3F800000u + static_cast<uint32_t>((j * 37) % 600));
    std::vector<uint32_t> keys(c);
    for (size_t j = 0; j < c; ++j) keys[j] = magnitude_key(v[j]);
    for (size_t k : {size_t{1}, size_t{2}, size_t{50}, size_t{715}, size_t{2500}, c - 1, c}) {
      const KthKey want = kth_largest_key(v.data(), c, k);
      const KthKey got = kth_key_radix(keys.data(), c, k);
      EXPECT_EQ(got.key, want.key) << "shape " << shape << " k " << k;
      EXPECT_EQ(got.above, want.above) << "shape " << shape << " k " << k;
    }
  }
}

TEST(Topk, ExactMatchesFullSort) {
  for (size_t n : {1ul, 2ul, 31ul, 1000ul, 65537ul}) {
    auto v = testing::random_normal(n, n);
    for (size_t k : {size_t{0}, size_t{1}, n / 100, n / 3, n - 1, n}) {
      if (k > n) continue;
      std::vector<uint32_t> got;
      topk_exact(v.data(), n, k, got);
      ASSERT_EQ(got, testing::ref_topk(v, k)) << "n=" << n << " k=" << k;
    }
  }
}

TEST(Topk, CraftedTies) {
  std::vector<float> v = {2.0f, -2.0f, 1.0f, 2.0f, -0.0f, 0.0f, -1.0f, 2.0f};
  std::vector<uint32_t> got;
  topk_exact(v.data(), v.size(), 2, got);
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1}));
  topk_exact(v.data(), v.size(), 4, got);
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 3, 7}));
  topk_exact(v.data(), v.size(), 5, got);
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 7}));
  topk_exact(v.data(), v.size(), 7, got);  // -0 and +0 tie: index 4 before 5
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 4, 6, 7}));
  // denormals and huge values order by magnitude too
  std::vector<float> w = {1e-45f, 3e38f, -1e-40f, -3e38f, 1e-45f};
  topk_exact(w.data(), w.size(), 3, got);
  EXPECT_EQ(got, (std::vector<uint32_t>{1, 2, 3}));
}

TEST(Topk, CompactKeepsTieOrder) {
  std::vector<float> val = {5, -5, 5, 7, 5};
  std::vector<uint32_t> idx = {0, 2, 3, 5, 9};
  EXPECT_EQ(compact_topk(idx.data(), val.data(), 5, 3), 3u);
  idx.resize(3);
  val.resize(3);
  EXPECT_EQ(idx, (std::vector<uint32_t>{0, 2, 5}));
  EXPECT_EQ(val, (std::vector<float>{5, -5, 7}));
  std::vector<float> v2 = {1, 3, 2, 3};
  std::vector<uint32_t> i2 = {10, 11, 12, 13};
  EXPECT_EQ(compact_at_least(i2.data(), v2.data(), 4, magnitude_key(2.0f)), 3u);
  EXPECT_EQ(i2[2], 13u);
}

TEST(Topk, KthLargestKeyExact) {
  // values chosen so the two radix levels both matter: same high 16 bits, different low bits
  std::vector<float> v = {1.0f, 1.0000001f, 1.0000002f, -1.0000002f, 0.5f, 3.0f};
  KthKey t = kth_largest_key(v.data(), v.size(), 3);
  EXPECT_EQ(t.key, magnitude_key(1.0000002f));
  EXPECT_EQ(t.above, 1u);
  t = kth_largest_key(v.data(), v.size(), 4);
  EXPECT_EQ(t.key, magnitude_key(1.0000001f));
  EXPECT_EQ(t.above, 3u);
  t = kth_largest_key(v.data(), v.size(), 6);
  EXPECT_EQ(t.key, magnitude_key(0.5f));
  EXPECT_EQ(t.above, 5u);
}

TEST(Topk, SampleThresholdsBracketTheKth) {
  // iid normal data: t_low must admit >= k elements (fails with probability < 1e-4 per case),
  // and the DGC estimate t_est must land within the sampled-mode bounds.
  const size_t n = 1 << 20;
  auto acc = testing::random_normal(n, 31);
  std::vector<float> zero(n, 0.0f);
  for (double p : {0.001, 0.01, 0.05}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      const uint64_t k = topk_count(n, p);
      SampleThresholds t = sample_thresholds(acc.data(), zero.data(), n, k, seed);
      size_t c = 0, e = 0;
      for (float x : acc) {
        c += magnitude_key(x) >= t.t_low;
        e += magnitude_key(x) >= t.t_est;
      }
      EXPECT_GE(c, k) << p << " " << seed;
      EXPECT_LE(c, t.expected_candidates * 2) << p << " " << seed;
      EXPECT_GE(e, sampled_k_min(k, n)) << p << " " << seed;
      EXPECT_LE(e, sampled_k_max(k, n)) << p << " " << seed;
    }
  }
}

TEST(Quantize, NearestRoundsHalfToEven) {
  const float s = 1.0f;
  EXPECT_EQ(quantize_one(0.5f, s, Rounding::kNearest, 0, 0), 0);
  EXPECT_EQ(quantize_one(1.5f, s, Rounding::kNearest, 0, 0), 2);
  EXPECT_EQ(quantize_one(2.5f, s, Rounding::kNearest, 0, 0), 2);
  EXPECT_EQ(quantize_one(-2.5f, s, Rounding::kNearest, 0, 0), -2);
  EXPECT_EQ(quantize_one(-2.6f, s, Rounding::kNearest, 0, 0), -3);
  EXPECT_EQ(quantize_one(127.4f, s, Rounding::kNearest, 0, 0), 127);
  EXPECT_EQ(quantize_one(200.0f, s, Rounding::kNearest, 0, 0), 127);  // clamped
  EXPECT_EQ(quantize_one(-200.0f, s, Rounding::kNearest, 0, 0), -127);
  EXPECT_EQ(quantize_one(3.0f, 0.0f, Rounding::kNearest, 0, 0), 0);  // zero scale
}

TEST(Quantize, StochasticPicksFloorOrCeilOnly) {
  for (uint64_t i = 0; i < 10000; ++i) {
    int q = quantize_one(-4.25f, 1.0f, Rounding::kStochastic, 99, i);
    ASSERT_TRUE(q == -5 || q == -4) << q;
    ASSERT_EQ(quantize_one(6.0f, 1.0f, Rounding::kStochastic, 99, i), 6);  // integers are exact
  }
}

TEST(Quantize, UniformStreamIsUniform) {
  // 2^16 draws into 16 bins: chi-square with 15 dof, p(>40) ~ 4e-4.
  int bins[16] = {};
  for (uint64_t i = 0; i < 65536; ++i) {
    float u = stochastic_uniform(2024, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ++bins[static_cast<int>(u * 16)];
  }
  double chi2 = 0;
  for (int b : bins) chi2 += (b - 4096.0) * (b - 4096.0) / 4096.0;
  EXPECT_LT(chi2, 40.0);
  EXPECT_NE(stochastic_uniform(1, 5), stochastic_uniform(2, 5));
}

TEST(Quantize, BlocksCoverSelectedElementsInOrder) {
  std::vector<float> vals = {1.0f, -2.0f, 127.0f, 0.5f, 0.0f};
  std::vector<uint32_t> idx = {0, 1, 2, 3, 4};
  std::vector<float> scales(2);
  std::vector<int8_t> q(5);
  quantize_int8_blocks(vals.data(), idx.data(), 5, 3, Rounding::kNearest, 0, scales.data(), q.data());
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_EQ(scales[1], 0.5f / 127.0f);
  EXPECT_EQ(q, (std::vector<int8_t>{1, -2, 127, 127, 0}));
}

}  // namespace
}  // namespace geotb::kernels
