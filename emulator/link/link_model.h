// The WAN link model: one direction of one link between two data centers.
//
// Pure: no clock, no threads, no I/O. The caller passes the time of every event (`now`, in
// nanoseconds on whatever clock it uses: TSC in the DPDK data plane, steady_clock in the
// in-process transport, a fake clock in tests) and the random stream is injected at construction.
//
// A frame offered at `now` goes through, in order:
//   1. scheduled changes whose instant is <= now are applied (each change atomically);
//   2. link state: a frame offered while the link is down is dropped (kDropLinkDown);
//   3. bounded bottleneck queue, drop-tail, in bytes and in frames: the queue holds every frame
//      not yet fully serialized (depart > now); a frame that would exceed either limit is dropped
//      (kDropQueueBytes / kDropQueuePackets) and does not occupy the serializer;
//   4. serializer: depart = max(now, last_depart) + (bytes + overhead_bytes) * 8 / rate_bps;
//      the serializer keeps time in picoseconds internally and reports depart rounded to the
//      nearest nanosecond, so rounding never accumulates (a 10 Gbit/s link carrying 64-byte
//      frames, 81.6 ns each, achieves exactly 10 Gbit/s, not 82 ns per frame);
//   5. loss on the path (Bernoulli, or 4-parameter Gilbert-Elliott): a lost frame has used the
//      serializer but is not released (kDropLoss);
//   6. propagation: release = depart + delay + jitter; without `reorder`, release is clamped to
//      be >= the previous release so frames never overtake each other;
//   7. duplication and corruption flags for the data plane to act on.
// Outages cut the fibre: when the link goes down at instant T (a scheduled change up=false on a
// link that was up), every frame still on it is lost, whatever its verdict said at offer time:
//   - frames whose release time is after T (queued behind the serializer, being serialized, or
//     propagating) are lost; frames released at or before T were delivered;
//   - the serializer and the bottleneck queue are emptied at T (the next frame after the link
//     comes back starts on an idle serializer), and the no-reordering clamp forgets the lost
//     frames' release times.
// The model does not hold frames in flight, so it cannot drop them itself: whoever holds them (the
// data plane's delay line) calls take_cut() after offer()/advance(), drops every frame with
// release > the returned instant (a holder that settles a frame's fate at offer time, the
// in-process MessageLink, compares its release with next_cut() instead), and reports how many
// through count_lost_in_flight(), which moves them from `delivered` to drops[kDropLinkDown]
// (`lost_in_flight` says how many of those were cut in flight rather than offered while down).
// lost_to_cut() states the rule.
// Single-threaded: callers serialise access (one model object per direction and DC pair).
// Allocation: offer() allocates only when the bottleneck queue grows past its largest size so far
// (reserve() it up front, e.g. to the data plane's mbuf count, and it never allocates).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/link_config.h"
#include "common/random.h"

namespace geotb::emu {

enum class Fate : uint8_t { kDelivered = 0, kDropLinkDown, kDropQueueBytes, kDropQueuePackets, kDropLoss };
inline constexpr int kNumFates = 5;
const char* fate_name(Fate f);

struct Verdict {
  Fate fate = Fate::kDelivered;
  Nanos depart{0};    ///< end of serialization (valid for kDelivered and kDropLoss)
  Nanos release{0};   ///< when the frame leaves the delay line (valid for kDelivered)
  bool duplicate = false;
  bool corrupt = false;
};

struct LinkStats {
  uint64_t offered = 0;
  uint64_t offered_bytes = 0;
  uint64_t delivered = 0;
  uint64_t delivered_bytes = 0;
  uint64_t drops[kNumFates] = {};  ///< indexed by Fate; drops[kDelivered] stays 0
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t changes_applied = 0;
  uint64_t lost_in_flight = 0;     ///< of drops[kDropLinkDown]: delivered at offer, then cut (count_lost_in_flight)
  uint64_t total_drops() const;
};

class LinkModel {
 public:
  /// Throws std::invalid_argument naming the field if `cfg` is invalid (see validate()).
  LinkModel(const LinkConfig& cfg, RandomStream rng);

  /// Returns an empty string if valid, else "field: value: why".
  static std::string validate(const LinkConfig& cfg);

  /// Offer one frame of `bytes` (L2 payload without the wire overhead) at time `now`.
  /// A `now` earlier than a previous call's is taken as that latest time (the model's time
  /// never runs backwards; callers sharing one direction need not agree to the nanosecond).
  Verdict offer(Nanos now, uint32_t bytes);

  /// A bulk transfer (the fluid model of a large message, MessageLink): `frames` frames of
  /// `bytes` L2 bytes in all (without the wire overhead), offered back to back from `now` after
  /// whatever the serializer holds. They are serialized at min(the link's rate, `max_rate_bps`)
  /// (a window-limited sender), following the scheduled rate changes; an outage pauses the transfer
  /// until the sender's first retransmission after the link is back (RTO `rto` from the outage's
  /// start, doubling per attempt, at most `max_attempts`: past them the transfer fails). Loss adds
  /// the expected retransmissions, frames * q / (1 - q) at the loss rate q in force at the start
  /// (Gilbert-Elliott: its stationary rate), to what is serialized. No jitter, no queue limits, no
  /// random draws: the link's random stream is left where it was. The serializer is busy until
  /// the last frame has left; the link's own time does not move. A frame offered while a bulk
  /// transfer holds the serializer (an ACK, another connection's segment) is interleaved with it:
  /// it is serialized at once, on a lane of its own, instead of after the whole transfer (the
  /// transfer is not delayed by it: frames are small against it). A bulk transfer offered then
  /// queues behind it. The scheduled changes are read, not applied.
  /// `rounds` > 1: the transfer is that many equal parts, each a dependent step of a chain (a
  /// bucketed allreduce's ring steps: the next part leaves when the previous one has arrived and
  /// the peer's answer has come back the same way); the serializer idles between two parts for the
  /// one-way delay in force when the first of them left.
  struct Bulk {
    bool delivered = false;
    Nanos begin{0};             ///< the first frame's start of serialization
    Nanos depart{0};            ///< the last frame's end of serialization (failure: when it was given up)
    Nanos release{0};           ///< depart + the delay in force then
    uint64_t transmissions = 0; ///< frames serialized, expected retransmissions included
    uint64_t wire_bytes = 0;    ///< their bytes with the per-frame overhead
  };
  Bulk offer_bulk(Nanos now, uint64_t frames, uint64_t bytes, double max_rate_bps, Nanos rto, uint32_t max_attempts,
                  uint64_t rounds = 1);

  /// Schedule a change; changes may be added in any order and are applied in time order
  /// (ties in insertion order). Throws std::invalid_argument if it makes the config invalid.
  void schedule(const LinkChange& change);
  /// Apply every scheduled change with at <= now (offer() does this itself).
  void advance(Nanos now);
  /// Instant of the next pending change, if any.
  std::optional<Nanos> next_change() const;
  /// Instant of the next scheduled outage start (a pending change taking the link from up to
  /// down, following the pending changes from the current state), if any. A holder that decides
  /// a frame's fate at offer time (MessageLink) uses it with lost_to_cut().
  std::optional<Nanos> next_cut() const;

  /// The instant of the earliest outage start (up -> down) applied since the last call, if any;
  /// clears it. Several outages between two calls: the earliest, which cuts a superset of what
  /// the later ones cut (every frame in flight was offered before all of them).
  std::optional<Nanos> take_cut();
  /// A frame with this verdict is lost to a cut at `cut`: it was delivered at offer and is
  /// released after the cut.
  static bool lost_to_cut(const Verdict& v, Nanos cut) { return v.fate == Fate::kDelivered && v.release > cut; }
  /// The holder of frames in flight dropped `frames` delivered frames (not duplicates) of
  /// `bytes` (as offered) to a cut.
  void count_lost_in_flight(uint64_t frames, uint64_t bytes);

  const LinkConfig& config() const { return cfg_; }
  const LinkStats& stats() const { return stats_; }
  /// Frames and bytes in the bottleneck queue at `now` (not yet fully serialized).
  uint32_t queued_packets(Nanos now);
  uint64_t queued_bytes(Nanos now);
  /// Time the serializer becomes idle (rounded to the nanosecond).
  Nanos busy_until() const { return last_depart_ + Nanos{last_depart_ps_ >= 500 ? 1 : 0}; }
  /// Pre-size the bottleneck queue bookkeeping for `frames` frames so offer() never allocates.
  void reserve(size_t frames);
  bool in_bad_state() const { return ge_bad_; }

 private:
  void apply(const LinkChange& c);
  void drain(Nanos now);
  bool lose();
  Nanos jitter();

  LinkConfig cfg_;
  RandomStream rng_;
  LinkStats stats_;
  std::vector<LinkChange> pending_;  // sorted by at, stable
  size_t next_pending_ = 0;
  Nanos last_now_{0};
  Nanos last_depart_{0};      // serializer busy-until, whole nanoseconds ...
  int64_t last_depart_ps_ = 0;  // ... plus picoseconds [0, 1000)
  Nanos last_release_{0};
  Nanos bulk_until_{0};          // a bulk transfer holds the serializer until then (offer_bulk)
  Nanos lane_depart_{0};         // frames interleaved with it: their own serializer
  struct Queued { Nanos depart; uint32_t bytes; };
  // FIFO of frames not yet fully serialized: a power-of-two ring that only ever grows.
  std::vector<Queued> ring_;
  size_t head_ = 0, size_ = 0;
  void push(Queued q);
  uint64_t queue_bytes_ = 0;
  bool ge_bad_ = false;
  std::optional<Nanos> cut_;  // earliest outage start not yet taken
};

}  // namespace geotb::emu
