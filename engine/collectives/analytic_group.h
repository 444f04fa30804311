// IntraDc computed instead of messaged: the scenario's `lan.collectives: "analytic"`
// (docs/guide/scale.md). A collective of the group (allreduce, broadcast, a leader's forward of
// payloads: IntraDc::forward) is one event, not messages over the fabric's LAN connections:
//
//  * the sums are Gloo's, to the bit: the last member to arrive runs the ring's data flow over
//    every member's buffer (the same segments or chunks, the same additions in the same order:
//    Gloo's ring where transport_group.h runs it, the eager ring where that runs the eager one),
//    then the mean as c10d computes it;
//  * its instants are the ring's schedule evaluated on a link model without messages: every
//    message costs its serialization (payload and, per started MSS, the TCP/IP header and the
//    link's frame overhead, at the LAN's rate) behind the previous message on the same directed
//    pair, plus the LAN's one-way delay; Gloo's rendezvous (receiver-ready, then the segment, two
//    operations in flight, the device thread's send order) and each member's reduction cost (its
//    compute profile) are followed exactly. Not modelled: TCP's congestion and receive windows,
//    ACK frames, the LAN's loss, jitter and queue limit (refused), and traffic of other
//    operations on the same pairs.
//
// So a member's collective costs the host O(its share of the data) and no scheduler event per
// message: the host time per worker-step stays flat in the workers per site, where the message
// model grows with them (its ring has 4 (N - 1) messages per worker). Virtual time only; not with
// node faults (a dead member's group is the message model's). No libtorch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/collectives/intra_dc.h"
#include "engine/sync.h"

namespace geotb::engine {

/// What a message costs on a LAN pair in the analytic model.
struct LanCost {
  double rate_bps = 0;                ///< 0: unlimited
  std::chrono::nanoseconds delay{0};  ///< one way
  uint32_t mss_bytes = 1448;          ///< payload bytes per TCP segment
  uint32_t header_bytes = 52;         ///< TCP/IP header bytes per segment
  uint32_t overhead_bytes = 38;       ///< the link's per-frame overhead
  /// Serialization of a message of `payload` bytes: max(1, ceil(payload / mss)) frames.
  std::chrono::nanoseconds serialize(uint64_t payload) const;
};

/// The shared side of one analytic group: created once per group before its members start, and
/// handed to each member. `done` and `arrive`: two Syncs of the members' time domain
/// (Transport::make_sync of one virtual-time transport, whose scheduler's lock guards both): the
/// members wait on `done`, and arrive and leave through `arrive`. `scale`: the transport's
/// represent_scale() (message bytes are the represented model's).
class AnalyticHub;
std::shared_ptr<AnalyticHub> make_analytic_hub(std::unique_ptr<Sync> done, std::unique_ptr<Sync> arrive,
                                               const LanCost& lan, int size, double scale);

/// Member `index` of the hub's group. `reduce_cost(elements)`: this member's declared cost of
/// reducing that many of the trained model's elements (ComputeProfile::cost of Work::kReduce at
/// the represented scale), charged where Gloo's ring charges it. Operations must be called in the
/// same order by every member (as for a transport group); a mismatch is a CollectiveError.
std::unique_ptr<IntraDc> make_analytic_group(std::shared_ptr<AnalyticHub> hub, int index,
                                             std::function<std::chrono::nanoseconds(uint64_t)> reduce_cost);

/// The schedules, exposed for tests. `arrive[r]`: when ring position r calls; returns when each
/// returns. `reduce_cost[r]`: position r's cost of reducing that many elements. `free[r]`: the
/// instant the pair r -> r + 1 (index 2r) and r -> r - 1 (index 2r + 1) is free (kept across calls).
struct RingClock {
  const LanCost* lan = nullptr;
  std::vector<std::function<std::chrono::nanoseconds(uint64_t)>> reduce_cost;
  std::vector<std::chrono::nanoseconds>* free = nullptr;
};
/// Gloo's ring (collectives/gloo_ring.h) on n floats, each segment message standing for `scale`
/// times its payload (preamble unscaled), as transport_group.h runs it when gloo_ring_represents.
std::vector<std::chrono::nanoseconds> gloo_ring_schedule(const std::vector<std::chrono::nanoseconds>& arrive, size_t n,
                                                         double scale, const RingClock& c);
/// The eager ring (collectives/ring_allreduce.h) on n floats: chunk c's message carries
/// `chunk_bytes(c)` bytes standing for `rounds` dependent transfers (each paying the delay).
std::vector<std::chrono::nanoseconds> eager_ring_schedule(const std::vector<std::chrono::nanoseconds>& arrive, size_t n,
                                                          const std::function<uint64_t(size_t)>& chunk_bytes,
                                                          uint64_t rounds, const RingClock& c);

}  // namespace geotb::engine
