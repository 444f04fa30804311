// Unit tests of the regression gate (harness/check.h): exact decisions on crafted reports, at
// the edges of each tolerance, and the errors of the report reader. Values are chosen to be
// exact in binary floating point (ratios like 3/2, tolerances like 0.25) so "on the bound" is
// really on the bound.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "harness/check.h"
#include "harness/host_cpu.h"
#include "model/metrics.h"
#include "model/report.h"
#include "crafted_report.h"

namespace geotb::harness {
namespace {

using nlohmann::json;

using crafted::report_json;
using crafted::Strat;
using model::CheckTolerances;
using model::parse_report;
using model::ReportError;
using model::RunReport;

RunReport report(const std::vector<Strat>& s, json check = nullptr) {
  return parse_report(report_json(s, std::move(check)), "crafted.json");
}

// Tolerances exact in binary: 0.25 relative, 0.125 absolute, 0.5 relative.
const json kTol = {{"throughput_ratio_tolerance", 0.25}, {"accuracy_tolerance", 0.125}, {"wan_bytes_ratio_tolerance", 0.5}};

// Baseline: hier 4x naive's throughput (400/100), WAN ratio 1/4 (256/1024), accuracies 0.75.
RunReport baseline() {
  return report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}, kTol);
}

const CheckRow& row(const CheckResult& r, const std::string& strategy, const std::string& figure) {
  for (const auto& x : r.rows)
    if (x.strategy == strategy && x.figure == figure) return x;
  ADD_FAILURE() << "no row " << strategy << " / " << figure;
  static CheckRow none;
  return none;
}

TEST(CheckJudge, HigherIsBetterRelativeEdges) {
  // baseline 4, tolerance 0.25: allowed >= 3 (inclusive), improved > 5.
  EXPECT_EQ(judge_higher_is_better_relative(4, 3, 0.25).verdict, Verdict::kPass);
  EXPECT_EQ(*judge_higher_is_better_relative(4, 3, 0.25).allowed_lo, 3.0);
  EXPECT_EQ(judge_higher_is_better_relative(4, std::nextafter(3.0, 0.0), 0.25).verdict, Verdict::kFail);
  EXPECT_EQ(judge_higher_is_better_relative(4, 5, 0.25).verdict, Verdict::kPass);
  EXPECT_EQ(judge_higher_is_better_relative(4, std::nextafter(5.0, 9.0), 0.25).verdict, Verdict::kImproved);
  EXPECT_FALSE(judge_higher_is_better_relative(4, 3, 0.25).allowed_hi.has_value());
}

TEST(CheckJudge, LowerIsBetterRelativeEdges) {
  // baseline 0.25, tolerance 0.5: allowed <= 0.375, improved < 0.125.
  EXPECT_EQ(judge_lower_is_better_relative(0.25, 0.375, 0.5).verdict, Verdict::kPass);
  EXPECT_EQ(judge_lower_is_better_relative(0.25, std::nextafter(0.375, 1.0), 0.5).verdict, Verdict::kFail);
  EXPECT_EQ(judge_lower_is_better_relative(0.25, 0.125, 0.5).verdict, Verdict::kPass);
  EXPECT_EQ(judge_lower_is_better_relative(0.25, std::nextafter(0.125, 0.0), 0.5).verdict, Verdict::kImproved);
}

TEST(CheckJudge, AbsoluteEdges) {
  // baseline 0.75, tolerance 0.125: allowed >= 0.625.
  EXPECT_EQ(judge_higher_is_better_absolute(0.75, 0.625, 0.125).verdict, Verdict::kPass);
  EXPECT_EQ(judge_higher_is_better_absolute(0.75, std::nextafter(0.625, 0.0), 0.125).verdict, Verdict::kFail);
  EXPECT_EQ(judge_higher_is_better_absolute(0.75, 0.875, 0.125).verdict, Verdict::kPass);
  EXPECT_EQ(judge_higher_is_better_absolute(0.75, std::nextafter(0.875, 1.0), 0.125).verdict, Verdict::kImproved);
}

TEST(Check, IdenticalRunPasses) {
  const CheckResult r = check_report(baseline(), baseline());
  EXPECT_TRUE(r.passed());
  // naive: accuracy only; hier: throughput ratio, WAN ratio, accuracy.
  EXPECT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.count(Verdict::kPass), 4);
  EXPECT_EQ(r.tolerances.throughput_ratio, 0.25);
  EXPECT_EQ(r.tolerances.accuracy, 0.125);
  EXPECT_EQ(r.tolerances.wan_bytes_ratio, 0.5);
}

TEST(Check, ThroughputRatioOnTheBoundPassesJustBelowFails) {
  // Ratio 3 = 4 * (1 - 0.25): on the bound. Both strategies slower: only the ratio counts.
  auto on = report({{"naive_ddp", 50, 1024, 0.75}, {"hier", 150, 256, 0.75}}, kTol);
  const CheckResult pass = check_report(on, baseline());
  EXPECT_TRUE(pass.passed());
  EXPECT_EQ(*row(pass, "hier", "throughput ratio").current, 3.0);
  EXPECT_EQ(*row(pass, "hier", "throughput ratio").allowed_lo, 3.0);

  auto below = report({{"naive_ddp", 50, 1024, 0.75}, {"hier", std::nextafter(150.0, 0.0), 256, 0.75}}, kTol);
  const CheckResult fail = check_report(below, baseline());
  EXPECT_FALSE(fail.passed());
  EXPECT_EQ(row(fail, "hier", "throughput ratio").verdict, Verdict::kFail);
  EXPECT_EQ(fail.count(Verdict::kFail), 1);
  const std::string table = format_check_table(fail, below, baseline());
  EXPECT_NE(table.find("FAIL: 1 of 4"), std::string::npos) << table;
  EXPECT_NE(table.find("hier: throughput ratio 4.000x -> 3.000x (allowed >= 3.000x)"), std::string::npos) << table;
}

TEST(Check, HalvedThroughputFails) {
  auto halved = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 200, 256, 0.75}}, kTol);
  const CheckResult r = check_report(halved, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(row(r, "hier", "throughput ratio").verdict, Verdict::kFail);
  EXPECT_NE(row(r, "hier", "throughput ratio").note.find("fell 50% below the baseline (tolerance 25%)"), std::string::npos)
      << row(r, "hier", "throughput ratio").note;
}

TEST(Check, FasterIsImprovedAndPasses) {
  auto faster = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 600, 256, 0.75}}, kTol);
  const CheckResult r = check_report(faster, baseline());
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(row(r, "hier", "throughput ratio").verdict, Verdict::kImproved);
}

TEST(Check, WanBytesRatioEdges) {
  // Baseline ratio 1/4; tolerance 0.5: allowed <= 3/8 = 384/1024.
  auto on = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 384, 0.75}}, kTol);
  EXPECT_TRUE(check_report(on, baseline()).passed());
  auto above = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 385, 0.75}}, kTol);
  const CheckResult r = check_report(above, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(row(r, "hier", "WAN bytes ratio").verdict, Verdict::kFail);
  auto less = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 127, 0.75}}, kTol);
  EXPECT_EQ(row(check_report(less, baseline()), "hier", "WAN bytes ratio").verdict, Verdict::kImproved);
}

TEST(Check, AccuracyEdgesForEveryStrategyIncludingTheReference) {
  auto on = report({{"naive_ddp", 100, 1024, 0.625}, {"hier", 400, 256, 0.625}}, kTol);
  EXPECT_TRUE(check_report(on, baseline()).passed());
  auto below = report({{"naive_ddp", 100, 1024, 0.6249}, {"hier", 400, 256, 0.75}}, kTol);
  const CheckResult r = check_report(below, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(row(r, "naive_ddp", "final accuracy").verdict, Verdict::kFail);
  EXPECT_EQ(row(r, "hier", "final accuracy").verdict, Verdict::kPass);
}

TEST(Check, DefaultTolerancesWithoutScenarioCheck) {
  auto base = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}});
  // Default throughput tolerance 0.15: 4 * 0.85 = 3.4 passes, 3.3 fails.
  auto ok = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 340, 256, 0.75}});
  auto bad = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 330, 256, 0.75}});
  const CheckResult r_ok = check_report(ok, base);
  EXPECT_EQ(r_ok.tolerances_from, "defaults");
  EXPECT_TRUE(r_ok.passed());
  EXPECT_FALSE(check_report(bad, base).passed());
  // Default accuracy tolerance 0.01 (absolute): 0.745 passes, 0.735 fails.
  EXPECT_TRUE(check_report(report({{"naive_ddp", 100, 1024, 0.745}, {"hier", 400, 256, 0.75}}), base).passed());
  EXPECT_FALSE(check_report(report({{"naive_ddp", 100, 1024, 0.735}, {"hier", 400, 256, 0.75}}), base).passed());
}

TEST(Check, TolerancesComeFromTheBaselineNotFromTheReportUnderTest) {
  // Baseline allows 25 %; the report under test claims 60 %: 4 * 0.7 = 2.8 < 3.0 must still fail.
  const json loose = {{"throughput_ratio_tolerance", 0.6}, {"accuracy_tolerance", 0.5}, {"wan_bytes_ratio_tolerance", 1.0}};
  auto slower = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 280, 256, 0.75}}, loose);
  const CheckResult r = check_report(slower, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.tolerances.throughput_ratio, 0.25);
  EXPECT_EQ(r.tolerances_from, "scenario.check of crafted.json");
  EXPECT_EQ(row(r, "hier", "throughput ratio").verdict, Verdict::kFail);
}

TEST(Check, CommandLineTolerancesOverride) {
  auto halved = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 200, 256, 0.75}}, kTol);
  CheckOptions opt;
  opt.tolerances = CheckTolerances{.throughput_ratio = 0.5, .wan_bytes_ratio = 0.5, .accuracy = 0.125, .timing = {}, .bytes = {}, .cross_cpu_accuracy = {}};
  const CheckResult r = check_report(halved, baseline(), opt);
  EXPECT_TRUE(r.passed());  // 2 >= 4 * 0.5
  EXPECT_EQ(r.tolerances_from, "command line");
}

TEST(Check, MissingStrategyFailsWithAClearMessage) {
  auto missing = report({{"naive_ddp", 100, 1024, 0.75}}, kTol);
  const CheckResult r = check_report(missing, baseline());
  EXPECT_FALSE(r.passed());
  const CheckRow& p = row(r, "hier", "present");
  EXPECT_EQ(p.verdict, Verdict::kFail);
  EXPECT_NE(p.note.find("in the baseline but missing from this run"), std::string::npos) << p.note;
}

TEST(Check, FailedStrategyFailsWithItsError) {
  json j = report_json({{"naive_ddp", 100, 1024, 0.75}}, kTol);
  j["failures"] = {{{"strategy", "hier"}, {"error", "peer us-west/1 died"}}};
  const RunReport cur = parse_report(j, "cur.json");
  const CheckResult r = check_report(cur, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_NE(row(r, "hier", "present").note.find("failed in this run: peer us-west/1 died"), std::string::npos);
}

TEST(Check, MissingReferenceInCurrentFails) {
  auto noref = report({{"hier", 400, 256, 0.75}}, kTol);
  const CheckResult r = check_report(noref, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(row(r, "naive_ddp", "present").verdict, Verdict::kFail);
}

TEST(Check, NewStrategyIsReportedNotGated) {
  auto more = report({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}, {"lan", 900, 0, 0.8}}, kTol);
  const CheckResult r = check_report(more, baseline());
  EXPECT_TRUE(r.passed());
  EXPECT_NE(row(r, "lan", "present").note.find("not in the baseline"), std::string::npos);
}

TEST(Check, ChangedScenarioHashFails) {
  const RunReport cur = parse_report(report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}, kTol,
                                                 std::string(64, 'b')),
                                     "cur.json");
  const CheckResult r = check_report(cur, baseline());
  EXPECT_FALSE(r.passed());
  EXPECT_NE(row(r, "-", "scenario").note.find("scenario file changed"), std::string::npos);
}

// ---- Absolute gating: a baseline on the virtual clock with a declared compute profile. ----

/// `j` as a virtual-clock run with a 12 ms compute profile (what makes the gate absolute).
json virtual_clock(json j) {
  j["context"]["clock"] = "virtual";
  j["context"]["compute_profile"] = {{"step_time_s", 0.012}, {"reduce_ns_per_element", 0.5},
                                     {"compress_ns_per_element", 2.0}};
  return j;
}

RunReport vreport(const std::vector<Strat>& s, json check = nullptr) {
  return parse_report(virtual_clock(report_json(s, std::move(check))), "vcur.json");
}

/// The absolute baseline: no scenario.check (the defaults: 0.5 % timing and bytes, accuracy
/// identical to 4 decimals).
RunReport vbaseline() {
  return parse_report(virtual_clock(report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}})),
                      "vbase.json");
}

/// vbaseline() with `edit` applied to strategy `name`'s metrics.
RunReport vedited(const std::string& name, const std::function<void(json&)>& edit) {
  json j = virtual_clock(report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}));
  for (json& s : j["strategies"])
    if (s["name"] == name) edit(s["metrics"]);
  return parse_report(j, "vcur.json");
}

TEST(CheckAbsolute, ModeFollowsTheBaselinesClockAndProfile) {
  EXPECT_EQ(gate_mode_of(vbaseline()), GateMode::kAbsolute);
  EXPECT_EQ(gate_mode_of(baseline()), GateMode::kRatio);  // no clock recorded
  json measured = report_json({{"naive_ddp", 100, 1024, 0.75}});
  measured["context"]["clock"] = "virtual";  // measured CPU time: no profile
  EXPECT_EQ(gate_mode_of(parse_report(measured, "m.json")), GateMode::kRatio);
  json per_dc = report_json({{"naive_ddp", 100, 1024, 0.75}});
  per_dc["context"]["clock"] = "virtual";
  per_dc["context"]["compute_profile_by_dc"] = {
      {"a", {{"step_time_s", 0.01}, {"reduce_ns_per_element", 0.5}, {"compress_ns_per_element", 2.0}}}};
  EXPECT_EQ(gate_mode_of(parse_report(per_dc, "d.json")), GateMode::kAbsolute);
}

TEST(CheckAbsolute, IdenticalRunPassesWithEveryFigureOfEveryStrategy) {
  const CheckResult r = check_report(vbaseline(), vbaseline());
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.mode, GateMode::kAbsolute);
  EXPECT_EQ(r.rows.size(), 10u);  // 5 figures x 2 strategies, naive_ddp included
  for (const char* fig : {"samples/s", "exposed comm/step", "WAN bytes", "exchanges", "final accuracy"}) {
    EXPECT_EQ(row(r, "naive_ddp", fig).verdict, Verdict::kPass) << fig;
    EXPECT_EQ(row(r, "hier", fig).verdict, Verdict::kPass) << fig;
  }
  EXPECT_EQ(r.tolerances.timing, 0.005);
  EXPECT_EQ(r.tolerances.bytes, 0.005);
  EXPECT_EQ(r.tolerances.accuracy, 0.0);
  EXPECT_EQ(*row(r, "naive_ddp", "samples/s").allowed_lo, 100 * (1 - 0.005));
  const std::string table = format_check_table(r, vbaseline(), vbaseline());
  EXPECT_NE(table.find("absolute figures of every strategy"), std::string::npos) << table;
  EXPECT_NE(table.find("baseline: git abc, scenario hash aaaaaaaaaaaa"), std::string::npos) << table;
}

TEST(CheckAbsolute, ReferenceSlowerFailsThoughRatiosWouldPass) {
  // naive_ddp 3 % slower: hier's ratio to it rises, which the ratio gate reads as better.
  const RunReport cur = vedited("naive_ddp", [](json& m) { m["samples_per_s"] = 97.0; });
  const CheckResult r = check_report(cur, vbaseline());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(row(r, "naive_ddp", "samples/s").verdict, Verdict::kFail);
  EXPECT_EQ(r.count(Verdict::kFail), 1);
  // Every strategy 1.5x slower fails twice.
  json j = virtual_clock(report_json({{"naive_ddp", 100 / 1.5, 1024, 0.75}, {"hier", 400 / 1.5, 256, 0.75}}));
  const CheckResult both = check_report(parse_report(j, "both.json"), vbaseline());
  EXPECT_EQ(both.count(Verdict::kFail), 2);
}

TEST(CheckAbsolute, OnePercentSlowerFailsHalfAPercentPasses) {
  EXPECT_EQ(row(check_report(vedited("hier", [](json& m) { m["samples_per_s"] = 396.0; }), vbaseline()), "hier",
                "samples/s")
                .verdict,
            Verdict::kFail);
  EXPECT_TRUE(check_report(vedited("hier", [](json& m) { m["samples_per_s"] = 398.5; }), vbaseline()).passed());
}

TEST(CheckAbsolute, BoundsAreInclusiveWithTheBaselinesOwnTolerances) {
  // timing 0.25, bytes 0.5, accuracy 0.125: exact in binary.
  const json tol = {{"throughput_ratio_tolerance", 0.15}, {"wan_bytes_ratio_tolerance", 0.05},
                    {"timing_tolerance", 0.25}, {"bytes_tolerance", 0.5}, {"accuracy_tolerance", 0.125}};
  const RunReport base = vreport({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}, tol);
  EXPECT_TRUE(check_report(vreport({{"naive_ddp", 75, 1536, 0.625}, {"hier", 300, 384, 0.625}}), base).passed());
  const CheckResult r = check_report(
      vreport({{"naive_ddp", std::nextafter(75.0, 0.0), 1537, 0.6249}, {"hier", 300, 384, 0.625}}), base);
  EXPECT_EQ(row(r, "naive_ddp", "samples/s").verdict, Verdict::kFail);
  EXPECT_EQ(row(r, "naive_ddp", "WAN bytes").verdict, Verdict::kFail);
  EXPECT_EQ(row(r, "naive_ddp", "final accuracy").verdict, Verdict::kFail);
  EXPECT_EQ(r.count(Verdict::kFail), 3);
  EXPECT_EQ(r.tolerances_from, "scenario.check of vcur.json");
}

TEST(CheckAbsolute, ExposedCommWanBytesExchangesAndAccuracy) {
  auto fails_only = [](const RunReport& cur, const std::string& strategy, const std::string& figure) {
    const CheckResult r = check_report(cur, vbaseline());
    EXPECT_EQ(r.count(Verdict::kFail), 1) << format_check_table(r, cur, vbaseline());
    EXPECT_EQ(row(r, strategy, figure).verdict, Verdict::kFail) << figure;
  };
  fails_only(vedited("hier", [](json& m) { m["exposed_comm_s_per_step"] = 0.002 * 1.01; }), "hier", "exposed comm/step");
  fails_only(vedited("hier", [](json& m) { m["wan_payload_bytes"] = 259; }), "hier", "WAN bytes");  // +1.2 %
  fails_only(vedited("naive_ddp", [](json& m) { m["wan_payload_bytes"] = 1035; }), "naive_ddp", "WAN bytes");
  fails_only(vedited("hier", [](json& m) { m["exchanges"] = 5; }), "hier", "exchanges");
  fails_only(vedited("hier", [](json& m) { m["exchanges"] = 3; }), "hier", "exchanges");
  fails_only(vedited("naive_ddp", [](json& m) { m["final_test_accuracy"] = 0.748; }), "naive_ddp", "final accuracy");
  // Identical to 4 decimals: a difference in the fifth passes.
  EXPECT_TRUE(check_report(vedited("hier", [](json& m) { m["final_test_accuracy"] = 0.75004; }), vbaseline()).passed());
  EXPECT_TRUE(check_report(vedited("hier", [](json& m) { m["wan_payload_bytes"] = 257; }), vbaseline()).passed());
}

TEST(CheckAbsolute, MissingStrategyFailsEvenTheReference) {
  const RunReport cur = vreport({{"hier", 400, 256, 0.75}});
  const CheckResult r = check_report(cur, vbaseline());
  EXPECT_EQ(row(r, "naive_ddp", "present").verdict, Verdict::kFail);
  EXPECT_EQ(r.count(Verdict::kFail), 1);
  EXPECT_NO_THROW(check_report(cur, parse_report(virtual_clock(report_json({{"hier", 400, 256, 0.75}})), "b.json")));
}

TEST(CheckAbsolute, DirtyBaselineAndAnotherClockFail) {
  json dirty = virtual_clock(report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}));
  dirty["context"]["git_revision"] = "abc-dirty";
  const CheckResult r = check_report(vbaseline(), parse_report(dirty, "dirty.json"));
  EXPECT_EQ(row(r, "-", "baseline").verdict, Verdict::kFail);
  EXPECT_NE(row(r, "-", "baseline").note.find("abc-dirty"), std::string::npos);
  EXPECT_EQ(r.count(Verdict::kFail), 1);
  EXPECT_TRUE(clean_revision("ac777cc"));
  EXPECT_FALSE(clean_revision("ac777cc-dirty"));
  EXPECT_FALSE(clean_revision("unknown"));

  json wall = report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}});
  wall["context"]["clock"] = "wall";
  const CheckResult w = check_report(parse_report(wall, "wall.json"), vbaseline());
  EXPECT_EQ(row(w, "-", "clock").verdict, Verdict::kFail);
  EXPECT_NE(row(w, "-", "clock").note.find("this run on wall without a compute profile"), std::string::npos)
      << row(w, "-", "clock").note;
}

TEST(CheckCpu, AnotherOrUnrecordedCpuGatesAccuracyWithinTheCrossCpuTolerance) {
  // Same CPU record: identical to 4 decimals; 0.748 against 0.75 fails.
  const RunReport lower = vedited("naive_ddp", [](json& m) { m["final_test_accuracy"] = 0.748; });
  const CheckResult same = check_report(lower, vbaseline());
  EXPECT_TRUE(same.same_cpu);
  EXPECT_EQ(same.tolerances.accuracy, 0.0);
  EXPECT_EQ(row(same, "naive_ddp", "final accuracy").verdict, Verdict::kFail);

  // Another OpenBLAS core (the same CPU model): accuracy within 0.01, every other figure as tight.
  json other = virtual_clock(report_json({{"naive_ddp", 100, 1024, 0.748}, {"hier", 400, 256, 0.75}}));
  other["context"]["cpu"]["blas"] = "SkylakeX";
  const RunReport other_cpu = parse_report(other, "other.json");
  const CheckResult r = check_report(other_cpu, vbaseline());
  EXPECT_FALSE(r.same_cpu);
  EXPECT_EQ(r.tolerances.accuracy, 0.01);
  EXPECT_TRUE(r.passed()) << format_check_table(r, other_cpu, vbaseline());
  EXPECT_EQ(*row(r, "naive_ddp", "final accuracy").allowed_lo, 0.75 - 0.01);
  const std::string table = format_check_table(r, other_cpu, vbaseline());
  EXPECT_NE(table.find("CPUs: baseline Test CPU (OpenBLAS Haswell, oneDNN avx2); current Test CPU (OpenBLAS "
                       "SkylakeX, oneDNN avx2)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("another CPU or other kernels than the baseline's"), std::string::npos) << table;
  // Beyond 0.01 it fails; a timing regression still fails at 0.5 %.
  other["strategies"][0]["metrics"]["final_test_accuracy"] = 0.7399;
  EXPECT_EQ(row(check_report(parse_report(other, "o.json"), vbaseline()), "naive_ddp", "final accuracy").verdict,
            Verdict::kFail);
  other["strategies"][0]["metrics"]["final_test_accuracy"] = 0.75;
  other["strategies"][1]["metrics"]["samples_per_s"] = 396.0;
  EXPECT_EQ(row(check_report(parse_report(other, "o.json"), vbaseline()), "hier", "samples/s").verdict, Verdict::kFail);

  // ATEN_CPU_CAPABILITY set differently is another arithmetic too.
  json aten = virtual_clock(report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}));
  aten["context"]["cpu"]["aten_cpu_capability"] = "default";
  EXPECT_FALSE(check_report(parse_report(aten, "a.json"), vbaseline()).same_cpu);

  // A baseline without a CPU record (older reports): the same floor, said so.
  json old = virtual_clock(report_json({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}));
  old["context"].erase("cpu");
  const RunReport old_base = parse_report(old, "old.json");
  const CheckResult u = check_report(lower, old_base);
  EXPECT_FALSE(u.same_cpu);
  EXPECT_TRUE(u.passed());
  EXPECT_NE(format_check_table(u, lower, old_base).find("baseline not recorded (a report older than context.cpu)"),
            std::string::npos);

  // The baseline's own cross_cpu_accuracy_tolerance; an explicit accuracy_tolerance above it wins.
  json tol = {{"throughput_ratio_tolerance", 0.15}, {"wan_bytes_ratio_tolerance", 0.05},
              {"cross_cpu_accuracy_tolerance", 0.001}};
  const RunReport strict = vreport({{"naive_ddp", 100, 1024, 0.75}, {"hier", 400, 256, 0.75}}, tol);
  EXPECT_EQ(check_report(other_cpu, strict).tolerances.accuracy, 0.001);
  EXPECT_FALSE(check_report(other_cpu, strict).passed());
  tol["accuracy_tolerance"] = 0.125;
  EXPECT_EQ(check_report(other_cpu, vreport({{"naive_ddp", 100, 1024, 0.75}}, tol)).tolerances.accuracy, 0.125);
}

TEST(CheckCpu, CpuRecordRoundTripsAndReadsCpuinfo) {
  model::CpuContext c{"AMD EPYC 7B13", "sse4_2 avx avx2 fma", "Zen", "avx2", "avx2"};
  json j = c;
  EXPECT_EQ(j.at("aten_cpu_capability"), "avx2");
  EXPECT_EQ(j.get<model::CpuContext>(), c);
  c.aten_cpu_capability.clear();
  j = c;
  EXPECT_FALSE(j.contains("aten_cpu_capability"));
  EXPECT_EQ(model::describe_cpu(c), "AMD EPYC 7B13 (OpenBLAS Zen, oneDNN avx2)");

  const std::string cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n"
      "flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16\n\n"
      "processor\t: 1\nmodel name\t: Other\nflags\t\t: fpu\n";
  const model::CpuContext x = parse_cpuinfo(cpuinfo);
  EXPECT_EQ(x.model, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz");
  EXPECT_EQ(x.features, "sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512dq");
  EXPECT_EQ(parse_cpuinfo("").model, "");
  EXPECT_EQ(onednn_isa_name(0x7), "avx2");
  EXPECT_EQ(onednn_isa_name(0x27), "avx512_core");
  EXPECT_EQ(onednn_isa_name(0xf), "0xf");  // avx512_mic in oneDNN 2, avx2_vnni in 3: not named
}

TEST(Check, DifferentScenarioOrBaselineWithoutReferenceIsAUsageError) {
  json other = report_json({{"naive_ddp", 100, 1024, 0.75}}, kTol);
  other["scenario"]["name"] = "other";
  EXPECT_THROW(check_report(parse_report(other, "o.json"), baseline()), ReportError);
  auto noref = report({{"hier", 400, 256, 0.75}}, kTol);
  EXPECT_THROW(check_report(baseline(), noref), ReportError);
}

TEST(ReportReader, ErrorsNameFileFieldAndValue) {
  auto message = [](const json& j) {
    try {
      parse_report(j, "r.json");
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json j = report_json({{"naive_ddp", 100, 1024, 0.75}});
  json bad = j;
  bad["strategies"][0]["metrics"]["samples_per_s"] = "fast";
  EXPECT_EQ(message(bad), "r.json: strategies[0].metrics.samples_per_s: expected a number, got \"fast\"");
  bad = j;
  bad["strategies"][0]["metrics"].erase("final_test_accuracy");
  EXPECT_EQ(message(bad), "r.json: strategies[0].metrics.final_test_accuracy: missing");
  bad = j;
  bad["schema"] = "something.else";
  EXPECT_EQ(message(bad), "r.json: schema: \"something.else\": not a geotb run report (expected \"geotb.report\")");
  bad = j;
  bad["strategies"][0]["metrics"]["final_test_accuracy"] = 1.5;
  EXPECT_EQ(message(bad), "r.json: strategies[0].metrics.final_test_accuracy: must be in [0, 1], got 1.5");
  bad = j;
  bad["strategies"][0]["series"]["step_end_s"] = {1.0};
  EXPECT_EQ(message(bad), "r.json: strategies[0].series.step_end_s: has 1 entries but loss has 4 (one per step each)");
  bad = j;
  bad["strategies"].push_back(bad["strategies"][0]);
  EXPECT_EQ(message(bad), "r.json: strategies[1].name: \"naive_ddp\" appears twice");
  EXPECT_EQ(message(json::array()), "r.json: (top level): expected a JSON object (a geotb run report), got []");
}

TEST(ReportReader, ReadsSeriesAndSamplesPerStep) {
  const RunReport r = baseline();
  ASSERT_EQ(r.strategies.size(), 2u);
  EXPECT_EQ(r.strategies[1].series.loss.size(), 4u);
  EXPECT_EQ(model::metrics::samples_per_step(r.strategies[1]), 256.0);
  EXPECT_EQ(r.strategies[1].series.test_accuracy[0].samples, 1024u);
  EXPECT_EQ(r.scenario.wan[0].bandwidth_bps, 1e9);
  ASSERT_TRUE(r.scenario.check.has_value());
  EXPECT_EQ(r.scenario.check->accuracy, 0.125);
}

}  // namespace
}  // namespace geotb::harness
