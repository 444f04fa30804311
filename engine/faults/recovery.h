// Policy shrink's recovery on one survivor, written once for every network mode: the fault agent
// (fault_agent.h) calls recover_from_deaths from its FaultHooks::recover and implements
// RecoveryPort over its FaultPort, the part that differs between the modes (fault_runtime.h
// embedded, socket_port.h process and dpdk).
//
//   loop:  a death pending here?            (port: the fabric's alarm / a declaration, waited for)
//            no  -> false the first time (the failure is the run's), else RunError
//          the fresh deaths, marked handled (port: under its lock, receives re-interrupted)
//          the group without every dead     (FaultGroups::group_of)
//          before the agreement             (port: the in-process group shrunk / the Gloo group
//                                            dropped and the members told "recovering")
//          the survivors agree on the step in flight and the dead set (agree_on_group); another
//          death meanwhile (port.agreement_failed says which errors are one) -> loop
//   then:  the deaths in rank order; one more membership epoch; the ring without the dead;
//          after the agreement              (port: the Gloo group rebuilt under a new prefix)
//          a dead DC leader's address taken over by the lowest survivor (take_over_dead_leader)
//          faults.shard "redistribute": this rank's grown shard (port.inherit), walked on the
//            epoch's stream (redistributed_stream)
//          the resume recorded              (port: the run's records / the rank's log, full
//                                            recovery's count)
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "engine/data/fashion_mnist.h"
#include "engine/faults/shrink.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

struct WorkerEnv;

/// What one recovery needs from its mode.
class RecoveryPort {
 public:
  virtual ~RecoveryPort() = default;
  /// Whether a death declared here is not yet recovered from (the process modes wait a bounded
  /// time for its declaration). May throw WorkerKilled (a rank fenced meanwhile).
  virtual bool death_pending(WorkerEnv& env, int step) = 0;
  struct Fresh {
    std::vector<int> fresh;  ///< newly declared dead in this rank's group, ascending (fresh_deaths)
    std::set<int> dead;      ///< every death handled here now, the fresh ones included
  };
  /// The fresh deaths, marked handled.
  virtual Fresh take_fresh() = 0;
  /// Before the survivors of `group` (without `dead`) agree.
  virtual void before_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) = 0;
  /// Whether the agreement's error `e` means that another member died meanwhile (agree again
  /// without it too); otherwise it propagates.
  virtual bool agreement_failed(const TransportError& e) = 0;
  /// After the agreement (env.ring without the dead already).
  virtual void after_agreement(WorkerEnv& env, const std::vector<int>& group, const std::set<int>& dead) = 0;
  /// faults.shard "redistribute": this rank's shard grown by its part of the `fresh` deaths'
  /// (ascending; `dead`: every death handled).
  virtual std::vector<uint32_t> inherit(const std::set<int>& dead, const std::vector<int>& fresh) = 0;
  /// The survivors resumed: `fresh` recovered from at `step` in `group`; `took_over` the dead DC
  /// leader whose address this rank took.
  virtual void resumed(const std::vector<int>& fresh, int step, const std::vector<int>& group,
                       std::optional<int> took_over) = 0;
};

/// The rules one rank recovers by.
struct RecoveryRules {
  const FaultGroups* groups = nullptr;
  int rank = 0;
  bool redistribute = false;  ///< faults.shard
  uint64_t seed = 0;          ///< the run's (the redistributed samplers' streams)
};

/// One recovery (FaultHooks::recover): true once the survivors agreed and `env` (ring, leaders,
/// groups through the port) and `sampler` were rebuilt; false if no death was pending here (the
/// step's failure is the run's). `epoch` counts the membership changes agreed (one more here).
/// Throws RunError if an agreement was interrupted and no further death was declared here.
bool recover_from_deaths(RecoveryPort& port, const RecoveryRules& rules, WorkerEnv& env, int step,
                         BatchSampler& sampler, int& epoch);

/// A full recovery's rewind, before the checkpoint's state is restored: the sampler position it
/// holds is one in this rank's own shard (`own_shard`), so a sampler that `recover` had grown
/// (redistribute, `epoch` > 0) walks that shard again, on the rank's first stream.
void sampler_before_rewind(const RecoveryRules& rules, const std::vector<uint32_t>& own_shard, int epoch,
                           BatchSampler& sampler);
/// After it (the survivors carry on without the dead): a shard grown by the dead workers' data
/// (`shard_now`) is walked afresh, on a stream of its own (rewound_stream).
void sampler_after_rewind(const RecoveryRules& rules, const std::vector<uint32_t>& shard_now, int epoch,
                          BatchSampler& sampler);

}  // namespace geotb::engine
