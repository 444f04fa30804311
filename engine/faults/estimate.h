// Policy "estimate" (docs/guide/faults.md): what stands in for a dead worker's gradient in its
// group's mean, from the step after its death until it restarts or the run ends, instead of
// shrink's mean over the survivors.
//
// The group's mean over its N workers is (Σ_i G_i + Σ_d Ĝ_d) / N, i over the L survivors, d over
// the dead, with
//  * "seed":        Ĝ_d = Σ_i w_id G_i / Σ_i w_id, w_id = 1 / (1 + cos(x_d, x_i)) (the data-topology
//                   notes' formula: it weighs *dissimilar* batches more);
//  * "similarity":  the same with w_id = max(cos(x_d, x_i), 0) (all zero: equal weights);
//  * "equal":       w_id = 1: Ĝ_d is the survivors' mean and the group mean is theirs, shrink's,
//                   computed as shrink computes it (bit for bit the same run);
//  * "last_gradient": Ĝ_d = decay^(t - t_d) G_d(t_d), the dead worker's gradient of t_d, the last
//                   step it took part in (MIFA's reuse). Nobody holds it: after the death the
//                   survivors allreduce their own gradients of t_d, and N · mean(t_d) minus that
//                   sum (and minus the estimates in force at t_d) is the dead's share; several
//                   workers dead at once share their sum equally. A worker dead before any step
//                   of its group completed has none: the survivors' mean stands in.
// x is a batch's mean input minus the training set's mean input. The survivors know the dead
// worker's batch of every step (its shard and sampler are the run's, read from shared storage).
//
// How it runs: each survivor scales its gradient before the group's allreduce (which divides by
// L) so that the result is the mean above: G_i ← (L/N)(1 + Σ_d w_id / W_d) G_i, with
// W_d = Σ_i w_id from a small allreduce of the weights (seed, similarity); last_gradient adds
// Σ_d Ĝ_d / N to the scaled (L/N) G_i instead. A DC whose workers are all alive runs as before.
//
// Ground truth, for the report only: the group's lowest survivor computes, after the allreduce,
// the gradient the dead worker would have computed on its own batch from the group's parameters
// (a forward and backward pass the clock does not charge: nothing of it reaches training), and
// compares the estimate and shrink's implicit one (the survivors' mean) with it. The survivors'
// own gradients reach it in process (EstimateBoard), outside the network.
// No libtorch here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/data/fashion_mnist.h"
#include "model/faults.h"

namespace geotb::engine {

struct WorkerEnv;

/// cos(a, b) accumulated in double; 0 if either is zero.
double cosine(const float* a, const float* b, size_t n);
/// |est - truth| / |truth| in double; |est| if truth is zero.
double rel_error(const float* est, const float* truth, size_t n);
/// A survivor's weight for a dead worker whose batch feature has cosine `c` with its own:
/// "seed" 1/(1 + c) (c at -1 weighs 1e9: the formula's pole), "similarity" max(c, 0), else 1.
double estimate_weight(const std::string& weights, double c);
/// The mean of `count` rows of `x` (count x center.size(), row-major) minus `center`.
std::vector<float> batch_feature(const float* x, size_t count, const std::vector<float>& center);
/// The factor survivor i scales its gradient by before an allreduce that divides by `L`, so that
/// the result is (Σ_i G_i + Σ_d Ĝ_d) / N with Ĝ_d = Σ_i w_id G_i / W_d: (L/N)(1 + Σ_d w_id / W_d).
double survivor_factor(int L, int N, const std::vector<double>& own_w, const std::vector<double>& W);

/// What the survivors of each DC put down for the report's ground truth (in process; nothing
/// of it is sent): each survivor's gradient and weights of a step, and the records.
class EstimateBoard {
 public:
  struct Entry {
    std::vector<float> grad;    ///< the survivor's own gradient, before scaling
    std::vector<double> w;      ///< its weight for each dead worker of its DC (ascending ranks)
  };
  void put(int dc, int step, int rank, Entry e);
  /// Every survivor's entry of (dc, step), by rank; entries of earlier steps of `dc` are dropped.
  std::map<int, Entry> take(int dc, int step);
  void record(const model::EstimateRecord& r);
  /// Every record, by step, then rank.
  std::vector<model::EstimateRecord> records() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<int, int>, std::map<int, Entry>> entries_;  // (dc, step) -> rank -> entry
  std::vector<model::EstimateRecord> records_;
};

/// One worker's part of the policy. Built for every rank of a run with policy "estimate"; the
/// fault agent tells it its group (set_group) whenever the group changes, the training loop its
/// batch of each step, and DDP's intra-DC mean calls it before and after the allreduce.
class GradientEstimator {
 public:
  struct Setup {
    model::EstimateConfig cfg;
    int rank = 0, dc = 0;
    std::vector<int> dc_ranks;       ///< every rank of its DC, ascending (N = their count)
    const Dataset* train = nullptr;  ///< the training set (batches of the dead)
    std::shared_ptr<const std::vector<float>> center;  ///< the training set's mean input
    /// The sampler of each rank of the DC as the run starts it: its own shard, the run's seed.
    std::map<int, std::vector<uint32_t>> shards;
    uint64_t seed = 0;
    size_t batch = 0;  ///< examples per worker and step
    EstimateBoard* board = nullptr;
  };
  explicit GradientEstimator(Setup s);
  ~GradientEstimator();

  /// The DC's live group now, ascending: every DC rank not in it is dead.
  void set_group(const std::vector<int>& group);
  /// This worker's batch of `step` (x: count x features), before its forward pass.
  void batch(int step, const float* x, size_t count);
  /// Before the group's allreduce of env.learner->grads(): may allreduce weights (env.intra) and
  /// scales the gradient.
  void before_reduce(WorkerEnv& env);
  /// After it (the step's mean is in env.learner->grads()): the ground truth on the group's
  /// lowest survivor, and last_gradient's memory of the step.
  void after_reduce(WorkerEnv& env);

 private:
  struct Dead;
  void load_batch(Dead& d, int step);  // d.bx, d.by: its batch of `step`
  void recover_last_gradients(WorkerEnv& env);

  Setup s_;
  int N_;
  std::vector<int> group_;
  std::map<int, std::unique_ptr<Dead>> dead_;  // rank -> its estimate's state
  int step_ = -1;
  std::vector<float> feature_;  // this step's batch feature
  std::vector<float> own_;      // this step's own gradient, before scaling
  std::vector<double> w_;       // this step's weights (seed, similarity; else empty)
  bool scaled_ = false;         // before_reduce ran with the dead in force this step
  // last_gradient: the last step this worker's group completed with its members then.
  int prev_step_ = -1;
  std::vector<float> prev_own_, prev_mean_, prev_est_;  // own gradient, group mean, Σ estimates used
  int prev_members_ = 0, prev_no_last_ = 0;             // the group's size then, its dead without a last gradient
  std::vector<float> est_sum_;                          // Σ Ĝ_d used this step
  int no_last_ = 0;                                     // dead without a last gradient this step
  std::vector<int> fresh_;                              // dead whose last gradient is still to recover
};

}  // namespace geotb::engine
