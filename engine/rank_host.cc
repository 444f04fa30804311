#include "engine/rank_host.h"

namespace geotb::engine {

namespace {

/// The hooks of a restarted worker's run (rank_host.h's rules).
void rejoin_hooks(RankHost& host, const RankPlan& plan, const WorkerEnv& env, RankRejoin& j, WorkerLoopHooks& hooks) {
  if (!j.from_checkpoint) {
    // Its own data: the group's state but for the sampler, which walks its shard afresh.
    own_sampler(*j.state, plan.shard, plan.work.seed, env.rank, env.world, j.steps);
    hooks.checkpoint_due = nullptr;  // no checkpoints once a worker was dead (they cannot complete)
  } else {
    j.life.series.reset();  // its checkpoint's series are its own already
  }
  hooks.resume = j.state;
  hooks.tag_epoch = j.tag_epoch;
  hooks.resume_from_other_site = j.other_site;
  hooks.start = [&host, elapsed = resume_point(*j.state).elapsed] { return host.restart_line(elapsed); };
  hooks.after_resume = keep_first_life(std::move(j.life));
}

}  // namespace

RankEnd run_rank(RankHost& host, const RankPlan& plan, WorkerEnv& env, WorkerRecord& rec, std::optional<RankRejoin> back) {
  WorkerLoopHooks hooks;
  hooks.start = [&host] { return host.start_line(); };
  hooks.finished = [&host] { host.finish_line(); };
  hooks.progress = plan.progress;
  hooks.resume = plan.resume;
  FaultHooks* const faults = host.faults();
  hooks.faults = faults;
  if (host.checkpoints()) {
    // The schedule first, on every boundary (it keeps count), then the faults' veto.
    hooks.checkpoint_due = [&host, faults](int steps) {
      return host.checkpoint_due(steps) && !(faults && faults->checkpoint_cannot_complete(steps));
    };
    hooks.checkpoint_write = [&host](int steps, const StateBuffers& s) {
      if (const std::optional<WanCounters> c = host.checkpoint_wan_counters())
        host.checkpoint_commit(steps, with_wan_counters(s, *c));
      else
        host.checkpoint_commit(steps, s);
    };
  }
  if (host.rewinds()) hooks.rewind = [&host](int steps) { return host.rewind(steps); };
  if (back) rejoin_hooks(host, plan, env, *back, hooks);
  for (;;) {
    try {
      run_worker_loop(env, plan.scfg, plan.work, plan.train, plan.shard, hooks, rec);
      return RankEnd::kFinished;
    } catch (const WorkerKilled&) {
      // stopped dead by a fault event: no error of the run
    }
    back = host.after_kill(env, rec);
    if (!back) return RankEnd::kKilled;
    rejoin_hooks(host, plan, env, *back, hooks);
  }
}

}  // namespace geotb::engine
