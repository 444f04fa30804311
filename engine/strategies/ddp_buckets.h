// DDP's gradient allreduce as DDP runs it: bucket by bucket (collectives/buckets.h), each bucket's
// allreduce started as soon as the backward pass has produced its gradients, one after the other
// on one background stream, overlapped with the rest of the backward pass (naive_ddp and lan).
//
// With one bucket (every model that trains here, under DDP's 1 MiB first bucket) nothing
// overlaps: the allreduce follows the backward pass, as it did before buckets. With more, the
// worker loop charges the forward pass only (Strategy::loop_step_share: 1/3 of the step, the
// 2N of 6N FLOPs per token, Kaplan et al. 2020) and run() charges the backward pass in shares,
// one per bucket group in proportion to its elements, while a background actor reduces the
// groups in order, each as soon as its share has been charged. The step then waits for the last
// group. Measured compute (no compute profile) is measured whole in the loop's region: the
// backward shares then cost nothing, and the groups start after the whole step.
#pragma once

#include <functional>
#include <vector>

#include "engine/collectives/buckets.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/strategies/descriptor.h"
#include "engine/strategy.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

/// The forward pass's share of a step, millionths (kStepShareUnits).
inline constexpr uint64_t kForwardShare = kStepShareUnits / 3;

class DdpBuckets {
 public:
  /// Groups of at most this many (collectives/buckets.h) for a represented model.
  static constexpr size_t kMaxGroups = 64;
  /// The buckets of env's gradient (WorkerEnv::grad_tensors) at cfg.bucket_mb.
  DdpBuckets(const StrategyConfig& cfg, const WorkerEnv& env);

  const std::vector<BucketGroup>& groups() const { return groups_; }
  /// What the worker loop charges of a step before Strategy::step (Strategy::loop_step_share).
  uint64_t loop_step_share() const { return groups_.size() > 1 ? kForwardShare : kStepShareUnits; }

  /// The ring shape of `g`: its represented elements and its buckets as rounds.
  static RingShape shape(const BucketGroup& g) { return {g.elements, g.buckets}; }
  /// `g` can run as a whole gradient does (any collective, every message scaled), or only as a
  /// ring carrying shape(g) (collectives/ring_allreduce.h shape_scales).
  static bool scales(const BucketGroup& g, double scale) { return shape_scales(g.n, shape(g), scale); }

  /// Reduces every group: `tags(g)` takes a group's message tags, on the calling actor, in group
  /// order, before any is reduced; `reduce(g, tags)` reduces it. One group: on the calling actor,
  /// charged as exposed comm. More: on a background actor (the transport's Sync), group i once
  /// the calling actor has charged the backward share that produces it (compute); the wait for
  /// the last group is exposed comm, the rest of the groups' reduction time overlapped comm (on
  /// a DC leader: the report's overlapped figure is theirs).
  /// Rethrows the first reduction's failure after the background actor has stopped.
  void run(WorkerEnv& env, const std::function<TagRange(const BucketGroup&)>& tags,
           const std::function<void(const BucketGroup&, const TagRange&)>& reduce) const;

  /// The gradient's mean over env.intra, bucket by bucket: DDP inside a data center (lan, and the
  /// every-step allreduce of the hierarchical strategies, local_sgd and diloco).
  void intra_mean(WorkerEnv& env) const;

 private:
  std::vector<BucketGroup> groups_;
  std::vector<uint64_t> shares_;  // backward share per group, millionths of a step
};

}  // namespace geotb::engine
