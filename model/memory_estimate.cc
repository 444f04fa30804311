#include "model/memory_estimate.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace geotb::model {
namespace {
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kBaseBytes = 150 * kMiB;
constexpr double kPerWorkerBytes = 0.9 * kMiB;
constexpr double kPerRingPeerBytes = 8 * 1024;
constexpr double kPerParamBytes = 18 * 4;  // 18 float32 copies
constexpr double kPerLinkBytes = 1.2 * kMiB;
// Analytic intra-DC collectives: no ring messages in flight nor their mailboxes.
constexpr double kAnalyticBaseBytes = 180 * kMiB;
constexpr double kAnalyticPerParamBytes = 13 * 4;  // 13 float32 copies
constexpr double kAnalyticPerLinkBytes = 0.3 * kMiB;
}  // namespace

std::string format_mib(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / kMiB;
  return mib >= 1024 ? fmt::format("{:.1f} GiB", mib / 1024) : fmt::format("{:.0f} MiB", mib);
}

MemoryEstimate estimate_embedded_memory(const MemoryEstimateInput& in) {
  const double dataset = static_cast<double>(in.examples) * static_cast<double>(in.inputs) * 4;
  if (in.analytic_collectives) {
    const double worker = kAnalyticPerParamBytes * static_cast<double>(in.params);
    MemoryEstimate e;
    e.bytes = static_cast<uint64_t>(kAnalyticBaseBytes + dataset + in.workers * worker +
                                    in.dc_pairs * kAnalyticPerLinkBytes);
    e.breakdown = fmt::format(
        "{:g} MiB + dataset {} + {} workers x {} ({:g} x 4 B x {} parameters, analytic collectives) + {} links x {:g} "
        "MiB",
        kAnalyticBaseBytes / kMiB, format_mib(static_cast<uint64_t>(dataset)), in.workers,
        format_mib(static_cast<uint64_t>(worker)), kAnalyticPerParamBytes / 4, in.params, in.dc_pairs,
        kAnalyticPerLinkBytes / kMiB);
    return e;
  }
  const double worker =
      kPerWorkerBytes + kPerRingPeerBytes * in.workers_per_dc + kPerParamBytes * static_cast<double>(in.params);
  const double total = kBaseBytes + dataset + in.workers * worker + in.dc_pairs * kPerLinkBytes;
  MemoryEstimate e;
  e.bytes = static_cast<uint64_t>(total);
  e.breakdown = fmt::format(
      "{:g} MiB + dataset {} + {} workers x {} ({:g} MiB + {:g} KiB x {} per DC + {:g} x 4 B x {} parameters) + {} "
      "links x {:g} MiB",
      kBaseBytes / kMiB, format_mib(static_cast<uint64_t>(dataset)), in.workers,
      format_mib(static_cast<uint64_t>(worker)), kPerWorkerBytes / kMiB, kPerRingPeerBytes / 1024, in.workers_per_dc,
      kPerParamBytes / 4, in.params, in.dc_pairs, kPerLinkBytes / kMiB);
  return e;
}

uint64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string key;
    uint64_t kib = 0;
    if (is >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace geotb::model
