// Full recovery's decision on real processes (the process and dpdk modes), over the run's c10d
// store: which deaths cross faults.full_recovery.above_fraction, who decides, where every
// survivor goes back, and with "restarts" which workers come back and when. SocketFaultPort
// (socket_port.h) drives it; each rank has one over the same keys.
//
//  * Each group's coordinator, once its group agreed on its dead, adds them to the count `dead`
//    (every death is in one group: counted once) and files them under the total its addition
//    reached (`dead_at/<total>`). The coordinator whose addition crosses the threshold decides.
//  * Until a decision is known, every rank publishes its step boundary (`at/<rank>`) and then
//    looks for the mark `decided`; the decider sets the mark first and then reads every
//    boundary, and sets `boundary` one past the furthest: nobody has passed it (a rank that
//    looked before the mark had published where it was; one that looks after it sees it).
//  * "restarts": the decider walks the filed deaths back from its own total to 0 (each list's
//    length leads to the total before it; a get waits for a list filed right after its
//    addition), so that it names exactly the deaths counted up to the crossing (`restart`), and
//    publishes when it decided (`decided_ns`, the host's monotonic clock); both before `boundary`.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/collectives/store.h"

namespace geotb::engine {

class FullRecoveryBoard {
 public:
  using Nanos = std::chrono::nanoseconds;
  /// Keys under `key` (ending in "/"); `threshold`: deaths that make a full recovery (more than
  /// above_fraction of the workers, model::FaultPlan::full_recovery_count).
  FullRecoveryBoard(std::shared_ptr<StoreHandle> store, std::string key, int world, int64_t threshold, bool restarts,
                    Nanos restart_after);

  struct Decided {
    int64_t dead = 0;  ///< the count when it was decided
    Nanos at{0};       ///< on the clock given
  };
  /// A group coordinator's deaths (its group agreed on them). The decision, if this addition
  /// crossed the threshold (this rank decided; the boundary is set when it returns).
  std::optional<Decided> count(const std::vector<int>& fresh, const emu::Clock& clock);

  /// At step boundary `steps` of rank `rank`: publishes where it is until a decision is known;
  /// the decided boundary, once there is one.
  std::optional<int> boundary(int rank, int steps);
  /// Once boundary() returned one, with "restarts": the workers restarted (ascending).
  const std::vector<int>& restarted() const { return restarted_; }
  /// With "restarts", once decided (a survivor past boundary(), or a restarted rank handed its
  /// group): the instant the restarted are up, the decision + restart_after on the host's
  /// monotonic clock (read from the store the first time).
  Nanos up_at();

 private:
  std::shared_ptr<StoreHandle> store_;
  const std::string key_;
  const int world_;
  const int64_t threshold_;
  const bool restarts_;
  const Nanos restart_after_;
  int published_ = 0;
  std::optional<int> boundary_;
  std::vector<int> restarted_;
  std::optional<Nanos> up_at_;
};

}  // namespace geotb::engine
