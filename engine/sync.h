// Hand-offs between the engine's own threads (a strategy's background exchange, the Gloo ring's
// device thread), in the time domain of the transport they communicate over.
//
// Real time: a mutex and a condition variable; waiting takes what it takes on the host.
// Virtual time (the embedded mode's VirtualScheduler, emulator/inproc/virtual_time.h): every
// thread is an actor; a spawned thread starts at its parent's virtual instant, and a wait advances
// the waiter to the virtual instant of the event it waited for. So that the virtual times are
// exact, the awaited state records when it changed: update() passes the updater's instant, and
// wait()'s ready() returns the instant of the change it was waiting for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "emulator/inproc/fibers.h"
#include "emulator/inproc/wait_what.h"

namespace geotb::engine {

class Sync {
 public:
  using Nanos = std::chrono::nanoseconds;
  virtual ~Sync() = default;
  /// Runs fn(now) under the sync's lock, `now` the caller's instant on the transport's clock, and
  /// wakes every waiter whose ready() it may have made true.
  virtual void update(const std::function<void(Nanos)>& fn) = 0;
  /// Blocks until ready() (run under the lock) returns the instant of the awaited event. ready()
  /// reads only state that this Sync's update() changes (the virtual-time Sync re-checks a wait
  /// after an update of the same Sync only).
  /// `what` names the wait in a virtual-time deadlock report. Throws what the time domain throws
  /// when it is torn down (the transport's TransportError).
  virtual void wait(const std::function<std::optional<Nanos>()>& ready, emu::WaitWhat what) = 0;
  /// Starts fn on a new thread (in virtual time: a new actor at the caller's instant, which
  /// stops holding anyone back when fn returns or throws, run as an OS thread or a fiber as the
  /// scheduler runs its actors). The caller joins it.
  virtual emu::ActorThread spawn(std::string name, std::function<void()> fn) = 0;
};

/// The real-time Sync: one mutex and condition variable, instants 0 (nobody reads them). Inline:
/// every transport backend (a library of its own) hands it out by default.
class RealTimeSync final : public Sync {
 public:
  void update(const std::function<void(Nanos)>& fn) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn(Nanos{0});
    }
    cv_.notify_all();
  }
  void wait(const std::function<std::optional<Nanos>()>& ready, emu::WaitWhat) override {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return ready().has_value(); });
  }
  emu::ActorThread spawn(std::string, std::function<void()> fn) override {
    return emu::ActorThread(std::thread(std::move(fn)));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

inline std::unique_ptr<Sync> make_real_time_sync() { return std::make_unique<RealTimeSync>(); }

}  // namespace geotb::engine
