// `geotb net up|down <scenario>` and `geotb fidelity <scenario>`: the DPDK emulator's namespaces
// and its fidelity report. Compiled into geotb only when DPDK is found (GEOTB_HAVE_NET, set by
// harness/meson.build).
#pragma once

#include <CLI/CLI.hpp>

/// geotb net up <scenario> [--prefix P] [--emulate] | geotb net down [<scenario>] [--prefix P]
void register_net_command(CLI::App& app);
/// geotb fidelity <scenario> [--out PATH] [--check] ...
void register_fidelity_command(CLI::App& app);
/// geotb exec <scenario> -- <command>: a user's job once per rank in the emulated data centers.
void register_exec_command(CLI::App& app, const std::vector<std::string>& argv);
