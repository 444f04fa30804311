// The regression gate of `geotb check`: a run report (model/report.h) against a committed
// baseline report. Two modes, chosen by the baseline (gate_mode_of):
//
// Absolute (the baseline ran on the virtual clock with a declared compute profile, so every figure
// is a function of the scenario file: docs/guide/clocks.md). Per strategy S of the baseline, naive_ddp
// included:
//   samples/s          higher is better, relative tolerance `timing` (default 0.5 %)
//   exposed comm/step  lower is better,  relative tolerance `timing`
//   WAN bytes          lower is better,  relative tolerance `bytes`  (default 0.5 %)
//   exchanges          must be equal (the schedule of inter-DC rounds)
//   final accuracy     higher is better, both rounded to 4 decimals, absolute tolerance
//                      `accuracy` (default 0: identical to 4 decimals)
// Every figure but accuracy is the same on any CPU. The trained accuracy is bit-identical between
// runs on equal CPUs and kernels (the reports' context.cpu) and moves in the 4th decimal between
// others, so when the baseline's CPU differs from the run's, or is unrecorded, the accuracy
// tolerance is at least `cross_cpu_accuracy` (default 0.01), in both modes.
//
// Ratios (a baseline whose compute was measured CPU time or whose clock was the wall: its absolute
// figures move with the host, so only figures relative to the reference R = naive_ddp of the same
// run are gated):
//   throughput ratio  = samples_per_s(S) / samples_per_s(R)   higher is better, S != R
//   WAN bytes ratio   = wan_payload_bytes(S) / wan_payload_bytes(R)   lower is better, S != R
//   final accuracy    = final_test_accuracy(S)   higher is better, every S, tolerance `accuracy`
//                       (default 0.01)
//
// A figure regresses when it is worse than the baseline's beyond the tolerance; the bounds are
// inclusive (a value exactly on the bound passes). A figure better than the baseline beyond the
// same tolerance is reported as "improved" and passes. The baseline must come from a clean commit
// (its git revision without "-dirty"), and the current run must have run on the same clock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/metrics.h"
#include "model/report.h"

namespace geotb::harness {

enum class Verdict { kPass, kImproved, kFail };

/// How the gate compares (see above).
enum class GateMode { kAbsolute, kRatio };

/// The mode a baseline is gated in: kAbsolute when it ran on the virtual clock with a compute
/// profile (common or per DC), kRatio otherwise.
GateMode gate_mode_of(const model::RunReport& baseline);

/// The tolerances in force, every one resolved (model::CheckTolerances with its mode defaults).
struct Tolerances {
  double throughput_ratio = 0, wan_bytes_ratio = 0;  ///< kRatio, relative
  double accuracy = 0;                               ///< both modes, absolute
  double timing = 0, bytes = 0;                      ///< kAbsolute, relative
  double cross_cpu_accuracy = 0;                     ///< the floor of `accuracy` across CPUs
};
Tolerances resolve(const model::CheckTolerances& t, GateMode mode);

/// Whether a report's git revision names a clean commit ("git describe --always --dirty" without
/// "-dirty", and not "unknown"): a baseline must be reproducible from one.
bool clean_revision(const std::string& revision);

struct CheckRow {
  std::string strategy;
  /// "samples/s", "exposed comm/step", "WAN bytes", "exchanges" (absolute); "throughput ratio",
  /// "WAN bytes ratio" (ratio); "final accuracy"; "present", "scenario", "baseline", "clock"
  /// (structural rows, failing without values).
  std::string figure;
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
  GateMode mode = GateMode::kRatio;
  std::string reference;
  Tolerances tolerances;  ///< accuracy: raised to cross_cpu_accuracy unless same_cpu
  std::string tolerances_from;
  /// Both reports record their CPU (context.cpu) and the records are equal: same arithmetic.
  bool same_cpu = false;  ///< "scenario.check of <file>", "defaults" or "command line"
  std::vector<CheckRow> rows;

  bool passed() const;
  int count(Verdict v) const;
};

/// Pure decisions on one figure (exposed for tests). Bounds inclusive.
CheckRow judge_higher_is_better_relative(double baseline, double current, double tolerance);
CheckRow judge_lower_is_better_relative(double baseline, double current, double tolerance);
CheckRow judge_higher_is_better_absolute(double baseline, double current, double tolerance);
CheckRow judge_equal(double baseline, double current);

/// Compares `current` with `baseline`. Throws model::ReportError when they are of different scenarios
/// (a usage error) or a ratio-mode baseline lacks the reference strategy (a bad baseline).
/// Everything else that is wrong (a missing or failed strategy, a missing reference, a changed
/// scenario hash, another clock, a baseline from a dirty tree) is a failing row.
CheckResult check_report(const model::RunReport& current, const model::RunReport& baseline,
                         const CheckOptions& opt = {});

/// The pass/fail table and a summary naming each regression, for people and CI logs.
std::string format_check_table(const CheckResult& r, const model::RunReport& current,
                               const model::RunReport& baseline);

}  // namespace geotb::harness
