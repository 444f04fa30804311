// How the training examples are split over the workers (scenario workload.partition;
// docs/guide/scenario.md "Data partitions"). Ranks are numbered DC by DC (model/rank_layout.h; DCs
// may differ in size), and how much each DC weighs in a mean over DCs (dc_mean_weights).
//
//   iid          a seeded permutation cut into equal parts (partition_iid): every rank sees every class
//   dirichlet    per class, the shares of the parts ~ Dir(alpha) (FedML's / Flower's procedure, as
//                in Hsu et al., "Measuring the effects of non-identical data distribution", 2019):
//                a part already at the mean size takes no more; the draw is repeated until every
//                part holds at least min_size examples (at most kMaxDirichletTries times). The
//                parts are the data centers (level "dc": each DC's part then split IID over its
//                workers) or the workers (level "worker")
//   label_skew   data center d holds the classes (d·c + j) mod C, j < c (c = classes_per_dc); a
//                class is split evenly over the DCs that hold it; classes no DC holds are left out
//   semantic     clusters of a PCA embedding of the pixels, neighbouring clusters on neighbouring
//                workers (data/semantic.h)
//
// No libtorch; random numbers from emu::RandomStream (gamma by Marsaglia & Tsang on its normals,
// so a partition is the same with any standard library).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/random.h"
#include "engine/data/fashion_mnist.h"
#include "engine/data/semantic.h"
#include "model/rank_layout.h"

namespace geotb::engine {

struct PartitionSpec {
  enum class Kind { kIid, kDirichlet, kLabelSkew, kSemantic };
  enum class Level { kDc, kWorker };
  Kind kind = Kind::kIid;
  double alpha = 0.5;      ///< dirichlet: concentration, > 0 (small: each part dominated by few classes)
  Level level = Level::kDc;  ///< dirichlet: the parts are the data centers or the workers
  int min_size = 10;       ///< dirichlet: examples every part must hold
  int classes_per_dc = 2;  ///< label_skew
  SemanticSpec semantic;   ///< semantic
};

/// A partition that cannot be made (min_size never reached, an empty worker): the message says
/// which and why.
class PartitionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kMaxDirichletTries = 1000;

/// Every rank's example indices (ranks DC by DC), each example at most once. `labels` in
/// [0, classes). Throws PartitionError (also for "semantic", which needs the images: below).
std::vector<std::vector<uint32_t>> make_partition(const std::vector<int64_t>& labels, int classes,
                                                  const PartitionSpec& spec, const model::RankLayout& layout,
                                                  uint64_t seed);
/// The same from a dataset: every kind, "semantic" included.
std::vector<std::vector<uint32_t>> make_partition(const Dataset& data, int classes, const PartitionSpec& spec,
                                                  const model::RankLayout& layout, uint64_t seed);

/// What a DC's weight in a mean over data centers is (workload "dc_weights"): its share of the
/// workers (each worker's step is one batch: the mean of every worker's gradient, as naive DDP
/// takes it) or its share of the training examples (FedAvg's n_d / n).
enum class DcWeighting { kWorkers, kExamples };

/// Every DC's weight (DC order, summing to 1 up to rounding). Empty when every DC weighs the same
/// (equal workers, or equal examples): the strategies then take the plain mean, bit for bit what
/// they computed before weights existed (engine/strategy.h dc_mean_weight).
std::vector<float> dc_mean_weights(const model::RankLayout& layout, const std::vector<std::vector<uint32_t>>& shards,
                                   DcWeighting weighting);

/// counts[part][class] of a partition.
std::vector<std::vector<uint64_t>> label_histogram(const std::vector<std::vector<uint32_t>>& parts,
                                                   const std::vector<int64_t>& labels, int classes);

/// A Gamma(shape, 1) variate from the stream's uniforms and normals (Marsaglia & Tsang, "A simple
/// method for generating gamma variables", 2000; shape < 1 by the boost
/// Gamma(a) = Gamma(a + 1)·U^(1/a)). Exposed for its test.
double gamma_variate(emu::RandomStream& rng, double shape);

}  // namespace geotb::engine
