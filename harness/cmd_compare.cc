#include "harness/cmd_compare.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "common/atomic_file.h"
#include "model/metrics.h"
#include "model/report.h"
#include "harness/html_report.h"
#include "harness/markdown_report.h"

namespace geotb::harness {

namespace {

struct CompareArgs {
  std::vector<std::string> reports;
  std::string baseline = model::metrics::kDefaultBaseline;
  std::string out = "reports";
  std::string name;
};

int run_compare(const CompareArgs& a) {
  std::vector<model::RunReport> reports;
  std::vector<model::ExecReport> jobs;  // `geotb exec` reports, shown beside the strategies
  try {
    for (const auto& p : a.reports) {
      if (model::report_schema_of(p) == model::kExecSchema)
        jobs.push_back(model::load_exec_report(p));
      else
        reports.push_back(model::load_report(p));
    }
  } catch (const model::ReportError& e) {
    fmt::print(stderr, "geotb compare: error: {}\n", e.what());
    return 2;
  }
  if (reports.empty()) {
    fmt::print(stderr, "geotb compare: error: only geotb exec reports: add at least one run report (geotb run) to "
                       "compare the job with\n");
    return 2;
  }
  bool any_baseline = false;
  for (const auto& r : reports) any_baseline = any_baseline || r.find(a.baseline);
  if (!any_baseline) {
    std::string have;
    for (const auto& s : reports.front().strategies) have += (have.empty() ? "" : ", ") + s.name;
    fmt::print(stderr, "geotb compare: error: --baseline {}: no report has this strategy (the first has: {})\n",
               a.baseline, have);
    return 2;
  }
  std::string name = a.name;
  if (name.empty()) {
    name = common_scenario_name(reports) == reports.front().scenario.name ? reports.front().scenario.name : "compare";
    name += "-compare";
  }
  if (name.find('/') != std::string::npos) {
    fmt::print(stderr, "geotb compare: error: --name \"{}\": a file name, not a path (use --out for the folder)\n", name);
    return 2;
  }
  const std::filesystem::path dir(a.out);
  const std::filesystem::path html = dir / (name + ".html"), md = dir / (name + ".md");
  try {
    std::filesystem::create_directories(dir);
    common::write_file_atomically(html.string(), render_html_report(reports, a.baseline, jobs));
    common::write_file_atomically(md.string(), render_markdown_report(reports, a.baseline, html.filename().string(), jobs));
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb compare: error: {}\n", e.what());
    return 1;
  }
  fmt::print("markdown: {}\nhtml: {}\n", md.string(), html.string());
  return 0;
}

}  // namespace

void register_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare the strategies of one or more run reports: a Markdown summary and a self-contained HTML "
                 "page with plots");
  cmd->add_option("reports", args->reports, "Reports of `geotb run` (several: e.g. runs of one scenario) and of `geotb exec` (the job beside the strategies)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--baseline", args->baseline, "Strategy that speed-ups and WAN ratios refer to")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Directory for <name>.md and <name>.html")->capture_default_str();
  cmd->add_option("--name", args->name, "Base name of the output files (default: <scenario>-compare)");
  cmd->callback([args]() {
    if (const int rc = run_compare(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
