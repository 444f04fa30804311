// QSGD (kernels/qsgd.h): the quantiser against a reference written from the contract, its
// statistics (unbiased within 3 sigma over 10^4 seeded quantisations; the measured variance under
// the paper's Lemma 3.1 bound and at the exact Bernoulli variance), the wire format's exact bytes,
// and every malformed message rejected by name with the destination untouched.
#include <gtest/gtest.h>

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/qsgd.h"
#include "kernels/quantize.h"
#include "test_util.h"

namespace geotb::kernels {
namespace {

using testing::poke;

constexpr int kDraws = 10000;  // seeded quantisations per statistical test

/// The quantiser as kernels/qsgd.h states it, element by element; `bias` > 0 rounds up with
/// probability p + bias instead of p (a wrong quantiser the statistical tests must reject).
struct Reference {
  std::vector<float> norms, value;
  std::vector<uint32_t> level;
};

Reference reference(const std::vector<float>& v, uint32_t s, uint32_t d, uint64_t seed, double bias = 0) {
  Reference r;
  const size_t n = v.size();
  r.value.resize(n);
  r.level.resize(n);
  for (size_t lo = 0; lo < n; lo += d) {
    const size_t hi = std::min(n, lo + d);
    double ss = 0;
    for (size_t i = lo; i < hi; ++i) ss += static_cast<double>(v[i]) * v[i];
    const float norm = static_cast<float>(std::sqrt(ss));
    r.norms.push_back(norm);
    for (size_t i = lo; i < hi; ++i) {
      uint32_t l = 0;
      if (norm > 0) {
        const double x = std::fabs(v[i]) * double(s) / double(norm);
        if (x >= s) {
          l = s;
        } else {
          l = static_cast<uint32_t>(std::floor(x));
          if (static_cast<double>(stochastic_uniform(seed, i)) < x - l + bias) ++l;
        }
      }
      r.level[i] = l;
      const float mag = static_cast<float>(double(l) * double(norm) / double(s));  // norm * l / s
      r.value[i] = v[i] < 0 && l > 0 ? -mag : mag;
    }
  }
  return r;
}

std::vector<float> decoded(const std::vector<uint8_t>& w, size_t n) {
  std::vector<float> out(n, 0.0f);
  qsgd_decode_add(w.data(), w.size(), out.data(), n, 1.0f);
  return out;
}

std::vector<uint8_t> encode(const std::vector<float>& v, uint32_t s, uint32_t d, uint64_t seed) {
  std::vector<uint8_t> w;
  qsgd_encode(v.data(), v.size(), {.levels = s, .bucket = d, .seed = seed}, w);
  return w;
}

// Buckets of 8: mixed signs with zeros; all zeros; all negative; one non-zero (level s exactly,
// no randomness); and a last bucket of 3 (d does not divide n).
const std::vector<float> kCrafted = {0.5f, -1.25f, 0.0f, 2.0f, -0.1f, 0.0f, 0.75f, -3.0f,   //
                                     0, 0, 0, 0, 0, 0, 0, 0,                                  //
                                     -0.3f, -1.7f, -0.05f, -2.2f, -0.9f, -0.01f, -1.0f, -4.0f, //
                                     0, 0, 0, -2.5f, 0, 0, 0, 0,                              //
                                     1.0f, -1e-3f, 0.25f};
constexpr uint32_t kD = 8;

TEST(Qsgd, EncodeMatchesTheReferenceBitForBit) {
  for (uint32_t s : {1u, 2u, 4u, 7u, 256u, 65535u})
    for (uint64_t seed : {0ull, 1ull, 0xDEADBEEFull}) {
      SCOPED_TRACE("s=" + std::to_string(s) + " seed=" + std::to_string(seed));
      const auto w = encode(kCrafted, s, kD, seed);
      const Reference ref = reference(kCrafted, s, kD, seed);
      const auto got = decoded(w, kCrafted.size());
      ASSERT_EQ(std::memcmp(got.data(), ref.value.data(), 4 * got.size()), 0);
      // The norms on the wire are the reference's, bit for bit.
      for (size_t b = 0; b < ref.norms.size(); ++b) {
        float x;
        std::memcpy(&x, w.data() + kQsgdHeaderBytes + 4 * b, 4);
        EXPECT_EQ(x, ref.norms[b]) << "bucket " << b;
      }
    }
}

// decode(encode(v)) = norm_b * sign * l / s exactly where every |v_i| s / |v|_b is an integer:
// [3, -4] has norm 5; with s = 5 the levels are 3 and 4, with s = 10 they are 6 and 8.
TEST(Qsgd, IntegralLevelsDecodeExactlyWithoutRandomness) {
  const std::vector<float> v = {3, -4, 0, 0.5f};  // d = 2: buckets [3,-4] (norm 5), [0, .5] (norm .5)
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(decoded(encode(v, 5, 2, seed), 4), v);
    EXPECT_EQ(decoded(encode(v, 10, 2, seed), 4), v);
  }
  // Every decoded value is norm * sign * l / s (in double, rounded to float) with l in [0, s],
  // whatever the seed, and l is floor or ceil of |v_i| s / norm.
  for (uint32_t s : {4u, 7u, 1000u})
    for (uint64_t seed = 0; seed < 50; ++seed) {
      const auto w = encode(kCrafted, s, kD, seed);
      const auto got = decoded(w, kCrafted.size());
      for (size_t i = 0; i < got.size(); ++i) {
        float norm;
        std::memcpy(&norm, w.data() + kQsgdHeaderBytes + 4 * (i / kD), 4);
        if (norm == 0) {
          EXPECT_EQ(got[i], 0.0f) << i;
          continue;
        }
        const double l = std::nearbyint(std::fabs(got[i]) * double(s) / norm);
        const double x = std::fabs(kCrafted[i]) * double(s) / norm;
        EXPECT_EQ(std::fabs(got[i]), static_cast<float>(l * norm / s)) << i;
        EXPECT_TRUE(l >= std::floor(x) && l <= std::ceil(x) && l <= s) << i << ": level " << l << " for " << x;
        if (got[i] != 0) {
          EXPECT_EQ(std::signbit(got[i]), std::signbit(kCrafted[i])) << i;
        }
      }
    }
}

// A bucket's only non-zero element has level s exactly (|v| s / |v| = s), no draw.
TEST(Qsgd, HandPackedCodes) {
  // d = 1: each element its own bucket, norm |v_i|, level s = 1. Codes l << 1 | sign, 2 bits,
  // LSB first: [2, 3, 0, 2] -> 0b10'00'11'10 = 0x8E.
  const std::vector<float> v = {2, -3, 0, 1};
  const auto w = encode(v, 1, 1, 9);
  ASSERT_EQ(w.size(), 28u + 4 * 4 + 1);
  EXPECT_EQ(w.back(), 0x8E);
  EXPECT_EQ(decoded(w, 4), v);
  // s = 3 (w = 2, codes of 3 bits): [6, 7, 0, 6] -> bits 110 111 000 110 (codes 0..3 from bit 0
  // up) -> bytes 0x3E, 0x0C; the values come back exactly (3 |v| / 3).
  for (const std::vector<float>& x : {v, std::vector<float>{0.1f, -1e-30f, 0, 7e37f}}) {
    const auto w3 = encode(x, 3, 1, 9);
    ASSERT_EQ(w3.size(), 28u + 16 + 2);
    EXPECT_EQ(w3[44], 0x3E);
    EXPECT_EQ(w3[45], 0x0C);
    EXPECT_EQ(decoded(w3, 4), x);
  }
}

TEST(Qsgd, LevelBitsAndTheByteFormula) {
  const std::pair<uint32_t, uint32_t> bits[] = {{1, 1}, {2, 2}, {3, 2}, {4, 3}, {7, 3}, {8, 4}, {15, 4},
                                               {16, 5}, {255, 8}, {256, 9}, {65535, 16}};
  for (auto [s, w] : bits) EXPECT_EQ(qsgd_level_bits(s), w) << s;
  // 28 + 4 ceil(n/d) + ceil(n (w + 1) / 8), by hand:
  EXPECT_EQ(qsgd_wire_bytes(0, 256, 128), 28u);
  EXPECT_EQ(qsgd_wire_bytes(35, 4, 8), 28u + 4 * 5 + 18);        // 35 x 4 bits = 140 -> 18 bytes
  EXPECT_EQ(qsgd_wire_bytes(128, 256, 128), 28u + 4 + 160);      // 10 bits each
  EXPECT_EQ(qsgd_wire_bytes(129, 256, 128), 28u + 8 + 162);      // 1290 bits -> 162 bytes
  EXPECT_EQ(qsgd_wire_bytes(1000, 1, 1000), 28u + 4 + 250);      // 2 bits each
  EXPECT_EQ(qsgd_wire_bytes(3, 65535, 1), 28u + 12 + 7);         // 3 x 17 = 51 bits -> 7 bytes
  // The encoder writes exactly that many, for every shape.
  for (uint32_t s : {1u, 3u, 4u, 255u, 256u, 1000u, 65535u})
    for (uint32_t d : {1u, 5u, 8u, 128u, 1u << 24})
      for (size_t n : {0u, 1u, 7u, 35u, 300u}) {
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i)) * (i % 3 ? 1.0f : -2.0f);
        const auto w = encode(v, s, d, 3);
        EXPECT_EQ(w.size(), qsgd_wire_bytes(n, s, d)) << "n=" << n << " s=" << s << " d=" << d;
        EXPECT_EQ(decoded(w, n), reference(v, s, d, 3).value) << "n=" << n << " s=" << s << " d=" << d;
      }
}

TEST(Qsgd, HeaderRoundTrip) {
  const auto w = encode(kCrafted, 7, kD, 11);
  const QsgdHeader h = qsgd_read_header(w.data(), w.size(), kCrafted.size());
  EXPECT_EQ(h.version, kQsgdWireVersion);
  EXPECT_EQ(h.n, kCrafted.size());
  EXPECT_EQ(h.levels, 7u);
  EXPECT_EQ(h.bucket, kD);
  // The fields at their offsets.
  uint32_t magic, s, d, crc;
  uint16_t version, reserved;
  uint64_t n;
  std::memcpy(&magic, w.data(), 4);
  std::memcpy(&version, w.data() + 4, 2);
  std::memcpy(&reserved, w.data() + 6, 2);
  std::memcpy(&n, w.data() + 8, 8);
  std::memcpy(&s, w.data() + 16, 4);
  std::memcpy(&d, w.data() + 20, 4);
  std::memcpy(&crc, w.data() + 24, 4);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(w.data()), 4), "GQSD");
  EXPECT_EQ(magic, kQsgdWireMagic);
  EXPECT_EQ(version, 1);
  EXPECT_EQ(reserved, 0);
  EXPECT_EQ(n, 35u);
  EXPECT_EQ(s, 7u);
  EXPECT_EQ(d, 8u);
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, w.data(), 24);
  c = crc32_z(c, w.data() + 28, w.size() - 28);
  EXPECT_EQ(crc, static_cast<uint32_t>(c));
}

TEST(Qsgd, TheSeedDecidesTheDrawsAndOnlyIt) {
  EXPECT_EQ(encode(kCrafted, 4, kD, 5), encode(kCrafted, 4, kD, 5));
  EXPECT_NE(encode(kCrafted, 4, kD, 5), encode(kCrafted, 4, kD, 6));
  // qsgd_seed: each argument matters.
  const uint64_t a = qsgd_seed(7, 0, 0);
  EXPECT_NE(a, qsgd_seed(8, 0, 0));
  EXPECT_NE(a, qsgd_seed(7, 1, 0));
  EXPECT_NE(a, qsgd_seed(7, 0, 1));
  EXPECT_NE(qsgd_seed(7, 1, 0), qsgd_seed(7, 0, 1));
  EXPECT_EQ(a, qsgd_seed(7, 0, 0));
}

/// Per element: the mean of kDraws quantisations (seeds qsgd_seed(base, 0, t)), and the
/// elements whose mean is more than 3 sigma (+ the float rounding allowance) from v.
struct MeanCheck {
  std::vector<double> mean;
  std::vector<size_t> outside;
  size_t random = 0;   // elements with p in (0, 1): sigma > 0
  double max_z = 0;    // the largest |mean - v| / sigma over them
};

MeanCheck check_mean(const std::vector<float>& v, uint32_t s, uint32_t d, uint64_t base, double bias) {
  const size_t n = v.size();
  MeanCheck c;
  c.mean.assign(n, 0.0);
  for (int t = 0; t < kDraws; ++t) {
    const uint64_t seed = qsgd_seed(base, 0, static_cast<uint64_t>(t));
    const std::vector<float> q = bias == 0 ? decoded(encode(v, s, d, seed), n) : reference(v, s, d, seed, bias).value;
    for (size_t i = 0; i < n; ++i) c.mean[i] += q[i];
  }
  for (size_t lo = 0; lo < n; lo += d) {
    const size_t hi = std::min(n, lo + d);
    double ss = 0;
    for (size_t i = lo; i < hi; ++i) ss += static_cast<double>(v[i]) * v[i];
    const double norm = std::sqrt(ss);
    for (size_t i = lo; i < hi; ++i) {
      c.mean[i] /= kDraws;
      // The exact variance of one draw: |v|^2 / s^2 p (1 - p), p = |v_i| s / |v| - l.
      const double x = norm > 0 ? std::fabs(v[i]) * s / norm : 0;
      const double p = x - std::floor(x);
      const double sigma = std::sqrt(norm * norm / (double(s) * s) * p * (1 - p) / kDraws);
      if (sigma > 0) {
        ++c.random;
        c.max_z = std::max(c.max_z, std::fabs(c.mean[i] - v[i]) / sigma);
      }
      // The float roundings of the norm, the scale and the level's value, and the 2^-24 grid of
      // the uniforms: a few units in the last place of the scale.
      const double rounding = 4 * std::ldexp(norm / s, -23);
      if (std::fabs(c.mean[i] - v[i]) > 3 * sigma + rounding) c.outside.push_back(i);
    }
  }
  return c;
}

TEST(Qsgd, MeanOfTenThousandQuantisationsIsWithinThreeSigma) {
  for (uint32_t s : {1u, 4u, 256u}) {
    SCOPED_TRACE("s=" + std::to_string(s));
    const MeanCheck c = check_mean(kCrafted, s, kD, 1234 + s, 0);
    EXPECT_TRUE(c.outside.empty()) << c.outside.size() << " element(s) outside 3 sigma, first " << c.outside[0]
                                   << ": mean " << c.mean[c.outside[0]] << " for " << kCrafted[c.outside[0]];
    EXPECT_GE(c.random, 14u);  // the test is about the draws: most elements are random ones
    std::printf("qsgd s=%u: %zu random elements, max |mean - v| = %.2f sigma\n", s, c.random, c.max_z);
    // Zeros (and the zero bucket) stay exactly zero; the lone element of bucket 3 is exact.
    for (size_t i : {2u, 5u, 8u, 15u, 24u, 30u}) EXPECT_EQ(c.mean[i], 0.0) << i;
    EXPECT_EQ(c.mean[27], -2.5);
  }
}

// The same check rejects a quantiser that rounds up with probability p + 0.02 (bias 0.02 scale).
TEST(Qsgd, TheMeanCheckRejectsASlightlyBiasedQuantiser) {
  EXPECT_FALSE(check_mean(kCrafted, 4, kD, 1238, 0.02).outside.empty());
  EXPECT_TRUE(check_mean(kCrafted, 4, kD, 1238, 0.0).outside.empty());
}

/// Per bucket: the measured E|Q(v) - v|^2 over kDraws, its standard error, the exact
/// sum_i scale^2 p_i (1 - p_i), and Lemma 3.1's min(n_b / s^2, sqrt(n_b) / s) |v|^2.
struct Variance {
  double measured = 0, stderr_ = 0, exact = 0, bound = 0;
};

std::vector<Variance> variance(const std::vector<float>& v, uint32_t s, uint32_t d, uint64_t base) {
  const size_t n = v.size(), nb = (n + d - 1) / d;
  std::vector<Variance> out(nb);
  std::vector<double> sum(nb, 0), sum2(nb, 0);
  for (int t = 0; t < kDraws; ++t) {
    const auto q = decoded(encode(v, s, d, qsgd_seed(base, 1, static_cast<uint64_t>(t))), n);
    for (size_t b = 0; b < nb; ++b) {
      double e = 0;
      for (size_t i = b * d; i < std::min(n, (b + 1) * d); ++i) e += (double(q[i]) - v[i]) * (double(q[i]) - v[i]);
      sum[b] += e;
      sum2[b] += e * e;
    }
  }
  for (size_t b = 0; b < nb; ++b) {
    const size_t lo = b * d, hi = std::min(n, lo + d);
    double ss = 0;
    for (size_t i = lo; i < hi; ++i) ss += static_cast<double>(v[i]) * v[i];
    const double norm = std::sqrt(ss), nbk = static_cast<double>(hi - lo);
    Variance& r = out[b];
    r.measured = sum[b] / kDraws;
    r.stderr_ = std::sqrt(std::max(0.0, sum2[b] / kDraws - r.measured * r.measured) / kDraws);
    for (size_t i = lo; i < hi; ++i) {
      const double x = norm > 0 ? std::fabs(v[i]) * s / norm : 0, p = x - std::floor(x);
      r.exact += norm * norm / (double(s) * s) * p * (1 - p);
    }
    r.bound = std::min(nbk / (double(s) * s), std::sqrt(nbk) / s) * ss;
  }
  return out;
}

TEST(Qsgd, MeasuredVarianceRespectsTheLemma31Bound) {
  // The crafted buckets at several s, and buckets that come close to the bound: with s = 1 and n
  // equal magnitudes the variance is (sqrt(n) - 1) |v|^2 against the bound's sqrt(n) |v|^2 (98 %
  // of it for n = 2500).
  std::vector<float> equal(2500 + 100);
  for (size_t i = 0; i < equal.size(); ++i) equal[i] = (i % 3 ? 0.5f : -0.5f);
  struct Case {
    const std::vector<float>* v;
    uint32_t s, d;
  };
  for (const Case& k : {Case{&kCrafted, 1, kD}, Case{&kCrafted, 2, kD}, Case{&kCrafted, 4, kD}, Case{&kCrafted, 256, kD},
                        Case{&equal, 1, 2500}, Case{&equal, 3, 2500}}) {
    const auto vs = variance(*k.v, k.s, k.d, 77 + k.s);
    for (size_t b = 0; b < vs.size(); ++b) {
      SCOPED_TRACE("s=" + std::to_string(k.s) + " d=" + std::to_string(k.d) + " bucket " + std::to_string(b));
      const Variance& r = vs[b];
      EXPECT_LE(r.measured, r.bound);
      // And it is the Bernoulli variance, not just below the bound: within 4 standard errors
      // (plus float rounding) of the exact value.
      EXPECT_NEAR(r.measured, r.exact, 4 * r.stderr_ + 1e-9 * r.bound) << "bound " << r.bound;
      if (r.bound > 0)
        std::printf("qsgd s=%u d=%u bucket %zu: E|Q-v|^2 = %.4g (exact %.4g, %.3f of the bound %.4g)\n", k.s, k.d, b,
                    r.measured, r.exact, r.measured / r.bound, r.bound);
    }
  }
  const auto tight = variance(equal, 1, 2500, 5);
  EXPECT_GT(tight[0].measured, 0.97 * tight[0].bound);  // the bound is nearly reached: the check bites
}

// Expects rejection naming `what`, and dst untouched.
void expect_rejected(const std::vector<uint8_t>& w, size_t n, const std::string& what) {
  std::vector<float> dst(n, 7.0f);
  try {
    qsgd_decode_add(w.data(), w.size(), dst.data(), n, 1.0f);
    ADD_FAILURE() << "accepted a message that should fail with '" << what << "'";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << "got: " << e.what();
  }
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], 7.0f) << "dst modified at " << i;
}

void fix_crc(std::vector<uint8_t>& w) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, w.data(), 24);
  c = crc32_z(c, w.data() + 28, w.size() - 28);
  poke<uint32_t>(w, 24, static_cast<uint32_t>(c));
}

TEST(Qsgd, MalformedMessagesAreRejectedByNameAndLeaveTheDestination) {
  const size_t n = kCrafted.size();
  const auto good = encode(kCrafted, 4, kD, 3);  // 3 bits + sign per element: 140 bits, 18 bytes
  ASSERT_EQ(good.size(), 28u + 20 + 18);
  expect_rejected({}, n, "qsgd wire: truncated header: 0 bytes < 28");
  expect_rejected(std::vector<uint8_t>(good.begin(), good.begin() + 27), n, "truncated header: 27 bytes");
  auto w = good;
  w[0] ^= 1;
  expect_rejected(w, n, "bad magic 0x44535146");
  w = good;
  poke<uint16_t>(w, 4, 2);
  expect_rejected(w, n, "unsupported version 2 (this decoder reads 1)");
  w = good;
  poke<uint16_t>(w, 6, 5);
  expect_rejected(w, n, "reserved=5, expected 0");
  expect_rejected(good, n + 1, "n=35 but the destination has 36");
  w = good;
  poke<uint32_t>(w, 16, 0);
  expect_rejected(w, n, "levels=0 outside [1, 65535]");
  poke<uint32_t>(w, 16, 65536);
  expect_rejected(w, n, "levels=65536 outside [1, 65535]");
  w = good;
  poke<uint32_t>(w, 20, 0);
  expect_rejected(w, n, "bucket=0 outside [1, 16777216]");
  w = good;
  poke<uint32_t>(w, 16, 8);  // 4 bits per level: the header implies 28 + 20 + 22 bytes
  expect_rejected(w, n, "truncated: 66 bytes, header implies 70");
  w = good;
  w.push_back(0);
  expect_rejected(w, n, "trailing bytes: 67 bytes, header implies 66");
  w = good;
  w.pop_back();
  expect_rejected(w, n, "truncated: 65 bytes, header implies 66");
  w = good;
  w[40] ^= 0x10;  // a norm's bit: the checksum no longer matches
  expect_rejected(w, n, "checksum mismatch");
  // Past the checksum (recomputed): the content's own checks.
  w = good;
  poke<float>(w, 28 + 4, -1.0f);
  fix_crc(w);
  expect_rejected(w, n, "norm of bucket 1 is not finite and >= 0");
  poke<float>(w, 28 + 4, std::nanf(""));
  fix_crc(w);
  expect_rejected(w, n, "norm of bucket 1 is not finite and >= 0");
  // s = 4 leaves levels 5..7 unused: element 0's code (bits 0-3 of the codes) set to level 6.
  w = good;
  w[48] = static_cast<uint8_t>((w[48] & 0xF0) | (6 << 1));
  fix_crc(w);
  expect_rejected(w, n, "element 0: level 6 > levels=4");
  // Element 2 is a zero: its code (bits 8-11) with the sign bit is a negative zero.
  w = good;
  ASSERT_EQ(w[49] & 0x0F, 0);
  w[49] |= 1;
  fix_crc(w);
  expect_rejected(w, n, "element 2: sign bit set on level 0");
  // 35 codes of 4 bits leave 4 padding bits in the last byte.
  w = good;
  w.back() |= 0x80;
  fix_crc(w);
  expect_rejected(w, n, "nonzero padding bits after the last code");
  // The untouched message decodes.
  std::vector<float> dst(n, 0.0f);
  qsgd_decode_add(good.data(), good.size(), dst.data(), n, 1.0f);
  EXPECT_EQ(dst, reference(kCrafted, 4, kD, 3).value);
}

TEST(Qsgd, DecodeAddsAlphaTimesTheValue) {
  const auto w = encode(kCrafted, 4, kD, 3);
  const auto q = reference(kCrafted, 4, kD, 3).value;
  std::vector<float> dst(kCrafted.size(), 1.5f);
  qsgd_decode_add(w.data(), w.size(), dst.data(), dst.size(), 0.25f);
  for (size_t i = 0; i < dst.size(); ++i) EXPECT_EQ(dst[i], 1.5f + 0.25f * q[i]) << i;
  // n = 0: a header alone.
  const auto empty = encode({}, 4, kD, 3);
  EXPECT_EQ(empty.size(), 28u);
  qsgd_decode_add(empty.data(), empty.size(), nullptr, 0, 1.0f);
}

TEST(Qsgd, EncoderRejectsBadArgumentsByName) {
  auto rejected = [](const std::vector<float>& v, uint32_t s, uint32_t d, const std::string& what) {
    std::vector<uint8_t> w = {1, 2, 3};
    try {
      qsgd_encode(v.data(), v.size(), {.levels = s, .bucket = d, .seed = 0}, w);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const KernelError& e) {
      EXPECT_EQ(std::string(e.what()), what);
    }
    EXPECT_EQ(w, (std::vector<uint8_t>{1, 2, 3})) << "wire written";
  };
  rejected({1}, 0, 8, "qsgd_encode: QsgdConfig.levels=0 outside [1, 65535]");
  rejected({1}, 65536, 8, "qsgd_encode: QsgdConfig.levels=65536 outside [1, 65535]");
  rejected({1}, 4, 0, "qsgd_encode: QsgdConfig.bucket=0 outside [1, 16777216]");
  rejected({1, 2, std::nanf(""), 4}, 4, 8, "qsgd_encode: non-finite v[2] = nan");
  rejected({1, -INFINITY}, 4, 8, "qsgd_encode: non-finite v[1] = -inf");
  rejected({3e38f, 3e38f, 1}, 4, 2, "qsgd_encode: the norm of bucket 0 (elements [0, 2)) overflows float32");
  std::vector<uint8_t> w;
  EXPECT_THROW(qsgd_encode(nullptr, 3, {}, w), KernelError);
}

}  // namespace
}  // namespace geotb::kernels
