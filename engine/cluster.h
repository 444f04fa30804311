// Embedded mode: M data centers x N workers as threads of one process. Each worker has its own
// model replica and data shard; intra-DC collectives are real c10d Gloo groups over loopback;
// everything between data centers goes through the in-process emulated WAN (emulator/inproc).
// Each thread runs the shared training loop (worker_loop.h); the process mode
// (process_worker.h) runs the same loop with one OS process per rank.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "emulator/inproc/message_link.h"
#include "engine/checkpoint/schedule.h"
#include "engine/compute_charge.h"
#include "engine/data/fashion_mnist.h"
#include "engine/model/learner.h"
#include "engine/optim/sgd.h"
#include "engine/result.h"
#include "engine/strategy.h"
#include "engine/worker_loop.h"
#include "model/faults.h"
#include "model/topology.h"

namespace geotb::engine {

/// The cluster of an embedded run: the network (model/topology.h: data centers, LAN, WAN per
/// direction, timeline) and how the in-process fabric cuts messages into segments. `lan` is also
/// the `lan` reference strategy's link between data centers.
struct ClusterSpec : model::Topology {
  emu::SegmentConfig segments;
  /// How the virtual clock times the collectives inside a data center (scenario
  /// `lan.collectives`, docs/guide/scale.md): Gloo's ring message by message over the fabric's
  /// LAN connections, or each collective as one computed event (collectives/analytic_group.h).
  enum class LanCollectives : uint8_t { kMessages, kAnalytic };
  LanCollectives lan_collectives = LanCollectives::kMessages;
};

/// Which clock the embedded mode runs on (docs/guide/clocks.md).
enum class ClockMode : uint8_t {
  kWall,     ///< the host's steady clock: real threads on real cores, figures depend on the host
  kVirtual,  ///< a VirtualScheduler: compute = thread CPU time or the compute profile, messages
             ///< delivered at the link model's instants; every intra-DC collective is Gloo's ring
             ///< over the fabric's LAN links (collectives/transport_group.h)
};

struct RunOptions {
  ClockMode clock = ClockMode::kWall;
  /// kVirtual only: declared compute instead of measured CPU time (deterministic timing). One
  /// profile per data center (cluster order), or a single one for all; empty: thread CPU time.
  std::vector<ComputeProfile> compute;
  std::chrono::milliseconds transport_timeout{120000};  ///< a message not arriving by then is an error
  std::chrono::milliseconds gloo_timeout{120000};
  /// Called by rank 0 after each step: (steps done, total, seconds since start).
  std::function<void(int, int, double)> progress;
  /// Checkpoints written, and the one to resume from (docs/guide/checkpoints.md). A resumed run
  /// starts from the checkpoint's step with every rank's saved state; its timeline continues
  /// from the checkpoint's instant; its figures cover the whole run (the saved part included).
  CheckpointOptions checkpoint;
  /// Node faults (timeline kill/slow, heartbeats; engine/faults/fault_runtime.h). kVirtual only.
  model::FaultPlan faults;
  /// Represented / trained parameters (docs/guide/represented.md): every tensor message
  /// (Transport::send_data) occupies the network, and every per-element compute charge is taken,
  /// at this scale. 1: the trained model is what is represented. kVirtual with `compute` only.
  double represent_scale = 1.0;
  /// The represented model's parameters and tensors (WorkerEnv::grad_tensors; empty: a flat
  /// count). 0: the trained model's own.
  uint64_t represented_params = 0;
  std::vector<uint64_t> represented_tensors;
  /// Their shapes (WorkerEnv::represented_shapes; empty: not known).
  std::vector<std::vector<int64_t>> represented_shapes;
};

/// Runs one strategy from the same initial weights and data order as every other strategy with
/// the same workload seed. Throws RunError naming the failing rank on a worker failure. The
/// run's config is left empty (the harness fills it). `final_params`, if given, receives rank
/// 0's final model (tests).
model::StrategyRun run_strategy(const ClusterSpec& cluster, const WorkloadSpec& work, const StrategyConfig& strategy,
                                const Datasets& data, const RunOptions& opt,
                                std::vector<float>* final_params = nullptr);

}  // namespace geotb::engine
