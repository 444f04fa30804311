// A synchronisation strategy: what a worker does with its gradients after each backward pass.
// One strategy object per worker (it holds that worker's state: residuals, anchors, ...).
// Strategies see flat float buffers and the network/collective interfaces only: no libtorch.
// What a strategy needs, its keys and its factory: its descriptor (strategies/descriptor.h),
// listed in the strategy table (strategies/table.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/link_config.h"
#include "engine/checkpoint/state.h"
#include "engine/collectives/intra_dc.h"
#include "engine/compute_charge.h"
#include "engine/model/learner.h"
#include "engine/optim/sgd.h"
#include "engine/transport/transport.h"
#include "kernels/powersgd.h"
#include "model/faults.h"
#include "model/measurements.h"
#include "model/rank_layout.h"

namespace geotb::engine {

class GradientEstimator;
class SiteQuorum;

/// Strategy parameters, from the scenario's "strategies" entries.
struct StrategyConfig {
  std::string name;          ///< a name of the strategy table (strategies/table.h)
  /// The entry's name in reports, progress and --strategies (scenario "label"): lets one scenario
  /// run a strategy several times with different keys. Empty: `name`.
  std::string label = {};
  const std::string& run_name() const { return label.empty() ? name : label; }
  /// The entry's recovery policy (scenario "faults": {"policy", "estimate"}), instead of the
  /// scenario's faults.policy; empty: the scenario's.
  std::string fault_policy = {};
  std::optional<model::EstimateConfig> fault_estimate = {};  ///< with fault_policy "estimate"
  /// hier_ef_topk_int8, hierarchical: rounds under a quorum of sites (faults/quorum.h), "quorum":
  /// the time a link must stay down before its sites are separated, e.g. "5s"; empty: off.
  std::string quorum = {};
  int K = 16;                ///< steps between inter-DC exchanges (with K_auto: the first interval's)
  /// "K": "auto" (hier_ef_topk_int8, hierarchical): K follows the measured exchange, step and
  /// round times (strategies/adaptive_k.h), within [K_min, K_max], for a target utilisation.
  bool K_auto = false;
  int K_min = 1;             ///< steps
  int K_max = 256;           ///< steps
  double K_target = 0.95;    ///< target utilisation u, in (0, 1)
  double density = 0.01;     ///< fraction of elements sent per exchange, (0, 1]
  uint32_t block = 256;      ///< INT8 block size (selected elements per float scale)
  bool quantize = true;      ///< INT8 values (false: float32 values)
  bool overlap = true;       ///< exchange in the background, applied one round late (false: blocking)
  /// naive_ddp's allreduce: "gloo_ring" (what c10d ProcessGroupGloo runs, receiver-ready
  /// rendezvous per segment: collectives/gloo_ring.h) or "eager_ring" (each ring step leaves as
  /// soon as its data is ready, the optimistic NCCL-like bound: collectives/ring_allreduce.h).
  std::string collective = "gloo_ring";
  /// DDP's bucket_cap_mb, MiB, of every strategy's DDP allreduce (strategies/ddp_buckets.h); the
  /// first bucket is DDP's 1 MiB.
  double bucket_mb = 25;

  // local_sgd (strategies/local_sgd.cc; docs/guide/strategies.md "local_sgd: the update rule").
  int tau = 16;               ///< steps between two averagings of the DC models (after the warm-up)
  int warmup_steps = 0;       ///< W: for steps [0, W) the DCs average every warmup_tau steps instead
  int warmup_tau = 1;         ///< tau during the warm-up (1 = fully synchronous)
  std::string momentum_sync = "local";  ///< "local": momentum buffers stay per DC; "averaged": averaged with the models
  double fedprox_mu = 0;      ///< FedProx's mu: gradient + mu (x - x_last_average); 0 = off (also diloco)
  /// SCAFFOLD's control variates (option II, one client per DC): gradient - c_d + c (also diloco)
  bool scaffold = false;
  /// SCAFFOLD's η in (x̄ - y_d) / (k η): "optimizer" (optimizer.lr, the paper's) or "effective"
  /// (optimizer.lr / (1 - optimizer.momentum), the step heavy-ball momentum takes per unit of
  /// gradient in its steady state)
  std::string scaffold_lr = "optimizer";

  // diloco (strategies/diloco.cc; docs/guide/strategies.md "diloco: the update rule").
  int H = 500;                 ///< inner steps per outer step (DiLoCo's 500)
  double outer_lr = 0.7;       ///< outer learning rate (DiLoCo's 0.7)
  double outer_momentum = 0.9; ///< outer Nesterov momentum (DiLoCo's 0.9; 0 = plain outer SGD)
  /// The values on the WAN. diloco's pseudo-gradient: "float32", "bf16" or "int8" (INTELLECT-1);
  /// naive_ddp's gradient allreduce and hierarchical's exchange: "float32", "bf16" or "fp16"
  /// (kernels/wire16.h; docs/guide/strategies.md "16-bit wires").
  std::string wire = "float32";

  // powersgd (strategies/powersgd.cc; docs/guide/strategies.md "powersgd"): PowerSGDState's
  // hyperparameters and defaults (kernels/powersgd.h); an iteration is an inter-DC round.
  kernels::PowerSgdConfig powersgd = {};
  // qsgd (strategies/qsgd.cc; docs/guide/strategies.md "qsgd: the update rule"). Defaults: GRACE's
  // QSGD compressor (sands-lab/grace, grace_dl/dist: quantum_num 256, bucket_size 128).
  uint32_t levels = 256;  ///< s: quantisation levels per sign, [1, 65535] (ceil(log2(s+1)) bits each on the WAN)
  uint32_t bucket = 128;  ///< d: elements per float32 norm, [1, 2^24]

  // async_ef_topk_int8 (strategies/async_ef_topk_int8.cc; docs/guide/strategies.md
  // "async_ef_topk_int8: the update rule"): K, density, block, quantize as hier_ef_topk_int8's.
  int max_staleness = 4;  ///< rounds a site may run ahead of the slowest (SSP's bound s; 0: synchronous); -1: none
  /// f(s), the weight of a peer's update applied s rounds late: "poly" 1/(1+s)^a, or "threshold"
  /// (1 if s <= staleness_threshold, else 0: the update is dropped).
  std::string staleness_weight = "poly";
  double staleness_exponent = 1;  ///< "poly"'s a (1: the learning rate / (1 + s))
  int staleness_threshold = 2;    ///< "threshold"'s largest s still applied, rounds
  /// When the run ends: "all" (every site runs at least `steps`; the faster ones train on until the
  /// slowest is done) or "first" (with the first site's last round; the others stop at their next).
  std::string end = "all";
};

// The worker's time accounting and exchange log are the model's (model/measurements.h).
using model::ExchangeRecord;
using model::WorkerTimes;

/// One WAN direction as an exchange's lower bound sees it.
struct InboundLink {
  double rate_bps = 0;  ///< bits per second; 0 = unlimited
  double delay_s = 0;   ///< one-way propagation delay, seconds
};

/// The links into data center `dc` from each of `num_dcs` data centers (entry `dc`: zeros).
inline std::vector<InboundLink> inbound_links(const std::vector<emu::DirectedLink>& links, int dc, int num_dcs) {
  std::vector<InboundLink> in(static_cast<size_t>(num_dcs));
  for (const auto& l : links)
    if (l.to == dc && l.from >= 0 && l.from < num_dcs)
      in[static_cast<size_t>(l.from)] = {l.config.rate_bps, std::chrono::duration<double>(l.config.delay).count()};
  return in;
}

/// What a worker is and what it can reach.
struct WorkerEnv {
  int rank = 0;          ///< global rank, layout.rank_of(dc, local_rank)
  int dc = 0;
  int local_rank = 0;
  int world = 1;
  int num_dcs = 1;
  model::RankLayout layout;  ///< every DC's ranks (DCs may differ in size)
  /// The weight of each DC's contribution to a mean over data centers (DC order, summing to 1):
  /// its workers' or its examples' share (workload "dc_weights", data/partition.h). Empty: every
  /// DC weighs 1/num_dcs, computed as today's sum times 1/num_dcs (dc_mean_weight below).
  std::vector<float> dc_weights;
  /// Global rank of every DC's leader: local rank 0, except in this rank's own DC after its
  /// leader died (engine/faults/): the survivor that took over its address. Other DCs' entries
  /// stay local rank 0: their successors are reached at that address (Transport::take_over).
  std::vector<int> dc_leaders;
  std::vector<int> ring;        ///< all global ranks in ring order (DC by DC)
  Learner* learner = nullptr;
  Sgd* opt = nullptr;
  Transport* net = nullptr;     ///< global ranks over the (emulated) network
  IntraDc* intra = nullptr;     ///< this DC's Gloo group (every worker's for one_group); null unless asked
  const emu::Clock* clock = nullptr;
  WorkerTimes times;
  std::vector<ExchangeRecord> exchanges;  ///< filled by DC leaders
  /// The WAN link from every data center to this one, indexed by source DC (this DC's own entry
  /// unused): what an exchange's lower bound S/B + one-way delay is taken from, per link crossed.
  std::vector<InboundLink> wan_in;
  /// The gradient the timing represents, as DDP's buckets see it (collectives/buckets.h): its
  /// tensors' elements in parameter order (empty: a flat gradient) and its elements (0: the
  /// trained model's, learner->num_params()).
  std::vector<uint64_t> grad_tensors;
  uint64_t grad_elements = 0;
  /// The trained model's parameter tensors' shapes, in the flat buffers' order (PowerSGD views
  /// each as a matrix).
  std::vector<std::vector<int64_t>> tensor_shapes;
  /// The represented model's tensor shapes, when grad_elements is set and they are known (a
  /// catalog model or declared tensors): what PowerSGD's messages stand for on the network.
  std::vector<std::vector<int64_t>> represented_shapes;
  /// Standard normal streams (libtorch's generator: model/torch_rng.h), for draws that must be
  /// torch's (PowerSGD's first Q); empty where the caller links no libtorch.
  std::function<std::unique_ptr<kernels::NormalSource>()> make_normal;
  /// The run's seed (the scenario's "seed", WorkloadSpec::seed; set by run_worker_loop before the
  /// strategy is made): the same on every rank, so that a strategy's random streams keyed by it
  /// (qsgd's stochastic rounding) agree across workers and modes.
  uint64_t seed = 0;
  /// The run's steps (WorkloadSpec::steps; set by run_worker_loop before the strategy is made):
  /// what a strategy needs to know which of its rounds is the last.
  int steps = 0;
  /// An asynchronous strategy's log of this site, kept by the DC leader (model/measurements.h).
  std::optional<model::AsyncSiteLog> async_log;
  /// Node faults' policy "estimate" (faults/estimate.h): what stands in for a dead DC peer's
  /// gradient in the intra-DC mean; null otherwise.
  GradientEstimator* estimator = nullptr;
  /// The quorum of sites (faults/quorum.h) of a strategy run with "quorum"; null otherwise.
  SiteQuorum* quorum = nullptr;
};

/// Every other rank of this rank's data center, ascending (a DC leader forwards to them; sends
/// to a dead one are dropped).
inline std::vector<int> dc_ranks_but_self(const WorkerEnv& env) {
  std::vector<int> m;
  const int lo = env.layout.first(env.dc), hi = lo + env.layout.workers(env.dc);
  for (int r = lo; r < hi; ++r)
    if (r != env.rank) m.push_back(r);
  return m;
}

/// A mean over data centers is sum_d dc_mean_weight(env, d) * v_d, then times dc_mean_scale(env):
/// 1 and 1/num_dcs when the DCs weigh alike (bit for bit the plain mean), else w_d and 1.
inline float dc_mean_weight(const WorkerEnv& env, int d) {
  return env.dc_weights.empty() ? 1.0f : env.dc_weights[static_cast<size_t>(d)];
}
inline float dc_mean_scale(const WorkerEnv& env) {
  return env.dc_weights.empty() ? 1.0f / static_cast<float>(env.num_dcs) : 1.0f;
}

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// After forward/backward of `step` (grads in env.learner->grads()): synchronise and update
  /// the parameters. Must charge env.times. Throws TransportError on network failure.
  /// Called once per step, in step order, on every rank (strategies take their message tags in
  /// call order: transport/tags.h).
  virtual void step(WorkerEnv& env, int step) = 0;
  /// After the last step: bring every replica to the same final model.
  virtual void finish(WorkerEnv& env) = 0;
  /// A checkpoint (checkpoint/state.h): writes every piece of state step() and finish() read
  /// that the constructor does not rebuild from (cfg, env): anchors, marks, residuals, outer
  /// momentum, round counters. Called on every rank after the same step (between two step()
  /// calls); it may communicate to reach a consistent cut, as long as the run then continues
  /// bit-identically (hier_ef_topk_int8 applies the round in flight: docs/guide/checkpoints.md).
  /// Message tags are not state: a resumed run starts a fresh transport, and an allocator that
  /// kept counting would only be safer.
  virtual void save(WorkerEnv& env, StateWriter& out) = 0;
  /// Sets the state save() wrote on a strategy just made for the same (cfg, env), before its
  /// first step(). Throws StateError on a missing or mis-sized buffer (the caller checks that
  /// every buffer was taken).
  virtual void restore(WorkerEnv& env, StateReader& in) = 0;
  /// Node faults (engine/faults/, policy shrink): step `step` was abandoned because a peer died;
  /// the survivors rebuilt their group (env.ring, env.intra), the parameters and optimizer state
  /// are back to before the step. Do what the step must still do so that this worker stays in
  /// lock step with the others (a strategy whose rounds are due at this step runs them); the
  /// step's gradient is discarded. Only strategies whose descriptor says survives_kills.
  virtual void discard_step(WorkerEnv& /*env*/, int /*step*/) {}
  /// The share of a step's compute (millionths, Work::kStepShare) the worker loop charges before
  /// step(): all of it, unless step() charges the backward pass itself (DDP's buckets overlap it,
  /// strategies/ddp_buckets.h).
  virtual uint64_t loop_step_share() const { return kStepShareUnits; }
  /// Whether this worker's run ends after `step` although steps remain: an asynchronous
  /// strategy's slower sites stop once a faster one has done every step (the loop then calls
  /// finish()). Every worker of a DC answers alike. Default: never.
  virtual bool ends_after(int /*step*/) const { return false; }
  /// Whether this worker's run goes on after `step` although it was the last of the run's steps:
  /// an asynchronous strategy's faster sites train on until the slowest is done. Every worker of a
  /// DC answers alike. Default: never.
  virtual bool runs_past(int /*step*/) const { return false; }
  /// The step this worker runs after `step`: step + 1, or later when its site was paused and
  /// rejoins the others at a later step (hier_ef_topk_int8 under a quorum of sites: the steps in
  /// between are not run, their losses stay NaN). Every worker of a DC answers alike.
  virtual int next_step(int step) const { return step + 1; }
  /// A site restarted whole (every worker of a DC killed under a quorum of sites,
  /// faults/fault_runtime.h): restore() just set the state of a worker of *another* site, the only
  /// one alive to hand it. Keep what every site shares (the anchor, as parameters too) and drop
  /// what was that site's own (its error-feedback residual). Called before the first step, with
  /// env.opt fresh. Default: refused (only strategies with "quorum" get here).
  virtual void rejoin_site(WorkerEnv& /*env*/) {
    throw std::logic_error("rejoin_site: this strategy cannot take another site's state");
  }
};

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
