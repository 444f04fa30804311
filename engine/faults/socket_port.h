// Node faults in the process and dpdk modes (one OS process per rank, wall clock): the fault
// agent (fault_agent.h, the same state machine as the embedded mode's) over SocketFaultPort, its
// port here: the scenario's kills executed on real processes, detection by the socket transport,
// and the recovery policy `shrink` with the same decisions as the embedded mode (shrink.h).
//
//  * kill {dc, worker} at_step s (or at t: its first step boundary at or after t of its own
//    training time, on the wall clock): the worker computes step s's gradient, then stops dead before
//    it synchronises: before_sync throws WorkerKilled, its process writes its rank file (its
//    series so far, the kill's step and instant) and stops itself with SIGSTOP, and the
//    coordinator (`geotb run`), which sees it stopped, SIGKILLs it. Its kernel then closes its
//    connections: nothing is said goodbye.
//  * detection: every rank opens its streams to every peer it watches at the start (shrink.h
//    FaultGroups::watched_by), so heartbeat frames flow on every such pair. A watched peer whose
//    connections end without a goodbye is declared dead at once (how "connection": only its
//    kernel closes them so); one silent for timeout + confirmation (the transport's peer_timeout)
//    is declared dead then (how "silence"). Receives from the dead peer then fail
//    (PeerDeadError); receives from live members go on.
//  * shrink: a step that failed (a receive from the dead peer, or one interrupted as below, a
//    Gloo collective failed by a dead member's closed connection) waits up to peer_timeout + one
//    interval for a declaration; without one the failure is the run's. With one, the survivor
//    tells its group members it is recovering (a notice on its own tag, handled by their
//    transport's I/O thread): their receives from it end with PeerDeclaredDead, so that a member
//    blocked on it recovers too, while a member still finishing the step before (it needs
//    nothing from the dead: what the dead sent before its kill point arrived) finishes it first.
//    The embedded mode interrupts every receive at the declaration instead; its heartbeats
//    declare seconds after the kill, when nobody is still in the step before. The survivors
//    agree on the step in flight and the dead set (agree_on_group, the same as the embedded
//    mode), drop it from env.ring, rebuild their Gloo group without it under a new store prefix
//    (a new rendezvous: the old group is destroyed as soon as the survivor recovers, before the
//    agreement, which fails whatever member still waits in it on this one), renormalise by the participants (the mean is over the new group), and
//    discard the step in flight. The dead worker's shard is dropped or split among its DC's
//    survivors (faults.shard), exactly as in the embedded mode.
//  * slow {dc, worker, factor, steps | duration}: after each step's compute the worker waits
//    (factor - 1) times what that compute took, charged as compute: the scenario declares a
//    slower machine, and waiting (not computing more) slows that worker only, as a straggler on a
//    host of its own would be, instead of taking CPU from the others on this shared host.
//  * rank 0's kill: the coordinator runs the store in a process of its own (`geotb store`), and
//    the lowest rank the timeline never kills reports.
//  * a DC leader's kill with per-DC groups: as in the embedded mode, the DC's lowest survivor
//    leads it from the agreement on and takes over the dead leader's address (its notice goes to
//    every rank of the other DCs, whose transports keep their last messages to those ranks:
//    SocketTransport::expect_successors). The other DCs' leaders record the death only.
//  * checkpoints: those after a kill cannot complete (the dead do not write theirs) and are not
//    written, as in the embedded mode; --resume from one before it replays the kill.
//  * restart {dc, worker} at_step s: the coordinator (`geotb run`) spawns the killed rank's
//    process again as soon as it has reaped it, with the same environment and
//    GEOTB_INCARNATION=<n>. The new process loads what it needs, listens, publishes its address
//    under the store key addr/<rank>/<n> and waits. At boundary s every rank moves to the
//    restart's tag epoch (the same numbering as the embedded mode) and revives the rank in its
//    transport at the new address (SocketTransport::expect_restarts, revive); the restarted
//    rank's group takes it back (ring, heartbeats) and its coordinator (rejoin.h) announces
//    itself under rejoin/<rank>/<n>, then sends it the group's state, the grown group, the Gloo
//    prefix and every rank's address (RejoinMessage); the group then meets again in Gloo under
//    that prefix, the restarted rank with it. The restarted rank walks its own shard afresh and
//    keeps its own series, times and exchange log (its predecessor's rank file).
//  * full recovery, "then": "survivors" (faults.full_recovery; the decision over the store is
//    FullRecoveryBoard's, full_recovery_board.h): each group's coordinator, once its
//    group agreed on its dead, adds them to a count in the run's store; the one whose addition
//    crosses the threshold (more than above_fraction of the workers) decides. Every rank that may
//    take part publishes its step boundary in the store before it looks for a decision there; the
//    deciding rank marks the decision first and then reads every rank's boundary, so the boundary
//    it sets, one past the furthest it read, is one no survivor has passed (a rank that had
//    looked before the mark had published where it was; one that looks after it sees it). Every
//    survivor trains on to that boundary, goes back to the last complete checkpoint there, and
//    carries on in its shrunk group, the dead workers' data split as after a shrink: the
//    embedded mode's decisions and weights, whatever boundary the wall clock picked.
//  * full recovery, "then": "restarts": every killed worker's process is spawned again as soon as
//    it is reaped (as for a timeline restart) and waits. Each coordinator also files the deaths it
//    counted under the count its addition reached (fr/dead_at/<total>); the deciding one walks
//    those back from its own total to 0, so that it knows exactly the deaths counted up to the
//    crossing, and publishes them (fr/restart) before the boundary. At the boundary every
//    survivor goes back to the checkpoint as above, revives the restarted ranks in its transport,
//    and its group grows back to full; each restarted rank's coordinator (rejoin.h) hands it the
//    grown group, the Gloo prefix and the addresses, without state: the restarted rank reads its
//    own file of the same checkpoint. Everyone walks its own shard again, in tag epoch 1, so from
//    the checkpoint on the run is the fault-free run's, bit for bit. A restarted process is up
//    restart_after after the decision: every rank waits for that instant at the boundary (a
//    group would wait for it in its first collective with it, another DC's leader in its
//    exchange, on receive timeouts shorter than a replacement's start-up); one
//    that no decision names (killed after it, or the run ended first) gives up once every other
//    rank has finished (the end count plus the waiting ones make the world).
// Not in these modes yet (the scenario says so): a restart after a kill of scope host (its frozen
// process is not reaped before the end), a second kill of a restarted worker.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/collectives/intra_dc.h"
#include "engine/collectives/store.h"
#include "engine/faults/fault_agent.h"
#include "engine/faults/full_recovery_board.h"
#include "engine/faults/rejoin.h"
#include "engine/faults/shrink.h"
#include "engine/transport/socket/socket_transport.h"
#include "engine/worker_loop.h"
#include "model/faults.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

class SocketFaultPort;

/// The worker's transport as its strategy sees it: close() asks the port first.
class AgentGuardedTransport final : public Transport {
 public:
  AgentGuardedTransport(Transport& inner, SocketFaultPort* port) : inner_(inner), port_(port) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  /// To a rank the survivors dropped from their group: dropped, as the embedded fabric drops
  /// messages to a dead endpoint (a strategy's own lists, e.g. a leader's members, may still name it).
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes) override;
  std::vector<uint8_t> recv(int src, uint64_t tag) override { return inner_.recv(src, tag); }
  void close() override;
  std::unique_ptr<Sync> make_sync() override { return inner_.make_sync(); }
  void take_over(int dead, const std::vector<int>& tell) override { inner_.take_over(dead, tell); }

 private:
  Transport& inner_;
  SocketFaultPort* port_;
};

/// What restarts need from the run's store (process_worker.cc implements it).
struct RestartIo {
  /// The address incarnation `n` of `rank` published (blocks until it has, as a store get).
  std::function<SocketEndpoint(int rank, int n)> address_of;
  /// Tells incarnation `n` of `rank` which rank hands it over (before the hand-over is sent).
  std::function<void(int rank, int n, int coordinator)> announce;
};

/// The process and dpdk modes' FaultPort (fault_agent.h): detection by the socket transport's
/// callbacks (any thread), the Gloo group rebuilt under new store prefixes, restarted processes
/// revived at their new addresses, the rank's own log, the wall clock, full recovery over the
/// store.
class SocketFaultPort final : public FaultPort {
 public:
  /// The intra-DC group rebuilt with `members` (global ranks, ascending), this rank at `index`,
  /// joined under the store prefix `name` (every member calls it with the same arguments).
  using Regroup = std::function<std::unique_ptr<IntraDc>(const std::vector<int>& members, int index, const std::string& name)>;

  SocketFaultPort(const FaultAgentConfig& cfg, const emu::Clock& clock);
  /// The agent's config as these modes need it: `cfg` with regrow_before_restore set.
  const FaultAgentConfig& config() const { return cfg_; }

  /// The tag of the "recovering" notices (SocketTransportConfig::notice_tag).
  static constexpr uint64_t kRecoveringTag = reserved_tags::kRecovering;
  /// The transport's on_peer_failed (any thread). Before start and after done: ignored.
  void peer_failed(int peer, const std::string& why, std::optional<std::chrono::milliseconds> silent_for,
                   const std::string& how);
  /// The transport's on_notice: `peer` is recovering from the deaths it lists.
  void peer_notice(int peer, const std::vector<uint8_t>& bytes);
  /// The transport whose receives a declaration interrupts, and the peer timeout it was given.
  void attach(SocketTransport& sock, std::chrono::milliseconds peer_timeout);
  /// The intra-DC group the port now owns (destroyed and rebuilt on shrink) and how to rebuild it.
  void adopt_group(std::unique_ptr<IntraDc> group, Regroup regroup);
  /// Every rank's transport address now (the start's; restarts update it).
  void set_endpoints(std::vector<SocketEndpoint> endpoints, RestartIo io);
  /// At the start line, `t0` on the clock: detections count from then (a restarted rank: its
  /// predecessor's start).
  void started(Nanos t0);
  /// Whether a restart of this rank follows its kill at `step` (its process comes back).
  bool restarted_after(int step) const;
  /// The incarnation of `rank` alive after boundary `steps` (0: its first process).
  int incarnation_at(int rank, int steps) const;
  /// What this rank saw (its rank file's "faults").
  model::RankFaultLog log() const;
  /// Whether this run's kills can cross faults.full_recovery.above_fraction.
  bool full_recovery_possible() const;
  /// Whether they can, and the dead are then restarted ("then": "restarts").
  bool full_recovery_restarts() const;
  /// A full recovery's restarted process, handed its group (after enable_full_recovery): waits
  /// until it is up, restart_after after the decision (a replacement's declared start-up), and
  /// records that (its log's up_at_s).
  void await_restarted_up();
  /// Full recovery over the run's store, its keys under `key` (the run's prefix): before start(),
  /// or on a full recovery's restarted rank once handed its group (await_restarted_up).
  void enable_full_recovery(std::shared_ptr<StoreHandle> store, std::string key);
  /// At step boundary `steps` (steps done, before any checkpoint of it is restored): whether every
  /// survivor goes back here. Publishes the boundary until a decision is known; throws RunError if
  /// this rank is already past the decided boundary (it cannot be: see the file's comment).
  bool rewind_due(int steps);
  /// Going back at `steps` to the checkpoint after `checkpoint_step` steps, whose state was taken
  /// at `checkpoint_at` of training time (the report's record).
  void rewinding(int steps, int checkpoint_step, Nanos checkpoint_at);
  /// Whether a collective's abort (Transport::close after a failure) may close the transport: not
  /// while a declared death is being recovered from, nor when one comes within peer_timeout plus
  /// one interval (a Gloo collective can fail on a dead member before the transport has declared
  /// it). Closing then would end the survivors' run instead of letting them shrink.
  bool close_allowed();
  /// Whether the survivors here recovered from `rank`'s death.
  bool recovered_from(int rank) const;
  /// This worker was killed by the timeline (its close() must not say goodbye).
  bool was_killed() const;
  /// A peer of its group was declared dead here (whether recovered from or not): a checkpoint
  /// from now on could not complete (the dead would not write its file).
  bool saw_a_death() const;

  // FaultPort (fault_agent.h).
  Nanos now() override { return clock_.now(); }
  Nanos t0() override;
  size_t record_slow(const model::FaultRecord& r) override;
  void slow_ended(size_t record, double until_s) override;
  void killed(int step, Nanos at) override;  // the log's kill record
  /// The resume in the rank's log, and the group coordinator's count for full recovery.
  void resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group, std::optional<int> took_over) override;
  /// The reporting rank records (rank 0 or, when the timeline kills rank 0, the lowest rank it
  /// never kills; rank 0 records anyway).
  bool record_all() const override { return cfg_.rank == cfg_.plan.first_never_killed(cfg_.groups.layout); }
  /// A kill at a step before `steps` (known to every rank alike) that no full recovery's restart
  /// healed, or any death declared here (a kill at an instant: a rank that has not heard of it
  /// yet still writes its file, which stays without a manifest, as in the embedded mode).
  bool checkpoint_cannot_complete(int steps) const override;
  void rewound() override;
  void step_begins(WorkerEnv& env) override { compute_at_begin_ = env.times.compute_ns; }
  void set_factor(double factor) override { factor_ = factor; }
  /// A slow worker: after each step's compute it waits (factor - 1) times what that compute took.
  void after_compute(WorkerEnv& env) override;
  /// Training is over on this rank (also called when it arrives at the end barrier): peers that
  /// fail from now on are not declared (a lossy link can turn a leaving peer's goodbye into a
  /// reset). Idempotent.
  void done(WorkerEnv& env) override;
  bool fenced() const override { return false; }
  /// A death declared here and not yet recovered from (a bounded wait for its declaration).
  bool death_pending() override;
  std::set<int> declared() override;
  /// Receives from members recovering from what is not handled here are interrupted.
  void handled(const std::set<int>& handled) override;
  /// The Gloo group dropped and the members told "recovering".
  void leave_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) override;
  bool agreement_failed(const TransportError& e) override;
  /// The Gloo group without the dead (a new rendezvous).
  void join_group(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) override;
  /// The grown Gloo group's store prefix as the message's first word.
  RejoinMessage restart_message(WorkerEnv& env, int steps, uint64_t tag_epoch, bool full_recovery) override;
  /// Every rank: the restarted processes at their new addresses (each published it once it was up).
  void revive(const std::vector<int>& back_all, int steps, bool full_recovery) override;
  void take_back(WorkerEnv& env, const GrownGroup& g, const RejoinMessage& m, bool full_recovery) override;
  /// The message with every rank's address, after the announcement in the store.
  void hand_over(WorkerEnv& env, int r, RejoinMessage m, const char* policy, bool from_checkpoint) override;
  /// Heartbeats again on the watched pairs (so that a second death is seen); full recovery waits
  /// for the instant the restarted are up (a group without deaths too, whose leader would
  /// otherwise wait for another DC's in a receive); the Gloo group under the message's prefix.
  void taken_back(WorkerEnv& env, const GrownGroup& g, const RejoinMessage& m, bool full_recovery) override;
  std::set<int> restart_sites(WorkerEnv&, int, const StateBuffers&, const std::set<int>&) override { return {}; }
  RecoveryRestart restarted_by_recovery() override;
  void rejoined(const std::set<int>& handled, int steps) override;

 private:
  bool await_declaration();  // a death declared here and not yet recovered from (bounded wait)
  // Full recovery: a group coordinator's count of the deaths its group agreed on; the one that
  // crosses the threshold decides (marks it, reads every boundary, sets the one to go back at).
  void count_deaths(const std::vector<int>& fresh);
  void refresh_interrupt();  // under mu_: receives from members recovering from what is not handled here
  // The Gloo group rebuilt as `group` (this rank in it) under the store prefix `name`; the old
  // one destroyed first if it is still there.
  void regroup(WorkerEnv& env, const std::vector<int>& group, const std::string& name);
  double secs(Nanos t) const { return std::chrono::duration<double>(t - t0_).count(); }
  int incarnation(int r, int steps, bool full_recovery) const { return full_recovery ? 1 : incarnation_at(r, steps); }

  const FaultAgentConfig cfg_;
  const emu::Clock& clock_;
  SocketTransport* sock_ = nullptr;
  std::chrono::milliseconds peer_timeout_{0};
  std::unique_ptr<IntraDc> group_;
  Regroup regroup_;
  std::vector<SocketEndpoint> endpoints_;
  RestartIo io_;

  mutable std::mutex mu_;  // the fields below
  std::condition_variable declared_cv_;
  bool live_ = false;      // between started() and done()
  Nanos t0_{0};
  std::set<int> declared_;  // watched peers declared dead
  std::set<int> foreign_declared_;  // other DCs' leaders declared dead (recorded only)
  std::set<int> handled_;   // dead peers already recovered from (the agent's)
  std::map<int, std::set<int>> recovering_;  // member -> the deaths its latest notice said it recovers from
  model::RankFaultLog log_;
  double factor_ = 1;          // the compute factor now
  uint64_t compute_at_begin_ = 0;  // env.times.compute_ns when this step's compute began
  // Full recovery (the main thread's only): its decision over the store, whether this rank went
  // back already (once per run).
  std::optional<FullRecoveryBoard> board_;
  bool rewound_ = false;
  std::optional<int> healed_at_;  // the boundary a full recovery's restart healed the kills before
};

/// The process modes' fault agent: the one FaultAgent (fault_agent.h) over a SocketFaultPort. Its
/// restarted rejoin before the checkpoint's state is restored (their Gloo group must exist when the
/// strategy is made again).
struct ProcessFaultAgent {
  ProcessFaultAgent(const FaultAgentConfig& cfg, const emu::Clock& clock)
      : port(cfg, clock), agent(port.config(), port) {}
  SocketFaultPort port;
  FaultAgent agent;
};

}  // namespace geotb::engine
