#include "engine/faults/recovery.h"

#include <algorithm>
#include <string>

#include "engine/result.h"
#include "engine/strategy.h"

namespace geotb::engine {

bool recover_from_deaths(RecoveryPort& port, const RecoveryRules& rules, WorkerEnv& env, int step,
                         BatchSampler& sampler, int& epoch) {
  const FaultGroups& g = *rules.groups;
  const int rank = rules.rank;
  std::vector<int> fresh_all;
  std::set<int> dead;
  std::vector<int> group;
  auto no_further_death = [&] {
    return RunError("rank " + std::to_string(rank) + ": shrink interrupted, but no further death was declared here");
  };
  for (;;) {
    if (!port.death_pending(env, step)) {
      if (fresh_all.empty()) return false;  // nobody died: the failure is the run's
      throw no_further_death();
    }
    RecoveryPort::Fresh f = port.take_fresh();
    if (f.fresh.empty()) {
      if (fresh_all.empty()) return false;  // nothing of this rank's group
      throw no_further_death();
    }
    fresh_all.insert(fresh_all.end(), f.fresh.begin(), f.fresh.end());
    dead = std::move(f.dead);
    group = g.group_of(rank, dead);
    port.before_agreement(env, group, dead);
    try {
      agree_on_group(*env.net, rank, group, step, dead);
      break;
    } catch (const TransportError& e) {
      if (!port.agreement_failed(e)) throw;
    }
  }
  // Deaths found one after another (several killed at one step, declared apart) are one recovery,
  // in rank order whatever the order they were declared in: the shards they leave are split as
  // those of deaths declared together.
  std::sort(fresh_all.begin(), fresh_all.end());
  ++epoch;
  env.ring = ring_without(env.ring, dead);
  port.after_agreement(env, group, dead);
  // Per-DC groups whose leader died: the lowest survivor leads the DC now and takes over the dead
  // leader's address, so that the other DCs' exchange reaches it unchanged.
  const std::optional<int> took_over = take_over_dead_leader(*env.net, g, rank, env.dc_leaders, dead, group);
  // The dead workers' data: dropped, or split among their DC's survivors.
  if (rules.redistribute)
    sampler = BatchSampler(port.inherit(dead, fresh_all), rules.seed, redistributed_stream(rank, g.world(), epoch));
  port.resumed(fresh_all, step, group, took_over);
  return true;
}

void sampler_before_rewind(const RecoveryRules& rules, const std::vector<uint32_t>& own_shard, int epoch,
                           BatchSampler& sampler) {
  if (!rules.redistribute || epoch == 0) return;
  sampler = BatchSampler(own_shard, rules.seed, static_cast<uint64_t>(rules.rank));
}

void sampler_after_rewind(const RecoveryRules& rules, const std::vector<uint32_t>& shard_now, int epoch,
                          BatchSampler& sampler) {
  if (!rules.redistribute || epoch == 0) return;
  sampler = BatchSampler(shard_now, rules.seed, rewound_stream(rules.rank, rules.groups->world(), epoch));
}

}  // namespace geotb::engine
