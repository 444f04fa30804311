// The fidelity runner's statistics on crafted inputs (exact expected values), and the loss
// model's variance and run-length formulas against the model itself (many seeded replicates).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "emulator/link/link_model.h"
#include "emulator/stats/batch_means.h"
#include "emulator/stats/binomial.h"
#include "emulator/stats/loss_check.h"
#include "emulator/stats/paired_ratio.h"
#include "emulator/stats/ping_rtt.h"
#include "common/stalls.h"
#include "emulator/stats/student_t.h"
#include "emulator/stats/verdict_tally.h"

namespace geotb::emu {
namespace {

TEST(StudentT, ClosedFormsForOneAndTwoDegreesOfFreedom) {
  // df 1 is Cauchy: F(t) = 1/2 + atan(t)/pi. df 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
  for (double p : {0.6, 0.9, 0.975, 0.995}) {
    EXPECT_NEAR(student_t_quantile(p, 1), std::tan(std::numbers::pi * (p - 0.5)), 1e-9 * std::tan(std::numbers::pi * (p - 0.5))) << p;
    const double t2 = (2 * p - 1) / std::sqrt(2 * p * (1 - p));
    EXPECT_NEAR(student_t_quantile(p, 2), t2, 1e-9 * t2) << p;
  }
  for (double t : {-3.0, -0.5, 0.0, 0.7, 12.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / std::numbers::pi, 1e-12) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
  }
}

TEST(StudentT, TableValuesAndSymmetry) {
  // Two-sided 95 % and 99 % points (Abramowitz & Stegun table 26.10 / any statistics package).
  EXPECT_NEAR(student_t_quantile(0.975, 3), 3.182446305284263, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 8), 2.306004135204166, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 20), 2.085963447265837, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.042272456301238, 1e-9);   // the old table used 1.96 above 20
  EXPECT_NEAR(student_t_quantile(0.975, 100), 1.983971518523552, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.995, 5), 4.032142983557536, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), 1.959964, 1e-5);           // -> normal
  EXPECT_EQ(student_t_quantile(0.5, 7), 0.0);
  EXPECT_NEAR(student_t_quantile(0.025, 8), -2.306004135204166, 1e-9);
  for (double df : {1.0, 4.0, 9.0, 57.0})
    for (double p : {0.01, 0.3, 0.8, 0.999}) EXPECT_NEAR(student_t_cdf(student_t_quantile(p, df), df), p, 1e-11) << df << " " << p;
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.9, 0), std::invalid_argument);
}

TEST(BatchMeans, WindowBatchesMeanAndIntervalExactly) {
  // 10 bins of 100 ms, batches of 2 bins: bin 0 and bin 9 (partial) are left out, 4 batches
  // = bins 1..8: counts 22, 18, 20, 20 -> rates x8 / 0.2 s = 880, 720, 800, 800.
  const std::vector<uint64_t> c{5, 10, 12, 10, 8, 10, 10, 14, 6, 3};
  const BatchMeans b = batch_means(c, 0.1, 2, 8.0);
  ASSERT_EQ(b.batches, 4u);
  EXPECT_EQ(b.first_bin, 1u);
  EXPECT_EQ(b.bins, 8u);
  EXPECT_DOUBLE_EQ(b.window_s, 0.8);
  EXPECT_EQ(b.count, 80u);
  ASSERT_EQ(b.batch_rates.size(), 4u);
  EXPECT_DOUBLE_EQ(b.batch_rates[0], 880.0);
  EXPECT_DOUBLE_EQ(b.batch_rates[1], 720.0);
  EXPECT_DOUBLE_EQ(b.batch_rates[2], 800.0);
  EXPECT_DOUBLE_EQ(b.batch_rates[3], 800.0);
  EXPECT_DOUBLE_EQ(b.mean, 800.0);                        // 80 x 8 / 0.8 s, and the mean of the batches
  EXPECT_DOUBLE_EQ(b.sd, std::sqrt(12800.0 / 3));         // (80^2 + 80^2) / (4 - 1)
  const double half = 3.182446305284263 * std::sqrt(12800.0 / 3) / 2;
  EXPECT_NEAR(b.half_width, half, 1e-9 * half);
  EXPECT_NEAR(b.ci_low, 800.0 - half, 1e-9);
  EXPECT_NEAR(b.ci_high, 800.0 + half, 1e-9);
}

// What the last session saw: a rate paced exactly (constant bins) with a slow first bin and a
// partial last one. The old code took the interval over the middle batches but the figure from
// first to last arrival, so a tight interval excluded its own figure. Now both are the window's.
TEST(BatchMeans, IntervalIsAboutTheFigureItQualifies) {
  std::vector<uint64_t> c(51, 1381);
  c[0] = 1344;   // sender ramp
  c[50] = 413;   // partial last bin
  const BatchMeans b = batch_means(c, 0.1, 5, 9038 * 8.0);
  ASSERT_EQ(b.batches, 9u);
  EXPECT_EQ(b.bins, 45u);
  EXPECT_DOUBLE_EQ(b.mean, 1381 * 9038 * 8.0 / 0.1);
  EXPECT_EQ(b.sd, 0.0);
  EXPECT_LE(b.ci_low, b.mean);
  EXPECT_GE(b.ci_high, b.mean);
  // Leftover bins that do not fill a batch are out of the window: 2 + 4 * 3 + 3 bins -> 4 batches.
  const std::vector<uint64_t> d{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 99, 99, 99, 0};
  const BatchMeans e = batch_means(d, 0.1, 3, 1.0);
  EXPECT_EQ(e.batches, 5u);  // bins 1..15: the 99s are in the last batch
  const BatchMeans f = batch_means(std::vector<uint64_t>(d.begin(), d.end() - 2), 0.1, 3, 1.0);
  EXPECT_EQ(f.batches, 4u);  // 15 bins: bins 1..12, the 99 in bin 13 is left out
  EXPECT_DOUBLE_EQ(f.mean, 24 / 1.2);
  // Fewer than two batches: no interval.
  EXPECT_EQ(batch_means({1, 2, 3, 4, 5}, 0.1, 2, 1.0).batches, 0u);
  EXPECT_EQ(batch_means({1, 2, 3, 4, 5, 6}, 0.1, 2, 1.0).batches, 2u);
  EXPECT_THROW(batch_means(c, 0.0, 5, 1.0), std::invalid_argument);
  EXPECT_THROW(batch_means(c, 0.1, 0, 1.0), std::invalid_argument);
}

TEST(Binomial, WilsonIntervalExact) {
  // k = 0, n = 100, z = 1.96: [0, z^2 / (n + z^2)].
  const auto [lo, hi] = wilson_interval(0, 100);
  EXPECT_EQ(lo, 0.0);
  EXPECT_NEAR(hi, 1.96 * 1.96 / (100 + 1.96 * 1.96), 1e-15);
  const auto [lo2, hi2] = wilson_interval(50, 100, 2.0);  // p = 1/2: 1/2 +- z sqrt(1/4n + z^2/4n^2)/(1 + z^2/n)
  EXPECT_NEAR(lo2, 0.5 - 2.0 * std::sqrt(0.25 / 100 + 4.0 / 40000) / 1.04, 1e-15);
  EXPECT_NEAR(hi2, 0.5 + 2.0 * std::sqrt(0.25 / 100 + 4.0 / 40000) / 1.04, 1e-15);
  const auto [lo3, hi3] = wilson_interval(0, 0);
  EXPECT_EQ(lo3, 0.0);
  EXPECT_EQ(hi3, 1.0);
}

TEST(Binomial, UpperTailExact) {
  // Bin(7, 1/2): P(X >= 4) = (35 + 21 + 7 + 1) / 128 = 1/2.
  EXPECT_NEAR(binomial_upper_tail(4, 7, 0.5), 0.5, 1e-14);
  // Bin(7, 0.15): P(X >= 4), exact rational sum 0.012103171875 (a median of 7 pairs below 0.9
  // when each pair is, with probability 0.15).
  EXPECT_NEAR(binomial_upper_tail(4, 7, 0.15), 0.012103171875, 1e-14);
  EXPECT_NEAR(binomial_upper_tail(3, 10, 0.3), 0.6172172136, 1e-12);
  EXPECT_EQ(binomial_upper_tail(0, 5, 0.3), 1.0);
  EXPECT_EQ(binomial_upper_tail(6, 5, 0.3), 0.0);
  EXPECT_EQ(binomial_upper_tail(2, 5, 0.0), 0.0);
  EXPECT_EQ(binomial_upper_tail(5, 5, 1.0), 1.0);
  EXPECT_THROW(binomial_upper_tail(1, 5, 1.5), std::invalid_argument);
}

TEST(Binomial, MedianIntervalFromOrderStatistics) {
  // n = 7: [x_(1), x_(7)] covers 1 - 2/128; [x_(2), x_(6)] 1 - 2 * 8/128.
  const MedianInterval a = median_interval(7, 0.95);
  EXPECT_EQ(a.j, 1u);
  EXPECT_NEAR(a.coverage, 1 - 2.0 / 128, 1e-12);
  const MedianInterval b = median_interval(7, 0.8);
  EXPECT_EQ(b.j, 2u);
  EXPECT_NEAR(b.coverage, 1 - 16.0 / 128, 1e-12);
  EXPECT_EQ(median_interval(5, 0.95).j, 0u);  // 1 - 2/32 = 0.9375 < 0.95
  EXPECT_EQ(median_interval(6, 0.95).j, 1u);  // 1 - 2/64
  EXPECT_EQ(median_interval(1, 0.5).j, 0u);
}

LossConfig simple_gilbert() {
  return LossConfig{LossConfig::Kind::kGilbertElliott, 0.0, 0.01, 0.25, 0.0, 1.0};
}

TEST(LossTheory, ClosedForms) {
  const LossConfig g = simple_gilbert();
  const double pi_bad = 0.01 / 0.26, lambda = 0.74;
  EXPECT_DOUBLE_EQ(g.loss_variance_per_frame(), pi_bad * (1 - pi_bad) * (1 + lambda) / (1 - lambda));
  EXPECT_DOUBLE_EQ(g.mean_loss_run(), 4.0);
  EXPECT_DOUBLE_EQ(g.loss_run_sd(), std::sqrt(0.75) / 0.25);
  const LossConfig b{LossConfig::Kind::kBernoulli, 0.2};
  EXPECT_DOUBLE_EQ(b.loss_variance_per_frame(), 0.2 * 0.8);
  EXPECT_DOUBLE_EQ(b.mean_loss_run(), 1.25);
  EXPECT_DOUBLE_EQ(b.loss_run_sd(), std::sqrt(0.2) / 0.8);
  LossConfig four = g;
  four.loss_good = 0.001;
  four.loss_bad = 0.5;
  EXPECT_TRUE(std::isnan(four.mean_loss_run()));
  const double q = four.stationary_loss();
  EXPECT_DOUBLE_EQ(four.loss_variance_per_frame(), q * (1 - q) + 2 * 0.499 * 0.499 * pi_bad * (1 - pi_bad) * lambda / (1 - lambda));
  EXPECT_DOUBLE_EQ(LossConfig{}.loss_variance_per_frame(), 0.0);
}

// The formulas against the model: 400 independent streams of 20000 frames each. The sample
// variance of 400 loss fractions has a relative standard error of sqrt(2/399) = 7 %; the
// bound is 4 of those. Run lengths pooled over all streams (~30000 runs): sd within 4 %.
TEST(LossTheory, MatchesTheModelOverManySeeds) {
  for (const LossConfig& l : {simple_gilbert(), LossConfig{LossConfig::Kind::kGilbertElliott, 0.0, 0.02, 0.1, 0.001, 0.5},
                              LossConfig{LossConfig::Kind::kBernoulli, 0.05}}) {
    constexpr int kSeeds = 400, kFrames = 20000;
    std::vector<double> frac;
    std::vector<double> runs;
    for (int s = 0; s < kSeeds; ++s) {
      LinkConfig c;
      c.loss = l;
      LinkModel m(c, RandomStream(1000 + static_cast<uint64_t>(s), 3));
      // Start the chain in its stationary distribution: 2000 frames of burn-in, not counted.
      for (int i = 0; i < 2000; ++i) m.offer(Nanos{i}, 100);
      const uint64_t lost0 = m.stats().drops[static_cast<int>(Fate::kDropLoss)];
      uint64_t run = 0;
      for (int i = 0; i < kFrames; ++i) {
        const bool x = m.offer(Nanos{2000 + i}, 100).fate == Fate::kDropLoss;
        if (x) {
          ++run;
        } else if (run) {
          runs.push_back(static_cast<double>(run));
          run = 0;
        }
      }
      frac.push_back(static_cast<double>(m.stats().drops[static_cast<int>(Fate::kDropLoss)] - lost0) / kFrames);
    }
    double mean = 0, var = 0;
    for (double f : frac) mean += f;
    mean /= kSeeds;
    for (double f : frac) var += (f - mean) * (f - mean);
    var /= kSeeds - 1;
    const double expect = l.loss_variance_per_frame() / kFrames;
    EXPECT_NEAR(var / expect, 1.0, 4 * std::sqrt(2.0 / (kSeeds - 1))) << "variance " << var << " theory " << expect;
    if (std::isfinite(l.mean_loss_run())) {
      double rm = 0, rv = 0;
      for (double r : runs) rm += r;
      rm /= static_cast<double>(runs.size());
      for (double r : runs) rv += (r - rm) * (r - rm);
      rv /= static_cast<double>(runs.size() - 1);
      EXPECT_NEAR(rm, l.mean_loss_run(), 4 * l.loss_run_sd() / std::sqrt(static_cast<double>(runs.size())));
      EXPECT_NEAR(std::sqrt(rv) / l.loss_run_sd(), 1.0, 0.04) << runs.size() << " runs";
    }
  }
}

TEST(LossCheck, BoundsFromTheSampleSizeExactly) {
  const LossConfig g = simple_gilbert();
  const double q = 0.01 / 0.26, v = g.loss_variance_per_frame(), sd = std::sqrt(0.75) / 0.25;
  // The MTU 9000 run of the last session: mean run 3.55 over ~330 runs.
  const uint64_t runs = 330, lost = 1172, offered = 30000;  // 1172 / 330 = 3.5515
  const LossProcessCheck c = check_loss_process(g, offered, lost, runs);
  EXPECT_DOUBLE_EQ(c.loss_rate, 1172.0 / 30000);
  EXPECT_DOUBLE_EQ(c.theory_loss_rate, q);
  EXPECT_DOUBLE_EQ(c.loss_rate_se, std::sqrt(v / 30000));
  EXPECT_DOUBLE_EQ(c.loss_rate_bound, 3 * std::sqrt(v / 30000));
  EXPECT_TRUE(c.loss_rate_agrees);                            // |0.03907 - 0.03846| < 0.0086
  EXPECT_FALSE(c.loss_rate_resolves);                         // 0.0086 > 10 % of 0.0385
  EXPECT_TRUE(c.run_checkable);
  EXPECT_DOUBLE_EQ(c.mean_run, 1172.0 / 330);
  EXPECT_DOUBLE_EQ(c.mean_run_se, sd / std::sqrt(330.0));     // 0.1907
  EXPECT_TRUE(c.mean_run_agrees);                             // 2.35 se: inside 3 se
  EXPECT_FALSE(c.mean_run_resolves);                          // bound 0.572 > 0.4: too few runs to see 10 %
  // With 1472-byte datagrams at 0.5 Gbit/s for 5 s: ~203000 frames, ~1950 runs.
  const LossProcessCheck d = check_loss_process(g, 203000, 7800, 1950);
  EXPECT_TRUE(d.loss_rate_agrees);
  EXPECT_TRUE(d.loss_rate_resolves);                          // 3 se = 0.0033 <= 0.00385
  EXPECT_TRUE(d.mean_run_agrees);                             // 4.0 exactly
  EXPECT_TRUE(d.mean_run_resolves);                           // 3 se = 0.235 <= 0.4
  // Exactly at the bound passes, just beyond fails.
  const double se = sd / std::sqrt(1600.0);
  const uint64_t at = static_cast<uint64_t>(std::floor((4.0 - 3 * se) * 1600));  // mean run just inside
  EXPECT_TRUE(check_loss_process(g, 1000000, at + 1, 1600).mean_run_agrees);
  EXPECT_FALSE(check_loss_process(g, 1000000, at - 1, 1600).mean_run_agrees);
  // A model without a closed-form run length is not checked on runs.
  LossConfig four = g;
  four.loss_good = 0.001;
  EXPECT_FALSE(check_loss_process(four, 1000, 10, 5).run_checkable);
  EXPECT_THROW(check_loss_process(g, 10, 11, 1), std::invalid_argument);
  EXPECT_THROW(check_loss_process(g, 10, 2, 3), std::invalid_argument);
}


TEST(PairedRatio, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({3.0}), 3.0);
  EXPECT_EQ(median({5.0, 1.0, 4.0}), 4.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({2.0, 2.0, 7.0, 7.0, 2.0}), 2.0);
  EXPECT_THROW(median({}), std::invalid_argument);
}

TEST(PairedRatio, PairsCancelADriftThatTheMeansKeep) {
  // A fidelity run (Mbit/s): io-forward 1844 then 1524 (the machine slowed between the pairs),
  // delay-only 1542 and 1538 right after each.
  const PairedRatio r = paired_ratio({1844, 1524}, {1542, 1538});
  ASSERT_EQ(r.pair_ratios.size(), 2u);
  EXPECT_DOUBLE_EQ(r.pair_ratios[0], 1542.0 / 1844);
  EXPECT_DOUBLE_EQ(r.pair_ratios[1], 1538.0 / 1524);
  EXPECT_DOUBLE_EQ(r.median_pair_ratio, (1542.0 / 1844 + 1538.0 / 1524) / 2);
  EXPECT_DOUBLE_EQ(r.min_pair_ratio, 1542.0 / 1844);
  EXPECT_DOUBLE_EQ(r.max_pair_ratio, 1538.0 / 1524);
  EXPECT_DOUBLE_EQ(r.ratio_of_means, 3080.0 / 3368);
  EXPECT_DOUBLE_EQ(r.ratio_of_medians, 1540.0 / 1684);
  // Three pairs, B = 0.95 A in each while A drifts by 2x, and one pair spoiled by a stall of B:
  // the median pair ratio is exactly 0.95, the ratio of means is pulled by the slow pair.
  const PairedRatio s = paired_ratio({1000, 2000, 1500}, {950, 1900, 300});
  EXPECT_DOUBLE_EQ(s.median_pair_ratio, 0.95);
  EXPECT_DOUBLE_EQ(s.min_pair_ratio, 0.2);
  EXPECT_DOUBLE_EQ(s.ratio_of_means, 3150.0 / 4500);
  EXPECT_DOUBLE_EQ(s.ratio_of_medians, 950.0 / 1500);
}

TEST(PairedRatio, GeometricMeanAndTIntervalOfTheLogRatios) {
  // Ratios 0.8 and 1.25: ln = -ln 1.25, +ln 1.25, mean 0, sd = sqrt(2) ln 1.25; the 95 % half
  // width is t_{0.975, 1} sd / sqrt(2) = tan(0.475 pi) ln 1.25 (df 1 is Cauchy).
  const PairedRatio r = paired_ratio({1000, 800}, {800, 1000});
  EXPECT_NEAR(r.geometric_mean, 1.0, 1e-15);
  EXPECT_NEAR(r.log_ratio_sd, std::sqrt(2.0) * std::log(1.25), 1e-15);
  const double t = std::tan(0.475 * std::numbers::pi);
  EXPECT_NEAR(r.ci_low, std::pow(1.25, -t), 1e-9 * std::pow(1.25, -t));
  EXPECT_NEAR(r.ci_high, std::pow(1.25, t), 1e-9 * std::pow(1.25, t));
  EXPECT_EQ(r.confidence, 0.95);
  // Four pairs with ratios 0.9, 1.0, 1.1, 1.2 at 90 %: the interval from the exact formula.
  const PairedRatio s = paired_ratio({10, 10, 10, 10}, {9, 10, 11, 12}, 0.9);
  const double m = (std::log(0.9) + std::log(1.1) + std::log(1.2)) / 4;
  double ss = 0;
  for (double x : {0.9, 1.0, 1.1, 1.2}) ss += (std::log(x) - m) * (std::log(x) - m);
  const double sd = std::sqrt(ss / 3), h = 2.353363434801823 * sd / 2;  // t_{0.95, 3}
  EXPECT_NEAR(s.geometric_mean, std::exp(m), 1e-15);
  EXPECT_NEAR(s.log_ratio_sd, sd, 1e-15);
  EXPECT_NEAR(s.ci_low, std::exp(m - h), 1e-9);
  EXPECT_NEAR(s.ci_high, std::exp(m + h), 1e-9);
  // One pair: no interval (both ends the ratio); a zero goodput: no log, all three 0.
  const PairedRatio one = paired_ratio({4}, {3});
  EXPECT_DOUBLE_EQ(one.geometric_mean, 0.75);
  EXPECT_DOUBLE_EQ(one.ci_low, 0.75);
  EXPECT_DOUBLE_EQ(one.ci_high, 0.75);
  const PairedRatio zero = paired_ratio({4, 4}, {0, 4});
  EXPECT_EQ(zero.geometric_mean, 0.0);
  EXPECT_EQ(zero.ci_high, 0.0);
  EXPECT_THROW(paired_ratio({1}, {1}, 1.0), std::invalid_argument);
}

TEST(PairedRatio, RejectsUnpairedOrEmptyOrNonPositiveReferences) {
  EXPECT_THROW(paired_ratio({}, {}), std::invalid_argument);
  EXPECT_THROW(paired_ratio({1, 2}, {1}), std::invalid_argument);
  EXPECT_THROW(paired_ratio({1, 0}, {1, 1}), std::invalid_argument);
  EXPECT_NO_THROW(paired_ratio({1, 2}, {0, 0}));
}

TEST(PingRtt, ParsesEveryReplyAndSkipsTheRest) {
  const std::string out =
      "PING 10.77.1.1 (10.77.1.1) 56(84) bytes of data.\n"
      "64 bytes from 10.77.1.1: icmp_seq=1 ttl=64 time=75.2 ms\n"
      "64 bytes from 10.77.1.1: icmp_seq=2 ttl=64 time=30.1 ms\n"
      "From 10.77.0.1 icmp_seq=3 Destination Host Unreachable\n"
      "64 bytes from 10.77.1.1: icmp_seq=4 ttl=64 time=30.3 ms\n"
      "64 bytes from 10.77.1.1: icmp_seq=5 ttl=64 time=0.087 ms\n"
      "64 bytes from 10.77.1.1: icmp_seq=6 ttl=64 time=1.5 s\n"
      "64 bytes from 10.77.1.1: icmp_seq=7 ttl=64 time=250 us\n"
      "\n--- 10.77.1.1 ping statistics ---\n"
      "7 packets transmitted, 6 received, +1 errors, 14.2857% packet loss, time 60ms\n"
      "rtt min/avg/max/mdev = 0.087/31.203/75.200/28.512 ms\n";
  const std::vector<double> t = parse_ping_times_ms(out);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0], 75.2);
  EXPECT_EQ(t[1], 30.1);
  EXPECT_EQ(t[2], 30.3);
  EXPECT_EQ(t[3], 0.087);
  EXPECT_EQ(t[4], 1500.0);
  EXPECT_EQ(t[5], 0.25);
  EXPECT_TRUE(parse_ping_times_ms("connect: Network is unreachable\n").empty());
}

TEST(PingRtt, MedianIgnoresTheSlowFirstEchoThatMovesTheMean) {
  // The case: one echo paid ARP (75 ms) among 30 ms ones: the mean is off by 11 ms.
  const RttSummary s = summarize_rtts({75.0, 30.2, 30.1, 30.3});
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.min_ms, 30.1);
  EXPECT_DOUBLE_EQ(s.median_ms, (30.2 + 30.3) / 2);
  EXPECT_DOUBLE_EQ(s.mean_ms, (75.0 + 30.2 + 30.1 + 30.3) / 4);
  EXPECT_EQ(s.max_ms, 75.0);
  const RttSummary odd = summarize_rtts({3.0, 1.0, 2.0});
  EXPECT_EQ(odd.median_ms, 2.0);
  EXPECT_THROW(summarize_rtts({}), std::invalid_argument);
}

TEST(Stalls, CountsIterationsStrictlyOverTheThresholdAndTheShare) {
  StallCounter c;
  for (uint64_t ns : {999999ull, 1000000ull, 1000001ull, 5000000ull, 20000ull}) c.record(ns);
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.total_ns, 6000001u);
  EXPECT_EQ(c.max_ns, 5000000u);
  StallCounter d;
  d.record(41600000);
  d.record(300);
  c.merge(d);
  EXPECT_EQ(c.count, 3u);
  EXPECT_EQ(c.total_ns, 47600001u);
  EXPECT_EQ(c.max_ns, 41600000u);
  // 1 % of the run: 10 ms per second is still ok, a nanosecond more is not.
  EXPECT_DOUBLE_EQ(stall_share(10000000, 1000000000), 0.01);
  EXPECT_TRUE(stalls_ok(10000000, 1000000000));
  EXPECT_FALSE(stalls_ok(10000001, 1000000000));
  EXPECT_EQ(stall_share(5, 0), 0.0);
  EXPECT_TRUE(stalls_ok(47600001, 6000000000));   // 0.79 %
  EXPECT_FALSE(stalls_ok(47600001, 4000000000));  // 1.19 %
  EXPECT_TRUE(stalls_ok(47600001, 4000000000, 0.02));
}

TEST(VerdictTally, CountsPassesPerNameOverEveryRun) {
  const std::vector<std::vector<std::pair<std::string, bool>>> runs{
      {{"rtt", true}, {"tcp", false}},
      {{"rtt", true}, {"tcp", true}, {"ge", true}},
      {},  // a run that failed before any verdict
      {{"tcp", true}, {"rtt", false}}};
  const std::vector<VerdictCount> t = tally_verdicts(runs);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "rtt");
  EXPECT_EQ(t[0].passed, 2);
  EXPECT_EQ(t[0].runs, 4);
  EXPECT_EQ(t[1].name, "tcp");
  EXPECT_EQ(t[1].passed, 2);
  EXPECT_EQ(t[2].name, "ge");
  EXPECT_EQ(t[2].passed, 1);
  EXPECT_EQ(t[2].runs, 4);
  EXPECT_TRUE(tally_verdicts({}).empty());
}

}  // namespace
}  // namespace geotb::emu
