#include "engine/collectives/ring_allreduce.h"
#include "engine/collectives/ring_elements.h"
#include "engine/compute_charge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace geotb::engine {

namespace {
template <typename T>
std::vector<uint8_t> pack(const T* p, size_t n) {
  std::vector<uint8_t> b(n * sizeof(T));
  if (n) std::memcpy(b.data(), p, b.size());
  return b;
}

}  // namespace

bool shape_scales(size_t n, const RingShape& shape, double scale) {
  const double e = static_cast<double>(shape.elements);
  return shape.rounds == 1 && std::abs(static_cast<double>(n) * scale - e) <= 0.01 * e;
}

uint64_t ring_allreduce_tag_count(size_t ranks) { return ranks <= 1 ? 0 : 2 * (ranks - 1); }

namespace {
template <typename E>
void run_ring(Transport& t, const std::vector<int>& ring, typename E::T* data, size_t n, const TagRange& tags,
              const RingShape* shape) {
  using T = typename E::T;
  const size_t p = ring.size();
  if (p <= 1) return;
  tags.require(ring_allreduce_tag_count(p));
  const auto it = std::find(ring.begin(), ring.end(), t.rank());
  if (it == ring.end()) throw std::invalid_argument("ring_allreduce: rank " + std::to_string(t.rank()) + " not in ring");
  const size_t pos = static_cast<size_t>(it - ring.begin());
  const int next = ring[(pos + 1) % p];
  const int prev = ring[(pos + p - 1) % p];
  auto lo = [&](size_t c) { return c * n / p; };
  auto len = [&](size_t c) { return lo(c + 1) - lo(c); };
  auto send = [&](size_t c, uint64_t tag) {
    std::vector<uint8_t> b = pack(data + lo(c), len(c));
    if (!shape) return t.send_data(next, tag, std::move(b));
    const uint64_t e = shape->elements;
    t.send_shaped(next, tag, std::move(b), ((c + 1) * e / p - c * e / p) * sizeof(T), shape->rounds);
  };

  // Reduce-scatter: after p-1 steps position i holds the full sum of chunk (i+1) mod p.
  for (size_t s = 0; s + 1 < p; ++s) {
    const size_t send_c = (pos + p - s) % p;
    const size_t recv_c = (pos + p - s - 1) % p;
    send(send_c, tags.tag(s));
    const std::vector<uint8_t> in = t.recv(prev, tags.tag(s));
    if (in.size() != len(recv_c) * sizeof(T))
      throw TransportError("ring_allreduce: chunk of " + std::to_string(in.size()) + " bytes, expected " +
                           std::to_string(len(recv_c) * sizeof(T)));
    T* dst = data + lo(recv_c);
    const ComputeRegion region(Work::kReduce, len(recv_c));
    for (size_t i = 0, m = len(recv_c); i < m; ++i) {
      T s;
      std::memcpy(&s, in.data() + i * sizeof(T), sizeof(T));
      dst[i] = E::add(dst[i], s);
    }
  }
  // Allgather: circulate the reduced chunks.
  for (size_t s = 0; s + 1 < p; ++s) {
    const size_t send_c = (pos + 1 + p - s) % p;
    const size_t recv_c = (pos + p - s) % p;
    send(send_c, tags.tag(p - 1 + s));
    const std::vector<uint8_t> in = t.recv(prev, tags.tag(p - 1 + s));
    if (in.size() != len(recv_c) * sizeof(T))
      throw TransportError("ring_allreduce: chunk of " + std::to_string(in.size()) + " bytes, expected " +
                           std::to_string(len(recv_c) * sizeof(T)));
    if (!in.empty()) std::memcpy(data + lo(recv_c), in.data(), in.size());
  }
}

}  // namespace

void ring_allreduce_sum(Transport& t, const std::vector<int>& r, float* data, size_t n, const TagRange& tags) {
  run_ring<ring_elements::Float32>(t, r, data, n, tags, nullptr);
}

void ring_allreduce_sum(Transport& t, const std::vector<int>& r, float* data, size_t n, const TagRange& tags,
                        const RingShape& shape) {
  run_ring<ring_elements::Float32>(t, r, data, n, tags, &shape);
}

void ring_allreduce_sum(Transport& t, const std::vector<int>& r, uint16_t* data, size_t n, kernels::Wire16 w,
                        const TagRange& tags, const RingShape* shape) {
  kernels::with_wire16(w, [&](auto c) { run_ring<ring_elements::Wire16<decltype(c)>>(t, r, data, n, tags, shape); });
}

}  // namespace geotb::engine
