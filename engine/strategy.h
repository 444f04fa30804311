// A synchronisation strategy: what a worker does with its gradients after each backward pass.
// One strategy object per worker (it holds that worker's state: residuals, anchors, ...).
// Strategies see flat float buffers and the network/collective interfaces only: no libtorch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/link/clock.h"
#include "engine/collectives/intra_dc.h"
#include "engine/model/learner.h"
#include "engine/optim/sgd.h"
#include "engine/transport/transport.h"
#include "model/measurements.h"

namespace geotb::engine {

/// Strategy parameters, from the scenario's "strategies" entries.
struct StrategyConfig {
  std::string name;          ///< naive_ddp | hierarchical | hier_ef_topk_int8 | lan
  int K = 16;                ///< steps between inter-DC exchanges
  double density = 0.01;     ///< fraction of elements sent per exchange, (0, 1]
  uint32_t block = 256;      ///< INT8 block size (selected elements per float scale)
  bool quantize = true;      ///< INT8 values (false: float32 values)
  bool overlap = true;       ///< exchange in the background, applied one round late (false: blocking)
  /// naive_ddp's allreduce: "gloo_ring" (what c10d ProcessGroupGloo runs, receiver-ready
  /// rendezvous per segment: collectives/gloo_ring.h) or "eager_ring" (each ring step leaves as
  /// soon as its data is ready, the optimistic NCCL-like bound: collectives/ring_allreduce.h).
  std::string collective = "gloo_ring";
};

// The worker's time accounting and exchange log are the model's (model/measurements.h).
using model::ExchangeRecord;
using model::WorkerTimes;

/// What a worker is and what it can reach.
struct WorkerEnv {
  int rank = 0;          ///< global rank, dc * workers_per_dc + local_rank
  int dc = 0;
  int local_rank = 0;
  int world = 1;
  int num_dcs = 1;
  std::vector<int> dc_leaders;  ///< global rank of local rank 0 of every DC
  std::vector<int> ring;        ///< all global ranks in ring order (DC by DC)
  Learner* learner = nullptr;
  Sgd* opt = nullptr;
  Transport* net = nullptr;     ///< global ranks over the (emulated) network
  IntraDc* intra = nullptr;     ///< this DC's Gloo group (every worker's for one_group); null unless asked
  const emu::Clock* clock = nullptr;
  WorkerTimes times;
  std::vector<ExchangeRecord> exchanges;  ///< filled by DC leaders
  /// Link properties for the exchange lower bound (bits/s and seconds; 0 rate = unlimited).
  double wan_rate_bps = 0;
  double wan_rtt_s = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// After forward/backward of `step` (grads in env.learner->grads()): synchronise and update
  /// the parameters. Must charge env.times. Throws TransportError on network failure.
  virtual void step(WorkerEnv& env, int step) = 0;
  /// After the last step: bring every replica to the same final model.
  virtual void finish(WorkerEnv& env) = 0;
};

struct StrategyInfo {
  bool needs_intra_dc = false;   ///< wants a Gloo group (env.intra) per DC
  bool one_group = false;        ///< with needs_intra_dc: one group of every worker (all in one DC)
  bool exchanges_every_step = false;  ///< every step is one inter-DC exchange (flat allreduce)
  bool co_located = false;       ///< with one_group: every worker placed in DC 0 (the `lan` reference)
  /// The strategy's WAN traffic is c10d Gloo's own TCP, which only a real network carries (the
  /// process and dpdk modes); the embedded mode's Gloo runs over loopback, beside the WAN model.
  bool real_network_only = false;
};

/// Names the registry knows, for validation and help.
const std::vector<std::string>& strategy_names();
/// Throws std::invalid_argument for an unknown name.
StrategyInfo strategy_info(const std::string& name);
/// Returns an empty string if valid, else "field: value: why" (prefix added by the caller).
std::string validate(const StrategyConfig& c);
std::unique_ptr<Strategy> make_strategy(const StrategyConfig& cfg, const WorkerEnv& env);

/// Adds the elapsed time of its scope to a counter.
class ScopedTimer {
 public:
  ScopedTimer(const emu::Clock& c, uint64_t& acc) : c_(c), acc_(acc), t0_(c.now()) {}
  ~ScopedTimer() { acc_ += static_cast<uint64_t>((c_.now() - t0_).count()); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  const emu::Clock& c_;
  uint64_t& acc_;
  std::chrono::nanoseconds t0_;
};

}  // namespace geotb::engine
