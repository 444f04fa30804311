// IntraDc over the engine Transport: Gloo's ring protocol message by message (collectives/
// gloo_ring.h), the mean computed as c10d ProcessGroupGloo computes it (sum in Gloo's ring order,
// then divided by the group size). The virtual-time embedded mode uses it for every strategy's
// intra-DC collectives, so that they pay the scenario's LAN in the same units as naive_ddp's ring
// instead of running real Gloo over loopback on whatever cores the host has. No libtorch.
#pragma once

#include <memory>
#include <vector>

#include "engine/collectives/intra_dc.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

/// `members`: the group's global ranks in ring order; `index`: this rank's position in it. Every
/// member must create its group at the same point and call the same operations in the same order
/// (each operation takes the next tags of the group's space, collectives' group_tags()). Errors of
/// the transport surface as CollectiveError.
std::unique_ptr<IntraDc> make_transport_group(Transport& t, std::vector<int> members, int index);

/// The group `old` (made by make_transport_group) rebuilt with `members` (its survivors after a
/// node kill, engine/faults/), continuing its tags so that no message of the old group's
/// operations can match the new group's. Every survivor calls it at the same point. The mean is
/// then over the survivors. Throws CollectiveError if `old` is not a transport group.
std::unique_ptr<IntraDc> shrink_transport_group(const IntraDc& old, Transport& t, std::vector<int> members, int index);

/// Tags a transport group has used so far (what a member joining it later must skip). Throws
/// CollectiveError if `g` is not a transport group.
uint64_t transport_group_tags_used(const IntraDc& g);

/// A group joined by a restarted member: `members` (the group with it), continuing at
/// `tags_used` (the others' transport_group_tags_used(), rebuilt with shrink_transport_group at
/// the same point).
std::unique_ptr<IntraDc> join_transport_group(Transport& t, std::vector<int> members, int index, uint64_t tags_used);

}  // namespace geotb::engine
