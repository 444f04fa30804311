// Reading `geotb run` reports back (typed, validated, errors naming the file and field) and the
// regression gate of `geotb check`: a run report against a committed baseline report, on the
// figures that are stable on noisy machines.
//
// Figures compared, per strategy S of the baseline (R = the reference strategy, naive_ddp):
//   throughput ratio  = samples_per_s(S) / samples_per_s(R), same run   higher is better, S != R
//   WAN bytes ratio   = wan_payload_bytes(S) / wan_payload_bytes(R)     lower is better,  S != R
//   final accuracy    = final_test_accuracy(S)                          higher is better, every S
// A figure regresses when it is worse than the baseline's beyond the tolerance:
//   throughput ratio  current < baseline * (1 - throughput_ratio_tolerance)   (relative)
//   WAN bytes ratio   current > baseline * (1 + wan_bytes_ratio_tolerance)    (relative)
//   final accuracy    current < baseline - accuracy_tolerance                 (absolute)
// The bounds are inclusive: a value exactly on the bound passes. A figure better than the
// baseline beyond the same tolerance is reported as "improved" and passes.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace geotb::harness {

/// A report that cannot be read or is not a geotb run report. The message names the file, the
/// field path and the value ("r.json: strategies[1].metrics.samples_per_s: expected a number, got \"x\"").
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Tolerances of the gate; the defaults are those of README "Scenario files" (`check`).
struct CheckTolerances {
  double throughput_ratio = 0.15;  ///< relative: 0.15 allows a ratio down to 85 % of the baseline's
  double accuracy = 0.01;          ///< absolute, in accuracy units (0.01 = one percentage point)
  double wan_bytes_ratio = 0.05;   ///< relative: 0.05 allows a WAN ratio up to 105 % of the baseline's
};

struct AccuracyPoint {
  int64_t step = 0;
  int64_t samples = 0;
  double accuracy = 0;  ///< in [0, 1]
};

struct ExchangeRecord {
  int64_t step = 0;  ///< -1 for the final dense exchange
  uint64_t bytes = 0;
  double seconds = 0;
  double lower_bound_s = 0;
  double efficiency = 0;  ///< lower_bound_s / seconds
};

/// One strategy of a run report (README "Metrics" defines every field).
struct StrategyRun {
  std::string name;
  nlohmann::json config;
  int64_t samples = 0;
  double wall_s = 0;
  double samples_per_s = 0;
  double compute_s_per_step = 0;
  double exposed_comm_s_per_step = 0;
  double overlapped_comm_s_per_step = 0;
  double compress_s_per_step = 0;
  double comm_compute_ratio = 0;
  uint64_t wan_payload_bytes = 0;
  uint64_t wan_wire_bytes = 0;
  uint64_t wan_messages = 0;
  uint64_t wan_retransmissions = 0;
  uint64_t exchanges = 0;
  std::optional<double> exchange_efficiency_mean;  ///< none when the run logged no exchange
  double final_test_accuracy = 0;
  double replica_max_abs_diff = 0;
  std::vector<double> loss;        ///< per step, mean over workers
  std::vector<double> step_end_s;  ///< per step, seconds since the first step started
  std::vector<AccuracyPoint> test_accuracy;
  std::vector<ExchangeRecord> exchange_log;

  /// Training samples of the whole cluster per step (samples / steps).
  double samples_per_step() const;
};

struct WanLinkInfo {
  std::string a, b;
  double bandwidth_bps = 0;  ///< a -> b direction
  double rtt_s = 0;
  double loss_rate = 0;
};

/// A `geotb run` report (harness/report.schema.json, schema_version 1), typed.
struct RunReport {
  std::string source;  ///< file path (or a label) used in messages
  std::string scenario_name, description, scenario_file, scenario_hash, network;
  uint64_t seed = 0;
  std::vector<std::pair<std::string, int64_t>> datacenters;  ///< name, workers
  std::vector<WanLinkInfo> wan;
  nlohmann::json workload;
  std::optional<CheckTolerances> tolerances;  ///< scenario.check, when the report has it
  std::string git_revision, build_type, host, started_at;
  nlohmann::json context;
  std::vector<StrategyRun> strategies;
  std::vector<std::pair<std::string, std::string>> failures;  ///< strategy, error

  const StrategyRun* find(std::string_view strategy) const;
};

/// Validates and converts; throws ReportError naming `source`, the field and the value.
RunReport parse_report(const nlohmann::json& j, const std::string& source);
/// Reads and parses a report file; throws ReportError (unreadable, not JSON, not a report).
RunReport load_report(const std::string& path);

// ---- the gate ----

enum class Verdict { kPass, kImproved, kFail };

struct CheckRow {
  std::string strategy;
  std::string figure;  ///< "throughput ratio", "WAN bytes ratio", "final accuracy", "present", "scenario"
  std::optional<double> baseline, current;
  std::optional<double> allowed_lo, allowed_hi;  ///< inclusive; absent side = unbounded
  Verdict verdict = Verdict::kPass;
  std::string note;  ///< why it failed or improved, in words
};

struct CheckOptions {
  std::string reference = "naive_ddp";
  /// Overrides; otherwise the current report's scenario.check, otherwise CheckTolerances{}.
  std::optional<CheckTolerances> tolerances;
};

struct CheckResult {
  std::string reference;
  CheckTolerances tolerances;
  std::string tolerances_from;  ///< "scenario.check of <file>", "defaults" or "command line"
  std::vector<CheckRow> rows;

  bool passed() const;
  int count(Verdict v) const;
};

/// Pure decisions on one figure (exposed for tests). Bounds inclusive.
CheckRow judge_higher_is_better_relative(double baseline, double current, double tolerance);
CheckRow judge_lower_is_better_relative(double baseline, double current, double tolerance);
CheckRow judge_higher_is_better_absolute(double baseline, double current, double tolerance);

/// Compares `current` with `baseline`. Throws ReportError when they are of different scenarios
/// (a usage error) or the baseline lacks the reference strategy (a bad baseline). Everything
/// else that is wrong in `current` (missing or failed strategy, missing reference, changed
/// scenario hash) is a failing row.
CheckResult check_report(const RunReport& current, const RunReport& baseline, const CheckOptions& opt = {});

/// The pass/fail table and a summary naming each regression, for people and CI logs.
std::string format_check_table(const CheckResult& r, const RunReport& current, const RunReport& baseline);

}  // namespace geotb::harness
