// IEEE 754 binary16 ("half", torch.float16) on the wire: 1 sign, 5 exponent (bias 15), 10 mantissa
// bits; largest finite 65504, smallest normal 2^-14, smallest subnormal 2^-24. The conversion is
// torch's c10::Half(float) (c10/util/Half.h fp16_ieee_from_fp32_value): round to nearest, ties to
// even, subnormals kept, anything at or above 65520 (half-way to 2^16) -> ±inf, a NaN -> sign |
// 0x7e00 (a quiet NaN). Gloo's float16 (gloo/types.h cpu_float2half_rn) rounds the same way; it
// maps a NaN to 0x7fff, a NaN too. from_fp16 is exact (every binary16 is a float).
// Tested on crafted values and against numpy's float16 (tests/kernels/fp16_numpy_test.py).
#pragma once

#include <cstdint>
#include <cstring>

namespace geotb::kernels {

inline uint16_t to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t u = x & 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u;    // NaN: quiet
  if (u >= 0x477ff000u) return sign | 0x7c00u;   // >= 65520 (and inf): rounds to inf
  if (u >= 0x38800000u) {                        // >= 2^-14: a normal half
    // Rebias the exponent (127 -> 15: minus 112 << 23), keep the top 10 mantissa bits, round the
    // 13 dropped ones to nearest even; a carry out of the mantissa bumps the exponent, as it should.
    const uint32_t h = (u - (112u << 23)) >> 13;
    const uint32_t rem = u & 0x1fffu;
    return sign | static_cast<uint16_t>(h + (rem > 0x1000u || (rem == 0x1000u && (h & 1u))));
  }
  if (u <= 0x33000000u) return sign;  // <= 2^-25, half the smallest subnormal: 0 (the tie to even)
  // A subnormal half: the value in units of 2^-24, m * 2^(e - 126) with the implicit bit in m.
  const uint32_t e = u >> 23;  // 102..112
  const uint32_t m = (u & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  const uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  // q + 1 may reach 0x400: the smallest normal's encoding, as it should.
  return sign | static_cast<uint16_t>(q + (rem > halfway || (rem == halfway && (q & 1u))));
}

inline float from_fp16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t u;
  if (e == 0x1fu) {
    u = sign | 0x7f800000u | (m << 13);  // inf, or a NaN (payload kept)
  } else if (e != 0) {
    u = sign | ((e + 112u) << 23) | (m << 13);
  } else {
    const float v = static_cast<float>(m) * 0x1p-24f;  // a subnormal (or zero): exact
    std::memcpy(&u, &v, 4);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace geotb::kernels
