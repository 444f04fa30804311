// `geotb worker <scenario> --strategy NAME [--out rank.json]`: one rank of a process-mode run.
#pragma once

#include <CLI/CLI.hpp>

namespace geotb::harness {

void register_worker_command(CLI::App& app);

}  // namespace geotb::harness
