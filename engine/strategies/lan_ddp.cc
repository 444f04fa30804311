// lan: the reference for "fraction of same-DC throughput". The same workers, data and model, as
// if every worker sat in one data center: plain DDP, one c10d Gloo allreduce of the gradient
// over every worker each step (the WAN is replaced by the data center's own network, so no
// byte crosses it), then an SGD step. DDP's buckets as naive_ddp's (strategies/ddp_buckets.h,
// "bucket_mb"): the same reference, bucket for bucket.
// The same step is `naive_ddp_c10d`: DDP itself, the Gloo group spanning the data centers, in the
// process and dpdk modes, where Gloo's own TCP crosses the (emulated) WAN; the reference for
// naive_ddp's message-level model of Gloo's ring (collectives/gloo_ring.h).
#include <array>

#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"

namespace geotb::engine {

namespace {

class LanDdp final : public Strategy {
 public:
  LanDdp(const StrategyConfig& cfg, const WorkerEnv& env) : buckets_(cfg, env) {}

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int) override {
    buckets_.intra_mean(env);
    ScopedTimer t(*env.clock, env.times.compute_ns);
    env.opt->step(env.learner->params(), env.learner->grads());
  }
  void finish(WorkerEnv&) override {}
  // No state of its own (the optimizer's is saved with the worker's).
  void save(WorkerEnv&, StateWriter&) override {}
  void restore(WorkerEnv&, StateReader&) override {}

 private:
  DdpBuckets buckets_;
};

std::unique_ptr<Strategy> make_lan_ddp(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<LanDdp>(cfg, env);
}

// Every strategy accepts the common keys (scenarios may set them on any entry); these use only
// the buckets.
constexpr std::array<const StrategyKey*, 6> kLanDdpKeys = {&strategy_keys::K,        &strategy_keys::density,
                                                           &strategy_keys::block,    &strategy_keys::overlap,
                                                           &strategy_keys::quantize, &strategy_keys::bucket_mb};
// The report shows K and overlap for every strategy with a Gloo group per DC (as it always has),
// and the buckets of the DDP allreduce that is the whole step.
constexpr std::array<const StrategyKey*, 3> kLanDdpReported = {&strategy_keys::K, &strategy_keys::overlap,
                                                               &strategy_keys::bucket_mb};

}  // namespace

extern const StrategyDescriptor kLan;
constexpr StrategyDescriptor kLan{
    .name = "lan",
    .description = "the same-DC reference: every worker in one c10d Gloo group, gradient allreduce every step, no WAN",
    .needs = {.needs_intra_dc = true,
              .one_group = true,
              .exchanges_every_step = false,
              .co_located = true,
              .survives_kills = true},
    .keys = kLanDdpKeys,
    .reported = kLanDdpReported,
    .make = make_lan_ddp,
};

// DDP itself: one c10d ProcessGroupGloo spanning the data centers, its TCP through the real WAN.
extern const StrategyDescriptor kNaiveDdpC10d;
constexpr StrategyDescriptor kNaiveDdpC10d{
    .name = "naive_ddp_c10d",
    .description = "DDP itself: one c10d Gloo group spanning every site (process and dpdk modes only)",
    .needs = {.needs_intra_dc = true,
              .one_group = true,
              .exchanges_every_step = true,
              .co_located = false,
              .real_network_only = true},
    .keys = kLanDdpKeys,
    .reported = kLanDdpReported,
    .make = make_lan_ddp,
};

}  // namespace geotb::engine
