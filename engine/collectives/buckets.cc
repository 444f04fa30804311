#include "engine/collectives/buckets.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace geotb::engine {

std::vector<uint64_t> ddp_buckets(const std::vector<uint64_t>& tensors, uint64_t total, const BucketConfig& cfg) {
  if (cfg.cap_bytes == 0 || cfg.first_cap_bytes == 0) throw std::invalid_argument("buckets: a cap of 0 bytes");
  constexpr uint64_t kBytes = sizeof(float);
  std::vector<uint64_t> out;
  uint64_t limit = cfg.first_cap_bytes;
  if (tensors.empty()) {  // a flat gradient: cut exactly at the limits
    for (uint64_t left = total; left > 0;) {
      const uint64_t b = std::min(left, std::max<uint64_t>(1, limit / kBytes));
      out.push_back(b);
      left -= b;
      limit = cfg.cap_bytes;
    }
    return out;
  }
  uint64_t acc = 0;
  for (size_t i = tensors.size(); i-- > 0;) {
    acc += tensors[i];
    if (acc * kBytes >= limit) {
      out.push_back(acc);
      acc = 0;
      limit = cfg.cap_bytes;
    }
  }
  if (acc > 0) out.push_back(acc);
  return out;
}

std::vector<BucketGroup> plan_buckets(const std::vector<uint64_t>& tensors, uint64_t total, size_t n,
                                      const BucketConfig& cfg, size_t max_groups) {
  if (max_groups == 0) throw std::invalid_argument("buckets: max_groups 0");
  if (total == 0 || total < n)
    throw std::invalid_argument(fmt::format("buckets: {} represented elements for {} trained ones", total, n));
  const std::vector<uint64_t> buckets = ddp_buckets(tensors, total, cfg);
  // Consecutive buckets grouped, the first alone (it is what starts early): every bucket a group
  // when the model trains itself, else groups of g >= 2 so that at most max_groups remain.
  const bool represented = total != n;
  const size_t rest = buckets.size() - 1;
  const size_t g = !represented ? 1 : std::max<size_t>(2, (rest + max_groups - 1) / max_groups);
  std::vector<BucketGroup> out;
  uint64_t done = 0;  // represented elements before the group, counted from the end
  auto proxy_at = [&](uint64_t u) {  // the proxy's offset from the end that stands for u
    return static_cast<size_t>(std::llround(static_cast<long double>(u) * n / total));
  };
  for (size_t i = 0; i < buckets.size();) {
    const size_t take = i == 0 ? 1 : std::min(g, buckets.size() - i);
    BucketGroup grp;
    grp.buckets = take;
    for (size_t k = 0; k < take; ++k) grp.elements += buckets[i + k];
    const size_t a = proxy_at(done), b = proxy_at(done + grp.elements);
    grp.lo = n - b;
    grp.n = b - a;
    done += grp.elements;
    out.push_back(grp);
    i += take;
  }
  return out;
}

std::string check_bucket_mb(double mb) {
  if (!std::isfinite(mb) || !(mb > 0) || mb > 1 << 20)
    return fmt::format("bucket_mb: {}: must be in (0, 1048576] MiB (DDP's bucket_cap_mb; default 25)", mb);
  return {};
}

}  // namespace geotb::engine
