// Writing the JSON report of one `geotb run` (its shape: model/report.h; JSON Schema:
// harness/report.schema.json) and the table printed after a run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/strategy.h"
#include "harness/scenario.h"
#include "model/metrics.h"
#include "model/report.h"

namespace geotb::harness {

/// What the run knows beyond the scenario and the results.
struct RunContext {
  std::vector<std::string> argv;
  std::string scenario_file;
  std::string started_at;  ///< UTC, ISO 8601
  /// dpdk mode: the TCP congestion control the DC namespaces ran with (read back), else "".
  std::string dc_tcp_congestion_control;
  /// A non-IID workload.partition: every data center's training examples per class, by name.
  std::map<std::string, std::vector<uint64_t>> label_histogram_by_dc;
  /// Every data center's weight in the means over DCs, by name, when they differ.
  std::map<std::string, double> dc_weight_by_dc;
  /// workload.global_batch and its pool's size and staging bytes (model::WorkloadSummary).
  std::optional<nlohmann::json> global_batch;
};


/// The report's "scenario": what ran (run and exec reports).
model::ScenarioSummary scenario_summary(const Scenario& sc, const RunContext& ctx);
/// The report's "context": this build, this host, the run's argv and start (run and exec reports).
model::ReportContext report_context(const RunContext& ctx);

/// The report's per-strategy "config" object: the strategy's parameters from the scenario.
nlohmann::json strategy_config_json(const engine::StrategyConfig& c);

/// The report of a run: the scenario summary, this build's and host's context, `runs` with their
/// configs from the scenario, the comparison against `baseline` (model::metrics::compare) and
/// the failures (strategy, error).
model::RunReport make_report(const Scenario& sc, std::vector<model::StrategyRun> runs,
                             std::vector<model::Failure> failures, const RunContext& ctx,
                             const std::string& baseline = model::metrics::kDefaultBaseline);

/// Writes `r` to `dir/<name>-<UTC timestamp>.json` through a temporary file and rename, so a
/// crash never leaves a half-written report and never touches existing ones. Returns the path.
std::string write_report(const model::RunReport& r, const std::string& dir, const std::string& name);
/// The same for any report of the family (run, exec).
std::string write_report_json(const nlohmann::json& j, const std::string& dir, const std::string& name);

/// The table printed after a run (plain text, aligned).
std::string summary_table(const model::RunReport& report);

/// UTC now as "2026-11-29T15:04:05Z".
std::string utc_now_iso();

}  // namespace geotb::harness
