// Ring allreduce over the engine Transport: reduce-scatter then allgather, 2(p-1) steps, each
// rank sending n/p elements per step to its successor. This is what Gloo's and NCCL's ring
// algorithms do; running it over the Transport makes every hop pay its link (a hop that crosses
// data centers pays the WAN, every step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/transport/tags.h"
#include "engine/transport/transport.h"
#include "kernels/wire16.h"

namespace geotb::engine {

/// In place: data[0..n) becomes the element-wise sum over all ranks in `ring`.
/// `ring` lists the participating ranks in ring order and must contain t.rank(); every member
/// calls with the same ring, n and tags. Uses the first ring_allreduce_tag_count(ring.size()) tags
/// of `tags`: reduce-scatter step s tag s, allgather step s tag p - 1 + s.
/// Throws TagError (before sending anything) if `tags` is smaller, TransportError on a transport
/// failure.
void ring_allreduce_sum(Transport& t, const std::vector<int>& ring, float* data, size_t n, const TagRange& tags);

/// What the data stands for on the network when it is not what it carries: a group of a bucketed
/// allreduce of a represented model (collectives/buckets.h).
struct RingShape {
  uint64_t elements = 0;  ///< elements the data stands for; chunk c carries c-th of p parts of them
  uint64_t rounds = 1;    ///< dependent transfers each message stands for (the group's buckets)
};

/// One round whose `n` floats, at the transport's `scale`, stand for the shape's elements within
/// 1 %: any collective may carry the data as scaled tensor messages (Transport::send_data), as it
/// carries a whole gradient; else only a ring carrying the shape (below) is faithful.
bool shape_scales(size_t n, const RingShape& shape, double scale);

/// ring_allreduce_sum whose messages carry the shape's sizes and rounds (Transport::send_shaped).
void ring_allreduce_sum(Transport& t, const std::vector<int>& ring, float* data, size_t n, const TagRange& tags,
                        const RingShape& shape);

/// ring_allreduce_sum on n 16-bit floats of format `w` (kernels/wire16.h; naive_ddp's "wire"):
/// 2 bytes per element on the wire (a shape's chunk: 2 bytes per represented element), every
/// partial sum rounded to `w` (float add, round to nearest even), in the same order as the float
/// ring's: chunk c is summed from rank c's value on, around the ring. `shape` null: none.
void ring_allreduce_sum(Transport& t, const std::vector<int>& ring, uint16_t* data, size_t n, kernels::Wire16 w,
                        const TagRange& tags, const RingShape* shape = nullptr);

/// Tags one ring_allreduce_sum over `ranks` ranks uses: 2 (ranks - 1).
uint64_t ring_allreduce_tag_count(size_t ranks);

}  // namespace geotb::engine
