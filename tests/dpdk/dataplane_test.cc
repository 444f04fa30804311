// The DPDK data plane on ring-backed ports with time injected: real mbufs through the real rx,
// routing, link model, delay line and tx path; exact release times and exact accounting.
#include <rte_arp.h>

#include <random>
#include <set>

#include "emulator/dpdk/link_spec_parse.h"
#include "emulator/dpdk/netns.h"
#include "emulator/dpdk/proc.h"
#include "emulator/dpdk/tsc_clock.h"
#include "tests/dpdk/dpdk_env.h"
#include "tests/emulator/link_changes.h"

namespace geotb::emu::test {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

void send(int port, const std::vector<rte_mbuf*>& frames) {
  unsigned done = 0;
  while (done < frames.size())
    done += rte_ring_enqueue_burst(ring_ports()[static_cast<size_t>(port)].to_emu, reinterpret_cast<void* const*>(frames.data() + done),
                                   static_cast<unsigned>(frames.size() - done), nullptr);
}

void expect_accounting(const DataPlane& dp) {
  uint64_t drops = 0;
  for (int c = 0; c < kNumDropCauses; ++c) drops += dp.drops(c);
  EXPECT_EQ(dp.rx() + dp.duplicated(), dp.tx() + drops + dp.in_flight());
}

// One 1476-byte frame from DC 0 to DC 1, received at rx_ns: not out at release_ns - 1, out at
// release_ns.
void expect_released_at(DataPlane& dp, uint32_t seq, uint64_t rx_ns, uint64_t release_ns) {
  send(0, {make_frame(dc_addr(1), 1476, seq)});
  dp.poll_rx(rx_ns);
  dp.poll_tx(release_ns - 1);
  EXPECT_EQ(collect()[1].size(), 0u) << "frame " << seq << " left before " << release_ns;
  dp.poll_tx(release_ns);
  EXPECT_EQ(collect()[1].size(), 1u) << "frame " << seq << " not out at " << release_ns;
}

class DataPlaneTest : public ::testing::Test {
 protected:
  void TearDown() override {
    collect();
    EXPECT_EQ(rte_mempool_avail_count(pool()), kPoolSize) << "mbufs leaked";
  }
};

TEST_F(DataPlaneTest, ExactReleaseTimesOnRealMbufs) {
  LinkConfig l;
  l.rate_bps = 1e9;
  l.delay = milliseconds(1);
  DataPlane dp(two_dc_config(l, l));
  // 1476-byte frames: 1462 bytes after the Ethernet header + 38 overhead = 1500 wire bytes = 12 us.
  send(0, {make_frame(dc_addr(1), 1476, 1), make_frame(dc_addr(1), 1476, 2), make_frame(dc_addr(1), 1476, 3)});
  EXPECT_EQ(dp.poll_rx(0), 3u);
  for (int k = 1; k <= 3; ++k) {
    const uint64_t release = 1000000 + 12000ull * static_cast<uint64_t>(k);
    dp.poll_tx(release - 1);
    EXPECT_EQ(collect()[1].size(), 0u) << k;
    dp.poll_tx(release);
    auto out = collect(false);
    ASSERT_EQ(out[1].size(), 1u) << k;
    EXPECT_EQ(seq_of(out[1][0]), static_cast<uint32_t>(k));
    EXPECT_EQ(out[1][0]->pkt_len, 1476u);
    rte_pktmbuf_free(out[1][0]);
  }
  const LinkCounters& c = dp.link_counters(0);
  EXPECT_EQ(c.tx, 3u);
  EXPECT_EQ(c.lateness_ns.max(), 0u);  // polled exactly at each release
  EXPECT_EQ(dp.tx(), 3u);
  expect_accounting(dp);
}

// tx_lead_ns: nothing leaves before a frame is due; then the burst takes every frame due within
// the lead (they leave early, by exactly release - now), and no later frame rides along.
TEST_F(DataPlaneTest, TxLeadBatchesFramesDueWithinTheLead) {
  LinkConfig l;
  l.rate_bps = 1e9;
  l.delay = milliseconds(1);
  DataPlaneConfig cfg = two_dc_config(l, l);
  cfg.tx_lead_ns = 25000;
  DataPlane dp(cfg);
  // 1500 wire bytes each = 12 us: releases at 1.012, 1.024, 1.036, 1.048 ms.
  send(0, {make_frame(dc_addr(1), 1476, 1), make_frame(dc_addr(1), 1476, 2), make_frame(dc_addr(1), 1476, 3),
           make_frame(dc_addr(1), 1476, 4)});
  EXPECT_EQ(dp.poll_rx(0), 4u);
  dp.poll_tx(1011999);
  EXPECT_EQ(collect()[1].size(), 0u);
  dp.poll_tx(1012000);  // due: 1; within 25 us: 2 (12 us early), 3 (24 us early); 4 is 36 us away
  auto out = collect(false);
  ASSERT_EQ(out[1].size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(seq_of(out[1][i]), i + 1);
    rte_pktmbuf_free(out[1][i]);
  }
  dp.poll_tx(1047999);  // frame 4 is within the lead but nothing is due: it waits
  EXPECT_EQ(collect()[1].size(), 0u);
  dp.poll_tx(1048000 + 500);
  EXPECT_EQ(collect()[1].size(), 1u);
  const LinkCounters& c = dp.link_counters(0);
  EXPECT_EQ(c.earliness_ns.count(), 4u);
  EXPECT_EQ(c.earliness_ns.max(), 24000u);
  EXPECT_EQ(c.earliness_ns.min(), 0u);
  EXPECT_EQ(c.earliness_ns.mean(), (12000.0 + 24000.0) / 4);
  EXPECT_EQ(c.lateness_ns.max(), 500u);  // frame 4; early frames count as 0 late
  EXPECT_EQ(c.lateness_ns.mean(), 500.0 / 4);
  expect_accounting(dp);
}

TEST_F(DataPlaneTest, LatenessIsTxTimeMinusRelease) {
  LinkConfig l;
  l.delay = microseconds(10);
  DataPlane dp(two_dc_config(l, l));
  send(1, {make_frame(dc_addr(0), 100, 7)});
  dp.poll_rx(5000);
  dp.poll_tx(15000 + 777);
  EXPECT_EQ(collect()[0].size(), 1u);
  EXPECT_EQ(dp.link_counters(1).lateness_ns.max(), 777u);
}

TEST_F(DataPlaneTest, RoutesByDestinationSubnetAndCountsUnroutable) {
  DataPlaneConfig cfg = two_dc_config(LinkConfig{}, LinkConfig{});
  cfg.ports.push_back({"dc2", ring_ports()[2].port_id, Ipv4Prefix{dc_addr(2, 0), 24}});
  DataPlane dp(cfg);
  rte_mbuf* arp = rte_pktmbuf_alloc(pool());
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(arp, sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr)));
  memset(eth, 0xff, sizeof *eth);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
  auto* ah = reinterpret_cast<rte_arp_hdr*>(eth + 1);
  memset(ah, 0, sizeof *ah);
  ah->arp_data.arp_tip = rte_cpu_to_be_32(dc_addr(1, 9));
  rte_mbuf* v6 = make_frame(dc_addr(1), 100, 0);
  rte_pktmbuf_mtod(v6, rte_ether_hdr*)->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
  send(0, {make_frame(dc_addr(1, 200), 100, 1), arp, make_frame(0xc0a80001, 100, 2) /* 192.168.0.1 */,
           make_frame(dc_addr(0, 5), 100, 3) /* own subnet */, make_frame(dc_addr(2), 100, 4) /* no link 0->2 */, v6});
  dp.poll_rx(0);
  dp.poll_tx(0);
  auto out = collect();
  EXPECT_EQ(out[1].size(), 2u);  // the IPv4 frame and the ARP request
  EXPECT_EQ(out[0].size(), 0u);
  EXPECT_EQ(out[2].size(), 0u);
  EXPECT_EQ(dp.drops(kCauseUnroutable), 3u);
  EXPECT_EQ(dp.drops(kCauseNoLink), 1u);
  EXPECT_EQ(dp.port_counters(0).unroutable, 3u);
  EXPECT_EQ(dp.port_counters(0).no_link, 1u);
  expect_accounting(dp);
}

TEST_F(DataPlaneTest, IoForwardSendsInTheSamePoll) {
  DataPlaneConfig cfg = two_dc_config(LinkConfig{}, LinkConfig{});
  cfg.links[0].model.delay = milliseconds(50);  // ignored in io_forward mode
  cfg.io_forward = true;
  DataPlane dp(cfg);
  std::vector<rte_mbuf*> f;
  for (uint32_t i = 0; i < 100; ++i) f.push_back(make_frame(dc_addr(1), 64 + i, i));
  send(0, f);
  for (int i = 0; i < 4; ++i) {
    dp.poll_rx(1000);
    dp.poll_tx(1000);
  }
  EXPECT_EQ(collect()[1].size(), 100u);
  EXPECT_EQ(dp.link_model(0), nullptr);
  expect_accounting(dp);
}

TEST_F(DataPlaneTest, ScheduledRateChangeAtTheInstant) {
  LinkConfig l;
  l.rate_bps = 1e9;
  DataPlaneConfig cfg = two_dc_config(l, l);
  LinkChange ch;
  ch.at = microseconds(100);
  ch.rate_bps = 2e9;
  cfg.links[0].timeline.push_back(ch);
  DataPlane dp(cfg);
  expect_released_at(dp, 1, 99999, 99999 + 12000);  // old rate: 12 us
  expect_released_at(dp, 2, 200000, 206000);        // new rate: 6 us
  EXPECT_EQ(dp.link_model(0)->stats().changes_applied, 1u);
}

// timeline_on_request (geotb run --net dpdk): nothing changes before start_timeline(origin); then
// every change lands at origin + its instant, exactly; a second request moves nothing.
TEST_F(DataPlaneTest, TimelineOnRequestCountsFromTheRequest) {
  LinkConfig l;
  l.rate_bps = 1e9;
  DataPlaneConfig cfg = two_dc_config(l, l);
  cfg.timeline_on_request = true;
  LinkChange ch;
  ch.at = microseconds(100);
  ch.rate_bps = 2e9;
  cfg.links[0].timeline.push_back(ch);
  DataPlane dp(cfg);
  expect_released_at(dp, 1, 500000, 512000);  // far past 100 us, no request yet: old rate, 12 us
  EXPECT_EQ(dp.link_model(0)->stats().changes_applied, 0u);
  EXPECT_TRUE(dp.start_timeline(600000));   // change due at 700 us
  EXPECT_FALSE(dp.start_timeline(650000));  // only the first request counts
  expect_released_at(dp, 2, 699999, 699999 + 12000);  // still the old rate
  expect_released_at(dp, 3, 800000, 806000);          // new rate: 6 us
  EXPECT_EQ(dp.link_model(0)->stats().changes_applied, 1u);
  const auto rep = dp.report();
  EXPECT_EQ(rep["timeline"]["starts"], "on_request");
  EXPECT_DOUBLE_EQ(rep["timeline"]["origin_s"].get<double>(), (600000.0 - 500000.0) / 1e9);  // from the first poll
  expect_accounting(dp);
}

// Everything at once on random frame sizes: loss, queue overflow, duplication, corruption and
// jitter without reordering. Frames leave in order, every frame is accounted for, and all mbufs
// come back.
TEST_F(DataPlaneTest, AccountingAndOrderUnderLossQueueDuplicationJitter) {
  LinkConfig l;
  l.rate_bps = 1e9;
  l.delay = microseconds(200);
  l.queue_packets = 50;
  l.loss = LossConfig{LossConfig::Kind::kBernoulli, 0.05};
  l.duplicate_p = 0.02;
  l.corrupt_p = 0.01;
  l.jitter = {JitterConfig::Kind::kUniform, microseconds(50)};
  DataPlane dp(two_dc_config(l, l));
  std::mt19937 gen(5);
  std::uniform_int_distribution<uint32_t> size(64, 1514);
  uint64_t now = 0;
  uint32_t last_seq = 0, received = 0;
  bool first = true;
  const uint32_t n = 200000;
  for (uint32_t s = 0; s < n; s += 8) {
    std::vector<rte_mbuf*> f;
    for (uint32_t k = 0; k < 8; ++k) f.push_back(make_frame(dc_addr(1), size(gen), s + k));
    send(0, f);
    now += 8000;  // 8 frames per 8 us, ~1.2x the link rate on average
    dp.poll_rx(now);
    dp.poll_tx(now);
    const auto out = collect(false);
    for (rte_mbuf* m : out[1]) {
      const uint32_t q = seq_of(m);
      EXPECT_TRUE(first || q >= last_seq) << q << " after " << last_seq;  // duplicates repeat a seq
      first = false;
      last_seq = q;
      ++received;
      rte_pktmbuf_free(m);
    }
    if (s % 4096 == 0) expect_accounting(dp);
  }
  for (int i = 0; i < 100; ++i) {
    now += 10000;
    dp.poll_tx(now);
    received += static_cast<uint32_t>(collect()[1].size());
  }
  expect_accounting(dp);
  EXPECT_EQ(dp.in_flight(), 0u);
  EXPECT_EQ(dp.rx(), n);
  EXPECT_EQ(received, dp.tx());
  const LinkStats& st = dp.link_model(0)->stats();
  EXPECT_GT(dp.drops(kCauseQueuePackets), 1000u);
  EXPECT_EQ(dp.drops(kCauseQueuePackets), st.drops[static_cast<int>(Fate::kDropQueuePackets)]);
  // Loss is drawn for frames that got through the queue: binomial bounds.
  const double accepted = static_cast<double>(n - dp.drops(kCauseQueuePackets));
  EXPECT_NEAR(static_cast<double>(dp.drops(kCauseLoss)), 0.05 * accepted, 5 * std::sqrt(accepted * 0.05 * 0.95));
  const double delivered = static_cast<double>(st.delivered);
  EXPECT_NEAR(static_cast<double>(dp.duplicated()), 0.02 * delivered, 5 * std::sqrt(delivered * 0.02 * 0.98));
  EXPECT_NEAR(static_cast<double>(dp.link_counters(0).corrupted), 0.01 * delivered, 5 * std::sqrt(delivered * 0.01 * 0.99));
  EXPECT_EQ(dp.tx(), st.delivered + dp.duplicated());
  dp.finish();
  EXPECT_EQ(dp.drops(kCauseShutdown), 0u);
  EXPECT_TRUE(dp.report()["accounting_ok"].get<bool>());
}

// Link down loses what is in flight (a cut fibre). 1 Gbit/s, 50 us delay, 20 frames offered at 0
// (release 12k + 50 us), outage from 100 to 200 us on d0->d1: frames 1-4 (released by 98 us) are
// delivered, frames 5-20 are dropped as link_down, however late the data plane looks, and never
// leave early across the cut with tx_lead.
DataPlaneConfig cut_config(uint64_t tx_lead_ns) {
  LinkConfig l;
  l.rate_bps = 1e9;
  l.delay = microseconds(50);
  DataPlaneConfig cfg = two_dc_config(l, l);
  cfg.links[0].timeline = {down_at(microseconds(100)), up_at(microseconds(200))};
  cfg.tx_lead_ns = tx_lead_ns;
  return cfg;
}

void offer_twenty(DataPlane& dp) {
  std::vector<rte_mbuf*> f;
  for (uint32_t i = 1; i <= 20; ++i) f.push_back(make_frame(dc_addr(1), 1476, i));
  send(0, f);
  EXPECT_EQ(dp.poll_rx(0), 20u);
}

void expect_cut_outcome(DataPlane& dp, const std::vector<uint32_t>& got) {
  EXPECT_EQ(got, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(dp.drops(kCauseLinkDown), 16u);
  EXPECT_EQ(dp.link_counters(0).lost_in_flight, 16u);
  EXPECT_EQ(dp.in_flight(), 0u);
  const LinkStats& st = dp.link_model(0)->stats();
  EXPECT_EQ(st.delivered, 4u);
  EXPECT_EQ(st.lost_in_flight, 16u);
  EXPECT_EQ(st.drops[static_cast<int>(Fate::kDropLinkDown)], 16u);
  EXPECT_EQ(st.offered, st.delivered + st.total_drops());
  expect_accounting(dp);
}

std::vector<uint32_t> seqs(const std::vector<rte_mbuf*>& v) {
  std::vector<uint32_t> s;
  for (rte_mbuf* m : v) {
    s.push_back(seq_of(m));
    rte_pktmbuf_free(m);
  }
  return s;
}

TEST_F(DataPlaneTest, LinkDownDropsWhatIsInFlight) {
  DataPlane dp(cut_config(0));
  offer_twenty(dp);
  dp.poll_tx(99000);
  std::vector<uint32_t> got = seqs(collect(false)[1]);
  EXPECT_EQ(dp.drops(kCauseLinkDown), 0u);
  EXPECT_EQ(dp.in_flight(), 16u);
  dp.poll_tx(100000);  // the outage begins: 16 frames on the fibre are lost
  const auto more = seqs(collect(false)[1]);
  got.insert(got.end(), more.begin(), more.end());
  expect_cut_outcome(dp, got);
  // Back up at 200 us: an idle serializer, nothing queued behind the lost frames.
  send(0, {make_frame(dc_addr(1), 1476, 21)});
  dp.poll_rx(200000);
  dp.poll_tx(262000 - 1);
  EXPECT_EQ(collect()[1].size(), 0u);
  dp.poll_tx(262000);
  EXPECT_EQ(seqs(collect(false)[1]), (std::vector<uint32_t>{21}));
  EXPECT_EQ(dp.link_model(0)->stats().delivered, 5u);
  expect_accounting(dp);
}

TEST_F(DataPlaneTest, LinkDownLateLookStillCutsAtTheScheduledInstant) {
  DataPlane dp(cut_config(0));
  offer_twenty(dp);
  dp.poll_tx(150000);  // first look 50 us after the cut: frames released by 100 us still arrive
  expect_cut_outcome(dp, seqs(collect(false)[1]));
  EXPECT_EQ(dp.link_counters(0).lateness_ns.max(), 150000u - 62000u);
}

TEST_F(DataPlaneTest, LinkDownTxLeadNeverSendsEarlyAcrossTheCut) {
  DataPlane dp(cut_config(25000));
  offer_twenty(dp);
  dp.poll_tx(90000);  // due: 1-3; within 25 us: 4 (98 us) and 5 (110 us), but 5 is after the cut
  std::vector<uint32_t> got = seqs(collect(false)[1]);
  EXPECT_EQ(got, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(dp.in_flight(), 16u);
  dp.poll_tx(100000);
  expect_cut_outcome(dp, got);
}

// Reordering (heap delay line) and duplicates: the frames delivered are exactly those whose
// release time (from a mirror LinkModel with the same seed and stream) is at or before the cut;
// duplicates are dropped with their original, and the model does not count them as delivered.
TEST_F(DataPlaneTest, LinkDownWithReorderingAndDuplicatesExact) {
  LinkConfig l;
  l.delay = microseconds(100);
  l.jitter = {JitterConfig::Kind::kUniform, microseconds(40)};
  l.reorder = true;
  l.duplicate_p = 0.5;
  DataPlaneConfig cfg = two_dc_config(l, l);
  cfg.links[0].timeline = {down_at(microseconds(150))};
  DataPlane dp(cfg);
  LinkModel mirror(l, RandomStream(cfg.seed, 0));
  std::multiset<uint32_t> expect_got;
  uint64_t expect_lost = 0, expect_lost_originals = 0;
  std::multiset<uint32_t> got;
  for (uint32_t t = 0; t < 150; ++t) {  // one frame per microsecond until the cut
    const Verdict v = mirror.offer(microseconds(t), 86);
    send(0, {make_frame(dc_addr(1), 100, t)});
    dp.poll_rx(t * 1000ull);
    dp.poll_tx(t * 1000ull);
    const auto out = collect(false);
    for (rte_mbuf* m : out[1]) {
      got.insert(seq_of(m));
      rte_pktmbuf_free(m);
    }
    const uint64_t copies = 1 + (v.duplicate ? 1 : 0);
    if (v.release <= microseconds(150)) {
      for (uint64_t k = 0; k < copies; ++k) expect_got.insert(t);
    } else {
      expect_lost += copies;
      ++expect_lost_originals;
    }
  }
  ASSERT_GT(expect_lost, 100u);
  dp.poll_tx(150000);
  dp.poll_tx(1000000);
  const auto rest = collect(false);
  for (rte_mbuf* m : rest[1]) {
    got.insert(seq_of(m));
    rte_pktmbuf_free(m);
  }
  EXPECT_EQ(got, expect_got);
  EXPECT_EQ(dp.drops(kCauseLinkDown), expect_lost);
  EXPECT_EQ(dp.in_flight(), 0u);
  const LinkStats& st = dp.link_model(0)->stats();
  EXPECT_EQ(st.lost_in_flight, expect_lost_originals);
  EXPECT_EQ(st.offered, st.delivered + st.total_drops());
  EXPECT_EQ(dp.tx(), expect_got.size());
  expect_accounting(dp);
}

TEST_F(DataPlaneTest, FinishFreesFramesStillInFlight) {
  LinkConfig l;
  l.delay = milliseconds(10);
  DataPlane dp(two_dc_config(l, l));
  std::vector<rte_mbuf*> f;
  for (uint32_t i = 0; i < 500; ++i) f.push_back(make_frame(dc_addr(1), 200, i));
  send(0, f);
  for (int i = 0; i < 20; ++i) dp.poll_rx(0);
  EXPECT_EQ(dp.in_flight(), 500u);
  EXPECT_LT(rte_mempool_avail_count(pool()), kPoolSize);
  dp.finish();
  EXPECT_EQ(dp.in_flight(), 0u);
  EXPECT_EQ(dp.drops(kCauseShutdown), 500u);
  expect_accounting(dp);
}

TEST_F(DataPlaneTest, ReorderingAllowedDeliversEverything) {
  LinkConfig l;
  l.delay = microseconds(100);
  l.jitter = {JitterConfig::Kind::kUniform, microseconds(80)};
  l.reorder = true;
  DataPlane dp(two_dc_config(l, l));
  uint64_t now = 0;
  int inversions = 0;
  uint32_t last = 0, got = 0;
  for (uint32_t s = 0; s < 20000; s += 4) {
    send(0, {make_frame(dc_addr(1), 100, s), make_frame(dc_addr(1), 100, s + 1), make_frame(dc_addr(1), 100, s + 2),
             make_frame(dc_addr(1), 100, s + 3)});
    now += 1000;
    dp.poll_rx(now);
    dp.poll_tx(now);
    const auto out = collect(false);
    for (rte_mbuf* m : out[1]) {
      inversions += seq_of(m) < last;
      last = seq_of(m);
      ++got;
      rte_pktmbuf_free(m);
    }
  }
  dp.poll_tx(now + 1000000);
  got += static_cast<uint32_t>(collect()[1].size());
  EXPECT_EQ(got, 20000u);
  EXPECT_GT(inversions, 100);
  // In-order release within each poll is not required, but lateness stays bounded by one poll.
  EXPECT_LE(dp.link_counters(0).lateness_ns.max(), 1000000u);
}

// 10^7 frames through an overloaded lossy link: rx = tx + drops by cause exactly, pool intact.
TEST_F(DataPlaneTest, TenMillionFramesExactAccounting) {
  LinkConfig l;
  l.rate_bps = 10e9;  // 64-byte frames: 81.6 ns each; offered every 50 ns -> queue drops
  l.delay = microseconds(20);
  l.queue_packets = 256;
  l.loss = LossConfig{LossConfig::Kind::kBernoulli, 1e-3};
  DataPlaneConfig cfg = two_dc_config(l, l);
  DataPlane dp(cfg);
  const uint32_t n = 10000000;
  rte_mbuf* tmpl = make_frame(dc_addr(1), 64, 0);
  rte_mbuf* burst[32];
  uint64_t now = 0;
  uint64_t received = 0;
  const unsigned avail0 = rte_mempool_avail_count(pool());
  for (uint32_t s = 0; s < n; s += 32) {
    ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool(), burst, 32), 0);
    for (rte_mbuf* m : burst) {
      rte_memcpy(rte_pktmbuf_append(m, 64), rte_pktmbuf_mtod(tmpl, void*), 64);
    }
    ASSERT_EQ(rte_ring_enqueue_burst(ring_ports()[0].to_emu, reinterpret_cast<void**>(burst), 32, nullptr), 32u);
    now += 32 * 50;
    dp.poll_rx(now);
    dp.poll_tx(now);
    void* objs[64];
    unsigned k;
    while ((k = rte_ring_dequeue_burst(ring_ports()[1].from_emu, objs, 64, nullptr)) > 0) {
      received += k;
      rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), k);
    }
  }
  rte_pktmbuf_free(tmpl);
  while (dp.in_flight() > 0) {  // drain, polling every 100 ns like a live loop would
    now += 100;
    dp.poll_tx(now);
  }
  received += collect()[1].size();
  dp.finish();
  EXPECT_EQ(dp.rx(), n);
  EXPECT_EQ(dp.tx(), received);
  uint64_t drops = 0;
  for (int c = 0; c < kNumDropCauses; ++c) drops += dp.drops(c);
  EXPECT_EQ(dp.rx(), dp.tx() + drops);
  EXPECT_EQ(drops, dp.drops(kCauseQueuePackets) + dp.drops(kCauseLoss));
  EXPECT_GT(dp.drops(kCauseQueuePackets), n / 10);
  EXPECT_GT(dp.drops(kCauseLoss), 0u);
  EXPECT_EQ(rte_mempool_avail_count(pool()), avail0 + 1);  // + the template
  const LinkCounters& c = dp.link_counters(0);
  // Saturated: frames leave at the link rate (wire bits / time between first and last frame),
  // less the 0.1 % lost on the path after using the serializer.
  const double achieved = static_cast<double>(c.wire_bytes_after_first) * 8 / static_cast<double>(c.last_tx_ns - c.first_tx_ns);
  EXPECT_NEAR(achieved, 10.0 * (1 - 1e-3), 0.005);  // Gbit/s: bits per ns
  const double busy = static_cast<double>(c.busy_wire_bytes) * 8 / static_cast<double>(c.busy_ns);
  EXPECT_NEAR(busy, 10.0 * (1 - 1e-3), 0.005);
  RecordProperty("rx", std::to_string(dp.rx()));
  RecordProperty("tx", std::to_string(dp.tx()));
  RecordProperty("received", std::to_string(received));
  RecordProperty("drops_total", std::to_string(drops));
  RecordProperty("drops_queue_packets", std::to_string(dp.drops(kCauseQueuePackets)));
  RecordProperty("drops_loss", std::to_string(dp.drops(kCauseLoss)));
  RecordProperty("pool_avail_start", std::to_string(avail0));
  RecordProperty("pool_avail_end_less_template", std::to_string(rte_mempool_avail_count(pool()) - 1));
}

// The data plane's clock keeps real time: over 300 ms it agrees with CLOCK_MONOTONIC to 1e-4.
// With DPDK's nominal TSC rate it was 1.9e-3 slow on the build machine's KVM guest.
TEST(TscClockTest, TracksClockMonotonic) {
  const TscClock clk(std::chrono::milliseconds(100));
  auto mono_ns = [] {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
  };
  const double m0 = mono_ns(), c0 = static_cast<double>(clk.now_ns());
  usleep(300000);
  const double m1 = mono_ns(), c1 = static_cast<double>(clk.now_ns());
  EXPECT_NEAR((c1 - c0) / (m1 - m0), 1.0, 1e-4) << "measured " << clk.hz() << " Hz, DPDK nominal " << TscClock::nominal_hz();
  RecordProperty("tsc_hz_measured", std::to_string(clk.hz()));
  RecordProperty("tsc_hz_nominal", std::to_string(TscClock::nominal_hz()));
}

TEST(DataPlaneConfigTest, ValidationNamesFieldAndValue) {
  DataPlaneConfig c = two_dc_config(LinkConfig{}, LinkConfig{});
  c.links[1].dst = 0;
  c.links[1].src = 0;
  EXPECT_NE(DataPlane::validate(c).find("links[1].dst: 0"), std::string::npos) << DataPlane::validate(c);
  c = two_dc_config(LinkConfig{}, LinkConfig{});
  c.burst = 100;
  EXPECT_NE(DataPlane::validate(c).find("burst: 100"), std::string::npos);
  c = two_dc_config(LinkConfig{}, LinkConfig{});
  c.links[0].model.loss = LossConfig{LossConfig::Kind::kBernoulli, 2};
  EXPECT_NE(DataPlane::validate(c).find("links[0].loss.p: 2"), std::string::npos) << DataPlane::validate(c);
  EXPECT_THROW(DataPlane{c}, std::invalid_argument);
  c = two_dc_config(LinkConfig{}, LinkConfig{});
  c.ports[1].port_id = 999;
  EXPECT_NE(DataPlane::validate(c).find("ports[1].port_id: 999"), std::string::npos);
}

TEST(LinkSpecParseTest, TextRoundTripsExactly) {
  LinkConfig c;
  c.rate_bps = 1234567890.123;
  c.delay = Nanos{15000001};
  c.queue_bytes = 3750000;
  c.queue_packets = 77;
  c.overhead_bytes = 24;
  c.jitter = {JitterConfig::Kind::kNormal, Nanos{12345}};
  c.reorder = true;
  c.loss = LossConfig{LossConfig::Kind::kGilbertElliott, 0, 0.0123, 0.25, 1e-12, 0.75};
  c.duplicate_p = 1e-5;
  c.corrupt_p = 3e-7;
  std::vector<LinkSpec> links;
  parse_link_arg("a>b:" + link_spec_text(c), {"a", "b"}, links);
  ASSERT_EQ(links.size(), 1u);
  const LinkConfig& d = links[0].model;
  EXPECT_EQ(d.rate_bps, c.rate_bps);
  EXPECT_EQ(d.delay, c.delay);
  EXPECT_EQ(d.queue_bytes, c.queue_bytes);
  EXPECT_EQ(d.queue_packets, c.queue_packets);
  EXPECT_EQ(d.overhead_bytes, c.overhead_bytes);
  EXPECT_EQ(d.jitter.kind, c.jitter.kind);
  EXPECT_EQ(d.jitter.amount, c.jitter.amount);
  EXPECT_EQ(d.reorder, c.reorder);
  EXPECT_EQ(d.loss.kind, c.loss.kind);
  EXPECT_EQ(d.loss.p_good_to_bad, c.loss.p_good_to_bad);
  EXPECT_EQ(d.loss.loss_good, c.loss.loss_good);
  EXPECT_EQ(d.loss.loss_bad, c.loss.loss_bad);
  EXPECT_EQ(d.duplicate_p, c.duplicate_p);
  EXPECT_EQ(d.corrupt_p, c.corrupt_p);
  LinkChange ch;
  ch.at = Nanos{40000000000};
  ch.rate_bps = 5e8;
  ch.loss = LossConfig{LossConfig::Kind::kBernoulli, 1e-4};
  ch.up = false;
  parse_change_arg(change_spec_text(ch) + ",link=a>b", {"a", "b"}, links);
  const LinkChange& e = links[0].timeline.at(0);
  EXPECT_EQ(e.at, ch.at);
  EXPECT_EQ(*e.rate_bps, 5e8);
  EXPECT_EQ(e.loss->p, 1e-4);
  EXPECT_FALSE(*e.up);
  EXPECT_FALSE(e.delay.has_value());
}

TEST(LinkSpecParseTest, PortsLinksChanges) {
  const PortArg p = parse_port_arg("beijing=net_af_packet0,10.77.3.0/24");
  EXPECT_EQ(p.dc, "beijing");
  EXPECT_EQ(p.device, "net_af_packet0");
  EXPECT_EQ(p.subnet.addr, dc_addr(3, 0));
  EXPECT_EQ(p.subnet.len, 24);
  std::vector<LinkSpec> links;
  parse_link_arg("a<>b:rate=1Gbps,delay=15ms,loss=1e-4,queue_packets=100,ge=0.01/0.25/0/1", {"a", "b"}, links);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[1].src, 1);
  EXPECT_EQ(links[0].model.rate_bps, 1e9);
  EXPECT_EQ(links[0].model.delay, milliseconds(15));
  EXPECT_EQ(links[0].model.loss.kind, LossConfig::Kind::kGilbertElliott);  // the later key wins
  EXPECT_EQ(links[0].model.queue_packets, 100u);
  parse_change_arg("at=10s,link=a>b,rate=500Mbps,up=0", {"a", "b"}, links);
  ASSERT_EQ(links[0].timeline.size(), 1u);
  EXPECT_EQ(links[0].timeline[0].at, std::chrono::seconds(10));
  EXPECT_EQ(*links[0].timeline[0].rate_bps, 5e8);
  EXPECT_FALSE(*links[0].timeline[0].up);
  EXPECT_TRUE(links[1].timeline.empty());
  EXPECT_THROW(parse_link_arg("a>c:rate=1Gbps", {"a", "b"}, links), std::invalid_argument);
  EXPECT_THROW(parse_link_arg("a>b:rate=1Gbs", {"a", "b"}, links), std::invalid_argument);
  EXPECT_THROW(parse_link_arg("a>b:delay=15", {"a", "b"}, links), std::invalid_argument);
  EXPECT_THROW(parse_link_arg("a>b:loss=1.5", {"a", "b"}, links), std::invalid_argument);
  try {
    parse_link_arg("a>b:rate=fast", {"a", "b"}, links);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rate"), std::string::npos) << e.what();
  }
}

// The emulator's command line for a topology: one --link per directed link, in order, the
// socket buffers sized from each link and its reverse; a link without a way back is refused.
TEST(NetTopologyTest, EmulatorCommandHasOneLinkPerDirection) {
  NetTopology t;
  t.prefix = "gtbt";
  t.dcs = {"a", "b"};
  LinkConfig there, back;
  there.rate_bps = 1e9;
  there.delay = milliseconds(15);
  back.rate_bps = 2e8;
  back.delay = milliseconds(25);
  t.wan = {{0, 1, there}, {1, 0, back}};
  t.timeline = {{0, 1, down_at(milliseconds(3000))}};
  const NetLayout L = net_layout(t);
  EXPECT_EQ(L.socket_buffer_bytes, 4 * 1000000000ull * 40 / 1000 / 8);  // 4 x 1 Gbit/s x 40 ms
  const std::vector<std::string> argv = emulator_command(t, L, "geotb-emulate", "/tmp/x.json", 0, "gtbt-emu");
  std::vector<std::string> links, changes;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--link") links.push_back(argv[i + 1]);
    if (argv[i] == "--change") changes.push_back(argv[i + 1]);
  }
  EXPECT_EQ(links, (std::vector<std::string>{"d0>d1:rate=1000000000bps,delay=15000000ns",
                                             "d1>d0:rate=200000000bps,delay=25000000ns"}));
  EXPECT_EQ(changes, (std::vector<std::string>{"at=3000000000ns,up=0,link=d0<>d1"}));
  t.wan.pop_back();
  EXPECT_THROW(net_layout(t), std::invalid_argument);
}

// Helper programs run to completion: stdout and stderr captured, exit status, the timeout's
// SIGKILL, a program that cannot start.
TEST(ProcTest, RunCmdCapturesOutputStatusAndTimeout) {
  const CmdResult ok = run_cmd({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(ok.status, 3);
  EXPECT_EQ(ok.output, "out\nerr\n");
  const CmdResult slow = run_cmd({"/bin/sh", "-c", "exec sleep 30"}, milliseconds(100));
  EXPECT_EQ(slow.status, 128 + SIGKILL);
  const CmdResult missing = run_cmd({"/nonexistent/geotb-tool"});
  EXPECT_EQ(missing.status, 127);
  EXPECT_NE(missing.output.find("No such file"), std::string::npos) << missing.output;
  EXPECT_THROW(run_checked({"/bin/sh", "-c", "exit 1"}), std::runtime_error);
}

}  // namespace
}  // namespace geotb::emu::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new geotb::emu::test::DpdkEnvironment);
  return RUN_ALL_TESTS();
}
