// One leader's view of an exchange round (engine/strategies/exchange_timing.h), on crafted
// instants: measured from the round's last hand-off, and its lower bound from each message's link.
#include <gtest/gtest.h>

#include "engine/strategies/exchange_timing.h"

namespace geotb::engine {
namespace {

constexpr int64_t kMs = 1000000;  // ns

TEST(ExchangeTiming, SimultaneousHandOffsGiveTransitAndTheSlowestLinksBound) {
  // 1 Mbit/s, 10 ms one way: 1250 bytes take 10 ms on the wire, so the bound is 20 ms.
  const InboundLink link{1e6, 0.010};
  ExchangeTiming t(100 * kMs);
  t.arrived(100 * kMs, 1250, link);
  ExchangeRecord r;
  t.finish(125 * kMs, r);
  EXPECT_DOUBLE_EQ(r.seconds, 0.025);
  EXPECT_DOUBLE_EQ(r.lower_bound_s, 0.020);
  EXPECT_DOUBLE_EQ(r.rtt_s, 0.020);
}

TEST(ExchangeTiming, AFastDcDoesNotChargeItsWaitForASlowDcsComputeToTheNetwork) {
  const InboundLink link{1e6, 0.010};
  // We handed off at 100 ms, the peer only at 400 ms (it computes slower); its message is here
  // at 421 ms: the exchange took 21 ms from the last hand-off, at least 20.
  ExchangeTiming fast(100 * kMs);
  fast.arrived(400 * kMs, 1250, link);
  ExchangeRecord r;
  fast.finish(421 * kMs, r);
  EXPECT_NEAR(r.seconds, 0.021, 1e-12);
  EXPECT_NEAR(r.lower_bound_s, 0.020, 1e-12);
  // The slow DC's view: ours arrived long before its hand-off; it waited for nothing.
  ExchangeTiming slow(400 * kMs);
  slow.arrived(100 * kMs, 1250, link);
  ExchangeRecord s;
  slow.finish(400 * kMs, s);
  EXPECT_EQ(s.seconds, 0.0);
  EXPECT_EQ(s.lower_bound_s, 0.0);
}

TEST(ExchangeTiming, ThreeSitesBoundIsTheLatestPossibleArrivalOverPeers) {
  // Peer A at 0 over a 50 ms link, peer B at 30 ms over a 5 ms link (infinite rates): A's can be
  // here at 50 ms, B's at 35: bound 50 - 30 = 20 ms after the last hand-off (B's, at 30 ms).
  ExchangeTiming t(0);
  t.arrived(0, 100, InboundLink{0, 0.050});
  t.arrived(30 * kMs, 100, InboundLink{0, 0.005});
  ExchangeRecord r;
  t.finish(52 * kMs, r);
  EXPECT_NEAR(r.seconds, 0.022, 1e-12);
  EXPECT_NEAR(r.lower_bound_s, 0.020, 1e-12);
  EXPECT_DOUBLE_EQ(r.rtt_s, 0.100);  // A's 50 ms link binds the bound
}

}  // namespace
}  // namespace geotb::engine
