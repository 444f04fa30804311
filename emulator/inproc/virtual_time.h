// Virtual time for the in-process mode: a conservative scheduler of actors.
//
// An actor is a thread that communicates (a worker, a background exchange thread). Each has a
// virtual time t. It advances by
//   * compute: charge(), by whoever knows what the actor computed (the engine charges a compute
//     profile's declared costs, or a robust estimate of the CPU time its compute regions took:
//     engine/compute_charge.h); the scheduler itself never reads a host clock;
//   * waiting: wait() returns when the awaited event exists and sets t = max(t, its instant)
//     (a message's delivery instant from the link model, a hand-off's instant). Nothing sleeps.
//
// Ordering (why figures do not depend on the host): an action that touches state other actors
// share (a send onto a link: the serializer must see offers in non-decreasing time) runs through
// act(), which lets actor X act at t_X only when no other actor can still act earlier:
//   bound(Y) = t_Y at its last scheduler call   if Y runs (it can only act at or after that),
//            = t_Y                              if Y waits to act,
//            = its wait deadline (or +inf)      if Y is blocked in wait() on an event not there yet,
//   X proceeds when (t_X, X) < (bound(Y), Y) for every unfinished Y != X (ties by actor id).
// A blocked actor has no earlier bound because it can only be woken by an action of another actor
// at or after that actor's bound, and delivery is never before the send. The bounds are updated
// under the scheduler's lock in the same critical section as the state change (a message handed to
// a blocked actor makes it runnable at once, at its new t), so no actor ever acts on a stale bound.
//
// Progress: the unfinished actor with the smallest (bound, id) can always proceed: it is running,
// or waiting to act (it is the minimum), or blocked with a deadline (it times out at that instant).
// The only stop is every unfinished actor blocked with no deadline and nothing to wake it: a
// deadlock of the program under test. The scheduler then fails every wait with DeadlockError
// naming each actor's state, instead of hanging.
//
// The network (a fabric's event queue: segment and ACK arrivals, timers) is scheduled like an actor
// whose bound is its next event's instant: inside the scheduler's lock, every re-evaluation first
// runs the network's events up to the smallest actor bound H (events at an instant run before
// actors acting at that instant), one at a time; an event that delivers a message wakes its
// waiter, whose bound may drop below H, so the horizon is taken again after each such event. So an
// actor acts at t only when every network event before t has run and no event can still arise
// before t; a blocked actor with no deadline waits for the network, and a deadlock is every actor
// blocked with the network's queue empty.
//
// Which waiters are checked: a wait may name a key (the fabric's: the receiving endpoint). A keyed
// waiter's ready() is evaluated only after notify(key), which whoever changes what it reads calls
// under the lock (the fabric, when a message or datagram to that endpoint settles, the endpoint dies
// or is alarmed, or its peer is taken over; a heartbeat monitor, when it stops); an unkeyed waiter's
// at every re-evaluation. So a delivery
// costs one predicate, not one per blocked actor: with a thousand workers blocked in recv, the
// scan over every waiter per event made a step quadratic in the workers.
//
// How actors run (Actors): each on an OS thread of its own (the reference), or as fibers that one
// OS thread runs in turn (emulator/inproc/fibers.h), switched where wait() and act() block: a
// hand-off is then a register swap, not a kernel context switch. The figures are the same either
// way: the ordering above does not depend on how the host interleaves the actors.
//
// Thread-safety: every member may be called from any thread; wait()/act() only from the thread
// (or fiber) bound to that actor. One mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "emulator/inproc/fibers.h"
#include "emulator/inproc/wait_what.h"
#include "common/clock.h"
#include "emulator/link/link_model.h"

namespace geotb::emu {

/// Every actor blocked with nothing that could wake it. what() names each actor's state.
class DeadlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The scheduler was aborted (e.g. the fabric closed after a failure): waits return this.
class SchedulerAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The network as the scheduler drives it (set_network). Its methods are called under the
/// scheduler's lock.
class VirtualNetwork {
 public:
  virtual ~VirtualNetwork() = default;
  /// Instant of the earliest pending event, if any.
  virtual std::optional<Nanos> next_event() = 0;
  /// Runs the earliest pending event; true if it may have made an awaited event exist (a delivery).
  virtual bool run_next() = 0;
};

class VirtualScheduler {
 public:
  using ActorId = int;
  using WaitKey = uint64_t;
  /// A wait with this key (the default) is re-checked at every re-evaluation.
  static constexpr WaitKey kAnyKey = ~WaitKey{0};

  enum class Actors : uint8_t { kThreads, kFibers };
  /// kFibers only where the build supports them (fibers_supported()); otherwise kThreads.
  explicit VirtualScheduler(Actors actors = Actors::kThreads);
  VirtualScheduler(const VirtualScheduler&) = delete;
  VirtualScheduler& operator=(const VirtualScheduler&) = delete;

  /// Registers an actor at virtual time t0, running. Call before the actor's first action; an
  /// actor spawned by another should start at its parent's now(). The slot of a finished actor
  /// may be reused.
  ActorId add_actor(std::string name, Nanos t0);
  /// Runs fn as one of this scheduler's actors' threads of control: an OS thread, or a fiber that
  /// the first thread to join it (not itself a fiber) runs with the others. fn binds its actor.
  ActorThread start(std::string name, std::function<void()> fn);
  Actors actors() const { return carrier_ ? Actors::kFibers : Actors::kThreads; }
  /// Binds the calling thread (fiber) to `a` (thread-local, or fiber-local).
  void bind(ActorId a);
  /// The actor of this scheduler bound to the calling thread, or -1.
  ActorId current() const;
  /// The largest virtual time of any actor (for a thread that is no actor, e.g. the run's end).
  Nanos latest() const;

  /// The network whose events run between the actors' actions (nullptr: none). Set it before the
  /// actors start, and clear it before `net` is destroyed.
  void set_network(VirtualNetwork* net);

  /// `a`'s virtual now.
  Nanos now(ActorId a) const;
  /// Adds compute time to `a` (declared by a compute profile, or an estimate of measured compute).
  void charge(ActorId a, Nanos d);

  /// Runs fn(t) at a's current virtual time t, once no other actor can act before t (see above).
  /// fn runs under the scheduler's lock (keep it short: a send onto the link model). Waiters whose
  /// ready() fn made true are woken (unkeyed ones, and keyed ones whose key fn notified). Rethrows
  /// what fn throws. Throws SchedulerAborted/DeadlockError.
  void act(ActorId a, const std::function<void(Nanos)>& fn);

  /// Runs fn() under the scheduler's lock and re-evaluates the unkeyed waiters and those whose key
  /// fn notified: for state changes that need no ordering (a hand-off to one actor, a barrier
  /// arrival, close()).
  void update(const std::function<void()>& fn);

  /// Blocks `a` until ready() returns an instant (the awaited event exists and happens then) and
  /// sets t = max(t, that instant); returns true. ready() runs under the scheduler's lock and must
  /// only read state changed inside act()/update(). With a deadline (virtual time), returns false
  /// with t = deadline when the event has not happened by then. `what` describes the wait for a
  /// deadlock report ("recv from rank 3 tag 17"). Throws SchedulerAborted or DeadlockError.
  /// `key`: ready() is re-checked only after notify(key) (kAnyKey: at every re-evaluation).
  bool wait(ActorId a, const std::function<std::optional<Nanos>()>& ready, std::optional<Nanos> deadline,
            WaitWhat what, WaitKey key = kAnyKey);
  /// The state the waits keyed `key` read may have changed: they are re-checked at the next
  /// re-evaluation. Only under the scheduler's lock: inside an act()/update() fn or the network's
  /// run_next() (the caller holds it; notify does not lock).
  void notify(WaitKey key);
  /// A key of its own (above every fabric endpoint's), for a hand-off whose state only its own
  /// update() changes (engine's Sync).
  WaitKey new_key();

  /// `a` will not act again: it holds nobody back any more. Idempotent.
  void finish(ActorId a);

  /// Every current and later wait()/act() throws SchedulerAborted(why). Idempotent (first reason kept).
  void abort(const std::string& why);
  bool aborted() const;

  /// Each actor's name, state and time, one per line (the deadlock report; also for debugging).
  std::string describe() const;

  /// What the scheduler did on the host (its cost, not the run's figures). With fibers the counts
  /// are a function of the run; with threads they depend on the host's interleaving.
  struct Counters {
    uint64_t reevaluations = 0;     ///< after every charge, act, wait and update
    uint64_t readiness_checks = 0;  ///< ready() predicates evaluated
    uint64_t network_events = 0;    ///< the network's events run (segments, ACKs, timers)
    uint64_t wakeups = 0;           ///< blocked actors made runnable (hand-offs)
  };
  Counters counters() const;

 private:
  enum class State : uint8_t { kRunning, kActing, kBlocked, kFinished };
  struct Actor {
    std::string name;
    State state = State::kRunning;
    Nanos t{0};
    std::optional<Nanos> deadline;        ///< kBlocked
    WaitWhat what;                        ///< kBlocked
    const std::function<std::optional<Nanos>()>* ready = nullptr;  ///< kBlocked
    bool woken = false;                   ///< kBlocked -> kRunning by reevaluate()
    WaitKey key = kAnyKey;                ///< kBlocked
    Nanos indexed_bound{0};               ///< its entry in index_ (when not finished)
    bool in_index = false;
    bool live = false;                    ///< counted in live_: unfinished, not blocked un-woken
    bool timed_out = false;
    std::condition_variable cv;           ///< threads: where it blocks
    FiberCarrier::Fiber* fiber = nullptr; ///< fibers: the fiber blocked as this actor, while it is
  };
  static constexpr Nanos kInf = Nanos::max();

  Nanos bound(const Actor& a) const;
  bool is_minimum(ActorId a) const;
  void reevaluate();                 // runs the network, wakes waiters that can proceed; detects deadlock
  bool wake_ready();                 // step 1 of reevaluate(): true if any waiter was woken
  bool check(ActorId id);            // wakes `id` if it is blocked, not woken and its event exists
  void unregister(ActorId id);       // out of the waiter lists
  void reindex(ActorId id);          // after any change of its state, t, woken or deadline
  std::string describe_locked() const;
  void throw_if_stopped() const;
  // Blocks the calling actor x until pred() (under the lock), on its condition variable or by
  // suspending its fiber; wake() is the other side.
  template <class Pred>
  void park(std::unique_lock<std::mutex>& lk, Actor& x, Pred pred);
  void wake(Actor& x);

  std::unique_ptr<FiberCarrier> carrier_;  // fibers only
  Counters counters_;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Actor>> actors_;
  std::string abort_reason_;
  std::string deadlock_;
  VirtualNetwork* net_ = nullptr;
  std::vector<ActorId> any_waiters_;                          // blocked with kAnyKey
  std::unordered_map<WaitKey, std::vector<ActorId>> keyed_;   // blocked, by key
  std::vector<WaitKey> dirty_;                                // notified since the last wake_ready
  WaitKey next_key_ = WaitKey{1} << 32;                       // new_key()
  // (bound, id) of every unfinished actor, so that the horizon, the minimum and is_minimum are
  // O(log n) instead of a scan; and how many of them are live (running, acting or woken).
  std::set<std::pair<Nanos, ActorId>> index_;
  size_t live_ = 0;
};

/// How this process runs a scheduler's actors: GEOTB_ACTORS=threads or fibers (unset: fibers where
/// the build supports them). Throws std::invalid_argument naming another value.
VirtualScheduler::Actors actors_from_environment();

/// The Clock of an actor: now() is the calling thread's actor's virtual time (or the largest
/// actor time when called from an unbound thread); sleep_until() advances the calling actor.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(VirtualScheduler& s) : s_(s) {}
  Nanos now() const override;
  void sleep_until(Nanos t) const override;

 private:
  VirtualScheduler& s_;
};

}  // namespace geotb::emu
