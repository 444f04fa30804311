// Time for the data plane: the TSC, converted to nanoseconds since the clock was constructed.
// Reading it is one rdtsc plus a 128-bit multiply; no system call on the hot path.
#pragma once

#include <rte_cycles.h>

#include <chrono>
#include <cstdint>

#include "emulator/link/clock.h"

namespace geotb::emu {

class TscClock final : public Clock {
 public:
  TscClock() : hz_(rte_get_tsc_hz()), t0_(rte_rdtsc()) {
    // ns = cycles * mult >> 32; mult = 1e9 * 2^32 / hz (error < 1e-9 relative for GHz clocks).
    mult_ = static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000ULL) << 32) / hz_);
  }
  uint64_t now_ns() const { return cycles_to_ns(rte_rdtsc() - t0_); }
  uint64_t cycles_to_ns(uint64_t cycles) const {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(cycles) * mult_) >> 32);
  }
  uint64_t hz() const { return hz_; }
  std::chrono::nanoseconds now() const override { return std::chrono::nanoseconds{now_ns()}; }
  /// Busy-waits (the data plane never sleeps).
  void sleep_until(std::chrono::nanoseconds t) const override {
    while (now_ns() < static_cast<uint64_t>(t.count())) rte_pause();
  }

 private:
  uint64_t hz_;
  uint64_t t0_;
  uint64_t mult_ = 0;
};

}  // namespace geotb::emu
