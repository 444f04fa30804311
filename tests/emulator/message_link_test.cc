// MessageLink (emulator/inproc) under exact arithmetic: 1 Gbit/s, so a 1448-byte segment is a
// 1448 + 52 + 38 = 1538-byte frame = 12304 ns on the wire.
#include "emulator/inproc/message_link.h"

#include <gtest/gtest.h>

namespace geotb::emu {
namespace {

using std::chrono::milliseconds;

constexpr Nanos kDelay = milliseconds(10);
constexpr Nanos kSeg{12304};  // full segment
constexpr Nanos kEmpty{(52 + 38) * 8};

LinkConfig gig() {
  LinkConfig c;
  c.rate_bps = 1e9;
  c.delay = kDelay;
  return c;
}

TEST(MessageLink, SegmentsAndDeliveryTimeExact) {
  LinkModel link(gig(), RandomStream(1, 0));
  MessageLink conn(link, SegmentConfig{});
  const MessageVerdict v = conn.send(Nanos{0}, 3 * 1448);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.segments, 3u);
  EXPECT_EQ(v.transmissions, 3u);
  EXPECT_EQ(v.wire_bytes, 3u * 1538);
  EXPECT_EQ(v.deliver_at, 3 * kSeg + kDelay);
  // A partial last segment: 1448 + 1 byte = one full and one 1-byte segment (1 + 52 + 38 = 91 B).
  const MessageVerdict w = conn.send(milliseconds(100), 1449);
  EXPECT_EQ(w.segments, 2u);
  EXPECT_EQ(w.deliver_at, milliseconds(100) + kSeg + Nanos{91 * 8} + kDelay);
  // An empty message is still one (header-only) segment.
  const MessageVerdict e = conn.send(milliseconds(200), 0);
  EXPECT_EQ(e.segments, 1u);
  EXPECT_EQ(e.deliver_at, milliseconds(200) + kEmpty + kDelay);
}

TEST(MessageLink, LostSegmentRetransmittedOneRttAfterItLeft) {
  LinkConfig c = gig();
  c.loss = LossConfig{LossConfig::Kind::kBernoulli, 1.0};
  LinkModel link(c, RandomStream(1, 0));
  LinkChange heal;
  heal.at = Nanos{1};
  heal.loss = LossConfig{};
  link.schedule(heal);
  MessageLink conn(link, SegmentConfig{});
  const MessageVerdict v = conn.send(Nanos{0}, 0);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 2u);
  EXPECT_EQ(v.wire_bytes, 2u * 90);
  // First copy leaves at kEmpty and is lost; retransmitted at kEmpty + 2*delay.
  EXPECT_EQ(v.deliver_at, kEmpty + 2 * kDelay + kEmpty + kDelay);
}

TEST(MessageLink, LinkDownRetransmitsWithDoublingTimeout) {
  LinkConfig c = gig();
  c.up = false;
  LinkModel link(c, RandomStream(1, 0));
  LinkChange up;
  up.at = milliseconds(300);
  up.up = true;
  link.schedule(up);
  MessageLink conn(link, SegmentConfig{});
  // Tries at 0 (down), 200 ms (down, RTO 200), 600 ms (up, RTO 400).
  const MessageVerdict v = conn.send(Nanos{0}, 0);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 3u);
  EXPECT_EQ(v.deliver_at, milliseconds(600) + kEmpty + kDelay);
  EXPECT_EQ(link.stats().drops[static_cast<int>(Fate::kDropLinkDown)], 2u);
}

TEST(MessageLink, UndeliverableAfterMaxAttempts) {
  LinkConfig c = gig();
  c.loss = LossConfig{LossConfig::Kind::kBernoulli, 1.0};
  LinkModel link(c, RandomStream(1, 0));
  SegmentConfig s;
  s.max_attempts = 5;
  MessageLink conn(link, s);
  const MessageVerdict v = conn.send(Nanos{0}, 10);
  EXPECT_FALSE(v.delivered);
  EXPECT_EQ(v.transmissions, 5u);
}

TEST(MessageLink, InOrderDeliveryOnOneConnection) {
  LinkConfig c = gig();
  c.jitter = {JitterConfig::Kind::kUniform, milliseconds(2)};
  c.reorder = true;
  LinkModel link(c, RandomStream(2, 0));
  MessageLink conn(link, SegmentConfig{});
  Nanos prev{0};
  for (int i = 0; i < 1000; ++i) {
    const MessageVerdict v = conn.send(Nanos{i * 1000}, 100);
    ASSERT_TRUE(v.delivered);
    ASSERT_GE(v.deliver_at, prev) << i;
    prev = v.deliver_at;
  }
}

TEST(MessageLink, LossRetransmissionsWithinBinomialBounds) {
  LinkConfig c = gig();
  c.loss = LossConfig{LossConfig::Kind::kBernoulli, 0.01};
  LinkModel link(c, RandomStream(8, 0));
  MessageLink conn(link, SegmentConfig{});
  uint64_t segs = 0, tx = 0;
  for (int i = 0; i < 200; ++i) {
    const MessageVerdict v = conn.send(milliseconds(1000) * i, 1448 * 500);
    ASSERT_TRUE(v.delivered);
    segs += v.segments;
    tx += v.transmissions;
  }
  // Retransmissions: n * p / (1 - p) in expectation, ~binomial.
  const double n = static_cast<double>(segs), mean = n * 0.01 / 0.99;
  EXPECT_NEAR(static_cast<double>(tx - segs), mean, 5 * std::sqrt(mean));
}

}  // namespace
}  // namespace geotb::emu
