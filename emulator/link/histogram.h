// Fixed-size log-linear histogram of non-negative integer samples (nanoseconds in practice).
//
// Values below 2^kSubBits are counted exactly; above, each power-of-two range is cut into
// 2^kSubBits equal buckets, so a bucket is at most 1/64 (1.6 %) of its value wide. Recording
// never allocates (the hot path of the DPDK data plane records every released frame) and takes
// a few instructions. Not thread-safe: one histogram per thread, merge() them afterwards.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

namespace geotb::emu {

class LogHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr int kBuckets = (64 - kSubBits + 1) * static_cast<int>(kSub);

  void record(uint64_t v) {
    ++counts_[index(v)];
    ++count_;
    sum_ += v;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  void merge(const LogHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  void reset() { *this = LogHistogram{}; }

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }

  /// Smallest bucket upper bound u such that at least q of the samples are <= u (q in [0, 1]),
  /// clamped to the exact max. An upper bound, never an underestimate: lateness targets are upper
  /// limits. 0 when empty.
  uint64_t quantile(double q) const {
    if (count_ == 0) return 0;
    const double want = q * static_cast<double>(count_);
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (counts_[i] && static_cast<double>(seen) >= want) return std::min(upper(i), max_);
    }
    return max_;
  }

  /// Bucket i covers [lower(i), upper(i)].
  static uint64_t lower(int i) {
    const uint64_t b = static_cast<uint64_t>(i);
    if (b < kSub) return b;
    const int e = static_cast<int>(b >> kSubBits);  // >= 1
    const uint64_t m = b & (kSub - 1);
    return (kSub + m) << (e - 1);
  }
  static uint64_t upper(int i) {
    if (i + 1 >= kBuckets) return std::numeric_limits<uint64_t>::max();
    return lower(i + 1) - 1;
  }
  static int index(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    const int msb = 63 - std::countl_zero(v);           // >= kSubBits
    const int e = msb - kSubBits + 1;                     // >= 1
    const uint64_t m = (v >> (e - 1)) & (kSub - 1);
    return static_cast<int>((static_cast<uint64_t>(e) << kSubBits) | m);
  }
  uint64_t bucket_count(int i) const { return counts_[i]; }
  /// Samples in buckets entirely above v's bucket: those > v, give or take one bucket's width.
  uint64_t count_above(uint64_t v) const {
    uint64_t n = 0;
    for (int i = index(v) + 1; i < kBuckets; ++i) n += counts_[i];
    return n;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
};

}  // namespace geotb::emu
