#include "harness/cmd_check.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "common/atomic_file.h"
#include "harness/check.h"
#include "harness/report.h"

namespace geotb::harness {

namespace {

struct CheckArgs {
  std::string report;
  std::string baseline;
  std::string reference = model::metrics::kDefaultBaseline;
  bool update = false;
  std::string reason;  ///< --update: why the baseline moves (recorded in it)
  std::optional<double> throughput_tol, accuracy_tol, wan_tol, timing_tol, bytes_tol, cross_cpu_tol;  ///< overrides of scenario.check
};

/// Writes `report` as the baseline `to`, with why and when (model::BaselineRecord), atomically
/// (common/atomic_file.h): a crash leaves either the old baseline or the new one, never half of one.
void write_baseline(model::RunReport report, const CheckArgs& a) {
  report.baseline = model::BaselineRecord{a.reason, utc_now_iso(), a.report};
  const std::filesystem::path target(a.baseline);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  common::write_file_atomically(a.baseline, nlohmann::json(report).dump(1) + "\n");
}

int run_check(const CheckArgs& a) {
  model::RunReport cur;
  try {
    cur = model::load_report(a.report);
  } catch (const model::ReportError& e) {
    fmt::print(stderr, "geotb check: error: {}\n", e.what());
    return 2;
  }
  if (a.update && a.reason.empty()) {
    fmt::print(stderr, "geotb check: error: --update needs --reason \"why the baseline moves\" (it is recorded in the "
                       "baseline and shown by every check against it)\n");
    return 2;
  }
  const bool have_baseline = std::filesystem::exists(a.baseline);
  if (!have_baseline && !a.update) {
    fmt::print(stderr,
               "geotb check: error: {}: no such baseline (create it deliberately with `geotb check {} --baseline {} "
               "--update`)\n",
               a.baseline, a.report, a.baseline);
    return 2;
  }
  if (have_baseline) {
    try {
      const model::RunReport base = model::load_report(a.baseline);
      CheckOptions opt{a.reference, std::nullopt};
      if (a.throughput_tol || a.accuracy_tol || a.wan_tol || a.timing_tol || a.bytes_tol || a.cross_cpu_tol) {
        model::CheckTolerances t = base.scenario.check.value_or(model::CheckTolerances{});  // the rest: the baseline's
        if (a.throughput_tol) t.throughput_ratio = *a.throughput_tol;
        if (a.accuracy_tol) t.accuracy = *a.accuracy_tol;
        if (a.wan_tol) t.wan_bytes_ratio = *a.wan_tol;
        if (a.timing_tol) t.timing = *a.timing_tol;
        if (a.bytes_tol) t.bytes = *a.bytes_tol;
        if (a.cross_cpu_tol) t.cross_cpu_accuracy = *a.cross_cpu_tol;
        opt.tolerances = t;
      }
      const CheckResult res = check_report(cur, base, opt);
      fmt::print("{}", format_check_table(res, cur, base));
      if (!a.update) return res.passed() ? 0 : 1;
    } catch (const model::ReportError& e) {
      fmt::print(stderr, "geotb check: error: {}\n", e.what());
      if (!a.update) return 2;
    }
  }
  // --update: the run becomes the baseline, whatever the comparison said (a deliberate act).
  if (!cur.failures.empty()) {
    fmt::print(stderr, "geotb check: error: {}: refusing to make a run with failed strategies the baseline ({}: {})\n",
               a.report, cur.failures[0].strategy, cur.failures[0].error);
    return 2;
  }
  if (!clean_revision(cur.context.git_revision)) {
    fmt::print(stderr,
               "geotb check: error: {}: refusing to make a run of geotb built from git {} the baseline: a baseline "
               "must be reproducible from a clean commit (commit, rebuild, replay, then --update)\n",
               a.report, cur.context.git_revision);
    return 2;
  }
  try {
    write_baseline(cur, a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb check: error: updating the baseline: {}\n", e.what());
    return 2;
  }
  fmt::print("baseline {} updated from {} (git {}, {}) because: {}; commit it to gate on it\n", a.baseline, a.report,
             cur.context.git_revision, cur.context.started_at, a.reason);
  return 0;
}

}  // namespace

void register_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Regression gate: compare a run report with a baseline report (absolute samples/s, exposed comm, WAN "
               "bytes, exchanges and accuracy of every strategy when the baseline ran on the virtual clock with a "
               "compute profile; otherwise ratios to naive_ddp in the same run); exit 0 pass, 1 regression, 2 bad "
               "input");
  cmd->add_option("report", args->report, "Report of `geotb run` to check")->required();
  cmd->add_option("--baseline", args->baseline, "Baseline report (reports/baselines/<scenario>.json)")->required();
  cmd->add_option("--reference", args->reference, "Strategy every ratio is taken against")->capture_default_str();
  cmd->add_option("--throughput-tolerance", args->throughput_tol,
                  "Relative tolerance of the throughput ratios (overrides scenario.check; 0.15 = 15 %)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--accuracy-tolerance", args->accuracy_tol,
                  "Absolute tolerance of final accuracy (overrides scenario.check; 0.01 = one point; default 0.01 for "
                  "ratio gating, 0 at 4 decimals for absolute gating)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--wan-tolerance", args->wan_tol,
                  "Relative tolerance of the WAN-bytes ratios (overrides scenario.check)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--timing-tolerance", args->timing_tol,
                  "Relative tolerance of samples/s and exposed comm per step, absolute gating (overrides "
                  "scenario.check; default 0.005)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--bytes-tolerance", args->bytes_tol,
                  "Relative tolerance of WAN payload bytes, absolute gating (overrides scenario.check; default 0.005)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--cross-cpu-accuracy-tolerance", args->cross_cpu_tol,
                  "The least absolute tolerance of final accuracy when the baseline ran on another CPU or kernels, or "
                  "does not record its CPU (overrides scenario.check; default 0.01)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--update", args->update,
                "Make this report the baseline (written to a temporary file, then renamed over it); needs --reason "
                "and a report of geotb built from a clean commit");
  cmd->add_option("--reason", args->reason, "--update: why the baseline moves (recorded in the baseline)");
  cmd->callback([args]() {
    if (const int rc = run_check(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
