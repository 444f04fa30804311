// `geotb compare` output: one self-contained HTML page (inline CSS and SVG charts, no script, no
// external resource) comparing the strategies of one or more run reports.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/exec_report.h"
#include "model/report.h"

namespace geotb::harness {

/// One strategy of one report as the comparison shows it.
struct ComparedRun {
  const model::RunReport* report = nullptr;
  const model::StrategyRun* run = nullptr;
  const model::StrategyRun* baseline = nullptr;  ///< the baseline strategy of the same report, if it ran
  size_t report_index = 0;                ///< 0-based position in the input list
  std::string label;                      ///< "hier_ef_topk_int8", or "hier_ef_topk_int8 (run 2)" with several reports
  std::string color;                      ///< by strategy name (the strategy table's order), the same in every chart
  std::string dash;                       ///< by report: solid for the first, dashed, dotted...
};

/// Every strategy of every report, in input order. The reports must outlive the result.
std::vector<ComparedRun> compared_runs(const std::vector<model::RunReport>& reports, const std::string& baseline_strategy);

/// One finding per non-baseline strategy run: {label, "3.58× the throughput of naive_ddp with 1.57 %
/// of its WAN bytes (577 kB instead of 36.6 MB), final test accuracy 0.7850 (-2.50 points)."}.
std::vector<std::pair<std::string, std::string>> key_results(const std::vector<ComparedRun>& runs,
                                                             const std::string& baseline_strategy);

/// "0.8123 ± 0.0040 (3 seeds)" from run.seeds, "–" without seeds.
std::string seed_accuracy_text(const model::StrategyRun& run);
/// "80.0 %: 12.34 ± 0.56 s, 12.3k samples (3 of 3 seeds)" (over seeds), "80.0 %: 12.34 s, 12.3k
/// samples" (one seed), "80.0 % not reached", "–" without a target.
std::string time_to_accuracy_text(const model::StrategyRun& run);
/// One site of an asynchronous strategy's run (model::AsyncSection) as the tables show it.
struct AsyncSiteRow {
  std::string label;      ///< the run's label
  std::string site;       ///< the data center's name
  std::string steps, rounds;
  std::string histogram;  ///< "s=0: 40, s=1: 12" (updates applied by staleness)
  std::string max_staleness;  ///< "2 (bound 2)", "5 (no bound)"
  std::string wait_s;     ///< time waited at the bound, seconds
};
/// Every site of every asynchronous run, in run then DC order; empty when none ran.
std::vector<AsyncSiteRow> asynchrony_rows(const std::vector<ComparedRun>& runs);

/// One run under node faults' policy "estimate" (model::EstimateRecord): its estimates of the
/// dead workers' gradients against the truth, beside shrink's implicit one, over every estimated
/// step ("mean ± sd" over steps).
struct EstimateRow {
  std::string label;   ///< the run's label
  std::string policy;  ///< "seed", "last_gradient (decay 0.9)", ...
  std::string steps;   ///< estimated steps (dead worker x step)
  std::string cosine, rel_error;                ///< the estimate against the truth
  std::string shrink_cosine, shrink_rel_error;  ///< the survivors' mean against the truth
};
/// Every run with policy "estimate", in run order; empty when none.
std::vector<EstimateRow> estimate_rows(const std::vector<ComparedRun>& runs);

/// One run with a quorum of sites ("quorum"): its membership changes as the tables show them.
struct QuorumRow {
  std::string label;      ///< the run's label
  std::string timeout;    ///< "5 s"
  std::string changes;    ///< "round 11 (after step 95) at 10.01 s: frankfurt, london; round 48 ..."
};
/// Every run with a quorum, in run order; empty when none.
std::vector<QuorumRow> quorum_rows(const std::vector<ComparedRun>& runs);

/// An exec'd job's command, its words joined by spaces.
std::string command_line(const std::vector<std::string>& argv);

/// "run 1" or the scenario name for titles: the common scenario name, else "several scenarios".
std::string common_scenario_name(const std::vector<model::RunReport>& reports);

/// The whole page. `baseline_strategy` is the reference of speed-ups and WAN ratios; `jobs`
/// (`geotb exec` reports) get a section of their own: their step time (GEOTB_METRIC
/// "step_time_s" of rank 0) beside every strategy's, their link traffic.
std::string render_html_report(const std::vector<model::RunReport>& reports, const std::string& baseline_strategy,
                               const std::vector<model::ExecReport>& jobs = {});

}  // namespace geotb::harness
