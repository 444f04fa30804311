// The exec report (model/exec_report.h): a crafted report round-trips key for key, the reader's
// errors name the field and the value, GEOTB_METRIC lines parse, and the job figures
// (metrics::job_metric_series/mean, mean_step_s, step_durations_s) on crafted values.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/exec_report.h"
#include "model/metrics.h"

namespace geotb::model {
namespace {

using nlohmann::json;

ExecReport crafted() {
  ExecReport r;
  r.scenario.name = "dpdk-2x2";
  r.scenario.network = "dpdk";
  r.scenario.datacenters = {{"east", 1}, {"west", 1}};
  r.scenario.workload.model = "mlp";
  r.scenario.workload.dataset = "fashion-mnist";
  r.scenario.workload.batch_per_worker = 32;
  r.scenario.workload.steps = 3;
  r.context.started_at = "2026-11-30T18:00:00Z";
  r.command = {"python3", "job.py", "--x"};
  r.ranks_per_dc = 1;
  r.world_size = 2;
  r.master_addr = "10.77.0.1";
  r.master_port = 29500;
  r.run_as = std::make_pair(1000, 1000);
  r.status = "failed";
  r.wall_s = 2.5;
  r.first_failure = ExecFailure{1, 1, 3, 0, "rank 1 (dc 1, west): exit status 3"};
  ExecRank a;
  a.rank = 0;
  a.wall_s = 2.5;
  a.exit_status = 143;
  a.signal = 15;
  a.stopped_by_geotb = true;
  a.log = "/tmp/rank-0.log";
  a.metrics = {json{{"step", 1}, {"step_time_s", 0.25}}, json{{"note", "x"}}, json{{"step", 3}, {"step_time_s", 0.5}}};
  ExecRank b;
  b.rank = 1;
  b.dc = 1;
  b.exit_status = 3;
  b.wall_s = 0.5;
  b.log = "/tmp/rank-1.log";
  b.metrics = {json{{"step_time_s", 1.0}}, json{{"step_time_s", "fast"}}, json{{"step_time_s", 2.0}}};
  r.ranks = {a, b};
  r.links = {LinkTraffic{"east", "west", 10, 15140, {{"loss", 1}, {"link_down", 0}}, 2}};
  r.timeline.origin_s = 0.25;
  r.timeline.scheduled = 2;
  r.timeline.applied = 2;
  r.timeline.changes = {TimelineEntry{3.0, "east", "west", json{{"up", false}}}};
  return r;
}

TEST(ExecReport, RoundTripsKeyForKey) {
  const json j = crafted();
  EXPECT_EQ(j.at("schema"), "geotb.exec");
  ExecReport back;
  from_json(j, back);
  EXPECT_EQ(json(back), j);
  EXPECT_EQ(back.first_failure->exit_status, 3);
  EXPECT_EQ(back.links[0].drops.at("loss"), 1u);
  EXPECT_EQ(j.at("run_as"), (json{{"uid", 1000}, {"gid", 1000}}));
}

std::string error_of(const json& j) {
  ExecReport r;
  try {
    from_json(j, r);
  } catch (const FieldError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ExecReport, ReaderNamesTheFieldAndTheValue) {
  json j = crafted();
  j["status"] = "done";
  EXPECT_EQ(error_of(j), "status: expected \"ok\", \"failed\" or \"deadline\", got \"done\"");
  j = crafted();
  j["first_failure"] = nullptr;
  EXPECT_EQ(error_of(j), "first_failure: status \"failed\" without a first failure");
  j = crafted();
  j["ranks"][1]["rank"] = 5;
  EXPECT_EQ(error_of(j), "ranks[1].rank: expected 1, got 5");
  j = crafted();
  j["links"][0]["drops"]["loss"] = -1;
  EXPECT_NE(error_of(j).find("links[0]"), std::string::npos) << error_of(j);
  j = crafted();
  j["timeline"]["applied"] = 3;
  EXPECT_EQ(error_of(j), "timeline.applied: 3 > scheduled 2");
  j = crafted();
  j["schema"] = "geotb.report";
  EXPECT_EQ(error_of(j), "schema: \"geotb.report\": not a geotb exec report (expected \"geotb.exec\")");
}

TEST(ExecReport, MetricLines) {
  EXPECT_EQ(parse_metric_line("GEOTB_METRIC {\"step\": 2, \"loss\": 0.5}"), (json{{"step", 2}, {"loss", 0.5}}));
  EXPECT_EQ(parse_metric_line("INFO rank0: GEOTB_METRIC {\"a\": 1}"), (json{{"a", 1}}));  // after a log prefix
  EXPECT_EQ(parse_metric_line("GEOTB_METRIC [1, 2]"), std::nullopt);                   // not an object
  EXPECT_EQ(parse_metric_line("GEOTB_METRIC {\"a\": "), std::nullopt);                  // cut off
  EXPECT_EQ(parse_metric_line("step_time_s 0.2"), std::nullopt);
}

TEST(ExecReport, JobFigures) {
  const ExecReport r = crafted();
  using P = std::vector<std::pair<double, double>>;
  EXPECT_EQ(metrics::job_metric_series(r, "step_time_s", 0), (P{{1, 0.25}, {3, 0.5}}));  // x = "step"
  EXPECT_EQ(metrics::job_metric_series(r, "step_time_s", 1), (P{{1, 1.0}, {2, 2.0}}));   // no step: position; "fast" skipped
  EXPECT_EQ(metrics::job_metric_mean(r, "step_time_s", 0), 0.375);
  EXPECT_EQ(metrics::job_metric_mean(r, "step_time_s", 1), 1.5);
  EXPECT_EQ(metrics::job_metric_mean(r, "loss", 0), std::nullopt);
  EXPECT_EQ(metrics::job_metric_mean(r, "step_time_s", 7), std::nullopt);
  StrategyRun s;
  s.metrics.wall_s = 0.9;
  s.series.loss = {1, 1, 1};
  s.series.step_end_s = {0.25, 0.5, 0.9};
  EXPECT_DOUBLE_EQ(metrics::mean_step_s(s), 0.3);
  const std::vector<double> d = metrics::step_durations_s(s);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_DOUBLE_EQ(d[0], 0.25);
  EXPECT_DOUBLE_EQ(d[1], 0.25);
  EXPECT_DOUBLE_EQ(d[2], 0.4);
  EXPECT_EQ(metrics::mean_step_s(StrategyRun{}), 0.0);
}

}  // namespace
}  // namespace geotb::model
