// Helpers shared by the kernel tests (CPU and GPU suites): seeded inputs and wire inspection.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/compress.h"
#include "kernels/wire_format.h"

namespace geotb::kernels::testing {

/// n normal(0, sigma) floats from a seeded mt19937_64.
inline std::vector<float> random_normal(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// Decoded content of a message, for checks.
struct Decoded {
  WireHeader h;
  std::vector<uint32_t> idx;
  std::vector<float> scales;
  std::vector<int8_t> q;
  std::vector<float> fvals;
};

inline Decoded decode(const std::vector<uint8_t>& wire, uint64_t n) {
  Decoded d;
  WireView v = decode_wire(wire.data(), wire.size(), n, d.idx);
  d.h = v.header;
  if (d.h.values == ValueCoding::kInt8) {
    d.scales.resize(num_blocks(d.h.k, d.h.block));
    if (!d.scales.empty()) std::memcpy(d.scales.data(), v.scales, 4 * d.scales.size());
    d.q.assign(reinterpret_cast<const int8_t*>(v.values), reinterpret_cast<const int8_t*>(v.values) + d.h.k);
  } else {
    d.fvals.resize(d.h.k);
    if (d.h.k) std::memcpy(d.fvals.data(), v.values, 4 * d.h.k);
  }
  return d;
}

/// Recomputes the header checksum after a test edited the message.
inline void fix_crc(std::vector<uint8_t>& w) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, w.data(), 28);
  c = crc32_z(c, w.data() + 32, w.size() - 32);
  uint32_t c32 = static_cast<uint32_t>(c);
  std::memcpy(w.data() + 28, &c32, 4);
}

template <class T>
inline void poke(std::vector<uint8_t>& w, size_t off, T v) {
  std::memcpy(w.data() + off, &v, sizeof v);
}

/// A message assembled field by field (for crafted corrupt inputs); crc fixed unless told not to.
inline std::vector<uint8_t> build_message(uint64_t n, uint64_t k, uint32_t block, uint8_t values, uint8_t coding,
                                          const std::vector<uint8_t>& index_section,
                                          const std::vector<uint8_t>& rest, bool crc = true) {
  std::vector<uint8_t> w(kWireHeaderBytes);
  poke<uint32_t>(w, 0, kWireMagic);
  poke<uint16_t>(w, 4, kWireVersion);
  w[6] = values;
  w[7] = coding;
  poke<uint64_t>(w, 8, n);
  poke<uint64_t>(w, 16, k);
  poke<uint32_t>(w, 24, block);
  poke<uint64_t>(w, 32, index_section.size());
  w.resize(kWireHeaderBytes + index_section.size() + rest.size());
  std::copy(index_section.begin(), index_section.end(), w.begin() + kWireHeaderBytes);
  std::copy(rest.begin(), rest.end(), w.begin() + static_cast<std::ptrdiff_t>(kWireHeaderBytes + index_section.size()));
  if (crc) fix_crc(w);
  return w;
}

inline std::vector<uint8_t> float_bytes(const std::vector<float>& f) {
  std::vector<uint8_t> b(4 * f.size());
  if (!f.empty()) std::memcpy(b.data(), f.data(), b.size());
  return b;
}

}  // namespace geotb::kernels::testing
