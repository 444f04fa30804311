// Shared test environment for the dpdk suite: EAL initialised once per process (no hugepages,
// no PCI, a file prefix unique to the process), an mbuf pool, and ring-backed ports whose other
// ends the test drives directly (it is every data center's host at once).
#pragma once

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/dpdk/dataplane.h"

namespace geotb::emu::test {

struct RingPort {
  uint16_t port_id = 0;
  rte_ring* to_emu = nullptr;    ///< the test enqueues frames the DC sends
  rte_ring* from_emu = nullptr;  ///< the test dequeues frames the emulator delivers to the DC
};

inline rte_mempool*& pool() {
  static rte_mempool* p = nullptr;
  return p;
}
inline std::vector<RingPort>& ring_ports() {
  static std::vector<RingPort> v;
  return v;
}
constexpr unsigned kPoolSize = 16383;
constexpr int kNumPorts = 3;

class DpdkEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string prefix = "--file-prefix=geotb-dptest-" + std::to_string(getpid());
    std::vector<std::string> args{"dpdk_tests", "--no-huge", "--no-pci", "-m", "512", prefix, "-l", "0",
                                  "--log-level=error", "--no-telemetry"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0) << rte_strerror(rte_errno);
    pool() = rte_pktmbuf_pool_create("test_pool", kPoolSize, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    ASSERT_NE(pool(), nullptr);
    for (int i = 0; i < kNumPorts; ++i) {
      RingPort rp;
      const std::string n = std::to_string(i);
      rp.to_emu = rte_ring_create(("to_emu" + n).c_str(), 32768, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
      rp.from_emu = rte_ring_create(("from_emu" + n).c_str(), 32768, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
      ASSERT_TRUE(rp.to_emu && rp.from_emu);
      const int id = rte_eth_from_rings(("ring_dc" + n).c_str(), &rp.to_emu, 1, &rp.from_emu, 1, 0);
      ASSERT_GE(id, 0);
      rp.port_id = static_cast<uint16_t>(id);
      ASSERT_EQ(setup_port(rp.port_id, pool()), 0);
      ring_ports().push_back(rp);
    }
  }
  void TearDown() override {
    for (auto& rp : ring_ports()) {
      rte_eth_dev_stop(rp.port_id);
      rte_eth_dev_close(rp.port_id);
    }
    rte_eal_cleanup();
  }
};

/// 10.77.<dc>.0/24 behind port <dc>.
inline uint32_t dc_addr(int dc, int host = 1) { return (10u << 24) | (77u << 16) | (static_cast<uint32_t>(dc) << 8) | static_cast<uint32_t>(host); }

/// An IPv4/UDP-less frame of `l2_bytes` (Ethernet header included) to `dst`, carrying `seq`.
inline rte_mbuf* make_frame(uint32_t dst, uint32_t l2_bytes, uint32_t seq) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool());
  if (!m) return nullptr;
  char* p = rte_pktmbuf_append(m, static_cast<uint16_t>(l2_bytes));
  if (!p) { rte_pktmbuf_free(m); return nullptr; }
  auto* eth = reinterpret_cast<rte_ether_hdr*>(p);
  memset(eth, 0, sizeof *eth);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  memset(ip, 0, sizeof *ip);
  ip->version_ihl = 0x45;
  ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(l2_bytes - sizeof(rte_ether_hdr)));
  ip->dst_addr = rte_cpu_to_be_32(dst);
  ip->packet_id = 0;
  memcpy(reinterpret_cast<char*>(ip + 1), &seq, sizeof seq);
  return m;
}
inline uint32_t seq_of(rte_mbuf* m) {
  uint32_t s;
  memcpy(&s, rte_pktmbuf_mtod_offset(m, char*, sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr)), sizeof s);
  return s;
}

/// Drains every port's from_emu ring; frees the frames; returns how many per port.
inline std::vector<std::vector<rte_mbuf*>> collect(bool free_them = true) {
  std::vector<std::vector<rte_mbuf*>> out(ring_ports().size());
  for (size_t i = 0; i < ring_ports().size(); ++i) {
    void* objs[512];
    unsigned n;
    while ((n = rte_ring_dequeue_burst(ring_ports()[i].from_emu, objs, 512, nullptr)) > 0)
      for (unsigned k = 0; k < n; ++k) out[i].push_back(static_cast<rte_mbuf*>(objs[k]));
  }
  if (free_them)
    for (auto& v : out)
      for (rte_mbuf* m : v) rte_pktmbuf_free(m);
  return out;
}

inline DataPlaneConfig two_dc_config(const LinkConfig& ab, const LinkConfig& ba) {
  DataPlaneConfig c;
  for (int i = 0; i < 2; ++i) c.ports.push_back({"dc" + std::to_string(i), ring_ports()[static_cast<size_t>(i)].port_id, Ipv4Prefix{dc_addr(i, 0), 24}});
  c.links.push_back({0, 1, ab, {}});
  c.links.push_back({1, 0, ba, {}});
  c.pool = pool();
  return c;
}

}  // namespace geotb::emu::test
