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
// 16-bit elements (naive_ddp's "wire": "bf16" | "fp16"): the same ring on 2-byte elements (Gloo's
// layout in bytes of elementSize 2), each hop's partial sum rounded back to 16 bits as Gloo's
// float16 sum does (float add, round to nearest even: gloo/types.h float16::operator+=).
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>
#include <vector>

#include "engine/transport/tags.h"
#include "engine/transport/transport.h"
#include "kernels/wire16.h"

namespace geotb::engine {

struct GlooRingOptions {
  size_t max_segment_bytes = 1 << 20;  ///< gloo::AllreduceOptions kMaxSegmentSize
  size_t preamble_bytes = 48;          ///< gloo tcp Op preamble: 6 x size_t
};

/// Segment layout of one allreduce, as Gloo computes it (exposed for tests); `elem_bytes`: the
/// element size (Gloo's elementSize: 4 for float, 2 for a 16-bit float), segments are multiples of it.
struct GlooRingLayout {
  size_t segment_bytes = 0;
  size_t num_segments = 0;
  size_t segments_per_rank = 0;
  size_t iterations_per_phase = 0;  ///< S - S/P + 2
};
GlooRingLayout gloo_ring_layout(size_t total_bytes, size_t ranks, const GlooRingOptions& o = {},
                                size_t elem_bytes = sizeof(float));

/// The segments ring position `pos` sends and receives at iteration i of `phase` (0: reduce-scatter,
/// 1: allgather), as Gloo computes them: byte offsets into the buffer and lengths, a length <= 0
/// meaning nothing moves (Gloo's convention). Shared by the ring and its analytic schedule
/// (collectives/analytic_group.h).
struct GlooRingSegment {
  size_t send_off, recv_off;
  ssize_t send_len, recv_len;
};
GlooRingSegment gloo_ring_segment(const GlooRingLayout& L, size_t total_bytes, size_t pos, int phase, size_t i);

/// Whether Gloo's ring on n elements of `elem_bytes`, scaled to a represented model `scale` times
/// larger (docs/guide/represented.md), is still Gloo's: its layout for the represented size has the same
/// segment count as for n (every segment below max_segment_bytes), so that scaling each segment
/// message is exact. Otherwise Gloo would send more, smaller segments, each with its rendezvous.
bool gloo_ring_represents(size_t n, double scale, size_t ranks, const GlooRingOptions& o = {},
                          size_t elem_bytes = sizeof(float));

/// Tags one gloo_ring_allreduce_sum of n elements of `elem_bytes` over `ranks` ranks uses: one
/// receiver-ready and one data message per sending iteration (the first S - S/P of each phase),
/// 4 (S - S/P) in all, laid out [ready: reduce-scatter, allgather][data: reduce-scatter, allgather].
uint64_t gloo_ring_tag_count(size_t n, size_t ranks, const GlooRingOptions& o = {}, size_t elem_bytes = sizeof(float));

/// In place: data[0..n) becomes the element-wise sum over all ranks in `ring` (ring order; every
/// member calls with the same ring, n, tags and options). Uses the first gloo_ring_tag_count(n,
/// ring.size(), o) tags of `tags`. Throws TagError (before sending anything) if `tags` is smaller;
/// TransportError on a transport failure (after closing the transport so that peers blocked on
/// this rank wake up).
void gloo_ring_allreduce_sum(Transport& t, const std::vector<int>& ring, float* data, size_t n, const TagRange& tags,
                             const GlooRingOptions& o = {});

/// The same on n 16-bit floats of format `w` (kernels/wire16.h): 2 bytes per element on the wire,
/// every partial sum rounded to `w`. Uses the first gloo_ring_tag_count(n, ring.size(), o, 2) tags.
void gloo_ring_allreduce_sum(Transport& t, const std::vector<int>& ring, uint16_t* data, size_t n, kernels::Wire16 w,
                             const TagRange& tags, const GlooRingOptions& o = {});

}  // namespace geotb::engine
