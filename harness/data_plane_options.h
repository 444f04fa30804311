// The data plane's CPU options, the same in `geotb net up --emulate`, `geotb run --net dpdk` and
// `geotb exec` (docs/guide/network-modes.md "A CPU for the data plane").
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace geotb::harness {

/// --rt-priority, --no-pin (where `no_pin` is given) and --no-shield on `cmd`. `scope` says how
/// long the shield lasts ("until `net down`", "for the run", "for the job"); `prefix` starts each
/// help text (e.g. "dpdk: " where the command has other network modes).
inline void add_data_plane_cpu_options(CLI::App& cmd, int& rt_priority, bool* no_pin, bool& no_shield,
                                       const std::string& scope, const std::string& prefix = "") {
  cmd.add_option("--rt-priority", rt_priority,
                 prefix + "SCHED_FIFO priority of the data plane (0 = normal; where the kernel refuses it, normal "
                          "with a warning; default: 0, busy polling, on a shielded CPU, else 50)");
  if (no_pin)
    cmd.add_flag("--no-pin", *no_pin,
                 prefix + "do not give the data plane a CPU of its own (default: the last allowed CPU)");
  cmd.add_flag("--no-shield", no_shield,
               prefix + "leave other processes on the data plane's CPU (default: moved off it " + scope +
                   ", where the host permits: docs/guide/network-modes.md \"A CPU for the data plane\")");
}

}  // namespace geotb::harness
