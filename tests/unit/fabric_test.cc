// The in-process fabric and the ring allreduces (eager and Gloo's protocol) on top of it.
#include "emulator/inproc/fabric.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/transport/emulated.h"
#include "fabric_fixtures.h"

using namespace geotb;
using namespace std::chrono_literals;
using geotb::test::gloo_default;
using geotb::test::run_collective;
using geotb::test::two_sites;

namespace {

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

TEST(Fabric, RecvOfAMessageNeverSentTimesOut) {
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(1, 0, 0ns), clock);
  EXPECT_FALSE(f.recv(1, 0, 99, 20ms).has_value());
  EXPECT_FALSE(f.closed());
  EXPECT_EQ(f.waiting_receivers(), 0);
}

TEST(Fabric, CloseWakesABlockedReceiver) {
  // The receiver waits with a 20 s timeout; close() comes only once the fabric counts it as
  // blocked (under the fabric's lock, so it is asleep on its mailbox, not about to enter recv).
  // Woken by close(), recv returns at once; a close() that did not notify would leave it asleep
  // until its timeout, and the 10 s deadline below fails the test. The deadline only catches a
  // receiver that was never woken: the wake-up itself takes microseconds.
  constexpr auto kRecvTimeout = 20s;
  constexpr auto kDeadline = 10s;
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(1, 0, 0ns), clock);
  auto received = std::async(std::launch::async, [&] { return f.recv(1, 0, 99, kRecvTimeout); });
  const auto give_up = std::chrono::steady_clock::now() + kDeadline;
  while (f.waiting_receivers() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  ASSERT_EQ(f.waiting_receivers(), 1) << "the receiver never blocked in recv";
  f.close();
  ASSERT_EQ(received.wait_for(kDeadline), std::future_status::ready) << "close() did not wake the receiver";
  EXPECT_FALSE(received.get().has_value());
  EXPECT_EQ(f.waiting_receivers(), 0);
  EXPECT_TRUE(f.closed());
}

// A link that stays down: the message fails its connection after max_attempts transmissions (the
// TCP timer: RTO 202 ms from the handshake's 2 ms sample, doubling: tries at 0, 202, 606 ms), as a
// socket times out: the receiver's recv throws, and so does the sender's next send on it.
TEST(Fabric, DownLinkMakesRecvAndTheNextSendFailWithTypedError) {
  emu::FakeClock clock;
  auto fc = two_sites(1, 1e9, 1ms);
  fc.wan[0].config.up = false;  // 0 -> 1
  fc.segments.max_attempts = 3;
  emu::Fabric f(fc, clock);
  f.send(0, 1, 1, std::vector<uint8_t>(10));
  EXPECT_THROW(f.recv(1, 0, 1, 1s), emu::FabricError);
  EXPECT_EQ(clock.now(), 202ms + 404ms + 808ms);
  EXPECT_EQ(f.stats(0, 1).failed_messages, 1u);
  engine::EmulatedTransport t(f, 0, 1s);
  EXPECT_THROW(t.send(1, 2, std::vector<uint8_t>(10)), engine::TransportError);
  // The connection starts afresh: the next message goes (and fails again, the link being down).
  EXPECT_NO_THROW(t.send(1, 2, std::vector<uint8_t>(10)));
}

// The window-less model settles a message when it is sent: the send itself fails.
TEST(Fabric, DownLinkMakesAWindowlessSendFail) {
  emu::FakeClock clock;
  auto fc = two_sites(1, 1e9, 1ms);
  fc.wan[0].config.up = false;  // 0 -> 1
  fc.segments.max_attempts = 3;
  fc.segments.tcp = false;
  emu::Fabric f(fc, clock);
  EXPECT_THROW(f.send(0, 1, 1, std::vector<uint8_t>(10)), emu::FabricError);
  EXPECT_EQ(f.stats(0, 1).failed_messages, 1u);
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
      engine::ring_allreduce_sum(t, ring, data[static_cast<size_t>(r)].data(), n, engine::all_tags());
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

// Gloo's ring protocol: exact sums, Gloo's segment layout, the rendezvous' wire traffic and its
// cost in one-way delays.

void gloo_tiny_segments(engine::Transport& t, const std::vector<int>& ring, float* d, size_t n,
                        const engine::TagRange& tags) {
  engine::GlooRingOptions o;
  o.max_segment_bytes = 12;  // 3 floats: many segments per rank (Gloo's own test hook)
  engine::gloo_ring_allreduce_sum(t, ring, d, n, tags, o);
}

class GlooRing : public ::testing::TestWithParam<std::tuple<int, size_t, bool>> {};

TEST_P(GlooRing, SumsExactlyOnEveryRank) {
  const auto [per_site, n, tiny] = GetParam();
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(per_site, 0, 0ns), clock);
  const int p = 2 * per_site;
  std::vector<std::vector<float>> data;
  run_collective(f, clock, p, n, tiny ? gloo_tiny_segments : gloo_default, data);
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < n; ++i)  // integers below 2^24: the float sum is exact in any order
      ASSERT_EQ(data[static_cast<size_t>(r)][i], static_cast<float>(1000 * p * (p - 1) / 2 + p * static_cast<int>(i)))
          << "rank " << r << " element " << i;
}

INSTANTIATE_TEST_SUITE_P(Sizes, GlooRing,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Values(size_t{1}, size_t{5}, size_t{7}, size_t{1000}),
                                            ::testing::Bool()));

TEST(GlooRingLayout, MatchesGloosFormula) {
  // 784-64-10 MLP (50,890 floats) on 8 ranks: ceil(203560 / 16) = 12723 -> 12724 (x4), 16 segments.
  auto L = engine::gloo_ring_layout(50890 * 4, 8);
  EXPECT_EQ(L.segment_bytes, 12724u);
  EXPECT_EQ(L.num_segments, 16u);
  EXPECT_EQ(L.segments_per_rank, 2u);
  EXPECT_EQ(L.iterations_per_phase, 16u);
  // 64 MiB on 4 ranks: capped at 1 MiB segments, 64 of them, 16 per rank.
  L = engine::gloo_ring_layout(64u << 20, 4);
  EXPECT_EQ(L.segment_bytes, 1u << 20);
  EXPECT_EQ(L.num_segments, 64u);
  EXPECT_EQ(L.segments_per_rank, 16u);
  EXPECT_EQ(L.iterations_per_phase, 50u);
  // One float on 3 ranks: minimum 2P segments, most of them empty.
  L = engine::gloo_ring_layout(4, 3);
  EXPECT_EQ(L.segment_bytes, 4u);
  EXPECT_EQ(L.num_segments, 6u);
  EXPECT_EQ(L.iterations_per_phase, 6u);
}

TEST(GlooRing, WanTrafficIsTheRendezvousProtocolExactly) {
  emu::SteadyClock clock;
  emu::Fabric f(two_sites(1, 0, 0ns), clock);
  std::vector<std::vector<float>> data;
  run_collective(f, clock, 2, 1000, gloo_default, data);
  // P = 2, 4000 bytes: 4 segments of 1000 bytes; per phase each rank posts 2 receives (a 48-byte
  // NOTIFY_RECV_READY each) and 2 sends (48-byte preamble + 1000 bytes each); 2 phases, 2 ranks.
  const auto w = f.wan_total();
  EXPECT_EQ(w.messages, 16u);
  EXPECT_EQ(w.payload_bytes, 2u * 2u * (2u * 48u + 2u * (48u + 1000u)));
}

TEST(GlooRing, AFailedWanSendSurfacesAsTheTypedCauseOnTheSendingRank) {
  emu::SteadyClock clock;
  emu::FabricConfig fc = two_sites(1, 0, 1ms);
  fc.wan[0].config.up = fc.wan[1].config.up = false;
  fc.segments.min_rto = 2ms;
  fc.segments.max_attempts = 2;
  emu::Fabric f(fc, clock);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      engine::EmulatedTransport t(f, r, 10s);
      std::vector<float> d(100, 1.0f);
      try {
        engine::gloo_ring_allreduce_sum(t, {0, 1}, d.data(), d.size(), engine::all_tags());
      } catch (const engine::TransportError& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  // Each rank's first act is a WAN notification: at least one fails as undeliverable, and the
  // failure wakes the other rank (the sender closes the transport): nobody waits for the 10 s
  // receive timeout, whose error says "no message ... within 10000 ms".
  EXPECT_TRUE(errors[0].find("undeliverable") != std::string::npos ||
              errors[1].find("undeliverable") != std::string::npos)
      << errors[0] << " | " << errors[1];
  for (const auto& e : errors) EXPECT_EQ(e.find(" within "), std::string::npos) << "timed out: " << e;
  EXPECT_FALSE(errors[0].empty());
  EXPECT_FALSE(errors[1].empty());
}

}  // namespace
