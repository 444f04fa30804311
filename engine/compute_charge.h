// Compute declared to the virtual clock by a compute profile.
//
// In the virtual-time embedded mode an actor's compute is either measured (its thread's CPU time)
// or declared by the scenario's compute profile, which makes a run's timing a function of the
// scenario alone. Every place where compute happens is a ComputeRegion (kind, elements): with a
// profile installed for the thread, it charges the thread's actor the profile's cost; without one
// (virtual clock, measured compute), a robust estimate of the thread CPU time such regions take
// (RobustCost); on the wall clock nothing. Only regions are charged: the emulator's own work
// between them (the fabric, the link model, message copies, the scheduler) is not compute of the
// system under test and costs no virtual time, with or without a profile. Thread-local, like the
// actor a thread is bound to; installed by the embedded cluster for each worker and background
// actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <utility>

namespace geotb::engine {

enum class Work : uint8_t {
  kStep,      ///< one training step of one worker: forward, backward, optimizer (elements = 1)
  kReduce,    ///< element-wise reduction in a collective (elements = floats added or scaled)
  kCompress,  ///< compression, decompression, re-basing of the hierarchical strategies (elements)
  kOptimizer, ///< the optimizer's update (elements = parameters); a profile counts it in step_time
  /// A share of one training step (elements = millionths of it): a step charged in pieces, its
  /// forward then its backward bucket by bucket (strategies/ddp_buckets.h).
  kStepShare,
};

/// Millionths of a step in a Work::kStepShare.
inline constexpr uint64_t kStepShareUnits = 1'000'000;

/// A scenario's declared compute (scenario field `compute`; docs/guide/clocks.md).
struct ComputeProfile {
  std::chrono::nanoseconds step_time{0};  ///< per worker and step: forward + backward + optimizer
  double reduce_ns_per_element = 0.5;     ///< ns per float reduced in a collective
  double compress_ns_per_element = 2.0;   ///< ns per element compressed, decompressed or re-based
  /// The declared cost of `elements` of `w`.
  std::chrono::nanoseconds cost(Work w, uint64_t elements) const;
};

/// `profile`'s cost of `elements` of `w` for a represented model `scale` times the trained one
/// (docs/guide/represented.md): per-element work is the represented model's; a step, charged
/// whole or in shares, is not scaled.
std::chrono::nanoseconds represented_cost(const ComputeProfile& profile, double scale, Work w, uint64_t elements);

/// Installs `charge` for the calling thread (empty: none). The embedded cluster installs one that
/// advances the thread's actor by ComputeProfile::cost.
void set_thread_compute_charge(std::function<void(Work, uint64_t)> charge);
/// The calling thread's charge function, to hand to a background actor it starts.
const std::function<void(Work, uint64_t)>& thread_compute_charge();

/// Measured compute made robust to the host (virtual clock without a profile): a region's charge
/// is the minimum thread CPU time of its last kWindow occurrences of the same work and size (this
/// one included). What the host adds to a computation's CPU time (preemption, caches thrashed by
/// other processes, frequency changes) only ever lengthens it, so the minimum is the estimate of
/// its own cost least affected by the host (Chen & Revels, "Robust benchmarking in noisy
/// environments", 2016). A cheaper cost shows at once, a dearer one after kWindow occurrences.
/// One per thread (not thread-safe).
class RobustCost {
 public:
  static constexpr size_t kWindow = 32;
  std::chrono::nanoseconds charge(Work w, uint64_t elements, std::chrono::nanoseconds measured);

 private:
  std::map<std::pair<Work, uint64_t>, std::deque<int64_t>> last_;  // ns, oldest first
};

/// Installs the calling thread's hook for measured regions (empty: none), and gives the thread a
/// fresh RobustCost: at the end of each region the hook is called with the RobustCost charge of
/// the region's thread CPU time. The embedded cluster installs one that charges the thread's actor
/// (VirtualScheduler::charge). One RobustCost per thread, as an actor is one thread.
void set_thread_measured_charge(std::function<void(std::chrono::nanoseconds)> charge);
/// The calling thread's measured hook, to hand to a background actor it starts.
const std::function<void(std::chrono::nanoseconds)>& thread_measured_charge();

/// A region of compute that makes no communication call: at its end it charges its declared cost
/// (ComputeProfile::cost) with a profile installed, or reports its thread CPU time to the measured hook
/// if one is installed; nothing otherwise (wall clock).
class ComputeRegion {
 public:
  ComputeRegion(Work w, uint64_t elements);
  ~ComputeRegion();
  ComputeRegion(const ComputeRegion&) = delete;
  ComputeRegion& operator=(const ComputeRegion&) = delete;

 private:
  Work w_;
  uint64_t elements_;
  int64_t cpu_start_ns_ = -1;  ///< thread CPU time at the start; -1: no measured hook
};

}  // namespace geotb::engine
