#include "engine/compute_charge.h"

#include <time.h>

#include <algorithm>
#include <cmath>

#include "emulator/inproc/fibers.h"

namespace geotb::engine {

namespace {
// The calling actor's charges: per OS thread, or per fiber where actors are fibers (the carrier
// swaps them in and out with the fiber: emulator/inproc/fibers.h).
struct Charges {
  std::function<void(Work, uint64_t)> charge;
  std::function<void(std::chrono::nanoseconds)> measured;
  RobustCost cost;  // this actor's measured regions
};
thread_local Charges tl;
const bool kChargesPerFiber = emu::register_fiber_local<Charges>(+[]() -> Charges& { return tl; });

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

std::chrono::nanoseconds ComputeProfile::cost(Work w, uint64_t elements) const {
  switch (w) {
    case Work::kStep: return step_time * static_cast<int64_t>(elements);
    case Work::kReduce:
      return std::chrono::nanoseconds(std::llround(reduce_ns_per_element * static_cast<double>(elements)));
    case Work::kCompress:
      return std::chrono::nanoseconds(std::llround(compress_ns_per_element * static_cast<double>(elements)));
    case Work::kOptimizer: return std::chrono::nanoseconds{0};  // in step_time
    case Work::kStepShare:
      return std::chrono::nanoseconds(std::llround(static_cast<double>(step_time.count()) *
                                                   static_cast<double>(elements) / static_cast<double>(kStepShareUnits)));
  }
  return std::chrono::nanoseconds{0};
}

std::chrono::nanoseconds represented_cost(const ComputeProfile& profile, double scale, Work w, uint64_t elements) {
  if (scale != 1.0 && w != Work::kStep && w != Work::kStepShare)
    elements = static_cast<uint64_t>(std::llround(static_cast<double>(elements) * scale));
  return profile.cost(w, elements);
}

void set_thread_compute_charge(std::function<void(Work, uint64_t)> charge) { tl.charge = std::move(charge); }

const std::function<void(Work, uint64_t)>& thread_compute_charge() { return tl.charge; }

std::chrono::nanoseconds RobustCost::charge(Work w, uint64_t elements, std::chrono::nanoseconds measured) {
  auto& last = last_[{w, elements}];
  last.push_back(measured.count());
  if (last.size() > kWindow) last.pop_front();
  return std::chrono::nanoseconds(*std::min_element(last.begin(), last.end()));
}

void set_thread_measured_charge(std::function<void(std::chrono::nanoseconds)> charge) {
  tl.measured = std::move(charge);
  tl.cost = RobustCost{};
}

const std::function<void(std::chrono::nanoseconds)>& thread_measured_charge() { return tl.measured; }

ComputeRegion::ComputeRegion(Work w, uint64_t elements) : w_(w), elements_(elements) {
  if (!tl.charge && tl.measured) cpu_start_ns_ = thread_cpu_ns();
}

ComputeRegion::~ComputeRegion() {
  if (tl.charge) {
    tl.charge(w_, elements_);
  } else if (cpu_start_ns_ >= 0 && tl.measured) {
    tl.measured(tl.cost.charge(w_, elements_, std::chrono::nanoseconds(thread_cpu_ns() - cpu_start_ns_)));
  }
}

}  // namespace geotb::engine
