// QSGD: stochastic quantisation with s levels and one L2 norm per bucket of d elements
// (Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD: Communication-Efficient SGD via Gradient
// Quantization and Encoding", NeurIPS 2017, arXiv:1610.02132: the quantiser Q_s of Section 3 with
// its Lemma 3.1, applied per bucket as the paper's bucketed variant). The contract shared by every
// backend (this CPU one: kernels/cpu/qsgd.cc). No libtorch: raw buffers.
//
// Quantiser. v is cut into buckets of d consecutive elements (the last one shorter when d does
// not divide n); for bucket b with elements v_i:
//   norm_b  = float(sqrt(sum_i double(v_i)^2))        one float32 per bucket (the L2 norm, |v|_2);
//                                                     norm_b >= max |v_i| (monotone roundings)
//   r_i     = double(|v_i|) * s / double(norm_b)      in [0, s] (|v_i| s is exact in double)
//   l_i     = floor(r_i), p_i = r_i - l_i             (r_i = s: l_i = s, p_i = 0)
//   l_i    += 1 if u_i < p_i, u_i = stochastic_uniform(seed, i) (kernels/quantize.h: 24 random
//             bits from a counter-based stream keyed by (seed, the element's index in v))
//   Q(v_i)  = sign(v_i) * qsgd_value(l_i, norm_b, s) = sign(v_i) * float(l_i * norm_b / s), the
//             product and quotient in double (both exact or rounded once), then rounded to float
// which is the paper's Q_s(v_i) = |v|_2 sign(v_i) xi_i(v, s), xi_i = (l+1)/s with probability
// |v_i| s / |v|_2 - l, else l/s. E[Q(v_i)] = v_i up to the 2^-24 resolution of u and the final
// float rounding (relative 2^-24; coarser only for values in float's subnormal range): unbiased
// by construction. Per bucket of n_b elements, E|Q(v) - v|^2 = sum_i (norm_b / s)^2 p_i (1 - p_i)
// <= min(n_b / s^2, sqrt(n_b) / s) |v|^2 (the paper's Lemma 3.1). A bucket whose norm is 0 sends
// level 0 everywhere; a bucket's only non-zero element gets level s exactly (no draw).
// Deterministic given (v, s, d, seed): every caller with the same inputs gets the same message,
// bit for bit.
//
// Wire format (all integers little-endian, no padding, no alignment assumed):
//   offset size  field
//   0      4     magic     0x44535147 ("GQSD" as bytes 'G','Q','S','D')
//   4      2     version   kQsgdWireVersion (1)
//   6      2     reserved  0
//   8      8     n         elements (<= kMaxElements, kernels/index_coding.h)
//   16     4     s         levels, 1 <= s <= kQsgdMaxLevels
//   20     4     d         bucket size in elements, 1 <= d <= kMaxBlock (kernels/wire_format.h)
//   24     4     crc32     zlib crc32 of bytes [0,24) followed by bytes [28, end)
//   28     4B    norms     B = ceil(n/d) float32, bucket b covers elements [b*d, min(n,(b+1)*d));
//                          finite, >= 0
//   28+4B  C     codes     n codes of w + 1 bits, w = ceil(log2(s+1)) (qsgd_level_bits): code
//                          = level << 1 | sign (sign 1: negative; never with level 0), level <= s.
//                          Bit-packed LSB first: bit k of the code stream is bit (k mod 8) of
//                          byte floor(k/8); C = ceil(n (w + 1) / 8); the padding bits of the last
//                          byte are 0.
//   The message ends exactly there: any other length is rejected.
// Bytes per message (qsgd_wire_bytes): 28 + 4 ceil(n/d) + ceil(n (ceil(log2(s+1)) + 1) / 8).
// Defaults s = 256, d = 128 (StrategyConfig::levels, ::bucket): 10 bits per element plus a 32-bit
// norm per 128 elements, 10.25 bits per element (3.12x less than float32) for large n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/compress.h"

namespace geotb::kernels {

inline constexpr uint32_t kQsgdWireMagic = 0x44535147u;
inline constexpr uint16_t kQsgdWireVersion = 1;
inline constexpr size_t kQsgdHeaderBytes = 28;
/// The most levels a message may have: levels then take at most 16 bits, codes 17.
inline constexpr uint32_t kQsgdMaxLevels = 65535;

struct QsgdConfig {
  uint32_t levels = 256;  ///< s, in [1, kQsgdMaxLevels]
  uint32_t bucket = 128;  ///< d, elements per norm, in [1, kMaxBlock]
  uint64_t seed = 0;      ///< the stochastic rounding's stream (qsgd_seed derives one per use)
};

struct QsgdStats {
  uint64_t n = 0;           ///< elements
  uint64_t buckets = 0;     ///< ceil(n / d)
  uint64_t wire_bytes = 0;  ///< size of the message, qsgd_wire_bytes(n, s, d)
};

/// The parsed fixed header of a message.
struct QsgdHeader {
  uint16_t version = kQsgdWireVersion;
  uint64_t n = 0;
  uint32_t levels = 0;
  uint32_t bucket = 0;
  uint32_t crc = 0;
};

/// The magnitude of level l in a bucket of norm `norm` with s levels: float(l * norm / s), the
/// product (exact: 16 x 24 bits) and the quotient in double.
inline float qsgd_value(uint32_t level, double norm, double levels) {
  return static_cast<float>(static_cast<double>(level) * norm / levels);
}

/// w = ceil(log2(s + 1)): the bits of a level in [0, s] (s >= 1).
uint32_t qsgd_level_bits(uint32_t levels);
/// The exact size of a message: 28 + 4 ceil(n/d) + ceil(n (qsgd_level_bits(s) + 1) / 8) bytes.
uint64_t qsgd_wire_bytes(uint64_t n, uint32_t levels, uint32_t bucket);

/// A stream seed for one use of the quantiser: the splitmix64 finaliser applied to `base`,
/// `stream` and `counter` in turn (e.g. a run's seed, a data center, a round), so that two uses
/// differing in any of them draw unrelated uniforms.
uint64_t qsgd_seed(uint64_t base, uint64_t stream, uint64_t counter);

/// Quantises v[0..n) and encodes it (replaces `wire`). Throws KernelError, nothing written, for
/// levels or bucket outside their ranges, n > kMaxElements, v null with n > 0, a non-finite
/// v[i] (names the first) or a bucket norm that overflows float32 (names the bucket).
/// Reentrant.
QsgdStats qsgd_encode(const float* v, size_t n, const QsgdConfig& cfg, std::vector<uint8_t>& wire);

/// Validates the header of `wire` only (magic, version, reserved, n == expected_n, s, d, the
/// length the header implies, the checksum); throws KernelError naming the field.
QsgdHeader qsgd_read_header(const uint8_t* wire, size_t len, uint64_t expected_n);

/// Decodes `wire` and adds alpha * Q(v_i) into dst[i] for every element: dst[i] = dst[i] +
/// alpha * (±qsgd_value(l_i, norm_b, s)), each float operation rounded once. The whole message is validated
/// first (qsgd_read_header, then every norm finite and >= 0, every level <= s, no negative zero,
/// zero padding bits): on KernelError dst is unchanged. n must equal the encoded count.
void qsgd_decode_add(const uint8_t* wire, size_t len, float* dst, size_t n, float alpha);

}  // namespace geotb::kernels
