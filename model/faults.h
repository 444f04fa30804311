// Node faults: what a scenario's timeline injects (kill, restart, slow a worker), how workers
// detect a dead peer (heartbeats), and what a run's report records about them ("faults").
// Torch-free and engine-free: the harness fills the plan from the scenario, the embedded cluster
// executes it (engine/faults/), the report carries the record. docs/guide/faults.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/rank_layout.h"

namespace geotb::model {

using nlohmann::json;

/// One event of the scenario's timeline that acts on a worker (not on a link).
struct FaultEvent {
  enum class Kind : uint8_t { kKill, kRestart, kSlow };
  Kind kind = Kind::kKill;
  int dc = 0;      ///< data center index (scenario order)
  int worker = 0;  ///< local rank in that data center
  /// When: at the start of this step's synchronisation (0-based step index; deterministic across
  /// modes), or at this instant from the start of training (the worker's first step boundary at
  /// or after it). Exactly one is set.
  std::optional<int> at_step;
  std::optional<std::chrono::nanoseconds> at;
  /// kKill: what dies. "process": the worker's process (its kernel closes its connections: peers
  /// in the process and dpdk modes see them end); "host": its whole host goes silent (nothing
  /// answers, connections stay open: peers declare it after timeout + confirmation of silence).
  /// The embedded mode detects both by heartbeat silence.
  std::string scope = "process";
  /// kSlow: compute charged `factor` times, for `steps` steps or for `duration` (exactly one).
  double factor = 1;
  std::optional<int> steps;
  std::optional<std::chrono::nanoseconds> duration;
};

std::string to_string(FaultEvent::Kind k);

/// Heartbeats between peers (engine/faults/heartbeat.h): every `interval` each worker sends one
/// to every peer it watches; a peer silent for `timeout` is suspected, and declared dead if still
/// silent `confirmation` later (a heartbeat in between clears the suspicion: a congested link is
/// not a dead node). Defaults: 2 s, 3 s, 2 s.
///
/// Indirect probes (every mode; SWIM's ping-req, Lifeguard's nack): a suspect is also
/// probed through up to `witnesses` other ranks (FaultGroups::witnesses: its own site's members,
/// which reach it over their LAN, and a rank of a third site). Any answer that it lives clears
/// the suspicion; it is declared dead after `confirmation` only when a witness could not reach it
/// either, or when it has no witness. A suspect that neither it nor any witness answers (the
/// observer's own path is in doubt: its whole site dead, or cut off) is declared `unreachable`
/// after the suspicion. witnesses 0: the observer's own silence decides. Defaults: 3, 30 s.
struct HeartbeatConfig {
  std::chrono::nanoseconds interval{std::chrono::seconds(2)};
  std::chrono::nanoseconds timeout{std::chrono::seconds(3)};
  std::chrono::nanoseconds confirmation{std::chrono::seconds(2)};
  int witnesses = 3;
  std::chrono::nanoseconds unreachable{std::chrono::seconds(30)};
};

/// Full recovery: once more than `above_fraction` of the run's workers have been declared dead,
/// every survivor goes back to the last complete checkpoint at one step boundary, then
///  * `then` = "survivors": carries on with the survivors;
///  * `then` = "restarts": the dead workers are restarted when it is decided, come up
///    `restart_after` later (a replacement node's start-up), load their own state from the same
///    checkpoint, and every worker carries on in the full groups (the survivors wait for them).
/// Default 0.25; 1 turns it off (never more than all).
struct FullRecoveryConfig {
  double above_fraction = 0.25;
  std::string then = "survivors";
  std::chrono::nanoseconds restart_after{0};  ///< "restarts": decision -> the restarted workers are up
};

/// Policy "estimate" (engine/faults/estimate.h): what stands in for a dead worker's gradient in
/// its group's mean until it restarts or the run ends, instead of shrink's division by the
/// survivors. `weights`: "seed" (w_i = 1/(1 + cos(x_d, x_i)), the data-topology notes' formula),
/// "similarity" (w_i = max(cos(x_d, x_i), 0)), "equal" (the survivors' mean: shrink exactly) or
/// "last_gradient" (the dead worker's gradient of the last step it took part in, times
/// decay^(steps since), MIFA's reuse). x: the mean input of a worker's batch of this step, minus the
/// training set's mean input.
struct EstimateConfig {
  EstimateConfig() : weights("seed") {}  // not an aggregate: GCC 12 warns of nested ones' strings
  std::string weights;
  double decay = 1.0;  ///< last_gradient: the factor per step since the gradient was taken; in (0, 1]
};

/// The scenario's node faults and how the cluster handles them.
struct FaultPlan {
  std::vector<FaultEvent> events;  ///< in timeline order
  /// Heartbeats run when the scenario has a "faults" object or any fault event.
  bool heartbeats = false;
  HeartbeatConfig heartbeat;
  std::string policy = "shrink";  ///< what survivors do: "shrink" or "estimate"
  EstimateConfig estimate;        ///< policy "estimate"
  std::string shard = "drop";     ///< the dead worker's data: "drop" or "redistribute" to its DC's survivors
  FullRecoveryConfig full_recovery;
  /// Kill events in the timeline (restarts not counted).
  int kills() const;
  /// Full recovery's threshold among `workers`: "more than above_fraction of the workers" dead,
  /// i.e. the smallest count c with c > above_fraction * workers.
  int full_recovery_count(int workers) const;
  /// Whether the timeline's kills can cross it (kills() >= full_recovery_count(workers)).
  bool full_recovery_reachable(int workers) const;
  /// Whether it can, and the dead are then restarted ("then": "restarts"): every killed worker's
  /// process comes back in the process modes.
  bool full_recovery_restarts(int workers) const;
  bool active() const { return heartbeats || !events.empty(); }
  bool has_kills() const;
  /// Whether a kill event names a DC's worker 0 (its leader under the per-DC strategies).
  bool kills_a_dc_leader() const;
  /// The lowest rank (layout.rank_of(dc, worker)) no kill event names: the process modes'
  /// reporting rank, which knows it from the start (their kills are at a step and always fire).
  int first_never_killed(const RankLayout& layout) const;
};

/// A peer declared dead by one worker's heartbeat monitor ("detections" entries).
struct Detection {
  int observer = 0;          ///< global rank that declared it
  int peer = 0;              ///< global rank declared dead
  double at_s = 0;           ///< when, seconds since the start of training
  double last_heard_s = 0;   ///< the peer's last heartbeat arrived then (the start if never)
  double suspected_s = 0;    ///< when it was first suspected (last_heard + timeout)
  /// How: "connection" (process modes: its connections ended without a goodbye: the kernel of a
  /// killed process closed them), "silence" (nothing from it for timeout + confirmation, and no
  /// witness to ask: witnesses 0, or none exists), "witness" (silent, and a witness could not
  /// reach it either), "unreachable" (neither it nor any witness answered for
  /// faults.heartbeat.unreachable); "" in embedded reports written before 2026-12-03.
  std::string how;
};
void to_json(json& j, const Detection& d);
void from_json(const json& j, Detection& d);

/// One fault event as it happened ("events" entries).
struct FaultRecord {
  std::string event;             ///< "kill", "restart" or "slow"
  int rank = 0, dc = 0, worker = 0;
  double at_s = 0;               ///< when it took effect, seconds since the start of training
  int step = 0;                  ///< the step it took effect at
  /// kill: the first detection of it (who and when; latency from at_s). Absent: never detected.
  std::optional<int> detected_by;
  std::optional<double> detected_at_s;
  std::optional<double> detection_latency_s;
  std::string policy;            ///< kill: the recovery policy ("shrink"); restart: "rejoin"; slow: "none"
  /// kill: first detection -> the last survivor resumed training; restart: -> rejoined.
  std::optional<double> recovery_s;
  int steps_lost = 0;            ///< steps the survivors discarded (the step in flight)
  int survivors = 0;             ///< kill: members of the rebuilt group
  /// kill of a DC leader (strategies with per-DC groups): the survivor that took over its
  /// address (the DC's lowest surviving rank). Absent otherwise.
  std::optional<int> new_leader;
  std::optional<double> factor;  ///< slow
  std::optional<double> until_s; ///< slow: when it ended (absent: still slow at the end)
};
void to_json(json& j, const FaultRecord& f);
void from_json(const json& j, FaultRecord& f);

/// Policy "estimate", one step of one dead worker: its estimated gradient against the truth (the
/// gradient it would have computed on its own batch of that step from its group's parameters,
/// computed for the report only), and the same for shrink's implicit estimate (the survivors'
/// mean) ("estimates" entries).
struct EstimateRecord {
  int step = 0;  ///< the step (0-based) whose group mean used the estimate
  int rank = 0;  ///< the dead worker
  int dc = 0;
  double cosine = 0, rel_error = 0;                ///< cos(estimate, truth), |estimate - truth| / |truth|
  double shrink_cosine = 0, shrink_rel_error = 0;  ///< the survivors' mean against the truth
};
void to_json(json& j, const EstimateRecord& r);
void from_json(const json& j, EstimateRecord& r);

/// A strategy's "faults" section.
/// A full recovery as it happened ("full_recovery").
struct FullRecoveryRecord {
  double above_fraction = 0;  ///< the threshold it crossed
  int dead = 0;               ///< workers declared dead when it was decided
  int workers = 0;            ///< the run's workers at the start
  double decided_at_s = 0;    ///< the detection that crossed the threshold, seconds since the start
  int boundary_step = 0;      ///< the step boundary at which every survivor went back
  int checkpoint_step = 0;    ///< the checkpoint they went back to (steps done in it)
  int steps_redone = 0;       ///< boundary_step - checkpoint_step: steps every survivor did again
  double checkpoint_at_s = 0; ///< training time at the checkpoint (rank 0's clock then)
  double rewound_at_s = 0;    ///< when the last survivor had restored it
  int survivors = 0;          ///< workers that went back and carried on
  std::string then = "survivors";  ///< FullRecoveryConfig::then
  int restarted = 0;          ///< "restarts": dead workers restarted from the checkpoint
  std::optional<double> restarted_at_s;  ///< "restarts": when they were up (decided_at_s + restart_after)
};
void to_json(json& j, const FullRecoveryRecord& r);
void from_json(const json& j, FullRecoveryRecord& r);

struct FaultsSection {
  double heartbeat_interval_s = 0, heartbeat_timeout_s = 0, heartbeat_confirmation_s = 0;
  int heartbeat_witnesses = 0;             ///< 0: none asked (reports written before them read 0)
  double heartbeat_unreachable_s = 0;      ///< with witnesses: declared unreachable after this
  std::string policy, shard;
  std::optional<EstimateConfig> estimate;  ///< policy "estimate": its settings
  std::vector<EstimateRecord> estimates;   ///< policy "estimate": every estimated step, by step then rank
  double full_recovery_above = 0.25;  ///< the plan's threshold (FullRecoveryConfig)
  std::optional<FullRecoveryRecord> full_recovery;  ///< absent: none happened
  std::vector<FaultRecord> events;
  std::vector<Detection> detections;  ///< every detection by every worker, in time order
  /// Detections of a peer that was not dead (no kill of it before the detection).
  int false_detections = 0;
  uint64_t heartbeats_sent = 0;
};
void to_json(json& j, const FaultsSection& f);
void from_json(const json& j, FaultsSection& f);

/// A section with the plan's settings (heartbeats, policy, shard, full recovery's threshold) and
/// nothing that happened yet: what both modes' sections start from.
FaultsSection section_of(const FaultPlan& plan);

/// What one rank of a process-mode run saw of the faults (its rank file's "faults"): the
/// coordinator merges every rank's into the strategy's FaultsSection (merge_fault_logs). Times
/// are seconds since this rank's own start of training, which began at `start_ns` on the host's
/// monotonic clock (every rank of `geotb run` runs on one host).
struct RankFaultLog {
  int64_t start_ns = 0;
  std::optional<int> killed_at_step;  ///< this rank was killed there (its file written at the kill point)
  std::optional<double> killed_at_s;
  std::vector<Detection> detections;  ///< by this rank
  /// Each recovery of this rank: the peers newly recovered from, when it resumed training, at
  /// which step, the rebuilt group's size, and whether it was the group's coordinator.
  struct Resume {
    std::vector<int> peers;
    double at_s = 0;
    int step = 0;
    int group_size = 0;
    bool coordinator = false;
    std::optional<int> took_over;  ///< the dead DC leader whose address this rank took over then
  };
  std::vector<Resume> resumed;
  /// Restarts this rank coordinated (timeline `restart`): the restarted rank, the boundary, when
  /// it sent the state, the grown group's size.
  struct Handover {
    int rank = 0;
    int step = 0;
    double at_s = 0;
    int group_size = 0;
    /// A full recovery's restart: no state handed, the restarted read its own from the checkpoint.
    bool from_checkpoint = false;
  };
  std::vector<Handover> handed;
  /// This rank is a restarted worker's process: when it had the state its coordinator handed it.
  std::optional<double> rejoined_at_s;
  /// This rank is a full recovery's restarted worker: when its process was up (listening, its
  /// address published, restart_after after the decision at the earliest).
  std::optional<double> up_at_s;
  /// A full recovery as this rank saw it (faults.full_recovery): the boundary it went back at, the
  /// checkpoint it restored, when; on the rank whose report of deaths crossed the threshold, when
  /// that was and how many were dead then.
  struct Rewind {
    int boundary_step = 0;  ///< 0: it decided but never went back (killed since, or the run ended first)
    int checkpoint_step = 0;
    double checkpoint_at_s = 0;  ///< training time at the checkpoint (its state's)
    double at_s = 0;             ///< when this rank had restored it
    std::optional<double> decided_at_s;  ///< the deciding rank only
    int dead = 0;                        ///< the deciding rank only: workers dead when it decided
  };
  std::optional<Rewind> rewound;
  std::vector<FaultRecord> slow;  ///< this rank's slow events as they happened ("slow" records)
  uint64_t heartbeats_sent = 0;
};
void to_json(json& j, const RankFaultLog& l);
void from_json(const json& j, RankFaultLog& l);

/// The strategy's "faults" section from every rank's log (`logs[r]` of rank r; the plan's kills
/// and the layout for the records' dc and worker). Times are moved onto rank `origin`'s start (the
/// reporting rank). A detection of a rank not killed before it is a false detection. Recovery of
/// a kill: its first detection -> the last survivor that recovered from it resumed; steps lost:
/// one per group that discarded its step in flight (its coordinator's resume). A restart: its
/// coordinator's hand-over (when, the boundary, the grown group), recovered once the restarted
/// rank had the state (its rejoined_at_s). A full recovery: from every rank's `rewound` (the
/// survivors: those that went back; the decision: the deciding rank's).
FaultsSection merge_fault_logs(const FaultPlan& plan, const RankLayout& layout, const std::vector<RankFaultLog>& logs,
                               int origin);

}  // namespace geotb::model
