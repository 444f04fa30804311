#include "reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/quantize.h"

namespace geotb::kernels::testing {

std::vector<uint32_t> ref_topk(const std::vector<float>& v, size_t k) {
  std::vector<uint32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
  order.resize(std::min(k, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

RefResult ref_compress(const std::vector<float>& acc, const std::vector<float>& residual,
                       const CompressConfig& cfg) {
  const size_t n = acc.size();
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = acc[i] + residual[i];
  size_t k = 0;
  if (n > 0) {
    k = static_cast<size_t>(std::ceil(cfg.density * static_cast<double>(n)));
    k = std::clamp<size_t>(k, 1, n);
  }
  RefResult r;
  r.idx = ref_topk(v, k);
  r.residual = v;
  r.dequantised.assign(n, 0.0f);
  if (cfg.values == ValueCoding::kFloat32) {
    for (uint32_t i : r.idx) {
      r.fvals.push_back(v[i]);
      r.dequantised[i] = v[i];
      r.residual[i] = 0.0f;
    }
    return r;
  }
  for (size_t b0 = 0; b0 < k; b0 += cfg.block) {
    size_t b1 = std::min(k, b0 + cfg.block);
    float m = 0.0f;
    for (size_t j = b0; j < b1; ++j) m = std::max(m, std::fabs(v[r.idx[j]]));
    float s = m / 127.0f;
    r.scales.push_back(s);
    for (size_t j = b0; j < b1; ++j) {
      uint32_t i = r.idx[j];
      int code = 0;
      if (s > 0.0f) {
        float x = v[i] / s;
        float qf;
        if (cfg.rounding == Rounding::kNearest) {
          qf = std::nearbyint(x);  // default rounding mode: half to even
        } else {
          float lo = std::floor(x);
          qf = stochastic_uniform(cfg.seed, i) < x - lo ? lo + 1.0f : lo;
        }
        code = static_cast<int>(std::clamp(qf, -127.0f, 127.0f));
      }
      r.q.push_back(static_cast<int8_t>(code));
      float deq = static_cast<float>(code) * s;
      r.dequantised[i] = deq;
      r.residual[i] = v[i] - deq;
    }
  }
  return r;
}

}  // namespace geotb::kernels::testing
