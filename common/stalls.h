// Stalls of a polling loop: iterations that took longer than a threshold (the data plane: 1 ms,
// see DataPlane::run). A frame due during a stall leaves up to the stall's length late; a queue
// sized in time (a bandwidth-delay product) overflows when a stall outlasts it.
//
//   count     iterations longer than threshold_ns
//   total_ns  their summed length (the whole iteration, not only the part above the threshold)
//   max_ns    the longest iteration seen (stall or not)
//   share     total_ns / run_ns: the fraction of the run the loop spent stalled
// Verdict (stalls_ok): share <= max_share, by default 1 %: a data plane stalled longer than that
// alone could move a rate by more than the 1 % the fidelity suite holds saturating UDP to.
#pragma once

#include <algorithm>
#include <cstdint>

namespace geotb::emu {

inline constexpr uint64_t kStallThresholdNs = 1000000;
inline constexpr double kMaxStallShare = 0.01;

struct StallCounter {
  uint64_t threshold_ns = kStallThresholdNs;
  uint64_t count = 0, total_ns = 0, max_ns = 0;

  void record(uint64_t iteration_ns) {
    max_ns = std::max(max_ns, iteration_ns);
    if (iteration_ns > threshold_ns) {
      ++count;
      total_ns += iteration_ns;
    }
  }
  /// Adds another loop's counts (several data planes of one measurement).
  void merge(const StallCounter& o) {
    count += o.count;
    total_ns += o.total_ns;
    max_ns = std::max(max_ns, o.max_ns);
  }
};

/// total_ns / run_ns; 0 when run_ns is 0.
inline double stall_share(uint64_t total_ns, uint64_t run_ns) {
  return run_ns ? static_cast<double>(total_ns) / static_cast<double>(run_ns) : 0.0;
}
inline bool stalls_ok(uint64_t total_ns, uint64_t run_ns, double max_share = kMaxStallShare) {
  return stall_share(total_ns, run_ns) <= max_share;
}

}  // namespace geotb::emu
