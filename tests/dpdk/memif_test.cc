// The data plane on net_memif ports (shared-memory packet interfaces, as a container or VM
// would attach): two memif pairs in one process, the emulator holding the server end of each
// and the test acting as both data-center hosts on the client ends. Frames cross real memif rings
// (copied into and out of shared memory), so this covers a PMD other than net_ring with the same
// exact-time and exact-accounting checks. EAL runs with --no-huge (memif regions are memfd-backed).
#include <rte_bus_vdev.h>

#include <random>

#include "tests/dpdk/dpdk_env.h"

namespace geotb::emu::test {
namespace {

struct MemifPair {
  uint16_t emu = 0;   ///< server end, polled by the data plane
  uint16_t host = 0;  ///< client end, driven by the test
};
std::vector<MemifPair>& pairs() {
  static std::vector<MemifPair> v;
  return v;
}
std::vector<std::string>& sockets() {
  static std::vector<std::string> v;
  return v;
}

class MemifEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string tag = "geotb-memif-" + std::to_string(getpid());
    std::vector<std::string> args{"dpdk_memif_tests", "--no-huge", "--no-pci", "-m", "512", "--file-prefix=" + tag, "-l", "0",
                                  "--log-level=error", "--no-telemetry"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0) << rte_strerror(rte_errno);
    pool() = rte_pktmbuf_pool_create("memif_pool", kPoolSize, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    ASSERT_NE(pool(), nullptr);
    for (int i = 0; i < 2; ++i) {
      const std::string sock = "/tmp/" + tag + "-" + std::to_string(i) + ".sock";
      sockets().push_back(sock);
      MemifPair p;
      for (const char* role : {"server", "client"}) {
        const std::string name = std::string("net_memif_") + role + std::to_string(i);
        const std::string dev_args = std::string("role=") + role + ",id=0,socket-abstract=no,socket=" + sock;
        ASSERT_EQ(rte_vdev_init(name.c_str(), dev_args.c_str()), 0) << name << " " << dev_args;
        uint16_t id = 0;
        ASSERT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &id), 0) << name;
        ASSERT_EQ(setup_port(id, pool()), 0) << name;
        (std::string(role) == "server" ? p.emu : p.host) = id;
      }
      pairs().push_back(p);
    }
    // The control channel (a unix socket, handled by EAL's interrupt thread) connects each
    // client to its server; wait until all four ends say the link is up.
    for (int t = 0; t < 500; ++t) {
      int up = 0;
      for (const MemifPair& p : pairs())
        for (uint16_t id : {p.emu, p.host}) {
          rte_eth_link l{};
          up += rte_eth_link_get_nowait(id, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
        }
      if (up == 4) {
        // A memif receiver in copy mode hands its empty buffers to the sender only when it
        // polls (the client refills the server-to-client ring in its rx burst): until each end
        // has polled once, the other end's tx finds no free slot (the data plane keeps such
        // frames and retries; a host here would lose them). Poll every end once.
        rte_mbuf* b[32];
        for (const MemifPair& p : pairs())
          for (uint16_t id : {p.emu, p.host}) ASSERT_EQ(rte_eth_rx_burst(id, 0, b, 32), 0);
        return;
      }
      usleep(10000);
    }
    FAIL() << "memif links did not come up within 5 s";
  }
  void TearDown() override {
    for (const MemifPair& p : pairs())
      for (uint16_t id : {p.host, p.emu}) rte_eth_dev_stop(id);
    // DPDK 22.11's memif logs "EAL: Error: Invalid memory" while closing a connected pair; the
    // pool check of every test has already passed by then.
    for (const MemifPair& p : pairs())
      for (uint16_t id : {p.host, p.emu}) rte_eth_dev_close(id);
    for (const std::string& s : sockets()) unlink(s.c_str());
    rte_eal_cleanup();
  }
};

DataPlaneConfig memif_config(const LinkConfig& ab, const LinkConfig& ba) {
  DataPlaneConfig c;
  for (int i = 0; i < 2; ++i) c.ports.push_back({"dc" + std::to_string(i), pairs()[static_cast<size_t>(i)].emu, Ipv4Prefix{dc_addr(i, 0), 24}});
  c.links.push_back({0, 1, ab, {}});
  c.links.push_back({1, 0, ba, {}});
  c.pool = pool();
  return c;
}

/// The host of DC `dc` sends; memif tx copies each frame into the ring and frees the mbuf.
void host_send(int dc, std::vector<rte_mbuf*> frames) {
  size_t done = 0;
  for (int tries = 0; done < frames.size() && tries < 1000; ++tries)
    done += rte_eth_tx_burst(pairs()[static_cast<size_t>(dc)].host, 0, frames.data() + done, static_cast<uint16_t>(frames.size() - done));
  ASSERT_EQ(done, frames.size()) << "memif ring full";
}

/// Everything the host of DC `dc` has received so far (caller frees).
std::vector<rte_mbuf*> host_recv(int dc) {
  std::vector<rte_mbuf*> out;
  rte_mbuf* b[64];
  uint16_t n;
  while ((n = rte_eth_rx_burst(pairs()[static_cast<size_t>(dc)].host, 0, b, 64)) > 0) out.insert(out.end(), b, b + n);
  return out;
}
void free_all(std::vector<rte_mbuf*> v) {
  for (rte_mbuf* m : v) rte_pktmbuf_free(m);
}

class MemifDataPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override { avail0_ = rte_mempool_avail_count(pool()); }
  void TearDown() override {
    free_all(host_recv(0));
    free_all(host_recv(1));
    EXPECT_EQ(rte_mempool_avail_count(pool()), avail0_) << "mbufs leaked";
  }
  unsigned avail0_ = 0;
};

TEST_F(MemifDataPlaneTest, ExactReleaseTimesBothDirections) {
  LinkConfig l;
  l.rate_bps = 1e9;
  l.delay = std::chrono::milliseconds(1);
  DataPlane dp(memif_config(l, l));
  // 1476-byte frames: 1500 wire bytes = 12 us each at 1 Gbit/s.
  host_send(0, {make_frame(dc_addr(1), 1476, 1), make_frame(dc_addr(1), 1476, 2), make_frame(dc_addr(1), 1476, 3)});
  host_send(1, {make_frame(dc_addr(0), 1476, 9)});
  EXPECT_EQ(dp.poll_rx(0), 4u);
  for (uint32_t k = 1; k <= 3; ++k) {
    const uint64_t release = 1000000 + 12000ull * k;
    dp.poll_tx(release - 1);
    EXPECT_EQ(host_recv(1).size(), 0u) << k;
    dp.poll_tx(release);
    const auto got = host_recv(1);
    ASSERT_EQ(got.size(), 1u) << k;
    EXPECT_EQ(seq_of(got[0]), k);
    EXPECT_EQ(got[0]->pkt_len, 1476u);
    free_all(got);
    if (k == 1) {  // the reverse direction left at the same instant
      const auto back = host_recv(0);
      ASSERT_EQ(back.size(), 1u);
      EXPECT_EQ(seq_of(back[0]), 9u);
      free_all(back);
    }
  }
  EXPECT_EQ(dp.link_counters(0).lateness_ns.max(), 0u);
  EXPECT_EQ(dp.tx(), 4u);
  EXPECT_TRUE(dp.report()["accounting_ok"].get<bool>());
}

// 10^5 frames of random sizes, offered faster than a 1 Gbit/s link drains them, 1 % loss: every
// frame is accounted for by cause, frames arrive in order and intact, the pool is whole again.
TEST_F(MemifDataPlaneTest, HundredThousandFramesExactAccounting) {
  LinkConfig l;
  l.rate_bps = 1e9;
  l.delay = std::chrono::microseconds(100);
  l.queue_packets = 64;
  l.loss = LossConfig{LossConfig::Kind::kBernoulli, 0.01};
  DataPlane dp(memif_config(l, l));
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> size(64, 1514);
  const uint32_t n = 100000;
  uint64_t now = 0, received = 0, bad = 0;
  int64_t last = -1;
  auto take = [&] {
    for (rte_mbuf* m : host_recv(1)) {
      const uint32_t s = seq_of(m);
      bad += static_cast<int64_t>(s) <= last;  // in order, no duplicates (duplicate_p = 0)
      bad += rte_pktmbuf_mtod(m, rte_ether_hdr*)->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
      last = s;
      ++received;
      rte_pktmbuf_free(m);
    }
  };
  for (uint32_t s = 0; s < n; s += 32) {
    std::vector<rte_mbuf*> f;
    for (uint32_t k = 0; k < 32 && s + k < n; ++k) f.push_back(make_frame(dc_addr(1), size(gen), s + k));
    host_send(0, f);
    now += 10000;  // 32 frames (~25 kB) per 10 us: ~2x the link rate
    while (dp.poll_rx(now) > 0) {
    }
    dp.poll_tx(now);
    take();
  }
  for (int i = 0; i < 200 && dp.in_flight() > 0; ++i) {
    now += 10000;
    dp.poll_tx(now);
    take();
  }
  take();
  dp.finish();
  uint64_t drops = 0;
  for (int c = 0; c < kNumDropCauses; ++c) drops += dp.drops(c);
  EXPECT_EQ(dp.rx(), n);
  EXPECT_EQ(received, dp.tx());
  EXPECT_EQ(dp.rx(), dp.tx() + drops);
  EXPECT_EQ(drops, dp.drops(kCauseQueuePackets) + dp.drops(kCauseLoss));
  EXPECT_GT(dp.drops(kCauseQueuePackets), n / 4);
  EXPECT_GT(dp.drops(kCauseLoss), 0u);
  EXPECT_EQ(dp.drops(kCauseShutdown), 0u);
  EXPECT_EQ(bad, 0u);
  const LinkStats& st = dp.link_model(0)->stats();
  EXPECT_EQ(st.offered, n);
  EXPECT_EQ(st.delivered, dp.tx());
  EXPECT_TRUE(dp.report()["accounting_ok"].get<bool>());
}

}  // namespace
}  // namespace geotb::emu::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new geotb::emu::test::MemifEnvironment);
  return RUN_ALL_TESTS();
}
