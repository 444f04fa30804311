#include "engine/transport/emulated.h"

#include <cmath>

#include <string>

#include "engine/compute_charge.h"

namespace geotb::engine {

// The fabric is below the engine and names its takeover tag itself: the same reserved tag.
static_assert(emu::Fabric::kTakeoverTag == reserved_tags::kTakeover);

namespace {

/// Sync in virtual time: the scheduler's lock, update() at the caller's virtual instant, wait()
/// advancing the caller to the awaited instant, spawn() an actor starting at the caller's instant
/// with the caller's compute charge. Its waits are keyed by the Sync (only its own update()
/// changes what they read: sync.h), so the scheduler re-checks them after an update of this Sync
/// only.
class VirtualSync final : public Sync {
 public:
  explicit VirtualSync(emu::VirtualScheduler& s) : s_(s), key_(s.new_key()) {}
  void update(const std::function<void(Nanos)>& fn) override {
    const auto me = s_.current();
    const Nanos now = me >= 0 ? s_.now(me) : s_.latest();
    s_.update([&] {
      fn(now);
      s_.notify(key_);
    });
  }
  void wait(const std::function<std::optional<Nanos>()>& ready, emu::WaitWhat what) override {
    const auto me = s_.current();
    if (me < 0) throw TransportError("virtual time: wait (" + what.str() + ") from a thread that is no actor");
    try {
      s_.wait(me, ready, std::nullopt, what, key_);
    } catch (const emu::SchedulerAborted& e) {
      throw TransportClosed(std::string("transport closed while waiting (") + what.str() + "): " + e.what());
    } catch (const emu::DeadlockError& e) {
      throw TransportError(e.what());
    }
  }
  emu::ActorThread spawn(std::string name, std::function<void()> fn) override {
    const auto me = s_.current();
    const Nanos t0 = me >= 0 ? s_.now(me) : s_.latest();
    const auto id = s_.add_actor(name, t0);
    return s_.start(std::move(name), [&s = s_, id, charge = thread_compute_charge(), measured = thread_measured_charge(),
                        fn = std::move(fn)] {
      s.bind(id);
      set_thread_compute_charge(charge);
      set_thread_measured_charge(measured);
      struct Finish {
        emu::VirtualScheduler& s;
        emu::VirtualScheduler::ActorId id;
        ~Finish() { s.finish(id); }
      } finish{s, id};
      fn();
    });
  }

 private:
  emu::VirtualScheduler& s_;
  emu::VirtualScheduler::WaitKey key_;
};

}  // namespace

std::unique_ptr<Sync> EmulatedTransport::make_sync() {
  return sched_ ? std::unique_ptr<Sync>(std::make_unique<VirtualSync>(*sched_)) : make_real_time_sync();
}

void EmulatedTransport::send(int dst, uint64_t tag, std::vector<uint8_t> bytes) {
  try {
    fabric_.send(rank_, dst, tag, std::move(bytes));
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
}

void EmulatedTransport::send_data(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t fixed_bytes) {
  const uint64_t size = represented_size(bytes.size(), fixed_bytes);
  try {
    fabric_.send(rank_, dst, tag, std::move(bytes), size);
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
}

void EmulatedTransport::send_shaped(int dst, uint64_t tag, std::vector<uint8_t> bytes, uint64_t network_bytes,
                                    uint64_t rounds) {
  try {
    fabric_.send(rank_, dst, tag, std::move(bytes), network_bytes, rounds);
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
}

uint64_t EmulatedTransport::represented_size(uint64_t bytes, uint64_t fixed_bytes) const {
  return represented_bytes(bytes, fixed_bytes, scale_);
}

static_assert(kTakeoverTag == emu::Fabric::kTakeoverTag, "one takeover tag for every backend");

void EmulatedTransport::take_over(int dead, const std::vector<int>& tell) {
  try {
    fabric_.take_over(rank_, dead, tell);
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
}

std::vector<uint8_t> EmulatedTransport::recv(int src, uint64_t tag) {
  std::optional<std::vector<uint8_t>> m;
  try {
    m = fabric_.recv(rank_, src, tag, timeout_);
  } catch (const emu::FabricInterrupted& e) {
    throw PeerDeclaredDead(e.what());
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());  // virtual time: a deadlock of the program under test
  }
  if (!m) {
    if (fabric_.closed())
      throw TransportClosed("rank " + std::to_string(rank_) + ": transport closed while waiting for rank " +
                            std::to_string(src) + " (tag " + std::to_string(tag) + ")");
    throw TransportError("rank " + std::to_string(rank_) + ": no message from rank " + std::to_string(src) +
                         " (tag " + std::to_string(tag) + ") within " +
                         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count()) +
                         " ms, or the transport was closed");
  }
  return std::move(*m);
}

std::optional<std::vector<uint8_t>> EmulatedTransport::recv_until(int src, uint64_t tag, std::chrono::nanoseconds deadline) {
  if (!sched_)
    throw TransportError("rank " + std::to_string(rank_) + ": recv_until needs the virtual clock");
  const std::chrono::nanoseconds now = sched_->now(sched_->current());
  if (deadline <= now) return poll(src, tag);
  std::optional<std::vector<uint8_t>> m;
  try {
    m = fabric_.recv(rank_, src, tag, deadline - now);
  } catch (const emu::FabricInterrupted& e) {
    throw PeerDeclaredDead(e.what());
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
  if (!m && fabric_.closed())
    throw TransportClosed("rank " + std::to_string(rank_) + ": transport closed while waiting for rank " +
                          std::to_string(src) + " (tag " + std::to_string(tag) + ")");
  return m;
}

std::optional<std::vector<uint8_t>> EmulatedTransport::poll(int src, uint64_t tag) {
  if (!sched_)
    throw TransportError("rank " + std::to_string(rank_) + ": poll needs the virtual clock (the embedded mode's wall "
                         "clock cannot say what has arrived by now)");
  try {
    return fabric_.poll(rank_, src, tag);
  } catch (const emu::FabricInterrupted& e) {
    throw PeerDeclaredDead(e.what());
  } catch (const emu::FabricError& e) {
    throw TransportError(e.what());
  }
}

}  // namespace geotb::engine
