// Clocks injected into everything that needs time. Models never call now() themselves.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace geotb::emu {

class Clock {
 public:
  virtual ~Clock() = default;
  /// Nanoseconds since the clock's own epoch; monotonic.
  virtual std::chrono::nanoseconds now() const = 0;
  /// Block the calling thread until now() >= t.
  virtual void sleep_until(std::chrono::nanoseconds t) const = 0;
};

/// std::chrono::steady_clock. Used by the in-process WAN to deliver messages in real time.
class SteadyClock final : public Clock {
 public:
  std::chrono::nanoseconds now() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch());
  }
  void sleep_until(std::chrono::nanoseconds t) const override {
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(t)));
  }
};

/// Manual clock for tests: time moves only when a test (or a sleeper) moves it.
class FakeClock final : public Clock {
 public:
  std::chrono::nanoseconds now() const override { return std::chrono::nanoseconds{t_.load()}; }
  /// A sleeper jumps the clock forward to its wake-up time.
  void sleep_until(std::chrono::nanoseconds t) const override {
    auto cur = t_.load();
    while (cur < t.count() && !t_.compare_exchange_weak(cur, t.count())) {
    }
  }
  void set(std::chrono::nanoseconds t) { t_.store(t.count()); }
  void advance(std::chrono::nanoseconds d) { t_.fetch_add(d.count()); }

 private:
  mutable std::atomic<long long> t_{0};
};

}  // namespace geotb::emu
