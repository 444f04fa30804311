// The JSON report of one `geotb run`: versioned schema (harness/report.schema.json), context,
// per-strategy metrics and series, and the comparison against the baseline strategy.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cluster.h"
#include "harness/scenario.h"

namespace geotb::harness {

inline constexpr int kReportSchemaVersion = 1;

struct RunContext {
  std::vector<std::string> argv;
  std::string scenario_file;
  std::string started_at;  ///< UTC, ISO 8601
  /// dpdk mode: the TCP congestion control the DC namespaces ran with (read back), else "".
  std::string dc_tcp_congestion_control;
};

nlohmann::json make_report(const Scenario& sc, const std::vector<engine::StrategyResult>& results,
                           const RunContext& ctx, const std::string& baseline = "naive_ddp");

/// Writes `j` to `dir/<name>-<UTC timestamp>.json` through a temporary file and rename, so a
/// crash never leaves a half-written report and never touches existing ones. Returns the path.
std::string write_report(const nlohmann::json& j, const std::string& dir, const std::string& name);

/// The table printed after a run (plain text, aligned).
std::string summary_table(const nlohmann::json& report);

/// UTC now as "2026-11-29T15:04:05Z".
std::string utc_now_iso();

}  // namespace geotb::harness
