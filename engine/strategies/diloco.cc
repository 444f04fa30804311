// diloco: DiLoCo (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training of
// Language Models", arXiv:2311.08105), one replica group per data center. The update rule is
// written out in docs/guide/strategies.md ("diloco: the update rule"); in short, for DC d with
// model x_d, the outer model x̄ (identical in every DC) and the outer momentum buffer v
// (identical too):
//
//   every step    g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, g_d)   (inner
//                 optimizer: the scenario's SGD with momentum, its buffer kept per DC across rounds)
//   every H steps Δ_d = x̄ - x_d                        the DC's pseudo-gradient
//                 wire "int8": Δ_d <- deq(Q8(Δ_d))     per-block INT8 on the WAN (as INTELLECT-1),
//                                                       every DC uses the dequantised value
//                 wire "bf16": Δ_d <- bf16(Δ_d)        bfloat16, round to nearest even (as the
//                                                       DiLoCo papers' bf16 training sends it)
//                 Δ = sum_{d'} w_{d'} Δ_{d'}           (every DC leader sends Δ_d to the others;
//                                                       w_d = 1/M or workload "dc_weights")
//                 v <- μ v + Δ;  x̄ <- x̄ - η (Δ + μ v)  outer Nesterov SGD (PyTorch's rule), η = outer_lr,
//                                                       μ = outer_momentum
//                 x_d <- x̄
//   finish        one more outer step if inner steps were taken since the last one.
//
// With η = 1 and μ = 0, x̄ - Δ = the mean of the DC models: local_sgd with tau = H and local
// momentum, up to float rounding (tested).
//
// Drift control on the inner steps, as local_sgd's (strategies/drift_control.h), the outer model
// x̄ as the anchor: fedprox_mu > 0, g_d <- g_d + mu (x_d - x̄); scaffold, g_d <- g_d + (c - c_d),
// c_d+ = c_d - c + (x̄ - x_d) / (k η) with the DC's own (unquantised) x_d and η from the inner
// optimizer (scaffold_lr), and Δc_d = c_d+ - c_d sent in float32 after the pseudo-gradient
// (whatever the wire).
#include <array>
#include <cmath>
#include <cstring>
#include <span>

#include "engine/compute_charge.h"
#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/strategies/drift_control.h"
#include "kernels/bf16.h"
#include "kernels/compress.h"
#include "kernels/wire_format.h"

namespace geotb::engine {

namespace {

using kernels::from_bf16;
using kernels::to_bf16;

class Diloco final : public Strategy {
 public:
  Diloco(const StrategyConfig& cfg, const WorkerEnv& env)
      : cfg_(cfg),
        xc_(env),
        int8_(cfg.wire == "int8"),
        bf16_(cfg.wire == "bf16"),
        drift_(cfg, env.learner->num_params()),
        buckets_(cfg, env) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    outer_x_.assign(x, x + n);
    outer_v_.assign(n, 0.0f);
    delta_.assign(n, 0.0f);
    kcfg_.density = 1.0;
    kcfg_.block = cfg.block;
    kcfg_.values = kernels::ValueCoding::kInt8;
    kcfg_.rounding = kernels::Rounding::kNearest;  // deterministic: every DC member computes the same
    kcfg_.topk = kernels::TopkMode::kExact;
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      // FedProx's proximal gradient, SCAFFOLD's correction: part of the inner optimizer step.
      drift_.correct(env.learner->params(), outer_x_.data(), env.learner->grads());
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    if (++since_ >= cfg_.H) outer_step(env, step);
  }

  // A member of this DC died in the step's allreduce (node faults): no gradient; the inner step
  // still counts and an outer step due now still runs (the DCs stay in lock step). SCAFFOLD's k
  // does not count it (no optimizer step was taken).
  void discard_step(WorkerEnv& env, int step) override {
    if (++since_ >= cfg_.H) outer_step(env, step);
  }

  void finish(WorkerEnv& env) override {
    if (since_ > 0) outer_step(env, -1);
  }
  void save(WorkerEnv&, StateWriter& out) override {
    out.i64("inner_steps_since_outer", since_);
    out.floats("outer_model", outer_x_);
    out.floats("outer_momentum", outer_v_);
    drift_.save(out);
  }
  void restore(WorkerEnv& env, StateReader& in) override {
    const size_t n = env.learner->num_params();
    const int64_t s = in.i64("inner_steps_since_outer");
    if (s < 0 || s > 1000000) throw StateError("inner_steps_since_outer: " + std::to_string(s) + ": out of range");
    since_ = static_cast<int>(s);
    in.floats("outer_model", outer_x_, n);
    in.floats("outer_momentum", outer_v_, n);
    drift_.restore(in);
  }

 private:
  void outer_step(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    std::vector<uint8_t> own;
    if (drift_.scaffold()) {  // from the DC's own model, before it is replaced
      ScopedTimer t(*env.clock, env.times.compute_ns);
      delta_c_.resize(n);
      drift_.control_delta(outer_x_.data(), x, *env.opt, delta_c_.data());
    }
    {
      ScopedTimer t(*env.clock, int8_ || bf16_ ? env.times.compress_ns : env.times.compute_ns);
      {
        const ComputeRegion region(Work::kReduce, n);
        for (size_t i = 0; i < n; ++i) delta_[i] = outer_x_[i] - x[i];
      }
      if (int8_) {
        const ComputeRegion region(Work::kCompress, 2 * n);
        // No error feedback (INTELLECT-1 quantises each pseudo-gradient on its own): the residual
        // starts at 0 every round; every DC then uses the dequantised Δ_d, its own included.
        resid_.assign(n, 0.0f);
        kernels::compress_ef(delta_.data(), resid_.data(), n, kcfg_, own);
        std::fill(delta_.begin(), delta_.end(), 0.0f);
        kernels::decompress_add(own.data(), own.size(), delta_.data(), n, 1.0f);
      } else if (bf16_) {
        // Every DC uses the rounded Δ_d, its own included, as with INT8.
        const ComputeRegion region(Work::kCompress, n);
        own.resize(2 * n);
        for (size_t i = 0; i < n; ++i) {
          const uint16_t h = to_bf16(delta_[i]);
          delta_[i] = from_bf16(h);
          std::memcpy(own.data() + 2 * i, &h, 2);
        }
      } else {
        own = float_bytes(delta_.data(), n);
      }
    }
    // SCAFFOLD's Δc_d after the pseudo-gradient, float32 (its last 4 n bytes).
    const size_t tail = drift_.scaffold() ? n * sizeof(float) : 0;
    if (tail) {
      const size_t at = own.size();
      own.resize(at + tail);
      std::memcpy(own.data() + at, delta_c_.data(), tail);
    }
    const auto peers = xc_.exchange(env, own, step, "diloco.outer", int8_ ? kernels::kWireHeaderBytes : 0);
    ScopedTimer t(*env.clock, env.times.compute_ns);
    // The sums (an INT8 peer's decompression included), the mean and the outer step.
    const ComputeRegion region(Work::kReduce, static_cast<uint64_t>(env.num_dcs + 4 + (tail ? env.num_dcs : 0)) * n);
    sum_.assign(n, 0.0f);
    if (tail) dc_sum_.assign(n, 0.0f);
    // Summed in DC order, own contribution at its own place: the same order in every DC.
    for (int d = 0, k = 0; d < env.num_dcs; ++d) {
      const float wd = dc_mean_weight(env, d);  // 1 unless the DCs weigh differently: exact
      if (d == env.dc) {
        for (size_t i = 0; i < n; ++i) sum_[i] += wd * delta_[i];
        if (tail)
          for (size_t i = 0; i < n; ++i) dc_sum_[i] += wd * delta_c_[i];
        continue;
      }
      const auto& msg = peers[static_cast<size_t>(k++)];
      if (msg.size() < tail)
        throw TransportError("diloco: a message of " + std::to_string(msg.size()) + " bytes, expected SCAFFOLD's " +
                             std::to_string(tail) + " at least");
      if (tail) {  // at a byte offset (a bfloat16 Δ_d may leave it unaligned to floats)
        peer_.resize(n);
        std::memcpy(peer_.data(), msg.data() + (msg.size() - tail), tail);
        for (size_t i = 0; i < n; ++i) dc_sum_[i] += wd * peer_[i];
      }
      const std::span<const uint8_t> w(msg.data(), msg.size() - tail);  // the pseudo-gradient
      if (int8_) {
        kernels::decompress_add(w.data(), w.size(), sum_.data(), n, wd);
      } else if (bf16_) {
        if (w.size() != 2 * n)
          throw TransportError("diloco: a bfloat16 pseudo-gradient of " + std::to_string(w.size()) + " bytes, expected " +
                               std::to_string(2 * n));
        for (size_t i = 0; i < n; ++i) {
          uint16_t h;
          std::memcpy(&h, w.data() + 2 * i, 2);
          sum_[i] += wd * from_bf16(h);
        }
      } else {
        if (w.size() != n * sizeof(float))
          throw TransportError("diloco: a float32 pseudo-gradient of " + std::to_string(w.size()) + " bytes, expected " +
                               std::to_string(n * sizeof(float)));
        peer_.resize(n);
        std::memcpy(peer_.data(), w.data(), w.size());
        for (size_t i = 0; i < n; ++i) sum_[i] += wd * peer_[i];
      }
    }
    const float inv = dc_mean_scale(env);
    const float lr = static_cast<float>(cfg_.outer_lr), mu = static_cast<float>(cfg_.outer_momentum);
    for (size_t i = 0; i < n; ++i) {
      const float g = sum_[i] * inv;
      outer_v_[i] = mu * outer_v_[i] + g;
      outer_x_[i] -= lr * (g + mu * outer_v_[i]);
    }
    std::memcpy(x, outer_x_.data(), n * sizeof(float));
    if (tail) drift_.apply(dc_sum_.data(), inv);
    since_ = 0;
  }

  StrategyConfig cfg_;
  DcExchange xc_;
  bool int8_, bf16_;
  kernels::CompressConfig kcfg_;
  int since_ = 0;  // inner steps since the last outer step
  std::vector<float> outer_x_, outer_v_, delta_, resid_, sum_, peer_, delta_c_, dc_sum_;
  DriftControl drift_;  // FedProx, SCAFFOLD on the inner steps
  DdpBuckets buckets_;  // after every other member: its initialiser comes last
};

constexpr StrategyKey kH{
    .name = "H",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.H = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.H}}; },
    .check = [](const StrategyConfig& c) {
      return c.H < 1 || c.H > 1000000 ? "H: " + std::to_string(c.H) + ": must be in [1, 1000000] steps" : std::string();
    },
};

constexpr StrategyKey kOuterLr{
    .name = "outer_lr",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.outer_lr = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.outer_lr}; },
    .check = [](const StrategyConfig& c) {
      return !std::isfinite(c.outer_lr) || c.outer_lr <= 0 || c.outer_lr > 10
                 ? "outer_lr: " + show_value(c.outer_lr) + ": must be in (0, 10]"
                 : std::string();
    },
};

constexpr StrategyKey kOuterMomentum{
    .name = "outer_momentum",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.outer_momentum = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.outer_momentum}; },
    .check = [](const StrategyConfig& c) {
      return !std::isfinite(c.outer_momentum) || c.outer_momentum < 0 || c.outer_momentum >= 1
                 ? "outer_momentum: " + show_value(c.outer_momentum) + ": must be in [0, 1)"
                 : std::string();
    },
};

constexpr StrategyKey kWire{
    .name = "wire",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.wire = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.wire}; },
    .check = [](const StrategyConfig& c) {
      return c.wire != "float32" && c.wire != "int8" && c.wire != "bf16"
                 ? "wire: \"" + c.wire + "\": unknown (float32, bf16 or int8)"
                 : std::string();
    },
};

// Every strategy accepts the common keys; diloco uses `block` (the INT8 block, wire "int8").
constexpr std::array<const StrategyKey*, 13> kDilocoKeys = {
    &strategy_keys::K,          &strategy_keys::density,   &strategy_keys::block, &strategy_keys::overlap,
    &strategy_keys::quantize,   &strategy_keys::bucket_mb, &kH,                   &kOuterLr,
    &kOuterMomentum,            &kWire,                    &strategy_keys::fedprox_mu, &strategy_keys::scaffold,
    &strategy_keys::scaffold_lr};
constexpr std::array<const StrategyKey*, 8> kDilocoReported = {&kH,
                                                               &kOuterLr,
                                                               &kOuterMomentum,
                                                               &kWire,
                                                               &strategy_keys::block,
                                                               &strategy_keys::fedprox_mu,
                                                               &strategy_keys::scaffold,
                                                               &strategy_keys::scaffold_lr};

std::unique_ptr<Strategy> make_diloco(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<Diloco>(cfg, env);
}

}  // namespace

extern const StrategyDescriptor kDiloco;
constexpr StrategyDescriptor kDiloco{
    .name = "diloco",
    .description = "Gloo allreduce inside each DC; every H inner steps an outer Nesterov step on the DC-averaged "
                   "pseudo-gradient (float32, bfloat16 or INT8 on the WAN)",
    .needs = {.needs_intra_dc = true, .one_group = false, .exchanges_every_step = false, .survives_kills = true},
    .keys = kDilocoKeys,
    .reported = kDilocoReported,
    .make = make_diloco,
};

}  // namespace geotb::engine
