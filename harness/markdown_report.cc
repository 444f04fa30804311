#include "harness/markdown_report.h"

#include <fmt/format.h>

#include "harness/html_report.h"
#include "harness/plot/axis.h"
#include "model/metrics.h"

namespace geotb::harness {

namespace {

namespace mx = model::metrics;

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

std::string render_markdown_report(const std::vector<model::RunReport>& reports, const std::string& baseline,
                                   const std::string& html_name, const std::vector<model::ExecReport>& jobs) {
  const std::vector<ComparedRun> runs = compared_runs(reports, baseline);
  std::string md = fmt::format("# geotb compare: {}\n\n", common_scenario_name(reports));
  std::string last_hash;
  for (const model::RunReport& r : reports) {
    const model::ScenarioSummary& sc = r.scenario;
    if (sc.hash == last_hash) continue;
    last_hash = sc.hash;
    md += fmt::format("**Scenario `{}`** ({}), hash `{}`, seed {}\n\n", sc.name, sc.file, sc.hash.substr(0, 16),
                      sc.seed);
    if (!sc.description.empty()) md += fmt::format("> {}\n\n", sc.description);
    std::string dcs;
    for (const auto& d : sc.datacenters)
      dcs += fmt::format("{}{} × {} workers", dcs.empty() ? "" : ", ", d.name, d.workers);
    md += fmt::format("- data centers: {}\n", dcs);
    for (const auto& l : sc.wan)
      md += fmt::format("- WAN {} – {}: {}, RTT {:g} ms, loss {:.3g} %\n", l.a, l.b, plot::format_si(l.bandwidth_bps, "bit/s"),
                        l.rtt_s * 1e3, l.loss_rate * 100);
    md += "\n";
  }
  md += "| run | report | date (UTC) | git | host | clock and compute |\n|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < reports.size(); ++i)
    md += fmt::format("| {} | `{}` | {} | `{}` | {} | {} |\n", i + 1, cell(reports[i].source),
                      reports[i].context.started_at, reports[i].context.git_revision, cell(reports[i].context.host),
                      cell(model::describe_figures(reports[i].context)));
  md += "\n";

  md += fmt::format(
      "| strategy | samples/s | × {0} | compute ms/step | exposed comm ms/step | overlapped comm ms/step | "
      "WAN payload | WAN ÷ {0} | exchanges | exch. efficiency | s per exchange | test accuracy | Δ acc. (points) | "
      "wall s | comm/compute | acc. over seeds (mean ± sd) | time to accuracy |\n"
      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
      baseline);
  for (const auto& c : runs) {
    const model::StrategyMetrics& s = c.run->metrics;
    std::string speed = "–", wan = "–", dacc = "–";
    if (c.baseline) {
      const model::StrategyMetrics& b = c.baseline->metrics;
      speed = fmt::format("{:.2f}×", mx::throughput_ratio(s, b));
      if (b.wan_payload_bytes > 0) wan = fmt::format("{:.4g}", mx::wan_bytes_ratio(s, b));
      dacc = fmt::format("{:+.2f}", 100 * mx::accuracy_delta(s, b));
    }
    const std::optional<double> exch_s = s.exchange_seconds_mean.value_or(std::nullopt);
    md += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {} | {} | {} | {:.4f}{} | {} | {:.1f} | "
                      "{:.3g}{} | {} | {} |\n",
                      cell(c.label), model::throughput_text(c.report->context, s.samples_per_s), speed,
                      1e3 * s.compute_s_per_step,
                      1e3 * s.exposed_comm_s_per_step, 1e3 * s.overlapped_comm_s_per_step,
                      bytes(s.wan_payload_bytes) +
                          (s.wan_final_sync_bytes && *s.wan_final_sync_bytes > 0
                               ? " (final sync " + bytes(*s.wan_final_sync_bytes) + ")"
                               : std::string()),
                      wan, s.exchanges,
                      s.exchange_efficiency_mean ? fmt::format("{:.3g}", *s.exchange_efficiency_mean) : "–",
                      exch_s ? fmt::format("{:.3g}", *exch_s) : "–",
                      s.final_test_accuracy, model::accuracy_note(c.report->context), dacc, s.wall_s,
                      s.comm_compute_ratio,
                      mx::comm_compute_alarm(s.comm_compute_ratio) ? " ⚠" : "", seed_accuracy_text(*c.run),
                      time_to_accuracy_text(*c.run));
  }
  md += "\n";
  std::string alarms;
  for (const auto& c : runs)
    if (mx::comm_compute_alarm(c.run->metrics.comm_compute_ratio))
      alarms += fmt::format("{}{} ({:.3g})", alarms.empty() ? "" : ", ", c.label, c.run->metrics.comm_compute_ratio);
  if (!alarms.empty())
    md += fmt::format("⚠ **comm/compute alarm** (exposed communication above {:g} of compute): {}.\n\n",
                      mx::kCommComputeAlarm, alarms);

  if (const std::vector<AsyncSiteRow> rows = asynchrony_rows(runs); !rows.empty()) {
    md += "| asynchronous strategy | site | steps | rounds | updates applied by staleness s | max s | waited at the "
          "bound (s) |\n|---|---|--:|--:|---|---|--:|\n";
    for (const auto& r : rows)
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(r.label), cell(r.site), r.steps, r.rounds,
                        cell(r.histogram), cell(r.max_staleness), r.wait_s);
    md += "\n";
  }
  if (const std::vector<EstimateRow> rows = estimate_rows(runs); !rows.empty()) {
    md += "| strategy (policy estimate) | weights | estimated steps | cos(estimate, truth) | rel. error | cos(survivors' "
          "mean, truth) | rel. error |\n|---|---|--:|--:|--:|--:|--:|\n";
    for (const auto& r : rows)
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(r.label), cell(r.policy), r.steps, r.cosine,
                        r.rel_error, r.shrink_cosine, r.shrink_rel_error);
    md += "\n";
  }
  if (const std::vector<QuorumRow> rows = quorum_rows(runs); !rows.empty()) {
    md += "| strategy (quorum of sites) | timeout | changes of the sites a round runs with |\n|---|--:|---|\n";
    for (const auto& r : rows) md += fmt::format("| {} | {} | {} |\n", cell(r.label), r.timeout, cell(r.changes));
    md += "\n";
  }
  // One sentence per strategy: what a reader wants to know first.
  for (const auto& [label, text] : key_results(runs, baseline)) md += fmt::format("- **{}**: {}\n", label, text);
  for (const model::RunReport& r : reports)
    for (const auto& x : r.failures) md += fmt::format("- **FAILED** {} in `{}`: {}\n", x.strategy, r.source, x.error);
  if (!jobs.empty()) {
    // The exec'd jobs' mean step time (their own GEOTB_METRIC "step_time_s", rank 0) against each strategy's.
    md += fmt::format("\n| job | command | status | mean {} (rank 0) ms |", mx::kJobStepMetric);
    std::string rule = "|---|---|---|--:|";
    for (const auto& c : runs) {
      md += fmt::format(" ÷ {} ({:.1f} ms/step) |", cell(c.label), 1e3 * mx::mean_step_s(*c.run));
      rule += "--:|";
    }
    md += "\n" + rule + "\n";
    for (size_t j = 0; j < jobs.size(); ++j) {
      const model::ExecReport& r = jobs[j];
      const std::optional<double> mean = mx::job_metric_mean(r, mx::kJobStepMetric);
      md += fmt::format("| `{}` | `{}` | {} | {} |", cell(r.source), cell(command_line(r.command)),
                        cell(r.first_failure ? r.status + ": " + r.first_failure->message : r.status),
                        mean ? fmt::format("{:.1f}", 1e3 * *mean) : std::string("–"));
      for (const auto& c : runs) {
        const double base = mx::mean_step_s(*c.run);
        md += fmt::format(" {} |", mean && base > 0 ? fmt::format("{:.3f}", *mean / base) : std::string("–"));
      }
      md += "\n";
    }
  }
  md += fmt::format(
      "\nPlots (loss vs time and samples, accuracy, throughput, time per step, WAN bytes, exchange efficiency): "
      "[{0}]({0}). Metrics are defined in docs/guide/reports.md.\n",
      html_name);
  return md;
}

}  // namespace geotb::harness
