// The network of a run, described once and independent of how it is emulated: the data
// centers, the LAN inside each, the WAN link of every DC pair in each direction, and the link
// changes scheduled during training. The scenario parser fills it; each backend translates it
// in one place: the in-process fabric (engine/cluster.cc) and the namespaces + DPDK emulator
// (harness/net_topology.cc). Depends only on the link's vocabulary (common/link_config.h).
#pragma once

#include <string>
#include <vector>

#include "common/link_config.h"
#include "model/rank_layout.h"

namespace geotb::model {

struct DataCenter {
  std::string name;
  int workers = 1;  ///< workers (ranks) in this data center
};

/// The WAN between data centers a and b (indices into Topology::dcs), one link per direction
/// (asymmetric links allowed).
struct WanLink {
  int a = 0, b = 1;
  emu::LinkConfig a_to_b, b_to_a;
};

/// A change of the WAN link between a and b, both directions, `change.at` counted from the
/// start of each strategy's training (its first step).
struct ScheduledChange {
  int a = 0, b = 1;
  emu::LinkChange change;
};

struct Topology {
  std::vector<DataCenter> dcs;            ///< in rank order (model/rank_layout.h)
  emu::LinkConfig lan;                    ///< between two workers of one data center, each direction
  std::vector<WanLink> wan;               ///< one per DC pair that talks
  std::vector<ScheduledChange> timeline;  ///< in the order they were given
};

/// The ranks of the data centers, in order.
inline RankLayout rank_layout(const Topology& t) {
  std::vector<int> w;
  for (const DataCenter& d : t.dcs) w.push_back(d.workers);
  return RankLayout(std::move(w));
}

/// Every WAN link one direction at a time, in order: wan[0] a->b, wan[0] b->a, wan[1] a->b, ...
/// (the order the backends number their random streams in).
inline std::vector<emu::DirectedLink> directed_wan_links(const Topology& t) {
  std::vector<emu::DirectedLink> out;
  for (const WanLink& w : t.wan) {
    out.push_back({w.a, w.b, w.a_to_b});
    out.push_back({w.b, w.a, w.b_to_a});
  }
  return out;
}

}  // namespace geotb::model
