// One rank's run, written once for every network mode.
//
// A mode builds a rank's WorkerEnv (its learner, transport, clock, intra-DC group) and gives
// run_rank a RankHost: what the rank needs of the mode while it trains. run_rank turns that into
// the worker loop's hooks (worker_loop.h), runs the loop, and brings back a worker killed and
// restarted in the same process. Two hosts implement it:
//
//   host                      ranks are                          lines          checkpoints commit
//   InprocRankHost            threads / actors of one process    std::barrier,  CheckpointWriter
//   (hosts/inproc_host.h)     (embedded mode)                    virtual lines  (counts in memory)
//   SocketRankHost            one OS process each                the run's      the store counts
//   (hosts/socket_host.h)     (process and dpdk modes)           store          the rank files
//
// What run_rank decides itself, so that no mode can decide it differently:
//  * a checkpoint is due when the host's schedule says so and the fault agent does not say that
//    it cannot complete (a worker died before it and will not write its file);
//  * a checkpoint's rank file keeps the WAN counters the host says it keeps (checkpoint/worker_state.h);
//  * a restarted worker (RankRejoin) starts from the state it was handed, walks its own shard
//    afresh (a timeline restart: own_sampler) or its own checkpoint's position (a full recovery's
//    restart), keeps its first life's times, exchange log and, after a timeline restart, its own
//    series (keep_first_life), and takes no checkpoints after a timeline restart (they could not
//    complete: the workers were not all alive since the last one).
// No libtorch here.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "engine/checkpoint/state.h"
#include "engine/checkpoint/worker_state.h"
#include "engine/faults/rejoin.h"
#include "engine/worker_loop.h"

namespace geotb::engine {

/// A killed worker's way back into the run (a timeline restart, or a full recovery's restart), as
/// its host received it. The host has already put the worker back in its group (env.ring, the
/// intra-DC group grown back).
struct RankRejoin {
  /// The state it continues from, owned by the host until the rank's run ends: the state its
  /// group's coordinator handed it at the boundary (a timeline restart; its sampler entries are
  /// replaced here by the worker's own shard's), or its own file of the checkpoint the survivors
  /// went back to (`from_checkpoint`).
  StateBuffers* state = nullptr;
  bool from_checkpoint = false;
  /// A site restarted whole: `state` is another site's worker's (Strategy::rejoin_site).
  bool other_site = false;
  uint64_t tag_epoch = 0;  ///< the tag epoch every rank moved to at the boundary
  int steps = 0;           ///< the boundary (steps done)
  /// What it keeps of its first life (its own, or its killed predecessor process's): the times and
  /// exchange log; the series too, unless it came back from its own checkpoint.
  FirstLife life;
};

/// What one rank needs of the mode that runs it.
class RankHost {
 public:
  virtual ~RankHost() = default;
  /// The start line: called once after setup, before step 0. Returns once every worker of the run
  /// has arrived, with the start instant on the rank's clock.
  virtual std::chrono::nanoseconds start_line() = 0;
  /// A restarted worker's start instead (no line: the others passed it), its state `elapsed` of
  /// training time into the run: the instant its loop counts that state's time from plus `elapsed`.
  virtual std::chrono::nanoseconds restart_line(std::chrono::nanoseconds elapsed) = 0;
  /// The finish line: called after strategy->finish(); returns when every replica is final.
  virtual void finish_line() = 0;
  /// Node faults: the rank's fault agent, or null.
  virtual FaultHooks* faults() = 0;

  /// Whether this run writes checkpoints.
  virtual bool checkpoints() const = 0;
  /// The checkpoint schedule, called once per step boundary, in order (steps done): whether every
  /// rank checkpoints now (every rank gets the same answer for the same steps).
  virtual bool checkpoint_due(int steps) = 0;
  /// The WAN counters this rank's file of a checkpoint taken now keeps, or nothing.
  virtual std::optional<WanCounters> checkpoint_wan_counters() = 0;
  /// Writes this rank's file of the checkpoint after `steps`; the last rank to write one completes it.
  virtual void checkpoint_commit(int steps, const StateBuffers& state) = 0;

  /// Whether the run may go back to a checkpoint (full recovery; a test's rewind).
  virtual bool rewinds() const = 0;
  /// At a step boundary (steps done), in order: the checkpoint state to go back to now, or null.
  virtual const StateBuffers* rewind(int steps) = 0;

  /// After this worker's kill: its way back (restarted in this process), or nothing. Nothing: it
  /// is out of the run, and the host has done what the run's end needs of it (the finish line
  /// does not wait for it).
  virtual std::optional<RankRejoin> after_kill(WorkerEnv& env, const WorkerRecord& rec) = 0;
};

/// What one rank trains.
struct RankPlan {
  const StrategyConfig& scfg;
  const WorkloadSpec& work;
  const Dataset& train;
  const std::vector<uint32_t>& shard;  ///< the rank's data at the start (data/partition.h)
  /// The reporting rank's progress callback (steps done, steps, seconds); empty on the others.
  std::function<void(int, int, double)> progress;
  const StateBuffers* resume = nullptr;  ///< a checkpoint's state of this rank to continue from
};

enum class RankEnd {
  kFinished,  ///< trained to the end and passed the finish line
  kKilled,    ///< killed by the timeline and not back (RankHost::after_kill said so)
};

/// Runs the rank to its end: the worker loop with the hooks the host and the plan give, again
/// after each kill the host brings it back from. `back`: the rank is a restarted worker already
/// (the process modes' new process). Exceptions of the run (TransportError, RunError, Gloo's)
/// propagate: the mode owns its failure handling.
RankEnd run_rank(RankHost& host, const RankPlan& plan, WorkerEnv& env, WorkerRecord& rec,
                 std::optional<RankRejoin> back = std::nullopt);

}  // namespace geotb::engine
