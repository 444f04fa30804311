// Routing between DC ports by destination IPv4 subnet. IPv4 frames go by destination address,
// ARP frames by target protocol address (so neighbour discovery crosses the same emulated link
// as the traffic that follows it). Everything else is unroutable.
#pragma once

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

namespace geotb::emu {

struct Ipv4Prefix {
  uint32_t addr = 0;    ///< host byte order
  uint8_t len = 0;      ///< prefix length in bits, 0..32
  uint32_t mask() const { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }
  bool contains(uint32_t a) const { return (a & mask()) == (addr & mask()); }
};

class RouteTable {
 public:
  static constexpr int kNoRoute = -1;
  void add(Ipv4Prefix p, int port_index) { routes_.push_back({p, port_index}); }
  /// Longest-prefix match; kNoRoute if none.
  int lookup(uint32_t dst) const {
    int best = kNoRoute, best_len = -1;
    for (const auto& r : routes_)
      if (r.prefix.contains(dst) && r.prefix.len > best_len) best = r.port, best_len = r.prefix.len;
    return best;
  }
  /// Destination port index of a frame, or kNoRoute.
  int classify(const rte_mbuf* m) const {
    if (m->data_len < sizeof(rte_ether_hdr)) return kNoRoute;
    const auto* eth = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
    const uint16_t type = rte_be_to_cpu_16(eth->ether_type);
    if (type == RTE_ETHER_TYPE_IPV4 && m->data_len >= sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr)) {
      const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
      return lookup(rte_be_to_cpu_32(ip->dst_addr));
    }
    if (type == RTE_ETHER_TYPE_ARP && m->data_len >= sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr)) {
      const auto* arp = reinterpret_cast<const rte_arp_hdr*>(eth + 1);
      return lookup(rte_be_to_cpu_32(arp->arp_data.arp_tip));
    }
    return kNoRoute;
  }

 private:
  struct Route { Ipv4Prefix prefix; int port; };
  std::vector<Route> routes_;
};

}  // namespace geotb::emu
