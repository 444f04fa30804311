// Embedded mode: M data centers x N workers as threads of one process. Each worker has its own
// model replica and data shard; intra-DC collectives are real c10d Gloo groups over loopback;
// everything between data centers goes through the in-process emulated WAN (emulator/inproc).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulator/inproc/fabric.h"
#include "engine/data/fashion_mnist.h"
#include "engine/model/learner.h"
#include "engine/optim/sgd.h"
#include "engine/strategy.h"

namespace geotb::engine {

struct DcSpec {
  std::string name;
  int workers = 1;
};

/// A WAN link change at a time offset from the start of each strategy's training.
struct TimedLinkChange {
  int site_a = 0, site_b = 1;
  emu::LinkChange change;  ///< change.at is the offset from the start
};

struct ClusterSpec {
  std::vector<DcSpec> dcs;               ///< all with the same number of workers
  emu::LinkConfig lan;                   ///< between two workers of one DC (and the `lan` strategy's WAN)
  std::vector<emu::WanLinkSpec> wan;     ///< between DCs (indices into dcs)
  std::vector<TimedLinkChange> timeline;
  emu::SegmentConfig segments;
};

struct WorkloadSpec {
  ModelConfig model;
  SgdConfig optimizer;
  int batch_per_worker = 32;
  int steps = 100;
  uint64_t seed = 42;
  int eval_points = 10;  ///< test accuracy of rank 0's model at this many evenly spaced steps
                         ///< (snapshots taken during the run, evaluated after it: no effect on timing)
};

struct Datasets {
  Dataset train;
  Dataset test;
};

struct RunOptions {
  std::chrono::milliseconds transport_timeout{120000};  ///< a message not arriving by then is an error
  std::chrono::milliseconds gloo_timeout{120000};
  /// Called by rank 0 after each step: (steps done, total, seconds since start).
  std::function<void(int, int, double)> progress;
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
  struct AccuracyPoint {
    int step = 0;            ///< steps done
    uint64_t samples = 0;    ///< cluster samples processed by then
    double accuracy = 0;     ///< rank 0's replica on the test set
  };
  std::vector<AccuracyPoint> accuracy_curve;  ///< the last point is the final model
  double final_test_accuracy = 0;
  double replica_max_abs_diff = 0;    ///< max |x_rank - x_0| after finish (0 = identical)
  std::vector<float> final_params;    ///< rank 0's model, kept only if asked (tests)
};

class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs one strategy from the same initial weights and data order as every other strategy with
/// the same workload seed. Throws RunError naming the failing rank on a worker failure.
StrategyResult run_strategy(const ClusterSpec& cluster, const WorkloadSpec& work, const StrategyConfig& strategy,
                            const Datasets& data, const RunOptions& opt, bool keep_params = false);

}  // namespace geotb::engine
