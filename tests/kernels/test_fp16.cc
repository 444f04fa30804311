// 16-bit wires (kernels/fp16.h, kernels/wire16.h): binary16 conversion on crafted values (the
// numpy sweep is tests/kernels/fp16_numpy_test.py), the 16-bit sums, and the error-feedback cast
// of hierarchical's exchange: conservation bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/wire16.h"

using namespace geotb::kernels;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Fp16, CraftedValuesConvertAsIeeeBinary16) {
  EXPECT_EQ(to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(to_fp16(0.0f), 0x0000);
  EXPECT_EQ(to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(to_fp16(0.5f), 0x3800);
  // The largest finite value, and the rounding boundary above it: 65520 is half-way to 2^16 (the
  // next binade's first value, inf in binary16), so it and everything above round to inf.
  EXPECT_EQ(to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(to_fp16(-65520.0f), 0xfc00);
  EXPECT_EQ(to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  // Subnormals: 2^-24 is the smallest; 2^-25 ties between 0 and it (to 0, even); just above goes up.
  EXPECT_EQ(to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(to_fp16(0x1p-25f), 0x0000);
  EXPECT_EQ(to_fp16(-0x1p-25f), 0x8000);
  EXPECT_EQ(to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(to_fp16(3 * 0x1p-25f), 0x0002);   // 1.5 units: tie to 2 (even)
  EXPECT_EQ(to_fp16(5 * 0x1p-25f), 0x0002);   // 2.5 units: tie to 2 (even)
  EXPECT_EQ(to_fp16(1023 * 0x1p-24f), 0x03ff);  // the largest subnormal
  EXPECT_EQ(to_fp16(1023.5f * 0x1p-24f), 0x0400);  // ties up into the smallest normal (1024, even)
  EXPECT_EQ(to_fp16(0x1p-14f), 0x0400);
  EXPECT_EQ(to_fp16(0x1p-30f), 0x0000);
  EXPECT_EQ(to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  // Normal ties: 1 + 2^-11 is half-way between 1 and 1 + 2^-10 (to 1, even mantissa); 1 + 3 * 2^-11
  // between 0x3c01 and 0x3c02 (to 0x3c02); anything above half-way rounds up.
  EXPECT_EQ(to_fp16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(to_fp16(2049.0f), 0x6800);  // 2048 (spacing 2 from 2048 on)
  EXPECT_EQ(to_fp16(2051.0f), 0x6802);  // 2052
  EXPECT_EQ(to_fp16(2.0f - 0x1p-12f), 0x4000);  // the mantissa carry bumps the exponent
  // NaN stays NaN (c10::Half's quiet 0x7e00, with the sign).
  EXPECT_EQ(to_fp16(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(to_fp16(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  EXPECT_TRUE(std::isnan(from_fp16(to_fp16(from_bits(0x7f800001u)))));  // a signalling NaN's payload is below bit 13

  EXPECT_EQ(from_fp16(0x3c00), 1.0f);
  EXPECT_EQ(from_fp16(0x7bff), 65504.0f);
  EXPECT_EQ(from_fp16(0x0001), 0x1p-24f);
  EXPECT_EQ(from_fp16(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(from_fp16(0x0400), 0x1p-14f);
  EXPECT_EQ(bits(from_fp16(0x8000)), 0x80000000u);
  EXPECT_EQ(from_fp16(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_fp16(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(from_fp16(0x7e00)));
  EXPECT_TRUE(std::isnan(from_fp16(0x7c01)));
}

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  // from_fp16 is exact, so to_fp16 must give every non-NaN half back bit for bit.
  int nans = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = from_fp16(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      ++nans;
      EXPECT_TRUE(std::isnan(from_fp16(to_fp16(f)))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(to_fp16(f), h) << std::hex << h << " " << f;
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(Wire16, SumsRoundEveryPartialSumTo16Bits) {
  // bfloat16 has 8 significant bits: 1 + 2^-8 is a tie (to 1, even); 1 + 2^-8 + 2^-8 sums to 1
  // one hop at a time but to 1 + 2^-7 in float before rounding.
  const uint16_t one = to_bf16(1.0f), tiny = to_bf16(0x1p-8f);
  EXPECT_EQ(from_bf16(Bf16::add(one, tiny)), 1.0f);
  EXPECT_EQ(from_bf16(Bf16::add(Bf16::add(one, tiny), tiny)), 1.0f);
  EXPECT_EQ(from_bf16(Bf16::add(one, Bf16::add(tiny, tiny))), 1.0f + 0x1p-7f);
  // binary16: 11 significant bits; 2048 + 1 ties to 2048; overflow goes to inf.
  EXPECT_EQ(from_fp16(Fp16::add(to_fp16(2048.0f), to_fp16(1.0f))), 2048.0f);
  EXPECT_EQ(from_fp16(Fp16::add(to_fp16(2048.0f), to_fp16(3.0f))), 2052.0f);
  EXPECT_EQ(from_fp16(Fp16::add(to_fp16(65504.0f), to_fp16(16.0f))), std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_fp16(Fp16::add(to_fp16(65504.0f), to_fp16(8.0f))), 65504.0f);
  EXPECT_EQ(parse_wire16("bf16"), Wire16::kBf16);
  EXPECT_EQ(parse_wire16("fp16"), Wire16::kFp16);
  EXPECT_FALSE(parse_wire16("float32").has_value());
  EXPECT_FALSE(parse_wire16("fp8").has_value());
}

/// cast16_ef on (acc, resid): returns the wire; checks conservation element by element.
std::vector<uint8_t> cast_and_check(Wire16 w, const std::vector<float>& acc, std::vector<float>& resid,
                                    std::vector<float>& sent) {
  const size_t n = acc.size();
  const std::vector<float> old = resid;
  sent.assign(n, -1.0f);
  std::vector<uint8_t> wire(2 * n);
  cast16_ef(w, acc.data(), resid.data(), sent.data(), n, wire.data());
  for (size_t i = 0; i < n; ++i) {
    const float v = acc[i] + old[i];
    // sent + residual == progress + old residual, exactly (bit for bit).
    EXPECT_EQ(bits(sent[i] + resid[i]), bits(v)) << "element " << i << ": v " << v << " sent " << sent[i];
    EXPECT_TRUE(std::isfinite(sent[i])) << i;
    const uint16_t h = load16(wire.data() + 2 * i);
    EXPECT_EQ(bits(w == Wire16::kBf16 ? from_bf16(h) : from_fp16(h)), bits(sent[i])) << i;
  }
  return wire;
}

TEST(Wire16, ErrorFeedbackCastConservesEveryElementExactly) {
  for (const Wire16 w : {Wire16::kBf16, Wire16::kFp16}) {
    SCOPED_TRACE(w == Wire16::kBf16 ? "bf16" : "fp16");
    const float big = w == Wire16::kBf16 ? 3.4e38f : 70000.0f;  // beyond the format's largest finite value
    std::vector<float> acc = {1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-9f + 0x1p-13f, -3.14159265f, 0x1p-20f, 0x1p-26f,
                              1e-30f, 0.0f, -0.0f, 65504.0f, 65519.0f, big, -big, 123456.789f};
    std::vector<float> resid(acc.size(), 0.0f), sent;
    cast_and_check(w, acc, resid, sent);
    // Saturation: a finite value beyond the range is sent as the largest finite one, its excess kept.
    const float max = w == Wire16::kBf16 ? Bf16::kMax : Fp16::kMax;
    EXPECT_EQ(sent[11], max);
    EXPECT_EQ(sent[12], -max);
    EXPECT_EQ(resid[11], big - max);
    // The rounding errors are in the residual, not lost: at least one element rounded.
    bool rounded = false;
    for (size_t i = 0; i < acc.size(); ++i) rounded = rounded || resid[i] != 0.0f;
    EXPECT_TRUE(rounded);
    // Next round: no progress, the residual alone is sent (what was not sent before goes now).
    const std::vector<float> carried = resid;
    std::vector<float> zero(acc.size(), 0.0f), sent2;
    cast_and_check(w, zero, resid, sent2);
    for (size_t i = 0; i < acc.size(); ++i) {
      const uint16_t h = w == Wire16::kBf16 ? to_bf16(carried[i]) : to_fp16(carried[i]);
      const float want = w == Wire16::kBf16 ? from_bf16(h) : from_fp16(h);
      if (std::isfinite(want)) {
        EXPECT_EQ(bits(sent2[i]), bits(want)) << i;
      }
    }
    // Seeded random progress and residuals of every magnitude the format holds.
    std::mt19937 rng(20240601);
    std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
    std::uniform_int_distribution<int> ex(w == Wire16::kBf16 ? -140 : -30, w == Wire16::kBf16 ? 120 : 17);
    std::vector<float> a(4096), r(4096), s;
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = std::ldexp(mant(rng), ex(rng));
      r[i] = std::ldexp(mant(rng), ex(rng) - 8);
    }
    cast_and_check(w, a, r, s);
  }
}

TEST(Wire16, NonFiniteProgressIsSentAsItIs) {
  std::vector<float> acc = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> resid(2, 0.0f), sent(2);
  std::vector<uint8_t> wire(4);
  cast16_ef(Wire16::kFp16, acc.data(), resid.data(), sent.data(), 2, wire.data());
  EXPECT_EQ(sent[0], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(sent[1]));
}

TEST(Wire16, Add16AddsTheScaledDecodedValues) {
  std::vector<uint8_t> wire(6);
  store16(wire.data(), to_fp16(1.5f));
  store16(wire.data() + 2, to_fp16(-2.0f));
  store16(wire.data() + 4, to_fp16(0x1p-24f));
  std::vector<float> dst = {1.0f, 1.0f, 0.0f};
  add16(Wire16::kFp16, wire.data(), 3, 0.5f, dst.data());
  EXPECT_EQ(dst, (std::vector<float>{1.75f, 0.0f, 0x1p-25f}));
  store16(wire.data(), to_bf16(3.0f));
  add16(Wire16::kBf16, wire.data(), 1, 2.0f, dst.data());
  EXPECT_EQ(dst[0], 7.75f);
}

}  // namespace
