// `geotb run`: replay a scenario, write a JSON report, print the summary.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace geotb::harness {

void register_run_command(CLI::App& app, const std::vector<std::string>& argv);

}  // namespace geotb::harness
