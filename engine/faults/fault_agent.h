// The fault agent: one rank's part of the scenario's node faults, the same state machine in every
// network mode. It implements the worker loop's FaultHooks over a FaultPort, the part that differs
// between the modes: the in-process port (fault_runtime.h: the embedded mode's fabric, heartbeat
// monitor and virtual clock, FaultRuntime's shared records) and the socket port (socket_port.h: the
// process and dpdk modes' socket transport, a process's own log, the run's store).
//
//   step_begins   the timeline's slow events start and end (RankFaultTimeline); the compute factor
//                                                        (port: record, compute)
//   before_sync   a fenced rank, or a kill due, dies     (port: detect, record; WorkerKilled)
//   recover       policy shrink (recover_from_deaths), this agent its RecoveryPort: the deaths
//                 declared (port: detect), the group left, agreed in, joined again (port:
//                 interrupt, regroup), the dead workers' shards inherited alike on every rank
//                 (faults.shard), the resume recorded (port: record)
//   at_reepoch    a restart's boundary (the restart schedule, rejoin.h): the restarted revived
//   regrow        (full recovery's restart)  (port: revive), this rank's group grown back
//                 (grow_group), each restarted worker handed where it starts by its coordinator
//                 (port: revive), the grown group joined (port: regroup)
//   before/after_rewind   full recovery's rewind: the sampler's rules (recovery.h), the regrowth
//                 above for "then": "restarts"
// No libtorch here.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/faults/recovery.h"
#include "engine/faults/rejoin.h"
#include "engine/faults/shrink.h"
#include "engine/faults/timeline.h"
#include "engine/worker_loop.h"
#include "model/faults.h"

namespace geotb::engine {

/// What the fault agent needs from its network mode, by kind: clock, record, compute, detect,
/// interrupt and regroup, revive. Every call is on the rank's worker thread.
class FaultPort {
 public:
  using Nanos = std::chrono::nanoseconds;
  virtual ~FaultPort() = default;

  // --- clock
  /// The run's clock now (virtual time in the embedded mode, the wall clock otherwise).
  virtual Nanos now() = 0;
  /// The instant training started (the records' time 0).
  virtual Nanos t0() = 0;

  // --- record
  /// A slow event's record began: where the mode keeps records; its index there.
  virtual size_t record_slow(const model::FaultRecord& r) = 0;
  /// The slow event at that index ended at `until_s`.
  virtual void slow_ended(size_t record, double until_s) = 0;
  /// This rank stops dead at `step` (its kill, or its fencing): recorded, its endpoint and
  /// heartbeats stopped as a dead worker's are.
  virtual void killed(int step, Nanos at) = 0;
  /// The survivors resumed after `fresh` died (recover_from_deaths' resume).
  virtual void resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group,
                       std::optional<int> took_over) = 0;
  /// Whether every rank records step-end times and snapshots (the reporting rank may die).
  virtual bool record_all() const = 0;
  /// FaultHooks::checkpoint_cannot_complete: what the mode knows of the deaths before `steps`.
  virtual bool checkpoint_cannot_complete(int steps) const = 0;
  /// Full recovery went back: the rank resumed from the checkpoint (after its state is restored).
  virtual void rewound() = 0;

  // --- compute
  /// Before a step's compute.
  virtual void step_begins(WorkerEnv& env) = 0;
  /// The compute factor from now on (the timeline's slow events).
  virtual void set_factor(double factor) = 0;
  /// After the compute, before the synchronisation (a slow worker's extra time, where the mode
  /// charges it so).
  virtual void after_compute(WorkerEnv& env) = 0;
  /// Training is over on this rank (the heartbeats stop; later failures are not deaths).
  virtual void done(WorkerEnv& env) = 0;

  // --- detect
  /// Whether a peer declared this rank dead (it dies at its next chance).
  virtual bool fenced() const = 0;
  /// Whether a death declared here may not be recovered from yet (the process modes wait a
  /// bounded time for its declaration).
  virtual bool death_pending() = 0;
  /// The peers declared dead here (clears the embedded fabric's alarm).
  virtual std::set<int> declared() = 0;
  /// The deaths the agent has recovered from now (receives from members recovering from others
  /// are interrupted; messages to these are dropped).
  virtual void handled(const std::set<int>& handled) = 0;

  // --- interrupt and regroup
  /// Before the survivors of `group` agree (the in-process group shrunk / the Gloo group dropped
  /// and the members told "recovering").
  virtual void leave_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) = 0;
  /// Whether the agreement's error `e` means that another member died meanwhile.
  virtual bool agreement_failed(const TransportError& e) = 0;
  /// After the agreement (the Gloo group rebuilt without the dead).
  virtual void join_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) = 0;

  // --- revive (restarts: the timeline's at a boundary, or full recovery's)
  /// A restart at boundary `steps` in tag epoch `tag_epoch`: the message's start (tag epoch, the
  /// group's tags, boundary, the process modes' Gloo prefix), before any group changes here.
  virtual RejoinMessage restart_message(WorkerEnv& env, int steps, uint64_t tag_epoch, bool full_recovery) = 0;
  /// Every rank, before its group grows: the workers restarted at `steps` are reachable again
  /// (the process modes: each new process at its published address).
  virtual void revive(const std::vector<int>& back_all, int steps, bool full_recovery) = 0;
  /// This rank's group took back `g.back` (grown group `g`, the message's group tags), no longer
  /// handled as dead: its in-process group, heartbeats and endpoints (embedded), the deaths no
  /// longer declared (process).
  virtual void take_back(WorkerEnv& env, const GrownGroup& g, const RejoinMessage& m, bool full_recovery) = 0;
  /// As restarted worker `r`'s coordinator: `m` (group and ring filled in) to it, and the record.
  virtual void hand_over(WorkerEnv& env, int r, RejoinMessage m, const char* policy, bool from_checkpoint) = 0;
  /// After the hand-overs (`g.back` may be empty: another group's restart): the grown group
  /// joined (the process modes: the restarted ranks' streams, Gloo under the message's prefix;
  /// full recovery waits for the restarted to be up).
  virtual void taken_back(WorkerEnv& env, const GrownGroup& g, const RejoinMessage& m, bool full_recovery) = 0;
  /// The timeline restarts whole sites at `steps` (a quorum of sites; the embedded mode): they are
  /// handed their state; the DCs restarted so.
  virtual std::set<int> restart_sites(WorkerEnv& env, int steps, const StateBuffers& state,
                                      const std::set<int>& handled) = 0;
  /// Full recovery's restart, at its boundary: the workers restarted (every rank sees the same).
  struct RecoveryRestart {
    std::vector<int> ranks;  ///< ascending
    int boundary = 0;        ///< the boundary the survivors went back at (steps done)
  };
  virtual RecoveryRestart restarted_by_recovery() = 0;
  /// A restarted worker is back at boundary `steps`: `handled` are the dead in its group as its
  /// coordinator sees them (no longer watched).
  virtual void rejoined(const std::set<int>& handled, int steps) = 0;
};

/// What one rank's agent is given.
struct FaultAgentConfig {
  model::FaultPlan plan;
  FaultGroups groups;
  int rank = 0;
  /// Every rank's shard at the start (redistribute; shared by the agents of one process).
  std::shared_ptr<const std::vector<std::vector<uint32_t>>> shards;
  uint64_t seed = 0;  ///< the run's (the redistributed samplers' streams)
  /// restart_schedule(plan, groups.layout) (rejoin.h), computed once by the config's owner and
  /// shared by the agents and ports of one process.
  std::shared_ptr<const RestartSchedule> restarts;
  /// Whether full recovery's restarted workers rejoin their groups before the checkpoint's state
  /// is restored (the process modes: their Gloo group must exist when the strategy is made) or
  /// after it, in the loop's new tag epoch (the embedded mode).
  bool regrow_before_restore = false;
};

class FaultAgent final : public FaultHooks, private RecoveryPort {
 public:
  /// `port` outlives the agent. Throws std::invalid_argument without `cfg.shards` or `cfg.restarts`.
  FaultAgent(FaultAgentConfig cfg, FaultPort& port);

  void step_begins(WorkerEnv& env, int step) override;
  void before_sync(WorkerEnv& env, int step) override;
  bool recover(WorkerEnv& env, int step, BatchSampler& sampler) override;
  bool record_all() const override { return port_.record_all(); }
  std::optional<uint64_t> reepoch_due(WorkerEnv& env, int steps) override;
  void at_reepoch(WorkerEnv& env, int steps, const StateBuffers& state) override;
  void before_rewind(WorkerEnv& env, BatchSampler& sampler) override;
  void after_rewind(WorkerEnv& env, BatchSampler& sampler, uint64_t tag_epoch) override;
  void done(WorkerEnv& env) override { port_.done(env); }
  bool checkpoint_cannot_complete(int steps) const override { return port_.checkpoint_cannot_complete(steps); }

  /// A restarted worker back in the group `members` at boundary `steps` (its coordinator's
  /// message). `new_process`: it is its predecessor's successor (the process modes), whose kills
  /// fired already.
  void rejoined(const std::vector<int>& members, int steps, bool new_process);

 private:
  // RecoveryPort (recovery.h).
  bool death_pending(WorkerEnv& env, int step) override;
  Fresh take_fresh() override;
  void before_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) override {
    port_.leave_group(env, group, dead);
  }
  bool agreement_failed(const TransportError& e) override { return port_.agreement_failed(e); }
  void after_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) override {
    port_.join_group(env, group, dead);
  }
  std::vector<uint32_t> inherit(const std::set<int>& dead, const std::vector<int>& fresh) override;
  void resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group,
               std::optional<int> took_over) override {
    port_.resumed(fresh, step, group, took_over);
  }

  RecoveryRules rules() const { return {&cfg_.groups, cfg_.rank, cfg_.plan.shard == "redistribute", cfg_.seed}; }
  double secs(FaultPort::Nanos t) { return std::chrono::duration<double>(t - port_.t0()).count(); }
  [[noreturn]] void die(int step, const std::string& why);
  // The restarted workers `back_all` taken back at boundary `steps` (the message `m` started by
  // the port): every rank revives them, this rank's group grows, each one's coordinator here
  // hands it `state` (none: it reads its checkpoint).
  void take_back(WorkerEnv& env, const std::vector<int>& back_all, RejoinMessage m, const char* policy,
                 bool full_recovery);
  // Full recovery's "restarts": the survivors' groups grow back by the restarted workers.
  void regrow(WorkerEnv& env, uint64_t tag_epoch);
  // Every rank's shard now: the start's until a recovery redistributed some.
  const std::vector<std::vector<uint32_t>>& shards_now() const { return shards_.empty() ? *cfg_.shards : shards_; }

  const FaultAgentConfig cfg_;
  FaultPort& port_;
  RankFaultTimeline timeline_;
  // Every rank's shard now, once a recovery redistributed some (empty: cfg_.shards).
  std::vector<std::vector<uint32_t>> shards_;
  std::set<int> handled_;                      // dead peers already recovered from
  int epoch_ = 0;                              // membership changes agreed
  bool reborn_ = false;                        // a restarted process: its predecessor's kills fired
};

}  // namespace geotb::engine
