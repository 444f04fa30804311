// 16-bit floats on the wire: bfloat16 (kernels/bf16.h) or IEEE binary16 (kernels/fp16.h), both
// round to nearest even. What naive_ddp's 16-bit gradient allreduce and hierarchical's 16-bit
// exchange use ("wire": "bf16" | "fp16", docs/guide/strategies.md "16-bit wires"):
//
//  * a codec type per format (Bf16, Fp16: encode, decode, and add as a 16-bit reduction does it:
//    the two values in float, their float sum rounded back to 16 bits, as Gloo's float16
//    operator+ (gloo/types.h) and NCCL's half/bfloat16 sums) and with_wire16() to call a generic
//    function with the codec of a runtime format;
//  * cast_div16 / decode16: torch's bf16/fp16_compress_hook around naive_ddp's allreduce;
//  * cast16_ef: the error-feedback cast of hierarchical's exchange.
// Elements travel little-endian, 2 bytes each, no header.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "kernels/bf16.h"
#include "kernels/fp16.h"

namespace geotb::kernels {

enum class Wire16 : uint8_t { kBf16, kFp16 };

/// "bf16" or "fp16" -> its format; anything else (e.g. "float32") -> nullopt.
inline std::optional<Wire16> parse_wire16(std::string_view s) {
  if (s == "bf16") return Wire16::kBf16;
  if (s == "fp16") return Wire16::kFp16;
  return std::nullopt;
}

struct Bf16 {
  static constexpr Wire16 kFormat = Wire16::kBf16;
  static constexpr float kMax = 0x1.fep127f;  ///< largest finite bfloat16
  static uint16_t encode(float f) { return to_bf16(f); }
  static float decode(uint16_t h) { return from_bf16(h); }
  static uint16_t add(uint16_t a, uint16_t b) { return to_bf16(from_bf16(a) + from_bf16(b)); }
};

struct Fp16 {
  static constexpr Wire16 kFormat = Wire16::kFp16;
  static constexpr float kMax = 65504.0f;  ///< largest finite binary16
  static uint16_t encode(float f) { return to_fp16(f); }
  static float decode(uint16_t h) { return from_fp16(h); }
  static uint16_t add(uint16_t a, uint16_t b) { return to_fp16(from_fp16(a) + from_fp16(b)); }
};

/// fn(Bf16{}) or fn(Fp16{}).
template <typename F>
decltype(auto) with_wire16(Wire16 w, F&& fn) {
  if (w == Wire16::kBf16) return fn(Bf16{});
  return fn(Fp16{});
}

/// The 16-bit value of a 2-byte wire element (unaligned, little-endian as the host: x86, ARM).
inline uint16_t load16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}
inline void store16(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }

/// torch's bf16_compress_hook / fp16_compress_hook before the allreduce (torch 1.13.1,
/// torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py:
/// `bucket.buffer().to(torch.bfloat16 | torch.float16).div_(world_size)`): each element cast to 16
/// bits, then divided by `world` in 16 bits: the float quotient rounded to 16 bits (what
/// Tensor.div_ computes for a Half or BFloat16 tensor). Cast first: a binary16 gradient beyond
/// 65504 is inf before the division; divided first, a tiny one underflows (2^-24 / 4 -> 0).
template <typename Codec>
void cast_div16(const float* g, size_t n, float world, uint16_t* h) {
  for (size_t i = 0; i < n; ++i) h[i] = Codec::encode(Codec::decode(Codec::encode(g[i])) / world);
}
inline void cast_div16(Wire16 w, const float* g, size_t n, float world, uint16_t* h) {
  with_wire16(w, [&](auto c) { cast_div16<decltype(c)>(g, n, world, h); });
}

/// g[i] = decode(h[i]): the hook's cast back (`decompressed_tensor.copy_(...)`), exact.
inline void decode16(Wire16 w, const uint16_t* h, size_t n, float* g) {
  with_wire16(w, [&](auto c) {
    for (size_t i = 0; i < n; ++i) g[i] = decltype(c)::decode(h[i]);
  });
}

/// Error feedback through a 16-bit cast, element by element:
///   v = acc[i] + resid[i];  h = encode(v), saturated at ±max finite;
///   sent[i] = decode(h);  resid[i] = v - sent[i];  out[2i, 2i+2) = h.
/// sent[i] + resid[i] == v exactly for every finite v: v - sent[i] is exact in float (|v - sent| <=
/// |v|, a multiple of v's ulp), and the saturation keeps a v beyond the format's range finite on
/// the wire, its excess in the residual (binary16 tops out at 65504; plain rounding would send
/// inf). A NaN or infinite v is sent as it is (the residual becomes NaN).
/// `out` holds 2n bytes; acc, resid and sent hold n floats (sent may not alias acc or resid).
template <typename Codec>
void cast16_ef(const float* acc, float* resid, float* sent, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const float v = acc[i] + resid[i];
    uint16_t h = Codec::encode(v);
    float s = Codec::decode(h);
    if (std::isinf(s) && std::isfinite(v)) {  // rounded to ±inf from a finite v: the largest finite instead
      h = Codec::encode(v < 0 ? -Codec::kMax : Codec::kMax);
      s = Codec::decode(h);
    }
    sent[i] = s;
    resid[i] = v - s;
    store16(out + 2 * i, h);
  }
}

inline void cast16_ef(Wire16 w, const float* acc, float* resid, float* sent, size_t n, uint8_t* out) {
  with_wire16(w, [&](auto c) { cast16_ef<decltype(c)>(acc, resid, sent, n, out); });
}

/// dst[i] += alpha * decode(wire element i), i < n; `wire` holds 2n bytes.
inline void add16(Wire16 w, const uint8_t* wire, size_t n, float alpha, float* dst) {
  with_wire16(w, [&](auto c) {
    using C = decltype(c);
    for (size_t i = 0; i < n; ++i) dst[i] += alpha * C::decode(load16(wire + 2 * i));
  });
}

}  // namespace geotb::kernels
