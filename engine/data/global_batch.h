// Controlled randomisation (workload.global_batch; docs/guide/scenario.md "Data partitions"): a
// fraction of every worker's batch drawn from a global pool, the rest from its own shard, and the
// gradient taken as
//
//   g = beta * g_local + (1 - beta) * g_global
//
// g_local the mean gradient of the shard's examples, g_global that of the pool's. The pool is a
// seeded uniform sample of `pool` of the training set that every data center holds a copy of
// (staged once before training: pool_staging_bytes). A step's pool examples are drawn with
// replacement from (seed, rank, step) alone, so they need no checkpoint state and a rewound or
// restarted worker draws them again. beta = 1 - fraction is plain batch mixing (the mean over the
// mixed batch); a smaller beta weighs the pool's examples more.
#pragma once

#include <cstdint>
#include <vector>

#include "model/rank_layout.h"

namespace geotb::engine {

struct GlobalBatchSpec {
  double fraction = 0;  ///< share of each batch from the pool; 0: off
  double beta = 0.5;    ///< weight of the shard's gradient
  double pool = 0.15;   ///< share of the training set in the pool
  bool on() const { return fraction > 0; }
  /// Pool examples in a batch of `batch`: round(fraction * batch).
  size_t count(size_t batch) const;
};

/// The pool: ceil(pool * n) of [0, n), a seeded sample, ascending.
std::vector<uint32_t> global_pool(size_t n, double pool, uint64_t seed);

/// The `count` pool examples of `rank`'s step `step` (with replacement), into `out`.
void draw_global(const std::vector<uint32_t>& pool, uint64_t seed, int rank, int step, size_t count,
                 std::vector<uint32_t>& out);

/// Bytes that cross the WAN to give every data center the pool: for each DC, the pool examples
/// none of its ranks' shards holds, times `bytes_per_example`.
uint64_t pool_staging_bytes(const std::vector<uint32_t>& pool, const std::vector<std::vector<uint32_t>>& shards,
                            const model::RankLayout& layout, size_t n, uint64_t bytes_per_example);

}  // namespace geotb::engine
