// naive_ddp: what DistributedDataParallel does with one process group spanning every data
// center. Every step, one allreduce of the full-precision gradient over all M*N ranks, ring
// ordered DC by DC, so M hops of the ring cross the WAN. By default the allreduce is Gloo's ring
// protocol (collectives/gloo_ring.h: what c10d ProcessGroupGloo, hence CPU DDP, runs), message
// by message over the transport; "collective": "eager_ring" selects the optimistic ring instead.
// DDP's buckets (strategies/ddp_buckets.h, "bucket_mb"): one allreduce per bucket group, overlapped
// with the backward pass when there is more than one; a group that does not scale (several buckets
// of a represented model, or one the proxy slice cannot stand for: DdpBuckets::scales) runs the
// eager ring whatever "collective" says (its messages carry the buckets' sizes and rounds).
// Then a plain SGD step on the averaged gradient.
#include <array>

#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/compute_charge.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

namespace {

class NaiveDdp final : public Strategy {
 public:
  NaiveDdp(const StrategyConfig& cfg, const WorkerEnv& env)
      : gloo_(cfg.collective == "gloo_ring"), buckets_(cfg, env) {}

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int) override {
    float* g = env.learner->grads();
    const size_t n = env.learner->num_params();
    // One allreduce per bucket group over the ring (every rank; the survivors after a node kill).
    // A group that scales runs as the whole gradient did (Gloo's ring by default); any other (a
    // represented model's group of buckets) the eager ring carrying its shape.
    const double scale = env.net->represent_scale();
    auto whole = [&](const BucketGroup& b) { return DdpBuckets::scales(b, scale); };
    auto gloo = [&](const BucketGroup& b) { return gloo_ && whole(b); };
    buckets_.run(
        env,
        [&](const BucketGroup& b) {
          return tags_.take("naive_ddp.step", gloo(b) ? gloo_ring_tag_count(b.n, env.ring.size())
                                                      : ring_allreduce_tag_count(env.ring.size()));
        },
        [&](const BucketGroup& b, const TagRange& tags) {
          if (gloo(b))
            gloo_ring_allreduce_sum(*env.net, env.ring, g + b.lo, b.n, tags);
          else if (whole(b))
            ring_allreduce_sum(*env.net, env.ring, g + b.lo, b.n, tags);
          else
            ring_allreduce_sum(*env.net, env.ring, g + b.lo, b.n, tags, DdpBuckets::shape(b));
        });
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
  DdpBuckets buckets_;
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
// only its collective and buckets.
constexpr std::array<const StrategyKey*, 7> kKeys = {&strategy_keys::K,        &strategy_keys::density,
                                                     &strategy_keys::block,    &strategy_keys::overlap,
                                                     &strategy_keys::quantize, &strategy_keys::bucket_mb,
                                                     &kCollective};
constexpr std::array<const StrategyKey*, 2> kReported = {&kCollective, &strategy_keys::bucket_mb};

std::unique_ptr<Strategy> make(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<NaiveDdp>(cfg, env);
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
