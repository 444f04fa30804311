// The adaptive-K rule (engine/strategies/adaptive_k.h) on hand-made measurements: exact K
// sequences, the hysteresis, the clamps, and its state through save/restore.
#include "engine/strategies/adaptive_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

using namespace geotb::engine;

namespace {

// u = 0.8: need = max(ceil(1.25 T / t), ceil(4 C / t)).
AdaptiveKConfig config() { return {.k_min = 1, .k_max = 64, .target = 0.8, .alpha = 0.5, .patience = 2}; }

RoundMeasure m(double exchange_s, double step_s = 0.1, double round_s = 0) { return {exchange_s, step_s, round_s}; }

}  // namespace

TEST(AdaptiveK, NeedIsTheSmallestKThatHidesTheExchangeAndAmortisesTheRound) {
  const AdaptiveKConfig c = config();
  EXPECT_EQ(AdaptiveK::need(c, 0.8, 0.1, 0), 10);    // T = 10 · u · t exactly: 10, not 11
  EXPECT_EQ(AdaptiveK::need(c, 0.81, 0.1, 0), 11);   // a little more needs one more step
  EXPECT_EQ(AdaptiveK::need(c, 0.0, 0.1, 0.25), 10); // u·C / ((1 − u)·t) = 0.2 / 0.02
  EXPECT_EQ(AdaptiveK::need(c, 0.8, 0.1, 0.5), 20);  // the larger of the two
  EXPECT_EQ(AdaptiveK::need(c, 0.0, 0.1, 0), 1);     // never below one step
}

TEST(AdaptiveK, GrowsAtOnceShrinksByHalvesAfterPatienceAndHoldsInTheDeadBand) {
  AdaptiveK k(config(), 2);
  EXPECT_EQ(k.k(), 1);  // K_min until the first decision
  // A DC without a measurement yet: nothing decided.
  EXPECT_EQ(k.decide(std::vector<RoundMeasure>{m(0.4), RoundMeasure{}}), 1);
  EXPECT_EQ(k.decisions(), 0);
  const std::vector<std::vector<RoundMeasure>> seq = {
      {m(0.4), m(0.4)},    // need 5: grow to 5
      {m(0.4), m(0.8)},    // the slower DC needs 10: grow to 10
      {m(0.08), m(0.08)},  // latest need 1, smoothed (EWMA 0.6 -> 0.34: 5) <= 10 / 2: first time
      {m(0.08), m(0.08)},  // smoothed 3 <= 5: second time in a row: halve to max(3, 5) = 5
      {m(0.08), m(0.08)},  // smoothed 2 <= 2.5: first
      {m(0.08), m(0.08)},  // smoothed 2: second: max(2, 3) = 3
      {m(0.08), m(0.08)},  // smoothed 2 > 1.5: the dead band, K stays
      {m(0.24), m(0.24)},  // latest need 3 = K: no growth
      {m(10.0), m(0.08)},  // a collapse in one DC: 125 steps, clamped to K_max
  };
  const std::vector<int> expected = {5, 10, 10, 5, 5, 3, 3, 3, 64};
  std::vector<int> got;
  for (const auto& ms : seq) got.push_back(k.decide(ms));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(k.decisions(), 9);
}

TEST(AdaptiveK, AJitteringLinkDoesNotMoveK) {
  // Exchange times alternating between needs 4 and 5 below K = 6: no oscillation (smoothed need 5).
  AdaptiveK k(config(), 1);
  k.decide(std::vector<RoundMeasure>{m(0.48)});  // need 1.25 · 0.48 / 0.1 = 6
  ASSERT_EQ(k.k(), 6);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(k.decide(std::vector<RoundMeasure>{m(i % 2 ? 0.4 : 0.3)}), 6) << i;
}

TEST(AdaptiveK, StateSurvivesSaveAndRestore) {
  AdaptiveK a(config(), 2), b(config(), 2);
  a.decide(std::vector<RoundMeasure>{m(0.4), m(0.8)});
  a.decide(std::vector<RoundMeasure>{m(0.08), m(0.08)});  // below = 1
  b.restore(a.save());
  EXPECT_EQ(b.save().size(), a.save().size());
  for (int i = 0; i < 6; ++i) {
    const std::vector<RoundMeasure> ms = {m(0.08 + 0.01 * i), m(0.08)};
    EXPECT_EQ(a.decide(ms), b.decide(ms)) << i;
  }
  EXPECT_EQ(a.decisions(), b.decisions());
  // A DC without measurements is saved as NaN and restored as none.
  AdaptiveK fresh(config(), 2);
  const std::vector<double> s = fresh.save();
  EXPECT_TRUE(std::isnan(s[3]));
  b.restore(s);
  EXPECT_EQ(b.k(), 1);
  EXPECT_THROW(b.restore(std::vector<double>(4, 1.0)), std::invalid_argument);
  std::vector<double> bad = s;
  bad[0] = 0;  // K below K_min
  EXPECT_THROW(b.restore(bad), std::invalid_argument);
  EXPECT_THROW(b.decide(std::vector<RoundMeasure>{m(1)}), std::invalid_argument);  // one DC of two
}
