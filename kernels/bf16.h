// bfloat16 on the wire: float32's sign, exponent and top 7 mantissa bits (what a 16-bit
// pseudo-gradient or gradient is sent as). Round to nearest, ties to even, as torch's
// float -> bfloat16 conversion (c10/util/BFloat16.h round_to_nearest_even); a NaN stays a quiet NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace geotb::kernels {

inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN: quiet
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace geotb::kernels
