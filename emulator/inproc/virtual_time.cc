#include "emulator/inproc/virtual_time.h"

#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace geotb::emu {

namespace {

// The actor bound to the calling thread, or fiber: with fibers the carrier swaps it in and out.
struct Bound {
  const VirtualScheduler* scheduler = nullptr;
  VirtualScheduler::ActorId actor = -1;
};
thread_local Bound tl_bound;
const bool kBoundPerFiber = register_fiber_local<Bound>(+[]() -> Bound& { return tl_bound; });

const char* state_name(int s) {
  switch (s) {
    case 0: return "running";
    case 1: return "waiting to send";
    case 2: return "blocked";
    default: return "finished";
  }
}

}  // namespace

VirtualScheduler::VirtualScheduler(Actors actors) {
  (void)kBoundPerFiber;
  if (actors == Actors::kFibers && fibers_supported()) carrier_ = std::make_unique<FiberCarrier>();
}

ActorThread VirtualScheduler::start(std::string name, std::function<void()> fn) {
  if (!carrier_) return ActorThread(std::thread(std::move(fn)));
  return ActorThread(*carrier_, carrier_->spawn(std::move(name), std::move(fn)));
}

template <class Pred>
void VirtualScheduler::park(std::unique_lock<std::mutex>& lk, Actor& x, Pred pred) {
  if (!carrier_) {
    x.cv.wait(lk, pred);
    return;
  }
  while (!pred()) {
    x.fiber = carrier_->current();
    if (!x.fiber)
      throw std::logic_error("virtual time: actor '" + x.name + "' blocked on a thread that is no fiber of its scheduler");
    lk.unlock();
    carrier_->suspend();
    lk.lock();
    x.fiber = nullptr;
  }
}

void VirtualScheduler::wake(Actor& x) {
  if (!carrier_) {
    x.cv.notify_all();
  } else if (x.fiber) {
    carrier_->wake(x.fiber);
  }
}

VirtualScheduler::ActorId VirtualScheduler::add_actor(std::string name, Nanos t0) {
  std::lock_guard<std::mutex> lk(mu_);
  // A finished actor's slot is reused (short-lived actors, e.g. a collective's device thread per
  // call, would otherwise grow the table every scan walks). Its old thread never calls again.
  for (size_t i = 0; i < actors_.size(); ++i) {
    Actor& x = *actors_[i];
    if (x.state != State::kFinished) continue;
    x.name = std::move(name);
    x.state = State::kRunning;
    x.t = t0;
    x.deadline.reset();
    x.what = WaitWhat{};
    x.ready = nullptr;
    x.woken = x.timed_out = false;
    reindex(static_cast<ActorId>(i));
    return static_cast<ActorId>(i);
  }
  auto a = std::make_unique<Actor>();
  a->name = std::move(name);
  a->t = t0;
  actors_.push_back(std::move(a));
  reindex(static_cast<ActorId>(actors_.size() - 1));
  return static_cast<ActorId>(actors_.size() - 1);
}

void VirtualScheduler::reindex(ActorId id) {
  Actor& x = *actors_[static_cast<size_t>(id)];
  if (x.live) --live_;
  const bool was_indexed = x.in_index;
  x.in_index = x.state != State::kFinished;
  x.live = x.in_index && (x.state != State::kBlocked || x.woken);
  if (x.live) ++live_;
  if (!x.in_index) {
    if (was_indexed) index_.erase({x.indexed_bound, id});
    return;
  }
  const Nanos b = bound(x);
  if (was_indexed) {
    if (b == x.indexed_bound) return;  // same entry: nothing to move
    // Move the entry, reusing its node (no free and malloc per wait and wake).
    auto node = index_.extract({x.indexed_bound, id});
    node.value() = {b, id};
    index_.insert(std::move(node));
  } else {
    index_.insert({b, id});
  }
  x.indexed_bound = b;
}

void VirtualScheduler::bind(ActorId a) {
  std::lock_guard<std::mutex> lk(mu_);
  tl_bound = Bound{this, a};
}

VirtualScheduler::ActorId VirtualScheduler::current() const {
  return tl_bound.scheduler == this ? tl_bound.actor : -1;
}

Nanos VirtualScheduler::latest() const {
  std::lock_guard<std::mutex> lk(mu_);
  Nanos m{0};
  for (const auto& a : actors_) m = std::max(m, a->t);
  return m;
}

Nanos VirtualScheduler::now(ActorId a) const {
  std::lock_guard<std::mutex> lk(mu_);
  return actors_.at(static_cast<size_t>(a))->t;
}

void VirtualScheduler::charge(ActorId a, Nanos d) {
  std::lock_guard<std::mutex> lk(mu_);
  if (d > Nanos{0}) actors_.at(static_cast<size_t>(a))->t += d;
  reindex(a);
  reevaluate();
}

Nanos VirtualScheduler::bound(const Actor& a) const {
  switch (a.state) {
    case State::kRunning:
    case State::kActing: return a.t;
    case State::kBlocked: return a.woken ? a.t : a.deadline.value_or(kInf);
    case State::kFinished: return kInf;
  }
  return kInf;
}

bool VirtualScheduler::is_minimum(ActorId a) const {
  // (t_a, a) below every other unfinished actor's (bound, id): the smallest entry but a's own.
  const Nanos t = actors_[static_cast<size_t>(a)]->t;
  for (const auto& [b, y] : index_) {
    if (y == a) continue;
    return !(b < t || (b == t && y < a));
  }
  return true;
}

void VirtualScheduler::set_network(VirtualNetwork* net) {
  std::lock_guard<std::mutex> lk(mu_);
  net_ = net;
}

void VirtualScheduler::notify(WaitKey key) { dirty_.push_back(key); }

VirtualScheduler::WaitKey VirtualScheduler::new_key() {
  std::lock_guard<std::mutex> lk(mu_);
  return next_key_++;
}

bool VirtualScheduler::check(ActorId id) {
  Actor& x = *actors_[static_cast<size_t>(id)];
  if (x.state != State::kBlocked || x.woken) return false;
  ++counters_.readiness_checks;
  const std::optional<Nanos> d = (*x.ready)();
  if (!d) return false;
  x.t = std::max(x.t, *d);
  x.woken = true;
  ++counters_.wakeups;
  reindex(id);
  wake(x);
  return true;
}

bool VirtualScheduler::wake_ready() {
  // The unkeyed waiters, then those of the keys notified since the last call.
  bool any = false;
  for (ActorId id : any_waiters_) any |= check(id);
  while (!dirty_.empty()) {
    const WaitKey k = dirty_.back();
    dirty_.pop_back();
    if (auto it = keyed_.find(k); it != keyed_.end())
      for (ActorId id : it->second) any |= check(id);
  }
  return any;
}

void VirtualScheduler::unregister(ActorId id) {
  Actor& x = *actors_[static_cast<size_t>(id)];
  auto drop = [id](std::vector<ActorId>& v) { v.erase(std::remove(v.begin(), v.end(), id), v.end()); };
  if (x.key == kAnyKey) {
    drop(any_waiters_);
  } else if (auto it = keyed_.find(x.key); it != keyed_.end()) {
    drop(it->second);
    if (it->second.empty()) keyed_.erase(it);
  }
  x.key = kAnyKey;
}

void VirtualScheduler::reevaluate() {
  ++counters_.reevaluations;
  // 1. Blocked actors whose event now exists become runnable at its instant; the network runs
  //    its events up to the smallest actor bound, waking the waiters of what it delivers.
  wake_ready();
  while (net_) {
    if (index_.empty()) break;
    const Nanos h = index_.begin()->first;
    bool delivered = false;
    for (std::optional<Nanos> e = net_->next_event(); e && *e <= h; e = net_->next_event()) {
      ++counters_.network_events;
      if (net_->run_next()) {
        delivered = true;
        break;
      }
    }
    if (!delivered) break;
    wake_ready();
  }
  // 2. The actor with the smallest (bound, id) proceeds: an actor waiting to act, or a blocked one
  //    whose deadline has come. A running one proceeds by itself.
  if (index_.empty()) return;
  const ActorId min_id = index_.begin()->second;
  const bool any_unfinished = true, any_live = live_ > 0;
  Actor& m = *actors_[static_cast<size_t>(min_id)];
  if (m.state == State::kActing) {
    wake(m);
  } else if (m.state == State::kBlocked && !m.woken && m.deadline) {
    m.t = std::max(m.t, *m.deadline);
    m.woken = true;
    m.timed_out = true;
    reindex(min_id);
    wake(m);
  } else if (any_unfinished && !any_live && deadlock_.empty() && !(net_ && net_->next_event())) {
    // Before calling it a deadlock, every waiter once more, keyed or not (a change nobody notified).
    bool woke = false;
    for (size_t y = 0; y < actors_.size(); ++y) woke |= check(static_cast<ActorId>(y));
    if (woke) return reevaluate();
    deadlock_ = "virtual-time deadlock: every actor is blocked and nothing can wake any of them:\n" + describe_locked();
    for (auto& p : actors_) wake(*p);
  }
}

void VirtualScheduler::throw_if_stopped() const {
  if (!abort_reason_.empty()) throw SchedulerAborted(abort_reason_);
  if (!deadlock_.empty()) throw DeadlockError(deadlock_);
}

void VirtualScheduler::act(ActorId a, const std::function<void(Nanos)>& fn) {
  std::unique_lock<std::mutex> lk(mu_);
  throw_if_stopped();
  Actor& x = *actors_.at(static_cast<size_t>(a));
  x.state = State::kActing;  // running and acting have the same bound (t): the index stands
  reevaluate();
  park(lk, x, [&] { return is_minimum(a) || !abort_reason_.empty() || !deadlock_.empty(); });
  if (!abort_reason_.empty() || !deadlock_.empty()) {
    x.state = State::kRunning;
    throw_if_stopped();
  }
  try {
    fn(x.t);
  } catch (...) {
    x.state = State::kRunning;
    reevaluate();
    throw;
  }
  x.state = State::kRunning;
  reevaluate();
}

void VirtualScheduler::update(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lk(mu_);
  fn();
  reevaluate();
}

bool VirtualScheduler::wait(ActorId a, const std::function<std::optional<Nanos>()>& ready,
                            std::optional<Nanos> deadline, WaitWhat what, WaitKey key) {
  std::unique_lock<std::mutex> lk(mu_);
  throw_if_stopped();
  Actor& x = *actors_.at(static_cast<size_t>(a));
  if (std::optional<Nanos> d = ready()) {
    x.t = std::max(x.t, *d);
    reindex(a);
    reevaluate();  // a's bound moved up: someone waiting to act may now be the minimum
    return true;
  }
  // Past its deadline: a timeout, unless a network still runs (the event may be due before t).
  if (deadline && *deadline <= x.t && !net_) {
    reevaluate();
    return false;
  }
  x.state = State::kBlocked;
  x.ready = &ready;
  x.deadline = deadline;
  x.what = std::move(what);
  x.woken = false;
  x.timed_out = false;
  x.key = key;
  (key == kAnyKey ? any_waiters_ : keyed_[key]).push_back(a);
  reindex(a);
  reevaluate();
  park(lk, x, [&] { return x.woken || !abort_reason_.empty() || !deadlock_.empty(); });
  unregister(a);
  const bool ok = x.woken && !x.timed_out;
  const bool woken = x.woken;
  x.state = State::kRunning;
  x.ready = nullptr;
  x.deadline.reset();
  x.woken = false;
  x.timed_out = false;
  reindex(a);
  if (!woken) throw_if_stopped();
  reevaluate();
  return ok;
}

void VirtualScheduler::finish(ActorId a) {
  std::lock_guard<std::mutex> lk(mu_);
  actors_.at(static_cast<size_t>(a))->state = State::kFinished;
  reindex(a);
  reevaluate();
}

void VirtualScheduler::abort(const std::string& why) {
  std::lock_guard<std::mutex> lk(mu_);
  if (abort_reason_.empty()) abort_reason_ = why.empty() ? "aborted" : why;
  for (auto& p : actors_) wake(*p);
}

bool VirtualScheduler::aborted() const {
  std::lock_guard<std::mutex> lk(mu_);
  return !abort_reason_.empty();
}

VirtualScheduler::Counters VirtualScheduler::counters() const {
  std::lock_guard<std::mutex> lk(mu_);
  return counters_;
}

std::string VirtualScheduler::describe() const {
  std::lock_guard<std::mutex> lk(mu_);
  return describe_locked();
}

std::string WaitWhat::str() const {
  return pattern == nullptr ? text : fmt::format(fmt::runtime(pattern), a, b, c);
}

std::string VirtualScheduler::describe_locked() const {
  std::ostringstream os;
  for (size_t i = 0; i < actors_.size(); ++i) {
    const Actor& x = *actors_[i];
    os << "  actor " << i << " (" << x.name << "): " << state_name(static_cast<int>(x.state)) << " at t = "
       << std::chrono::duration<double>(x.t).count() << " s";
    if (x.state == State::kBlocked) {
      os << " in " << x.what.str();
      if (x.deadline) os << " until " << std::chrono::duration<double>(*x.deadline).count() << " s";
    }
    os << "\n";
  }
  return os.str();
}

VirtualScheduler::Actors actors_from_environment() {
  const char* v = std::getenv("GEOTB_ACTORS");
  const std::string s = v ? v : "";
  if (s == "threads") return VirtualScheduler::Actors::kThreads;
  if (s == "fibers" || s.empty())
    return fibers_supported() ? VirtualScheduler::Actors::kFibers : VirtualScheduler::Actors::kThreads;
  throw std::invalid_argument("GEOTB_ACTORS='" + s + "': expected 'threads' or 'fibers'");
}

Nanos VirtualClock::now() const {
  const auto a = s_.current();
  return a >= 0 ? s_.now(a) : s_.latest();
}

void VirtualClock::sleep_until(Nanos t) const {
  const auto a = s_.current();
  if (a < 0) return;
  const Nanos cur = s_.now(a);
  if (t > cur) s_.charge(a, t - cur);
}

}  // namespace geotb::emu
