#include "engine/compute_charge.h"

#include <cmath>

namespace geotb::engine {

namespace {
thread_local std::function<void(Work, uint64_t)> tl_charge;
}

std::chrono::nanoseconds ComputeProfile::cost(Work w, uint64_t elements) const {
  switch (w) {
    case Work::kStep: return step_time * static_cast<int64_t>(elements);
    case Work::kReduce:
      return std::chrono::nanoseconds(std::llround(reduce_ns_per_element * static_cast<double>(elements)));
    case Work::kCompress:
      return std::chrono::nanoseconds(std::llround(compress_ns_per_element * static_cast<double>(elements)));
  }
  return std::chrono::nanoseconds{0};
}

void set_thread_compute_charge(std::function<void(Work, uint64_t)> charge) { tl_charge = std::move(charge); }

const std::function<void(Work, uint64_t)>& thread_compute_charge() { return tl_charge; }

void charge_compute(Work w, uint64_t elements) {
  if (tl_charge) tl_charge(w, elements);
}

}  // namespace geotb::engine
