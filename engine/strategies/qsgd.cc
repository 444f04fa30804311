// qsgd: hierarchical synchronisation with QSGD-quantised progress between data centers (Alistarh
// et al., "QSGD: Communication-Efficient SGD via Gradient Quantization and Encoding", NeurIPS
// 2017; the quantiser and its wire format: kernels/qsgd.h). The update rule is written out in
// docs/guide/strategies.md ("qsgd: the update rule"); in short, for DC d with model x_d, the anchor
// x̄ (identical in every DC, initially x_0):
//
//   every step     g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, g_d)
//   every K steps  (round r, counted from 0)
//                  u_d = x_d - x̄                        progress since the last round
//                  c_d = Q_s(u_d), seed qsgd_seed(run seed, d, r)   stochastic, per bucket of d
//                  the DC leaders exchange c_d (blocking), each forwards the others' to its members
//                  x̄ <- x̄ + sum_{d'} w_{d'} deq(c_{d'})  in DC order, own message included
//                  x_d <- x̄
//   finish         if steps were taken since the last round: one dense float32 exchange of
//                  u_d = x_d - x̄ and x_d <- x̄ + sum_{d'} w_{d'} u_{d'}: every replica ends identical.
//
// No error feedback: E[deq(c_d)] = u_d (kernels/qsgd.h), so x̄'s update is an unbiased estimate of
// the DCs' mean progress. Every worker of a DC quantises its own replica (identical after each
// Gloo allreduce) with the same seed, so it holds the same c_d as its leader without a message;
// only the leader talks to the WAN. The momentum buffers stay per DC (as hierarchical's).
// State beyond the model and optimizer: x̄, the steps since the last round, the round counter
// (the random stream is keyed by it: no generator state).
#include <array>
#include <cstring>

#include "engine/compute_charge.h"
#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "kernels/qsgd.h"

namespace geotb::engine {

namespace {

class Qsgd final : public Strategy {
 public:
  Qsgd(const StrategyConfig& cfg, const WorkerEnv& env) : cfg_(cfg), xc_(env), buckets_(cfg, env) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    anchor_.assign(x, x + n);
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    if (++since_ >= cfg_.K) round(env, step);
  }

  void finish(WorkerEnv& env) override {
    if (since_ == 0) return;  // the last step ended a round: every replica holds x̄ already
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      const ComputeRegion region(Work::kReduce, n);
      own_.resize(n);
      for (size_t i = 0; i < n; ++i) own_[i] = x[i] - anchor_[i];
    }
    const auto peers = xc_.exchange(env, float_bytes(own_.data(), n), -1, "qsgd.final");
    ScopedTimer t(*env.clock, env.times.compute_ns);
    const ComputeRegion region(Work::kReduce, static_cast<uint64_t>(env.num_dcs + 1) * n);
    dc_weighted_sum(env, peers, own_.data(), 0, n, sum_);
    rebase(env);
  }

  void save(WorkerEnv&, StateWriter& out) override {
    out.floats("anchor", anchor_);
    out.i64("steps_since_round", since_);
    out.i64("round", round_);
  }
  void restore(WorkerEnv& env, StateReader& in) override {
    in.floats("anchor", anchor_, env.learner->num_params());
    const int64_t s = in.i64("steps_since_round");
    if (s < 0 || s >= cfg_.K)
      throw StateError("steps_since_round: " + std::to_string(s) + ": out of range [0, K = " + std::to_string(cfg_.K) +
                       ")");
    since_ = static_cast<int>(s);
    const int64_t r = in.i64("round");
    if (r < 0) throw StateError("round: " + std::to_string(r) + ": negative");
    round_ = static_cast<uint64_t>(r);
  }

 private:
  void round(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    std::vector<uint8_t> wire;
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, 3 * n);  // progress, quantise + encode, decode own
      own_.resize(n);
      for (size_t i = 0; i < n; ++i) own_[i] = x[i] - anchor_[i];
      const kernels::QsgdConfig qc{.levels = cfg_.levels,
                                   .bucket = cfg_.bucket,
                                   .seed = kernels::qsgd_seed(env.seed, static_cast<uint64_t>(env.dc), round_)};
      kernels::qsgd_encode(own_.data(), n, qc, wire);
      // Own contribution as every other DC decodes it: deq(c_d), exactly.
      std::fill(own_.begin(), own_.end(), 0.0f);
      kernels::qsgd_decode_add(wire.data(), wire.size(), own_.data(), n, 1.0f);
    }
    // The header does not grow with the model (docs/guide/represented.md); norms and codes do.
    const auto peers = xc_.exchange(env, wire, step, "qsgd.round", kernels::kQsgdHeaderBytes);
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, static_cast<uint64_t>(env.num_dcs + 1) * n);  // decode, sum, re-base
      // Summed in DC order, own contribution at its own place: the same order in every DC, so
      // that every DC's anchor, hence every replica, is bit-identical.
      dc_weighted_sum(env, own_.data(), n, sum_, [&](size_t k, float w, float* sum) {
        kernels::qsgd_decode_add(peers[k].data(), peers[k].size(), sum, n, w);
      });
      rebase(env);
    }
    ++round_;
  }

  /// x̄ <- x̄ + sum_ * dc_mean_scale; x_d <- x̄; the round's steps start again.
  void rebase(WorkerEnv& env) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    const float inv = dc_mean_scale(env);
    for (size_t i = 0; i < n; ++i) anchor_[i] += sum_[i] * inv;
    std::memcpy(x, anchor_.data(), n * sizeof(float));
    since_ = 0;
  }

  StrategyConfig cfg_;
  DcExchange xc_;
  std::vector<float> anchor_;  // x̄: the model of the last round, identical everywhere
  std::vector<float> own_, sum_;
  int since_ = 0;        // steps since the last round
  uint64_t round_ = 0;   // rounds done: the counter of the stochastic rounding's stream
  DdpBuckets buckets_;   // after every other member: its initialiser comes last
};

constexpr StrategyKey kLevels{
    .name = "levels",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.levels = static_cast<uint32_t>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.levels}}; },
    .check = [](const StrategyConfig& c) {
      return c.levels < 1 || c.levels > kernels::kQsgdMaxLevels
                 ? "levels: " + show_value(static_cast<int32_t>(c.levels)) + ": must be in [1, 65535] levels"
                 : std::string();
    },
};

constexpr StrategyKey kBucket{
    .name = "bucket",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.bucket = static_cast<uint32_t>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.bucket}}; },
    .check = [](const StrategyConfig& c) {
      return c.bucket < 1 || c.bucket > (1u << 24)
                 ? "bucket: " + show_value(static_cast<int32_t>(c.bucket)) + ": must be in [1, 16777216] elements"
                 : std::string();
    },
};

// Every strategy accepts the common keys; qsgd uses K (blocking rounds: overlap is not used).
constexpr std::array<const StrategyKey*, 8> kQsgdKeys = {&strategy_keys::K,       &strategy_keys::density,
                                                         &strategy_keys::block,   &strategy_keys::overlap,
                                                         &strategy_keys::quantize, &strategy_keys::bucket_mb,
                                                         &kLevels,                &kBucket};
constexpr std::array<const StrategyKey*, 3> kQsgdReported = {&strategy_keys::K, &kLevels, &kBucket};

std::unique_ptr<Strategy> make_qsgd(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<Qsgd>(cfg, env);
}

}  // namespace

extern const StrategyDescriptor kQsgd;
constexpr StrategyDescriptor kQsgd{
    .name = "qsgd",
    .description = "Gloo allreduce inside each DC; every K steps the DC leaders exchange their QSGD-quantised "
                   "progress (s levels, an L2 norm per bucket; unbiased, no error feedback)",
    .needs = {.needs_intra_dc = true, .one_group = false, .exchanges_every_step = false, .survives_kills = false},
    .keys = kQsgdKeys,
    .reported = kQsgdReported,
    .make = make_qsgd,
};

}  // namespace geotb::engine
