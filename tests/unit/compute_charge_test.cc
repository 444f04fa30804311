// The compute charges (engine/compute_charge.h): the declared profile's costs, the robust
// estimate of measured compute, and what a ComputeRegion reports, on crafted values.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "engine/compute_charge.h"

namespace geotb::engine {
namespace {

using std::chrono::nanoseconds;

TEST(ComputeProfile, CostsAreTheDeclaredRates) {
  ComputeProfile p;
  p.step_time = std::chrono::milliseconds(50);
  EXPECT_EQ(p.cost(Work::kStep, 1), std::chrono::milliseconds(50));
  EXPECT_EQ(p.cost(Work::kStep, 3), std::chrono::milliseconds(150));
  EXPECT_EQ(p.cost(Work::kReduce, 1000), nanoseconds(500));     // 0.5 ns per float
  EXPECT_EQ(p.cost(Work::kCompress, 1000), nanoseconds(2000));  // 2 ns per element
  EXPECT_EQ(p.cost(Work::kOptimizer, 1000), nanoseconds(0));     // counted in step_time
}

TEST(RobustCost, ChargesTheWindowsMinimumSoTheHostsAdditionsDoNotCount) {
  RobustCost rc;
  EXPECT_EQ(rc.charge(Work::kStep, 1, nanoseconds(300)), nanoseconds(300));
  EXPECT_EQ(rc.charge(Work::kStep, 1, nanoseconds(200)), nanoseconds(200));  // cheaper: at once
  EXPECT_EQ(rc.charge(Work::kStep, 1, nanoseconds(2000)), nanoseconds(200));  // a preempted one
  EXPECT_EQ(rc.charge(Work::kStep, 1, nanoseconds(250)), nanoseconds(200));
  // Other work or another size has its own window.
  EXPECT_EQ(rc.charge(Work::kReduce, 64, nanoseconds(7)), nanoseconds(7));
  EXPECT_EQ(rc.charge(Work::kStep, 2, nanoseconds(900)), nanoseconds(900));
}

TEST(RobustCost, FollowsADearerCostAfterAWindow) {
  RobustCost rc;
  for (size_t i = 0; i < RobustCost::kWindow; ++i) rc.charge(Work::kStep, 1, nanoseconds(100));
  // The cost doubles for good: charged from the kWindow-th new occurrence, when the last cheap
  // one has left the window.
  std::vector<int64_t> got;
  for (size_t i = 0; i < RobustCost::kWindow; ++i) got.push_back(rc.charge(Work::kStep, 1, nanoseconds(200)).count());
  for (size_t i = 0; i + 1 < got.size(); ++i) EXPECT_EQ(got[i], 100) << i;
  EXPECT_EQ(got.back(), 200);
}

TEST(ComputeRegion, ReportsItsThreadCpuTimeOrTheDeclaredCostNeverBoth) {
  std::vector<std::pair<Work, uint64_t>> declared;
  std::vector<nanoseconds> measured;
  set_thread_measured_charge([&](nanoseconds charged) { measured.push_back(charged); });
  {
    const ComputeRegion r(Work::kStep, 1);
    volatile double x = 0;
    for (int i = 0; i < 2000000; ++i) x = x + 1.0;  // some CPU time
  }
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_GT(measured[0], nanoseconds(0));  // the first of its kind: charged what it measured
  // With a profile installed, the declared cost wins and nothing is measured.
  set_thread_compute_charge([&](Work w, uint64_t n) { declared.emplace_back(w, n); });
  { const ComputeRegion r(Work::kCompress, 42); }
  EXPECT_EQ(measured.size(), 1u);
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_EQ(declared[0], std::make_pair(Work::kCompress, uint64_t{42}));
  set_thread_compute_charge({});
  set_thread_measured_charge({});
  { const ComputeRegion r(Work::kStep, 1); }  // nothing installed: nothing happens
  EXPECT_EQ(measured.size(), 1u);
  EXPECT_EQ(declared.size(), 1u);
}

}  // namespace
}  // namespace geotb::engine
