// `geotb calibrate SCENARIO`: measures this machine's compute for the scenario's model on a device
// and writes a compute profile that scenarios name with {"compute": {"calibrated": FILE}}
// (docs/guide/gpu.md).
#pragma once

#include <CLI/CLI.hpp>

namespace geotb::harness {

void register_calibrate_command(CLI::App& app);

}  // namespace geotb::harness
