#include "emulator/link/histogram.h"

#include <gtest/gtest.h>

namespace geotb::emu {
namespace {

TEST(LogHistogram, BucketsCoverEveryValueOnce) {
  for (uint64_t v : {0ull, 1ull, 63ull, 64ull, 65ull, 127ull, 128ull, 129ull, 1000ull, 123456789ull,
                     (1ull << 40) + 12345, ~0ull}) {
    const int i = LogHistogram::index(v);
    EXPECT_LE(LogHistogram::lower(i), v) << v;
    EXPECT_GE(LogHistogram::upper(i), v) << v;
    // Relative width <= 1/64.
    if (v >= 64) {
      EXPECT_LE(LogHistogram::upper(i) - LogHistogram::lower(i), LogHistogram::lower(i) / 64) << v;
    }
  }
  for (int i = 0; i + 1 < LogHistogram::kBuckets; ++i) EXPECT_EQ(LogHistogram::upper(i) + 1, LogHistogram::lower(i + 1));
}

TEST(LogHistogram, ExactBelow64AndQuantilesAreUpperBounds) {
  LogHistogram h;
  for (uint64_t v = 1; v <= 50; ++v) h.record(v);
  EXPECT_EQ(h.count(), 50u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 50u);
  EXPECT_DOUBLE_EQ(h.mean(), 25.5);
  EXPECT_EQ(h.quantile(0.5), 25u);
  EXPECT_EQ(h.quantile(0.99), 50u);
  EXPECT_EQ(h.quantile(1.0), 50u);

  LogHistogram big;
  for (uint64_t v = 0; v < 100000; ++v) big.record(v * 10);  // 0 .. 999990
  const uint64_t p99 = big.quantile(0.99);
  EXPECT_GE(p99, 989990u);
  EXPECT_LE(p99, 989990u + 989990u / 64);
  LogHistogram m;
  m.merge(h);
  m.merge(big);
  EXPECT_EQ(m.count(), 100050u);
  EXPECT_EQ(m.max(), 999990u);
  EXPECT_EQ(m.min(), 0u);
}

}  // namespace
}  // namespace geotb::emu
