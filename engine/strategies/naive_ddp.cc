// naive_ddp: what DistributedDataParallel does with one process group spanning every data
// center. Every step, one allreduce of the full-precision gradient over all M*N ranks, ring
// ordered DC by DC, so M hops of the ring cross the WAN. By default the allreduce is Gloo's ring
// protocol (collectives/gloo_ring.h: what c10d ProcessGroupGloo, hence CPU DDP, runs), message
// by message over the transport; "collective": "eager_ring" selects the optimistic ring instead.
// Then a plain SGD step on the averaged gradient.
#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/strategies/strategies.h"

namespace geotb::engine {

namespace {

class NaiveDdp final : public Strategy {
 public:
  explicit NaiveDdp(bool gloo) : gloo_(gloo) {}
  void step(WorkerEnv& env, int step) override {
    float* g = env.learner->grads();
    const size_t n = env.learner->num_params();
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      const uint64_t tag = static_cast<uint64_t>(step) << 21;
      if (gloo_)
        gloo_ring_allreduce_sum(*env.net, env.ring, g, n, tag);
      else
        ring_allreduce_sum(*env.net, env.ring, g, n, tag);
    }
    ScopedTimer t(*env.clock, env.times.compute_ns);
    const float inv = 1.0f / static_cast<float>(env.world);
    for (size_t i = 0; i < n; ++i) g[i] *= inv;
    env.opt->step(env.learner->params(), g);
  }
  // Every replica applied the same averaged gradients: nothing left to reconcile.
  void finish(WorkerEnv&) override {}

 private:
  bool gloo_;
};

}  // namespace

std::unique_ptr<Strategy> make_naive_ddp(const StrategyConfig& cfg, const WorkerEnv&) {
  return std::make_unique<NaiveDdp>(cfg.collective == "gloo_ring");
}

}  // namespace geotb::engine
