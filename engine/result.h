// What one strategy's run measured (StrategyResult, definitions: README "Metrics"), and how it
// is put together from what each rank measured (RankReport). Both modes build it the same way:
// the embedded mode from its threads' records, the process mode from the per-rank files the
// workers write (harness/rank_report.h is their JSON form). No libtorch here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "engine/strategy.h"
#include "engine/worker_loop.h"

namespace geotb::engine {

struct AccuracyPoint {
  int step = 0;            ///< steps done
  uint64_t samples = 0;    ///< cluster samples processed by then
  double accuracy = 0;     ///< rank 0's replica on the test set
};

/// Everything measured for one strategy. Definitions: README "Metrics".
struct StrategyResult {
  std::string strategy;
  int steps = 0;
  int workers = 0;
  uint64_t samples = 0;               ///< training samples processed, whole cluster
  double wall_s = 0;                  ///< first step start -> every replica final
  double samples_per_s = 0;           ///< samples / wall_s
  double compute_s_per_step = 0;      ///< mean over workers
  double exposed_comm_s_per_step = 0; ///< mean over workers
  double compress_s_per_step = 0;     ///< mean over workers
  double overlapped_comm_s_per_step = 0;  ///< mean over DC leaders
  double comm_compute_ratio = 0;      ///< exposed comm / compute
  emu::TrafficStats wan;              ///< all inter-DC traffic
  uint64_t exchanges = 0;             ///< inter-DC exchanges (rounds incl. the final one)
  std::vector<ExchangeRecord> exchange_log;  ///< DC 0 leader's view
  std::vector<double> loss;           ///< per step, mean over workers
  std::vector<double> step_end_s;     ///< per step, rank 0's time since start at the step's end
  std::vector<AccuracyPoint> accuracy_curve;  ///< the last point is the final model
  double final_test_accuracy = 0;
  double replica_max_abs_diff = 0;    ///< max |x_rank - x_0| after finish (0 = identical)
  std::vector<float> final_params;    ///< rank 0's model, kept only if asked (tests)
};

class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One rank's measurements after a completed run.
struct RankReport {
  int rank = 0, dc = 0, local_rank = 0;
  WorkerTimes times;
  std::vector<double> loss;                  ///< per step
  std::vector<double> step_end_s;            ///< rank 0: per step, seconds since the start
  std::vector<ExchangeRecord> exchanges;     ///< DC leaders
  emu::TrafficStats wan_sent;                ///< what this rank sent to ranks of other DCs
  double wall_s = 0;                         ///< rank 0: its start -> every replica final (seconds)
  std::vector<AccuracyPoint> accuracy_curve; ///< rank 0 (the last point is the final model)
  double replica_max_abs_diff = 0;           ///< max |x_this - x_0| after the end
};

/// Test accuracy of `learner` (rank 0's replica, final model) and of every snapshot of `rec`,
/// in step order, the final model last; the learner ends with its final parameters again.
std::vector<AccuracyPoint> accuracy_curve(Learner& learner, const WorkerRecord& rec, const WorkloadSpec& work,
                                          int world, const Dataset& test);

/// Max |a_i - b_i| over n floats.
double max_abs_diff(const float* a, const float* b, size_t n);

/// Merges the ranks' reports (reports[r].rank == r, every rank of a dcs x workers_per_dc cluster)
/// into the strategy's result. wan = the sum of what every rank sent to other DCs.
/// Throws RunError if a rank is missing or the series lengths disagree with work.steps.
StrategyResult merge_rank_reports(const std::string& strategy, const std::vector<RankReport>& reports,
                                  const WorkloadSpec& work, int dcs);

}  // namespace geotb::engine
