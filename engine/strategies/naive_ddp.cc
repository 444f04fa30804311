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
//
// "wire": "bf16" | "fp16": DDP's compress hooks, as torch 1.13.1 writes them
// (torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py, bf16_compress_hook and
// fp16_compress_hook: `bucket.buffer().to(torch.<16-bit type>).div_(world_size)`, allreduce,
// then `decompressed_tensor.copy_(fut.value()[0])`). Per bucket group: each element cast to 16
// bits (round to nearest even; binary16 overflows to ±inf), divided by the world size in 16 bits
// (the float quotient rounded to 16 bits: both hooks divide BEFORE the allreduce, to avoid overflow),
// allreduced over the same ring on 2-byte elements with every hop's partial sum rounded to 16 bits
// (collectives/gloo_ring.h, ring_allreduce.h), and cast back to float32 (exact): the mean, with
// no division after. torch 1.13's Gloo sums float16 but has no bfloat16 (the hook needs NCCL):
// "bf16" on "gloo_ring" is Gloo's schedule with NCCL's bfloat16 sums. Docs:
// docs/guide/strategies.md "16-bit wires".
#include <array>
#include <optional>
#include <vector>

#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/compute_charge.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/transport/tags.h"
#include "kernels/wire16.h"

namespace geotb::engine {

namespace {

class NaiveDdp final : public Strategy {
 public:
  NaiveDdp(const StrategyConfig& cfg, const WorkerEnv& env)
      : gloo_(cfg.collective == "gloo_ring"), wire16_(kernels::parse_wire16(cfg.wire)), buckets_(cfg, env) {}

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
    const size_t elem = wire16_ ? sizeof(uint16_t) : sizeof(float);
    buckets_.run(
        env,
        [&](const BucketGroup& b) {
          return tags_.take("naive_ddp.step", gloo(b) ? gloo_ring_tag_count(b.n, env.ring.size(), {}, elem)
                                                      : ring_allreduce_tag_count(env.ring.size()));
        },
        [&](const BucketGroup& b, const TagRange& tags) {
          if (wire16_)
            reduce16(env, b, tags, gloo(b), whole(b));
          else if (gloo(b))
            gloo_ring_allreduce_sum(*env.net, env.ring, g + b.lo, b.n, tags);
          else if (whole(b))
            ring_allreduce_sum(*env.net, env.ring, g + b.lo, b.n, tags);
          else
            ring_allreduce_sum(*env.net, env.ring, g + b.lo, b.n, tags, DdpBuckets::shape(b));
        });
    ScopedTimer t(*env.clock, env.times.compute_ns);
    if (!wire16_) {  // a 16-bit wire divided before its allreduce (reduce16)
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
  /// One bucket group through torch's bf16/fp16_compress_hook (default_hooks.py): h = 16-bit(g),
  /// h = 16-bit(float(h) / world) (Tensor.to(dtype).div_(world_size): the quotient in float, rounded
  /// to 16 bits), allreduce of h in 16 bits, g = float(h) (copy_ back: exact). The two casts are
  /// element-wise passes, charged as such (Work::kReduce), inside the group's allreduce where the
  /// hook runs them.
  void reduce16(WorkerEnv& env, const BucketGroup& b, const TagRange& tags, bool gloo, bool whole) const {
    float* g = env.learner->grads() + b.lo;
    std::vector<uint16_t> h(b.n);
    const auto world = static_cast<float>(env.ring.size());  // the participants (env.world without faults)
    {
      const ComputeRegion region(Work::kReduce, b.n);
      kernels::cast_div16(*wire16_, g, b.n, world, h.data());
    }
    if (gloo)
      gloo_ring_allreduce_sum(*env.net, env.ring, h.data(), b.n, *wire16_, tags);
    else if (whole)
      ring_allreduce_sum(*env.net, env.ring, h.data(), b.n, *wire16_, tags);
    else {
      const RingShape shape = DdpBuckets::shape(b);
      ring_allreduce_sum(*env.net, env.ring, h.data(), b.n, *wire16_, tags, &shape);
    }
    const ComputeRegion region(Work::kReduce, b.n);
    kernels::decode16(*wire16_, h.data(), b.n, g);
  }

  bool gloo_;
  std::optional<kernels::Wire16> wire16_;  // "wire": "bf16" | "fp16"; none: float32
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
// only its collective, buckets and wire.
constexpr std::array<const StrategyKey*, 8> kNaiveDdpKeys = {&strategy_keys::K,        &strategy_keys::density,
                                                             &strategy_keys::block,    &strategy_keys::overlap,
                                                             &strategy_keys::quantize, &strategy_keys::bucket_mb,
                                                             &kCollective,             &strategy_keys::wire16};
constexpr std::array<const StrategyKey*, 3> kNaiveDdpReported = {&kCollective, &strategy_keys::bucket_mb,
                                                                 &strategy_keys::wire16};

std::unique_ptr<Strategy> make_naive_ddp(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<NaiveDdp>(cfg, env);
}

}  // namespace

extern const StrategyDescriptor kNaiveDdp;
constexpr StrategyDescriptor kNaiveDdp{
    .name = "naive_ddp",
    .description = "DDP with one group spanning every site: a float32 (or bf16/fp16: \"wire\") gradient allreduce "
                   "over all ranks every step",
    .needs = {.needs_intra_dc = false, .one_group = false, .exchanges_every_step = true, .survives_kills = true},
    .keys = kNaiveDdpKeys,
    .reported = kNaiveDdpReported,
    .make = make_naive_ddp,
};

}  // namespace geotb::engine
