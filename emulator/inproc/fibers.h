// Actors as fibers: user-space contexts that one OS thread (the carrier) runs in turn, switched at
// the virtual-time scheduler's blocking points, so that a hand-off between two actors is a register
// swap instead of a futex wake and a kernel context switch (docs/dev/fibers.md).
//
// One carrier per scheduler: whichever thread joins a fiber while it is not a fiber itself (the
// embedded cluster's main thread) runs the ready fibers, in the order they became ready, until the
// one it joins has finished. A fiber runs until it suspends (a scheduler wait or act that cannot
// proceed yet, a join of an unfinished fiber) or returns. A fiber never migrates: OpenMP's and
// libtorch's per-thread settings and glibc's malloc arena stay those of the carrier.
//
// What is per fiber, not per OS thread: the C++ runtime's exception state (the caught-exception
// stack and the uncaught count: a fiber may suspend inside a catch block while another throws),
// and every thread_local registered with register_fiber_local (the scheduler's current actor, the
// engine's compute charge). The carrier swaps them in and out around every switch.
//
// Stacks: 1 MiB reserved per fiber, with a guard page below it (an overflow is a SIGSEGV, not a
// silent corruption); pages are committed when touched, and finished fibers' stacks are reused.
// AddressSanitizer builds annotate every switch (__sanitizer_start/finish_switch_fiber).
// ThreadSanitizer builds cannot run fibers (fibers_supported() is false there).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace geotb::emu {

/// A thread_local whose value belongs to the running fiber: `make` creates a fiber's initial value
/// (opaque), `swap` exchanges it with the calling thread's, `destroy` frees it. Register at static
/// initialisation, before any fiber exists (returns true, for `static const bool x = ...`).
struct FiberLocal {
  std::function<void*()> make;
  std::function<void(void*)> swap;
  std::function<void(void*)> destroy;
};
bool register_fiber_local(FiberLocal local);

/// Typed helper: `get` returns the calling thread's instance of T.
template <class T>
bool register_fiber_local(T& (*get)()) {
  return register_fiber_local(FiberLocal{
      [] { return static_cast<void*>(new T()); },
      [get](void* p) {
        using std::swap;
        swap(*static_cast<T*>(p), get());
      },
      [](void* p) { delete static_cast<T*>(p); }});
}

/// Whether this build can run fibers (not under ThreadSanitizer).
bool fibers_supported();

class FiberCarrier {
 public:
  struct Fiber;
  struct StackPool;
  FiberCarrier();
  ~FiberCarrier();
  FiberCarrier(const FiberCarrier&) = delete;
  FiberCarrier& operator=(const FiberCarrier&) = delete;

  /// A new fiber running fn, ready. fn's exceptions are the fiber's own: one escaping fn ends the
  /// process (as one escaping a std::thread does).
  std::shared_ptr<Fiber> spawn(std::string name, std::function<void()> fn);
  /// The fiber running on the calling thread, or nullptr (the carrier itself, or another thread).
  Fiber* current() const;
  /// From a fiber: back to the carrier until wake(this fiber). Hold no lock across it.
  void suspend();
  /// Makes f ready (idempotent; from any thread; a finished fiber is ignored).
  void wake(Fiber* f);
  /// Until f has finished: from a fiber, suspended; from any other thread, running the ready
  /// fibers (one thread at a time: a second such thread waits for the first to finish f).
  void join(const std::shared_ptr<Fiber>& f);
  bool finished(const std::shared_ptr<Fiber>& f) const;
  /// Fibers created so far (for tests and measurements).
  uint64_t spawned() const;

 private:
  void resume(Fiber* f);  // on the carrier: run f until it suspends or returns
  void release(Fiber* f);

  mutable std::mutex mu_;
  std::condition_variable cv_;  // ready_ gained a fiber or a fiber finished (for a waiting joiner)
  std::deque<Fiber*> ready_;
  bool driving_ = false;
  std::vector<std::shared_ptr<Fiber>> live_;  // spawned, not finished: owned here until then
  uint64_t spawned_ = 0;
  std::unique_ptr<StackPool> stacks_;
};

/// A joinable handle on an actor's thread of control: an OS thread, or a fiber of a carrier.
/// Like std::thread, destroying a joinable handle ends the process.
class ActorThread {
 public:
  ActorThread() = default;
  explicit ActorThread(std::thread t) : thread_(std::move(t)) {}
  ActorThread(FiberCarrier& carrier, std::shared_ptr<FiberCarrier::Fiber> f)
      : carrier_(&carrier), fiber_(std::move(f)) {}
  ActorThread(ActorThread&&) = default;
  ActorThread& operator=(ActorThread&& o) {
    if (joinable()) std::terminate();
    thread_ = std::move(o.thread_);
    carrier_ = o.carrier_;
    fiber_ = std::move(o.fiber_);
    return *this;
  }
  ~ActorThread() {
    if (joinable()) std::terminate();
  }
  bool joinable() const { return thread_.joinable() || fiber_ != nullptr; }
  void join();

 private:
  std::thread thread_;
  FiberCarrier* carrier_ = nullptr;
  std::shared_ptr<FiberCarrier::Fiber> fiber_;
};

}  // namespace geotb::emu
