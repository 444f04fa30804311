// Gloo's ring allreduce (gloo/allreduce.cc, the algorithm c10d ProcessGroupGloo runs for a dense
// CPU allreduce, hence what torch DDP does on CPU), executed message by message over the engine
// Transport so every WAN-crossing message pays the emulated link:
//
//  * the buffer is cut into S = roundUp(max(ceil(bytes / seg), 2P), P) segments of
//    seg = min(ceil(bytes / 2P), max_segment_bytes) bytes (1 MiB in Gloo), S/P per rank;
//  * reduce-scatter then allgather, each S - S/P + 2 iterations; iteration i posts a receive of
//    one segment from ring successor and a send of one segment to ring predecessor, then waits
//    for the receive and the send posted at iteration i - 2 (two operations in flight);
//  * Gloo's TCP transport sends an unbound buffer only once the receiver has posted the matching
//    receive: posting a receive sends a NOTIFY_RECV_READY control message (48-byte preamble) to
//    the sender, whose device thread writes the data (48-byte preamble + segment) when that
//    notification arrives. Across a WAN hop every segment therefore costs a round trip on the
//    critical path, which is what makes Gloo slow on high-latency links.
// The NOTIFY_SEND_READY message Gloo also sends (48 bytes, bookkeeping only, gates nothing) is
// not modelled. Data direction, segment offsets and the iteration schedule follow Gloo exactly;
// the element-wise sums are in Gloo's order (own contribution + partial sum from the successor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/transport/tags.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

struct GlooRingOptions {
  size_t max_segment_bytes = 1 << 20;  ///< gloo::AllreduceOptions kMaxSegmentSize
  size_t preamble_bytes = 48;          ///< gloo tcp Op preamble: 6 x size_t
};

/// Segment layout of one allreduce, as Gloo computes it (exposed for tests).
struct GlooRingLayout {
  size_t segment_bytes = 0;
  size_t num_segments = 0;
  size_t segments_per_rank = 0;
  size_t iterations_per_phase = 0;  ///< S - S/P + 2
};
GlooRingLayout gloo_ring_layout(size_t total_bytes, size_t ranks, const GlooRingOptions& o = {});

/// Whether Gloo's ring on n floats, scaled to a represented model `scale` times larger
/// (docs/guide/represented.md), is still Gloo's: its layout for the represented size has the same
/// segment count as for n (every segment below max_segment_bytes), so that scaling each segment
/// message is exact. Otherwise Gloo would send more, smaller segments, each with its rendezvous.
bool gloo_ring_represents(size_t n, double scale, size_t ranks, const GlooRingOptions& o = {});

/// Tags one gloo_ring_allreduce_sum of n floats over `ranks` ranks uses: one receiver-ready and
/// one data message per sending iteration (the first S - S/P of each phase), 4 (S - S/P) in all,
/// laid out [ready: reduce-scatter, allgather][data: reduce-scatter, allgather].
uint64_t gloo_ring_tag_count(size_t n, size_t ranks, const GlooRingOptions& o = {});

/// In place: data[0..n) becomes the element-wise sum over all ranks in `ring` (ring order; every
/// member calls with the same ring, n, tags and options). Uses the first gloo_ring_tag_count(n,
/// ring.size(), o) tags of `tags`. Throws TagError (before sending anything) if `tags` is smaller;
/// TransportError on a transport failure (after closing the transport so that peers blocked on
/// this rank wake up).
void gloo_ring_allreduce_sum(Transport& t, const std::vector<int>& ring, float* data, size_t n, const TagRange& tags,
                             const GlooRingOptions& o = {});

}  // namespace geotb::engine
