// The report's "asynchrony" section (model/asynchrony.h): the summary of hand-made site logs, and
// its JSON round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "model/asynchrony.h"

using namespace geotb::model;

namespace {

AsyncSiteLog site(int dc, std::vector<uint64_t> staleness, std::vector<double> t, std::vector<std::vector<float>> x) {
  AsyncSiteLog s;
  s.dc = dc;
  s.max_staleness = 2;
  s.staleness_weight = "1/(1+s)^1";
  s.steps = 10 * (dc + 1);
  s.rounds = 5 * (dc + 1);
  s.staleness = std::move(staleness);
  s.wait_at_bound_s = 0.25 * dc;
  s.round_s = {0.5, 1.5};
  s.snapshot_s = std::move(t);
  s.snapshots = std::move(x);
  return s;
}

// Two sites of 2-element models. Site 0: (0,0) at 1 s, (2,0) at 3 s. Site 1: (0,0) at 1 s, (0,4)
// at 2 s, (2,4) at 4 s. The instants 1, 2, 3, 4 s (from 1 s on: both sites have a model):
//   t=1: equal -> 0, 0
//   t=2: (0,0) vs (0,4): mean (0,2), |x_d - mean| = 2 each, |mean| = 2 -> rel 1; max abs 4
//   t=3: (2,0) vs (0,4): mean (1,2), |x_d - mean| = sqrt(5), |mean| = sqrt(5) -> rel 1; max abs 4
//   t=4: (2,0) vs (2,4): mean (2,2), |x_d - mean| = 2, |mean| = sqrt(8) -> rel 1/sqrt(2); max abs 4
TEST(Asynchrony, SummaryOfHandMadeLogs) {
  std::vector<AsyncSiteLog> logs;
  logs.push_back(site(1, {3, 0, 2}, {1, 2, 4}, {{0, 0}, {0, 4}, {2, 4}}));  // out of DC order on purpose
  logs.push_back(site(0, {5}, {1, 3}, {{0, 0}, {2, 0}}));
  const AsyncSection a = summarize_async(logs, "the end");
  EXPECT_EQ(a.max_staleness, 2);
  EXPECT_EQ(a.final_sync, "the end");
  ASSERT_EQ(a.sites.size(), 2u);
  EXPECT_EQ(a.sites[0].dc, 0);
  EXPECT_EQ(a.sites[0].max_staleness_observed, 0);
  EXPECT_EQ(a.sites[1].max_staleness_observed, 2);
  EXPECT_EQ(a.sites[1].staleness_histogram, (std::vector<uint64_t>{3, 0, 2}));
  EXPECT_EQ(a.sites[1].wait_at_bound_s, 0.25);
  EXPECT_EQ(a.sites[1].round_s, (std::vector<double>{0.5, 1.5}));
  ASSERT_EQ(a.divergence.size(), 4u);
  const double rel[] = {0, 1, 1, 1 / std::sqrt(2.0)}, abs_diff[] = {0, 4, 4, 4};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a.divergence[i].t_s, static_cast<double>(i + 1));
    EXPECT_NEAR(a.divergence[i].relative_l2, rel[i], 1e-12) << i;
    EXPECT_EQ(a.divergence[i].max_abs_diff, abs_diff[i]) << i;
  }
  // JSON and back.
  json j = a;
  AsyncSection b;
  from_json(j, b);
  EXPECT_EQ(b.max_staleness, a.max_staleness);
  EXPECT_EQ(b.sites[1].staleness_histogram, a.sites[1].staleness_histogram);
  EXPECT_EQ(b.sites[1].round_s, a.sites[1].round_s);
  ASSERT_EQ(b.divergence.size(), 4u);
  EXPECT_EQ(b.divergence[3].relative_l2, a.divergence[3].relative_l2);
  // No bound: null.
  logs[0].max_staleness = logs[1].max_staleness = -1;
  j = summarize_async(logs, "x");
  EXPECT_TRUE(j.at("max_staleness").is_null());
  from_json(j, b);
  EXPECT_FALSE(b.max_staleness.has_value());
}

// Instants before every site has a model are skipped; more than 2 * kMaxAsyncSnapshots instants
// are thinned evenly, keeping the first and the last.
TEST(Asynchrony, DivergenceStartsWhenEverySiteHasAModelAndIsThinned) {
  std::vector<double> t0, t1;
  std::vector<std::vector<float>> x0, x1;
  for (int i = 0; i < 200; ++i) {
    t0.push_back(1.0 + i);
    x0.push_back({static_cast<float>(i)});
  }
  t1 = {5.0};
  x1 = {{0.0f}};
  const AsyncSection a = summarize_async({site(0, {}, t0, x0), site(1, {}, t1, x1)}, "");
  ASSERT_EQ(a.divergence.size(), 2 * kMaxAsyncSnapshots);
  EXPECT_EQ(a.divergence.front().t_s, 5.0);                 // site 0 holds 4
  EXPECT_EQ(a.divergence.front().max_abs_diff, 4.0);
  EXPECT_EQ(a.divergence.back().t_s, 200.0);                // site 0 holds 199
  EXPECT_EQ(a.divergence.back().max_abs_diff, 199.0);
}

}  // namespace
