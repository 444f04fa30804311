// The scenario's network as the DPDK emulator's topology (namespaces, links, timeline), and where
// geotb-emulate is. For `geotb net`, `geotb fidelity` and `geotb run --net dpdk`; compiled into
// geotb only with DPDK (GEOTB_HAVE_NET).
#pragma once

#include <string>

#include "emulator/dpdk/netns.h"
#include "harness/scenario.h"

namespace geotb::harness {

/// The scenario's data centers, WAN links (both directions) and timeline, with namespace names
/// starting with `prefix`.
emu::NetTopology net_topology(const Scenario& sc, const std::string& prefix);

/// geotb-emulate next to this binary (installed: same directory; build tree:
/// ../emulator/dpdk), else "geotb-emulate" (from PATH).
std::string find_emulate_bin();

}  // namespace geotb::harness
