// The timeline's fault events of one rank, as the fault agent (fault_agent.h) executes them in
// every mode: when its slow events start and end, and whether one of its kills is due. Where the
// records go (the embedded run's shared list, a process's own log) and how the compute factor is
// charged are its port's. No libtorch here.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "model/faults.h"
#include "model/rank_layout.h"

namespace geotb::engine {

class RankFaultTimeline {
 public:
  using Nanos = std::chrono::nanoseconds;
  /// A slow event began: its record (event "slow", policy "none", with `factor`), appended where
  /// the agent keeps them; returns the record's index there.
  using AddRecord = std::function<size_t(const model::FaultRecord&)>;
  /// A slow event ended: set `until_s` of the record at that index.
  using EndRecord = std::function<void(size_t record, double until_s)>;

  RankFaultTimeline(const model::FaultPlan& plan, const model::RankLayout& layout, int rank);

  /// At the start of `step`, `elapsed` into training (`at_s` seconds, the records' clock): starts
  /// the slow events due (by `at_step`, or once `at` has passed) and ends those whose `steps` or
  /// `duration` are over. Returns the compute factor from now on if it changed.
  std::optional<double> step_begins(int step, Nanos elapsed, double at_s, const AddRecord& add, const EndRecord& end);

  /// Whether one of this rank's kills is due before the synchronisation of `step` (`at_step`, or
  /// its first step at or after `at`). Each kill fires once: a worker restarted from an earlier
  /// checkpoint redoes the kill's step alive.
  bool kill_due(int step, Nanos elapsed);

 private:
  struct Slow {
    bool started = false, ended = false;
    int step = 0;
    Nanos start{0};
    size_t record = 0;
  };
  const model::FaultPlan& plan_;
  const model::RankLayout& layout_;
  const int rank_;
  std::vector<Slow> slow_;   // per event of the plan (only this rank's slow ones used)
  std::set<size_t> fired_;   // kill events that took effect
};

}  // namespace geotb::engine
