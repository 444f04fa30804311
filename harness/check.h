// The regression gate of `geotb check`: a run report (model/report.h) against a committed
// baseline report, on the figures that are stable on noisy machines (ratios: model/metrics.h).
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

#include <optional>
#include <string>
#include <vector>

#include "model/metrics.h"
#include "model/report.h"

namespace geotb::harness {

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
  std::string reference = model::metrics::kDefaultBaseline;
  /// Overrides; otherwise the baseline report's scenario.check, otherwise CheckTolerances{}.
  std::optional<model::CheckTolerances> tolerances;
};

struct CheckResult {
  std::string reference;
  model::CheckTolerances tolerances;
  std::string tolerances_from;  ///< "scenario.check of <file>", "defaults" or "command line"
  std::vector<CheckRow> rows;

  bool passed() const;
  int count(Verdict v) const;
};

/// Pure decisions on one figure (exposed for tests). Bounds inclusive.
CheckRow judge_higher_is_better_relative(double baseline, double current, double tolerance);
CheckRow judge_lower_is_better_relative(double baseline, double current, double tolerance);
CheckRow judge_higher_is_better_absolute(double baseline, double current, double tolerance);

/// Compares `current` with `baseline`. Throws model::ReportError when they are of different scenarios
/// (a usage error) or the baseline lacks the reference strategy (a bad baseline). Everything
/// else that is wrong in `current` (missing or failed strategy, missing reference, changed
/// scenario hash) is a failing row.
CheckResult check_report(const model::RunReport& current, const model::RunReport& baseline,
                         const CheckOptions& opt = {});

/// The pass/fail table and a summary naming each regression, for people and CI logs.
std::string format_check_table(const CheckResult& r, const model::RunReport& current,
                               const model::RunReport& baseline);

}  // namespace geotb::harness
