#include "kernels/index_coding.h"

#include <bit>
#include <string>

#include "kernels/compress.h"

namespace geotb::kernels {
namespace {

inline size_t varint_len(uint32_t x) {
  // 1 + floor(log128(x)); x | 1 keeps countl_zero defined for 0.
  unsigned bits = 32 - std::countl_zero(x | 1u);
  return (bits + 6) / 7;
}

[[noreturn]] void fail_index(const std::string& what) { throw KernelError("wire index section: " + what); }

}  // namespace

size_t varint_index_bytes(const uint32_t* idx, size_t k) {
  if (k == 0) return 0;
  // Comparisons instead of countl_zero so that the loop vectorises.
  size_t bytes = varint_len(idx[0]);
  for (size_t j = 1; j < k; ++j) {
    const uint32_t d = idx[j] - idx[j - 1] - 1;
    bytes += 1u + (d >= (1u << 7)) + (d >= (1u << 14)) + (d >= (1u << 21)) + (d >= (1u << 28));
  }
  return bytes;
}

IndexCodingChoice choose_index_coding(const uint32_t* idx, size_t k, uint64_t n) {
  size_t v = varint_index_bytes(idx, k);
  uint64_t b = bitmap_index_bytes(n);
  if (b < v) return {IndexCoding::kBitmap, static_cast<size_t>(b)};
  return {IndexCoding::kDeltaVarint, v};
}

void encode_indices(IndexCoding coding, const uint32_t* idx, size_t k, uint64_t n, uint8_t* out) {
  if (coding == IndexCoding::kBitmap) {
    uint64_t bytes = bitmap_index_bytes(n);
    for (uint64_t i = 0; i < bytes; ++i) out[i] = 0;
    for (size_t j = 0; j < k; ++j) out[idx[j] >> 3] |= static_cast<uint8_t>(1u << (idx[j] & 7));
    return;
  }
  uint32_t prev_plus1 = 0;  // idx[-1] + 1 == 0 makes the first delta the index itself
  for (size_t j = 0; j < k; ++j) {
    uint32_t x = idx[j] - prev_plus1;
    prev_plus1 = idx[j] + 1;
    while (x >= 0x80u) {
      *out++ = static_cast<uint8_t>(x | 0x80u);
      x >>= 7;
    }
    *out++ = static_cast<uint8_t>(x);
  }
}

void decode_indices(IndexCoding coding, const uint8_t* in, size_t len, uint64_t n, uint64_t k,
                    uint32_t* out) {
  if (n > kMaxElements) fail_index("n=" + std::to_string(n) + " exceeds the 32-bit index range");
  if (coding == IndexCoding::kBitmap) {
    if (len != bitmap_index_bytes(n))
      fail_index("bitmap of " + std::to_string(len) + " bytes, expected " +
           std::to_string(bitmap_index_bytes(n)) + " for n=" + std::to_string(n));
    if (n % 8 != 0 && (in[len - 1] >> (n % 8)) != 0) fail_index("bitmap padding bits past n are set");
    uint64_t c = 0;
    for (size_t b = 0; b < len; ++b) c += static_cast<uint64_t>(std::popcount(in[b]));
    if (c != k) fail_index("bitmap has " + std::to_string(c) + " bits set, header says k=" + std::to_string(k));
    uint64_t j = 0;
    for (size_t b = 0; b < len; ++b) {
      unsigned m = in[b];
      while (m != 0) {
        unsigned bit = static_cast<unsigned>(std::countr_zero(m));
        out[j++] = static_cast<uint32_t>(b * 8 + bit);
        m &= m - 1;
      }
    }
    return;
  }
  if (coding != IndexCoding::kDeltaVarint) fail_index("unknown index coding");
  size_t pos = 0;
  uint64_t next = 0;  // smallest index the next entry may take (previous + 1)
  for (uint64_t j = 0; j < k; ++j) {
    uint64_t x = 0;
    unsigned shift = 0;
    for (;;) {
      if (pos >= len) fail_index("truncated varint at entry " + std::to_string(j) + " of k=" + std::to_string(k));
      uint8_t byte = in[pos++];
      if (shift == 28 && (byte & 0xF0u) != 0) fail_index("varint overflows 32 bits at entry " + std::to_string(j));
      x |= static_cast<uint64_t>(byte & 0x7Fu) << shift;
      if ((byte & 0x80u) == 0) {
        if (byte == 0 && shift != 0) fail_index("non-canonical varint at entry " + std::to_string(j));
        break;
      }
      shift += 7;
    }
    uint64_t i = next + x;
    if (i >= n) fail_index("index " + std::to_string(i) + " at entry " + std::to_string(j) + " >= n=" + std::to_string(n));
    out[j] = static_cast<uint32_t>(i);
    next = i + 1;
  }
  if (pos != len) fail_index(std::to_string(len - pos) + " trailing bytes after k=" + std::to_string(k) + " indices");
}

}  // namespace geotb::kernels
