#include "engine/worker_loop.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "engine/checkpoint/worker_state.h"
#include "engine/compute_charge.h"
#include "engine/faults/estimate.h"
#include "engine/transport/tag_epoch.h"

#include "engine/strategies/table.h"

namespace geotb::engine {

std::vector<int> snapshot_steps(const WorkloadSpec& work) {
  std::vector<int> s;
  for (int i = 1; i < work.eval_points; ++i) s.push_back(work.steps * i / work.eval_points);
  return s;
}

void run_worker_loop(WorkerEnv& env, const StrategyConfig& scfg, const WorkloadSpec& work, const Dataset& train,
                     const std::vector<uint32_t>& shard, const WorkerLoopHooks& hooks, WorkerRecord& out) {
  const emu::Clock& clock = *env.clock;
  const int steps = work.steps;
  const size_t B = static_cast<size_t>(work.batch_per_worker);
  const size_t F = train.features();
  const size_t n = env.learner->num_params();
  const bool rank0 = env.rank == 0;

  const StrategyDescriptor& desc = find_strategy(scfg.name);
  // Full recovery: each rewind runs a fresh strategy in a new tag epoch (transport/tag_epoch.h).
  // Declared before the strategy, which may use it until it is destroyed.
  Transport* const base_net = env.net;
  std::vector<std::unique_ptr<TagEpochTransport>> epochs;  // kept: an old strategy may use its own till it goes
  uint64_t epoch = 0;
  auto enter_epoch = [&](uint64_t e) {
    epoch = e;
    epochs.push_back(std::make_unique<TagEpochTransport>(*base_net, e));
    env.net = epochs.back().get();
  };
  // env.net back to the cluster's transport however the loop ends (a kill throws out of it).
  struct NetBack {
    WorkerEnv& env;
    Transport* net;
    ~NetBack() { env.net = net; }
  } net_back{env, base_net};
  if (hooks.tag_epoch > 0) enter_epoch(hooks.tag_epoch);
  env.seed = work.seed;  // every rank's, in every mode (WorkerEnv::seed)
  env.steps = steps;
  std::unique_ptr<Strategy> strategy = desc.make(scfg, env);
  BatchSampler sampler(shard, work.seed, static_cast<uint64_t>(env.rank));
  std::vector<uint32_t> idx;
  std::vector<float> x(B * F);
  std::vector<int64_t> y(B);
  // Controlled randomisation (data/global_batch.h): Bg of the B examples from the global pool, a
  // forward/backward of their own, and the two gradients combined with weight beta.
  const GlobalBatchSpec& mix = work.global_batch;
  const size_t Bg = mix.count(B), Bl = B - Bg;
  const std::vector<uint32_t> pool = Bg ? global_pool(train.size, mix.pool, work.seed) : std::vector<uint32_t>{};
  std::vector<float> g_global(Bg ? n : 0);
  auto fill = [&](const std::vector<uint32_t>& from, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(&x[i * F], &train.images[static_cast<size_t>(from[i]) * F], F * sizeof(float));
      y[i] = train.labels[from[i]];
    }
  };
  out.loss.assign(static_cast<size_t>(steps), std::numeric_limits<double>::quiet_NaN());
  out.step_end_s.clear();
  out.snapshot_steps.clear();
  out.snapshots.clear();
  out.steps_redone = 0;
  FaultHooks* faults = hooks.faults;
  const bool records = rank0 || (faults && faults->record_all());
  const std::vector<int> snap_at = records ? snapshot_steps(work) : std::vector<int>{};
  if (records) out.step_end_s.assign(static_cast<size_t>(steps), 0);
  // Node faults: the state of before the step in flight, restored when it is discarded.
  std::vector<float> saved_x;
  std::optional<Sgd> saved_opt;

  ResumePoint from;
  if (hooks.resume) from = restore_worker_state(*hooks.resume, env, *strategy, sampler, out, steps);
  if (hooks.resume && hooks.resume_from_other_site) {
    env.opt->restore(std::vector<float>(n, 0.0f), true);  // a new process: no momentum of its own
    strategy->rejoin_site(env);
  }
  if (hooks.after_resume) hooks.after_resume(env, sampler, out);
  // Times count from the first step of the whole run (a resumed run's from before the checkpoint).
  const std::chrono::nanoseconds t_start = hooks.start() - from.elapsed;
  // An asynchronous strategy's faster site may run on past `steps` (Strategy::runs_past): its
  // extra steps' losses and instants are appended; progress and snapshots stay within `steps`.
  for (int s = from.steps_done; s < steps || (s > 0 && strategy->runs_past(s - 1)); ++s) {
    if (s >= steps) {
      out.loss.push_back(std::numeric_limits<double>::quiet_NaN());
      if (records) out.step_end_s.push_back(0);
    }
    double loss;
    if (faults) faults->step_begins(env, s);
    {
      ScopedTimer t(clock, env.times.compute_ns);
      // Charged as declared by a compute profile, or its CPU time robustly (compute_charge.h): the
      // whole step, or the share the strategy does not charge itself (the forward pass).
      const uint64_t share = strategy->loop_step_share();
      const ComputeRegion region(share == kStepShareUnits ? Work::kStep : Work::kStepShare,
                                 share == kStepShareUnits ? 1 : share);
      double loss_global = 0;
      if (Bg) {
        draw_global(pool, work.seed, env.rank, s, Bg, idx);
        fill(idx, Bg);
        loss_global = env.learner->forward_backward(x.data(), y.data(), Bg);
        std::memcpy(g_global.data(), env.learner->grads(), n * sizeof(float));
      }
      sampler.next(Bl, idx);
      fill(idx, Bl);
      if (env.estimator) env.estimator->batch(s, x.data(), Bl);  // node faults' policy "estimate"
      loss = env.learner->forward_backward(x.data(), y.data(), Bl);
      if (Bg) {
        const float beta = static_cast<float>(mix.beta), rest = static_cast<float>(1.0 - mix.beta);
        float* g = env.learner->grads();
        for (size_t i = 0; i < n; ++i) g[i] = beta * g[i] + rest * g_global[i];
        loss = (loss * static_cast<double>(Bl) + loss_global * static_cast<double>(Bg)) / static_cast<double>(B);
      }
    }
    if (!faults) {
      strategy->step(env, s);
    } else {
      faults->before_sync(env, s);  // throws WorkerKilled on the worker killed here
      saved_x.assign(env.learner->params(), env.learner->params() + n);
      saved_opt = *env.opt;
      try {
        strategy->step(env, s);
      } catch (const std::exception&) {
        if (!faults->recover(env, s, sampler)) throw;
        std::memcpy(env.learner->params(), saved_x.data(), n * sizeof(float));
        *env.opt = *saved_opt;
        strategy->discard_step(env, s);
      }
    }
    out.loss[static_cast<size_t>(s)] = loss;
    if (records) {
      const double t = std::chrono::duration<double>(clock.now() - t_start).count();
      out.step_end_s[static_cast<size_t>(s)] = t;
      for (int k : snap_at)
        if (k == s + 1 && k != 0) {
          out.snapshot_steps.push_back(k);
          out.snapshots.emplace_back(env.learner->params(), env.learner->params() + n);
        }
      if (hooks.progress && s < steps) hooks.progress(s + 1, steps, t);
    }
    if (s + 1 < steps && strategy->ends_after(s)) {
      // An asynchronous strategy's slower site stops here (Strategy::ends_after): the steps it
      // does not run keep a NaN loss (not counted as samples) and, on the recording rank, the
      // instant it stopped.
      if (records)
        std::fill(out.step_end_s.begin() + s + 1, out.step_end_s.end(), out.step_end_s[static_cast<size_t>(s)]);
      break;
    }
    if (const int next = std::min(strategy->next_step(s), steps); next > s + 1) {
      // The site was paused and rejoins at `next` (a quorum of sites): the steps in between are
      // not run (NaN loss, not counted as samples); the recording rank keeps the instant it
      // rejoined as their end and snapshots the model it rejoined with.
      const double t = std::chrono::duration<double>(clock.now() - t_start).count();
      for (int k = s + 1; k < next; ++k) {
        if (records) {
          out.step_end_s[static_cast<size_t>(k)] = t;
          for (int at : snap_at)
            if (at == k + 1) {
              out.snapshot_steps.push_back(at);
              out.snapshots.emplace_back(env.learner->params(), env.learner->params() + n);
            }
          if (hooks.progress) hooks.progress(k + 1, steps, t);
        }
      }
      s = next - 1;
      continue;
    }
    if (s + 1 < steps && hooks.checkpoint_due && hooks.checkpoint_due(s + 1)) {
      StateBuffers state;
      save_worker_state(env, *strategy, sampler, out, s + 1, clock.now() - t_start, state);
      hooks.checkpoint_write(s + 1, state);
    }
    if (s + 1 < steps && faults)
      if (const std::optional<uint64_t> e = faults->reepoch_due(env, s + 1)) {
        StateBuffers mine;
        save_worker_state(env, *strategy, sampler, out, s + 1, clock.now() - t_start, mine);
        faults->at_reepoch(env, s + 1, mine);
        rewind_worker(mine, env, strategy, [&] {
          enter_epoch(*e);
          return desc.make(scfg, env);
        }, sampler, out, steps);
      }
    if (s + 1 < steps && hooks.rewind)
      if (const StateBuffers* back = hooks.rewind(s + 1)) {
        if (faults) faults->before_rewind(env, sampler);
        const ResumePoint p = rewind_worker(*back, env, strategy, [&] {
          enter_epoch(epoch + 1);
          return desc.make(scfg, env);
        }, sampler, out, steps);
        if (faults) faults->after_rewind(env, sampler, epoch);
        out.steps_redone += s + 1 - p.steps_done;
        s = p.steps_done - 1;
      }
  }
  strategy->finish(env);
  hooks.finished();
  if (faults) faults->done(env);
  strategy.reset();  // before the epoch transport it may use
}

}  // namespace geotb::engine
