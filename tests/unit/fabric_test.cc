// The in-process fabric and the ring allreduce on top of it.
#include "emulator/inproc/fabric.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/collectives/ring_allreduce.h"
#include "engine/transport/emulated.h"

using namespace geotb;
using namespace std::chrono_literals;

namespace {

emu::FabricConfig two_sites(int per_site, double wan_bps, std::chrono::nanoseconds wan_delay) {
  emu::FabricConfig fc;
  fc.num_sites = 2;
  for (int r = 0; r < 2 * per_site; ++r) fc.site_of.push_back(r / per_site);
  fc.lan.rate_bps = 0;
  fc.lan.delay = 0ns;
  emu::WanLinkSpec w;
  w.a = 0;
  w.b = 1;
  w.a_to_b.rate_bps = w.b_to_a.rate_bps = wan_bps;
  w.a_to_b.delay = w.b_to_a.delay = wan_delay;
  fc.wan.push_back(w);
  return fc;
}

TEST(Fabric, DeliveryTimeIsExactUnderFakeClock) {
  emu::FakeClock clock;
  emu::Fabric f(two_sites(1, 1e9, 15ms), clock);
  f.send(0, 1, 7, std::vector<uint8_t>(1448, 0xab));
  auto m = f.recv(1, 0, 7, 1s);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->size(), 1448u);
  // One segment: 1448 + 52 header + 38 Ethernet overhead = 1538 bytes = 12304 ns at 1 Gbit/s.
  EXPECT_EQ(clock.now(), 15ms + 12304ns);
  const auto st = f.stats(0, 1);
  EXPECT_EQ(st.messages, 1u);
  EXPECT_EQ(st.payload_bytes, 1448u);
  EXPECT_EQ(st.wire_bytes, 1538u);
  EXPECT_EQ(f.wan_total().payload_bytes, 1448u);
}

TEST(Fabric, SameTagIsFifoAndTwoMessagesShareTheSerializer) {
  emu::FakeClock clock;
  emu::Fabric f(two_sites(1, 1e9, 1ms), clock);
  f.send(0, 1, 1, std::vector<uint8_t>(1448, 1));
  f.send(0, 1, 1, std::vector<uint8_t>(1448, 2));
  auto a = f.recv(1, 0, 1, 1s);
  EXPECT_EQ(clock.now(), 1ms + 12304ns);
  auto b = f.recv(1, 0, 1, 1s);
  EXPECT_EQ(clock.now(), 1ms + 2 * 12304ns);  // queued behind the first on the serializer
  EXPECT_EQ((*a)[0], 1);
  EXPECT_EQ((*b)[0], 2);
}

TEST(Fabric, RecvTimesOutAndCloseWakesReceivers) {
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(1, 0, 0ns), clock);
  EXPECT_FALSE(f.recv(1, 0, 99, 20ms).has_value());
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    f.close();
  });
  EXPECT_FALSE(f.recv(1, 0, 99, 10s).has_value());
  t.join();
}

TEST(Fabric, DownLinkMakesSendFailWithTypedError) {
  emu::FakeClock clock;
  auto fc = two_sites(1, 1e9, 1ms);
  fc.wan[0].a_to_b.up = false;
  fc.segments.max_attempts = 3;
  emu::Fabric f(fc, clock);
  EXPECT_THROW(f.send(0, 1, 1, std::vector<uint8_t>(10)), emu::FabricError);
  EXPECT_EQ(f.stats(0, 1).failed_messages, 1u);
  engine::EmulatedTransport t(f, 0, 1s);
  EXPECT_THROW(t.send(1, 2, std::vector<uint8_t>(10)), engine::TransportError);
}

TEST(Fabric, RealClockWaitsAtLeastTheModelledDelay) {
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(1, 0, 20ms), clock);
  const auto t0 = clock.now();
  f.send(0, 1, 1, std::vector<uint8_t>(100));
  ASSERT_TRUE(f.recv(1, 0, 1, 5s).has_value());
  EXPECT_GE(clock.now() - t0, 20ms);
}

class RingAllreduce : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(RingAllreduce, SumsExactlyOnEveryRank) {
  const auto [per_site, n] = GetParam();
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(per_site, 0, 0ns), clock);
  const int p = 2 * per_site;
  std::vector<int> ring;
  for (int r = 0; r < p; ++r) ring.push_back(r);
  std::vector<std::vector<float>> data(static_cast<size_t>(p));
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    data[static_cast<size_t>(r)].resize(n);
    for (size_t i = 0; i < n; ++i) data[static_cast<size_t>(r)][i] = static_cast<float>(r * 1000 + static_cast<int>(i));
    threads.emplace_back([&, r] {
      engine::EmulatedTransport t(f, r, 10s);
      engine::ring_allreduce_sum(t, ring, data[static_cast<size_t>(r)].data(), n, 1 << 20);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < n; ++i)  // integers below 2^24: the float sum is exact in any order
      ASSERT_EQ(data[static_cast<size_t>(r)][i], static_cast<float>(1000 * p * (p - 1) / 2 + p * static_cast<int>(i)))
          << "rank " << r << " element " << i;
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingAllreduce,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(size_t{1}, size_t{5},
                                                                                         size_t{7}, size_t{1000})));

}  // namespace
