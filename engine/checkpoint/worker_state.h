// One worker's checkpoint state (checkpoint/state.h buffers): what the training loop
// (worker_loop.h) saves after a step and restores before resuming. Buffers:
//   step                      steps done (i64)
//   clock.elapsed_ns          this worker's time since the first step (the timeline position)
//   params                    the model (floats)
//   sgd.momentum, sgd.first   the optimizer (optim/sgd.h)
//   sampler.order/pos/epoch   the data order (its random stream is (seed, rank, epoch))
//   strategy.*                the strategy's own (Strategy::save)
//   times.*                   the time accounting so far (model/measurements.h)
//   exchanges                 the exchange log so far
//   record.loss, record.step_end_s, record.snapshot_steps, record.snapshots   the series so far
//   mode.*                    added by the mode that runs the loop (its WAN counters), read by it
// No libtorch here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "engine/checkpoint/state.h"
#include "engine/data/fashion_mnist.h"
#include "engine/strategy.h"
#include "engine/worker_loop.h"

namespace geotb::engine {

/// Writes the worker's state after `steps_done` steps (calls strategy.save, which may
/// communicate). `elapsed`: the worker's time since the first step of the whole run.
void save_worker_state(WorkerEnv& env, Strategy& strategy, const BatchSampler& sampler, const WorkerRecord& rec,
                       int steps_done, std::chrono::nanoseconds elapsed, StateBuffers& out);

/// Where a restored worker continues.
struct ResumePoint {
  int steps_done = 0;
  std::chrono::nanoseconds elapsed{0};
};

/// Restores everything save_worker_state() wrote into a worker set up afresh for the same run
/// (`rec` sized for `total_steps`); every buffer must be taken. Throws StateError naming the
/// buffer (std::invalid_argument from the optimizer or the sampler is turned into one).
ResumePoint restore_worker_state(const StateBuffers& in, WorkerEnv& env, Strategy& strategy, BatchSampler& sampler,
                                 WorkerRecord& rec, int total_steps);

/// Full recovery (docs/guide/checkpoints.md): takes a running worker back to `state` (the last
/// checkpoint): `strategy` is settled (its round in flight completed: every rank of the run must
/// rewind at the same boundary) and replaced by a fresh one made by `make`, then everything is
/// restored as by restore_worker_state() except the time accounting and the exchange log, which
/// keep what the abandoned steps cost. Returns where to continue; `rec` keeps its loss and step
/// times of the steps to redo until they are redone.
ResumePoint rewind_worker(const StateBuffers& state, WorkerEnv& env, std::unique_ptr<Strategy>& strategy,
                          const std::function<std::unique_ptr<Strategy>()>& make, BatchSampler& sampler,
                          WorkerRecord& rec, int total_steps);

/// The state's step and elapsed time, without restoring anything. Throws StateError.
ResumePoint resume_point(const StateBuffers& in);

/// What the run had sent over the WAN by a checkpoint, in its state as "mode.wan.*" (the embedded
/// mode: the fabric's totals, on rank 0's file; the process modes: each rank's own, without
/// retransmissions, which only the fabric counts), so that a resumed run's report covers it all.
struct WanCounters {
  uint64_t messages = 0, payload_bytes = 0, wire_bytes = 0;
  std::optional<uint64_t> retransmissions;
};
/// `state` with `c` added.
StateBuffers with_wan_counters(const StateBuffers& state, const WanCounters& c);
/// The counters `state` holds, or nothing if it holds none (a checkpoint of a rank that did not
/// write them). Throws StateError on a malformed buffer.
std::optional<WanCounters> wan_counters_of(const StateBuffers& state);

}  // namespace geotb::engine
