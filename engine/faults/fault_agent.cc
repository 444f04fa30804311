#include "engine/faults/fault_agent.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/result.h"

namespace geotb::engine {

FaultAgent::FaultAgent(FaultAgentConfig cfg, FaultPort& port)
    : cfg_(std::move(cfg)),
      port_(port),
      timeline_(cfg_.plan, cfg_.groups.layout, cfg_.rank) {
  if (!cfg_.shards || !cfg_.restarts)
    throw std::invalid_argument("FaultAgent: rank " + std::to_string(cfg_.rank) + ": no shards or restart schedule");
}

void FaultAgent::step_begins(WorkerEnv& env, int step) {
  port_.step_begins(env);
  const FaultPort::Nanos now = port_.now();
  const std::optional<double> factor = timeline_.step_begins(
      step, now - port_.t0(), secs(now), [&](const model::FaultRecord& r) { return port_.record_slow(r); },
      [&](size_t record, double until_s) { port_.slow_ended(record, until_s); });
  if (factor) port_.set_factor(*factor);
}

void FaultAgent::before_sync(WorkerEnv& env, int step) {
  port_.after_compute(env);
  if (port_.fenced()) die(step, "fenced: declared dead by a peer");
  // A restarted process (rejoined as a new process) replays no kill of its predecessor's: a full
  // recovery's restart redoes the kill's step alive (a second kill of a restarted worker is
  // refused in those modes); an in-process worker's timeline knows which kills fired.
  if (!reborn_ && timeline_.kill_due(step, port_.now() - port_.t0())) die(step, "killed by the scenario's timeline");
}

void FaultAgent::die(int step, const std::string& why) {
  port_.killed(step, port_.now());
  throw WorkerKilled("rank " + std::to_string(cfg_.rank) + " " + why + " at step " + std::to_string(step));
}

bool FaultAgent::recover(WorkerEnv& env, int step, BatchSampler& sampler) {
  return recover_from_deaths(*this, rules(), env, step, sampler, epoch_);
}

bool FaultAgent::death_pending(WorkerEnv&, int step) {
  if (!port_.death_pending()) return false;
  if (port_.fenced()) die(step, "fenced: declared dead by a peer");
  return true;
}

RecoveryPort::Fresh FaultAgent::take_fresh() {
  Fresh f;
  f.fresh = fresh_deaths(cfg_.groups, cfg_.rank, port_.declared(), handled_);
  handled_.insert(f.fresh.begin(), f.fresh.end());
  f.dead = handled_;
  port_.handled(handled_);
  return f;
}

std::vector<uint32_t> FaultAgent::inherit(const std::set<int>& dead, const std::vector<int>& fresh) {
  // Every survivor's new shard computed here alike, so that a later death hands on what its rank
  // had inherited.
  const FaultGroups& g = cfg_.groups;
  const std::vector<std::vector<uint32_t>> before = shards_now();
  shards_ = before;
  for (int h = 0; h < g.world(); ++h)
    if (!dead.count(h))
      shards_[static_cast<size_t>(h)] = inherit_shards(g, h, before[static_cast<size_t>(h)], before, dead, fresh);
  return shards_[static_cast<size_t>(cfg_.rank)];
}

std::optional<uint64_t> FaultAgent::reepoch_due(WorkerEnv&, int steps) {
  const auto it = cfg_.restarts->epoch_at.find(steps);
  if (it == cfg_.restarts->epoch_at.end()) return std::nullopt;
  return it->second;
}

void FaultAgent::take_back(WorkerEnv& env, const std::vector<int>& back_all, RejoinMessage m, const char* policy,
                           bool full_recovery) {
  port_.revive(back_all, m.steps, full_recovery);
  // This rank's group takes back those of its members it had recovered from, all at once
  // (grow_group), so that each restarted worker's coordinator hands it the group the others build.
  const GrownGroup g = grow_group(cfg_.groups, cfg_.rank, back_all, handled_, env.ring);
  if (!g.back.empty()) {
    env.ring = g.ring;
    port_.take_back(env, g, m, full_recovery);
    m.members = g.group;
    m.ring = g.ring;
    const std::set<int> restarted(back_all.begin(), back_all.end());
    for (int r : g.back)
      if (rejoin_coordinator(r, cfg_.groups.layout, g.group, restarted) == cfg_.rank)
        port_.hand_over(env, r, m, policy, full_recovery);
  }
  port_.taken_back(env, g, m, full_recovery);
}

void FaultAgent::at_reepoch(WorkerEnv& env, int steps, const StateBuffers& state) {
  RejoinMessage m = port_.restart_message(env, steps, cfg_.restarts->epoch_at.at(steps), false);
  // Sites restarted whole (a quorum of sites) are handed their state by the port; the others
  // restarted here rejoin their groups.
  const std::set<int> sites = port_.restart_sites(env, steps, state, handled_);
  std::vector<int> back_all;
  for (int r : cfg_.restarts->ranks_at.at(steps))
    if (!sites.count(cfg_.groups.layout.dc_of(r))) back_all.push_back(r);
  m.state = state;
  take_back(env, back_all, std::move(m), "rejoin", false);
}

void FaultAgent::regrow(WorkerEnv& env, uint64_t tag_epoch) {
  // Everyone walks its own shard again (the checkpoint's positions); a later death splits those.
  shards_.clear();
  const FaultPort::RecoveryRestart rr = port_.restarted_by_recovery();
  // No state: each restarted worker reads its own from the checkpoint.
  take_back(env, rr.ranks, port_.restart_message(env, rr.boundary, tag_epoch, true), "full_recovery", true);
}

void FaultAgent::before_rewind(WorkerEnv& env, BatchSampler& sampler) {
  // The process modes' restarted rejoin in tag epoch 1, the loop's after this rewind (there are no
  // timeline restarts beside a full recovery); after_rewind checks it.
  if (cfg_.regrow_before_restore && cfg_.plan.full_recovery_restarts(cfg_.groups.world())) regrow(env, 1);
  sampler_before_rewind(rules(), cfg_.shards->at(static_cast<size_t>(cfg_.rank)), epoch_, sampler);
}

void FaultAgent::after_rewind(WorkerEnv& env, BatchSampler& sampler, uint64_t tag_epoch) {
  port_.rewound();
  if (cfg_.plan.full_recovery_restarts(cfg_.groups.world())) {
    // The dead come back: every rank walks its own shard again, from the checkpoint's position.
    if (!cfg_.regrow_before_restore)
      regrow(env, tag_epoch);
    else if (tag_epoch != 1)
      throw RunError("rank " + std::to_string(cfg_.rank) + ": full recovery in tag epoch " + std::to_string(tag_epoch) +
                     ", but its restarted ranks were told 1");
    return;
  }
  sampler_after_rewind(rules(), shards_now()[static_cast<size_t>(cfg_.rank)], epoch_, sampler);
}

void FaultAgent::rejoined(const std::vector<int>& members, int steps, bool new_process) {
  reborn_ = reborn_ || new_process;
  // The dead set here forgotten (it missed what happened meanwhile): its group's view is the
  // coordinator's, whose members it now has.
  handled_.clear();
  for (int x : cfg_.groups.group_of(cfg_.rank, {}))
    if (std::find(members.begin(), members.end(), x) == members.end()) handled_.insert(x);
  port_.rejoined(handled_, steps);
}

}  // namespace geotb::engine
