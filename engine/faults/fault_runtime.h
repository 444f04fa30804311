// Node faults in the embedded mode (virtual clock): the scenario's kill and slow events executed
// on the workers, heartbeat detection (heartbeat.h) and the recovery policy `shrink`. Each rank's
// fault agent (fault_agent.h, the same state machine in every mode) runs over its port here
// (FaultRuntime::Port: the fabric, the heartbeat monitor, the virtual clock); FaultRuntime holds
// what the whole cluster shares: the records, who is dead, full recovery's decision, the restarts'
// hand-offs, dead sites.
//
//  * kill {dc, worker} at step s (or at an instant: the worker's first step at or after it): the
//    worker computes step s's gradient, then stops dead before it synchronises: its endpoint is
//    closed (messages to and from it dropped), its heartbeats stop, its actors finish (it holds
//    nobody back in virtual time). It is no error of the run.
//  * detection: every survivor that watches it declares it dead after timeout + confirmation of
//    silence; that interrupts the survivor's blocked receives (PeerDeclaredDead).
//  * shrink: the survivors of the dead worker's group (the DC for strategies with per-DC groups,
//    every rank for naive_ddp and lan) drop it from their group (env.ring, env.intra: Gloo's ring
//    over the fabric without the dead rank, renormalised by the participants), agree on the step
//    in flight (the group's lowest surviving rank collects every member's step and view of the
//    dead, and answers; a disagreement is an error naming both), discard it (parameters and
//    optimizer state back to before it; Strategy::discard_step runs what the step must still do,
//    e.g. a round due between data centers) and carry on. The dead worker's data shard is dropped
//    or split among its DC's survivors (scenario faults.shard). Other DCs do not notice a kill in
//    a per-DC group, except for the DC's smaller contribution to its model.
//  * leader rule: the run's reporting rank (the accuracy curve, step-end times) is the lowest rank
//    still alive; within a DC the leader is its lowest surviving rank. With per-DC groups, when
//    the survivors' agreement drops their leader, that lowest survivor takes over the dead
//    leader's address (Transport::take_over: its notice tells every rank of the other DCs, which
//    then address the dead leader's messages to it and send it again the last ones they had sent
//    the dead, e.g. the round in flight it never forwarded); it leads the DC's exchange from the
//    next round on, collecting the round in flight as its predecessor would have. The other DCs'
//    leaders record the death (their detection) but do not recover: nothing of theirs changes.
//    A killed leader is not restarted (scenario validation), nor combined with full recovery.
//  * full recovery: once more than faults.full_recovery.above_fraction of the workers have been
//    declared dead (the detection that crosses it decides, as a coordinator that hears every
//    detection would), every survivor goes back to the last complete checkpoint at the first step
//    boundary no survivor has passed, and carries on in its shrunk group. Once per run: deaths
//    after it are shrunk only. The run must take checkpoints (cluster.cc refuses otherwise).
//    With faults.full_recovery.then = "restarts", the dead workers are restarted when it is
//    decided and are up restart_after later: at the boundary the survivors' groups grow back to
//    full (ring, intra-DC group on a fresh tag base, heartbeats of the restarted counted from
//    their start), each restarted worker's group coordinator tells it the boundary, the tag epoch
//    and its group, and it loads its own state from the same checkpoint (a restarted process
//    reads the last checkpoint: nothing of its dead self is used). Until then it waits dead,
//    holding nobody back; the survivors wait for it in their first collective with it.
//  * restart {dc, worker} at at_step s: at that boundary every rank re-creates its strategy from
//    its own state in a new tag epoch, the worker's group grows back, and the group's coordinator
//    in its DC hands it the group's state; it waits dead until then (its actor blocked, its
//    heartbeat monitor muted), holding nobody back.
//  * a dead site (per-DC groups under a quorum of sites, faults/quorum.h): every worker of a DC
//    killed at one step. Nobody of its group survives to shrink; the quorum separates the site
//    `timeout` after the deaths and the others train on. Restarted whole at one boundary, it has
//    no group member to hand it the model: the lowest survivor of the lowest site the timeline
//    never kills whole hands each restarted worker its own state, of which the restarted take
//    only what every site shares (Strategy::rejoin_site: the anchor; their residual is 0, their
//    optimizer fresh), and the quorum counts the site in from the next round decided. Never
//    restarted, it stays out, and the final synchronisation runs among the others.
//  * slow {dc, worker, factor, steps | duration}: every compute region of the worker is charged
//    `factor` times (the notes' straggler).
// A failure while recovering (a second death during the agreement) ends the run with its error.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "emulator/inproc/virtual_time.h"
#include "engine/checkpoint/state.h"
#include "engine/faults/estimate.h"
#include "engine/faults/fault_agent.h"
#include "engine/faults/heartbeat.h"
#include "engine/faults/quorum.h"
#include "engine/faults/shrink.h"
#include "engine/strategies/descriptor.h"
#include "engine/worker_loop.h"
#include "model/faults.h"

namespace geotb::engine {

/// What the whole cluster shares about faults during one strategy's run.
class FaultRuntime {
 public:
  using Nanos = std::chrono::nanoseconds;
  FaultRuntime(const model::FaultPlan& plan, const StrategyInfo& info, const model::RankLayout& layout,
               emu::Fabric& fabric, emu::VirtualScheduler& sched, std::vector<std::vector<uint32_t>> shards,
               uint64_t seed);
  ~FaultRuntime();

  /// The per-rank hooks the worker loop calls.
  FaultHooks& hooks(int rank);
  /// The compute factor of `rank` now (slow events), read by its compute charge.
  double compute_factor(int rank) const;
  /// Whether `rank` was killed (and not restarted) by the end of the run.
  bool dead_at_end(int rank) const;
  /// The lowest rank alive at the end (the run's reporting rank).
  int reporter() const;
  /// Called by every worker right after the start line, at the run's start instant `t0`: its
  /// heartbeats start (every peer counts as heard then).
  void started(int rank, Nanos t0);
  /// Whether `rank`'s file of the checkpoint after `steps` steps is not to be written: a worker
  /// died before it and will not be back to write its own (every worker writes its file of a
  /// checkpoint), or a full recovery was decided and `rank` has not gone back yet (what it writes
  /// now would be abandoned, and must not mix with the files written again after it).
  bool checkpoint_cannot_complete(int rank, int steps) const;
  /// Whether this run's kills can cross the full-recovery threshold.
  bool full_recovery_possible() const;
  /// Full recovery's agreement: called by every live rank at each step boundary (steps done), in
  /// order; true on every survivor at the same boundary once a full recovery is decided.
  bool rewind_due(int rank, int steps);
  /// `rank` went back at boundary `steps` to the checkpoint after `checkpoint_step` steps, taken
  /// at `checkpoint_at` of training time.
  void rewound(int rank, int steps, int checkpoint_step, Nanos checkpoint_at, Nanos now);
  /// Restarts (timeline `restart` at `at_step`): whether `rank` is restarted after its kill.
  bool will_restart(int rank) const;
  /// What a restarted worker gets from its group's coordinator at the restart's boundary.
  struct Rejoin {
    StateBuffers state;         ///< the coordinator's worker state at the boundary
    uint64_t tag_epoch = 0;     ///< the epoch every rank moved to there
    uint64_t group_tags = 0;    ///< tags the intra-DC group had used (join_transport_group)
    std::vector<int> members;   ///< the grown group, ascending
    std::vector<int> ring;      ///< the live ranks' ring (naive_ddp)
    int steps = 0;              ///< the boundary
    int killed_at_step = 0;     ///< its kill's step (its series are NaN from there to `steps`)
    /// Full recovery's restart: `state` is empty; the worker loads its own state from the
    /// checkpoint the survivors went back to at `steps`.
    bool from_checkpoint = false;
    /// A site restarted whole: `state` is another site's worker's (Strategy::rejoin_site).
    bool other_site = false;
  };
  /// Called on the killed worker's thread: blocks (holding nobody back) until its group hands it
  /// the state at the restart's boundary. Its heartbeats start again. Nothing if `run_over()`
  /// (read under the scheduler's lock) comes true first: a full recovery that never came.
  std::optional<Rejoin> await_restart(WorkerEnv& env, const std::function<bool()>& run_over = {});
  /// Whether full recovery restarts the dead ("then": "restarts").
  bool restarts_on_recovery() const { return plan_.full_recovery.then == "restarts"; }
  /// The report's "faults" section, after every worker has returned.
  model::FaultsSection section() const;

  /// The group of `rank` without `dead`: every rank (world groups) or its DC's, ascending.
  std::vector<int> group_of(int rank, const std::set<int>& dead) const;
  /// Policy "estimate" (faults/estimate.h): builds every rank's estimator over the training set
  /// (`batch` examples per worker and step). Nothing under shrink.
  void enable_estimates(const Dataset& train, size_t batch);
  /// `rank`'s estimator; null without policy "estimate".
  GradientEstimator* estimator(int rank) const;
  /// A quorum of sites (faults/quorum.h) for this run: a DC whose workers are all dead is reported
  /// to it as a dead site, and a declaration of another site's leader fences nobody (the service
  /// decides about sites). Before the first step.
  /// Throws RunError if the timeline kills every worker of a DC (per-DC groups) without a quorum
  /// (nobody would recover), or restarts a dead site otherwise than whole at one boundary.
  void attach_quorum(SiteQuorum* q);

 private:
  class Port;  // the embedded mode's FaultPort (fault_agent.h), one per rank
  friend class Port;
  double secs(Nanos t) const { return std::chrono::duration<double>(t - t0_).count(); }
  bool fenced(int rank) const;
  size_t full_recovery_count() const;
  std::optional<double> full_recovery_instant() const;  // under mu_
  void on_declared(const model::Detection& d);
  void on_killed(int rank, int step, Nanos now);
  void on_resumed(const std::vector<int>& peers, int rank, Nanos now, int group_size, bool coordinator);

  model::FaultPlan plan_;
  bool world_group_;  // naive_ddp, lan: one group of every rank; else per DC
  model::RankLayout layout_;
  int M_, P_;
  FaultGroups groups_;
  emu::Fabric& fabric_;
  emu::VirtualScheduler& sched_;
  std::shared_ptr<const std::vector<std::vector<uint32_t>>> own_shards_;  // as partitioned at the start
  uint64_t seed_;
  Nanos t0_{0};
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<std::unique_ptr<FaultAgent>> agents_;  // over ports_
  std::unique_ptr<EstimateBoard> board_;                     // policy "estimate"
  std::vector<std::unique_ptr<GradientEstimator>> estimators_;  // policy "estimate": one per rank
  std::unique_ptr<std::atomic<double>[]> factor_;

  mutable std::mutex mu_;
  std::vector<model::FaultRecord> records_;  // in the order they happened
  std::vector<model::Detection> detections_;
  struct KillState {
    size_t record;  // index in records_
    double at_s;
    Nanos at;       // the kill's virtual instant
    std::set<int> resumed;  // survivors that resumed
    double last_resume_s = 0;
  };
  std::map<int, KillState> killed_;  // rank -> its (latest) kill
  std::set<int> dead_;
  std::set<int> fenced_;  // declared dead while alive: stopped at their next chance
  int false_detections_ = 0;
  std::map<int, double> first_detected_;  // killed rank -> its first detection (s since the start)
  std::vector<int> progress_;             // every rank's last step boundary (full recovery's agreement)
  int full_boundary_ = -1;                // the boundary every survivor goes back at (-1: not decided)
  model::FullRecoveryRecord full_;  // filled as it happens
  std::set<int> rewound_;           // survivors that went back
  std::set<int> restarted_;         // "restarts": the dead brought back from the checkpoint
  Nanos restart_up_{0};             // "restarts": when they are up (virtual instant)
  // Restarts: boundary -> the ranks restarted there, and the epochs in boundary order (1, 2, ...);
  // the agents share it.
  std::shared_ptr<const RestartSchedule> restarts_;
  struct Handoff {
    int coordinator = -1;
    std::optional<Nanos> at;  // set (in sched_.update) when the coordinator has sent the state
    size_t record = 0;        // its restart record
    bool from_checkpoint = false;  // full recovery's restart: the state is the checkpoint's
    bool other_site = false;       // a site restarted whole: the state is another site's worker's
  };
  std::map<int, Handoff> handoff_;  // restarted rank -> its hand-off (in sched_.update)
  SiteQuorum* quorum_ = nullptr;    // attach_quorum
  // Sites killed whole (a quorum of sites): every DC the timeline leaves without a live worker;
  // boundary -> the DCs restarted whole there; a dead DC restarted only in part (refused); and
  // the lowest DC never killed whole, whose lowest survivor hands a restarted site its model.
  std::set<int> killed_whole_;
  std::map<int, std::set<int>> sites_back_at_;
  std::optional<int> partly_restarted_;
  int site_coordinator_dc_ = 0;
};

}  // namespace geotb::engine
