// MessageLink (emulator/inproc) under exact arithmetic: 1 Gbit/s, so a 1448-byte segment is a
// 1448 + 52 + 38 = 1538-byte frame = 12304 ns on the wire.
#include "emulator/inproc/message_link.h"

#include <gtest/gtest.h>

#include "tests/emulator/link_changes.h"

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
  link.schedule(up_at(milliseconds(300)));
  MessageLink conn(link, SegmentConfig{});
  // Tries at 0 (down), 200 ms (down, RTO 200), 600 ms (up, RTO 400).
  const MessageVerdict v = conn.send(Nanos{0}, 0);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 3u);
  EXPECT_EQ(v.deliver_at, milliseconds(600) + kEmpty + kDelay);
  EXPECT_EQ(link.stats().drops[static_cast<int>(Fate::kDropLinkDown)], 2u);
}

// An outage cuts the fibre (as in the DPDK data plane): the 100 segments of a message sent at 0
// would be released from kDelay + kSeg on; the link goes down at 5 ms, before any of them
// arrives, and comes back at 105 ms. Every segment is lost in flight and retransmitted one RTO
// (200 ms) after it was sent, onto an idle serializer.
TEST(MessageLink, OutageCutsSegmentsInFlight) {
  LinkModel link(gig(), RandomStream(1, 0));
  link.schedule(down_at(milliseconds(5)));
  link.schedule(up_at(milliseconds(105)));
  EXPECT_EQ(link.next_cut(), milliseconds(5));
  MessageLink conn(link, SegmentConfig{});
  const MessageVerdict v = conn.send(Nanos{0}, 100 * 1448);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.segments, 100u);
  EXPECT_EQ(v.transmissions, 200u);
  EXPECT_EQ(v.wire_bytes, 200u * 1538);
  EXPECT_EQ(v.deliver_at, milliseconds(200) + 100 * kSeg + kDelay);
  EXPECT_EQ(link.stats().lost_in_flight, 100u);
  EXPECT_EQ(link.stats().drops[static_cast<int>(Fate::kDropLinkDown)], 100u);
  EXPECT_EQ(link.stats().delivered, 100u);
  EXPECT_FALSE(link.next_cut().has_value());
}

// The cut falls inside the message: segment i (0-based) is released at kDelay + (i + 1) kSeg, so a
// cut at kDelay + 50.5 kSeg keeps the first 50 and loses the other 50, which go again at 200 ms.
TEST(MessageLink, OutageCutsOnlyWhatIsReleasedAfterIt) {
  LinkModel link(gig(), RandomStream(1, 0));
  link.schedule(down_at(kDelay + 50 * kSeg + kSeg / 2));
  link.schedule(up_at(milliseconds(100)));
  MessageLink conn(link, SegmentConfig{});
  const MessageVerdict v = conn.send(Nanos{0}, 100 * 1448);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 150u);
  EXPECT_EQ(link.stats().lost_in_flight, 50u);
  EXPECT_EQ(v.deliver_at, milliseconds(200) + 50 * kSeg + kDelay);
}

// next_cut() follows the pending changes from the current state: a down while already down is no
// cut; the first up -> down is.
TEST(MessageLink, NextCutIsTheNextUpToDownTransition) {
  LinkConfig c = gig();
  c.up = false;
  LinkModel link(c, RandomStream(1, 0));
  LinkChange rate;  // a change without `up` does not matter
  rate.at = milliseconds(2) + Nanos{1};
  rate.rate_bps = 2e9;
  for (const auto& ch : {down_at(milliseconds(1)), up_at(milliseconds(2)), rate, down_at(milliseconds(3))})
    link.schedule(ch);
  EXPECT_EQ(link.next_cut(), milliseconds(3));
  link.advance(milliseconds(3));
  EXPECT_FALSE(link.next_cut().has_value());
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
