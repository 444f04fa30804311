// `geotb store --port N`: a c10d TCPStore served by a process of its own, for process-mode runs
// whose rank 0 may die (docs/guide/faults.md): `geotb run` starts it where rank 0 would serve it.
#pragma once

#include <CLI/CLI.hpp>

namespace geotb::harness {

void register_store_command(CLI::App& app);

}  // namespace geotb::harness
