#include "harness/net_topology.h"

#include <unistd.h>

#include "model/topology.h"

namespace geotb::harness {

emu::NetTopology net_topology(const Scenario& sc, const std::string& prefix) {
  emu::NetTopology t;
  t.prefix = prefix;
  for (const auto& dc : sc.cluster.dcs) t.dcs.push_back(dc.name);
  t.wan = model::directed_wan_links(sc.cluster);  // the emulator's view: one --link per direction
  for (const auto& ch : sc.cluster.timeline) t.timeline.push_back({ch.a, ch.b, ch.change});
  return t;
}

std::string find_emulate_bin() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string dir(buf, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& cand : {dir + "/geotb-emulate", dir + "/../emulator/dpdk/geotb-emulate"})
      if (access(cand.c_str(), X_OK) == 0) return cand;
  }
  return "geotb-emulate";  // from PATH
}

}  // namespace geotb::harness
