#include "harness/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace geotb::harness {

using model::ReportError;
using model::RunReport;
using model::StrategyRun;

namespace {
std::string pct(double x) { return fmt::format("{:.3g}%", x * 100); }
}  // namespace

CheckRow judge_higher_is_better_relative(double baseline, double current, double tolerance) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_lo = baseline * (1 - tolerance);
  if (current < *r.allowed_lo) {
    r.verdict = Verdict::kFail;
    r.note = fmt::format("fell {} below the baseline (tolerance {})", pct(1 - current / baseline), pct(tolerance));
  } else if (current > baseline * (1 + tolerance)) {
    r.verdict = Verdict::kImproved;
    r.note = fmt::format("{} above the baseline", pct(current / baseline - 1));
  }
  return r;
}

CheckRow judge_lower_is_better_relative(double baseline, double current, double tolerance) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_hi = baseline * (1 + tolerance);
  if (current > *r.allowed_hi) {
    r.verdict = Verdict::kFail;
    r.note = baseline > 0 ? fmt::format("rose {} above the baseline (tolerance {})", pct(current / baseline - 1), pct(tolerance))
                          : fmt::format("rose from 0 (tolerance {})", pct(tolerance));
  } else if (current < baseline * (1 - tolerance)) {
    r.verdict = Verdict::kImproved;
    r.note = fmt::format("{} below the baseline", pct(1 - current / baseline));
  }
  return r;
}

CheckRow judge_higher_is_better_absolute(double baseline, double current, double tolerance) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_lo = baseline - tolerance;
  if (current < *r.allowed_lo) {
    r.verdict = Verdict::kFail;
    r.note = fmt::format("fell by {:.4f} (tolerance {:.4f})", baseline - current, tolerance);
  } else if (current > baseline + tolerance) {
    r.verdict = Verdict::kImproved;
    r.note = fmt::format("rose by {:.4f}", current - baseline);
  }
  return r;
}

CheckRow judge_equal(double baseline, double current) {
  CheckRow r;
  r.baseline = baseline;
  r.current = current;
  r.allowed_lo = baseline;
  r.allowed_hi = baseline;
  if (current != baseline) {
    r.verdict = Verdict::kFail;
    r.note = fmt::format("changed from {:g} to {:g} (must be equal)", baseline, current);
  }
  return r;
}

bool CheckResult::passed() const { return count(Verdict::kFail) == 0; }

int CheckResult::count(Verdict v) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [v](const CheckRow& r) { return r.verdict == v; }));
}

GateMode gate_mode_of(const RunReport& baseline) {
  return baseline.context.clock == "virtual" && baseline.context.profiled() ? GateMode::kAbsolute : GateMode::kRatio;
}

Tolerances resolve(const model::CheckTolerances& t, GateMode mode) {
  using T = model::CheckTolerances;
  Tolerances r;
  r.throughput_ratio = t.throughput_ratio;
  r.wan_bytes_ratio = t.wan_bytes_ratio;
  r.accuracy = t.accuracy.value_or(mode == GateMode::kAbsolute ? T::kAbsoluteAccuracy : T::kRatioAccuracy);
  r.timing = t.timing.value_or(T::kAbsoluteTiming);
  r.bytes = t.bytes.value_or(T::kAbsoluteBytes);
  r.cross_cpu_accuracy = t.cross_cpu_accuracy.value_or(T::kCrossCpuAccuracy);
  return r;
}

bool clean_revision(const std::string& revision) {
  const std::string_view suffix = "-dirty";
  return !revision.empty() && revision != "unknown" &&
         !(revision.size() >= suffix.size() && revision.compare(revision.size() - suffix.size(), suffix.size(), suffix) == 0);
}

namespace {

/// Accuracy as reports and tables show it: 4 decimals.
double round4(double x) { return std::round(x * 1e4) / 1e4; }

CheckRow named(CheckRow r, const std::string& strategy, const std::string& figure) {
  r.strategy = strategy;
  r.figure = figure;
  return r;
}

/// The rows of one strategy in the absolute mode.
void absolute_rows(const StrategyRun& b, const StrategyRun& c, const Tolerances& tol, std::vector<CheckRow>& out) {
  const auto& bm = b.metrics;
  const auto& cm = c.metrics;
  out.push_back(named(judge_higher_is_better_relative(bm.samples_per_s, cm.samples_per_s, tol.timing), b.name,
                      "samples/s"));
  out.push_back(named(judge_lower_is_better_relative(bm.exposed_comm_s_per_step, cm.exposed_comm_s_per_step,
                                                     tol.timing),
                      b.name, "exposed comm/step"));
  out.push_back(named(judge_lower_is_better_relative(static_cast<double>(bm.wan_payload_bytes),
                                                     static_cast<double>(cm.wan_payload_bytes), tol.bytes),
                      b.name, "WAN bytes"));
  out.push_back(named(judge_equal(static_cast<double>(bm.exchanges), static_cast<double>(cm.exchanges)), b.name,
                      "exchanges"));
}

/// The rows of one strategy in the ratio mode (none for the reference itself).
void ratio_rows(const StrategyRun& b, const StrategyRun& c, const StrategyRun& base_ref, const StrategyRun& cur_ref,
                const Tolerances& tol, std::vector<CheckRow>& out) {
  out.push_back(named(judge_higher_is_better_relative(model::metrics::throughput_ratio(b.metrics, base_ref.metrics),
                                                      model::metrics::throughput_ratio(c.metrics, cur_ref.metrics),
                                                      tol.throughput_ratio),
                      b.name, "throughput ratio"));
  if (base_ref.metrics.wan_payload_bytes > 0 && cur_ref.metrics.wan_payload_bytes > 0)
    out.push_back(named(judge_lower_is_better_relative(model::metrics::wan_bytes_ratio(b.metrics, base_ref.metrics),
                                                       model::metrics::wan_bytes_ratio(c.metrics, cur_ref.metrics),
                                                       tol.wan_bytes_ratio),
                        b.name, "WAN bytes ratio"));
}

}  // namespace

CheckResult check_report(const RunReport& cur, const RunReport& base, const CheckOptions& opt) {
  if (cur.scenario.name != base.scenario.name)
    throw ReportError(fmt::format("{} is a run of scenario \"{}\" but the baseline {} is of \"{}\": pick the baseline "
                                  "reports/baselines/{}.json",
                                  cur.source, cur.scenario.name, base.source, base.scenario.name, cur.scenario.name));
  CheckResult res;
  res.mode = gate_mode_of(base);
  res.reference = opt.reference;
  const StrategyRun* base_ref = base.find(opt.reference);
  if (res.mode == GateMode::kRatio && !base_ref)
    throw ReportError(fmt::format("{}: the baseline has no \"{}\" run, the reference of every ratio", base.source,
                                  opt.reference));

  model::CheckTolerances given;
  if (opt.tolerances) {
    given = *opt.tolerances;
    res.tolerances_from = "command line";
  } else if (base.scenario.check) {
    // The committed baseline says how much may move, not the report under test (which could
    // otherwise loosen its own gate).
    given = *base.scenario.check;
    res.tolerances_from = fmt::format("scenario.check of {}", base.source);
  } else {
    res.tolerances_from = "defaults";
  }
  res.tolerances = resolve(given, res.mode);
  // Another CPU (or an unrecorded one) trains with other kernels: the accuracy moves, nothing else.
  res.same_cpu = base.context.cpu && cur.context.cpu && *base.context.cpu == *cur.context.cpu;
  if (!res.same_cpu) res.tolerances.accuracy = std::max(res.tolerances.accuracy, res.tolerances.cross_cpu_accuracy);
  const Tolerances& tol = res.tolerances;

  auto structural = [&](const std::string& strategy, const std::string& figure, std::string note) {
    CheckRow r;
    r.strategy = strategy;
    r.figure = figure;
    r.verdict = Verdict::kFail;
    r.note = std::move(note);
    res.rows.push_back(std::move(r));
  };

  if (!clean_revision(base.context.git_revision))
    structural("-", "baseline",
               fmt::format("the baseline was made by geotb built from git {}, not a clean commit: its figures "
                           "cannot be reproduced; replay on a clean checkout and `geotb check --update --reason ...`",
                           base.context.git_revision));
  if (cur.scenario.hash != base.scenario.hash)
    structural("-", "scenario",
               fmt::format("the scenario file changed since the baseline (hash {} now, {} in the baseline): the "
                           "figures are not comparable; replay and run `geotb check --update --reason ...` if the change is intended",
                           cur.scenario.hash.substr(0, 12), base.scenario.hash.substr(0, 12)));
  if (res.mode == GateMode::kAbsolute && (cur.context.clock != base.context.clock || !cur.context.profiled()))
    structural("-", "clock",
               fmt::format("the baseline ran on the virtual clock with a compute profile, this run on {}{}: its "
                           "figures are not comparable (was it run with --clock wall?)",
                           cur.context.clock.value_or("an unrecorded clock"),
                           cur.context.profiled() ? "" : " without a compute profile"));

  const StrategyRun* cur_ref = cur.find(opt.reference);
  if (res.mode == GateMode::kRatio && !cur_ref) {
    const model::Failure* err = cur.failure_of(opt.reference);
    structural(opt.reference, "present",
               err ? fmt::format("the reference strategy failed in this run: {}", err->error)
                   : fmt::format("the reference strategy is missing from this run: no ratio can be formed"));
  }

  for (const StrategyRun& b : base.strategies) {
    const StrategyRun* c = cur.find(b.name);
    if (!c) {
      if (res.mode == GateMode::kRatio && b.name == opt.reference) continue;  // said above
      const model::Failure* err = cur.failure_of(b.name);
      structural(b.name, "present",
                 err ? fmt::format("failed in this run: {}", err->error)
                     : fmt::format("in the baseline but missing from this run (removed from the scenario or not "
                                   "selected with --strategies?)"));
      continue;
    }
    if (res.mode == GateMode::kAbsolute)
      absolute_rows(b, *c, tol, res.rows);
    else if (b.name != opt.reference && cur_ref)
      ratio_rows(b, *c, *base_ref, *cur_ref, tol, res.rows);
    const bool four = res.mode == GateMode::kAbsolute;
    res.rows.push_back(named(judge_higher_is_better_absolute(
                                 four ? round4(b.metrics.final_test_accuracy) : b.metrics.final_test_accuracy,
                                 four ? round4(c->metrics.final_test_accuracy) : c->metrics.final_test_accuracy,
                                 tol.accuracy),
                             b.name, "final accuracy"));
  }
  for (const StrategyRun& c : cur.strategies)
    if (!base.find(c.name)) {
      CheckRow r;
      r.strategy = c.name;
      r.figure = "present";
      r.note = "new: not in the baseline, not gated (run `geotb check --update --reason ...` to gate it)";
      res.rows.push_back(std::move(r));
    }
  return res;
}

namespace {

std::string fmt_value(const std::string& figure, std::optional<double> v) {
  if (!v) return "-";
  if (figure == "throughput ratio") return fmt::format("{:.3f}x", *v);
  if (figure == "WAN bytes ratio") return fmt::format("{:.5g}", *v);
  if (figure == "final accuracy") return fmt::format("{:.4f}", *v);
  if (figure == "samples/s") return fmt::format("{:.2f}", *v);
  if (figure == "exposed comm/step") return fmt::format("{:.4f} ms", *v * 1e3);
  if (figure == "WAN bytes" || figure == "exchanges") return fmt::format("{:.0f}", *v);
  return fmt::format("{:g}", *v);
}

std::string fmt_range(const CheckRow& r) {
  if (r.allowed_lo && r.allowed_hi && *r.allowed_lo == *r.allowed_hi) return "= " + fmt_value(r.figure, r.allowed_lo);
  if (r.allowed_lo && r.allowed_hi)
    return fmt::format("{} .. {}", fmt_value(r.figure, r.allowed_lo), fmt_value(r.figure, r.allowed_hi));
  if (r.allowed_lo) return ">= " + fmt_value(r.figure, r.allowed_lo);
  if (r.allowed_hi) return "<= " + fmt_value(r.figure, r.allowed_hi);
  return "-";
}

const char* verdict_word(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kImproved: return "improved";
    case Verdict::kFail: return "FAIL";
  }
  return "?";
}

/// Whose CPU each report ran on, and what that means for the accuracy's tolerance.
std::string cpu_lines(const CheckResult& r, const RunReport& cur, const RunReport& base) {
  auto cpu = [](const RunReport& rep) {
    return rep.context.cpu ? model::describe_cpu(*rep.context.cpu)
                           : std::string("not recorded (a report older than context.cpu)");
  };
  std::string out = fmt::format("  CPUs: baseline {}; current {}\n", cpu(base), cpu(cur));
  if (r.same_cpu) return out + "  same CPU and kernels as the baseline: the same arithmetic\n";
  return out + fmt::format("  {}, so final accuracy is gated within {:.4f} at least "
                           "(check.cross_cpu_accuracy_tolerance)\n",
                           base.context.cpu && cur.context.cpu
                               ? "another CPU or other kernels than the baseline's: libtorch's arithmetic rounds differently"
                               : "a CPU not recorded: the arithmetic may differ",
                           r.tolerances.cross_cpu_accuracy);
}

std::string mode_line(const CheckResult& r) {
  const Tolerances& t = r.tolerances;
  if (r.mode == GateMode::kAbsolute)
    return fmt::format(
        "  gated: absolute figures of every strategy (the baseline ran on the virtual clock with a compute "
        "profile: every figure is a function of the scenario)\n"
        "  tolerances ({}): samples/s and exposed comm/step {}, WAN bytes {} (relative), exchanges equal, "
        "final accuracy {} at 4 decimals\n",
        r.tolerances_from, pct(t.timing), pct(t.bytes),
        t.accuracy == 0 ? std::string("identical") : fmt::format("-{:.4f}", t.accuracy));
  return fmt::format(
      "  gated: ratios of each strategy to {} in the same run (the baseline's compute was measured, so its "
      "absolute figures move with the host)\n"
      "  tolerances ({}): throughput ratio -{}, WAN bytes ratio +{} (relative), final accuracy -{:.4f} "
      "(absolute)\n",
      r.reference, r.tolerances_from, pct(t.throughput_ratio), pct(t.wan_bytes_ratio), t.accuracy);
}

}  // namespace

std::string format_check_table(const CheckResult& r, const RunReport& cur, const RunReport& base) {
  std::string out =
      fmt::format("geotb check: {} ({}) against the baseline {}\n", cur.source, cur.scenario.name, base.source);
  out += fmt::format("  baseline: git {}, scenario hash {}, {} on {}\n", base.context.git_revision,
                     base.scenario.hash.substr(0, 12), base.context.started_at, base.context.host);
  if (base.baseline)
    out += fmt::format("  baseline since {} because: {}\n", base.baseline->updated_at, base.baseline->reason);
  out += fmt::format("  current:  git {}, scenario hash {}, {} on {}\n", cur.context.git_revision,
                     cur.scenario.hash.substr(0, 12), cur.context.started_at, cur.context.host);
  out += mode_line(r) + cpu_lines(r, cur, base) + "\n";
  out += fmt::format("{:<20} {:<17} {:>13} {:>13} {:>24}  {}\n", "strategy", "figure", "baseline", "current",
                     "allowed", "verdict");
  for (const auto& row : r.rows)
    out += fmt::format("{:<20} {:<17} {:>13} {:>13} {:>24}  {}{}\n", row.strategy, row.figure,
                       fmt_value(row.figure, row.baseline), fmt_value(row.figure, row.current), fmt_range(row),
                       verdict_word(row.verdict),
                       row.verdict == Verdict::kPass || row.note.empty() ? "" : ": " + row.note);
  out += "\n";
  if (r.passed()) {
    out += fmt::format("PASS: {} figures within tolerance", r.rows.size());
    if (const int n = r.count(Verdict::kImproved); n > 0)
      out += fmt::format(", {} improved beyond it (consider `geotb check --update --reason ...` to raise the bar)", n);
    out += "\n";
  } else {
    out += fmt::format("FAIL: {} of {} figures regressed or are missing:\n", r.count(Verdict::kFail), r.rows.size());
    for (const auto& row : r.rows)
      if (row.verdict == Verdict::kFail) {
        if (row.baseline && row.current)
          out += fmt::format("  {}: {} {} -> {} (allowed {}): {}\n", row.strategy, row.figure,
                             fmt_value(row.figure, row.baseline), fmt_value(row.figure, row.current), fmt_range(row),
                             row.note);
        else
          out += fmt::format("  {}: {}: {}\n", row.strategy, row.figure, row.note);
      }
  }
  return out;
}

}  // namespace geotb::harness
