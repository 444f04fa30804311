// `geotb compare` output: a Markdown summary (context, one table per report, speed-ups and WAN
// ratios against the baseline strategy) that reads well in a terminal, a PR or an issue.
#pragma once

#include <string>
#include <vector>

#include "model/exec_report.h"
#include "model/report.h"

namespace geotb::harness {

/// `html_name` is the file name of the HTML report written beside it (linked for the plots).
/// `jobs` (`geotb exec` reports): one table of their mean step time against every strategy's.
std::string render_markdown_report(const std::vector<model::RunReport>& reports, const std::string& baseline_strategy,
                                   const std::string& html_name, const std::vector<model::ExecReport>& jobs = {});

}  // namespace geotb::harness
