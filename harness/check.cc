#include "harness/check.h"

#include <fmt/format.h>

#include <algorithm>

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

bool CheckResult::passed() const { return count(Verdict::kFail) == 0; }

int CheckResult::count(Verdict v) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [v](const CheckRow& r) { return r.verdict == v; }));
}

CheckResult check_report(const RunReport& cur, const RunReport& base, const CheckOptions& opt) {
  if (cur.scenario.name != base.scenario.name)
    throw ReportError(fmt::format("{} is a run of scenario \"{}\" but the baseline {} is of \"{}\": pick the baseline "
                                  "reports/baselines/{}.json",
                                  cur.source, cur.scenario.name, base.source, base.scenario.name, cur.scenario.name));
  const StrategyRun* base_ref = base.find(opt.reference);
  if (!base_ref)
    throw ReportError(fmt::format("{}: the baseline has no \"{}\" run, the reference of every ratio", base.source,
                                  opt.reference));

  CheckResult res;
  res.reference = opt.reference;
  if (opt.tolerances) {
    res.tolerances = *opt.tolerances;
    res.tolerances_from = "command line";
  } else if (base.scenario.check) {
    // The committed baseline says how much may move, not the report under test (which could
    // otherwise loosen its own gate).
    res.tolerances = *base.scenario.check;
    res.tolerances_from = fmt::format("scenario.check of {}", base.source);
  } else {
    res.tolerances_from = "defaults";
  }
  const model::CheckTolerances& tol = res.tolerances;

  auto structural = [&](const std::string& strategy, const std::string& figure, std::string note) {
    CheckRow r;
    r.strategy = strategy;
    r.figure = figure;
    r.verdict = Verdict::kFail;
    r.note = std::move(note);
    res.rows.push_back(std::move(r));
  };

  if (cur.scenario.hash != base.scenario.hash)
    structural("-", "scenario",
               fmt::format("the scenario file changed since the baseline (hash {} now, {} in the baseline): the "
                           "figures are not comparable; replay and run `geotb check --update` if the change is intended",
                           cur.scenario.hash.substr(0, 12), base.scenario.hash.substr(0, 12)));

  const StrategyRun* cur_ref = cur.find(opt.reference);
  if (!cur_ref) {
    const model::Failure* err = cur.failure_of(opt.reference);
    structural(opt.reference, "present",
               err ? fmt::format("the reference strategy failed in this run: {}", err->error)
                   : fmt::format("the reference strategy is missing from this run: no ratio can be formed"));
  }

  for (const StrategyRun& b : base.strategies) {
    const StrategyRun* c = cur.find(b.name);
    if (!c) {
      const model::Failure* err = cur.failure_of(b.name);
      structural(b.name, "present",
                 err ? fmt::format("failed in this run: {}", err->error)
                     : fmt::format("in the baseline but missing from this run (removed from the scenario or not "
                                   "selected with --strategies?)"));
      continue;
    }
    if (b.name != opt.reference && cur_ref) {
      CheckRow t = judge_higher_is_better_relative(model::metrics::throughput_ratio(b.metrics, base_ref->metrics),
                                                   model::metrics::throughput_ratio(c->metrics, cur_ref->metrics),
                                                   tol.throughput_ratio);
      t.strategy = b.name;
      t.figure = "throughput ratio";
      res.rows.push_back(std::move(t));
      if (base_ref->metrics.wan_payload_bytes > 0 && cur_ref->metrics.wan_payload_bytes > 0) {
        CheckRow w = judge_lower_is_better_relative(model::metrics::wan_bytes_ratio(b.metrics, base_ref->metrics),
                                                    model::metrics::wan_bytes_ratio(c->metrics, cur_ref->metrics),
                                                    tol.wan_bytes_ratio);
        w.strategy = b.name;
        w.figure = "WAN bytes ratio";
        res.rows.push_back(std::move(w));
      }
    }
    CheckRow a = judge_higher_is_better_absolute(b.metrics.final_test_accuracy, c->metrics.final_test_accuracy,
                                                 tol.accuracy);
    a.strategy = b.name;
    a.figure = "final accuracy";
    res.rows.push_back(std::move(a));
  }
  for (const StrategyRun& c : cur.strategies)
    if (!base.find(c.name)) {
      CheckRow r;
      r.strategy = c.name;
      r.figure = "present";
      r.note = "new: not in the baseline, not gated (run `geotb check --update` to gate it)";
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
  return fmt::format("{:g}", *v);
}

std::string fmt_range(const CheckRow& r) {
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

}  // namespace

std::string format_check_table(const CheckResult& r, const RunReport& cur, const RunReport& base) {
  std::string out =
      fmt::format("geotb check: {} ({}) against the baseline {}\n", cur.source, cur.scenario.name, base.source);
  out += fmt::format("  baseline: git {}, {} on {}; current: git {}, {} on {}\n", base.context.git_revision,
                     base.context.started_at, base.context.host, cur.context.git_revision, cur.context.started_at,
                     cur.context.host);
  out += fmt::format(
      "  ratios are of each strategy to {} in the same run; tolerances ({}): throughput ratio -{} (relative), WAN "
      "bytes ratio +{} (relative), final accuracy -{:.4f} (absolute)\n\n",
      r.reference, r.tolerances_from, pct(r.tolerances.throughput_ratio), pct(r.tolerances.wan_bytes_ratio),
      r.tolerances.accuracy);
  out += fmt::format("{:<20} {:<17} {:>10} {:>10} {:>14}  {}\n", "strategy", "figure", "baseline", "current",
                     "allowed", "verdict");
  for (const auto& row : r.rows)
    out += fmt::format("{:<20} {:<17} {:>10} {:>10} {:>14}  {}{}\n", row.strategy, row.figure,
                       fmt_value(row.figure, row.baseline), fmt_value(row.figure, row.current), fmt_range(row),
                       verdict_word(row.verdict),
                       row.verdict == Verdict::kPass || row.note.empty() ? "" : ": " + row.note);
  out += "\n";
  if (r.passed()) {
    out += fmt::format("PASS: {} figures within tolerance", r.rows.size());
    if (const int n = r.count(Verdict::kImproved); n > 0)
      out += fmt::format(", {} improved beyond it (consider `geotb check --update` to raise the bar)", n);
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
