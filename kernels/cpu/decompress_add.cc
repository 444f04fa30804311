#include <cstring>

#include "kernels/compress.h"
#include "kernels/wire_format.h"

namespace geotb::kernels {

void decompress_add(const uint8_t* wire, size_t wire_len, float* dst, size_t n, float alpha) {
  // Whole message validated (and indices decoded) before dst is touched: on KernelError dst is
  // unchanged.
  thread_local std::vector<uint32_t> idx;
  const WireView v = decode_wire(wire, wire_len, n, idx);
  const uint64_t k = v.header.k;
  if (k > 0 && dst == nullptr) throw KernelError("decompress_add: null dst");
  if (v.header.values == ValueCoding::kInt8) {
    const uint32_t block = v.header.block;
    const int8_t* q = reinterpret_cast<const int8_t*>(v.values);
    for (uint64_t b0 = 0, b = 0; b0 < k; b0 += block, ++b) {
      float s;
      std::memcpy(&s, v.scales + 4 * b, 4);
      const uint64_t b1 = b0 + block < k ? b0 + block : k;
      for (uint64_t j = b0; j < b1; ++j) dst[idx[j]] += alpha * (static_cast<float>(q[j]) * s);
    }
  } else {
    for (uint64_t j = 0; j < k; ++j) {
      float x;
      std::memcpy(&x, v.values + 4 * j, 4);
      dst[idx[j]] += alpha * x;
    }
  }
}

}  // namespace geotb::kernels
