// async_ef_topk_int8 (engine/strategies/async_ef_topk_int8.cc): the staleness bound, the identity
// with the synchronous hierarchical exchange at bound 0, the end of the run, and what it refuses.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "engine/cluster.h"
#include "tests/unit/engine_fixtures.h"

using namespace geotb::engine;
using std::chrono::milliseconds;

namespace {

const Datasets& data() { return fixtures::fashion_subset(4000, 500); }

using fixtures::triangle;

// Virtual clock, one compute profile per site: steps of the given lengths.
RunOptions skewed(std::vector<int> step_ms) {
  RunOptions opt;
  opt.clock = ClockMode::kVirtual;
  for (int ms : step_ms) {
    ComputeProfile p;
    p.step_time = milliseconds(ms);
    opt.compute.push_back(p);
  }
  return opt;
}

StrategyConfig async_cfg(int K, int bound) {
  StrategyConfig c{"async_ef_topk_int8"};
  c.K = K;
  c.max_staleness = bound;
  return c;
}

// The bound 0 is the synchronous exchange: the sites wait for each other's round every round and
// every anchor is the same, so the run is hier_ef_topk_int8's with "overlap": false to the bit:
// weights, every step's instant, the wall time, the WAN bytes and every exchange's timing. The
// sites' steps differ (10, 25 and 40 ms), so rounds arrive in every order; 30 steps with K = 4
// leave 2 steps after the last round, which the final exchange carries.
TEST(AsyncEfTopkInt8, BoundZeroIsTheBlockingHierarchicalExchangeBitForBit) {
  const RunOptions opt = skewed({10, 25, 40});
  const WorkloadSpec work = fixtures::small_mlp(30, 7, 3);
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 4;
  hier.overlap = false;
  std::vector<float> xa, xh;
  const auto a = run_strategy(triangle(), work, async_cfg(4, 0), data(), opt, &xa);
  const auto h = run_strategy(triangle(), work, hier, data(), opt, &xh);
  ASSERT_EQ(xa.size(), xh.size());
  EXPECT_EQ(std::memcmp(xa.data(), xh.data(), xa.size() * sizeof(float)), 0);
  EXPECT_EQ(a.final_weights_sha256, h.final_weights_sha256);
  EXPECT_EQ(a.series.step_end_s, h.series.step_end_s);
  EXPECT_EQ(a.series.loss, h.series.loss);
  EXPECT_EQ(a.metrics.wall_s, h.metrics.wall_s);
  EXPECT_EQ(a.metrics.samples, h.metrics.samples);
  EXPECT_EQ(a.metrics.wan_payload_bytes, h.metrics.wan_payload_bytes);
  EXPECT_EQ(a.metrics.wan_wire_bytes, h.metrics.wan_wire_bytes);
  EXPECT_EQ(a.metrics.exposed_comm_s_per_step, h.metrics.exposed_comm_s_per_step);
  ASSERT_EQ(a.exchanges.size(), h.exchanges.size());
  ASSERT_EQ(a.exchanges.size(), 8u);  // 7 rounds + the final
  for (size_t i = 0; i < a.exchanges.size(); ++i) {
    EXPECT_EQ(a.exchanges[i].step, h.exchanges[i].step);
    EXPECT_EQ(a.exchanges[i].bytes_sent, h.exchanges[i].bytes_sent);
    EXPECT_EQ(a.exchanges[i].seconds, h.exchanges[i].seconds) << i;
    EXPECT_EQ(a.exchanges[i].lower_bound_s, h.exchanges[i].lower_bound_s) << i;
  }
  // Every update applied fresh; every site ran every step.
  ASSERT_TRUE(a.asynchrony.has_value());
  ASSERT_EQ(a.asynchrony->sites.size(), 3u);
  for (const auto& s : a.asynchrony->sites) {
    EXPECT_EQ(s.steps, 30);
    EXPECT_EQ(s.rounds, 7);
    ASSERT_EQ(s.staleness_histogram.size(), 1u);
    EXPECT_EQ(s.staleness_histogram[0], 14u);  // 7 rounds x 2 peers
    EXPECT_EQ(s.max_staleness_observed, 0);
  }
  EXPECT_FALSE(h.asynchrony.has_value());
  // Negative control: with a bound of 1 the fast sites run ahead, apply late updates at 1/2, and
  // end elsewhere.
  std::vector<float> x1;
  const auto one = run_strategy(triangle(), work, async_cfg(4, 1), data(), opt, &x1);
  EXPECT_NE(std::memcmp(x1.data(), xh.data(), x1.size() * sizeof(float)), 0);
  EXPECT_LT(one.metrics.wall_s, h.metrics.wall_s);
  EXPECT_EQ(one.asynchrony->sites[0].max_staleness_observed, 1);
}

// A skewed profile (10, 20 and 40 ms steps): with a bound of 2 no update is applied more than 2
// rounds late, and the bound binds (the fastest site waits at it and sees staleness 2). Without a
// bound the fastest runs further ahead and sees larger staleness: the bound is what limits it.
TEST(AsyncEfTopkInt8, StalenessNeverExceedsTheBoundAndTheBoundBinds) {
  const RunOptions opt = skewed({10, 20, 40});
  const WorkloadSpec work = fixtures::small_mlp(60, 3, 3);
  const auto bounded = run_strategy(triangle(), work, async_cfg(2, 2), data(), opt);
  const auto free = run_strategy(triangle(), work, async_cfg(2, -1), data(), opt);
  ASSERT_TRUE(bounded.asynchrony && free.asynchrony);
  EXPECT_EQ(bounded.asynchrony->max_staleness, 2);
  EXPECT_FALSE(free.asynchrony->max_staleness.has_value());
  int worst_bounded = 0, worst_free = 0;
  for (const auto& s : bounded.asynchrony->sites) {
    EXPECT_LE(s.max_staleness_observed, 2) << "site " << s.dc;
    EXPECT_LE(s.staleness_histogram.size(), 3u) << "site " << s.dc;
    worst_bounded = std::max(worst_bounded, s.max_staleness_observed);
    std::printf("bound 2: site %d steps %d rounds %d max staleness %d waited %.3f s\n", s.dc, s.steps, s.rounds,
                s.max_staleness_observed, s.wait_at_bound_s);
  }
  for (const auto& s : free.asynchrony->sites) {
    worst_free = std::max(worst_free, s.max_staleness_observed);
    EXPECT_EQ(s.wait_at_bound_s, 0.0);
    std::printf("no bound: site %d steps %d rounds %d max staleness %d\n", s.dc, s.steps, s.rounds,
                s.max_staleness_observed);
  }
  EXPECT_EQ(worst_bounded, 2);
  EXPECT_GT(bounded.asynchrony->sites[0].wait_at_bound_s, 0.0);  // site a (10 ms) waits for c (40 ms)
  EXPECT_GT(worst_free, 2);
  // "end": "all" (the default): the slowest site ran the run's 60 steps and the faster ones ran on
  // while it finished (by at most the bound: 2 rounds = 4 steps, plus the round that saw it end).
  // "first": the fastest ran 60 and the slowest stopped at its next round after the fastest's last.
  StrategyConfig first = async_cfg(2, -1);
  first.end = "first";
  const auto free_first = run_strategy(triangle(), work, first, data(), opt);
  EXPECT_EQ(bounded.asynchrony->sites[2].steps, 60);
  EXPECT_GT(bounded.asynchrony->sites[0].steps, 60);
  EXPECT_LE(bounded.asynchrony->sites[0].steps, 60 + 2 * 2 + 2);
  EXPECT_EQ(free.asynchrony->sites[2].steps, 60);
  EXPECT_GT(free.asynchrony->sites[0].steps, free.asynchrony->sites[1].steps);
  EXPECT_GT(free.asynchrony->sites[1].steps, 60);
  EXPECT_EQ(free_first.asynchrony->sites[0].steps, 60);
  EXPECT_LT(free_first.asynchrony->sites[2].steps, 60);
  // Samples are the steps run; the final average makes every replica identical.
  for (const auto* r : {&bounded, &free, &free_first}) {
    EXPECT_EQ(r->metrics.replica_max_abs_diff, 0.0);
    uint64_t steps = 0;
    for (const auto& s : r->asynchrony->sites) steps += static_cast<uint64_t>(s.steps) * 2;  // 2 workers each
    EXPECT_EQ(r->metrics.samples, steps * 16);
    EXPECT_EQ(r->series.test_accuracy.back().samples, r->metrics.samples);
    EXPECT_EQ(r->series.loss.size(), 60u);
    EXPECT_EQ(r->series.step_end_s.size(), 60u);
  }
  // The sites' models drift apart between rounds and meet at the end. Site a's 122 rounds fill
  // its snapshot log twice over: thinned, every point still has every site's model.
  ASSERT_GT(free.asynchrony->sites[0].rounds, 2 * static_cast<int>(geotb::model::kMaxAsyncSnapshots) - 10);
  ASSERT_GE(free.asynchrony->divergence.size(), 3u);
  EXPECT_EQ(free.asynchrony->divergence.front().max_abs_diff, 0.0);  // one initial model
  double peak = 0;
  for (const auto& d : free.asynchrony->divergence) peak = std::max(peak, d.relative_l2);
  EXPECT_GT(peak, 0.0);
}

// Unequal sites (a 40 ms site and a 10 ms one, 2 workers each): the synchronous exchange runs at
// the slow site's pace; without a bound the fast site runs at its own, so the cluster processes
// more samples per second. The run is exactly repeatable.
TEST(AsyncEfTopkInt8, TheFastSiteNoLongerWaitsForTheSlowOne) {
  const RunOptions opt = skewed({40, 10});
  const ClusterSpec two = fixtures::two_dcs(2, 100e9, std::chrono::microseconds(10), 10e9, milliseconds(15));
  const WorkloadSpec work = fixtures::small_mlp(40, 5, 2);
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 4;
  const auto sync = run_strategy(two, work, hier, data(), opt);
  const auto async = run_strategy(two, work, async_cfg(4, -1), data(), opt);
  const double ratio = async.metrics.samples_per_s / sync.metrics.samples_per_s;
  std::printf("samples/s: hier %.1f, async %.1f (x%.2f); accuracy %.4f vs %.4f\n", sync.metrics.samples_per_s,
              async.metrics.samples_per_s, ratio, sync.metrics.final_test_accuracy, async.metrics.final_test_accuracy);
  EXPECT_GT(ratio, 1.5);  // (1 + 1/4) / (2 * 1/4) = 2.5 at most, less the final average and the slow site's rounds
  const auto again = run_strategy(two, work, async_cfg(4, -1), data(), opt);
  EXPECT_EQ(again.series.step_end_s, async.series.step_end_s);
  EXPECT_EQ(again.final_weights_sha256, async.final_weights_sha256);
}

// f(s): "threshold" 0 drops every late update; the run still ends with identical replicas.
TEST(AsyncEfTopkInt8, ThresholdZeroDropsLateUpdates) {
  StrategyConfig c = async_cfg(2, 3);
  c.staleness_weight = "threshold";
  c.staleness_threshold = 0;
  const auto r = run_strategy(triangle(), fixtures::small_mlp(30, 3, 2), c, data(), skewed({10, 20, 40}));
  ASSERT_TRUE(r.asynchrony);
  EXPECT_EQ(r.asynchrony->staleness_weight, "1 if s <= 0, else 0");
  EXPECT_EQ(r.metrics.replica_max_abs_diff, 0.0);
}

TEST(AsyncEfTopkInt8, RefusesTheWallClockAndCheckpoints) {
  try {
    run_strategy(triangle(), fixtures::small_mlp(4, 1, 1), async_cfg(2, 1), data(), RunOptions{});
    FAIL() << "expected RunError";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("async_ef_topk_int8: runs on the virtual clock only"), std::string::npos)
        << e.what();
  }
  fixtures::TempDir dir;
  RunOptions opt = skewed({10});
  opt.checkpoint.dir = dir.str();
  opt.checkpoint.every_steps = 2;
  try {
    run_strategy(triangle(), fixtures::small_mlp(4, 1, 1), async_cfg(2, 1), data(), opt);
    FAIL() << "expected RunError";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("async_ef_topk_int8: checkpoint: this strategy cannot be checkpointed"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
