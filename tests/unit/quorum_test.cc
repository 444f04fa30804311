// The quorum of sites (engine/faults/quorum.h) on scripted reachability: which sites each round
// runs with, who pauses, when a paused site is admitted again, and the links' states read from a
// run's topology. Every instant is exact.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/faults/quorum.h"

using namespace geotb::engine;
using std::chrono::seconds;
using Nanos = std::chrono::nanoseconds;

namespace {

// A triangle whose site 2 has both its links down from 10 s to 30 s.
std::optional<Nanos> cut_site_2(int a, int b, Nanos t) {
  if ((a == 2 || b == 2) && t >= seconds(10) && t < seconds(30)) return Nanos(seconds(10));
  return std::nullopt;
}

TEST(SiteQuorum, ACutSiteIsDroppedAfterTheTimeoutPausesAndIsAdmittedAgain) {
  SiteQuorum q(3, seconds(5), cut_site_2);
  using V = std::vector<int>;
  EXPECT_EQ(q.ask(0, 0, seconds(2)), (V{0, 1, 2}));
  EXPECT_EQ(q.ask(0, 2, seconds(3)), (V{0, 1, 2}));  // decided once: read by the others
  // Cut for 4 s only at 14 s: not yet separated; round 1 still runs with all three (it waits for
  // site 2's message until the links return, as without quorum).
  EXPECT_EQ(q.ask(1, 1, seconds(14)), (V{0, 1, 2}));
  // At 15 s the cut has lasted the timeout: round 2 is decided without site 2.
  EXPECT_EQ(q.ask(2, 0, seconds(15)), (V{0, 1}));
  EXPECT_EQ(q.ask(2, 1, seconds(15)), (V{0, 1}));
  EXPECT_FALSE(q.ask(2, 2, seconds(15)).has_value());  // left out: it pauses
  EXPECT_FALSE(q.has_majority(2, seconds(20)));
  EXPECT_TRUE(q.has_majority(0, seconds(20)));
  // Site 2 alone cannot decide anything, even a round nobody decided yet.
  EXPECT_FALSE(q.ask(5, 2, seconds(20)).has_value());
  EXPECT_EQ(q.ask(3, 1, seconds(25)), (V{0, 1}));
  // The links are back at 30 s: site 2 holds a majority again and asks to join; the first round
  // decided after that (4) takes it in.
  EXPECT_TRUE(q.has_majority(2, seconds(30)));
  q.request_join(2);
  EXPECT_FALSE(q.admitted_at(2).has_value());
  EXPECT_EQ(q.ask(4, 0, seconds(31)), (V{0, 1, 2}));
  EXPECT_EQ(q.admitted_at(2), 4);
  EXPECT_EQ(q.ask(4, 2, seconds(31)), (V{0, 1, 2}));
  const auto d = q.decisions();
  ASSERT_EQ(d.size(), 3u);  // the first decision and the two changes
  EXPECT_EQ(d[0].round, 0);
  EXPECT_EQ(d[1].round, 2);
  EXPECT_EQ(d[1].sites, (V{0, 1}));
  EXPECT_EQ(d[1].at, Nanos(seconds(15)));
  EXPECT_EQ(d[2].round, 4);
  EXPECT_EQ(d[2].sites, (V{0, 1, 2}));
}

// Every worker of site 2 dead at 10 s in a triangle whose links all stay up: separated once the
// timeout has passed (5 s), dropped from the round in flight, and back in the first round decided
// after its restart, with no join. A link cut before the death counts from the earlier instant.
TEST(SiteQuorum, ADeadSiteIsDroppedAfterTheTimeoutAndARestartedOneTakesPartAtOnce) {
  SiteQuorum q(3, seconds(5), [](int, int, Nanos) { return std::optional<Nanos>(); });
  using V = std::vector<int>;
  EXPECT_EQ(q.ask(0, 0, seconds(2)), (V{0, 1, 2}));
  q.site_down(2, seconds(10));
  EXPECT_EQ(q.ask(1, 0, seconds(12)), (V{0, 1, 2}));  // dead for 2 s: still waited for
  EXPECT_FALSE(q.drop(1, 0, 2, Nanos(seconds(15)) - Nanos(1)));
  EXPECT_TRUE(q.drop(1, 0, 2, seconds(15)));  // exactly the timeout: the round goes on without it
  EXPECT_EQ(q.sites_of(1), (V{0, 1}));
  EXPECT_TRUE(q.has_majority(1, seconds(20)));
  EXPECT_EQ(q.ask(2, 1, seconds(20)), (V{0, 1}));
  q.site_up(2);  // restarted with the majority's model
  EXPECT_TRUE(q.has_majority(2, seconds(21)));
  EXPECT_EQ(q.ask(3, 0, seconds(22)), (V{0, 1, 2}));
  EXPECT_FALSE(q.admitted_at(2).has_value());  // a member again, not a joiner waiting for a state
  EXPECT_EQ(q.ask(4, 2, seconds(23)), (V{0, 1, 2}));
  const auto d = q.decisions();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[1].round, 1);
  EXPECT_EQ(d[1].at, Nanos(seconds(15)));
  EXPECT_EQ(d[2].round, 3);

  // Site 1's link to site 2 down since 7 s, site 2 dead since 10 s: separated from site 1 at 12 s
  // (the cut's own timeout), from site 0 at 15 s.
  SiteQuorum c(3, seconds(5), [](int a, int b, Nanos t) -> std::optional<Nanos> {
    if (std::min(a, b) == 1 && std::max(a, b) == 2 && t >= seconds(7)) return Nanos(seconds(7));
    return std::nullopt;
  });
  c.site_down(2, seconds(10));
  EXPECT_EQ(c.ask(0, 1, seconds(13)), (V{0, 1, 2}));  // 1 reaches 2 through 0 until 15 s
  EXPECT_EQ(c.ask(1, 1, seconds(15)), (V{0, 1}));
}

// Left out and not asking to join: a site stays out even once it is reachable again.
TEST(SiteQuorum, ASiteComesBackOnlyThroughAJoin) {
  SiteQuorum q(3, seconds(5), cut_site_2);
  using V = std::vector<int>;
  EXPECT_EQ(q.ask(0, 0, seconds(16)), (V{0, 1}));
  EXPECT_EQ(q.ask(1, 0, seconds(40)), (V{0, 1}));
}

// Two sites: a cut leaves neither side a strict majority of two: both pause until it ends.
TEST(SiteQuorum, TwoSitesBothPauseDuringACut) {
  auto cut = [](int, int, Nanos t) -> std::optional<Nanos> {
    if (t >= seconds(10) && t < seconds(30)) return Nanos(seconds(10));
    return std::nullopt;
  };
  SiteQuorum q(2, seconds(5), cut);
  using V = std::vector<int>;
  EXPECT_EQ(q.ask(0, 0, seconds(1)), (V{0, 1}));
  EXPECT_FALSE(q.ask(1, 0, seconds(20)).has_value());
  EXPECT_FALSE(q.ask(1, 1, seconds(20)).has_value());
  EXPECT_FALSE(q.has_majority(0, seconds(20)));
  EXPECT_EQ(q.ask(1, 1, seconds(30)), (V{0, 1}));  // undecided during the cut: decided once it ends
  EXPECT_EQ(q.decisions().size(), 1u);
}

// Five sites split 3 | 2: the three go on, the two pause.
TEST(SiteQuorum, TheMajoritySideGoesOn) {
  auto split = [](int a, int b, Nanos t) -> std::optional<Nanos> {
    const bool across = (a < 3) != (b < 3);
    if (across && t >= seconds(1)) return Nanos(seconds(1));
    return std::nullopt;
  };
  SiteQuorum q(5, seconds(2), split);
  using V = std::vector<int>;
  EXPECT_FALSE(q.ask(0, 3, seconds(4)).has_value());
  EXPECT_EQ(q.ask(0, 1, seconds(4)), (V{0, 1, 2}));
  EXPECT_FALSE(q.ask(0, 4, seconds(5)).has_value());
}

// The links' states from a topology: the initial `up` of both directions, then the timeline's
// changes of `up` in time order; a pair without a link is never reachable directly.
TEST(SiteQuorum, DownSinceReadsTheTopologysTimeline) {
  geotb::model::Topology t;
  t.dcs = {{"a", 1}, {"b", 1}, {"c", 1}};
  geotb::model::WanLink ab, bc;
  ab.a = 0, ab.b = 1;
  bc.a = 1, bc.b = 2;
  bc.b_to_a.up = false;  // c -> b starts down
  t.wan = {ab, bc};
  geotb::model::ScheduledChange down, up, other;
  down.a = 1, down.b = 0, down.change.at = seconds(20), down.change.up = false;  // given reversed
  up.a = 0, up.b = 1, up.change.at = seconds(50), up.change.up = true;
  other.a = 0, other.b = 1, other.change.at = seconds(30), other.change.rate_bps = 1e9;  // not a cut
  t.timeline = {up, other, down};  // out of order
  const auto f = down_since_of(t);
  EXPECT_FALSE(f(0, 1, seconds(19)).has_value());
  EXPECT_EQ(f(0, 1, seconds(20)), Nanos(seconds(20)));
  EXPECT_EQ(f(1, 0, seconds(49)), Nanos(seconds(20)));
  EXPECT_FALSE(f(0, 1, seconds(50)).has_value());
  EXPECT_EQ(f(1, 2, seconds(0)), Nanos(0));  // down from the start
  ASSERT_TRUE(f(0, 2, seconds(0)).has_value());  // no link: down since long before any timeout
  EXPECT_LT(*f(0, 2, seconds(0)), -Nanos(std::chrono::hours(24 * 365)));
  SiteQuorum q(3, seconds(5), f);
  EXPECT_TRUE(q.has_majority(2, seconds(4)));   // c's link to b down 4 s: not yet separated
  EXPECT_FALSE(q.has_majority(2, seconds(5)));  // 5 s: c reaches nobody (no a-c link)
  EXPECT_TRUE(q.has_majority(0, seconds(5)));   // a and b
}

}  // namespace
