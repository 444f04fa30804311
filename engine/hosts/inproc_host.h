// The embedded mode's RankHost (rank_host.h): every rank is a thread of one process, on the wall
// clock, or an actor of the virtual clock's scheduler (emulator/inproc/virtual_time.h).
//  * lines: std::barrier on the wall clock; on the virtual clock a line released at the latest
//    arrival's virtual instant (a rank's arrival is its own virtual instant);
//  * checkpoints: the shared CheckpointSchedule; the rank files of one checkpoint are counted in
//    memory (CheckpointWriter) and the last one completes it; rank 0's file keeps the fabric's WAN
//    totals, the only WAN accounting of this mode;
//  * full recovery: decided by the FaultRuntime (faults/fault_runtime.h); the first rank at the
//    boundary reads the last complete checkpoint and every other rank goes back to the same one;
//  * a killed worker the timeline (or a full recovery) restarts waits in its own thread, holding
//    nobody back, and comes back there; one that is not back leaves the finish line's count.
// No libtorch here.
#pragma once

#include <barrier>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "emulator/inproc/virtual_time.h"
#include "engine/checkpoint/file.h"
#include "engine/checkpoint/schedule.h"
#include "engine/collectives/intra_dc.h"
#include "engine/faults/fault_runtime.h"
#include "engine/rank_host.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

/// What every rank of one embedded run shares: the lines, the checkpoints, the rewinds.
class InprocRun {
 public:
  struct Config {
    int world = 0;
    const emu::Clock* clock = nullptr;
    emu::VirtualScheduler* sched = nullptr;  ///< the virtual clock's scheduler; null on the wall clock
    emu::Fabric* fabric = nullptr;
    FaultRuntime* faults = nullptr;  ///< null without node faults
    const CheckpointOptions* checkpoint = nullptr;
    std::string run_name;             ///< the strategy's (checkpoint directories)
    const Checkpoint* resume = nullptr;  ///< the checkpoint the run continues from; null: from step 0
    /// Called once, before any rank passes the start line, with the run's time origin: the start
    /// instant, less a resumed checkpoint's training time (the scenario's timeline counts from it).
    std::function<void(std::chrono::nanoseconds)> at_start;
  };
  explicit InprocRun(Config c);

  /// The start and finish instants on the run's clock.
  std::chrono::nanoseconds start_instant() const { return t_start_; }
  std::chrono::nanoseconds end_instant() const { return t_end_; }
  /// The resumed checkpoint's instant in the run (rank 0's elapsed training time there; 0: none).
  std::chrono::nanoseconds resumed_at() const { return resumed_at_; }

 private:
  friend class InprocRankHost;
  struct LineDone {  // a wall-clock line's completion: the instant, and at the start the timeline
    InprocRun* run;
    bool start;
    void operator()() noexcept;
  };
  struct VirtualLine {  // a virtual-clock line
    int arrived = 0;
    std::chrono::nanoseconds latest{0};
    std::optional<std::chrono::nanoseconds> released;
  };
  void virtual_line(VirtualLine& line, const char* what, std::chrono::nanoseconds& instant, bool start);
  void virtual_line_drop(VirtualLine& line, std::chrono::nanoseconds& instant);  // a rank that never arrives
  std::shared_ptr<const Checkpoint> rewind_to(int steps);  // the checkpoint every rank goes back to at `steps`

  const Config c_;
  const std::chrono::nanoseconds resumed_at_;
  const bool full_recovery_;
  std::chrono::nanoseconds t_start_{0}, t_end_{0};
  std::barrier<LineDone> start_line_, finish_line_;
  VirtualLine vstart_, vfinish_;
  std::optional<CheckpointSchedule> schedule_;
  std::optional<CheckpointWriter> writer_;
  std::mutex rewind_mu_;
  std::vector<std::pair<int, std::shared_ptr<const Checkpoint>>> rewinds_;  // (boundary, checkpoint)
};

/// One rank's host.
class InprocRankHost final : public RankHost {
 public:
  /// `net`: the rank's endpoint of the fabric; `intra`: its intra-DC group if its strategy has one
  /// (a restart joins it again, grown back).
  InprocRankHost(InprocRun& run, int rank, Transport& net, std::unique_ptr<IntraDc>& intra)
      : run_(run), rank_(rank), net_(net), intra_(intra) {}

  std::chrono::nanoseconds start_line() override;
  std::chrono::nanoseconds restart_line(std::chrono::nanoseconds elapsed) override;
  void finish_line() override;
  FaultHooks* faults() override;
  bool checkpoints() const override { return run_.writer_.has_value(); }
  bool checkpoint_due(int steps) override { return run_.schedule_->due(rank_, steps); }
  std::optional<WanCounters> checkpoint_wan_counters() override;
  void checkpoint_commit(int steps, const StateBuffers& state) override { run_.writer_->write(rank_, steps, state); }
  bool rewinds() const override;
  const StateBuffers* rewind(int steps) override;
  std::optional<RankRejoin> after_kill(WorkerEnv& env, const WorkerRecord& rec) override;

  /// The rank stopped dead outside the loop: the finish line does not wait for it.
  void killed();
  /// The rank failed: on the wall clock it leaves the lines (nobody waits for it); on the virtual
  /// clock the fabric's close wakes every actor.
  void failed();

 private:
  InprocRun& run_;
  const int rank_;
  Transport& net_;
  std::unique_ptr<IntraDc>& intra_;
  bool started_ = false;
  std::optional<FaultRuntime::Rejoin> rejoin_;          // the state it restarted from
  std::shared_ptr<const Checkpoint> restart_checkpoint_;  // a full recovery's restart: its checkpoint
  StateBuffers restart_state_;                            // its own file of it
};

}  // namespace geotb::engine
