// Suite `timing`: real-time upper bounds of the ring allreduces over the in-process fabric
// (SteadyClock). Upper bounds on wall time fail on a machine too loaded to schedule a thread for
// tens of milliseconds, so they are kept out of the `unit` suite; the exact parts (sums, wire
// messages and bytes) are in fabric_test.cc.
#include <gtest/gtest.h>
#include <cstdio>

#include "engine/collectives/ring_allreduce.h"
#include "fabric_fixtures.h"

using namespace geotb;
using namespace std::chrono_literals;

namespace {

TEST(GlooRingTiming, EveryWanSegmentWaitsForTheReceiversNotification) {
  // Two ranks D apart, no rate limit. Gloo: each phase's segments leave when the peer's receive
  // notification arrives (D) and land at 2D; the phase ends there: 4D in all. The eager ring
  // needs one one-way delay per step: 2D. Lower bounds are exact (delivery waits for the clock).
  // Upper bounds: kSlack is 5x the largest scheduling overhead measured on the 2-core build
  // machine under load (load average 7.5: 3-17 ms over 4D, 0.4-12 ms over 2D, 6 runs) and below
  // D, so one more one-way delay on the critical path fails.
  constexpr auto D = 100ms;
  constexpr auto kSlack = 80ms;
  emu::SteadyClock clock;
  std::vector<std::vector<float>> data;
  emu::Fabric fg(test::two_sites(1, 0, D), clock);
  const auto tg = test::run_collective(fg, clock, 2, 1000, test::gloo_default, data);
  emu::Fabric fe(test::two_sites(1, 0, D), clock);
  const auto te = test::run_collective(
      fe, clock, 2, 1000,
      [](engine::Transport& t, const std::vector<int>& ring, float* d, size_t n, const engine::TagRange& tags) {
        engine::ring_allreduce_sum(t, ring, d, n, tags);
      },
      data);
  EXPECT_GE(tg, 4 * D);
  EXPECT_LT(tg, 4 * D + kSlack);
  EXPECT_GE(te, 2 * D);
  EXPECT_LT(te, 2 * D + kSlack);
  std::printf("measured: gloo ring %.1f ms (4D = %lld ms), eager ring %.1f ms (2D = %lld ms), slack %lld ms\n",
              std::chrono::duration<double, std::milli>(tg).count(), static_cast<long long>((4 * D).count()),
              std::chrono::duration<double, std::milli>(te).count(), static_cast<long long>((2 * D).count()),
              static_cast<long long>(kSlack.count()));
}

}  // namespace
