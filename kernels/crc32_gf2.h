// CRC-32 (zlib's: reflected polynomial 0xEDB88320, initial value and final xor 0xFFFFFFFF) of a
// buffer cut into pieces, combined without re-reading the bytes: crc(A ‖ B) = crc(A) · x^(8|B|) mod
// P + crc(B), in GF(2) with the reflected bit order, which is what zlib's crc32_combine computes
// (zlib 1.2.12's multmodp and x2nmodp, written here without zlib's table). Shared verbatim by the
// host and the CUDA kernels (GEOTB_HD); tests/kernels/test_wire_format.cc checks it against zlib.
#pragma once

#include <cstdint>

#include "kernels/hd.h"

namespace geotb::kernels {

inline constexpr uint32_t kCrc32Poly = 0xEDB88320u;

/// a · b mod P (reflected: bit 31 is x^0).
GEOTB_HD inline uint32_t crc32_multmodp(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31, p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1u) ? (b >> 1) ^ kCrc32Poly : b >> 1;
  }
  return p;
}

/// x^(8·bytes) mod P: the operator that shifts a CRC over `bytes` zero bytes.
GEOTB_HD inline uint32_t crc32_shift(uint64_t bytes) {
  uint32_t p = 1u << 31;      // x^0
  uint32_t sq = 1u << 23;     // x^8 = x^(2^3): one byte
  while (bytes) {
    if (bytes & 1u) p = crc32_multmodp(sq, p);
    bytes >>= 1;
    sq = crc32_multmodp(sq, sq);
  }
  return p;
}

/// crc(A ‖ B) from crc(A), crc(B) and |B| (zlib's crc32_combine).
GEOTB_HD inline uint32_t crc32_combine_hd(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return crc32_multmodp(crc32_shift(len_b), crc_a) ^ crc_b;
}

/// One step of the byte-wise CRC with a 256-entry table of the polynomial (crc32_table_entry).
GEOTB_HD inline uint32_t crc32_table_entry(uint32_t i) {
  uint32_t c = i;
  for (int b = 0; b < 8; ++b) c = (c & 1u) ? kCrc32Poly ^ (c >> 1) : c >> 1;
  return c;
}

/// One node of the tree that combines the CRCs of consecutive pieces: part[t] and part[t + stride]
/// (lengths len[t], len[t + stride]) become part[t] = crc of both, len[t] = their length. A level
/// with stride s runs it for every t that is a multiple of 2s; log2(pieces) levels leave the crc of
/// all pieces in part[0]. Empty pieces (length 0, crc 0) may only precede the non-empty ones, and
/// only the first non-empty piece may be short (pieces aligned to the buffer's end): then a right
/// subtree next to a non-empty left one is always full, `full_bytes` = s · piece bytes long, and its
/// operator `full_shift` = crc32_shift(full_bytes) is computed once per level, so a node costs one
/// GF(2) product instead of the log2(bytes) ones of crc32_shift (the general case stays correct).
GEOTB_HD inline void crc32_tree_step(uint32_t* part, uint32_t* len, unsigned t, unsigned stride, uint32_t full_shift,
                                     uint32_t full_bytes) {
  const uint32_t right = len[t + stride];
  if (right == 0) return;
  if (len[t] == 0) {  // crc(empty ‖ B) = crc(B)
    part[t] = part[t + stride];
    len[t] = right;
    return;
  }
  const uint32_t shift = right == full_bytes ? full_shift : crc32_shift(right);
  part[t] = crc32_multmodp(shift, part[t]) ^ part[t + stride];
  len[t] += right;
}

}  // namespace geotb::kernels
