// Process mode: this OS process is one rank of the cluster (torchrun-style: every rank its own
// process, possibly on its own host or network namespace). It meets the others through a c10d
// TCPStore served by rank 0, joins its DC's ProcessGroupGloo over that store, talks to every
// other rank over real sockets (transport/socket/), and runs the same training loop as the
// embedded mode (worker_loop.h). No libtorch here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/link_config.h"
#include "engine/result.h"
#include "engine/strategy.h"
#include "engine/worker_loop.h"
#include "model/faults.h"
#include "model/rank_layout.h"

namespace geotb::engine {

struct ProcessWorkerConfig {
  int rank = 0;            ///< global rank (RANK), layout.rank_of(dc, local_rank)
  int world = 1;           ///< WORLD_SIZE = layout.world()
  int dc = 0;              ///< GEOTB_DC
  int local_rank = 0;      ///< GEOTB_LOCAL_RANK
  model::RankLayout layout;  ///< the scenario's data centers and their workers
  std::string master_addr = "127.0.0.1";  ///< MASTER_ADDR: rank 0's store
  uint16_t master_port = 29500;           ///< MASTER_PORT
  std::string bind_addr = "127.0.0.1";    ///< GEOTB_BIND_ADDR: this rank's Gloo device and transport listen address
  std::string secret;                     ///< GEOTB_SECRET: transport handshake secret ("" = none)
  /// A message, collective or store wait not done by then is an error (seconds-scale; a rank that
  /// dies is noticed by its peers' sockets much sooner, by this at the latest).
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds heartbeat{1000};   ///< transport keep-alive interval
  double wan_rate_bps = 0;  ///< the WAN link's configured rate (socket buffer sizing)
  double wan_rtt_s = 0;     ///< the WAN link's configured round-trip time, seconds (socket buffer sizing)
  /// Every WAN direction of the scenario (model::directed_wan_links): each exchange's lower bound.
  std::vector<emu::DirectedLink> wan_links;
  /// Rank 0 serves the store (false: a store process of its own does, `geotb store`, started by the
  /// coordinator when the timeline kills rank 0: GEOTB_STORE_EXTERNAL=1).
  bool serve_store = true;
  /// The reporting rank (the accuracy curve, step times, wall time, the replicas' reference, the
  /// progress lines): rank 0, or the lowest rank the timeline never kills.
  int reporter = 0;
  /// Store key namespace; the run's strategy name is appended ("geotb/<strategy>/...").
  std::string key_prefix = "geotb";
};

/// A process-mode rank's checkpoints (docs/guide/checkpoints.md): every rank writes its own file; the
/// last one to finish (counted through the store) completes the checkpoint.
struct ProcessCheckpointing {
  std::string dir;            ///< "" = none written
  int every_steps = 0;        ///< 0 = only on request
  std::string requests_file;  ///< the coordinator's CheckpointRequestFile ("" = no requests)
  std::string scenario_hash;  ///< written into (and checked against) every checkpoint
  std::string resume;         ///< a checkpoint to continue from ("" = from step 0): this rank's file is read
  /// Called by the rank that completes a checkpoint: (steps done, its directory). May be empty.
  std::function<void(int, const std::string&)> written;
};

/// Node faults of a process-mode run (engine/faults/socket_port.h).
struct ProcessFaults {
  model::FaultPlan plan;  ///< inactive: none
  /// Called on the rank the timeline kills, at its kill point, with its report so far (its
  /// series, "faults" with the kill's step and instant); the caller writes it, then the process
  /// stops itself (SIGSTOP) for the coordinator to SIGKILL it. Never returns from there.
  std::function<void(const RankReport&)> killed;
  /// Restarts: this process's incarnation (0: the rank's first process; n: its n-th restart,
  /// GEOTB_INCARNATION) and, from 1 on, what its predecessor's rank file says (its series, times,
  /// exchanges, WAN counters and fault log up to its kill), merged into this process's report.
  int incarnation = 0;
  std::optional<RankReport> predecessor;
};

/// Returns "" if consistent, else "field: value: why" (rank/dc/local_rank/world agree, ports, ...).
std::string validate(const ProcessWorkerConfig& c);

/// Trains `scfg` as rank cfg.rank until every rank is done, then checks replica identity through
/// the store (rank 0 publishes its parameters, every rank reports max |x_self - x_0|) and, on rank
/// 0, evaluates the accuracy curve on data.test. Every rank's report has its times, losses, WAN
/// traffic and (leaders) exchanges; rank 0's also the step times, wall time and accuracy curve.
/// `progress` (rank 0; may be empty): (steps done, total, seconds since start).
/// Throws TransportError (PeerDeadError, AuthError, ...), CollectiveError or StoreError on a
/// network failure, within cfg.timeout; std::invalid_argument on a bad configuration.
/// `started` (rank 0 only): called once every rank has passed the start barrier, just before the
/// first step: the instant the embedded mode starts the scenario's timeline.
RankReport run_process_worker(const ProcessWorkerConfig& cfg, const StrategyConfig& scfg, const WorkloadSpec& work,
                              const Datasets& data, const std::function<void(int, int, double)>& progress = {},
                              const std::function<void()>& started = {}, const ProcessCheckpointing& ckpt = {},
                              const ProcessFaults& faults = {});

}  // namespace geotb::engine
