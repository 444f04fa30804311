// naive_ddp: what DistributedDataParallel does with one flat process group spanning every data
// center. Every step, one ring allreduce of the full-precision gradient over all M*N ranks, ring
// ordered DC by DC, so M hops of the ring cross the WAN and every one of its 2(p-1) steps waits
// for them. Then a plain SGD step on the averaged gradient.
#include "engine/collectives/ring_allreduce.h"
#include "engine/strategies/strategies.h"

namespace geotb::engine {

namespace {

class NaiveDdp final : public Strategy {
 public:
  void step(WorkerEnv& env, int step) override {
    float* g = env.learner->grads();
    const size_t n = env.learner->num_params();
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      ring_allreduce_sum(*env.net, env.ring, g, n, static_cast<uint64_t>(step) << 20);
    }
    ScopedTimer t(*env.clock, env.times.compute_ns);
    const float inv = 1.0f / static_cast<float>(env.world);
    for (size_t i = 0; i < n; ++i) g[i] *= inv;
    env.opt->step(env.learner->params(), g);
  }
  // Every replica applied the same averaged gradients: nothing left to reconcile.
  void finish(WorkerEnv&) override {}
};

}  // namespace

std::unique_ptr<Strategy> make_naive_ddp(const StrategyConfig&, const WorkerEnv&) {
  return std::make_unique<NaiveDdp>();
}

}  // namespace geotb::engine
