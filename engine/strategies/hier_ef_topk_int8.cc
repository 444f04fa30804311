// hier_ef_topk_int8: hierarchical synchronisation with error-feedback top-k + INT8 compression
// between data centers (the seed design). The exact update rule is written out in README.md
// ("hier_ef_topk_int8: the update rule"); in short, for DC d with model x_d:
//
//   every step      g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, g_d)
//   every K steps   (round r, DC leader)
//                   u   = x_d - mark_d                    progress since the last round
//                   v   = u + e_d                         add the error residual
//                   c_r = Q(topk_p(v)); s_r = deq(c_r)    compress (kernels::compress_ef)
//                   e_d = v - s_r                         residual keeps exactly what was not sent
//                   send c_r to every other DC in the background
//                   wait for round r-1 (overlap) or r (blocking) from every DC:
//                   xbar <- xbar + (1/M) sum_d' s_{d'}    the global anchor, identical everywhere
//                   x_d  <- xbar + s_r + e_d   (overlap: own progress not yet in xbar)
//                   x_d  <- xbar + e_d         (blocking)
//                   mark_d <- x_d; broadcast x_d inside the DC
//   finish          apply the last round, then one dense float32 exchange of each DC's remaining
//                   progress (x_d - mark_d + e_d), so every replica ends with the same model.
//
// `hierarchical` is the same code with density 1 and float32 values: uncompressed, residual 0.
#include <cstring>
#include <future>
#include <string>

#include "kernels/compress.h"
#include "engine/strategies/strategies.h"

namespace geotb::engine {

namespace {

constexpr uint64_t kExchangeTag = uint64_t{1} << 62;
constexpr uint64_t kFinalRound = uint64_t{1} << 40;

struct Arrived {
  std::vector<std::vector<uint8_t>> wires;  // one per peer DC
  double seconds = 0;                       // hand-off -> last peer message arrived
  uint64_t bytes_sent = 0;                  // our message to each peer
};

class HierEfTopkInt8 final : public Strategy {
 public:
  HierEfTopkInt8(const StrategyConfig& cfg, const WorkerEnv& env) : cfg_(cfg) {
    const size_t n = env.learner->num_params();
    if (env.local_rank == 0) {
      const float* x = env.learner->params();
      xbar_.assign(x, x + n);
      mark_.assign(x, x + n);
      resid_.assign(n, 0.0f);
      acc_.resize(n);
      s_cur_.assign(n, 0.0f);
      s_prev_.assign(n, 0.0f);
      kcfg_.density = cfg.density;
      kcfg_.block = cfg.block;
      kcfg_.values = cfg.quantize ? kernels::ValueCoding::kInt8 : kernels::ValueCoding::kFloat32;
      kcfg_.rounding = kernels::Rounding::kNearest;
      kcfg_.topk = kernels::TopkMode::kExact;
    }
  }

  void step(WorkerEnv& env, int step) override {
    const size_t n = env.learner->num_params();
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      env.intra->allreduce_mean(env.learner->grads(), n);
    }
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    if ((step + 1) % cfg_.K == 0) round(env, step);
  }

  void finish(WorkerEnv& env) override {
    const size_t n = env.learner->num_params();
    if (env.local_rank == 0) {
      if (pending_.valid()) apply_arrived(env, wait(env, pending_), s_prev_, last_round_step_);
      // Dense float32 exchange of everything not yet in xbar.
      float* x = env.learner->params();
      kernels::CompressConfig dense;
      dense.density = 1.0;
      dense.values = kernels::ValueCoding::kFloat32;
      std::vector<uint8_t> wire;
      {
        ScopedTimer t(*env.clock, env.times.compress_ns);
        for (size_t i = 0; i < n; ++i) acc_[i] = x[i] - mark_[i];
        kernels::compress_ef(acc_.data(), resid_.data(), n, dense, wire);
        std::fill(s_cur_.begin(), s_cur_.end(), 0.0f);
        kernels::decompress_add(wire.data(), wire.size(), s_cur_.data(), n, 1.0f);
      }
      auto fut = launch(env, std::move(wire), kExchangeTag | kFinalRound);
      apply_arrived(env, wait(env, fut), s_cur_, -1);
      std::memcpy(x, xbar_.data(), n * sizeof(float));
    }
    ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
    env.intra->broadcast(env.learner->params(), n, 0);
  }

 private:
  void round(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    if (env.local_rank == 0) {
      std::vector<uint8_t> wire;
      {
        ScopedTimer t(*env.clock, env.times.compress_ns);
        for (size_t i = 0; i < n; ++i) acc_[i] = x[i] - mark_[i];
        kernels::compress_ef(acc_.data(), resid_.data(), n, kcfg_, wire);
        std::fill(s_cur_.begin(), s_cur_.end(), 0.0f);
        kernels::decompress_add(wire.data(), wire.size(), s_cur_.data(), n, 1.0f);
      }
      auto fut = launch(env, std::move(wire), kExchangeTag | static_cast<uint64_t>(rounds_++));
      if (cfg_.overlap) {
        // Apply the previous round (it had K steps to arrive); this one flies under the next K.
        if (pending_.valid()) apply_arrived(env, wait(env, pending_), s_prev_, last_round_step_);
        pending_ = std::move(fut);
        last_round_step_ = step;
        ScopedTimer t(*env.clock, env.times.compress_ns);
        for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + s_cur_[i] + resid_[i];
        s_prev_.swap(s_cur_);
      } else {
        apply_arrived(env, wait(env, fut), s_cur_, step);
        ScopedTimer t(*env.clock, env.times.compress_ns);
        for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + resid_[i];
      }
      std::memcpy(mark_.data(), x, n * sizeof(float));
    }
    ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
    env.intra->broadcast(x, n, 0);
  }

  /// Hands `wire` to every other DC leader and collects theirs, on a background thread.
  std::future<Arrived> launch(WorkerEnv& env, std::vector<uint8_t> wire, uint64_t tag) {
    const uint64_t sent = wire.size();
    Transport* net = env.net;
    const emu::Clock* clock = env.clock;
    std::vector<int> peers;
    for (int d = 0; d < env.num_dcs; ++d)
      if (d != env.dc) peers.push_back(env.dc_leaders[static_cast<size_t>(d)]);
    return std::async(std::launch::async, [net, clock, peers, tag, sent, w = std::move(wire)]() {
      const auto t0 = clock->now();
      for (int p : peers) net->send(p, tag, w);
      Arrived a;
      a.bytes_sent = sent;
      for (int p : peers) a.wires.push_back(net->recv(p, tag));
      a.seconds = std::chrono::duration<double>(clock->now() - t0).count();
      return a;
    });
  }

  Arrived wait(WorkerEnv& env, std::future<Arrived>& f) {
    const auto t0 = env.clock->now();
    Arrived a;
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      a = f.get();
    }
    const double waited = std::chrono::duration<double>(env.clock->now() - t0).count();
    if (a.seconds > waited) env.times.overlapped_comm_ns += static_cast<uint64_t>((a.seconds - waited) * 1e9);
    return a;
  }

  /// xbar += (own + sum of peers) / M, recording the exchange.
  void apply_arrived(WorkerEnv& env, const Arrived& a, const std::vector<float>& own, int step) {
    const size_t n = env.learner->num_params();
    ScopedTimer t(*env.clock, env.times.compress_ns);
    sum_.assign(own.begin(), own.end());
    for (const auto& w : a.wires) kernels::decompress_add(w.data(), w.size(), sum_.data(), n, 1.0f);
    const float inv = 1.0f / static_cast<float>(env.num_dcs);
    for (size_t i = 0; i < n; ++i) xbar_[i] += sum_[i] * inv;
    ExchangeRecord rec;
    rec.step = step;
    rec.bytes_sent = a.bytes_sent;
    rec.seconds = a.seconds;
    rec.lower_bound_s = (env.wan_rate_bps > 0 ? 8.0 * static_cast<double>(rec.bytes_sent) / env.wan_rate_bps : 0.0) +
                        env.wan_rtt_s / 2;
    env.exchanges.push_back(rec);
  }

  StrategyConfig cfg_;
  kernels::CompressConfig kcfg_;
  std::vector<float> xbar_, mark_, resid_, acc_, s_cur_, s_prev_, sum_;
  std::future<Arrived> pending_;
  int rounds_ = 0;
  int last_round_step_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_hier_ef_topk_int8(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<HierEfTopkInt8>(cfg, env);
}

}  // namespace geotb::engine
