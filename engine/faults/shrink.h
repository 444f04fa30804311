// Policy shrink's pieces that do not depend on how a mode runs its workers: who is in a rank's
// group, the survivors' agreement on the step in flight and on who is dead, and the dead
// workers' data for faults.shard "redistribute". The fault agent (fault_agent.h) uses them in every
// mode (embedded: threads on the virtual clock; process and dpdk: one OS process per rank), so a
// kill is decided alike in every mode. No libtorch here.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "engine/transport/transport.h"
#include "model/rank_layout.h"

namespace geotb::engine {

/// Rank layout of a run for the fault agents.
struct FaultGroups {
  model::RankLayout layout;  ///< the ranks of every DC
  bool world_group = false;  ///< naive_ddp, lan: one group of every rank; else one per DC

  int world() const { return layout.world(); }
  /// The group of `rank` without `dead`, ascending: every rank (world group) or its DC's.
  std::vector<int> group_of(int rank, const std::set<int>& dead) const;
  /// The peers `rank` watches by heartbeats: its group's other members and, for a DC leader of
  /// per-DC groups, the other DCs' leaders.
  std::vector<int> watched_by(int rank) const;
  /// Whom `observer` asks about a suspect `peer` (heartbeat.h's indirect probes), at most `k`:
  /// the lowest rank of each site other than both of theirs (another WAN path to the peer's site),
  /// at most one such site when the peer's site has other members, then the peer's own site
  /// members in rank order (they reach it over their LAN), never the observer or the peer.
  std::vector<int> witnesses(int observer, int peer, int k) const;
  /// Those of them outside its group (the other DCs' leaders): their deaths are recorded only.
  std::set<int> watched_outside_group(int rank) const;
  /// Every rank of the other data centers, ascending: whom a leader's successor tells.
  std::vector<int> other_dcs(int rank) const;
};

/// How many of its last messages to each rank of another DC a rank keeps while a DC leader's
/// kill is planned (Transport::take_over): an exchange round sends one message per peer leader,
/// and a successor needs at most the round in flight and the one its peers may have sent since;
/// 4 leaves a margin.
inline constexpr size_t kKeptForSuccessor = 4;

/// Per-DC groups (not `g.world_group`) whose leader is in `dead`, after the survivors of
/// `group` agreed: the lowest survivor leads the DC from now on (dc_leaders updated on every
/// survivor) and, on that rank, takes over the dead leader's address through `net`, telling
/// every rank of the other DCs. Returns the dead leader if this rank took it over.
std::optional<int> take_over_dead_leader(Transport& net, const FaultGroups& g, int rank, std::vector<int>& dc_leaders,
                                         const std::set<int>& dead, const std::vector<int>& group);

/// A list of integers as the fault agents' messages carry it (8 bytes each, host order: every
/// rank of a run is the same build), and back.
std::vector<uint8_t> encode_ints(const std::vector<int64_t>& v);
std::vector<int64_t> decode_ints(const std::vector<uint8_t>& b);

/// The peers newly declared dead: those of `declared` not in `handled`, ascending. Throws
/// RunError if one of them is outside `rank`'s group (another DC's leader, which a DC leader of
/// per-DC groups watches): shrink recovers inside a group only.
std::vector<int> fresh_deaths(const FaultGroups& g, int rank, const std::set<int>& declared, const std::set<int>& handled);

/// `ring` without the ranks in `dead`, in its order.
std::vector<int> ring_without(const std::vector<int>& ring, const std::set<int>& dead);

/// The survivors of `group` agree on the step in flight (`step`) and on the dead set: the group's
/// lowest rank collects every member's view and answers it. Throws RunError naming both views on
/// a disagreement; the transport's errors (PeerDeclaredDead when another member dies meanwhile)
/// propagate. Tags are outside every range a Transport user may take, named by the dead set, so
/// that a survivor that has not yet declared every death asks under a tag nobody answers until
/// it has.
void agree_on_group(Transport& net, int rank, const std::vector<int>& group, int step, const std::set<int>& dead);

/// faults.shard "redistribute": `shard` grown by this rank's part of each newly dead DC peer's
/// shard (`fresh`; `shards` holds every rank's shard now, `dead` every rank declared so far).
/// The survivors of the dead rank's DC split its shard round-robin in rank order.
std::vector<uint32_t> inherit_shards(const FaultGroups& g, int rank, std::vector<uint32_t> shard,
                                     const std::vector<std::vector<uint32_t>>& shards, const std::set<int>& dead,
                                     const std::vector<int>& fresh);

/// The sampler stream of `rank`'s shard as grown by "redistribute" after `epoch` membership changes
/// agreed (1, 2, ...), and of that shard walked afresh after a full recovery's rewind. Both modes'
/// agents number their samplers with these, so that their runs train on the same batches.
uint64_t redistributed_stream(int rank, int world, int epoch);
uint64_t rewound_stream(int rank, int world, int epoch);

}  // namespace geotb::engine
