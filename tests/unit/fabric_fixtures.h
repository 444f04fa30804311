// Fixtures shared by the fabric tests (fabric_test.cc, suite unit) and their real-time bounds
// (fabric_timing_test.cc, suite timing): a two-site fabric and a collective run on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "engine/collectives/gloo_ring.h"
#include "engine/transport/emulated.h"

namespace geotb::test {

/// Two sites of `per_site` endpoints each (endpoint r in site r / per_site), an unlimited LAN
/// with no delay, and one symmetric WAN link of `wan_bps` (0: unlimited) and one-way `wan_delay`.
inline emu::FabricConfig two_sites(int per_site, double wan_bps, std::chrono::nanoseconds wan_delay) {
  emu::FabricConfig fc;
  fc.num_sites = 2;
  for (int r = 0; r < 2 * per_site; ++r) fc.site_of.push_back(r / per_site);
  fc.lan.rate_bps = 0;
  fc.lan.delay = std::chrono::nanoseconds{0};
  emu::LinkConfig wan;
  wan.rate_bps = wan_bps;
  wan.delay = wan_delay;
  fc.wan = {{0, 1, wan}, {1, 0, wan}};  // site 0 -> 1, then 1 -> 0
  return fc;
}

using Collective = void (*)(engine::Transport&, const std::vector<int>&, float*, size_t, const engine::TagRange&);

inline void gloo_default(engine::Transport& t, const std::vector<int>& ring, float* d, size_t n,
                         const engine::TagRange& tags) {
  engine::gloo_ring_allreduce_sum(t, ring, d, n, tags);
}

/// Runs `c` on ranks 0..p-1 of `f` (one thread each, ring in rank order) with rank-distinct
/// integer data (rank r, element i: r * 1000 + i); returns the time it took on `clock`.
inline std::chrono::nanoseconds run_collective(emu::Fabric& f, const emu::Clock& clock, int p, size_t n,
                                               Collective c, std::vector<std::vector<float>>& data) {
  std::vector<int> ring;
  for (int r = 0; r < p; ++r) ring.push_back(r);
  data.assign(static_cast<size_t>(p), std::vector<float>(n));
  std::vector<std::thread> threads;
  const auto t0 = clock.now();
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < n; ++i) data[static_cast<size_t>(r)][i] = static_cast<float>(r * 1000 + static_cast<int>(i));
    threads.emplace_back([&, r] {
      engine::EmulatedTransport t(f, r, std::chrono::seconds(10));
      c(t, ring, data[static_cast<size_t>(r)].data(), n, engine::all_tags());
    });
  }
  for (auto& t : threads) t.join();
  return clock.now() - t0;
}

}  // namespace geotb::test
