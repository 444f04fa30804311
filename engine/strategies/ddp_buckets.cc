#include "engine/strategies/ddp_buckets.h"

#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "engine/compute_charge.h"
#include "engine/faults/estimate.h"

namespace geotb::engine {

DdpBuckets::DdpBuckets(const StrategyConfig& cfg, const WorkerEnv& env) {
  const size_t n = env.learner->num_params();
  BucketConfig bc;
  bc.cap_bytes = static_cast<uint64_t>(std::llround(cfg.bucket_mb * (1 << 20)));
  groups_ = plan_buckets(env.grad_tensors, env.grad_elements ? env.grad_elements : n, n, bc, kMaxGroups);
  // The backward pass (all of the step but the forward) in shares proportional to the groups'
  // elements, rounded so that they add up to it exactly.
  uint64_t total = 0;
  for (const BucketGroup& g : groups_) total += g.elements;
  const uint64_t backward = kStepShareUnits - kForwardShare;
  uint64_t done = 0, given = 0;
  for (const BucketGroup& g : groups_) {
    done += g.elements;
    const auto upto = static_cast<uint64_t>(std::llround(static_cast<long double>(done) * backward / total));
    shares_.push_back(upto - given);
    given = upto;
  }
}

void DdpBuckets::run(WorkerEnv& env, const std::function<TagRange(const BucketGroup&)>& tags,
                     const std::function<void(const BucketGroup&, const TagRange&)>& reduce) const {
  if (groups_.size() == 1) {
    ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
    reduce(groups_[0], tags(groups_[0]));
    return;
  }
  std::vector<TagRange> ranges;
  for (const BucketGroup& g : groups_) ranges.push_back(tags(g));

  // Shared with the background actor, under the Sync's lock.
  struct Shared {
    size_t ready = 0;                     // groups whose backward share is charged
    std::vector<Sync::Nanos> ready_at;    // when each was
    bool done = false;
    Sync::Nanos done_at{0};
    uint64_t busy_ns = 0;                 // the background's reduction time
    std::exception_ptr err;
  } sh;
  std::unique_ptr<Sync> sync = env.net->make_sync();
  Sync* s = sync.get();
  const emu::Clock* clock = env.clock;
  emu::ActorThread th = s->spawn("DDP buckets of rank " + std::to_string(env.rank), [&, s, clock] {
    uint64_t busy = 0;
    std::exception_ptr err;
    try {
      for (size_t i = 0; i < groups_.size(); ++i) {
        s->wait([&sh, i]() -> std::optional<Sync::Nanos> {
          return sh.ready > i ? std::optional(sh.ready_at[i]) : std::nullopt;
        }, "the backward pass of bucket group " + std::to_string(i));
        const auto t0 = clock->now();
        reduce(groups_[i], ranges[i]);
        busy += static_cast<uint64_t>((clock->now() - t0).count());
      }
    } catch (...) {
      err = std::current_exception();
    }
    s->update([&](Sync::Nanos now) {
      sh.busy_ns = busy;
      sh.err = err;
      sh.done_at = now;
      sh.done = true;
    });
  });
  // A failure of this actor while the background one runs (the time domain torn down): close the
  // transport so that a reduction blocked on a peer ends, then join it.
  struct Joiner {
    emu::ActorThread& th;
    Transport* net;
    ~Joiner() {
      if (!th.joinable()) return;
      net->close();
      th.join();
    }
  } joiner{th, env.net};

  for (size_t i = 0; i < groups_.size(); ++i) {
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      const ComputeRegion region(Work::kStepShare, shares_[i]);
    }
    s->update([&sh](Sync::Nanos now) {
      sh.ready_at.push_back(now);
      sh.ready = sh.ready_at.size();
    });
  }
  const auto backward_end = env.clock->now();
  {
    ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
    s->wait([&sh]() -> std::optional<Sync::Nanos> { return sh.done ? std::optional(sh.done_at) : std::nullopt; },
            "DDP's last bucket group");
  }
  th.join();
  if (sh.err) std::rethrow_exception(sh.err);
  const auto exposed = static_cast<uint64_t>(std::max<int64_t>(0, (env.clock->now() - backward_end).count()));
  // Overlapped communication is reported per DC leader (model/measurements.h); DDP's ranks are alike.
  const bool leader = static_cast<size_t>(env.dc) < env.dc_leaders.size() &&
                      env.dc_leaders[static_cast<size_t>(env.dc)] == env.rank;
  if (leader && sh.busy_ns > exposed) env.times.overlapped_comm_ns += sh.busy_ns - exposed;
}

void DdpBuckets::intra_mean(WorkerEnv& env) const {
  // Policy "estimate": the dead DC peers' share stands in, scaled into the survivors' gradients.
  if (env.estimator) env.estimator->before_reduce(env);
  if (groups_.size() > 1 && env.intra->size() < 2) {  // alone in the DC: the backward pass, nothing to reduce
    ScopedTimer t(*env.clock, env.times.compute_ns);
    const ComputeRegion region(Work::kStepShare, kStepShareUnits - kForwardShare);
  } else {
    float* g = env.learner->grads();
    // IntraDc takes its own tags, in call order.
    run(
        env, [](const BucketGroup&) { return TagRange("intra_dc.bucket", 0, 0); },
        [&](const BucketGroup& b, const TagRange&) { env.intra->allreduce_mean_shaped(g + b.lo, b.n, shape(b)); });
  }
  if (env.estimator) env.estimator->after_reduce(env);
}

}  // namespace geotb::engine
