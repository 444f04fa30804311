// lan: the reference for "fraction of same-DC throughput". The same workers, data and model, as
// if every worker sat in one data center: plain DDP, one c10d Gloo allreduce of the gradient
// over every worker each step (the WAN is replaced by the data center's own network, so no
// byte crosses it), then an SGD step.
// The same step is `naive_ddp_c10d` (registry.cc): DDP itself, the Gloo group spanning the data
// centers, in the process and dpdk modes, where Gloo's own TCP crosses the (emulated) WAN; the
// reference for naive_ddp's message-level model of Gloo's ring (collectives/gloo_ring.h).
#include "engine/strategies/strategies.h"

namespace geotb::engine {

namespace {

class LanDdp final : public Strategy {
 public:
  void step(WorkerEnv& env, int) override {
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      env.intra->allreduce_mean(env.learner->grads(), env.learner->num_params());
    }
    ScopedTimer t(*env.clock, env.times.compute_ns);
    env.opt->step(env.learner->params(), env.learner->grads());
  }
  void finish(WorkerEnv&) override {}
};

}  // namespace

std::unique_ptr<Strategy> make_lan_ddp(const StrategyConfig&, const WorkerEnv&) { return std::make_unique<LanDdp>(); }

}  // namespace geotb::engine
