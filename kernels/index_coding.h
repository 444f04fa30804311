// Sparse index coding for the compressed wire format (kernels/wire_format.h).
// Indices are element positions in [0, n), strictly increasing, n <= kMaxElements.
//
// Two codings; the encoder picks whichever is smaller for each message (ties -> delta-varint):
//   kDeltaVarint  first index, then (idx[j] - idx[j-1] - 1), each as unsigned LEB128
//                 (7 bits per byte, low group first, high bit = "more bytes follow").
//                 At most 5 bytes per index because indices fit in 32 bits.
//   kBitmap       ceil(n/8) bytes, bit i (byte i/8, bit i%8, LSB first) set iff i is sent;
//                 padding bits past n are zero.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geotb::kernels {

enum class IndexCoding : uint8_t { kDeltaVarint = 0, kBitmap = 1 };

/// Largest tensor the kernels accept: indices are stored as uint32 internally.
inline constexpr uint64_t kMaxElements = 0xFFFFFFFFull;

/// Bytes of the delta-varint coding of idx[0..k) (strictly increasing; not checked).
size_t varint_index_bytes(const uint32_t* idx, size_t k);

/// Bytes of the bitmap coding for a tensor of n elements.
inline uint64_t bitmap_index_bytes(uint64_t n) { return (n + 7) / 8; }

/// The smaller coding for this message and its size in bytes.
struct IndexCodingChoice {
  IndexCoding coding;
  size_t bytes;
};
IndexCodingChoice choose_index_coding(const uint32_t* idx, size_t k, uint64_t n);

/// Writes exactly `bytes` (as returned by choose_index_coding / *_index_bytes) into out.
/// idx must be strictly increasing and < n (the encoder's own output; not re-checked).
void encode_indices(IndexCoding coding, const uint32_t* idx, size_t k, uint64_t n, uint8_t* out);

/// Decodes exactly k indices from in[0..len) into out[0..k). Validates everything: every byte
/// of `in` consumed, varints well formed and in range, indices strictly increasing and < n,
/// bitmap popcount == k and zero padding. Throws KernelError naming the defect. Never reads
/// in[len] or beyond, never writes out[k] or beyond.
void decode_indices(IndexCoding coding, const uint8_t* in, size_t len, uint64_t n, uint64_t k,
                    uint32_t* out);

}  // namespace geotb::kernels
