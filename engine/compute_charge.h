// Compute declared to the virtual clock by a compute profile.
//
// In the virtual-time embedded mode an actor's compute is either measured (its thread's CPU time)
// or declared by the scenario's compute profile, which makes a run's timing a function of the
// scenario alone. The places where compute happens call charge_compute(kind, elements); it charges
// the calling thread's actor with the profile's cost when a profile is installed for that thread,
// and does nothing otherwise (wall clock, or CPU time measured). Thread-local, like the actor a
// thread is bound to; installed by the embedded cluster for each worker and background actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace geotb::engine {

enum class Work : uint8_t {
  kStep,      ///< one training step of one worker: forward, backward, optimizer (elements = 1)
  kReduce,    ///< element-wise reduction in a collective (elements = floats added or scaled)
  kCompress,  ///< compression, decompression, re-basing of the hierarchical strategies (elements)
};

/// A scenario's declared compute (scenario field `compute`; README "Clocks").
struct ComputeProfile {
  std::chrono::nanoseconds step_time{0};  ///< per worker and step: forward + backward + optimizer
  double reduce_ns_per_element = 0.5;     ///< ns per float reduced in a collective
  double compress_ns_per_element = 2.0;   ///< ns per element compressed, decompressed or re-based
  /// The declared cost of `elements` of `w`.
  std::chrono::nanoseconds cost(Work w, uint64_t elements) const;
};

/// Installs `charge` for the calling thread (empty: none). The embedded cluster installs one that
/// advances the thread's actor by ComputeProfile::cost.
void set_thread_compute_charge(std::function<void(Work, uint64_t)> charge);
/// The calling thread's charge function, to hand to a background actor it starts.
const std::function<void(Work, uint64_t)>& thread_compute_charge();

/// Charges `elements` of `w` to the calling thread's actor, if a profile is installed.
void charge_compute(Work w, uint64_t elements);

}  // namespace geotb::engine
