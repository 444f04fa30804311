#include "engine/data/global_batch.h"

#include <algorithm>
#include <cmath>

#include "common/random.h"

namespace geotb::engine {

namespace {
constexpr uint64_t kPoolStream = 0x5eed0009;
constexpr uint64_t kDrawStreams = 0x61b0000000000000ull;  // | rank << 32 | step
}  // namespace

size_t GlobalBatchSpec::count(size_t batch) const {
  return on() ? static_cast<size_t>(std::llround(fraction * static_cast<double>(batch))) : 0;
}

std::vector<uint32_t> global_pool(size_t n, double pool, uint64_t seed) {
  const size_t m = std::min(n, static_cast<size_t>(std::ceil(pool * static_cast<double>(n))));
  std::vector<uint32_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<uint32_t>(i);
  emu::RandomStream rng(seed, kPoolStream);
  for (size_t i = 0; i < m; ++i) std::swap(all[i], all[i + rng.next_u64() % (n - i)]);
  all.resize(m);
  std::sort(all.begin(), all.end());
  return all;
}

void draw_global(const std::vector<uint32_t>& pool, uint64_t seed, int rank, int step, size_t count,
                 std::vector<uint32_t>& out) {
  emu::RandomStream rng(seed, kDrawStreams | (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) |
                                  static_cast<uint32_t>(step));
  out.resize(count);
  for (size_t i = 0; i < count; ++i) out[i] = pool[rng.next_u64() % pool.size()];
}

uint64_t pool_staging_bytes(const std::vector<uint32_t>& pool, const std::vector<std::vector<uint32_t>>& shards,
                            const model::RankLayout& layout, size_t n, uint64_t bytes_per_example) {
  uint64_t total = 0;
  std::vector<char> held(n);
  for (int d = 0; d < layout.dcs(); ++d) {
    std::fill(held.begin(), held.end(), 0);
    for (int w = 0; w < layout.workers(d); ++w)
      for (uint32_t i : shards[static_cast<size_t>(layout.rank_of(d, w))]) held[i] = 1;
    for (uint32_t i : pool) total += held[i] ? 0 : bytes_per_example;
  }
  return total;
}

}  // namespace geotb::engine
