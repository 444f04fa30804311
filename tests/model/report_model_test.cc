// The model's JSON mappings (model/report.h, model/rank_report.h) and derived figures
// (model/metrics.h): committed reports read back and written again key for key, rank files
// round-trip, the readers' errors name the field, and the figures on crafted values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

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
  EXPECT_EQ(r.scenario.check->throughput_ratio, 0.02);
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

// An exchange's round trips: rtt_s written with rtts = seconds / rtt_s; both absent when rtt_s was
// not recorded (older reports), which read back as 0.
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

}  // namespace
}  // namespace geotb::model
