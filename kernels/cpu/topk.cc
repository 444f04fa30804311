#include "kernels/topk.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace geotb::kernels {

uint64_t topk_count(uint64_t n, double density) {
  if (n == 0) return 0;
  double c = std::ceil(density * static_cast<double>(n));
  uint64_t k = c < 1.0 ? 1 : static_cast<uint64_t>(c);
  return k > n ? n : k;
}

void topk_from_candidates(const float* v, const uint32_t* cand, size_t c, size_t k,
                          std::vector<uint32_t>& out) {
  out.clear();
  if (k == 0) return;
  if (k == c) {
    out.assign(cand, cand + c);
    return;
  }
  thread_local std::vector<uint32_t> keys;
  keys.resize(c);
  for (size_t j = 0; j < c; ++j) keys[j] = magnitude_key(v[cand[j]]);
  // The k-th largest key T: everything above T is in, and among keys equal to T the
  // lowest indices (= earliest candidates, since cand is ascending) fill up to k.
  thread_local std::vector<uint32_t> tmp;
  tmp.assign(keys.begin(), keys.end());
  std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(k - 1), tmp.end(),
                   std::greater<uint32_t>());
  const uint32_t t = tmp[k - 1];
  size_t above = 0;
  for (size_t j = 0; j < c; ++j) above += keys[j] > t;
  size_t take_equal = k - above;
  out.resize(k);
  size_t o = 0;
  for (size_t j = 0; j < c; ++j) {
    uint32_t key = keys[j];
    if (key > t || (key == t && take_equal > 0)) {
      take_equal -= key == t;
      out[o++] = cand[j];
    }
  }
}

void topk_exact(const float* v, size_t n, size_t k, std::vector<uint32_t>& out) {
  out.clear();
  if (k == 0) return;
  if (k >= n) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint32_t>(i);
    return;
  }
  // Histogram of the top 11 bits of the key (sign excluded): find the bin holding the k-th
  // largest, keep everything at or above that bin as candidates, then select exactly.
  constexpr unsigned kShift = 20;
  std::array<uint64_t, (1u << (31 - kShift))> hist{};
  for (size_t i = 0; i < n; ++i) ++hist[magnitude_key(v[i]) >> kShift];
  uint64_t acc = 0;
  uint32_t bin = static_cast<uint32_t>(hist.size());
  while (acc < k) acc += hist[--bin];
  thread_local std::vector<uint32_t> cand;
  cand.resize(acc);
  size_t c = 0;
  const uint32_t lo = bin << kShift;
  for (size_t i = 0; i < n; ++i)
    if (magnitude_key(v[i]) >= lo) cand[c++] = static_cast<uint32_t>(i);
  topk_from_candidates(v, cand.data(), c, k, out);
}

}  // namespace geotb::kernels
