// `geotb compare <report.json>... [--baseline naive_ddp] [--out DIR] [--name NAME]`: writes
// DIR/NAME.md and DIR/NAME.html (self-contained: inline CSS and SVG, nothing fetched).
// Exit status: 0 written, 2 usage error or unreadable/invalid report, 1 cannot write.
#pragma once

#include <CLI/CLI.hpp>

namespace geotb::harness {

void register_compare_command(CLI::App& app);

}  // namespace geotb::harness
