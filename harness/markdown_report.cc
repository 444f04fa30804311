#include "harness/markdown_report.h"

#include <fmt/format.h>

#include "harness/html_report.h"
#include "harness/plot/axis.h"

namespace geotb::harness {

namespace {

/// Table cells must not break the Markdown table.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string bytes(uint64_t b) { return plot::format_si(static_cast<double>(b), "B"); }

}  // namespace

std::string render_markdown_report(const std::vector<RunReport>& reports, const std::string& baseline,
                                   const std::string& html_name) {
  const std::vector<ComparedRun> runs = compared_runs(reports, baseline);
  std::string md = fmt::format("# geotb compare: {}\n\n", common_scenario_name(reports));
  std::string last_hash;
  for (const RunReport& r : reports) {
    if (r.scenario_hash == last_hash) continue;
    last_hash = r.scenario_hash;
    md += fmt::format("**Scenario `{}`** ({}), hash `{}`, seed {}\n\n", r.scenario_name, r.scenario_file,
                      r.scenario_hash.substr(0, 16), r.seed);
    if (!r.description.empty()) md += fmt::format("> {}\n\n", r.description);
    std::string dcs;
    for (const auto& [n, w] : r.datacenters) dcs += fmt::format("{}{} × {} workers", dcs.empty() ? "" : ", ", n, w);
    md += fmt::format("- data centers: {}\n", dcs);
    for (const auto& l : r.wan)
      md += fmt::format("- WAN {} – {}: {}, RTT {:g} ms, loss {:.3g} %\n", l.a, l.b, plot::format_si(l.bandwidth_bps, "bit/s"),
                        l.rtt_s * 1e3, l.loss_rate * 100);
    md += "\n";
  }
  md += "| run | report | date (UTC) | git | host |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < reports.size(); ++i)
    md += fmt::format("| {} | `{}` | {} | `{}` | {} |\n", i + 1, cell(reports[i].source), reports[i].started_at,
                      reports[i].git_revision, cell(reports[i].host));
  md += "\n";

  md += fmt::format(
      "| strategy | samples/s | × {0} | compute ms/step | exposed comm ms/step | overlapped comm ms/step | "
      "WAN payload | WAN ÷ {0} | exchanges | exch. efficiency | test accuracy | Δ acc. (points) | wall s |\n"
      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
      baseline);
  for (const auto& c : runs) {
    const StrategyRun& s = *c.run;
    std::string speed = "–", wan = "–", dacc = "–";
    if (c.baseline) {
      speed = fmt::format("{:.2f}×", s.samples_per_s / c.baseline->samples_per_s);
      if (c.baseline->wan_payload_bytes > 0)
        wan = fmt::format("{:.4g}", static_cast<double>(s.wan_payload_bytes) /
                                        static_cast<double>(c.baseline->wan_payload_bytes));
      dacc = fmt::format("{:+.2f}", 100 * (s.final_test_accuracy - c.baseline->final_test_accuracy));
    }
    md += fmt::format("| {} | {:.0f} | {} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {} | {} | {:.4f} | {} | {:.1f} |\n",
                      cell(c.label), s.samples_per_s, speed, 1e3 * s.compute_s_per_step,
                      1e3 * s.exposed_comm_s_per_step, 1e3 * s.overlapped_comm_s_per_step, bytes(s.wan_payload_bytes),
                      wan, s.exchanges,
                      s.exchange_efficiency_mean ? fmt::format("{:.3g}", *s.exchange_efficiency_mean) : "–",
                      s.final_test_accuracy, dacc, s.wall_s);
  }
  md += "\n";

  // One sentence per strategy: what a reader wants to know first.
  for (const auto& [label, text] : key_results(runs, baseline)) md += fmt::format("- **{}**: {}\n", label, text);
  for (const RunReport& r : reports)
    for (const auto& [s, e] : r.failures) md += fmt::format("- **FAILED** {} in `{}`: {}\n", s, r.source, e);
  md += fmt::format(
      "\nPlots (loss vs time and samples, accuracy, throughput, time per step, WAN bytes, exchange efficiency): "
      "[{0}]({0}). Metrics are defined in README \"Metrics\".\n",
      html_name);
  return md;
}

}  // namespace geotb::harness
