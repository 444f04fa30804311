// Writes one report through the real writer, from crafted measurements: every rank's
// measurements of scenarios/tiny.json (2 DCs x 2 workers, 60 steps) merged by
// engine::merge_rank_reports, then harness::make_report and harness::write_report, plus one
// failed strategy; the second strategy carries a data plane summary as in dpdk mode, the third an
// asynchronous strategy's site logs. report_schema.py validates the file against harness/report.schema.json and
// checks the derived figures. Usage: write_crafted_report <source root> <out dir>; prints the path.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/result.h"
#include "harness/report.h"
#include "harness/scenario.h"

using namespace geotb;

namespace {

/// Rank r of 4: loss 2 - step/60 + r/8 per step; rank 0 also its step-end times (0.25 s per
/// step), the wall time and 2 accuracy points; DC leaders an exchange every `every` steps.
std::vector<model::RankReport> ranks(const std::string& strategy, int steps, int every, uint64_t wan_per_rank) {
  std::vector<model::RankReport> out(4);
  for (int r = 0; r < 4; ++r) {
    model::RankReport& x = out[static_cast<size_t>(r)];
    x.strategy = strategy;
    x.rank = r;
    x.dc = r / 2;
    x.local_rank = r % 2;
    x.times = {static_cast<uint64_t>(steps) * 1'000'000, static_cast<uint64_t>(steps) * 3'000'000, 0, 0};
    for (int s = 0; s < steps; ++s) x.loss.push_back(2.0 - s / 60.0 + r / 8.0);
    x.wan_sent = {static_cast<uint64_t>(steps), wan_per_rank, wan_per_rank + 52 * static_cast<uint64_t>(steps)};
    if (x.local_rank == 0 && every > 0)
      for (int s = every - 1; s < steps; s += every) x.exchanges.push_back({s, 1024, 0.02, 0.01});
    if (r == 0) {
      for (int s = 0; s < steps; ++s) x.step_end_s.push_back(0.25 * (s + 1));
      x.wall_s = 0.25 * steps;
      x.accuracy_curve = {{steps / 2, static_cast<uint64_t>(steps / 2) * 128, 0.5},
                          {steps, static_cast<uint64_t>(steps) * 128, 0.75}};
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: write_crafted_report <source root> <out dir>\n");
    return 2;
  }
  const harness::Scenario sc = harness::load_scenario(std::string(argv[1]) + "/scenarios/tiny.json");
  const int steps = sc.workload.steps;
  std::vector<model::StrategyRun> runs;
  runs.push_back(engine::merge_rank_reports("naive_ddp", ranks("naive_ddp", steps, 0, 1 << 20), sc.workload, 2));
  runs.push_back(engine::merge_rank_reports("hier_ef_topk_int8", ranks("hier_ef_topk_int8", steps, 4, 1 << 14),
                                            sc.workload, 2));
  // As a dpdk-mode run records its data plane: 2 stalls, 3 ms of 15 s.
  runs.back().dataplane = model::DataPlaneSummary{"SCHED_FIFO 50, pinned to CPU 1", 2, 0.003, 0.0025, 15.0};
  // An asynchronous run: each DC leader's log (2 sites; 2-element snapshots at 0, 1 and 2 s).
  {
    std::vector<model::RankReport> rs = ranks("async_ef_topk_int8", steps, 4, 1 << 14);
    for (int dc = 0; dc < 2; ++dc) {
      model::AsyncSiteLog l;
      l.dc = dc;
      l.max_staleness = 2;
      l.staleness_weight = "1/(1+s)^1";
      l.steps = steps;
      l.rounds = steps / 4;
      l.staleness = dc == 0 ? std::vector<uint64_t>{10, 5} : std::vector<uint64_t>{15};
      l.wait_at_bound_s = dc == 0 ? 0.0 : 0.5;
      l.round_s = {1.0, 2.0};
      l.snapshot_s = {0.0, 1.0, 2.0};
      l.snapshots = {{1, 1}, {1, 1 + static_cast<float>(dc)}, {2, 2}};
      rs[static_cast<size_t>(2 * dc)].async_log = l;
    }
    runs.push_back(engine::merge_rank_reports("async_ef_topk_int8", rs, sc.workload, 2));
  }
  harness::RunContext ctx;
  ctx.argv = {"write_crafted_report"};
  ctx.scenario_file = "scenarios/tiny.json";
  ctx.started_at = harness::utc_now_iso();
  const model::RunReport rep =
      harness::make_report(sc, std::move(runs), {{"lan", "crafted failure"}}, ctx);
  fmt::print("{}\n", harness::write_report(rep, argv[2], sc.name));
  return 0;
}
