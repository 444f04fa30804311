// The model's JSON mappings (model/report.h, model/rank_report.h) and derived figures
// (model/metrics.h): committed reports read back and written again key for key, rank files
// round-trip, the readers' errors name the field, and the figures on crafted values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "model/json_file.h"
#include "model/metrics.h"
#include "model/rank_report.h"
#include "model/report.h"

namespace geotb::model {
namespace {

using nlohmann::json;

const std::filesystem::path kSource = GEOTB_SOURCE_DIR;

/// Every committed report: the gate's baselines and the report tests' data.
std::vector<std::filesystem::path> committed_reports() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"reports/baselines", "tests/report/data"})
    for (const auto& e : std::filesystem::directory_iterator(kSource / dir))
      if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ReportModel, CommittedReportsRoundTripKeyForKey) {
  const auto files = committed_reports();
  ASSERT_GE(files.size(), 2u);
  for (const auto& p : files) {
    const json original = read_json_file(p.string());
    const RunReport r = parse_report(original, p.string());
    const json again = r;
    EXPECT_EQ(again, original) << p << ": " << json::diff(original, again).dump(1);
    // And the text form is stable too: writing what was read gives the same document again.
    EXPECT_EQ(json(parse_report(json::parse(again.dump(1)), "again")), again) << p;
  }
}

TEST(ReportModel, BaselineReadsTyped) {
  const RunReport r = load_report((kSource / "reports/baselines/us-east-us-west.json").string());
  EXPECT_EQ(r.scenario.name, "us-east-us-west");
  ASSERT_EQ(r.scenario.wan.size(), 1u);
  EXPECT_EQ(r.scenario.wan[0].rtt_s, 0.07);
  ASSERT_TRUE(r.scenario.check.has_value());
  EXPECT_EQ(r.scenario.check->throughput_ratio, 0.15);  // the default: the file has no check block
  EXPECT_FALSE(r.scenario.check->timing.has_value());     // absent: the gate's 0.5 %
  EXPECT_FALSE(r.scenario.check->accuracy.has_value());   // absent: identical to 4 decimals
  ASSERT_TRUE(r.baseline.has_value());
  EXPECT_NE(r.baseline->reason.find("records context.cpu"), std::string::npos) << r.baseline->reason;
  EXPECT_FALSE(r.scenario.check->cross_cpu_accuracy.has_value());  // absent: the gate's 0.01
  ASSERT_TRUE(r.context.cpu.has_value());  // the CPU the baseline trained on (docs/guide/gate.md)
  EXPECT_EQ(r.context.cpu->blas, "Zen");
  EXPECT_EQ(r.context.cpu->onednn_isa, "avx2");
  EXPECT_EQ(r.context.clock, "virtual");
  ASSERT_TRUE(r.context.compute_profile.has_value());
  EXPECT_EQ(r.context.compute_profile->step_time_s, 0.012);
  const StrategyRun* hier = r.find("hier_ef_topk_int8");
  ASSERT_NE(hier, nullptr);
  EXPECT_EQ(hier->config.at("K"), 4);
  EXPECT_EQ(hier->series.loss.size(), 50u);
  ASSERT_FALSE(hier->exchanges.empty());
  EXPECT_EQ(hier->exchanges[0].bytes_sent, 4206u);
  // The stored comparison is what metrics::compare computes from the stored metrics.
  EXPECT_EQ(json(metrics::compare(r.strategies, "naive_ddp")), json(r.comparison));
}

// context.lan_collectives: "analytic" read and written back; any other value refused by name.
TEST(ReportModel, LanCollectivesRoundTripsAndOnlyAnalyticIsRead) {
  json j = read_json_file((kSource / "reports/baselines/us-east-us-west.json").string());
  EXPECT_FALSE(parse_report(j, "a.json").context.lan_collectives.has_value());
  j["context"]["lan_collectives"] = "analytic";
  const RunReport r = parse_report(j, "a.json");
  EXPECT_EQ(r.context.lan_collectives, "analytic");
  EXPECT_EQ(json(r)["context"]["lan_collectives"], "analytic");
  j["context"]["lan_collectives"] = "messages";
  try {
    parse_report(j, "a.json");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("lan_collectives"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"messages\""), std::string::npos) << e.what();
  }
}

// Per-DC compute profiles: written by DC name, read back, and never beside the common one.
TEST(ReportModel, PerDataCenterComputeProfilesRoundTrip) {
  json j = read_json_file((kSource / "reports/baselines/us-east-us-west.json").string());
  const json one = j["context"]["compute_profile"];
  j["context"].erase("compute_profile");
  json slow = one;
  slow["step_time_s"] = 0.05;
  j["context"]["compute_profile_by_dc"] = {{"us-east", one}, {"us-west", slow}};
  const RunReport r = parse_report(j, "r.json");
  EXPECT_FALSE(r.context.compute_profile.has_value());
  ASSERT_EQ(r.context.compute_profile_by_dc.size(), 2u);
  EXPECT_EQ(r.context.compute_profile_by_dc.at("us-west").step_time_s, 0.05);
  EXPECT_EQ(r.context.compute_profile_by_dc.at("us-east").step_time_s, 0.012);
  EXPECT_TRUE(r.context.profiled());
  EXPECT_EQ(json(r), j);
  j["context"]["compute_profile"] = one;
  try {
    parse_report(j, "r.json");
    ADD_FAILURE() << "both profiles accepted";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("compute_profile_by_dc"), std::string::npos) << e.what();
  }
}

// A non-IID partition and the examples per class of every data center: read, written back key
// for key, a negative count refused by field.
TEST(ReportModel, PartitionAndLabelHistogramsRoundTrip) {
  json j = read_json_file((kSource / "reports/baselines/us-east-us-west.json").string());
  j["scenario"]["workload"]["partition"] = {{"kind", "dirichlet"}, {"alpha", 0.1}, {"level", "dc"}};
  j["scenario"]["workload"]["label_histogram_by_dc"] = {{"us-east", {5, 0, 3, 0, 0, 0, 0, 0, 0, 1}},
                                                        {"us-west", {0, 7, 2, 0, 0, 0, 0, 0, 0, 0}}};
  const RunReport r = parse_report(j, "r.json");
  ASSERT_TRUE(r.scenario.workload.partition.has_value());
  EXPECT_EQ((*r.scenario.workload.partition)["alpha"], 0.1);
  EXPECT_EQ(r.scenario.workload.label_histogram_by_dc.at("us-west"), (std::vector<uint64_t>{0, 7, 2, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(json(r), j);
  j["scenario"]["workload"]["label_histogram_by_dc"]["us-east"][1] = -1;
  try {
    parse_report(j, "r.json");
    ADD_FAILURE() << "a negative count accepted";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("label_histogram_by_dc.us-east"), std::string::npos) << e.what();
  }
}

// A derived compute profile: the catalog's entries, the formula on exact inputs, the count
// parser, and the derivation read and written back inside the report's compute profile.
TEST(Hardware, CatalogFormulaAndCounts) {
  const GpuSpec* h100 = find_gpu("H100-SXM");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->peak_dense_bf16_flops, 989e12);
  EXPECT_EQ(find_gpu("h800"), nullptr);
  for (const GpuSpec& g : gpu_catalog()) EXPECT_FALSE(g.source.empty()) << g.name;
  // 6 * 1e9 * 1000 / (1e15 * 0.5) = 0.012 s on a crafted GPU with round figures.
  const GpuSpec round{"round", "Round", 1e15, 4.8e12, "test", 0, ""};
  const ComputeDerivation d = derive_compute(round, 0.5, 1e9, 1000);
  EXPECT_DOUBLE_EQ(d.step_time_s, 0.012);
  EXPECT_DOUBLE_EQ(d.reduce_ns_per_element, 0.0025);        // 12 B / 4.8 TB/s
  EXPECT_DOUBLE_EQ(d.compress_ns_per_element, 1 / 97.23);   // the H200's own bandwidth: no scaling
  std::string why;
  EXPECT_EQ(parse_count("70B", &why), 70e9);
  EXPECT_EQ(parse_count("1.5B", &why), 1.5e9);
  EXPECT_EQ(parse_count("124M", &why), 124e6);
  EXPECT_EQ(parse_count("8.03e9", &why), 8.03e9);
  EXPECT_EQ(parse_count("2T", &why), 2e12);
  EXPECT_FALSE(parse_count("8X", &why).has_value());
  EXPECT_NE(why.find("expected a count"), std::string::npos);
  EXPECT_FALSE(parse_count("0", &why).has_value());
  EXPECT_EQ(why, "must be > 0");
  EXPECT_FALSE(parse_count("", &why).has_value());

  json j = read_json_file((kSource / "reports/baselines/us-east-us-west.json").string());
  EXPECT_EQ(describe_clock(parse_report(j, "b.json").context),
            "virtual clock, declared compute: step 12 ms, reduce 0.5 ns/element, compress 2 ns/element");
  const ComputeDerivation h = derive_compute(*h100, 0.4, 8e9, 4096);
  j["context"]["compute_profile"] = {{"step_time_s", h.step_time_s}, {"reduce_ns_per_element", h.reduce_ns_per_element},
                                     {"compress_ns_per_element", h.compress_ns_per_element}, {"derived", h}};
  const RunReport r = parse_report(j, "derived.json");
  EXPECT_EQ(describe_clock(r.context),
            "virtual clock, compute derived from the hardware: 6 x 8e+09 params x 4096 tokens / (989 TFLOP/s dense "
            "BF16 (h100-sxm) x MFU 0.4) = 497 ms per step, reduce 0.00358 ns/element, compress 0.0147 ns/element");
  ASSERT_TRUE(r.context.compute_profile->derived.has_value());
  EXPECT_EQ(r.context.compute_profile->derived->gpu, "h100-sxm");
  EXPECT_EQ(json(r), j);
  j["context"]["compute_profile"]["derived"]["mfu"] = 1.5;
  EXPECT_THROW(parse_report(j, "bad.json"), ReportError);
}

TEST(ReportModel, ErrorsNameTheFileTheFieldAndTheValue) {
  const json base = read_json_file((kSource / "reports/baselines/us-east-us-west.json").string());
  auto message = [](const json& j) {
    try {
      parse_report(j, "r.json");
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json bad = base;
  bad["strategies"][1]["exchanges"][0]["bytes"] = -1;
  EXPECT_EQ(message(bad), "r.json: strategies[1].exchanges[0].bytes: must be >= 0, got -1");
  bad = base;
  bad["strategies"][0]["series"]["loss"][3] = "x";
  EXPECT_EQ(message(bad), "r.json: strategies[0].series.loss[3]: expected a number, got \"x\"");
  bad = base;
  bad["scenario"]["wan"][0]["between"] = {"us-east"};
  EXPECT_EQ(message(bad), "r.json: scenario.wan[0].between: expected two data center names, got [\"us-east\"]");
  bad = base;
  bad["strategies"][1]["series"]["test_accuracy"][2]["accuracy"] = 2;
  EXPECT_EQ(message(bad), "r.json: strategies[1].series.test_accuracy[2].accuracy: must be in [0, 1], got 2");
  bad = base;
  bad["comparison"]["strategies"]["naive_ddp"]["throughput_ratio"] = "fast";
  EXPECT_EQ(message(bad), "r.json: comparison.strategies.naive_ddp.throughput_ratio: expected a number, got \"fast\"");
  bad = base;
  bad["schema_version"] = 2;
  EXPECT_EQ(message(bad), "r.json: schema_version: 2: this geotb reads schema_version 1");
  bad = base;
  bad["strategies"][0]["metrics"] = 3;
  EXPECT_EQ(message(bad), "r.json: strategies[0].metrics: expected an object, got 3");
}

RankReport crafted_rank() {
  RankReport r;
  r.strategy = "hier_ef_topk_int8";
  r.rank = 0;
  r.dc = 0;
  r.local_rank = 0;
  r.times = {1000, 2000, 300, 4000};
  r.loss = {2.5, 2.0, 1.5};
  r.step_end_s = {0.25, 0.5, 0.75};
  r.exchanges = {{1, 128, 0.5, 0.25}, {-1, 4096, 0.0, 0.125}};
  r.wan_sent = {3, 4224, 4400};
  r.wall_s = 0.875;
  r.accuracy_curve = {{2, 256, 0.5}, {3, 384, 0.625}};
  return r;
}

TEST(RankReportModel, OkAndFailedFilesRoundTrip) {
  const RankReport ok = crafted_rank();
  const json j = ok;
  EXPECT_EQ(j.at("status"), "ok");
  EXPECT_EQ(j.at("exchanges")[0].at("efficiency"), 0.5);
  EXPECT_EQ(j.at("exchanges")[1].at("efficiency"), 0.0);  // not timed: 0, not a division by zero
  const RankReport back = j.get<RankReport>();
  EXPECT_EQ(json(back), j);
  EXPECT_FALSE(back.failure.has_value());
  EXPECT_EQ(back.times.compress_ns, 300u);
  EXPECT_EQ(back.exchanges[1].step, -1);

  RankReport failed;
  failed.strategy = "naive_ddp";
  failed.rank = 3;
  failed.dc = 1;
  failed.local_rank = 1;
  failed.failure = RankFailure{"PeerDeadError", "rank 2: connection reset"};
  const json f = failed;
  EXPECT_EQ(f.at("status"), "failed");
  EXPECT_FALSE(f.contains("loss"));
  const RankReport fback = f.get<RankReport>();
  ASSERT_TRUE(fback.failure.has_value());
  EXPECT_EQ(fback.failure->type, "PeerDeadError");
  EXPECT_EQ(json(fback), f);
}

TEST(RankReportModel, FileErrorsNameTheFileAndTheField) {
  const auto dir = std::filesystem::temp_directory_path() / ("geotb-rank-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "rank-0.json").string();
  save_rank_report(crafted_rank(), path);
  EXPECT_EQ(json(load_rank_report(path)), json(crafted_rank()));
  json j = crafted_rank();
  j["wan_sent"].erase("payload_bytes");
  write_json_atomically(j, path);
  try {
    load_rank_report(path);
    ADD_FAILURE() << "expected ReportError";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": wan_sent.payload_bytes: missing");
  }
  std::filesystem::remove_all(dir);
}

TEST(Metrics, RatiosAndTheirZeroCases) {
  StrategyMetrics base, s, lan, idle;
  base.samples_per_s = 100;
  base.wan_payload_bytes = 1024;
  base.final_test_accuracy = 0.75;
  s.samples_per_s = 400;
  s.wan_payload_bytes = 256;
  s.final_test_accuracy = 0.625;
  lan.samples_per_s = 800;
  EXPECT_EQ(metrics::throughput_ratio(s, base), 4.0);
  EXPECT_EQ(metrics::wan_bytes_ratio(s, base), 0.25);
  EXPECT_EQ(metrics::accuracy_delta(s, base), -0.125);
  EXPECT_EQ(metrics::fraction_of_lan_throughput(s, lan), 0.5);
  EXPECT_EQ(metrics::throughput_ratio(s, idle), 0.0);
  EXPECT_EQ(metrics::wan_bytes_ratio(s, idle), 0.0);
  EXPECT_EQ(metrics::samples_per_s(1000, 0.5), 2000.0);
  EXPECT_EQ(metrics::samples_per_s(1000, 0), 0.0);
  EXPECT_EQ(metrics::samples_per_step(1024, 4), 256.0);
  EXPECT_EQ(metrics::comm_compute_ratio(0.5, 0.25), 2.0);
  EXPECT_EQ(metrics::comm_compute_ratio(0.5, 0), 0.0);
  // 4 workers x 2 steps, 8e9 ns in all: 1 s per worker and step.
  EXPECT_EQ(metrics::per_step_mean_s(8e9, 4, 2), 1.0);
  EXPECT_FALSE(metrics::exchange_efficiency_mean({}).has_value());
  EXPECT_EQ(*metrics::exchange_efficiency_mean({{1, 1, 0.5, 0.25}, {2, 1, 0.25, 0.25}}), 0.75);
  EXPECT_FALSE(metrics::exchange_seconds_mean({}).has_value());
  EXPECT_EQ(*metrics::exchange_seconds_mean({{-1, 8, 0.125, 0}}), 0.125);
  EXPECT_EQ(*metrics::exchange_seconds_mean({{1, 1, 0.5, 0.25}, {2, 1, 0.25, 0.25}, {-1, 1, 0, 0}}), 0.25);
}

TEST(Metrics, DeriveFillsTheDerivedFigures) {
  StrategyRun run;
  run.metrics.samples = 1000;
  run.metrics.wall_s = 0.5;
  run.metrics.compute_s_per_step = 0.25;
  run.metrics.exposed_comm_s_per_step = 0.5;
  run.exchanges = {{1, 1, 0.5, 0.25}, {2, 1, 0.25, 0.25}};
  metrics::derive(run);
  EXPECT_EQ(run.metrics.samples_per_s, 2000.0);
  EXPECT_EQ(run.metrics.comm_compute_ratio, 2.0);
  EXPECT_EQ(*run.metrics.exchange_efficiency_mean, 0.75);
  EXPECT_EQ(**run.metrics.exchange_seconds_mean, 0.375);
  run.exchanges.clear();
  metrics::derive(run);
  EXPECT_FALSE(run.metrics.exchange_efficiency_mean.has_value());
  ASSERT_TRUE(run.metrics.exchange_seconds_mean.has_value());  // a new run always has it: null
  EXPECT_FALSE(run.metrics.exchange_seconds_mean->has_value());
}

TEST(Metrics, CommComputeAlarmAboveOneTenth) {
  EXPECT_FALSE(metrics::comm_compute_alarm(0.1));  // the threshold itself is not above it
  EXPECT_TRUE(metrics::comm_compute_alarm(std::nextafter(0.1, 1.0)));
  EXPECT_FALSE(metrics::comm_compute_alarm(0));
  StrategyRun run;
  run.metrics.samples = 8;
  run.metrics.wall_s = 1;
  run.metrics.compute_s_per_step = 0.5;
  run.metrics.exposed_comm_s_per_step = 0.0625;  // ratio 0.125
  metrics::derive(run);
  EXPECT_EQ(run.metrics.comm_compute_alarm, std::optional<bool>(true));
  run.metrics.exposed_comm_s_per_step = 0.03125;  // 0.0625
  metrics::derive(run);
  EXPECT_EQ(run.metrics.comm_compute_alarm, std::optional<bool>(false));
}

TEST(Metrics, TimeToAccuracyIsTheFirstPointAtTheTarget) {
  StrategyRun run;
  run.metrics.wall_s = 9.5;  // the final point: after the final synchronisation
  run.series.step_end_s = {1, 2, 3, 4, 5, 6, 7, 8};
  run.series.loss.assign(8, 0);
  run.series.test_accuracy = {{2, 64, 0.5}, {4, 128, 0.75}, {6, 192, 0.7}, {8, 256, 0.875}};
  TimeToAccuracy t = metrics::time_to_accuracy(run, 0.75);  // reached exactly at step 4
  EXPECT_EQ(t.target, 0.75);
  EXPECT_EQ(t.step, std::optional<int>(4));
  EXPECT_EQ(t.samples, std::optional<uint64_t>(128));
  EXPECT_EQ(t.seconds, std::optional<double>(4.0));  // step_end_s of step 4 (index 3)
  t = metrics::time_to_accuracy(run, 0.8);  // only the final point
  EXPECT_EQ(t.step, std::optional<int>(8));
  EXPECT_EQ(t.seconds, std::optional<double>(9.5));
  t = metrics::time_to_accuracy(run, 0.9);  // never
  EXPECT_FALSE(t.step || t.samples || t.seconds);
  EXPECT_EQ(json(t), json::parse(R"({"target": 0.9, "step": null, "samples": null, "seconds": null})"));
}

TEST(Metrics, SeedSummaryIsMeanAndSampleSd) {
  EXPECT_FALSE(metrics::seed_summary({}).has_value());
  std::vector<SeedResult> seeds(3);
  const double acc[] = {0.75, 0.8125, 0.875};
  for (int i = 0; i < 3; ++i) {
    seeds[i].seed = 42 + static_cast<uint64_t>(i);
    seeds[i].final_test_accuracy = acc[i];
    seeds[i].samples_per_s = 100;
    seeds[i].wan_payload_bytes = 1000 * static_cast<uint64_t>(i + 1);
  }
  SeedSummary s = *metrics::seed_summary(seeds);
  EXPECT_EQ(s.seeds, 3);
  EXPECT_EQ(s.final_test_accuracy.mean, 0.8125);
  EXPECT_EQ(s.final_test_accuracy.sd, 0.0625);  // sqrt((0.0625^2 * 2) / 2)
  EXPECT_EQ(s.samples_per_s.sd, 0.0);
  EXPECT_EQ(s.wan_payload_bytes.mean, 2000.0);
  EXPECT_EQ(s.wan_payload_bytes.sd, 1000.0);
  EXPECT_FALSE(s.time_to_accuracy_s.has_value());  // no target
  // With a target reached by two of the three seeds: time to accuracy over those two.
  seeds[0].time_to_accuracy = TimeToAccuracy{0.8, 4, 128, 2.0};
  seeds[1].time_to_accuracy = TimeToAccuracy{0.8, 6, 192, 3.0};
  seeds[2].time_to_accuracy = TimeToAccuracy{0.8, std::nullopt, std::nullopt, std::nullopt};
  s = *metrics::seed_summary(seeds);
  ASSERT_TRUE(s.time_to_accuracy_s.has_value());
  EXPECT_EQ(s.time_to_accuracy_s->n, 2);
  EXPECT_EQ(s.time_to_accuracy_s->mean, 2.5);
  EXPECT_EQ(s.samples_to_accuracy->mean, 160.0);
  EXPECT_EQ(metrics::spread({5.0}).sd, 0.0);  // one seed: sd 0
}

TEST(ReportModel, SeedsAndTimeToAccuracyReadStrictly) {
  const json base = read_json_file((kSource / "tests/report/data/strategy-bakeoff-seeds3.json").string());
  const RunReport r = parse_report(base, "bakeoff");
  const StrategyRun* local = r.find("local_sgd");
  ASSERT_NE(local, nullptr);
  ASSERT_EQ(local->seeds.size(), 3u);
  EXPECT_EQ(local->seeds[0].seed, 42u);
  EXPECT_EQ(local->seeds[0].final_test_accuracy, local->metrics.final_test_accuracy);
  ASSERT_TRUE(local->metrics.time_to_accuracy.has_value());
  EXPECT_EQ(local->metrics.time_to_accuracy->target, 0.84);
  EXPECT_EQ(r.scenario.workload.target_accuracy, std::optional<double>(0.84));
  auto expect_error = [&](json j, const std::string& what) {
    try {
      parse_report(j, "x.json");
      ADD_FAILURE() << "no error for " << what;
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  json j = base;
  j["strategies"][2]["metrics"]["time_to_accuracy"]["step"] = nullptr;  // samples, seconds still set
  expect_error(j, "strategies[2].metrics.time_to_accuracy.step");
  j = base;
  j["strategies"][2]["metrics"]["time_to_accuracy"]["target"] = 1.5;
  expect_error(j, "target: must be in (0, 1], got 1.5");
  j = base;
  j["strategies"][2]["seeds"][1]["final_test_accuracy"] = 2;
  expect_error(j, "strategies[2].seeds[1].final_test_accuracy");
  j = base;
  j["strategies"][2]["metrics"]["comm_compute_alarm"] = "yes";
  expect_error(j, "comm_compute_alarm");
}

TEST(ReportModel, ExchangeSecondsMeanAbsentNullOrANumber) {
  const json base = read_json_file((kSource / "tests/report/data/us-east-us-west-run2.json").string());
  json j = base.at("strategies").at(1).at("metrics");
  ASSERT_FALSE(j.contains("exchange_seconds_mean"));  // written before the figure existed
  StrategyMetrics m = j.get<StrategyMetrics>();
  EXPECT_FALSE(m.exchange_seconds_mean.has_value());
  EXPECT_EQ(json(m), j);
  j["exchange_seconds_mean"] = nullptr;
  m = j.get<StrategyMetrics>();
  ASSERT_TRUE(m.exchange_seconds_mean.has_value());
  EXPECT_FALSE(m.exchange_seconds_mean->has_value());
  EXPECT_EQ(json(m), j);
  j["exchange_seconds_mean"] = 0.375;
  m = j.get<StrategyMetrics>();
  EXPECT_EQ(**m.exchange_seconds_mean, 0.375);
  EXPECT_EQ(json(m), j);
  json bad = base;
  bad["strategies"][1]["metrics"]["exchange_seconds_mean"] = -1;
  try {
    parse_report(bad, "r.json");
    ADD_FAILURE() << "expected ReportError";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), "r.json: strategies[1].metrics.exchange_seconds_mean: must be >= 0, got -1");
  }
}

TEST(ReportModel, DataPlaneAbsentOrReadAndWrittenWithItsDerivedFigures) {
  const json base = read_json_file((kSource / "tests/report/data/us-east-us-west-run2.json").string());
  json j = base.at("strategies").at(0);
  ASSERT_FALSE(j.contains("dataplane"));  // not dpdk mode
  StrategyRun r = j.get<StrategyRun>();
  EXPECT_FALSE(r.dataplane.has_value());
  EXPECT_EQ(json(r), j);
  // 3 stalls, 48 ms in all over 6 s: 0.8 %, ok.
  DataPlaneSummary d{"SCHED_FIFO 50, pinned to CPU 1", 3, 0.048, 0.0416, 6.0};
  EXPECT_DOUBLE_EQ(metrics::stall_share(d), 0.008);
  EXPECT_TRUE(metrics::stalls_ok(d));
  r.dataplane = d;
  const json w = r;
  EXPECT_EQ(w.at("dataplane"), (json{{"scheduling", "SCHED_FIFO 50, pinned to CPU 1"}, {"stalls", 3}, {"stall_total_s", 0.048},
                                     {"max_iteration_s", 0.0416}, {"run_s", 6.0}, {"stall_share", 0.048 / 6.0},
                                     {"stalls_ok", true}}));
  EXPECT_EQ(json(w.get<StrategyRun>()), w);
  // 72 ms over 6 s: 1.2 %, not ok; run_s 0: share 0.
  d.stall_total_s = 0.072;
  EXPECT_FALSE(metrics::stalls_ok(d));
  d.run_s = 0;
  EXPECT_EQ(metrics::stall_share(d), 0.0);
  json bad = base;
  bad["strategies"][0]["dataplane"] = w.at("dataplane");
  bad["strategies"][0]["dataplane"]["stalls"] = -2;
  try {
    parse_report(bad, "r.json");
    ADD_FAILURE() << "expected ReportError";
  } catch (const ReportError& e) {
    EXPECT_EQ(std::string(e.what()), "r.json: strategies[0].dataplane.stalls: must be >= 0, got -2");
  }
}

// A resumed run's "resumed_from" and every run's "final_weights_sha256": absent in older reports,
// written and read back when set, read strictly.
TEST(ReportModel, ResumedFromAndFinalWeightsHashReadStrictly) {
  const json base = read_json_file((kSource / "tests/report/data/us-east-us-west-run2.json").string());
  json j = base.at("strategies").at(0);
  ASSERT_FALSE(j.contains("resumed_from"));
  StrategyRun r = j.get<StrategyRun>();
  EXPECT_FALSE(r.resumed_from.has_value());
  EXPECT_FALSE(r.final_weights_sha256.has_value());
  EXPECT_EQ(json(r), j);
  r.resumed_from = ResumedFrom{40, "ckpt/hier_ef_topk_int8/step-40"};
  r.final_weights_sha256 = std::string(64, 'a');
  const json w = r;
  EXPECT_EQ(w.at("resumed_from"), (json{{"step", 40}, {"checkpoint", "ckpt/hier_ef_topk_int8/step-40"}}));
  EXPECT_EQ(json(w.get<StrategyRun>()), w);
  auto refused = [&](const char* key, const json& v) {
    json bad = base;
    bad["strategies"][0] = w;
    if (std::string(key) == "final_weights_sha256")
      bad["strategies"][0][key] = v;
    else
      bad["strategies"][0]["resumed_from"][key] = v;
    try {
      parse_report(bad, "r.json");
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(refused("step", 0), "r.json: strategies[0].resumed_from.step: 0: must be in [1, 1000000000]");
  EXPECT_EQ(refused("checkpoint", ""), "r.json: strategies[0].resumed_from.checkpoint: must not be empty");
  EXPECT_EQ(refused("final_weights_sha256", "abc"),
            "r.json: strategies[0].final_weights_sha256: \"abc\": expected a SHA-256, 64 lowercase hex digits");
}

// Node faults: a strategy's "faults" section absent, or written and read back key for key; the
// reader names the field of a bad value.
TEST(ReportModel, FaultsAbsentOrReadAndWrittenStrictly) {
  const json base = read_json_file((kSource / "tests/report/data/us-east-us-west-run2.json").string());
  json j = base.at("strategies").at(0);
  ASSERT_FALSE(j.contains("faults"));
  StrategyRun r = j.get<StrategyRun>();
  EXPECT_FALSE(r.faults.has_value());
  FaultsSection f;
  f.heartbeat_interval_s = 2;
  f.heartbeat_timeout_s = 3;
  f.heartbeat_confirmation_s = 2;
  f.heartbeat_witnesses = 3;
  f.heartbeat_unreachable_s = 30;
  f.policy = "shrink";
  f.shard = "redistribute";
  FaultRecord k;
  k.event = "kill";
  k.rank = 6;
  k.dc = 1;
  k.worker = 2;
  k.at_s = 5.25;
  k.step = 105;
  k.detected_by = 7;
  k.detected_at_s = 9.0;
  k.detection_latency_s = 3.75;
  k.policy = "shrink";
  k.recovery_s = 0.5;
  k.steps_lost = 1;
  k.survivors = 3;
  FaultRecord sl;
  sl.event = "slow";
  sl.rank = 1;
  sl.at_s = 1;
  sl.step = 10;
  sl.policy = "none";
  sl.factor = 5;
  f.events = {k, sl};  // the slow one never ended: until_s null
  f.detections = {Detection{7, 6, 9.0, 4.0, 7.0, "witness"}};
  f.heartbeats_sent = 244;
  r.faults = f;
  const json w = r;
  EXPECT_EQ(w.at("faults").at("events").at(0).at("detection_latency_s"), 3.75);
  EXPECT_TRUE(w.at("faults").at("events").at(1).at("until_s").is_null());
  EXPECT_FALSE(w.at("faults").at("events").at(0).contains("until_s"));
  EXPECT_EQ(json(w.get<StrategyRun>()), w);
  auto error = [&](const std::function<void(json&)>& edit) {
    json bad = base;
    bad["strategies"][0]["faults"] = w.at("faults");
    edit(bad["strategies"][0]["faults"]);
    try {
      parse_report(bad, "r.json");
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error([](json& x) { x["shard"] = "keep"; }),
            "r.json: strategies[0].faults.shard: expected \"drop\" or \"redistribute\", got \"keep\"");
  EXPECT_EQ(error([](json& x) { x["events"][0]["steps_lost"] = -1; }),
            "r.json: strategies[0].faults.events[0].steps_lost: must be >= 0, got -1");
  EXPECT_EQ(error([](json& x) { x["events"][0]["detected_by"] = nullptr; }),
            "r.json: strategies[0].faults.events[0].detected_by: detected_by, detected_at_s and detection_latency_s "
            "must be all null or all set");
  EXPECT_EQ(error([](json& x) { x["events"][1].erase("factor"); }),
            "r.json: strategies[0].faults.events[1].factor: missing (a slow event has one)");
  EXPECT_EQ(error([](json& x) { x["heartbeat"].erase("timeout_s"); }),
            "r.json: strategies[0].faults.heartbeat.timeout_s: missing");
  EXPECT_EQ(error([](json& x) { x["detections"][0]["how"] = "rumour"; }),
            "r.json: strategies[0].faults.detections[0].how: expected \"connection\", \"silence\", \"witness\" or "
            "\"unreachable\", got \"rumour\"");
  {  // a report written before the witnesses: none asked
    json old_report = w;
    old_report["faults"]["heartbeat"].erase("witnesses");
    old_report["faults"]["heartbeat"].erase("unreachable_s");
    const StrategyRun o = old_report.get<StrategyRun>();
    EXPECT_EQ(o.faults->heartbeat_witnesses, 0);
    EXPECT_EQ(o.faults->heartbeat_unreachable_s, 0);
  }
  EXPECT_EQ(error([](json& x) { x["detections"][0]["suspected_s"] = 10.0; }),
            "r.json: strategies[0].faults.detections[0]: last_heard_s 4 <= suspected_s 10 <= at_s 9 does not hold");
}

// An exchange's round trips: rtt_s written with rtts = seconds / rtt_s; both absent when rtt_s was
// not recorded (older reports), which read back as 0.
// The process modes' faults section from every rank's log (model::merge_fault_logs), on crafted
// logs of a 2 x 3 run: rank 4 killed at step 30; ranks start 1 ms apart on the host's clock.
TEST(FaultLogs, MergedOntoTheOriginsClockWithFirstDetectionRecoveryAndFalseOnes) {
  FaultPlan plan;
  plan.heartbeat.interval = std::chrono::milliseconds(200);
  plan.heartbeat.timeout = std::chrono::milliseconds(500);
  plan.heartbeat.confirmation = std::chrono::milliseconds(300);
  plan.shard = "redistribute";
  std::vector<RankFaultLog> logs(6);
  for (int r = 0; r < 6; ++r) {
    logs[static_cast<size_t>(r)].start_ns = 1'000'000'000 + 1'000'000 * r;  // rank r starts r ms after rank 0
    logs[static_cast<size_t>(r)].heartbeats_sent = 10 + static_cast<uint64_t>(r);
  }
  logs[4].killed_at_step = 30;
  logs[4].killed_at_s = 2.0;  // 2.004 on rank 0's clock
  auto det = [](int observer, int peer, double at, const char* how) {
    Detection d;
    d.observer = observer;
    d.peer = peer;
    d.at_s = d.last_heard_s = d.suspected_s = at;
    d.how = how;
    return d;
  };
  logs[5].detections = {det(5, 4, 2.0, "connection")};  // 2.005
  logs[3].detections = {det(3, 4, 2.0015, "connection")};  // 2.0045: the first
  logs[1].detections = {det(1, 2, 5.0, "silence")};  // rank 2 was never killed: a false detection
  logs[3].resumed = {{{4}, 2.1, 30, 2, true, std::nullopt}};    // 2.103
  logs[5].resumed = {{{4}, 2.2, 30, 2, false, std::nullopt}};   // 2.205: the last survivor
  const FaultsSection s = merge_fault_logs(plan, RankLayout::uniform(2, 3), logs, 0);
  EXPECT_DOUBLE_EQ(s.heartbeat_interval_s, 0.2);
  EXPECT_DOUBLE_EQ(s.heartbeat_timeout_s, 0.5);
  EXPECT_DOUBLE_EQ(s.heartbeat_confirmation_s, 0.3);
  EXPECT_EQ(s.shard, "redistribute");
  EXPECT_EQ(s.heartbeats_sent, 10u + 11 + 12 + 13 + 14 + 15);
  ASSERT_EQ(s.events.size(), 1u);
  const FaultRecord& k = s.events[0];
  EXPECT_EQ(k.event, "kill");
  EXPECT_EQ(std::make_tuple(k.rank, k.dc, k.worker, k.step), std::make_tuple(4, 1, 1, 30));
  EXPECT_NEAR(k.at_s, 2.004, 1e-12);
  EXPECT_EQ(k.detected_by, 3);
  EXPECT_NEAR(*k.detected_at_s, 2.0045, 1e-12);
  EXPECT_NEAR(*k.detection_latency_s, 0.0005, 1e-12);
  EXPECT_NEAR(*k.recovery_s, 2.205 - 2.0045, 1e-12);
  EXPECT_EQ(k.steps_lost, 1);  // one group, one coordinator
  EXPECT_EQ(k.survivors, 2);
  EXPECT_EQ(k.policy, "shrink");
  ASSERT_EQ(s.detections.size(), 3u);  // in time order, on rank 0's clock
  EXPECT_EQ(std::make_pair(s.detections[0].observer, s.detections[0].how), std::make_pair(3, std::string("connection")));
  EXPECT_EQ(s.detections[1].observer, 5);
  EXPECT_EQ(std::make_tuple(s.detections[2].observer, s.detections[2].peer), std::make_tuple(1, 2));
  EXPECT_NEAR(s.detections[2].at_s, 5.001, 1e-12);
  EXPECT_EQ(s.false_detections, 1);
  // Another origin moves every time by its start.
  const FaultsSection o = merge_fault_logs(plan, RankLayout::uniform(2, 3), logs, 3);
  EXPECT_NEAR(o.events[0].at_s, 2.001, 1e-12);
  EXPECT_NEAR(*o.events[0].detection_latency_s, 0.0005, 1e-12);
  // A slow span of rank 2 from its 1st ms: 3 ms on rank 0's clock, before rank 5's start there (0).
  FaultRecord slow;
  slow.event = "slow";
  slow.rank = 2;
  slow.at_s = 0.001;
  slow.factor = 5;
  slow.until_s = 1.0;
  logs[2].slow = {slow};
  const FaultsSection z = merge_fault_logs(plan, RankLayout::uniform(2, 3), logs, 0);
  const auto zs = std::find_if(z.events.begin(), z.events.end(), [](const FaultRecord& e) { return e.event == "slow"; });
  ASSERT_NE(zs, z.events.end());
  EXPECT_NEAR(zs->at_s, 0.003, 1e-12);
  EXPECT_NEAR(*zs->until_s, 1.002, 1e-12);
  EXPECT_EQ(z.events.front().event, "slow");  // in time order
  const FaultsSection f5 = merge_fault_logs(plan, RankLayout::uniform(2, 3), logs, 5);
  const auto fs = std::find_if(f5.events.begin(), f5.events.end(), [](const FaultRecord& e) { return e.event == "slow"; });
  EXPECT_EQ(fs->at_s, 0.0);
  EXPECT_NEAR(*fs->until_s, 0.997, 1e-12);
  // The rank file carries the log both ways.
  RankReport rr;
  rr.loss = {0.5, std::nan("")};
  rr.faults = logs[4];
  json j = json::parse(json(rr).dump());  // as in the file: NaN written as null
  EXPECT_TRUE(j["loss"][1].is_null());
  const RankReport back = j.get<RankReport>();
  EXPECT_TRUE(std::isnan(back.loss[1]));
  ASSERT_TRUE(back.faults && back.faults->killed_at_step);
  EXPECT_EQ(*back.faults->killed_at_step, 30);
  json bad = j;
  bad["faults"]["killed_at_s"] = nullptr;
  try {
    (void)bad.get<RankReport>();
    ADD_FAILURE() << "a kill without its instant was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("faults.killed_at_step"), std::string::npos) << e.what();
  }
}

// A restart in the process modes: its coordinator's hand-over (rank 3, at 6.0 s of its clock) and
// the restarted rank's rejoin (rank 4's new process, at 6.25 s of its predecessor's clock, which it
// keeps) give the "restart" record, on the origin's clock, after the kill.
TEST(FaultLogs, ARestartIsItsCoordinatorsHandOverRecoveredWhenTheRankHadTheState) {
  FaultPlan plan;
  std::vector<RankFaultLog> logs(6);
  for (int r = 0; r < 6; ++r) logs[static_cast<size_t>(r)].start_ns = 1'000'000'000 + 1'000'000 * r;
  logs[4].killed_at_step = 30;
  logs[4].killed_at_s = 2.0;
  logs[4].rejoined_at_s = 6.25;  // 6.254 on rank 0's clock
  logs[3].handed = {{4, 60, 6.0, 3}};  // 6.003
  logs[3].resumed = {{{4}, 2.1, 30, 2, true, std::nullopt}};
  const FaultsSection s = merge_fault_logs(plan, RankLayout::uniform(2, 3), logs, 0);
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_EQ(s.events[0].event, "kill");
  const FaultRecord& r = s.events[1];
  EXPECT_EQ(r.event, "restart");
  EXPECT_EQ(std::make_tuple(r.rank, r.dc, r.worker, r.step, r.survivors), std::make_tuple(4, 1, 1, 60, 3));
  EXPECT_EQ(r.policy, "rejoin");
  EXPECT_NEAR(r.at_s, 6.003, 1e-12);
  ASSERT_TRUE(r.recovery_s);
  EXPECT_NEAR(*r.recovery_s, 6.254 - 6.003, 1e-12);
  EXPECT_EQ(s.false_detections, 0);
  // Without the restarted rank's rejoin (it never had the state): no recovery time.
  logs[4].rejoined_at_s.reset();
  EXPECT_FALSE(merge_fault_logs(plan, RankLayout::uniform(2, 3), logs, 0).events[1].recovery_s.has_value());
  // The rank file carries both.
  logs[4].rejoined_at_s = 6.25;
  RankReport rr;
  rr.faults = logs[3];
  const RankReport a = json::parse(json(rr).dump()).get<RankReport>();
  ASSERT_EQ(a.faults->handed.size(), 1u);
  EXPECT_EQ(std::make_tuple(a.faults->handed[0].rank, a.faults->handed[0].step, a.faults->handed[0].group_size),
            std::make_tuple(4, 60, 3));
  EXPECT_DOUBLE_EQ(a.faults->handed[0].at_s, 6.0);
  EXPECT_FALSE(a.faults->rejoined_at_s.has_value());
  rr.faults = logs[4];
  EXPECT_DOUBLE_EQ(*json::parse(json(rr).dump()).get<RankReport>().faults->rejoined_at_s, 6.25);
}

TEST(FaultPlan, FullRecoveryNeedsMoreThanTheFractionDead) {
  FaultPlan plan;
  FaultEvent kill;
  kill.kind = FaultEvent::Kind::kKill;
  plan.events = {kill, kill};
  plan.full_recovery.above_fraction = 0.25;
  EXPECT_EQ(plan.full_recovery_count(8), 3);   // 2 of 8 is exactly a quarter: not more
  EXPECT_FALSE(plan.full_recovery_reachable(8));
  EXPECT_EQ(plan.full_recovery_count(7), 2);   // 2 > 1.75
  EXPECT_TRUE(plan.full_recovery_reachable(7));
  EXPECT_FALSE(plan.full_recovery_restarts(7));  // "survivors", the default
  plan.full_recovery.then = "restarts";
  EXPECT_TRUE(plan.full_recovery_restarts(7));
  EXPECT_FALSE(plan.full_recovery_restarts(8));  // not reachable
  plan.full_recovery.above_fraction = 1;       // off: never more than all
  EXPECT_EQ(plan.full_recovery_count(2), 3);
  EXPECT_FALSE(plan.full_recovery_reachable(2));
}

TEST(FaultLogs, AFullRecoveryIsEverySurvivorsRewindAndTheDecidingRanksCount) {
  FaultPlan plan;
  plan.full_recovery.above_fraction = 0.25;
  std::vector<RankFaultLog> logs(8);
  for (int r = 0; r < 8; ++r) logs[static_cast<size_t>(r)].start_ns = 1'000'000'000 + 1'000'000 * r;
  for (int r : {1, 2, 6}) {
    logs[static_cast<size_t>(r)].killed_at_step = 25;
    logs[static_cast<size_t>(r)].killed_at_s = 1.0;
  }
  for (int r : {0, 3, 4, 5, 7}) logs[static_cast<size_t>(r)].rewound = RankFaultLog::Rewind{27, 20, 0.8, 1.5 + 0.1 * r, {}, 0};
  logs[4].rewound->decided_at_s = 1.25;  // 1.254 on rank 0's clock (rank 4 started 4 ms later)
  logs[4].rewound->dead = 3;
  const FaultsSection s = merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0);
  ASSERT_TRUE(s.full_recovery);
  const FullRecoveryRecord& f = *s.full_recovery;
  EXPECT_EQ(std::make_tuple(f.dead, f.workers, f.boundary_step, f.checkpoint_step, f.steps_redone, f.survivors),
            std::make_tuple(3, 8, 27, 20, 7, 5));
  EXPECT_EQ(f.then, "survivors");
  EXPECT_DOUBLE_EQ(f.above_fraction, 0.25);
  EXPECT_NEAR(f.decided_at_s, 1.254, 1e-12);
  EXPECT_NEAR(f.rewound_at_s, 1.5 + 0.7 + 0.007, 1e-12);  // rank 7's, the last
  EXPECT_DOUBLE_EQ(f.checkpoint_at_s, 0.8);
  // The rank file carries it; a survivor that went back elsewhere is an error naming both.
  RankReport rr;
  rr.faults = logs[4];
  const RankReport a = json::parse(json(rr).dump()).get<RankReport>();
  ASSERT_TRUE(a.faults->rewound);
  EXPECT_EQ(std::make_tuple(a.faults->rewound->boundary_step, a.faults->rewound->checkpoint_step, a.faults->rewound->dead),
            std::make_tuple(27, 20, 3));
  EXPECT_DOUBLE_EQ(*a.faults->rewound->decided_at_s, 1.25);
  rr.faults = logs[3];
  EXPECT_FALSE(json::parse(json(rr).dump()).get<RankReport>().faults->rewound->decided_at_s.has_value());
  logs[7].rewound->boundary_step = 28;
  try {
    merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0);
    FAIL() << "survivors that disagree were merged";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 7 went back at step 28"), std::string::npos) << e.what();
  }
  logs[7].rewound->boundary_step = 27;
  // The deciding rank killed before the boundary: its decision counts, its rewind does not.
  logs[4].rewound = RankFaultLog::Rewind{0, 0, 0, 0, 1.25, 3};
  logs[4].killed_at_step = 26;
  logs[4].killed_at_s = 1.3;
  const FaultsSection d = merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0);
  ASSERT_TRUE(d.full_recovery);
  EXPECT_EQ(std::make_tuple(d.full_recovery->dead, d.full_recovery->survivors, d.full_recovery->boundary_step),
            std::make_tuple(3, 4, 27));
  EXPECT_NEAR(d.full_recovery->decided_at_s, 1.254, 1e-12);
  // Decided, but nobody went back (the run ended first): no record, as in the embedded mode.
  for (int r : {0, 3, 5, 7}) logs[static_cast<size_t>(r)].rewound.reset();
  EXPECT_FALSE(merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0).full_recovery.has_value());
  // Without any rewound rank: none happened.
  for (auto& l : logs) l.rewound.reset();
  EXPECT_FALSE(merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0).full_recovery.has_value());
}

TEST(FaultLogs, AFullRecoverysRestartsAreTheHandOversFromTheCheckpoint) {
  // "then": "restarts" on real processes: the survivors went back at 27 to the checkpoint after
  // 20 steps; ranks 3 and 4 handed the boundary to the restarted 1, 2 (DC 0) and 6 (DC 1); the
  // restarted were up at their up_at_s (their own clocks) and had the word at rejoined_at_s.
  FaultPlan plan;
  plan.full_recovery.above_fraction = 0.25;
  plan.full_recovery.then = "restarts";
  std::vector<RankFaultLog> logs(8);
  for (int r = 0; r < 8; ++r) logs[static_cast<size_t>(r)].start_ns = 1'000'000'000 + 1'000'000 * r;
  for (int r : {1, 2, 6}) {
    logs[static_cast<size_t>(r)].killed_at_step = 25;
    logs[static_cast<size_t>(r)].killed_at_s = 1.0;
    logs[static_cast<size_t>(r)].up_at_s = 2.25 + 0.25 * r;  // rank 6's is the last: 3.75 + 6 ms
    logs[static_cast<size_t>(r)].rejoined_at_s = 4.0;
  }
  for (int r : {0, 3, 4, 5, 7}) logs[static_cast<size_t>(r)].rewound = RankFaultLog::Rewind{27, 20, 0.8, 1.5, {}, 0};
  logs[4].rewound->decided_at_s = 1.25;
  logs[4].rewound->dead = 3;
  logs[0].handed = {{1, 27, 1.5, 4, true}, {2, 27, 1.5, 4, true}};
  logs[4].handed = {{6, 27, 1.5, 4, true}};
  const FaultsSection s = merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0);
  ASSERT_TRUE(s.full_recovery);
  const FullRecoveryRecord& f = *s.full_recovery;
  EXPECT_EQ(std::make_tuple(f.then, f.dead, f.survivors, f.restarted), std::make_tuple(std::string("restarts"), 3, 5, 3));
  ASSERT_TRUE(f.restarted_at_s);
  EXPECT_NEAR(*f.restarted_at_s, 3.75 + 0.006, 1e-12);
  std::vector<std::pair<int, std::string>> back;
  for (const FaultRecord& e : s.events)
    if (e.event == "restart") {
      back.emplace_back(e.rank, e.policy);
      EXPECT_EQ(e.step, 27);
      EXPECT_EQ(e.survivors, 4);
    }
  EXPECT_EQ(back, (std::vector<std::pair<int, std::string>>{{1, "full_recovery"}, {2, "full_recovery"}, {6, "full_recovery"}}));
  // The record validates as a report section (restarted <= dead), and the rank files carry the
  // hand-over's flag and up_at_s.
  EXPECT_NO_THROW(json(f).get<FullRecoveryRecord>());
  RankReport rr;
  rr.faults = logs[0];
  EXPECT_TRUE(json::parse(json(rr).dump()).get<RankReport>().faults->handed.at(0).from_checkpoint);
  rr.faults = logs[6];
  EXPECT_DOUBLE_EQ(*json::parse(json(rr).dump()).get<RankReport>().faults->up_at_s, 3.75);
  // A timeline restart's hand-over stays a "rejoin" and counts for no full recovery.
  logs[4].handed[0].from_checkpoint = false;
  const FaultsSection t = merge_fault_logs(plan, RankLayout::uniform(2, 4), logs, 0);
  EXPECT_EQ(t.full_recovery->restarted, 2);
  EXPECT_EQ(std::count_if(t.events.begin(), t.events.end(), [](const FaultRecord& e) { return e.policy == "rejoin"; }), 1);
}

TEST(ReportModel, ExchangeRoundTripsWrittenOnlyWhenRecorded) {
  ExchangeRecord e{3, 7687770, 0.3, 0.0765, 0.03};
  const json j = e;
  EXPECT_EQ(j.at("rtt_s"), 0.03);
  EXPECT_DOUBLE_EQ(j.at("rtts").get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(metrics::exchange_rtts(e), 10.0);
  const ExchangeRecord back = j.get<ExchangeRecord>();
  EXPECT_EQ(back.rtt_s, 0.03);
  EXPECT_EQ(json(back), j);
  const ExchangeRecord old{3, 100, 0.3, 0.0765};
  const json jo = old;
  EXPECT_FALSE(jo.contains("rtt_s"));
  EXPECT_FALSE(jo.contains("rtts"));
  EXPECT_EQ(jo.get<ExchangeRecord>().rtt_s, 0.0);
  EXPECT_EQ(metrics::exchange_rtts(old), 0.0);
  json bad = j;
  bad["rtts"] = -1;
  EXPECT_THROW(bad.get<ExchangeRecord>(), std::exception);
}

TEST(Metrics, ComparisonAgainstTheBaselineAndLan) {
  std::vector<StrategyRun> runs(3);
  runs[0].name = "naive_ddp";
  runs[0].metrics.samples_per_s = 100;
  runs[0].metrics.wan_payload_bytes = 1024;
  runs[1].name = "hier";
  runs[1].metrics.samples_per_s = 300;
  runs[1].metrics.wan_payload_bytes = 512;
  runs[2].name = "lan";
  runs[2].metrics.samples_per_s = 600;
  const Comparison c = metrics::compare(runs, "naive_ddp");
  EXPECT_EQ(c.baseline, "naive_ddp");
  EXPECT_EQ(*c.strategies.at("hier").throughput_ratio, 3.0);
  EXPECT_EQ(*c.strategies.at("hier").wan_bytes_ratio, 0.5);
  EXPECT_EQ(*c.strategies.at("hier").fraction_of_lan_throughput, 0.5);
  EXPECT_EQ(*c.strategies.at("lan").wan_bytes_ratio, 0.0);
  const Comparison none = metrics::compare(runs, "absent");
  EXPECT_FALSE(none.baseline.has_value());
  EXPECT_FALSE(none.strategies.at("hier").throughput_ratio.has_value());
  EXPECT_TRUE(none.strategies.at("hier").fraction_of_lan_throughput.has_value());
  EXPECT_EQ(json(none).at("baseline"), nullptr);
}


// The represented-model catalog: each layer formula gives the count its model card states, to the
// parameter; declared tensors sum their shapes; the report's context carries the model.
TEST(Represented, CatalogCountsMatchTheModelCards) {
  const std::map<std::string, uint64_t> cards = {
      {"gpt2-124m", 124439808u},         {"gpt2-1.5b", 1557611200u},       {"tinyllama-1.1b", 1100048384u},
      {"llama3-8b", 8030261248u},        {"llama3-70b", 70553706496u},     {"llama3.1-405b", 405853388800u}};
  EXPECT_EQ(represented_catalog().size(), cards.size());
  for (const RepresentedEntry& e : represented_catalog()) {
    ASSERT_TRUE(cards.count(std::string(e.name))) << e.name;
    EXPECT_EQ(transformer_params(e.shape), cards.at(std::string(e.name))) << e.name;
    // The tensors DDP's buckets are cut from add up to the same count.
    uint64_t sum = 0;
    for (uint64_t t : transformer_tensors(e.shape)) sum += t;
    EXPECT_EQ(sum, transformer_params(e.shape)) << e.name;
    EXPECT_FALSE(e.source.empty()) << e.name;
    EXPECT_GT(e.sequence_length, 0u) << e.name;
  }
  // Llama 3 70B: the embedding, 80 layers of 2 norms and 7 projections, the final norm, the head.
  EXPECT_EQ(transformer_tensors(find_represented("llama3-70b")->shape).size(), 1u + 80 * 9 + 1 + 1);
  EXPECT_EQ(find_represented("LLAMA3-70B"), find_represented("llama3-70b"));
  EXPECT_EQ(find_represented("llama3-700b"), nullptr);
  EXPECT_EQ(tensor_params({{4096, 4096}, {4096}, {2, 3, 5}}), 4096u * 4096 + 4096 + 30);
  EXPECT_THROW(tensor_params({{4, 0}}), std::invalid_argument);
  EXPECT_THROW(tensor_params({{}}), std::invalid_argument);

  json j = read_json_file((kSource / "reports/baselines/us-east-us-west.json").string());
  RepresentedModel r{"llama3-70b", 70553706496u, "catalog layer formula", "card", 8192, 50890};
  EXPECT_DOUBLE_EQ(r.scale(), 70553706496.0 / 50890);
  j["context"]["represented_model"] = r;
  const RunReport rep = parse_report(j, "r.json");
  ASSERT_TRUE(rep.context.represented_model.has_value());
  EXPECT_EQ(*rep.context.represented_model, r);
  EXPECT_EQ(json(rep), j);
  EXPECT_EQ(describe_represented(rep.context),
            "represents llama3-70b (70.55 G parameters, catalog layer formula; 1.386e+06 x the trained model): "
            "time, WAN bytes and samples are its (a sample = 8192 tokens); accuracy is the trained proxy's (50890 "
            "parameters)");
  j["context"]["represented_model"]["params"] = 0;
  EXPECT_THROW(parse_report(j, "bad.json"), ReportError);
}

}  // namespace
}  // namespace geotb::model
