// The training loop of one worker, shared by every way of running a cluster: run_rank
// (rank_host.h) calls it with the hooks its mode's RankHost gives, in the embedded mode (every rank
// a thread of one process) and in the process and dpdk modes (every rank its own OS process).
// Sampler, batch assembly, forward/backward, strategy->step, the loss of every step, rank 0's
// step-end times and parameter snapshots, strategy->finish: the same code in every mode, so a
// strategy cannot behave differently depending on how it was launched.
// No libtorch here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "engine/checkpoint/state.h"
#include "engine/data/fashion_mnist.h"
#include "engine/data/global_batch.h"
#include "engine/data/partition.h"
#include "engine/model/learner.h"
#include "engine/optim/sgd.h"
#include "engine/strategy.h"

namespace geotb::engine {

struct WorkloadSpec {
  ModelConfig model;
  SgdConfig optimizer;
  int batch_per_worker = 32;
  /// The samples a worker's step counts in the figures: a represented language model's sequences
  /// (docs/guide/represented.md); 0: batch_per_worker (the trained model's examples).
  uint64_t samples_per_worker_per_step = 0;
  uint64_t step_samples() const {
    return samples_per_worker_per_step ? samples_per_worker_per_step : static_cast<uint64_t>(batch_per_worker);
  }
  int steps = 100;
  uint64_t seed = 42;
  int eval_points = 10;  ///< test accuracy of rank 0's model at this many evenly spaced steps
                         ///< (snapshots taken during the run, evaluated after it: no effect on timing)
  PartitionSpec partition;  ///< how the training examples are split over the workers (data/partition.h)
  DcWeighting dc_weights = DcWeighting::kWorkers;  ///< a DC's weight in a mean over DCs (data/partition.h)
  GlobalBatchSpec global_batch;  ///< a share of each batch from a global pool (data/global_batch.h); off by default
};

struct Datasets {
  Dataset train;
  Dataset test;
};

/// Node faults (engine/faults/fault_agent.h implements it, in every mode): what the loop asks at
/// each step. Absent without faults.
class FaultHooks {
 public:
  virtual ~FaultHooks() = default;
  /// Before step `step`'s compute (a slow worker's compute factor).
  virtual void step_begins(WorkerEnv& env, int step) = 0;
  /// After the compute, before the synchronisation: throws WorkerKilled if this worker dies here.
  virtual void before_sync(WorkerEnv& env, int step) = 0;
  /// strategy->step threw: true if a peer was declared dead and the survivors rebuilt their
  /// group (env.ring, env.intra; maybe a new sampler shard); the loop then restores the state of
  /// before the step and calls strategy->discard_step. False: the failure is the run's.
  virtual bool recover(WorkerEnv& env, int step, BatchSampler& sampler) = 0;
  /// Whether every rank records step-end times and snapshots (rank 0 may die).
  virtual bool record_all() const = 0;
  /// A restart's step boundary (every live rank of the run reaches it; timeline `restart` at
  /// `at_step`): the tag epoch every rank moves to there, or nothing. The loop then saves its
  /// state, calls at_reepoch, and continues from that state with a fresh strategy in the new
  /// epoch (the restarted worker starts its own in that epoch, so every tag allocator agrees).
  virtual std::optional<uint64_t> reepoch_due(WorkerEnv& env, int steps) = 0;
  /// At that boundary, with this rank's state: the groups that a restarted worker joins grow, and
  /// their coordinator hands it its state.
  virtual void at_reepoch(WorkerEnv& env, int steps, const StateBuffers& state) = 0;
  /// Full recovery, before a checkpoint's state is restored: the sampler back on this rank's own
  /// shard (the checkpoint's position is a position in it).
  virtual void before_rewind(WorkerEnv& env, BatchSampler& sampler) = 0;
  /// After it, in the tag epoch `tag_epoch` the loop moved to: what the checkpoint cannot know
  /// (the dead workers' data shards split among the survivors, faults.shard "redistribute"; with
  /// full_recovery.then "restarts", the groups grown back by the restarted workers).
  virtual void after_rewind(WorkerEnv& env, BatchSampler& sampler, uint64_t tag_epoch) = 0;
  /// After hooks.finished: stop the heartbeats.
  virtual void done(WorkerEnv& env) = 0;
  /// Whether this rank's file of the checkpoint after `steps` steps is not to be taken: a worker
  /// died before it and will not be back to write its own (every rank writes its file of a
  /// checkpoint, so it could never complete), or a full recovery was decided and this rank has not
  /// gone back yet (what it wrote now would be abandoned).
  virtual bool checkpoint_cannot_complete(int steps) const = 0;
};

/// Thrown by FaultHooks::before_sync on the worker a kill event stops: not a failure.
class WorkerKilled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WorkerRecord;

/// Rendezvous points of the loop, provided by the mode that runs it.
struct WorkerLoopHooks {
  /// Every worker calls it once after its setup, before step 0. Returns when every worker of the
  /// cluster has arrived, with the start instant on env.clock (the same for every worker of one
  /// process; in the process mode each process's own instant after the rendezvous).
  std::function<std::chrono::nanoseconds()> start;
  /// Every worker calls it after strategy->finish(); returns when every replica is final.
  std::function<void()> finished;
  /// Rank 0 only, after each step: (steps done, total, seconds since the start). May be empty.
  std::function<void(int, int, double)> progress;
  /// Checkpoints (checkpoint/worker_state.h). The state to continue from, restored before
  /// `start` (null: from step 0).
  const StateBuffers* resume = nullptr;
  /// After each step but the last: (steps done) -> whether every rank checkpoints now. Must
  /// answer the same on every rank for the same steps. Empty: never.
  std::function<bool(int)> checkpoint_due;
  /// Stores this rank's state of the checkpoint after (steps done).
  std::function<void(int, const StateBuffers&)> checkpoint_write;
  /// Full recovery: after each step but the last, (steps done) -> a checkpoint's state to go
  /// back to now (checkpoint/worker_state.h rewind_worker), or null to go on. Every rank of the
  /// run must answer alike for the same steps. Empty: never.
  std::function<const StateBuffers*(int)> rewind;
  /// Node faults (the rank's fault agent); null without.
  FaultHooks* faults = nullptr;
  /// The tag epoch the strategy starts in (transport/tag_epoch.h): 0, or a restarted worker's.
  uint64_t tag_epoch = 0;
  /// After `resume` was restored, before the first step: what the resumed state must not carry
  /// (a restarted worker takes its group's model, not its times, sampler or series). May be empty.
  std::function<void(WorkerEnv&, BatchSampler&, WorkerRecord&)> after_resume;
  /// `resume` is another site's worker's state (a site restarted whole, faults/fault_runtime.h):
  /// after restoring it, the optimizer starts fresh and the strategy keeps what every site shares
  /// (Strategy::rejoin_site).
  bool resume_from_other_site = false;
};

/// What the loop records for one worker.
struct WorkerRecord {
  std::vector<double> loss;                   ///< per step: this worker's mean cross-entropy of its batch
                                              ///< (NaN for the steps a killed worker did not run)
  std::vector<double> step_end_s;             ///< rank 0 only: per step, seconds since the start at its end
  std::vector<int> snapshot_steps;            ///< rank 0 only: steps done when each snapshot was taken
  std::vector<std::vector<float>> snapshots;  ///< rank 0 only: its parameters after those steps
  int steps_redone = 0;                       ///< steps done again after rewinds (full recovery)
};

/// Steps after which rank 0 snapshots its parameters: `eval_points - 1` evenly spaced steps
/// (the final model is the last point of the accuracy curve).
std::vector<int> snapshot_steps(const WorkloadSpec& work);

/// Runs the whole training of one worker: creates its strategy (its descriptor's factory,
/// strategies/table.h), calls hooks.start, trains work.steps steps on its shard
/// (BatchSampler(shard, work.seed, env.rank)), calls strategy->finish and hooks.finished. env
/// must be complete (learner, opt, net, intra if the strategy needs it, clock); charges
/// env.times. With hooks.resume it continues from that state (its step, its time since the first
/// step: step_end_s goes on from there); hooks.checkpoint_due/write save one after a step. Exceptions (TransportError, Gloo errors) propagate to the caller, which owns the
/// failure handling of its mode.
void run_worker_loop(WorkerEnv& env, const StrategyConfig& scfg, const WorkloadSpec& work, const Dataset& train,
                     const std::vector<uint32_t>& shard, const WorkerLoopHooks& hooks, WorkerRecord& out);

}  // namespace geotb::engine
