// MessageLink (emulator/inproc) under exact arithmetic: 1 Gbit/s, so a 1448-byte segment is a
// 1448 + 52 + 38 = 1538-byte frame = 12304 ns on the wire.
#include "emulator/inproc/message_link.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/emulator/link_changes.h"

// Its own namespace: link_model_test.cc, compiled with it in a unity build, has a kDelay and a gig() of its own.
namespace geotb::emu::message_link_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr Nanos kDelay = milliseconds(10);
constexpr Nanos kSeg{12304};  // full segment
constexpr Nanos kEmpty{(52 + 38) * 8};

/// The window-less model (SegmentConfig::tcp = false): every segment offered at once.
SegmentConfig windowless() {
  SegmentConfig s;
  s.tcp = false;
  return s;
}

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
  MessageLink conn(link, windowless());
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
  MessageLink conn(link, windowless());
  // Tries at 0 (down), 200 ms (down, RTO 200), 600 ms (up, RTO 400).
  const MessageVerdict v = conn.send(Nanos{0}, 0);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 3u);
  EXPECT_EQ(v.deliver_at, milliseconds(600) + kEmpty + kDelay);
  EXPECT_EQ(link.stats().drops[static_cast<int>(Fate::kDropLinkDown)], 2u);
}

// TCP: the retransmission timer of a new connection is srtt + max(4 rttvar, 200 ms) from the
// handshake's sample m = 20 ms (srtt = m, rttvar = m / 2): 220 ms, doubling per attempt.
TEST(MessageLink, TcpLinkDownRetransmitsAfterTheRto) {
  LinkConfig c = gig();
  c.up = false;
  LinkModel link(c, RandomStream(1, 0));
  link.schedule(up_at(milliseconds(300)));
  MessageLink conn(link, SegmentConfig{});
  EXPECT_EQ(conn.rto(), milliseconds(220));
  // Tries at 0 (down), 220 ms (down), 660 ms (up).
  const MessageVerdict v = conn.send(Nanos{0}, 0);
  EXPECT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 3u);
  EXPECT_EQ(v.deliver_at, milliseconds(660) + kEmpty + kDelay);
  EXPECT_EQ(conn.tcp_stats().timeouts, 2u);
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
  MessageLink conn(link, windowless());
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
  MessageLink conn(link, windowless());
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


// ---- TCP: congestion window -------------------------------------------------------------------

constexpr Nanos kRtt = 2 * kDelay;

LinkConfig unlimited_rate() {
  LinkConfig c;
  c.delay = kDelay;
  return c;
}

SegmentConfig reno() {
  SegmentConfig s;
  s.cc = CcAlgorithm::kReno;
  return s;
}

/// Loses every frame offered at exactly `at`.
void lose_at(LinkModel& link, Nanos at) {
  LinkChange on, off;
  on.at = at;
  on.loss = LossConfig{LossConfig::Kind::kBernoulli, 1.0};
  off.at = at + Nanos{1};
  off.loss = LossConfig{};
  link.schedule(on);
  link.schedule(off);
}

// Slow start on a fresh connection, with no serialization time (rate unlimited): round k sends
// 10 * 2^k segments (each ACK opens the window by one and frees one), so n segments take the
// R rounds with 10 (2^R - 1) >= n and the last is delivered (R - 1) RTT + one delay after the send.
TEST(MessageLink, SlowStartRoundsOnAFreshConnection) {
  for (uint64_t n : {1u, 10u, 11u, 30u, 31u, 70u, 71u, 1000u, 5000u}) {
    uint64_t rounds = 0;
    while (10 * ((uint64_t{1} << rounds) - 1) < n) ++rounds;
    for (CcAlgorithm cc : {CcAlgorithm::kReno, CcAlgorithm::kCubic}) {
      LinkModel link(unlimited_rate(), RandomStream(1, 0));
      SegmentConfig s;
      s.cc = cc;
      s.receive_window = false;  // the congestion window alone (receive window: RcvWindow* below)
      MessageLink conn(link, s);
      const MessageVerdict v = conn.send(milliseconds(5), n * 1448);
      ASSERT_TRUE(v.delivered);
      EXPECT_EQ(v.transmissions, n);
      EXPECT_EQ(v.deliver_at, milliseconds(5) + static_cast<int64_t>(rounds - 1) * kRtt + kDelay)
          << n << " segments, " << cc_name(cc);
    }
  }
}

// ---- TCP: the receiver's window (Linux tcp_rmem defaults, autotuning) -------------------------

// The receiver a connection starts with (tcp_init_buffer_space, tcp_select_initial_window):
// sk_rcvbuf = tcp_rmem[1] = 131072, window_clamp = half of it, the SYN's window 65536 rounded down
// to whole MSS = 45 * 1448 = 65160, rcvq_space.space = TCP_INIT_CWND * 1448.
TEST(MessageLink, RcvWindowStartsFromTcpRmem) {
  LinkModel link(unlimited_rate(), RandomStream(1, 0));
  MessageLink conn(link, reno());
  EXPECT_EQ(conn.receiver().rcvbuf, 131072u);
  EXPECT_EQ(conn.receiver().window_clamp, 65536u);
  EXPECT_EQ(conn.receiver().rcv_ssthresh, 65160u);
  EXPECT_EQ(conn.receiver().space, 14480u);
  EXPECT_EQ(conn.send_window_end(), 45u);
}

// Slow start against the receiver's first window, rate unlimited (RTT 20 ms): flights of 10, 20, 40
// (70 segments in 3 rounds), then 45 instead of 80: the window (rcv_nxt + 45) holds the sender
// until the receiver's autotuning grows it (the reads of 50-70 ms: 40 segments in one RTT, so
// space = 57920, sk_rcvbuf = 4 * space = 231680, window_clamp 115840). 115 segments take 4 rounds
// in both; the 116th waits one more round with the receive window, not without it.
TEST(MessageLink, RcvWindowHoldsTheFourthFlight) {
  struct Case {
    uint64_t n;
    bool rwnd;
    Nanos deliver;
  };
  const Case cases[] = {
      {115, true, 3 * kRtt + kDelay}, {116, true, 4 * kRtt + kDelay}, {116, false, 3 * kRtt + kDelay},
  };
  for (const Case& c : cases) {
    LinkModel link(unlimited_rate(), RandomStream(1, 0));
    SegmentConfig s = reno();
    s.receive_window = c.rwnd;
    MessageLink conn(link, s);
    const MessageVerdict v = conn.send(Nanos{0}, c.n * 1448);
    EXPECT_EQ(v.deliver_at, c.deliver) << c.n << " segments, rwnd " << c.rwnd;
    // Both with the window: at 60 ms cwnd allowed more than the 45 it let through.
    EXPECT_EQ(conn.tcp_stats().rwnd_limited > 0, c.rwnd) << c.n;
  }
}

// Autotuning (tcp_rcv_space_adjust / tcp_rcvbuf_grow), once per receiver RTT (20 ms), on the
// 116-segment message above: reads of 10-30 ms 10 segments (= space, no change), 30-50 ms 20
// (space 28960: 2 * space fits the 131072 buffer, no change), 50-70 ms 40 (space 57920, sk_rcvbuf
// 231680), 70-90 ms 45 (space 65160, sk_rcvbuf 260640, window_clamp 130320); rcv_ssthresh grows
// by 2 MSS per segment received, to the clamp of its time: the last segment (90 ms) grows it to
// the old clamp (115840) before the read that raises the clamp (tcp_event_data_recv, then
// tcp_recvmsg).
TEST(MessageLink, RcvBufferGrowsPerRtt) {
  LinkModel link(unlimited_rate(), RandomStream(1, 0));
  MessageLink conn(link, reno());
  conn.send(Nanos{0}, 116 * 1448);
  conn.advance(milliseconds(200));
  EXPECT_EQ(conn.tcp_stats().rcvbuf_grows, 2u);
  EXPECT_EQ(conn.receiver().space, 65160u);
  EXPECT_EQ(conn.receiver().rcvbuf, 260640u);
  EXPECT_EQ(conn.receiver().window_clamp, 130320u);
  EXPECT_EQ(conn.receiver().rcv_ssthresh, 115840u);
  EXPECT_EQ(conn.receiver().rcv_nxt, 116u);
}

// tcp_rmem[2] caps the buffer: with 262144 the window stops at 131072 bytes (90 segments).
TEST(MessageLink, RcvBufferCappedByTcpRmemMax) {
  LinkModel link(unlimited_rate(), RandomStream(1, 0));
  SegmentConfig s = reno();
  s.rmem_max_bytes = 262144;
  MessageLink conn(link, s);
  conn.send(Nanos{0}, 2000 * 1448);
  conn.advance(milliseconds(2000));
  EXPECT_EQ(conn.receiver().rcvbuf, 262144u);
  EXPECT_EQ(conn.receiver().window_clamp, 131072u);
  EXPECT_EQ(conn.send_window_end(), 2000u + 131072 / 1448);
}

// A message that fits the window goes in one flight: 10 segments at 1 Gbit/s leave back to back.
TEST(MessageLink, InitialWindowIsTenSegments) {
  LinkModel link(gig(), RandomStream(1, 0));
  MessageLink conn(link, SegmentConfig{});
  EXPECT_EQ(conn.send(Nanos{0}, 10 * 1448).deliver_at, 10 * kSeg + kDelay);
  LinkModel link2(gig(), RandomStream(1, 0));
  MessageLink conn2(link2, SegmentConfig{});
  // The 11th waits for the first ACK (kSeg + 2 delay) and then its own serialization.
  EXPECT_EQ(conn2.send(Nanos{0}, 11 * 1448).deliver_at, kSeg + kRtt + kSeg + kDelay);
}

// Idle restart (RFC 5681 4.1, Linux tcp_cwnd_restart): 150 segments in slow start (10 + 20 + 40 +
// 80, last sent at 3 RTT = 60 ms) leave cwnd at 160 once all are ACKed; the RTO is 220 ms
// (srtt 20 ms + the 200 ms floor). A message sent after an idle period longer than the RTO starts
// from cwnd halved per RTO of idle time after the first, never below the initial window.
TEST(MessageLink, IdleRestartHalvesTheWindowPerRto) {
  struct Case {
    Nanos idle;
    bool restart_enabled;
    uint32_t cwnd_after;
    Nanos deliver_after_send;
  };
  const Case cases[] = {
      {milliseconds(200), true, 160, kDelay},                // idle < RTO: one flight of 150
      {milliseconds(500), true, 40, 2 * kRtt + kDelay},      // 500 - 220 > 0, 280 - 220 > 0: 160 / 4 = 40; 40 + 80 + 30
      {milliseconds(1000), true, 10, 3 * kRtt + kDelay},     // four halvings, floor at 10: 10 + 20 + 40 + 80
      {milliseconds(1000), false, 160, kDelay},              // tcp_slow_start_after_idle = 0
  };
  for (const Case& c : cases) {
    LinkModel link(unlimited_rate(), RandomStream(1, 0));
    SegmentConfig s = reno();
    s.slow_start_after_idle = c.restart_enabled;
    s.receive_window = false;  // 150 segments in one flight: more than the receiver's first window
    MessageLink conn(link, s);
    const MessageVerdict first = conn.send(Nanos{0}, 150 * 1448);
    EXPECT_EQ(first.deliver_at, 3 * kRtt + kDelay);
    conn.advance(4 * kRtt);
    EXPECT_EQ(conn.window().cwnd, 160u);
    EXPECT_EQ(conn.in_flight(), 0u);
    EXPECT_EQ(conn.rto(), milliseconds(220));
    const Nanos t = 3 * kRtt + c.idle;  // the last segment left at 3 RTT
    const MessageVerdict second = conn.send(t, 150 * 1448);
    EXPECT_EQ(second.deliver_at, t + c.deliver_after_send) << c.idle.count() << " ns idle";
    EXPECT_EQ(conn.tcp_stats().restarts, c.cwnd_after < 160 ? 1u : 0u);
    EXPECT_EQ(conn.window().ssthresh, kInfiniteSsthresh);  // max(ssthresh, 3/4 cwnd) of an infinite one
  }
}

// A loss in slow start (Reno, 1 Gbit/s, 17 segments): the ACK of segment i of the first flight
// arrives at 2 delay + (i + 1) kSeg and sends two segments; the frames offered at the ACK of
// segment 1 (segments 12 and 13) are lost. Segments 14, 15, 16 are ACKed after them: at the ACK of
// 16 (sent at the ACK of 3, departs 20 ms + 8 kSeg, ACKed 40 ms + 8 kSeg) both are lost by the
// dupthresh rule. cwnd was 10 + 10 (first flight) + 4 (ACKs of 10, 11, 14, 15) = 24: ssthresh and
// cwnd 12, segment 12 goes at once (departs 40 ms + 9 kSeg), 13 right after (the pipe is empty):
// the message is delivered at 50 ms + 10 kSeg.
TEST(MessageLink, LossInSlowStartHalvesTheWindowOnce) {
  LinkModel link(gig(), RandomStream(1, 0));
  lose_at(link, kRtt + 2 * kSeg);
  MessageLink conn(link, reno());
  const MessageVerdict v = conn.send(Nanos{0}, 17 * 1448);
  ASSERT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 19u);
  EXPECT_EQ(v.deliver_at, 2 * kRtt + kDelay + 10 * kSeg);
  EXPECT_EQ(conn.tcp_stats().fast_retransmits, 2u);
  EXPECT_EQ(conn.tcp_stats().recoveries, 1u);
  EXPECT_EQ(conn.tcp_stats().timeouts, 0u);
  EXPECT_EQ(conn.window().ssthresh, 12u);
  EXPECT_EQ(link.stats().drops[static_cast<int>(Fate::kDropLoss)], 2u);
}

// CUBIC's reduction of the same loss: ssthresh = 24 * 717 / 1024 = 16.
TEST(MessageLink, LossInSlowStartCubicBeta) {
  LinkModel link(gig(), RandomStream(1, 0));
  lose_at(link, kRtt + 2 * kSeg);
  MessageLink conn(link, SegmentConfig{});
  const MessageVerdict v = conn.send(Nanos{0}, 17 * 1448);
  ASSERT_TRUE(v.delivered);
  EXPECT_EQ(conn.window().ssthresh, 16u);
  EXPECT_EQ(conn.tcp_stats().recoveries, 1u);
}

// A loss in congestion avoidance (Reno, cwnd = ssthresh = 20 from the start, 30 segments at
// 1 Gbit/s): the ACK of first-flight segment i (2 delay + (i + 1) kSeg) sends segment 20 + i, which
// departs at 20 ms + (i + 2) kSeg and is ACKed at 40 ms + (i + 2) kSeg. The first flight's 20 ACKs
// make cwnd 21. Segment 24 is lost; segments 25, 26, 27 are ACKed after it, the third at
// 40 ms + 9 kSeg, with 6 ACKs counted toward the next increment (cwnd still 21): ssthresh =
// cwnd = 21 / 2 = 10; the retransmission departs at 40 ms + 10 kSeg and arrives one delay later.
TEST(MessageLink, LossInCongestionAvoidanceHalvesTheWindow) {
  LinkModel link(gig(), RandomStream(1, 0));
  lose_at(link, kRtt + 5 * kSeg);
  SegmentConfig s = reno();
  s.initial_cwnd = 20;
  s.initial_ssthresh = 20;
  MessageLink conn(link, s);
  const MessageVerdict v = conn.send(Nanos{0}, 30 * 1448);
  ASSERT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 31u);
  EXPECT_EQ(v.deliver_at, 2 * kRtt + kDelay + 10 * kSeg);
  EXPECT_EQ(conn.tcp_stats().fast_retransmits, 1u);
  EXPECT_EQ(conn.tcp_stats().recoveries, 1u);
  EXPECT_EQ(conn.window().ssthresh, 10u);
  EXPECT_EQ(conn.window().cwnd, 10u);
}

// A tail loss (the last segment, no later ACK): the retransmission timer fires RTO = 220 ms after
// it left, the window drops to 1 (Linux TCP_CA_Loss) and ssthresh to half the window at the time.
TEST(MessageLink, TailLossWaitsForTheRto) {
  LinkModel link(gig(), RandomStream(1, 0));
  lose_at(link, Nanos{0});
  MessageLink conn(link, reno());
  const MessageVerdict v = conn.send(Nanos{0}, 100);
  ASSERT_TRUE(v.delivered);
  EXPECT_EQ(v.transmissions, 2u);
  const Nanos frame{(100 + 52 + 38) * 8};
  EXPECT_EQ(v.deliver_at, milliseconds(220) + frame + kDelay);
  EXPECT_EQ(conn.tcp_stats().timeouts, 1u);
  EXPECT_EQ(conn.window().cwnd, 1u);
  EXPECT_EQ(conn.window().ssthresh, 5u);
}

// Application-limited messages do not grow the window (Linux tcp_is_cwnd_limited: in slow start
// only while cwnd < 2 x the most segments in flight in the last window). 3-segment messages every
// 100 ms (> RTT): 3 in flight at most, cwnd stays 10. Every 10 ms: the ACKs of a message arrive
// 20 ms + 3 kSeg after it left, after the next two messages were sent: 9 in flight, cwnd 18.
TEST(MessageLink, ApplicationLimitedDoesNotGrowTheWindow) {
  for (auto [gap, cwnd] : {std::pair{milliseconds(100), 10u}, std::pair{milliseconds(10), 18u}}) {
    LinkModel link(gig(), RandomStream(1, 0));
    MessageLink conn(link, reno());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(conn.send(gap * i, 3 * 1448).delivered);
    conn.advance(gap * 100 + milliseconds(100));
    EXPECT_EQ(conn.window().cwnd, cwnd) << gap.count();
  }
}

// ---- TCP: both directions together (ACK frames on the reverse link) --------------------------

namespace both_ways {

constexpr Nanos kAck{(52 + 38) * 8};  // an ACK frame: 52 header bytes + 38 overhead = 720 ns

/// Two directions of one path and a connection each way on one event queue, as in a fabric.
struct Path {
  explicit Path(LinkConfig c, SegmentConfig a_seg, SegmentConfig b_seg)
      : ab(c, RandomStream(1, 0)), ba(c, RandomStream(1, 1)), a(ab, a_seg, &ba, &q), b(ba, b_seg, &ab, &q) {
    a.set_on_done([this](uint64_t, const MessageVerdict& v) { a_done.push_back(v); });
    b.set_on_done([this](uint64_t, const MessageVerdict& v) { b_done.push_back(v); });
  }
  void run() {
    while (!q.empty()) q.run_next();
  }
  EventQueue q;
  LinkModel ab, ba;
  MessageLink a, b;  // a sends on ab (ACKs on ba), b on ba
  std::vector<MessageVerdict> a_done, b_done;
};

SegmentConfig no_rwnd(uint32_t cwnd) {
  SegmentConfig s = reno();
  s.receive_window = false;
  s.initial_cwnd = cwnd;
  return s;
}

// The ACK of A's one segment arrives at B at kSeg + 10 ms and is offered to B->A, whose serializer
// holds B's 1000 segments offered at 0 until 1000 kSeg = 12.304 ms: it leaves at 1000 kSeg + kAck
// and reaches A 10 ms later. Alone, it leaves at once: RTT = kSeg + 2 delay + kAck.
TEST(MessageLinkBothWays, AnAckQueuesBehindTheReverseBulk) {
  for (bool bulk : {false, true}) {
    Path p(gig(), no_rwnd(10), no_rwnd(1000));
    p.a.enqueue(Nanos{0}, 1448);
    if (bulk) p.b.enqueue(Nanos{0}, 1000 * 1448);
    p.run();
    ASSERT_EQ(p.a_done.size(), 1u);
    EXPECT_EQ(p.a_done[0].deliver_at, kSeg + kDelay);  // the data itself does not wait
    EXPECT_EQ(p.a.latest_rtt(), bulk ? 1000 * kSeg + kAck + kDelay : kSeg + 2 * kDelay + kAck) << bulk;
    EXPECT_EQ(p.ba.stats().offered, bulk ? 1001u : 1u);  // B's data (and A's ACK)
  }
}

// A's 11 segments on a fresh connection (initial window 10): the 11th waits for the first ACK.
// Alone: that ACK arrives at kSeg + 2 delay + kAck; the 11th segment departs kSeg later and arrives
// one delay after. With B's 1000 segments on B->A since 0, the ACK leaves B->A only at
// 1000 kSeg + kAck: the message is delivered (1000 - 1) kSeg - 10 ms later, the ACK's queueing.
// B's ACKs on A->B (one per B segment, kSeg apart, kAck each) never hold A's 11th segment: the
// last of them ends just as it is offered (1000 kSeg + kAck + 10 ms).
TEST(MessageLinkBothWays, ABulkTheOtherWaySlowsTheAckClock) {
  const Nanos alone = kSeg + 2 * kDelay + kAck + kSeg + kDelay;
  for (bool bulk : {false, true}) {
    Path p(gig(), no_rwnd(10), no_rwnd(1000));
    p.a.enqueue(Nanos{0}, 11 * 1448);
    if (bulk) p.b.enqueue(Nanos{0}, 1000 * 1448);
    p.run();
    ASSERT_EQ(p.a_done.size(), 1u);
    EXPECT_EQ(p.a_done[0].deliver_at, bulk ? alone + 999 * kSeg - kDelay : alone) << bulk;
    if (bulk) {
      EXPECT_EQ(p.b_done.at(0).deliver_at, 1000 * kSeg + kDelay);
    }
  }
}

// Two simultaneous 11-segment messages, one each way, on fresh connections with no propagation
// delay: each side's first flight (10 segments) occupies its direction until 10 kSeg, so the other
// side's ACKs for it queue there. A's first ACK leaves B->A at 10 kSeg + kAck; A's 11th segment,
// offered then, queues on A->B behind B's 10 ACKs (ending at 10 kSeg + 10 kAck): delivered at
// 11 kSeg + 10 kAck, against 11 kSeg alone (its ACKs alone on B->A, A->B free after 10 kSeg).
TEST(MessageLinkBothWays, TwoSimultaneousMessagesEachWaitForTheOthersAcks) {
  LinkConfig c = gig();
  c.delay = Nanos{0};
  for (bool both : {false, true}) {
    Path p(c, no_rwnd(10), no_rwnd(10));
    p.a.enqueue(Nanos{0}, 11 * 1448);
    if (both) p.b.enqueue(Nanos{0}, 11 * 1448);
    p.run();
    ASSERT_EQ(p.a_done.size(), 1u);
    EXPECT_EQ(p.a_done[0].deliver_at, both ? 11 * kSeg + 10 * kAck : 11 * kSeg) << both;
    if (both) {
      EXPECT_EQ(p.b_done.at(0).deliver_at, 11 * kSeg + 10 * kAck);
    }
  }
}

// A lost ACK frame: what it said rides on the next one (cumulative ACKs). The link B->A loses the
// frame offered at kSeg + 10 ms (the ACK of A's first segment); the ACK of the second (offered at
// 2 kSeg + 10 ms) tells both: A learns of both when it arrives, and nothing is retransmitted.
TEST(MessageLinkBothWays, ALostAckIsCarriedByTheNext) {
  Path p(gig(), no_rwnd(10), no_rwnd(10));
  lose_at(p.ba, kSeg + kDelay);
  p.a.enqueue(Nanos{0}, 2 * 1448);
  p.run();
  ASSERT_EQ(p.a_done.size(), 1u);
  EXPECT_EQ(p.a_done[0].transmissions, 2u);
  EXPECT_EQ(p.a.tcp_stats().acked_segments, 2u);
  EXPECT_EQ(p.a.latest_rtt(), 2 * kSeg + 2 * kDelay + kAck);  // segment 1: sent at 0, departs at 2 kSeg
  EXPECT_EQ(p.a.in_flight(), 0u);
  EXPECT_EQ(p.ba.stats().drops[static_cast<int>(Fate::kDropLoss)], 1u);
}

}  // namespace both_ways


// ---- Bulk transfers: the fluid model of messages above SegmentConfig::fluid_above_bytes ----
namespace bulk {

constexpr uint64_t kBig = 100'000'000;  // 69,061 segments: 100e6 + 69,061 x (52 + 38) = 106,215,490 wire bytes

SegmentConfig fluid(SegmentConfig s) {
  s.fluid_above_bytes = 64u << 20;
  return s;
}
SegmentConfig segments_only(SegmentConfig s) {
  s.fluid_above_bytes = UINT64_MAX;
  return s;
}

// Window-less: every frame offered at once, so the message is the link's serialization of its
// 106,215,490 wire bytes at 1 Gbit/s (849,723,920 ns) plus the delay, exactly, in both models.
TEST(MessageLinkBulk, WindowlessIsTheSerializationExactly) {
  for (bool f : {false, true}) {
    LinkModel link(gig(), RandomStream(1, 0));
    MessageLink conn(link, f ? fluid(windowless()) : segments_only(windowless()));
    const MessageVerdict v = conn.send(Nanos{0}, kBig);
    EXPECT_TRUE(v.delivered);
    EXPECT_EQ(v.segments, 69061u);
    EXPECT_EQ(v.wire_bytes, 106215490u);
    EXPECT_EQ(v.deliver_at, Nanos{849723920} + kDelay) << f;
    EXPECT_EQ(conn.tcp_stats().bulk_transfers, f ? 1u : 0u);
  }
}

// An outage from 200 ms to 700 ms: 200 ms of the transfer were serialized; the sender retries at
// 200 + 200 (still down) and 200 + 200 + 400 = 800 ms (up again) and serializes the rest,
// 649,723,920 ns, from there.
TEST(MessageLinkBulk, AnOutagePausesTheTransferUntilTheRetryAfterIt) {
  LinkModel link(gig(), RandomStream(1, 0));
  link.schedule(down_at(milliseconds(200)));
  link.schedule(up_at(milliseconds(700)));
  MessageLink conn(link, fluid(windowless()));
  const MessageVerdict v = conn.send(Nanos{0}, kBig);
  ASSERT_TRUE(v.delivered);
  EXPECT_EQ(v.deliver_at, milliseconds(800) + Nanos{649723920} + kDelay);
  // A rate cut halfway through: the rest at the new rate.
  LinkModel cut(gig(), RandomStream(1, 0));
  LinkChange slow;
  slow.at = milliseconds(400);
  slow.rate_bps = 0.5e9;
  cut.schedule(slow);
  MessageLink c2(cut, fluid(windowless()));
  EXPECT_EQ(c2.send(Nanos{0}, kBig).deliver_at, milliseconds(400) + 2 * Nanos{449723920} + kDelay);
}

TEST(MessageLinkBulk, ALinkThatStaysDownFailsTheTransfer) {
  LinkModel link(gig(), RandomStream(1, 0));
  link.schedule(down_at(milliseconds(100)));
  MessageLink conn(link, fluid(windowless()));
  EXPECT_FALSE(conn.send(Nanos{0}, kBig).delivered);
}

/// One message of `bytes` on a fresh connection, alone: its delivery instant, seconds.
double alone(const LinkConfig& c, SegmentConfig s, uint64_t bytes, TcpStats* stats = nullptr) {
  LinkModel link(c, RandomStream(1, 0));
  MessageLink conn(link, s);
  const MessageVerdict v = conn.send(Nanos{0}, bytes);
  EXPECT_TRUE(v.delivered);
  if (stats) *stats = conn.tcp_stats();
  return std::chrono::duration<double>(v.deliver_at).count();
}

// TCP on a link-limited path (receive window off, 1 Gbit/s, 20 ms RTT): the head goes segment by
// segment through slow start until cwnd reaches the BDP (1626 frames), the tail runs at the link's
// rate: within 0.5 % of the segment model, which it equals in all but the last in-flight window.
TEST(MessageLinkBulk, TcpOnALinkLimitedPathMatchesTheSegmentModel) {
  SegmentConfig s = reno();
  s.receive_window = false;
  TcpStats st;
  const double f = alone(gig(), fluid(s), kBig, &st), g = alone(gig(), segments_only(s), kBig);
  EXPECT_EQ(st.bulk_transfers, 1u);
  EXPECT_EQ(st.acked_segments, 69061u);
  EXPECT_GT(st.fluid_segments, 60000u);  // most of it in the tail, not simulated one by one
  EXPECT_NEAR(f / g, 1.0, 0.005) << "fluid " << f << " s, segments " << g << " s";
}

// A message standing for 5 dependent rounds (a group of DDP buckets) is a bulk transfer whatever
// its size; on a connection whose window is steady (after a large message, no idle restart) its 5 parts are
// chained one one-way delay (10 ms) apart: it is delivered 4 delays later than the same bytes as
// one bulk transfer.
TEST(MessageLinkBulk, RoundsChainTheirPartsOneDelayApart) {
  auto deliver = [](uint64_t rounds) {
    SegmentConfig s = reno();
    s.receive_window = false;
    s.fluid_above_bytes = 1u << 20;  // the one-round message a bulk transfer too
    s.slow_start_after_idle = false;  // the window stays open across the idle second
    LinkModel link(gig(), RandomStream(1, 0));
    MessageLink conn(link, s);
    std::map<uint64_t, MessageVerdict> done;
    conn.set_on_done([&](uint64_t id, const MessageVerdict& v) { done[id] = v; });
    (void)conn.enqueue(Nanos{0}, kBig);  // opens the window to the BDP
    conn.advance(seconds(5));
    const uint64_t id = conn.enqueue(seconds(5), 10'000'000, rounds);
    conn.advance(seconds(10));
    EXPECT_TRUE(done.at(id).delivered);
    EXPECT_EQ(conn.tcp_stats().bulk_transfers, 2u);
    return done.at(id).deliver_at;
  };
  const Nanos one = deliver(1), five = deliver(5);
  EXPECT_EQ(five - one, 4 * kDelay);
  EXPECT_GT(one, seconds(5) + milliseconds(80));  // 10 MB at 1 Gbit/s
  // A small message is a bulk transfer when it stands for rounds.
  SegmentConfig s = reno();
  LinkModel link(gig(), RandomStream(1, 0));
  MessageLink conn(link, s);
  (void)conn.enqueue(Nanos{0}, 1000, 2);
  conn.advance(seconds(1));
  EXPECT_EQ(conn.tcp_stats().bulk_transfers, 1u);
}

// Messages keep their stream order around a bulk transfer: a small message before it is
// delivered first and the bulk starts at that delivery; one after it waits for it.
TEST(MessageLinkBulk, StreamOrderAroundTheBulk) {
  LinkModel link(gig(), RandomStream(1, 0));
  EventQueue q;
  SegmentConfig s = fluid(reno());
  s.receive_window = false;
  MessageLink conn(link, s, nullptr, &q);
  std::vector<std::pair<uint64_t, Nanos>> done;
  conn.set_on_done([&](uint64_t id, const MessageVerdict& v) { done.emplace_back(id, v.deliver_at); });
  conn.enqueue(Nanos{0}, 1448);
  conn.enqueue(Nanos{0}, kBig);
  conn.enqueue(Nanos{0}, 1448);
  while (!q.empty()) q.run_next();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].first, 0u);
  EXPECT_EQ(done[1].first, 1u);
  EXPECT_EQ(done[2].first, 2u);
  EXPECT_EQ(done[0].second, kSeg + kDelay);
  EXPECT_GT(done[1].second, done[0].second + Nanos{849723920});
  EXPECT_GT(done[2].second, done[1].second);
}

// The fluid model against the segment model on the same path, where both run: 10 Gbit/s, 30 ms
// RTT, Linux's receive window (16 MiB at most: the connection is window-limited to ~4.4 Gbit/s),
// CUBIC, 100 MB. The bound is what docs/measurements/represented-models.md measured, with margin.
TEST(MessageLinkBulk, FluidAgreesWithTheSegmentModel) {
  LinkConfig c;
  c.rate_bps = 10e9;
  c.delay = milliseconds(15);
  std::vector<double> t;
  for (bool f : {false, true}) {
    LinkModel link(c, RandomStream(1, 0));
    MessageLink conn(link, f ? fluid(SegmentConfig{}) : segments_only(SegmentConfig{}));
    const MessageVerdict v = conn.send(Nanos{0}, kBig);
    ASSERT_TRUE(v.delivered);
    t.push_back(std::chrono::duration<double>(v.deliver_at).count());
  }
  RecordProperty("segment_model_s", std::to_string(t[0]));
  RecordProperty("fluid_model_s", std::to_string(t[1]));
  EXPECT_NEAR(t[1] / t[0], 1.0, 0.10) << "segment " << t[0] << " s, fluid " << t[1] << " s";
}

}  // namespace bulk

}  // namespace
}  // namespace geotb::emu::message_link_test
