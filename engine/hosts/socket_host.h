// The process and dpdk modes' RankHost (rank_host.h): this OS process is one rank.
//  * lines: barriers in the run's store (a killed rank counts as arrived at the finish line);
//  * checkpoints: the every_steps schedule or the coordinator's request file; every rank writes
//    its own file with its own WAN counters (its killed predecessor's added), and the store counts
//    the files: the last rank to write one completes the checkpoint, nobody waits;
//  * full recovery: decided over the store (faults/socket_port.h, full_recovery_board.h); at the
//    boundary every survivor reads its own file of the last complete checkpoint;
//  * a killed rank is never back in this process: it counts as arrived at the finish line and as
//    left (unless its restart follows, whose new process arrives and leaves for it), and stops.
//    Its restart is a new process, which starts as a RankRejoin (rejoin_from).
// No libtorch here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "engine/checkpoint/file.h"
#include "engine/checkpoint/schedule.h"
#include "engine/collectives/store.h"
#include "engine/faults/socket_port.h"
#include "engine/process_worker.h"
#include "engine/rank_host.h"
#include "engine/transport/counting.h"
#include "engine/transport/socket/socket_transport.h"

namespace geotb::engine {

struct SocketRankHostConfig {
  int rank = 0;
  int world = 1;
  std::shared_ptr<StoreHandle> store;
  std::string key;  ///< the run's store prefix ("<key_prefix>/<run name>/")
  bool serve_store = true;  ///< rank 0 serves the store (ProcessWorkerConfig::serve_store)
  const emu::Clock* clock = nullptr;
  SocketTransport* sock = nullptr;
  std::chrono::milliseconds peer_timeout{0};  ///< the transport's: a killed rank's drain waits up to it
  CountingTransport* net = nullptr;  ///< the rank's WAN counters
  ProcessFaultAgent* faults = nullptr;  ///< null without node faults
  WorkerEnv* env = nullptr;
  const ProcessCheckpointing* ckpt = nullptr;
  std::string run_name;  ///< the strategy's (checkpoint directories)
  /// A restarted rank: its killed predecessor's report (its WAN counters go on from there).
  const RankReport* predecessor = nullptr;
  /// Called on rank 0 once every rank passed the start line. May be empty.
  std::function<void()> started;
  /// Full recovery may rewind this rank (its agent decides over the store).
  bool full_recovery = false;
};

class SocketRankHost final : public RankHost {
 public:
  explicit SocketRankHost(SocketRankHostConfig c);

  /// A restarted rank's way back, from its coordinator's message `m` (held by the caller while the
  /// rank runs): the handed state, or, without one (a full recovery's restart), its own file of the
  /// last complete checkpoint. Throws RunError if that needs a checkpoint directory the run lacks.
  RankRejoin rejoin_from(RejoinMessage& m);

  /// The start and finish instants on the rank's clock (a restarted rank: its own start).
  std::chrono::nanoseconds start_instant() const { return t_start_; }
  std::chrono::nanoseconds end_instant() const { return t_end_; }

  std::chrono::nanoseconds start_line() override;
  std::chrono::nanoseconds restart_line(std::chrono::nanoseconds elapsed) override;
  void finish_line() override;
  FaultHooks* faults() override { return c_.faults ? &c_.faults->agent : nullptr; }
  /// (After a timeline restart run_rank takes none: they could not complete.)
  bool checkpoints() const override { return !c_.ckpt->dir.empty(); }
  bool checkpoint_due(int steps) override;
  std::optional<WanCounters> checkpoint_wan_counters() override;
  void checkpoint_commit(int steps, const StateBuffers& state) override;
  bool rewinds() const override { return c_.full_recovery; }
  const StateBuffers* rewind(int steps) override;
  /// Drains what it sent, counts as arrived and left (unless its restart follows): nothing.
  std::optional<RankRejoin> after_kill(WorkerEnv& env, const WorkerRecord& rec) override;

 private:
  Checkpoint load_own(const std::string& why) const;  // this rank's file of the last complete checkpoint

  const SocketRankHostConfig c_;
  std::unique_ptr<CheckpointRequestFile> requests_;
  std::chrono::nanoseconds t_start_{0}, t_end_{0};
  std::optional<Checkpoint> restart_;  // a full recovery's restart: the checkpoint it came back from
  std::optional<Checkpoint> back_;     // full recovery: the checkpoint this rank went back to
};

}  // namespace geotb::engine
