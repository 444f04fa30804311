// The semantic partition (workload.partition {"kind": "semantic"}; docs/guide/scenario.md "Data
// partitions"): semantically similar examples on neighbouring workers, as a data-topology layout
// places them on neighbouring GPUs.
//
//   embedding   PCA of the normalised pixels: the covariance of kPcaSample examples (a seeded
//               sample, mean-centred, in double), its top `components` eigenvectors by subspace
//               iteration (kPcaIterations rounds of multiply + Gram-Schmidt from seeded normals);
//               every example projected on them
//   clusters    k-means (Lloyd, k-means++ seeding, at most kKmeansIterations rounds) on the
//               projections: `clusters` clusters (0: one per worker)
//   order       a chain of the clusters: the one whose centroid has the smallest first component
//               first, then always the nearest centroid not yet taken
//   shards      every example in chain order (clusters in turn, each cluster's examples shuffled),
//               cut into one contiguous, nearly equal slice per rank: ranks DC by DC, so a data
//               center holds neighbouring clusters and so do neighbouring workers
//
// No libtorch; random numbers from emu::RandomStream.
#pragma once

#include <cstdint>
#include <vector>

#include "model/rank_layout.h"

namespace geotb::engine {

inline constexpr size_t kPcaSample = 5000;
inline constexpr int kPcaIterations = 60;
inline constexpr int kKmeansIterations = 50;

struct SemanticSpec {
  int components = 16;  ///< PCA dimensions of the embedding, 1..64
  int clusters = 0;     ///< k-means clusters; 0: one per worker
};

/// The embedding: `n` examples of `features` floats (row-major) projected on their top
/// `components` principal directions (n x components, row-major). Exposed for its test.
std::vector<double> pca_embedding(const float* images, size_t n, size_t features, int components, uint64_t seed);

/// Lloyd's k-means of `n` points of `dim` doubles into `k` clusters: each point's cluster.
/// Exposed for its test.
std::vector<int> kmeans(const std::vector<double>& points, size_t n, size_t dim, int k, uint64_t seed);

/// Every rank's example indices (see the header). Throws PartitionError (partition.h) on more
/// clusters than examples or fewer examples than ranks.
std::vector<std::vector<uint32_t>> semantic_partition(const float* images, size_t n, size_t features,
                                                      const SemanticSpec& spec, const model::RankLayout& layout,
                                                      uint64_t seed);

}  // namespace geotb::engine
