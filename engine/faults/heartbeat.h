// Per-peer heartbeats over the emulated transport (the embedded mode's fabric, virtual time):
// one monitor actor per worker sends a small message to every peer it watches every `interval`
// and receives theirs. A peer silent for `timeout` (since its last heartbeat arrived, or since the
// start) is suspected and probed (a datagram its monitor answers with a heartbeat at once) every
// quarter interval, directly and through its witnesses (below); still silent `confirmation` later
// it is declared dead: the detection is recorded and the worker's pending and future receives are
// interrupted (Fabric::raise_alarm), so a worker blocked on the dead peer wakes up and recovers
// (engine/faults/fault_runtime.h). A heartbeat arriving in between clears the suspicion: a
// congested or lossy link is not a dead node. The heartbeats are UDP-like datagrams on the fabric
// (Fabric::send_datagram): they pay the link's rate, delay, jitter, loss and outages on a queue of
// their own (not behind the bulk data's TCP retransmissions), a lost one is not resent, and their
// bytes count in the WAN figures.
//
// Indirect probes (cfg.witnesses > 0). One path's silence is not a death: a lossy or cut WAN path
// loses heartbeats and probes alike, and a live worker declared dead is fenced. So the observer
// also sends each probe round a request (SWIM's ping-req: Das, Gupta, Motivala, "SWIM: Scalable
// Weakly-consistent Infection-style Process Group Membership Protocol", DSN 2002, section 3.1) to
// the suspect's witnesses (FaultGroups::witnesses: its site members over their LAN, a rank of a
// third site). A witness probes the suspect itself and answers "alive" as soon as the suspect
// answers it, or "not reached" (Lifeguard's nack: Dadgar, Phillips, Currey, "Lifeguard: Local
// Health Awareness for More Accurate Failure Detection", DSN-W 2018) when it has not within a
// quarter interval, or at once when it has declared the suspect dead itself. "Alive" counts as
// hearing the suspect. The suspect is declared dead when the confirmation is over and a witness
// could not reach it either (how "witness"), or it has no witness (how "silence"). Without any
// answer (the observer's own path is in doubt) it stays suspected, and is declared `unreachable`
// after the suspicion began (how "unreachable": its whole site dead, or cut off for that long).
//
// Detection latency (kill -> declared) is at most timeout + confirmation + the last heartbeat's
// one-way delay, and at least timeout + confirmation - interval, when a witness's "not reached"
// arrives within the confirmation (a request and its answer: one round trip to the witness and a
// quarter interval; each round lost to the WAN adds a quarter interval), or there is no witness.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "emulator/inproc/virtual_time.h"
#include "engine/transport/tags.h"
#include "model/faults.h"

namespace geotb::engine {

/// The heartbeat tag: outside every range a Transport user may take (transport/tags.h: [0, 2^63)).
inline constexpr uint64_t kHeartbeatTag = reserved_tags::kHeartbeat;

class HeartbeatMonitor {
 public:
  using Nanos = std::chrono::nanoseconds;
  /// Called (on the monitor's thread, without locks held) for each declaration.
  using OnDeclared = std::function<void(const model::Detection&)>;

  /// `foreign`: peers of `peers` outside the worker's group (the other DCs' leaders a DC leader
  /// watches): their declaration is recorded (on_declared) but neither raises the alarm nor
  /// enters declared(): their data center recovers on its own, and a survivor takes over the
  /// dead leader's address (Transport::take_over).
  /// `witnesses`: whom to ask about each peer of `peers` (none: its own silence decides).
  HeartbeatMonitor(emu::Fabric& fabric, emu::VirtualScheduler& sched, int rank, std::vector<int> peers,
                   const model::HeartbeatConfig& cfg, bool interrupt_all, OnDeclared on_declared,
                   std::set<int> foreign = {}, std::map<int, std::vector<int>> witnesses = {});
  ~HeartbeatMonitor();
  HeartbeatMonitor(const HeartbeatMonitor&) = delete;
  HeartbeatMonitor& operator=(const HeartbeatMonitor&) = delete;

  /// Creates the monitor's actor and thread, waiting (holding nobody back) for start(). Call in
  /// rank order before the run's threads start, so that actor ids (the scheduler's tie-break
  /// between instants) do not depend on the host.
  void create();
  /// Starts the monitor at virtual instant `t0` (the start of training: every peer counts as
  /// heard then). Times in detections are seconds since `origin`.
  void start(Nanos t0, Nanos origin);
  /// Stops it (from any thread of the worker) and joins it. Idempotent.
  void stop();
  /// This worker died and will be restarted: the monitor stops watching (its endpoint is dead, so
  /// its heartbeats go nowhere) and waits, holding nobody back, until unmute().
  void mute();
  /// The worker is back at `at`: every peer counts as heard then, but those of `gone` (dead in its
  /// group's view while it was: the hand-over's members leave them out), which count as declared
  /// already and are not watched (no second declaration, no alarm) until revive_peer().
  void unmute(Nanos at, const std::set<int>& gone = {});
  /// Peer `p` is back at `at` (a restart): watched again, as heard then; no longer declared.
  void revive_peer(int p, Nanos at);
  /// Peers declared dead so far.
  std::set<int> declared() const;
  /// The same, and the worker's alarm cleared, in one step with the declarations: a peer declared
  /// after it raises a new alarm; none before it is left with a stale one. (Reading the set, then
  /// clearing, could lose an alarm raised in between: the survivor would then wait in its
  /// agreement for a member that waits under the larger dead set's tag.)
  std::set<int> declared_clearing_alarm();
  uint64_t sent() const;

 private:
  void run(Nanos t0);

  emu::Fabric& fabric_;
  emu::VirtualScheduler& sched_;
  const int rank_;
  const std::vector<int> peers_;
  const model::HeartbeatConfig cfg_;
  const bool interrupt_all_;  // Fabric::raise_alarm's `all`: the worker's group spans the sites
  const std::set<int> foreign_;
  const std::map<int, std::vector<int>> witnesses_;
  OnDeclared on_declared_;
  Nanos origin_{0};
  emu::VirtualScheduler::ActorId actor_ = -1;
  bool stop_ = false;  // changed in sched_.update(), read by recv_any's stop()
  bool exited_ = false;  // the monitor's thread is past its loop (set in sched_.update())
  std::optional<Nanos> start_at_;  // set by start(), in sched_.update()
  bool muted_ = false;                 // these three: changed and read in sched_.update()/wait()
  std::optional<Nanos> unmute_at_;
  std::set<int> unmute_gone_;
  std::vector<std::pair<int, Nanos>> revived_;  // peers back, applied at the loop's next turn
  mutable std::mutex mu_;
  std::set<int> declared_;
  uint64_t sent_ = 0;
  emu::ActorThread th_;
};

}  // namespace geotb::engine
