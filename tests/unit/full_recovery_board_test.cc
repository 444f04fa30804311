// FullRecoveryBoard (engine/faults/full_recovery_board.h): full recovery's decision over a store,
// here an in-process one shared by threads standing in for the ranks' processes. Exact: who
// decides, which deaths are restarted, the boundary against every published one, the instant
// the restarted are up.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/faults/full_recovery_board.h"
#include "engine/faults/shrink.h"

namespace geotb::engine {
namespace {

using std::chrono::nanoseconds;

/// A clock that stays where the test puts it.
class FixedClock final : public emu::Clock {
 public:
  explicit FixedClock(nanoseconds t) : t_(t) {}
  nanoseconds now() const override { return t_; }
  void sleep_until(nanoseconds) const override {}

 private:
  nanoseconds t_;
};

TEST(FullRecoveryBoard, TheCrossingCoordinatorDecidesPastEveryPublishedBoundary) {
  // 8 workers, above 0.25: 3 deaths make it. Ranks publish where they are; then the coordinators
  // of two groups count 2 and 1 deaths: the second crosses.
  auto store = make_inprocess_store();
  const FixedClock clock(nanoseconds(5'000));
  std::vector<FullRecoveryBoard> ranks;
  for (int r = 0; r < 8; ++r) ranks.emplace_back(store, "run/fr/", 8, 3, true, nanoseconds(30'000));
  for (int r : {0, 3, 4, 5, 7}) EXPECT_FALSE(ranks[static_cast<size_t>(r)].boundary(r, 20 + r));  // 20 .. 27
  EXPECT_FALSE(ranks[0].count({1, 2}, clock));                    // 2 of 3
  const auto d = ranks[4].count({6}, clock);                       // 3: crosses
  ASSERT_TRUE(d);
  EXPECT_EQ(d->dead, 3);
  EXPECT_EQ(d->at, nanoseconds(5'000));
  // One past the furthest published (27), for a rank behind it and for the one at it.
  EXPECT_EQ(ranks[3].boundary(3, 23), 28);
  EXPECT_EQ(ranks[7].boundary(7, 27), 28);
  EXPECT_EQ(ranks[7].restarted(), (std::vector<int>{1, 2, 6}));
  EXPECT_EQ(ranks[7].up_at(), nanoseconds(35'000));
  // A death after the decision is counted but neither decides nor is restarted.
  EXPECT_FALSE(ranks[5].count({5}, clock));
  EXPECT_EQ(ranks[0].boundary(0, 24), 28);
  EXPECT_EQ(ranks[0].restarted(), (std::vector<int>{1, 2, 6}));
}

TEST(FullRecoveryBoard, WithTheSurvivorsNobodyIsRestartedAndNothingIsFiled) {
  auto store = make_inprocess_store();
  const FixedClock clock(nanoseconds(1));
  FullRecoveryBoard a(store, "k/", 4, 2, false, nanoseconds(0)), b(store, "k/", 4, 2, false, nanoseconds(0));
  EXPECT_FALSE(b.boundary(1, 9));
  EXPECT_TRUE(a.count({2, 3}, clock));  // 2 at once: this one crosses
  EXPECT_EQ(b.boundary(1, 9), 10);
  EXPECT_TRUE(b.restarted().empty());
  EXPECT_EQ(store_add(*store, "k/dead", 0), 2);
}

TEST(FullRecoveryBoard, CoordinatorsCountingAtOnceNameExactlyTheDeathsUpToTheCrossing) {
  // 6 coordinators, one death each, at once, threshold 4: exactly one decides, and the deaths it
  // restarts are the 4 whose additions came first (the count reached 1..4), whatever the order.
  for (int round = 0; round < 40; ++round) {
    auto store = make_inprocess_store();
    const FixedClock clock{nanoseconds(round)};
    std::vector<FullRecoveryBoard> boards;
    for (int r = 0; r < 6; ++r) boards.emplace_back(store, "x/", 12, 4, true, nanoseconds(0));
    std::atomic<int> deciders{0};
    std::vector<std::thread> ts;
    for (int r = 0; r < 6; ++r)
      ts.emplace_back([&, r] {
        if (const auto d = boards[static_cast<size_t>(r)].count({6 + r}, clock)) {
          EXPECT_EQ(d->dead, 4);
          deciders.fetch_add(1);
        }
      });
    for (auto& t : ts) t.join();
    ASSERT_EQ(deciders.load(), 1) << "round " << round;
    FullRecoveryBoard reader(store, "x/", 12, 4, true, nanoseconds(0));
    ASSERT_EQ(reader.boundary(0, 1), 1);  // nobody had published: one past 0
    const std::vector<int>& back = reader.restarted();
    ASSERT_EQ(back.size(), 4u) << "round " << round;
    // The restarted are the ones whose additions reached 1..4: each filed under its total.
    std::vector<int> first4;
    for (int t = 1; t <= 4; ++t) {
      const std::vector<int64_t> d = decode_ints(store_get(*store, "x/dead_at/" + std::to_string(t)));
      ASSERT_EQ(d.size(), 1u);
      first4.push_back(static_cast<int>(d[0]));
    }
    std::sort(first4.begin(), first4.end());
    EXPECT_EQ(back, first4) << "round " << round;
  }
}

}  // namespace
}  // namespace geotb::engine
