// The link model under exact arithmetic: rates and sizes are chosen so every time is a whole
// number of nanoseconds (1 Gbit/s: 1 byte = 8 ns), and statistical properties are checked with
// fixed seeds against bounds of about 5 standard deviations.
#include "emulator/link/link_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/emulator/link_changes.h"

namespace geotb::emu {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr double kGbps = 1e9;
constexpr Nanos kDelay = milliseconds(15);

LinkConfig gig() {
  LinkConfig c;
  c.rate_bps = kGbps;
  c.delay = kDelay;
  return c;
}

// 1462 payload + 38 overhead = 1500 wire bytes = 12000 ns at 1 Gbit/s.
constexpr uint32_t kFrame = 1462;
constexpr Nanos kTx{12000};

TEST(LinkModel, BackToBackDepartAndReleaseExact) {
  LinkModel m(gig(), RandomStream(1, 0));
  for (int i = 1; i <= 3; ++i) {
    const Verdict v = m.offer(Nanos{0}, kFrame);
    ASSERT_EQ(v.fate, Fate::kDelivered);
    EXPECT_EQ(v.depart, i * kTx);
    EXPECT_EQ(v.release, i * kTx + kDelay);
  }
  // Idle serializer: starts at `now`.
  const Verdict v = m.offer(microseconds(100), kFrame);
  EXPECT_EQ(v.depart, microseconds(100) + kTx);
  EXPECT_EQ(v.release, microseconds(100) + kTx + kDelay);
  // Busy serializer: starts when the previous frame is done.
  const Verdict w = m.offer(microseconds(100) + Nanos{1}, 62);  // 100 wire bytes = 800 ns
  EXPECT_EQ(w.depart, microseconds(100) + kTx + Nanos{800});
}

TEST(LinkModel, PerFrameOverheadCounted) {
  LinkConfig c = gig();
  c.overhead_bytes = 0;
  LinkModel bare(c, RandomStream(1, 0));
  EXPECT_EQ(bare.offer(Nanos{0}, 1500).depart, Nanos{12000});
  LinkModel eth(gig(), RandomStream(1, 0));
  EXPECT_EQ(eth.offer(Nanos{0}, 1500).depart, Nanos{(1500 + 38) * 8});
  EXPECT_EQ(eth.offer(Nanos{0}, 64).depart, Nanos{(1500 + 38) * 8 + (64 + 38) * 8});
}

TEST(LinkModel, UnlimitedRateAddsOnlyDelay) {
  LinkConfig c = gig();
  c.rate_bps = 0;
  LinkModel m(c, RandomStream(1, 0));
  const Verdict v = m.offer(Nanos{777}, 9000);
  EXPECT_EQ(v.depart, Nanos{777});
  EXPECT_EQ(v.release, Nanos{777} + kDelay);
}

TEST(LinkModel, FractionalNanosecondFramesDoNotAccumulateRoundingError) {
  // 10 Gbit/s, 64 + 38 = 102 wire bytes = 81.6 ns per frame: 10^6 frames take exactly 81.6 ms.
  LinkConfig c;
  c.rate_bps = 10e9;
  LinkModel m(c, RandomStream(1, 0));
  Verdict v;
  for (int i = 0; i < 1000000; ++i) v = m.offer(Nanos{0}, 64);
  EXPECT_EQ(v.depart, Nanos{81600000});
  // Each frame's reported depart is the exact instant rounded to the nanosecond.
  LinkModel n(c, RandomStream(1, 0));
  EXPECT_EQ(n.offer(Nanos{0}, 64).depart, Nanos{82});   // 81.6
  EXPECT_EQ(n.offer(Nanos{0}, 64).depart, Nanos{163});  // 163.2
  EXPECT_EQ(n.offer(Nanos{0}, 64).depart, Nanos{245});  // 244.8
  EXPECT_EQ(n.busy_until(), Nanos{245});
}

TEST(LinkModel, QueueOverflowByPackets) {
  LinkConfig c = gig();
  c.queue_packets = 2;  // frames not yet fully serialized, the one in service included
  LinkModel m(c, RandomStream(1, 0));
  EXPECT_EQ(m.offer(Nanos{0}, kFrame).fate, Fate::kDelivered);
  EXPECT_EQ(m.offer(Nanos{0}, kFrame).fate, Fate::kDelivered);
  EXPECT_EQ(m.offer(Nanos{0}, kFrame).fate, Fate::kDropQueuePackets);
  EXPECT_EQ(m.queued_packets(Nanos{0}), 2u);
  // One nanosecond before the first frame is out the queue is still full; at its departure it is not.
  EXPECT_EQ(m.offer(kTx - Nanos{1}, kFrame).fate, Fate::kDropQueuePackets);
  const Verdict v = m.offer(kTx, kFrame);
  EXPECT_EQ(v.fate, Fate::kDelivered);
  EXPECT_EQ(v.depart, 3 * kTx);  // dropped frames did not occupy the serializer
  EXPECT_EQ(m.stats().drops[static_cast<int>(Fate::kDropQueuePackets)], 2u);
  EXPECT_EQ(m.stats().drops[static_cast<int>(Fate::kDropQueueBytes)], 0u);
  EXPECT_EQ(m.stats().offered, 5u);
  EXPECT_EQ(m.stats().delivered, 3u);
}

TEST(LinkModel, QueueOverflowByBytes) {
  LinkConfig c = gig();
  c.queue_bytes = 3000;  // payload bytes; two 1462-byte frames fit (2924), a third does not
  LinkModel m(c, RandomStream(1, 0));
  EXPECT_EQ(m.offer(Nanos{0}, kFrame).fate, Fate::kDelivered);
  EXPECT_EQ(m.offer(Nanos{0}, kFrame).fate, Fate::kDelivered);
  EXPECT_EQ(m.offer(Nanos{0}, kFrame).fate, Fate::kDropQueueBytes);
  EXPECT_EQ(m.offer(Nanos{0}, 76).fate, Fate::kDelivered);  // 3000 exactly fits
  EXPECT_EQ(m.offer(Nanos{0}, 1).fate, Fate::kDropQueueBytes);
  EXPECT_EQ(m.queued_bytes(Nanos{0}), 3000u);
  EXPECT_EQ(m.queued_bytes(kTx), 3000u - kFrame);
  EXPECT_EQ(m.stats().drops[static_cast<int>(Fate::kDropQueueBytes)], 2u);
  EXPECT_EQ(m.stats().offered, m.stats().delivered + m.stats().total_drops());
}

TEST(LinkModel, QueueGrowsPastReserveAndKeepsFifoOrder) {
  LinkModel m(gig(), RandomStream(1, 0));
  m.reserve(4);
  for (int i = 1; i <= 1000; ++i) EXPECT_EQ(m.offer(Nanos{0}, kFrame).depart, i * kTx);
  EXPECT_EQ(m.queued_packets(Nanos{0}), 1000u);
  EXPECT_EQ(m.queued_packets(500 * kTx), 500u);
  EXPECT_EQ(m.queued_bytes(500 * kTx), 500u * kFrame);
  EXPECT_EQ(m.queued_packets(1000 * kTx), 0u);
}

uint64_t run_bernoulli(double p, int n, uint64_t seed) {
  LinkConfig c;
  c.loss.kind = LossConfig::Kind::kBernoulli;
  c.loss.p = p;
  LinkModel m(c, RandomStream(seed, 3));
  for (int i = 0; i < n; ++i) m.offer(Nanos{i}, 100);
  EXPECT_EQ(m.stats().offered, m.stats().delivered + m.stats().total_drops());
  return m.stats().drops[static_cast<int>(Fate::kDropLoss)];
}

TEST(LinkModel, BernoulliLossWithinBinomialBounds) {
  const int n = 1000000;
  for (double p : {0.5, 0.01, 1e-4}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
      const double lost = static_cast<double>(run_bernoulli(p, n, seed));
      EXPECT_NEAR(lost, mean, 5 * sd) << "p=" << p << " seed=" << seed;
    }
  }
}

TEST(LinkModel, BernoulliExtremes) {
  EXPECT_EQ(run_bernoulli(0.0, 1000000, 7), 0u);
  EXPECT_EQ(run_bernoulli(1e-12, 1000000, 7), 0u);  // P(any loss) = 1e-6: no floor raising it
  EXPECT_EQ(run_bernoulli(1.0, 1000, 7), 1000u);
}

TEST(RandomStream, ResolvesProbabilitiesFarBelow1e12) {
  // The uniform has 53 bits: values below 1e-12 occur (at rate 1e-12 per draw) and the smallest
  // step is 2^-53, so p = 1e-12 is compared against a grid ~1e4 times finer than p itself.
  EXPECT_LT(0x1.0p-53, 1e-12 / 1000);
  RandomStream r(1, 2);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

struct GeResult {
  double loss_rate;
  double mean_burst;  // mean run length of consecutive lost frames
  uint64_t bursts;
};

GeResult run_ge(const LossConfig& l, int n, uint64_t seed) {
  LinkConfig c;
  c.loss = l;
  LinkModel m(c, RandomStream(seed, 5));
  uint64_t lost = 0, bursts = 0;
  bool prev = false;
  for (int i = 0; i < n; ++i) {
    const bool x = m.offer(Nanos{i}, 100).fate == Fate::kDropLoss;
    lost += x;
    bursts += x && !prev;
    prev = x;
  }
  return {static_cast<double>(lost) / n, bursts ? static_cast<double>(lost) / static_cast<double>(bursts) : 0.0, bursts};
}

TEST(LinkModel, GilbertStationaryLossAndBurstLength) {
  LossConfig l;
  l.kind = LossConfig::Kind::kGilbertElliott;
  l.p_good_to_bad = 0.01;
  l.p_bad_to_good = 0.25;  // mean sojourn in bad = 4 frames
  l.loss_good = 0.0;
  l.loss_bad = 1.0;       // simple Gilbert: burst length = sojourn in bad
  EXPECT_NEAR(l.stationary_loss(), 0.01 / 0.26, 1e-15);
  for (uint64_t seed : {11u, 12u}) {
    const GeResult r = run_ge(l, 2000000, seed);
    // ~19000 bursts of geometric length (sd 3.5): loss rate sd ~1 %, mean-burst sd ~0.025.
    EXPECT_NEAR(r.loss_rate, l.stationary_loss(), 0.05 * l.stationary_loss()) << seed;
    EXPECT_NEAR(r.mean_burst, 4.0, 0.15) << seed;
  }
}

TEST(LinkModel, GilbertElliottFourParameterStationaryLoss) {
  LossConfig l;
  l.kind = LossConfig::Kind::kGilbertElliott;
  l.p_good_to_bad = 0.02;
  l.p_bad_to_good = 0.1;
  l.loss_good = 0.001;
  l.loss_bad = 0.5;
  const double pi_bad = 0.02 / 0.12;
  EXPECT_NEAR(l.stationary_loss(), pi_bad * 0.5 + (1 - pi_bad) * 0.001, 1e-15);
  const GeResult r = run_ge(l, 2000000, 21);
  EXPECT_NEAR(r.loss_rate, l.stationary_loss(), 0.05 * l.stationary_loss());
}

TEST(LinkModel, JitterWithoutReorderingKeepsOrder) {
  for (auto kind : {JitterConfig::Kind::kUniform, JitterConfig::Kind::kNormal}) {
    LinkConfig c = gig();
    c.jitter = {kind, microseconds(500)};
    LinkModel m(c, RandomStream(9, 1));
    Nanos prev{0};
    int moved = 0;
    for (int i = 0; i < 100000; ++i) {
      const Verdict v = m.offer(Nanos{int64_t{i} * 20000}, kFrame);
      ASSERT_GE(v.release, prev) << i;
      ASSERT_GE(v.release, v.depart);
      moved += v.release != v.depart + kDelay;
      prev = v.release;
    }
    EXPECT_GT(moved, 90000);  // jitter is actually applied
  }
}

TEST(LinkModel, JitterWithReorderingStaysInBoundsAndReorders) {
  LinkConfig c = gig();
  c.jitter = {JitterConfig::Kind::kUniform, microseconds(500)};
  c.reorder = true;
  LinkModel m(c, RandomStream(9, 1));
  Nanos prev{0};
  int overtaken = 0;
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const Verdict v = m.offer(Nanos{int64_t{i} * 20000}, kFrame);
    const Nanos off = v.release - v.depart - kDelay;
    ASSERT_GE(off, -microseconds(500));
    ASSERT_LE(off, microseconds(500));
    sum += static_cast<double>(off.count());
    overtaken += v.release < prev;
    prev = v.release;
  }
  EXPECT_GT(overtaken, 1000);
  // Uniform on [-500, 500] us: sd 289 us, sd of the mean 0.91 us.
  EXPECT_NEAR(sum / n, 0.0, 5 * 913.0);
}

TEST(LinkModel, NormalJitterStandardDeviation) {
  LinkConfig c = gig();
  c.jitter = {JitterConfig::Kind::kNormal, microseconds(100)};
  c.reorder = true;
  LinkModel m(c, RandomStream(4, 4));
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const Verdict v = m.offer(Nanos{int64_t{i} * 20000}, kFrame);
    const double x = static_cast<double>((v.release - v.depart - kDelay).count());
    s += x;
    s2 += x * x;
  }
  const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 5 * 100000.0 / std::sqrt(n));
  EXPECT_NEAR(sd, 100000.0, 0.02 * 100000.0);
}

TEST(LinkModel, ScheduledRateAndDelayChangeExactlyAtTheInstant) {
  LinkModel m(gig(), RandomStream(1, 0));
  const Nanos t = milliseconds(40);
  LinkChange ch;
  ch.at = t;
  ch.rate_bps = 2 * kGbps;
  ch.delay = milliseconds(20);
  m.schedule(ch);
  EXPECT_EQ(m.next_change(), t);
  const Verdict before = m.offer(t - Nanos{1}, kFrame);
  EXPECT_EQ(before.depart, t - Nanos{1} + kTx);
  EXPECT_EQ(before.release, before.depart + kDelay);
  EXPECT_EQ(m.stats().changes_applied, 0u);
  const Verdict at = m.offer(before.depart, kFrame);  // serializer idle again at this instant
  EXPECT_EQ(at.depart, before.depart + kTx / 2);
  EXPECT_EQ(at.release, at.depart + milliseconds(20));
  EXPECT_EQ(m.stats().changes_applied, 1u);
  EXPECT_FALSE(m.next_change().has_value());
}

TEST(LinkModel, DelayDecreaseDoesNotLetFramesOvertakeWithoutReordering) {
  LinkModel m(gig(), RandomStream(1, 0));
  LinkChange ch;
  ch.at = milliseconds(1);
  ch.delay = milliseconds(5);
  m.schedule(ch);
  const Verdict a = m.offer(Nanos{0}, kFrame);
  const Verdict b = m.offer(milliseconds(1), kFrame);
  EXPECT_EQ(a.release, kTx + kDelay);
  EXPECT_EQ(b.release, a.release);  // would be 1 ms + kTx + 5 ms: held behind a
  const Verdict c = m.offer(milliseconds(20), kFrame);
  EXPECT_EQ(c.release, milliseconds(20) + kTx + milliseconds(5));
}

TEST(LinkModel, ChangesApplyInTimeOrderTiesInInsertionOrder) {
  LinkModel m(gig(), RandomStream(1, 0));
  LinkChange late, a, b;
  late.at = milliseconds(20);
  late.delay = milliseconds(3);
  a.at = milliseconds(10);
  a.delay = milliseconds(1);
  b.at = milliseconds(10);
  b.delay = milliseconds(2);
  m.schedule(late);
  m.schedule(a);
  m.schedule(b);
  EXPECT_EQ(m.next_change(), milliseconds(10));
  m.advance(milliseconds(10));
  EXPECT_EQ(m.config().delay, milliseconds(2));
  EXPECT_EQ(m.next_change(), milliseconds(20));
  m.advance(milliseconds(20) - Nanos{1});
  EXPECT_EQ(m.config().delay, milliseconds(2));
  m.advance(milliseconds(20));
  EXPECT_EQ(m.config().delay, milliseconds(3));
}

TEST(LinkModel, OutageDropsWithCauseExactlyDuringTheWindow) {
  LinkModel m(gig(), RandomStream(1, 0));
  m.schedule(up_at(milliseconds(30)));
  m.schedule(down_at(milliseconds(10)));
  EXPECT_EQ(m.offer(milliseconds(10) - Nanos{1}, kFrame).fate, Fate::kDelivered);
  EXPECT_EQ(m.offer(milliseconds(10), kFrame).fate, Fate::kDropLinkDown);
  EXPECT_EQ(m.offer(milliseconds(30) - Nanos{1}, kFrame).fate, Fate::kDropLinkDown);
  const Verdict v = m.offer(milliseconds(30), kFrame);
  EXPECT_EQ(v.fate, Fate::kDelivered);
  EXPECT_EQ(v.depart, milliseconds(30) + kTx);
  EXPECT_EQ(m.stats().drops[static_cast<int>(Fate::kDropLinkDown)], 2u);
  EXPECT_EQ(m.stats().delivered, 2u);
  EXPECT_EQ(m.stats().changes_applied, 2u);
}

// A cut at 100 us on a 1 Gbit/s link with 50 us of delay: 20 frames offered at 0 depart every
// 12 us (release 12k + 50 us). Frames 1-4 are released by 98 us: delivered. Frames 5-20 (release
// >= 110 us) are on the fibre or behind the serializer at the cut: lost. The serializer is idle
// from the cut on, so the first frame after the link comes back does not wait behind them.
TEST(LinkModel, CutLosesWhatIsInFlightAndEmptiesTheSerializer) {
  LinkConfig c = gig();
  c.delay = microseconds(50);
  LinkModel m(c, RandomStream(1, 0));
  m.schedule(down_at(microseconds(100)));
  m.schedule(up_at(microseconds(200)));
  std::vector<Verdict> v;
  for (int i = 0; i < 20; ++i) v.push_back(m.offer(Nanos{0}, kFrame));
  EXPECT_EQ(v[3].release, microseconds(98));
  EXPECT_EQ(v[4].release, microseconds(110));
  EXPECT_EQ(m.queued_packets(microseconds(99)), 12u);  // departs 108 .. 240 us
  EXPECT_FALSE(m.take_cut().has_value());               // not applied yet
  m.advance(microseconds(150));                        // applied late: the cut is still at 100 us
  const std::optional<Nanos> cut = m.take_cut();
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(*cut, microseconds(100));
  EXPECT_FALSE(m.take_cut().has_value());
  int lost = 0;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(LinkModel::lost_to_cut(v[static_cast<size_t>(i)], *cut), i >= 4) << i;
    lost += LinkModel::lost_to_cut(v[static_cast<size_t>(i)], *cut);
  }
  EXPECT_EQ(lost, 16);
  EXPECT_EQ(m.queued_packets(microseconds(150)), 0u);
  EXPECT_EQ(m.queued_bytes(microseconds(150)), 0u);
  EXPECT_EQ(m.busy_until(), microseconds(100));
  EXPECT_EQ(m.offer(microseconds(199), kFrame).fate, Fate::kDropLinkDown);
  const Verdict after = m.offer(microseconds(200), kFrame);  // up again: idle serializer
  EXPECT_EQ(after.fate, Fate::kDelivered);
  EXPECT_EQ(after.depart, microseconds(212));
  EXPECT_EQ(after.release, microseconds(262));
  m.count_lost_in_flight(16, 16 * kFrame);
  const LinkStats& st = m.stats();
  EXPECT_EQ(st.offered, 22u);
  EXPECT_EQ(st.delivered, 5u);  // 4 before the cut + 1 after
  EXPECT_EQ(st.delivered_bytes, 5u * kFrame);
  EXPECT_EQ(st.drops[static_cast<int>(Fate::kDropLinkDown)], 17u);  // 16 cut in flight + 1 offered while down
  EXPECT_EQ(st.lost_in_flight, 16u);
  EXPECT_EQ(st.offered, st.delivered + st.total_drops());
}

// The no-reordering clamp forgets the lost frames: after the outage, a frame's release is its own
// depart + delay, not the release of a frame that never arrived.
TEST(LinkModel, CutResetsTheReleaseClampAndSeveralCutsGiveTheEarliest) {
  LinkConfig c = gig();
  c.delay = milliseconds(10);
  LinkModel m(c, RandomStream(1, 0));
  for (const auto& [at, up] : {std::pair{microseconds(100), false}, std::pair{microseconds(150), true},
                               std::pair{microseconds(170), false}, std::pair{microseconds(300), true}}) {
    LinkChange ch;
    ch.at = at;
    ch.up = up;
    m.schedule(ch);
  }
  const Verdict before = m.offer(Nanos{0}, kFrame);
  EXPECT_EQ(before.release, milliseconds(10) + kTx);
  m.advance(microseconds(400));  // two outages since the last look: the earliest instant
  EXPECT_EQ(m.take_cut(), microseconds(100));
  EXPECT_FALSE(m.take_cut().has_value());
  EXPECT_TRUE(LinkModel::lost_to_cut(before, microseconds(100)));
  // Idle link well after the outage; with delay lowered to 1 ms the release must not be clamped
  // to the lost frame's 10.012 ms.
  LinkChange lower;
  lower.at = microseconds(500);
  lower.delay = milliseconds(1);
  m.schedule(lower);
  const Verdict v = m.offer(microseconds(600), kFrame);
  EXPECT_EQ(v.release, microseconds(600) + kTx + milliseconds(1));
  // Down on a link already down is not a new cut.
  m.schedule(down_at(milliseconds(2)));
  m.schedule(down_at(milliseconds(3)));
  m.advance(milliseconds(4));
  EXPECT_EQ(m.take_cut(), milliseconds(2));
  EXPECT_FALSE(m.take_cut().has_value());
}

TEST(LinkModel, ScheduledLossChange) {
  LinkModel m(gig(), RandomStream(1, 0));
  LinkChange ch;
  ch.at = milliseconds(1);
  ch.loss = LossConfig{LossConfig::Kind::kBernoulli, 1.0};
  m.schedule(ch);
  EXPECT_EQ(m.offer(milliseconds(1) - Nanos{1}, 100).fate, Fate::kDelivered);
  const Verdict v = m.offer(milliseconds(1), 100);
  EXPECT_EQ(v.fate, Fate::kDropLoss);
  EXPECT_EQ(v.depart, milliseconds(1) - Nanos{1} + 2 * Nanos{138 * 8});  // a lost frame used the serializer
  EXPECT_EQ(m.offer(milliseconds(1), 100).depart, milliseconds(1) - Nanos{1} + 3 * Nanos{138 * 8});
}

TEST(LinkModel, TimeNeverRunsBackwards) {
  LinkModel m(gig(), RandomStream(1, 0));
  EXPECT_EQ(m.offer(milliseconds(5), kFrame).depart, milliseconds(5) + kTx);
  EXPECT_EQ(m.offer(milliseconds(1), kFrame).depart, milliseconds(5) + 2 * kTx);
}

TEST(LinkModel, DuplicateAndCorruptWithinBinomialBounds) {
  LinkConfig c;
  c.duplicate_p = 0.02;
  c.corrupt_p = 0.001;
  LinkModel m(c, RandomStream(3, 3));
  const int n = 1000000;
  for (int i = 0; i < n; ++i) m.offer(Nanos{i}, 100);
  EXPECT_NEAR(static_cast<double>(m.stats().duplicated), n * 0.02, 5 * std::sqrt(n * 0.02 * 0.98));
  EXPECT_NEAR(static_cast<double>(m.stats().corrupted), n * 0.001, 5 * std::sqrt(n * 0.001 * 0.999));
}

TEST(LinkModel, SameSeedSameRunDifferentStreamDifferentRun) {
  LinkConfig c;
  c.loss = LossConfig{LossConfig::Kind::kBernoulli, 0.3};
  LinkModel a(c, RandomStream(5, 0)), b(c, RandomStream(5, 0)), d(c, RandomStream(5, 1));
  int same = 0, diff = 0;
  for (int i = 0; i < 1000; ++i) {
    const Fate fa = a.offer(Nanos{i}, 10).fate;
    same += fa == b.offer(Nanos{i}, 10).fate;
    diff += fa != d.offer(Nanos{i}, 10).fate;
  }
  EXPECT_EQ(same, 1000);
  EXPECT_GT(diff, 100);
}

TEST(LinkModel, ValidationNamesFieldAndValue) {
  LinkConfig c;
  c.rate_bps = -1;
  EXPECT_NE(LinkModel::validate(c).find("rate_bps: -1"), std::string::npos);
  c = LinkConfig{};
  c.loss = LossConfig{LossConfig::Kind::kBernoulli, 1.5};
  EXPECT_NE(LinkModel::validate(c).find("loss.p: 1.5"), std::string::npos);
  c = LinkConfig{};
  c.delay = Nanos{-5};
  EXPECT_NE(LinkModel::validate(c).find("delay: -5"), std::string::npos);
  EXPECT_THROW(LinkModel(c, RandomStream(0, 0)), std::invalid_argument);
  c = LinkConfig{};
  c.duplicate_p = NAN;
  EXPECT_NE(LinkModel::validate(c).find("duplicate_p"), std::string::npos);
  EXPECT_EQ(LinkModel::validate(LinkConfig{}), "");
  LinkModel m(LinkConfig{}, RandomStream(0, 0));
  LinkChange ch;
  ch.rate_bps = -3;
  EXPECT_THROW(m.schedule(ch), std::invalid_argument);
}

// A bulk transfer (offer_bulk) holds the serializer: 1000 frames of 1462 bytes are 12 ms at
// 1 Gbit/s, from the busy serializer's end. A frame offered meanwhile is interleaved on its own
// lane (departs 12 us after its offer, released one delay later, not behind the bulk's release);
// a second bulk transfer queues behind the first; after it, frames use the serializer again.
TEST(LinkModel, BulkHoldsTheSerializerFramesInterleave) {
  LinkModel m(gig(), RandomStream(1, 0));
  const Verdict first = m.offer(Nanos{0}, kFrame);
  EXPECT_EQ(first.depart, kTx);
  const LinkModel::Bulk b = m.offer_bulk(Nanos{0}, 1000, 1000 * uint64_t{kFrame}, 0, milliseconds(200), 12);
  ASSERT_TRUE(b.delivered);
  EXPECT_EQ(b.begin, kTx);
  EXPECT_EQ(b.depart, 1001 * kTx);
  EXPECT_EQ(b.release, 1001 * kTx + kDelay);
  EXPECT_EQ(b.transmissions, 1000u);
  EXPECT_EQ(b.wire_bytes, 1000u * 1500);
  const Verdict ack = m.offer(milliseconds(1), 52);  // 90 wire bytes = 720 ns
  ASSERT_EQ(ack.fate, Fate::kDelivered);
  EXPECT_EQ(ack.depart, milliseconds(1) + Nanos{720});
  EXPECT_EQ(ack.release, milliseconds(1) + Nanos{720} + kDelay);
  const LinkModel::Bulk second = m.offer_bulk(milliseconds(2), 10, 10 * uint64_t{kFrame}, 0, milliseconds(200), 12);
  EXPECT_EQ(second.begin, 1001 * kTx);
  EXPECT_EQ(second.depart, 1011 * kTx);
  const Verdict after = m.offer(milliseconds(20), kFrame);
  EXPECT_EQ(after.depart, milliseconds(20) + kTx);
  EXPECT_EQ(m.stats().delivered, 1u + 1000 + 1 + 10 + 1);
}

// A window-limited sender: the bulk is serialized at max_rate_bps (half the link: 24 ms), and
// Bernoulli loss 1 % adds round(1000 * 0.01 / 0.99) = 10 expected retransmissions, serialized too.
TEST(LinkModel, BulkAtTheSendersRateWithExpectedRetransmissions) {
  LinkModel m(gig(), RandomStream(1, 0));
  EXPECT_EQ(m.offer_bulk(Nanos{0}, 1000, 1000 * uint64_t{kFrame}, 0.5e9, milliseconds(200), 12).depart, 2000 * kTx);
  LinkConfig c = gig();
  c.loss = LossConfig{LossConfig::Kind::kBernoulli, 0.01};
  LinkModel lossy(c, RandomStream(1, 0));
  const LinkModel::Bulk b = lossy.offer_bulk(Nanos{0}, 1000, 1000 * uint64_t{kFrame}, 0, milliseconds(200), 12);
  EXPECT_EQ(b.transmissions, 1010u);
  EXPECT_EQ(b.depart, 1010 * kTx);
  EXPECT_EQ(lossy.stats().drops[static_cast<int>(Fate::kDropLoss)], 10u);
}

// A chain of rounds (a group of DDP buckets): 1000 frames in 4 parts of 250 frames, 3 ms each at
// 1 Gbit/s; each part leaves one delay (15 ms) after the previous one has left, so the transfer
// departs 4 x 3 ms + 3 x 15 ms after its start. A rate cut to half at the start of the third part
// doubles the last two parts: 3 + 15 + 3 + 15 + 6 + 15 + 6 ms.
TEST(LinkModel, BulkInRoundsIdlesOneDelayBetweenParts) {
  LinkModel m(gig(), RandomStream(1, 0));
  const LinkModel::Bulk b = m.offer_bulk(Nanos{0}, 1000, 1000 * uint64_t{kFrame}, 0, milliseconds(200), 12, 4);
  ASSERT_TRUE(b.delivered);
  EXPECT_EQ(b.begin, Nanos{0});
  EXPECT_EQ(b.depart, milliseconds(12) + 3 * kDelay);
  EXPECT_EQ(b.release, milliseconds(12) + 4 * kDelay);
  EXPECT_EQ(b.transmissions, 1000u);
  EXPECT_EQ(m.stats().delivered, 1000u);
  // One round is the plain bulk transfer.
  LinkModel one(gig(), RandomStream(1, 0));
  EXPECT_EQ(one.offer_bulk(Nanos{0}, 1000, 1000 * uint64_t{kFrame}, 0, milliseconds(200), 12, 1).depart,
            milliseconds(12));
  LinkModel cut(gig(), RandomStream(1, 0));
  LinkChange half;
  half.at = milliseconds(6) + 2 * kDelay;
  half.rate_bps = 0.5e9;
  cut.schedule(half);
  EXPECT_EQ(cut.offer_bulk(Nanos{0}, 1000, 1000 * uint64_t{kFrame}, 0, milliseconds(200), 12, 4).depart,
            milliseconds(18) + 3 * kDelay);
}

}  // namespace
}  // namespace geotb::emu
