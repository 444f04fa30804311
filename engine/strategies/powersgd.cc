// powersgd: hierarchical synchronisation with PowerSGD low-rank compression between data centers
// (Vogels et al., NeurIPS 2019), computed as PyTorch's powerSGD_hook does (kernels/powersgd.h),
// with the DC leaders as the hook's process group. For DC d with model x_d:
//
//   every step      g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, g_d)
//   every K steps   (a round: one PowerSGD iteration, torch's state.iter)
//                   u_d = x_d - xbar                    the DC's progress since the last round
//                   rounds < start_powerSGD_iter        u = sum_d w_d u_d, float32 (vanilla)
//                   otherwise                           u_d += e_d; P_d = M_d Q (each matrix)
//                     exchange 1 (leaders, WAN)         the uncompressed tensors and P_d
//                                                       P = orth(sum_d w_d P_d); Q_d = M_d^T P
//                     exchange 2 (leaders, WAN)         Q_d
//                                                       Q = sum_d w_d Q_d / W; M = P Q^T
//                                                       e_d = u_d - u (error feedback)
//                   xbar <- xbar + u; x_d <- xbar       every replica of every DC is identical
//   finish          a dense float32 exchange of what is left (x_d - xbar + e_d), so every replica
//                   ends with the same model and no progress is lost.
// w_d = 1 and W = M (torch: sum, then divide by the world size) when the DCs weigh alike, else
// the DC's weight (workload "dc_weights") and W = 1. Sums run in DC order on every worker.
// Every worker of a DC runs the same computation on the same inputs, its own PowerSGD state
// included (the same seeds give the same first Q): only the leader talks to the WAN (DcExchange).
// Both exchanges are blocking: the second needs the first's P, and the round ends with the model.
#include <array>
#include <cstring>
#include <limits>
#include <optional>

#include "engine/compute_charge.h"
#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"

namespace geotb::engine {

namespace {

class PowerSgdStrategy final : public Strategy {
 public:
  PowerSgdStrategy(const StrategyConfig& cfg, const WorkerEnv& env)
      : cfg_(cfg),
        xc_(env),
        ps_(cfg.powersgd, shapes_of(env)),
        normal_(env.make_normal ? env.make_normal() : nullptr),
        buckets_(cfg, env) {
    if (!normal_) throw std::invalid_argument("powersgd: this worker has no normal stream (libtorch's generator)");
    if (env.grad_elements) {
      // A represented model: its factors' sizes follow its own shapes under the same rank.
      if (env.represented_shapes.empty())
        throw std::invalid_argument("powersgd: the represented model's tensor shapes are not known");
      represented_.emplace(kernels::PowerSgdPlan::make(env.represented_shapes, cfg.powersgd.rank,
                                                       cfg.powersgd.min_compression_rate));
    }
    xbar_.assign(env.learner->params(), env.learner->params() + env.learner->num_params());
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    if (cfg_.K == 1) {
      // DDP with torch's hook: the DC's gradient is what PowerSGD compresses, and the optimizer
      // steps on the mean approximation, the same on every replica.
      const float* g = env.learner->grads();
      u_.assign(g, g + env.learner->num_params());
      sync(env, step);
      optimizer_step(env, u_.data());
      return;
    }
    optimizer_step(env, env.learner->grads());
    if ((step + 1) % cfg_.K == 0) round(env, step);
  }

  // A member of this DC died in the step's allreduce: no gradient, but a round due now runs.
  // K = 1: this DC joins the step's exchange with a zero gradient and steps on the mean, as
  // every other DC does, so that the replicas stay identical.
  void discard_step(WorkerEnv& env, int step) override {
    if (cfg_.K == 1) {
      u_.assign(env.learner->num_params(), 0.0f);
      sync(env, step);
      optimizer_step(env, u_.data());
      return;
    }
    if ((step + 1) % cfg_.K == 0) round(env, step);
  }

  void finish(WorkerEnv& env) override {
    if (cfg_.K == 1) return;  // every replica took the same steps: identical; the error stays unsent, as torch's
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    progress(env);
    if (!ps_.error().empty())
      for (size_t i = 0; i < n; ++i) u_[i] += ps_.error()[i];
    mean(env, xc_.exchange(env, float_bytes(u_.data(), n), -1, "powersgd.final"), u_, 0, n, u_);
    for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + u_[i] * dc_mean_scale(env);
  }

  // Between two rounds the state is the anchor and what PowerSGD's later rounds read
  // (kernels::PowerSgd::State): the iteration, Q with warm start (and that it is kept), the seed
  // stream without, the error once there is one.
  void save(WorkerEnv&, StateWriter& out) override {
    if (cfg_.K > 1) out.floats("anchor", xbar_);
    const kernels::PowerSgd::State s = ps_.save();
    out.i64("iter", s.iter);
    if (cfg_.powersgd.warm_start) {
      out.flag("has_memory", s.has_memory);
      out.floats("q", s.q);  // empty until the first compressed round
    } else {
      out.vec("rng", s.rng);
    }
    if (cfg_.powersgd.error_feedback) out.floats("error", s.error);  // empty until the first compressed round
  }
  void restore(WorkerEnv& env, StateReader& in) override {
    const size_t n = env.learner->num_params();
    if (cfg_.K > 1) in.floats("anchor", xbar_, n);
    kernels::PowerSgd::State s;
    s.iter = in.i64("iter");
    if (cfg_.powersgd.warm_start) {
      s.has_memory = in.flag("has_memory");
      in.vec("q", s.q);  // sized against the plan by PowerSgd::restore
    } else {
      in.vec_exact("rng", s.rng, 625);
    }
    if (cfg_.powersgd.error_feedback) in.vec("error", s.error);
    try {
      ps_.restore(s);
    } catch (const std::invalid_argument& e) {
      throw StateError(std::string("strategy.") + e.what());
    }
  }

 private:
  static const std::vector<std::vector<int64_t>>& shapes_of(const WorkerEnv& env) {
    if (env.tensor_shapes.empty()) throw std::invalid_argument("powersgd: the model's tensor shapes are not known");
    return env.tensor_shapes;
  }

  void optimizer_step(WorkerEnv& env, const float* g) {
    ScopedTimer t(*env.clock, env.times.compute_ns);
    env.opt->step(env.learner->params(), g);
  }

  /// u = x - xbar.
  void progress(WorkerEnv& env) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kCompress, n);
    u_.resize(n);
    for (size_t i = 0; i < n; ++i) u_[i] = x[i] - xbar_[i];
  }

  /// out[i] = sum_d w_d v_d[offset + i] over the DCs in DC order (own: `own`), i < len; not scaled.
  void mean(WorkerEnv& env, const std::vector<std::vector<uint8_t>>& peers, const std::vector<float>& own,
            size_t offset, size_t len, std::vector<float>& out) {
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kReduce, static_cast<uint64_t>(env.num_dcs) * len);
    dc_weighted_sum(env, peers, own.data(), offset, len, sum_);  // into sum_: `out` may be `own`
    out.assign(sum_.begin(), sum_.end());
  }

  /// K > 1: the DC's progress since the last round, replaced by the mean, re-bases every replica.
  void round(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    progress(env);
    sync(env, step);
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kCompress, n);
    for (size_t i = 0; i < n; ++i) {
      xbar_[i] += u_[i];
      x[i] = xbar_[i];
    }
  }

  /// One PowerSGD iteration over the DC leaders: u_ (this DC's) becomes the DCs' mean, exact
  /// (vanilla) or PowerSGD's approximation of it.
  void sync(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    // torch divides by the world size; unequal DC weights already sum to 1.
    const int world = env.dc_weights.empty() ? env.num_dcs : 1;
    if (ps_.vanilla()) {
      mean(env, xc_.exchange(env, float_bytes(u_.data(), n), step, "powersgd.vanilla"), u_, 0, n, u_);
      const float inv = dc_mean_scale(env);
      for (size_t i = 0; i < n; ++i) u_[i] *= inv;
      ps_.vanilla_done();
    } else {
      const kernels::PowerSgdPlan& plan = ps_.plan();
      const size_t nu = plan.uncompressed, np = plan.p_size, nq = plan.q_size;
      // Three products of every matrix with rank columns (P, Q, the approximation), the error
      // feedback and the orthogonalisations: charged as (3 rank + 2) elements per parameter.
      const uint64_t work = (3 * static_cast<uint64_t>(cfg_.powersgd.rank) + 2) * n;
      msg_.resize(nu + np);
      {
        ScopedTimer t(*env.clock, env.times.compress_ns);
        const ComputeRegion region(Work::kCompress, work / 2);
        ps_.begin(u_.data(), msg_.data(), msg_.data() + nu, normal_.get());
      }
      std::vector<float> unc_sum, p_sum, q_sum;
      // A represented model's factors: its own uncompressed elements and P, then its Q.
      const auto first =
          represented_ ? xc_.exchange_shaped(env, float_bytes(msg_.data(), nu + np), step, "powersgd.p",
                                             4 * (represented_->uncompressed + represented_->p_size))
                       : xc_.exchange(env, float_bytes(msg_.data(), nu + np), step, "powersgd.p");
      mean(env, first, msg_, 0, nu, unc_sum);
      mean(env, first, msg_, nu, np, p_sum);
      q_.resize(nq);
      {
        ScopedTimer t(*env.clock, env.times.compress_ns);
        const ComputeRegion region(Work::kCompress, work / 4);
        ps_.after_p(u_.data(), unc_sum.data(), p_sum.data(), world, q_.data());
      }
      const auto second = represented_
                              ? xc_.exchange_shaped(env, float_bytes(q_.data(), nq), step, "powersgd.q",
                                                    4 * represented_->q_size)
                              : xc_.exchange(env, float_bytes(q_.data(), nq), step, "powersgd.q");
      mean(env, second, q_, 0, nq, q_sum);
      {
        ScopedTimer t(*env.clock, env.times.compress_ns);
        const ComputeRegion region(Work::kCompress, work - work / 2 - work / 4);
        ps_.finish(u_.data(), q_sum.data(), world);
      }
    }
  }

  StrategyConfig cfg_;
  DcExchange xc_;
  kernels::PowerSgd ps_;
  std::unique_ptr<kernels::NormalSource> normal_;
  std::optional<kernels::PowerSgdPlan> represented_;  // the represented model's split; none: the trained one
  std::vector<float> xbar_, u_, msg_, q_, sum_;
  DdpBuckets buckets_;  // after every other member: its initialiser comes last
};

// ---- keys: PowerSGDState's arguments, under torch's names ------------------------------------

std::string check_powersgd(const StrategyConfig& c) { return kernels::validate(c.powersgd); }

constexpr StrategyKey kRank{
    .name = "matrix_approximation_rank",
    .kind = StrategyKey::Kind::kInteger,
    .lo = 1,
    .hi = 1024,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.rank = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.powersgd.rank}}; },
    .check = check_powersgd,  // every PowerSGDState argument, the first invalid one named
};
constexpr StrategyKey kStart{
    .name = "start_powerSGD_iter",
    .kind = StrategyKey::Kind::kInteger,
    .lo = 0,
    .hi = 1'000'000'000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.start_iter = std::get<int64_t>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.powersgd.start_iter}; },
};
constexpr StrategyKey kMinRate{
    .name = "min_compression_rate",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.min_compression_rate = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.powersgd.min_compression_rate}; },
};
constexpr StrategyKey kErrorFeedback{
    .name = "use_error_feedback",
    .kind = StrategyKey::Kind::kFlag,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.error_feedback = std::get<bool>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.powersgd.error_feedback}; },
};
constexpr StrategyKey kWarmStart{
    .name = "warm_start",
    .kind = StrategyKey::Kind::kFlag,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.warm_start = std::get<bool>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.powersgd.warm_start}; },
};
constexpr StrategyKey kEpsilon{
    .name = "orthogonalization_epsilon",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.orthogonalization_epsilon = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.powersgd.orthogonalization_epsilon}; },
};
constexpr StrategyKey kRandomSeed{
    .name = "random_seed",
    .kind = StrategyKey::Kind::kInteger,
    .lo = 0,
    .hi = std::numeric_limits<uint32_t>::max(),
    .set = [](StrategyConfig& c, const KeyValue& v) { c.powersgd.random_seed = static_cast<uint32_t>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.powersgd.random_seed}}; },
};

// Every strategy accepts the common keys; powersgd uses K and bucket_mb of them.
constexpr std::array<const StrategyKey*, 13> kPowerSgdKeys = {
    &strategy_keys::K,        &strategy_keys::density,   &strategy_keys::block, &strategy_keys::overlap,
    &strategy_keys::quantize, &strategy_keys::bucket_mb, &kRank,                &kStart,
    &kMinRate,                &kErrorFeedback,           &kWarmStart,           &kEpsilon,
    &kRandomSeed};
constexpr std::array<const StrategyKey*, 8> kPowerSgdReported = {
    &strategy_keys::K, &kRank, &kStart, &kMinRate, &kErrorFeedback, &kWarmStart, &kEpsilon, &kRandomSeed};

std::unique_ptr<Strategy> make_powersgd(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<PowerSgdStrategy>(cfg, env);
}

}  // namespace

extern const StrategyDescriptor kPowerSgd;
constexpr StrategyDescriptor kPowerSgd{
    .name = "powersgd",
    .description = "Gloo allreduce inside each DC; every K steps PowerSGD's low-rank factors P, Q (torch's "
                   "powerSGD_hook) between DC leaders",
    .needs = {.needs_intra_dc = true,
              .one_group = false,
              .exchanges_every_step = false,
              .survives_kills = true,
              .tensor_shapes = true},
    .keys = kPowerSgdKeys,
    .reported = kPowerSgdReported,
    .make = make_powersgd,
};

}  // namespace geotb::engine
