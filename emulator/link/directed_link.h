// One direction of a link between two sites (data centers, by index): what the emulator
// backends take, each a list of them (the in-process fabric, the namespaces + DPDK data plane).
#pragma once

#include "emulator/link/link_model.h"

namespace geotb::emu {

struct DirectedLink {
  int from = 0;       ///< sending site
  int to = 1;         ///< receiving site
  LinkConfig config;  ///< the link in this direction
};

}  // namespace geotb::emu
