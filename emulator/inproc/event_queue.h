// The in-process network's discrete-event queue: events at instants, run in (time, insertion)
// order, each dispatched to the object that scheduled it. One queue drives every connection of a
// fabric (emulator/inproc/fabric.h), so that a connection's ACK frames are offered to the reverse
// link in time order with the other direction's data; a MessageLink used alone owns one.
// Pure and single-threaded: no clock; whoever owns the queue decides how far to run it.
#pragma once

#include <cstdint>
#include <queue>
#include <stdexcept>
#include <vector>

#include "emulator/link/link_model.h"

namespace geotb::emu {

class EventQueue {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    /// The event (kind, a, b) scheduled for `at` is due; the queue's now() is `at`.
    virtual void on_event(Nanos at, uint32_t kind, uint64_t a, uint64_t b) = 0;
  };

  /// Schedules an event for `at` (not before now(): an earlier `at` runs at now()).
  void push(Nanos at, Handler* h, uint32_t kind, uint64_t a = 0, uint64_t b = 0) {
    q_.push({at < now_ ? now_ : at, seq_++, h, kind, a, b});
  }
  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  /// Instant of the earliest pending event. Precondition: !empty().
  Nanos next_time() const { return q_.top().at; }
  /// Instant of the latest event run (0 before the first).
  Nanos now() const { return now_; }
  /// Runs the earliest pending event.
  void run_next() {
    if (q_.empty()) throw std::logic_error("EventQueue::run_next on an empty queue");
    const Event e = q_.top();
    q_.pop();
    now_ = e.at;
    e.h->on_event(e.at, e.kind, e.a, e.b);
  }
  /// Runs every event due at or before `t`.
  void run_until(Nanos t) {
    while (!q_.empty() && q_.top().at <= t) run_next();
  }

 private:
  struct Event {
    Nanos at;
    uint64_t seq;
    Handler* h;
    uint32_t kind;
    uint64_t a, b;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
  uint64_t seq_ = 0;
  Nanos now_{0};
};

}  // namespace geotb::emu
