// The element types a ring allreduce reduces (collectives/gloo_ring.cc, ring_allreduce.cc): T on
// the wire and in the buffer, add() as Gloo's sum of two elements (gloo/math.h sum<T>): float's +;
// a 16-bit float's float sum rounded back to 16 bits (gloo/types.h float16::operator+=,
// kernels/wire16.h).
#pragma once

#include <cstdint>

namespace geotb::engine::ring_elements {

struct Float32 {
  using T = float;
  static float add(float a, float b) { return a + b; }
};

template <typename Codec>
struct Wire16 {
  using T = uint16_t;
  static uint16_t add(uint16_t a, uint16_t b) { return Codec::add(a, b); }
};

}  // namespace geotb::engine::ring_elements
