// naive_ddp: what DistributedDataParallel does with one process group spanning every data
// center. Every step, one allreduce of the full-precision gradient over all M*N ranks, ring
// ordered DC by DC, so M hops of the ring cross the WAN. By default the allreduce is Gloo's ring
// protocol (collectives/gloo_ring.h: what c10d ProcessGroupGloo, hence CPU DDP, runs), message
// by message over the transport; "collective": "eager_ring" selects the optimistic ring instead.
// Then a plain SGD step on the averaged gradient.
#include <array>

#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/compute_charge.h"
#include "engine/strategies/descriptor.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

namespace {

class NaiveDdp final : public Strategy {
 public:
  explicit NaiveDdp(const StrategyConfig& cfg) : gloo_(cfg.collective == "gloo_ring") {}

  void step(WorkerEnv& env, int) override {
    float* g = env.learner->grads();
    const size_t n = env.learner->num_params();
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      // One allreduce per step over the ring (every rank; the survivors after a node kill).
      const uint64_t tags_per_step =
          gloo_ ? gloo_ring_tag_count(n, env.ring.size()) : ring_allreduce_tag_count(env.ring.size());
      const TagRange tags = tags_.take("naive_ddp.step", tags_per_step);
      if (gloo_)
        gloo_ring_allreduce_sum(*env.net, env.ring, g, n, tags);
      else
        ring_allreduce_sum(*env.net, env.ring, g, n, tags);
    }
    ScopedTimer t(*env.clock, env.times.compute_ns);
    {
      const ComputeRegion region(Work::kReduce, n);  // the mean's scaling, counted for every strategy
      const float inv = 1.0f / static_cast<float>(env.ring.size());  // the participants (env.world without faults)
      for (size_t i = 0; i < n; ++i) g[i] *= inv;
    }
    env.opt->step(env.learner->params(), g);
  }
  // Every replica applied the same averaged gradients: nothing left to reconcile.
  void finish(WorkerEnv&) override {}
  // No state of its own: the gradient allreduce starts from scratch every step.
  void save(WorkerEnv&, StateWriter&) override {}
  void restore(WorkerEnv&, StateReader&) override {}

 private:
  bool gloo_;
  TagAllocator tags_{strategy_tags()};
};

// naive_ddp's allreduce: "gloo_ring" or "eager_ring" (StrategyConfig::collective).
constexpr StrategyKey kCollective{
    .name = "collective",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.collective = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.collective}; },
    .check = [](const StrategyConfig& c) {
      return c.collective != "gloo_ring" && c.collective != "eager_ring"
                 ? "collective: \"" + c.collective + "\": unknown (gloo_ring or eager_ring)"
                 : std::string();
    },
};

// Every strategy accepts the common keys (scenarios may set them on any entry); naive_ddp uses
// only its collective.
constexpr std::array<const StrategyKey*, 6> kKeys = {&strategy_keys::K,       &strategy_keys::density,
                                                     &strategy_keys::block,   &strategy_keys::overlap,
                                                     &strategy_keys::quantize, &kCollective};
constexpr std::array<const StrategyKey*, 1> kReported = {&kCollective};

std::unique_ptr<Strategy> make(const StrategyConfig& cfg, const WorkerEnv&) {
  return std::make_unique<NaiveDdp>(cfg);
}

}  // namespace

extern const StrategyDescriptor kNaiveDdp;
constexpr StrategyDescriptor kNaiveDdp{
    .name = "naive_ddp",
    .description = "DDP with one group spanning every site: a float32 gradient allreduce over all ranks every step",
    .needs = {.needs_intra_dc = false, .one_group = false, .exchanges_every_step = true, .survives_kills = true},
    .keys = kKeys,
    .reported = kReported,
    .make = make,
};

}  // namespace geotb::engine
