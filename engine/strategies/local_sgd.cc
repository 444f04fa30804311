// local_sgd: periodic model averaging between data centers (local SGD / FedAvg across sites) with
// a warm-up. The update rule is written out in docs/guide/strategies.md ("local_sgd: the update
// rule"); in short, for DC d with model x_d and momentum buffer m_d:
//
//   every step      g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, m_d, g_d)
//   every tau steps (tau' = warmup_tau for steps < W = warmup_steps, counted from the last averaging)
//                   x_d <- sum_{d'} w_{d'} x_{d'}            (every DC leader sends x_d to the others)
//                   m_d <- sum_{d'} w_{d'} m_{d'}  if momentum_sync = "averaged" (else m_d stays local)
//                   (w_d = 1/M, or the DC's share of workers or examples: workload "dc_weights")
//   finish          one more averaging if steps were taken since the last one: every replica ends
//                   with the same model.
//   fedprox_mu > 0  FedProx (Li et al., "Federated Optimization in Heterogeneous Networks", MLSys
//                   2020): every step g_d <- g_d + mu (x_d - xbar), xbar the model of the last
//                   averaging (x_0 before the first), before the SGD step.
//   scaffold        SCAFFOLD (Karimireddy et al., ICML 2020), option II, each DC one client, global
//                   step size 1: every step g_d <- g_d + (c - c_d) (after FedProx's term); at an
//                   averaging after k steps taken, c_d+ = c_d - c + (xbar - x_d) / (k η), η the
//                   optimizer's lr (scaffold_lr "effective": lr / (1 - momentum)), every DC sends
//                   Δc_d = c_d+ - c_d after its model, c <- c + (1/M) sum Δc_{d'}, c_d <- c_d+
//                   (strategies/drift_control.h).
//
// Sums run in DC order in every DC, so every replica of every DC is bit-identical after an
// averaging. With tau = 1 and averaged momentum this is naive DDP up to float summation order
// (SGD with momentum is linear in g): tested.
#include <array>
#include <cstring>

#include "engine/compute_charge.h"
#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/strategies/drift_control.h"

namespace geotb::engine {

namespace {

class LocalSgd final : public Strategy {
 public:
  LocalSgd(const StrategyConfig& cfg, const WorkerEnv& env)
      : cfg_(cfg),
        xc_(env),
        averaged_(cfg.momentum_sync == "averaged"),
        drift_(cfg, env.learner->num_params()),
        buckets_(cfg, env) {
    if (drift_.needs_anchor())
      anchor_.assign(env.learner->params(), env.learner->params() + env.learner->num_params());
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      // FedProx's proximal gradient, SCAFFOLD's correction: part of the optimizer step.
      drift_.correct(env.learner->params(), anchor_.data(), env.learner->grads());
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    ++since_;
    const int period = step < cfg_.warmup_steps ? cfg_.warmup_tau : cfg_.tau;
    if (since_ >= period) average(env, step);
  }

  // A member of this DC died in the step's allreduce (node faults): no gradient, but the step
  // counts towards the period, and an averaging due now still runs (the DCs stay in lock step).
  // SCAFFOLD's k does not count it (no optimizer step was taken).
  void discard_step(WorkerEnv& env, int step) override {
    ++since_;
    const int period = step < cfg_.warmup_steps ? cfg_.warmup_tau : cfg_.tau;
    if (since_ >= period) average(env, step);
  }

  void finish(WorkerEnv& env) override {
    if (since_ > 0) average(env, -1);
  }
  // The momentum buffers are the optimizer's (saved with the worker); the round position is ours.
  void save(WorkerEnv&, StateWriter& out) override {
    out.i64("steps_since_average", since_);
    if (!anchor_.empty()) out.floats("last_average", anchor_);
    drift_.save(out);
  }
  void restore(WorkerEnv& env, StateReader& in) override {
    const int64_t s = in.i64("steps_since_average");
    if (s < 0 || s > 1000000) throw StateError("steps_since_average: " + std::to_string(s) + ": out of range");
    since_ = static_cast<int>(s);
    if (!anchor_.empty()) in.floats("last_average", anchor_, env.learner->num_params());
    drift_.restore(in);
  }

 private:
  void average(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    const bool with_m = averaged_ && env.opt->uses_momentum();
    float* m = env.opt->momentum_data();
    // The message: the model, then the momentum (averaged), then SCAFFOLD's Δc_d.
    const size_t parts = 1 + (with_m ? 1 : 0) + (drift_.scaffold() ? 1 : 0);
    std::vector<uint8_t> own = float_bytes(x, n);
    own.resize(parts * n * sizeof(float));
    if (with_m) std::memcpy(own.data() + n * sizeof(float), m, n * sizeof(float));
    if (drift_.scaffold()) {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      delta_c_.resize(n);
      drift_.control_delta(anchor_.data(), x, *env.opt, delta_c_.data());
      std::memcpy(own.data() + (parts - 1) * n * sizeof(float), delta_c_.data(), n * sizeof(float));
    }
    const auto peers = xc_.exchange(env, own, step, "local_sgd.average");
    ScopedTimer t(*env.clock, env.times.compute_ns);
    const ComputeRegion region(Work::kReduce, static_cast<uint64_t>(env.num_dcs + 1) * parts * n);  // sums + scaling
    own_f_.resize(parts * n);
    floats_from(own, 0, own_f_.data(), parts * n);
    dc_weighted_sum(env, peers, own_f_.data(), 0, parts * n, sum_);  // in DC order, own at its own place
    const float inv = dc_mean_scale(env);
    for (size_t i = 0; i < n; ++i) x[i] = sum_[i] * inv;
    if (with_m)
      for (size_t i = 0; i < n; ++i) m[i] = sum_[n + i] * inv;
    if (drift_.scaffold()) drift_.apply(sum_.data() + (parts - 1) * n, inv);
    if (!anchor_.empty()) std::memcpy(anchor_.data(), x, n * sizeof(float));
    since_ = 0;
  }

  StrategyConfig cfg_;
  DcExchange xc_;
  bool averaged_;
  int since_ = 0;  // steps since the last averaging
  std::vector<float> sum_, own_f_, delta_c_;
  DriftControl drift_;         // FedProx, SCAFFOLD
  std::vector<float> anchor_;  // the model of the last averaging; empty unless FedProx or SCAFFOLD
  DdpBuckets buckets_;  // after every other member: its initialiser comes last
};

std::string show_int(const char* key, int v, int lo, const char* unit) {
  return std::string(key) + ": " + std::to_string(v) + ": must be in [" + std::to_string(lo) + ", 1000000] " + unit;
}

constexpr StrategyKey kTau{
    .name = "tau",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.tau = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.tau}}; },
    .check = [](const StrategyConfig& c) {
      return c.tau < 1 || c.tau > 1000000 ? show_int("tau", c.tau, 1, "steps") : std::string();
    },
};

constexpr StrategyKey kWarmupSteps{
    .name = "warmup_steps",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.warmup_steps = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.warmup_steps}}; },
    .check = [](const StrategyConfig& c) {
      return c.warmup_steps < 0 || c.warmup_steps > 1000000 ? show_int("warmup_steps", c.warmup_steps, 0, "steps")
                                                             : std::string();
    },
};

constexpr StrategyKey kWarmupTau{
    .name = "warmup_tau",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.warmup_tau = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.warmup_tau}}; },
    .check = [](const StrategyConfig& c) {
      return c.warmup_tau < 1 || c.warmup_tau > 1000000 ? show_int("warmup_tau", c.warmup_tau, 1, "steps")
                                                        : std::string();
    },
};

constexpr StrategyKey kMomentumSync{
    .name = "momentum_sync",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.momentum_sync = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.momentum_sync}; },
    .check = [](const StrategyConfig& c) {
      return c.momentum_sync != "local" && c.momentum_sync != "averaged"
                 ? "momentum_sync: \"" + c.momentum_sync + "\": unknown (local or averaged)"
                 : std::string();
    },
};

// Every strategy accepts the common keys (scenarios may set them on any entry); local_sgd uses
// only its own.
constexpr std::array<const StrategyKey*, 13> kLocalSgdKeys = {
    &strategy_keys::K,          &strategy_keys::density,  &strategy_keys::block,      &strategy_keys::overlap,
    &strategy_keys::quantize,   &strategy_keys::bucket_mb, &kTau,                     &kWarmupSteps,
    &kWarmupTau,                &kMomentumSync,           &strategy_keys::fedprox_mu, &strategy_keys::scaffold,
    &strategy_keys::scaffold_lr};
constexpr std::array<const StrategyKey*, 7> kLocalSgdReported = {
    &kTau,          &kWarmupSteps, &kWarmupTau, &kMomentumSync, &strategy_keys::fedprox_mu, &strategy_keys::scaffold,
    &strategy_keys::scaffold_lr};

std::unique_ptr<Strategy> make_local_sgd(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<LocalSgd>(cfg, env);
}

}  // namespace

extern const StrategyDescriptor kLocalSgd;
constexpr StrategyDescriptor kLocalSgd{
    .name = "local_sgd",
    .description = "Gloo allreduce inside each DC; every tau steps (warmup_tau for the first warmup_steps) the DC "
                   "models are averaged over the WAN",
    .needs = {.needs_intra_dc = true, .one_group = false, .exchanges_every_step = false, .survives_kills = true},
    .keys = kLocalSgdKeys,
    .reported = kLocalSgdReported,
    .make = make_local_sgd,
};

}  // namespace geotb::engine
