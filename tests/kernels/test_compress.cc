// compress_ef / decompress_add against the contract in kernels/compress.h and the reference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>

#include "kernels/compress.h"
#include "kernels/topk.h"
#include "reference.h"
#include "test_util.h"

namespace geotb::kernels {
namespace {

using testing::decode;
using testing::random_normal;
using testing::ref_compress;

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

struct RunResult {
  std::vector<float> acc, res_in, res_out, deq;
  std::vector<uint8_t> wire;
  CompressStats st;
};

RunResult run(size_t n, const CompressConfig& cfg, uint64_t seed) {
  RunResult r;
  r.acc = random_normal(n, seed);
  r.res_in = random_normal(n, seed + 1000, 0.3f);
  r.res_out = r.res_in;
  r.st = compress_ef(r.acc.data(), r.res_out.data(), n, cfg, r.wire);
  r.deq.assign(n, 0.0f);
  decompress_add(r.wire.data(), r.wire.size(), r.deq.data(), n, 1.0f);
  return r;
}

// ---- conservation over sizes x densities x codings -------------------------------------------

class Conservation : public ::testing::TestWithParam<std::tuple<size_t, double, ValueCoding, Rounding>> {};

TEST_P(Conservation, DequantisedPlusResidualIsAccumulatedPlusOldResidual) {
  auto [n, density, coding, rounding] = GetParam();
  CompressConfig cfg;
  cfg.density = density;
  cfg.values = coding;
  cfg.rounding = rounding;
  cfg.seed = 7;
  RunResult r = run(n, cfg, 42 + n);
  const uint64_t k = topk_count(n, density);
  ASSERT_EQ(r.st.n, n);
  ASSERT_EQ(r.st.k, k);
  ASSERT_EQ(r.st.wire_bytes, r.wire.size());
  auto d = decode(r.wire, n);
  ASSERT_EQ(d.idx.size(), k);
  std::vector<char> sent(n, 0);
  for (uint32_t i : d.idx) sent[i] = 1;
  for (size_t i = 0; i < n; ++i) {
    const float v = r.acc[i] + r.res_in[i];
    if (!sent[i]) {
      ASSERT_EQ(bits(r.res_out[i]), bits(v)) << "unsent element " << i << " changed";
      ASSERT_EQ(r.deq[i], 0.0f) << i;
    } else {
      // residual is exactly fl(v - deq); deq + residual == v up to that one rounding.
      ASSERT_EQ(bits(r.res_out[i]), bits(v - r.deq[i])) << i;
      double err = std::fabs(static_cast<double>(r.deq[i]) + r.res_out[i] - v);
      ASSERT_LE(err, std::fabs(static_cast<double>(r.res_out[i])) * 0x1p-24) << i;
      if (coding == ValueCoding::kFloat32) {
        ASSERT_EQ(r.res_out[i], 0.0f) << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, Conservation,
    ::testing::Combine(::testing::Values<size_t>(1, 7, 255, 256, 257, 1000, 100003),
                       ::testing::Values(0.001, 0.01, 0.1, 0.5, 1.0),
                       ::testing::Values(ValueCoding::kInt8, ValueCoding::kFloat32),
                       ::testing::Values(Rounding::kNearest, Rounding::kStochastic)));

// ---- round trip against the reference ---------------------------------------------------------

class VsReference : public ::testing::TestWithParam<std::tuple<size_t, double, uint32_t, ValueCoding, Rounding>> {};

TEST_P(VsReference, BitIdentical) {
  auto [n, density, block, coding, rounding] = GetParam();
  CompressConfig cfg;
  cfg.density = density;
  cfg.block = block;
  cfg.values = coding;
  cfg.rounding = rounding;
  cfg.seed = 12345;
  RunResult r = run(n, cfg, 99 + n);
  auto ref = ref_compress(r.acc, r.res_in, cfg);
  auto d = decode(r.wire, n);
  ASSERT_EQ(d.idx, ref.idx);
  EXPECT_EQ(d.h.block, block);
  EXPECT_EQ(d.h.values, coding);
  if (coding == ValueCoding::kInt8) {
    ASSERT_EQ(d.scales.size(), ref.scales.size());
    for (size_t b = 0; b < d.scales.size(); ++b) ASSERT_EQ(bits(d.scales[b]), bits(ref.scales[b])) << b;
    ASSERT_EQ(d.q, ref.q);
  } else {
    ASSERT_EQ(d.fvals.size(), ref.fvals.size());
    for (size_t j = 0; j < d.fvals.size(); ++j) ASSERT_EQ(bits(d.fvals[j]), bits(ref.fvals[j])) << j;
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bits(r.res_out[i]), bits(ref.residual[i])) << i;
    ASSERT_EQ(bits(r.deq[i]), bits(ref.dequantised[i])) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, VsReference,
    ::testing::Combine(::testing::Values<size_t>(1, 257, 1000, 100003), ::testing::Values(0.003, 0.05, 1.0),
                       ::testing::Values<uint32_t>(1, 7, 256), ::testing::Values(ValueCoding::kInt8, ValueCoding::kFloat32),
                       ::testing::Values(Rounding::kNearest, Rounding::kStochastic)));

// Tensors >= kSampleMinElements go through the sampled candidate path; the result must still be
// the exact top-k.
INSTANTIATE_TEST_SUITE_P(
    Large, VsReference,
    ::testing::Combine(::testing::Values<size_t>(kSampleMinElements, 300007), ::testing::Values(0.001, 0.02, 0.3),
                       ::testing::Values<uint32_t>(256), ::testing::Values(ValueCoding::kInt8, ValueCoding::kFloat32),
                       ::testing::Values(Rounding::kNearest, Rounding::kStochastic)));

// ---- the sample misjudges the tensor: the exact fallback must kick in --------------------------

TEST(CompressEf, FallbackWhenSampleSeesOnlyLargeValues) {
  // Every sampled chunk (exact mode's fixed sample seed is internal, so mark the chunks of many
  // seeds) holds large values; everything else is small but distinct. The candidates then miss
  // most of the top-k: only the exact fallback gets it right.
  const size_t n = 1 << 20;
  std::vector<float> acc(n);
  for (size_t i = 0; i < n; ++i) acc[i] = 1.0f + static_cast<float>(i % 1000) * 1e-3f;
  CompressConfig cfg;
  cfg.density = 0.2;
  cfg.values = ValueCoding::kFloat32;
  cfg.topk = TopkMode::kSampledThreshold;
  cfg.seed = 5;
  for (uint64_t seed : {uint64_t{5}, kExactSampleSeed})
    for (uint64_t j = 0; j < kSampleChunks; ++j) {
      uint64_t i0 = sample_chunk_start(seed, j, n);
      for (uint64_t e = 0; e < kSampleChunk; ++e) acc[i0 + e] = 10.0f + static_cast<float>(e);
    }
  for (TopkMode mode : {TopkMode::kSampledThreshold, TopkMode::kExact}) {
    cfg.topk = mode;
    const uint64_t fallbacks = compress_fallbacks();
    std::vector<float> res(n, 0.0f);
    std::vector<uint8_t> w;
    auto st = compress_ef(acc.data(), res.data(), n, cfg, w);
    auto d = decode(w, n);
    const uint64_t k = topk_count(n, cfg.density);
    if (mode == TopkMode::kExact) {
      EXPECT_EQ(d.idx, testing::ref_topk(acc, k));
    } else {
      EXPECT_GE(st.k, sampled_k_min(k, n));
      EXPECT_LE(st.k, sampled_k_max(k, n));
      EXPECT_EQ(d.idx, testing::ref_topk(acc, st.k));
    }
    EXPECT_EQ(compress_fallbacks(), fallbacks + 1) << "the fallback was not exercised";
  }
}

TEST(CompressEf, ConstantTensorOverflowsCandidatesAndFallsBack) {
  const size_t n = 1 << 19;
  std::vector<float> acc(n, 0.25f), res(n, 0.0f);
  CompressConfig cfg;
  cfg.density = 0.01;
  std::vector<uint8_t> w;
  const uint64_t fallbacks = compress_fallbacks();
  auto st = compress_ef(acc.data(), res.data(), n, cfg, w);
  EXPECT_EQ(compress_fallbacks(), fallbacks + 1);
  auto d = decode(w, n);
  ASSERT_EQ(st.k, topk_count(n, 0.01));
  for (size_t j = 0; j < d.idx.size(); ++j) ASSERT_EQ(d.idx[j], j);  // ties: lowest indices
}

// ---- sampled-threshold (DGC) mode ----------------------------------------------------------------

TEST(Sampled, CountWithinBoundsAndSetIsTopKPrime) {
  for (size_t n : {size_t{1000}, size_t{kSampleMinElements}, size_t{1} << 20}) {
    for (double p : {0.001, 0.01, 0.05}) {
      for (uint64_t seed : {1u, 2u}) {
        CompressConfig cfg;
        cfg.density = p;
        cfg.topk = TopkMode::kSampledThreshold;
        cfg.seed = seed;
        const uint64_t fallbacks = compress_fallbacks();
        RunResult r = run(n, cfg, 1234);
        EXPECT_EQ(compress_fallbacks(), fallbacks) << "iid data should not need the fallback";
        const uint64_t k = topk_count(n, p);
        auto d = decode(r.wire, n);
        ASSERT_EQ(d.idx.size(), r.st.k);
        if (n < kSampleMinElements) {
          EXPECT_EQ(r.st.k, k);
        } else {
          EXPECT_GE(r.st.k, sampled_k_min(k, n)) << n << " " << p;
          EXPECT_LE(r.st.k, sampled_k_max(k, n)) << n << " " << p;
        }
        // top-k' property: the sent set is exactly the reference top-k' set
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = r.acc[i] + r.res_in[i];
        ASSERT_EQ(d.idx, testing::ref_topk(v, r.st.k)) << n << " " << p;
        // conservation as in exact mode
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(bits(r.res_out[i]), bits(v[i] - r.deq[i])) << i;
      }
    }
  }
}

TEST(Sampled, DeterministicPerSeed) {
  CompressConfig cfg;
  cfg.density = 0.01;
  cfg.topk = TopkMode::kSampledThreshold;
  cfg.seed = 77;
  RunResult a = run(1 << 20, cfg, 5), b = run(1 << 20, cfg, 5);
  EXPECT_EQ(a.wire, b.wire);
}

// ---- identity at density 1 (used for the "equals plain DDP" test) -----------------------------

TEST(CompressEf, Density1Float32IsIdentity) {
  CompressConfig cfg;
  cfg.density = 1.0;
  cfg.values = ValueCoding::kFloat32;
  for (size_t n : {1ul, 8ul, 1000ul, 100003ul}) {
    RunResult r = run(n, cfg, 5);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits(r.deq[i]), bits(r.acc[i] + r.res_in[i])) << i;
      ASSERT_EQ(r.res_out[i], 0.0f);
    }
    auto d = decode(r.wire, n);
    if (n > 1) {  // n == 1: 1-byte varint ties with the 1-byte bitmap; ties go to varint
      EXPECT_EQ(d.h.indices, IndexCoding::kBitmap) << "dense message must use the bitmap";
    }
    EXPECT_EQ(r.st.index_bytes, (n + 7) / 8);
  }
}

TEST(CompressEf, AlphaScalesAndAccumulates) {
  CompressConfig cfg;
  cfg.density = 0.1;
  RunResult r = run(1000, cfg, 3);
  std::vector<float> dst(1000, 1.0f);
  decompress_add(r.wire.data(), r.wire.size(), dst.data(), dst.size(), -0.5f);
  for (size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(bits(dst[i]), bits(1.0f + -0.5f * r.deq[i])) << i;
}

// ---- top-k tie rule through the whole path ----------------------------------------------------

TEST(CompressEf, TieRuleLowerIndexFirst) {
  std::vector<float> acc = {1.0f, -3.0f, 3.0f, 2.0f, -3.0f, 3.0f, 0.0f, 3.0f};
  std::vector<float> res(acc.size(), 0.0f);
  CompressConfig cfg;
  cfg.values = ValueCoding::kFloat32;
  cfg.density = 3.0 / 8.0;
  std::vector<uint8_t> w;
  compress_ef(acc.data(), res.data(), acc.size(), cfg, w);
  auto d = decode(w, acc.size());
  EXPECT_EQ(d.idx, (std::vector<uint32_t>{1, 2, 4}));
  EXPECT_EQ(d.fvals, (std::vector<float>{-3.0f, 3.0f, -3.0f}));
  EXPECT_EQ(res, (std::vector<float>{1.0f, 0.0f, 0.0f, 2.0f, 0.0f, 3.0f, 0.0f, 3.0f}));
}

TEST(CompressEf, TiesAcrossALargeTensor) {
  // 100003 elements with 4 distinct magnitudes (and +-0): the threshold falls inside a
  // run of equal values, so exactly the lowest-index ones must be taken.
  const size_t n = 100003;
  std::vector<float> acc(n), res(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    int m = static_cast<int>((i * 2654435761u) % 5);
    acc[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(m) * 0.25f;
  }
  for (double density : {0.01, 0.2, 0.3, 0.77}) {
    std::vector<float> r = res;
    CompressConfig cfg;
    cfg.density = density;
    cfg.values = ValueCoding::kFloat32;
    std::vector<uint8_t> w;
    compress_ef(acc.data(), r.data(), n, cfg, w);
    auto d = decode(w, n);
    EXPECT_EQ(d.idx, testing::ref_topk(acc, topk_count(n, density))) << density;
  }
}

TEST(CompressEf, AllZeroTensor) {
  std::vector<float> acc(1000, 0.0f), res(1000, 0.0f);
  CompressConfig cfg;
  cfg.density = 0.01;
  std::vector<uint8_t> w;
  auto st = compress_ef(acc.data(), res.data(), acc.size(), cfg, w);
  auto d = decode(w, 1000);
  EXPECT_EQ(st.k, 10u);
  EXPECT_EQ(d.idx, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(d.scales, (std::vector<float>{0.0f}));
  EXPECT_EQ(d.q, std::vector<int8_t>(10, 0));
}

// ---- quantiser bounds --------------------------------------------------------------------------

TEST(Int8, NearestErrorAtMostHalfScale) {
  CompressConfig cfg;
  cfg.density = 0.2;
  cfg.block = 64;
  RunResult r = run(100003, cfg, 11);
  auto d = decode(r.wire, r.acc.size());
  double worst_ratio = 0.0;
  for (size_t j = 0; j < d.idx.size(); ++j) {
    uint32_t i = d.idx[j];
    float s = d.scales[j / cfg.block];
    double v = r.acc[i] + r.res_in[i];
    double err = std::fabs(r.deq[i] - v);
    // scale/2, plus the two float roundings (v/scale and q*scale), each <= 127*scale*2^-24
    ASSERT_LE(err, s * (0.5 + 254 * 0x1p-24)) << "element " << i;
    worst_ratio = std::max(worst_ratio, err / s);
  }
  EXPECT_GT(worst_ratio, 0.45) << "the bound is not exercised";
}

TEST(Int8, StochasticErrorBelowScaleAndUnbiased) {
  // Block of 1000 values with max 127 -> scale exactly 1; codes are floor/ceil of v.
  const size_t n = 1000;
  std::vector<float> acc = random_normal(n, 77, 20.0f);
  for (auto& x : acc) x = std::clamp(x, -126.0f, 126.0f);
  acc[0] = 127.0f;
  CompressConfig cfg;
  cfg.density = 1.0;
  cfg.block = n;
  cfg.rounding = Rounding::kStochastic;
  const int trials = 2000;
  std::vector<double> mean(n, 0.0);
  for (int t = 0; t < trials; ++t) {
    std::vector<float> res(n, 0.0f), deq(n, 0.0f);
    std::vector<uint8_t> w;
    cfg.seed = 1000 + t;
    compress_ef(acc.data(), res.data(), n, cfg, w);
    decompress_add(w.data(), w.size(), deq.data(), n, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LT(std::fabs(deq[i] - acc[i]), 1.0f) << i;
      mean[i] += deq[i];
    }
  }
  double worst_z = 0.0, total_bias = 0.0;
  for (size_t i = 0; i < n; ++i) {
    double f = acc[i] - std::floor(acc[i]);
    double sd = std::sqrt(f * (1.0 - f) / trials);
    double bias = mean[i] / trials - acc[i];
    total_bias += bias;
    if (sd > 0) {
      worst_z = std::max(worst_z, std::fabs(bias) / sd);
    } else {
      ASSERT_EQ(bias, 0.0) << i;
    }
  }
  // 1000 elements, each |z| > 5.5 has probability 4e-8: a fixed seed passing this is unbiased.
  EXPECT_LT(worst_z, 5.5);
  // sum of 1000 independent means: sd <= sqrt(1000 * 0.25 / trials) = 0.35
  EXPECT_LT(std::fabs(total_bias), 5 * 0.354);
}

TEST(Int8, NearestIsBiasedWhereStochasticIsNot) {
  // Sanity check of the statistical test above: 0.3 with scale 1 rounds to 0 every time.
  std::vector<float> acc = {127.0f, 0.3f};
  CompressConfig cfg;
  cfg.density = 1.0;
  double sum_near = 0, sum_sto = 0;
  for (int t = 0; t < 1000; ++t) {
    for (Rounding r : {Rounding::kNearest, Rounding::kStochastic}) {
      std::vector<float> res(2, 0.0f), deq(2, 0.0f);
      std::vector<uint8_t> w;
      cfg.rounding = r;
      cfg.seed = t;
      compress_ef(acc.data(), res.data(), 2, cfg, w);
      decompress_add(w.data(), w.size(), deq.data(), 2, 1.0f);
      (r == Rounding::kNearest ? sum_near : sum_sto) += deq[1];
    }
  }
  EXPECT_EQ(sum_near, 0.0);
  EXPECT_NEAR(sum_sto / 1000, 0.3, 5 * std::sqrt(0.21 / 1000));
}

TEST(CompressEf, SameSeedSameWireDifferentSeedDifferentWire) {
  CompressConfig cfg;
  cfg.density = 0.05;
  cfg.rounding = Rounding::kStochastic;
  cfg.seed = 1;
  RunResult a = run(10000, cfg, 8), b = run(10000, cfg, 8);
  EXPECT_EQ(a.wire, b.wire);
  cfg.seed = 2;
  RunResult c = run(10000, cfg, 8);
  EXPECT_NE(a.wire, c.wire);
}

// ---- arguments outside the contract ----------------------------------------------------------

TEST(CompressEf, RejectsBadConfig) {
  std::vector<float> acc(10, 1.0f), res(10, 0.0f);
  std::vector<uint8_t> w;
  for (double d : {0.0, -0.1, 1.5, std::nan("")}) {
    CompressConfig cfg;
    cfg.density = d;
    EXPECT_THROW(compress_ef(acc.data(), res.data(), 10, cfg, w), KernelError) << d;
  }
  CompressConfig cfg;
  cfg.block = 0;
  EXPECT_THROW(compress_ef(acc.data(), res.data(), 10, cfg, w), KernelError);
  cfg.block = kMaxBlock + 1;
  EXPECT_THROW(compress_ef(acc.data(), res.data(), 10, cfg, w), KernelError);
  cfg = CompressConfig{};
  cfg.values = static_cast<ValueCoding>(9);
  EXPECT_THROW(compress_ef(acc.data(), res.data(), 10, cfg, w), KernelError);
  cfg = CompressConfig{};
  EXPECT_THROW(compress_ef(nullptr, res.data(), 10, cfg, w), KernelError);
}

TEST(CompressEf, RejectsNonFinite) {
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    std::vector<float> acc(100, 1.0f), res(100, 0.0f);
    acc[37] = bad;
    std::vector<uint8_t> w;
    EXPECT_THROW(compress_ef(acc.data(), res.data(), 100, CompressConfig{}, w), KernelError);
  }
}

TEST(CompressEf, EmptyTensor) {
  std::vector<uint8_t> w;
  auto st = compress_ef(nullptr, nullptr, 0, CompressConfig{}, w);
  EXPECT_EQ(st.k, 0u);
  EXPECT_EQ(w.size(), kWireHeaderBytes);
  decompress_add(w.data(), w.size(), nullptr, 0, 1.0f);
  EXPECT_THROW(decompress_add(w.data(), w.size(), nullptr, 1, 1.0f), KernelError);
}

}  // namespace
}  // namespace geotb::kernels
