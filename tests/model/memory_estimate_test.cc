// model/memory_estimate.h: the formula, exactly, on crafted inputs.
#include <gtest/gtest.h>

#include "model/memory_estimate.h"

namespace geotb::model {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TEST(MemoryEstimate, TheFormulaExactly) {
  // 4 x 8 workers of the 784-32-10 MLP (25,450 parameters), 6 WAN links, 16,000 + 1,000 examples.
  const MemoryEstimate e = estimate_embedded_memory({.workers = 32, .workers_per_dc = 8, .dc_pairs = 6,
                                                     .params = 25450, .examples = 17000, .inputs = 784});
  const double want =
      150.0 * kMiB + 17000.0 * 784 * 4 + 32 * (0.9 * kMiB + 8 * 8192.0 + 72.0 * 25450) + 6 * 1.2 * kMiB;
  EXPECT_EQ(e.bytes, static_cast<uint64_t>(want));
  EXPECT_EQ(e.breakdown,
            "150 MiB + dataset 51 MiB + 32 workers x 3 MiB (0.9 MiB + 8 KiB x 8 per DC + 18 x 4 B x 25450 parameters) "
            "+ 6 links x 1.2 MiB");
}

TEST(MemoryEstimate, GrowsWithWorkersParametersAndLinks) {
  const MemoryEstimateInput base{.workers = 16, .workers_per_dc = 8, .dc_pairs = 1, .params = 1000000,
                                 .examples = 0, .inputs = 784};
  const uint64_t b = estimate_embedded_memory(base).bytes;
  MemoryEstimateInput more = base;
  more.workers = 17;
  EXPECT_NEAR(static_cast<double>(estimate_embedded_memory(more).bytes - b), 0.9 * kMiB + 8 * 8192.0 + 72000000.0, 1.0);
  more = base;
  more.workers_per_dc = 9;
  EXPECT_NEAR(static_cast<double>(estimate_embedded_memory(more).bytes - b), 16 * 8192.0, 1.0);
  more = base;
  more.params = 1000001;
  EXPECT_EQ(estimate_embedded_memory(more).bytes - b, 16u * 72);
  more = base;
  more.dc_pairs = 2;
  EXPECT_NEAR(static_cast<double>(estimate_embedded_memory(more).bytes - b), 1.2 * kMiB, 1.0);
}

TEST(MemoryEstimate, AnalyticCollectivesHoldNoRingMessages) {
  // 16 x 64 workers of the 784-32-10 MLP, 120 WAN links (1,444 MiB measured, 1,559 MiB estimated).
  const MemoryEstimate e = estimate_embedded_memory({.workers = 1024, .workers_per_dc = 64, .dc_pairs = 120,
                                                     .params = 25450, .examples = 17000, .inputs = 784,
                                                     .analytic_collectives = true});
  const double want = 180.0 * kMiB + 17000.0 * 784 * 4 + 1024 * 52.0 * 25450 + 120 * 0.3 * kMiB;
  EXPECT_EQ(e.bytes, static_cast<uint64_t>(want));
  EXPECT_EQ(e.breakdown,
            "180 MiB + dataset 51 MiB + 1024 workers x 1 MiB (13 x 4 B x 25450 parameters, analytic collectives) + "
            "120 links x 0.3 MiB");
  EXPECT_EQ(format_mib(e.bytes), "1.5 GiB");
}

TEST(MemoryEstimate, FormatsMiBAndGiB) {
  EXPECT_EQ(format_mib(296 * kMiB), "296 MiB");
  EXPECT_EQ(format_mib(2048 * kMiB + 512 * kMiB), "2.5 GiB");
}

TEST(MemoryEstimate, ReadsMemAvailable) {
  EXPECT_GT(available_memory_bytes(), 0u);  // Linux: /proc/meminfo has it
}

}  // namespace
}  // namespace geotb::model
