// `geotb check <report.json> --baseline <baseline.json> [--update]`: the regression gate
// (harness/check.h defines the figures and the rule). Exit status: 0 pass, 1 regression,
// 2 usage error or unreadable/invalid input.
#pragma once

#include <CLI/CLI.hpp>

namespace geotb::harness {

void register_check_command(CLI::App& app);

}  // namespace geotb::harness
