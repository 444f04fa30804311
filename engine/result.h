// How one strategy's run (model::StrategyRun, definitions: docs/guide/reports.md) is put together
// from what each rank measured (model::RankReport). Both modes build it the same way: the
// embedded mode from its threads' records, the process mode from the per-rank files the workers
// write (model/rank_report.h). No libtorch here.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/strategy.h"
#include "engine/worker_loop.h"
#include "model/rank_report.h"
#include "model/report.h"

namespace geotb::engine {

using model::AccuracyPoint;
using model::RankReport;

class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Test accuracy of `learner` (rank 0's replica, final model) and of every snapshot of `rec`,
/// in step order, the final model last; the learner ends with its final parameters again.
std::vector<AccuracyPoint> accuracy_curve(Learner& learner, const WorkerRecord& rec, const WorkloadSpec& work,
                                          int world, const Dataset& test);

/// Max |a_i - b_i| over n floats.
double max_abs_diff(const float* a, const float* b, size_t n);

/// Merges the ranks' reports (reports[r].rank == r, every rank of a cluster of `dcs` data centers)
/// into the strategy's run (config left empty: the harness knows the scenario's). WAN figures =
/// the sum of what every rank sent to other DCs (retransmissions 0: a rank file does not count
/// them). Throws RunError if a rank is missing or the series lengths disagree with work.steps.
model::StrategyRun merge_rank_reports(const std::string& strategy, const std::vector<RankReport>& reports,
                                      const WorkloadSpec& work, int dcs);

}  // namespace geotb::engine
