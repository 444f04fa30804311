// A restarted worker's way back into its group (timeline `restart` at a step boundary), the part
// both modes share: the message its group's coordinator sends it (where it starts, the state it
// starts from), who that coordinator is, and what of the handed state stays its own (its data,
// its series). The fault agent (fault_agent.h) hands it over its port: the embedded fabric
// (fault_runtime.h), or the socket transport to the worker's new process (socket_port.h). No
// libtorch here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/checkpoint/state.h"
#include "engine/strategy.h"
#include "engine/transport/tags.h"
#include "model/faults.h"
#include "model/rank_layout.h"

namespace geotb::engine {

struct WorkerRecord;
class BatchSampler;
struct FaultGroups;

/// The tag of the hand-over message: outside every range a Transport user takes, beside the
/// heartbeats' (heartbeat.h) and the recovering notices' (socket_port.h).
inline constexpr uint64_t kRejoinTag = reserved_tags::kRejoin;

/// What the coordinator tells a restarted worker.
struct RejoinMessage {
  uint64_t tag_epoch = 0;     ///< the tag epoch every rank moved to at the boundary
  uint64_t group_tags = 0;    ///< tags the intra-DC group had used (embedded: join_transport_group)
  int steps = 0;              ///< the boundary (steps done)
  std::vector<int> members;   ///< the grown group, ascending
  std::vector<int> ring;      ///< the live ranks' ring (naive_ddp)
  /// Process modes: the grown Gloo group's store prefix, then every rank's transport address
  /// ("host:port", the current incarnation's). Empty in the embedded mode.
  std::vector<std::string> words;
  StateBuffers state;         ///< the coordinator's worker state at the boundary (empty: none)
};

/// As bytes, and back (RunError "restart: the state handed over is truncated" on a short message).
std::vector<uint8_t> encode_rejoin(const RejoinMessage& m);
RejoinMessage decode_rejoin(const std::vector<uint8_t>& bytes);

/// The timeline's restarts as every rank sees them (they are at a step: scenario validation):
/// boundary -> the ranks restarted there, and the tag epoch every rank moves to at each
/// boundary, 1, 2, ... in boundary order.
struct RestartSchedule {
  std::map<int, std::vector<int>> ranks_at;
  std::map<int, uint64_t> epoch_at;
};
RestartSchedule restart_schedule(const model::FaultPlan& plan, const model::RankLayout& layout);

/// `ring` grown by the ranks of `back`, in rank order, without those in `dead` (ranks [0, world)).
std::vector<int> ring_with(const std::vector<int>& ring, const std::vector<int>& back, const std::set<int>& dead,
                           int world);

/// A restart's boundary on one rank, every mode alike: the restarted workers taken back at once.
struct GrownGroup {
  std::vector<int> back;   ///< this rank's group members among the restarted it had recovered from, ascending
  std::vector<int> group;  ///< its group with them again (without the others still dead), ascending
  std::vector<int> ring;   ///< `ring` with them again, in rank order
};
/// Of `back_all` (every worker restarted at the boundary), the members of `rank`'s group that it had
/// recovered from (in `handled`; they are erased from it), and the grown group and ring. All are
/// taken back together, so that each restarted worker's coordinator hands it the same group the
/// others build (nothing changes when `back` is empty: another group's restart).
GrownGroup grow_group(const FaultGroups& groups, int rank, const std::vector<int>& back_all, std::set<int>& handled,
                      const std::vector<int>& ring);

/// The member of `group` that tells restarted worker `r` where to start: the lowest one in r's
/// data center not in `excluded` (r itself, the others restarted at the same boundary), else the
/// lowest not in it; -1 if none.
int rejoin_coordinator(int r, const model::RankLayout& layout, const std::vector<int>& group, const std::set<int>& excluded);

/// The restarted worker walks its own shard afresh (not the coordinator's position): `state`'s
/// sampler entries replaced by a new BatchSampler over `shard` on the stream rank + world *
/// (steps + 1).
void own_sampler(StateBuffers& state, const std::vector<uint32_t>& shard, uint64_t seed, int rank, int world, int steps);

/// A restarted worker's series: its own loss up to its kill (`own_loss`), NaN from the kill to
/// the boundary `back_at`, then what it trains; its own step-end times (`own_ends`) before the
/// boundary. Applied to the record the handed state restored.
void keep_own_series(WorkerRecord& w, const std::vector<double>& own_loss, const std::vector<double>& own_ends,
                     int killed_at, int back_at);

/// What a restarted worker keeps of its first life (its predecessor's, in the process modes).
struct FirstLife {
  WorkerTimes times;                      ///< the time accounting up to its kill
  std::vector<ExchangeRecord> exchanges;  ///< the exchange log up to its kill
  /// Back from another worker's state (a timeline restart): its own series are kept
  /// (keep_own_series) with these. Back from its own checkpoint (a full recovery's restart): the
  /// checkpoint's series are its own already.
  struct Series {
    std::vector<double> loss, step_end_s;
    int killed_at = 0, back_at = 0;
  };
  std::optional<Series> series;
};
/// The restarted worker's WorkerLoopHooks::after_resume, in every mode: once the state it came
/// back from is restored, its times and exchange log are its first life's, and its series too
/// when `life.series` says so.
std::function<void(WorkerEnv&, BatchSampler&, WorkerRecord&)> keep_first_life(FirstLife life);

}  // namespace geotb::engine
