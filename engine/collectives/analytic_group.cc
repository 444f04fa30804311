#include "engine/collectives/analytic_group.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>

#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/transport/transport.h"

namespace geotb::engine {

using Nanos = std::chrono::nanoseconds;

Nanos LanCost::serialize(uint64_t payload) const {
  if (rate_bps <= 0) return Nanos{0};
  const uint64_t frames = std::max<uint64_t>(1, (payload + mss_bytes - 1) / mss_bytes);
  const double wire = static_cast<double>(payload + frames * (header_bytes + overhead_bytes));
  return Nanos(std::llround(wire * 8e9 / rate_bps));
}

namespace {

/// A message on a directed pair that is free at `free`: it arrives after its serialization and
/// `rounds` one-way delays; the pair is busy until it has left.
Nanos deliver(const LanCost& lan, Nanos& free, Nanos at, uint64_t payload, uint64_t rounds = 1) {
  const Nanos start = std::max(at, free);
  free = start + lan.serialize(payload);
  return free + lan.delay * static_cast<int64_t>(rounds);
}

}  // namespace

std::vector<Nanos> gloo_ring_schedule(const std::vector<Nanos>& arrive, size_t n, double scale, const RingClock& c) {
  const size_t p = arrive.size();
  std::vector<Nanos> clock = arrive;
  if (p < 2 || n == 0) return clock;
  const GlooRingOptions o;
  const size_t total = n * sizeof(float), pre = o.preamble_bytes;
  const GlooRingLayout L = gloo_ring_layout(total, p, o);
  const size_t sends = L.num_segments - L.segments_per_rank, iters = L.iterations_per_phase;
  std::vector<Nanos>& free = *c.free;
  std::vector<Nanos> device(p, Nanos{0});  // each position's device thread: its last send's instant
  // Per position and sending iteration: the receiver-ready's arrival (from the predecessor), the
  // post of the send, when it was written, and when the segment arrives (from the successor).
  std::vector<std::vector<Nanos>> ready(p, std::vector<Nanos>(sends)), posted = ready, written = ready, data = ready;
  for (int phase = 0; phase < 2; ++phase) {
    for (size_t i = 0; i < iters; ++i) {
      for (size_t r = 0; r < p; ++r) {  // the user thread of each position
        if (i >= 2) {
          const GlooRingSegment prev = gloo_ring_segment(L, total, r, phase, i - 2);
          if (prev.recv_len > 0) {
            clock[r] = std::max(clock[r], data[r][i - 2]);
            if (phase == 0) clock[r] += c.reduce_cost[r](static_cast<uint64_t>(prev.recv_len) / sizeof(float));
          }
          if (prev.send_len > 0) clock[r] = std::max(clock[r], written[r][i - 2]);
        }
        if (i < sends) {
          const GlooRingSegment cur = gloo_ring_segment(L, total, r, phase, i);
          if (cur.recv_len > 0) ready[(r + 1) % p][i] = deliver(*c.lan, free[2 * r], clock[r], pre);
          if (cur.send_len > 0) posted[r][i] = clock[r];
        }
      }
      if (i >= sends) continue;
      for (size_t r = 0; r < p; ++r) {  // the device threads: a send leaves once its receiver is ready
        const GlooRingSegment cur = gloo_ring_segment(L, total, r, phase, i);
        if (cur.send_len <= 0) continue;
        written[r][i] = device[r] = std::max({device[r], posted[r][i], ready[r][i]});
        const size_t to = (r + p - 1) % p;
        data[to][i] = deliver(*c.lan, free[2 * r + 1], written[r][i],
                               represented_bytes(pre + static_cast<uint64_t>(cur.send_len), pre, scale));
      }
    }
  }
  for (size_t r = 0; r < p; ++r) clock[r] = std::max(clock[r], device[r]);
  return clock;
}

std::vector<Nanos> eager_ring_schedule(const std::vector<Nanos>& arrive, size_t n,
                                       const std::function<uint64_t(size_t)>& chunk_bytes, uint64_t rounds,
                                       const RingClock& c) {
  const size_t p = arrive.size();
  std::vector<Nanos> clock = arrive;
  if (p < 2) return clock;
  auto len = [&](size_t ch) { return (ch + 1) * n / p - ch * n / p; };
  std::vector<Nanos> in(p);
  for (int phase = 0; phase < 2; ++phase)
    for (size_t s = 0; s + 1 < p; ++s) {
      for (size_t r = 0; r < p; ++r) {  // each sends its chunk to its successor
        const size_t send_c = phase == 0 ? (r + p - s) % p : (r + 1 + p - s) % p;
        in[(r + 1) % p] = deliver(*c.lan, (*c.free)[2 * r], clock[r], chunk_bytes(send_c), rounds);
      }
      for (size_t r = 0; r < p; ++r) {  // and waits for its predecessor's
        const size_t recv_c = phase == 0 ? (r + p - s - 1) % p : (r + p - s) % p;
        clock[r] = std::max(clock[r], in[r]);
        if (phase == 0) clock[r] += c.reduce_cost[r](len(recv_c));
      }
    }
  return clock;
}

namespace {

/// The data flow of Gloo's ring over every position's buffer, in Gloo's order.
void gloo_ring_sums(const std::vector<float*>& bufs, size_t n) {
  const size_t p = bufs.size();
  const GlooRingOptions o;
  const size_t total = n * sizeof(float);
  const GlooRingLayout L = gloo_ring_layout(total, p, o);
  const size_t sends = L.num_segments - L.segments_per_rank;
  // The segment each position sent at iterations i - 1 and i (copies, as Gloo's messages are).
  std::vector<std::vector<std::vector<float>>> msg(p, std::vector<std::vector<float>>(2));
  for (int phase = 0; phase < 2; ++phase)
    for (size_t i = 0; i < L.iterations_per_phase; ++i) {
      if (i >= 2)
        for (size_t r = 0; r < p; ++r) {
          const GlooRingSegment prev = gloo_ring_segment(L, total, r, phase, i - 2);
          if (prev.recv_len <= 0) continue;
          const std::vector<float>& got = msg[(r + 1) % p][i % 2];  // the successor's, from i - 2
          float* dst = bufs[r] + prev.recv_off / sizeof(float);
          if (phase == 0) {
            for (size_t k = 0; k < got.size(); ++k) dst[k] = dst[k] + got[k];  // own + partial sum
          } else {
            std::memcpy(dst, got.data(), got.size() * sizeof(float));
          }
        }
      if (i < sends)
        for (size_t r = 0; r < p; ++r) {
          const GlooRingSegment cur = gloo_ring_segment(L, total, r, phase, i);
          std::vector<float>& out = msg[r][i % 2];
          out.clear();
          if (cur.send_len <= 0) continue;
          const float* src = bufs[r] + cur.send_off / sizeof(float);
          out.assign(src, src + static_cast<size_t>(cur.send_len) / sizeof(float));
        }
    }
}

/// The data flow of the eager ring (ring_allreduce.cc) over every position's buffer.
void eager_ring_sums(const std::vector<float*>& bufs, size_t n) {
  const size_t p = bufs.size();
  auto lo = [&](size_t c) { return c * n / p; };
  std::vector<std::vector<float>> msg(p);
  for (int phase = 0; phase < 2; ++phase)
    for (size_t s = 0; s + 1 < p; ++s) {
      for (size_t r = 0; r < p; ++r) {
        const size_t c = phase == 0 ? (r + p - s) % p : (r + 1 + p - s) % p;
        msg[r].assign(bufs[r] + lo(c), bufs[r] + lo(c + 1));
      }
      for (size_t r = 0; r < p; ++r) {
        const size_t c = phase == 0 ? (r + p - s - 1) % p : (r + p - s) % p;
        const std::vector<float>& got = msg[(r + p - 1) % p];
        float* dst = bufs[r] + lo(c);
        if (phase == 0)
          for (size_t k = 0; k < got.size(); ++k) dst[k] = dst[k] + got[k];
        else
          std::copy(got.begin(), got.end(), dst);
      }
    }
}

}  // namespace

// The hub's types, in a named namespace: AnalyticHub (declared in the header) holds them.
namespace analytic {

enum class OpKind : uint8_t { kAllreduce, kBroadcast, kForward };

/// One member's call: the operation and its arguments (a forward's `n` is its number of messages).
struct Call {
  OpKind kind = OpKind::kAllreduce;
  float* data = nullptr;
  size_t n = 0;
  RingShape shape{0, 1};  // elements 0: the data's own
  int root = 0;
  std::vector<std::vector<uint8_t>>* wires = nullptr;  // a forward's messages: the root's, or filled
  uint64_t header_bytes = 0;                           // a forward's bytes not scaled
  const std::function<Nanos(uint64_t)>* reduce = nullptr;  // the member's cost of reducing elements
};

struct Op {
  int arrived = 0, departed = 0;
  std::vector<Call> calls;  // each member's, as it called
  std::vector<Nanos> at, done;
  std::vector<float> root_copy;                 // a broadcast's data, as the root sent it
  std::vector<std::vector<uint8_t>> root_wires;  // a forward's messages, as the root sent them
  bool sent = false;   // a broadcast's or forward's root has sent: `done` holds each member's arrival
  bool ready = false;  // every member has called: `error`, or an allreduce's ends in `done`
  std::string error;
};

inline const char* kind_name(OpKind k) {
  return k == OpKind::kAllreduce ? "allreduce" : k == OpKind::kBroadcast ? "broadcast" : "forward";
}

/// Two members' calls of one operation agree (the operation, its size, root and shape).
inline bool same_call(const Call& a, const Call& b) {
  return a.kind == b.kind && a.n == b.n && a.root == b.root && a.shape.elements == b.shape.elements &&
         a.shape.rounds == b.shape.rounds;
}

/// "allreduce of 4 elements (root 0)", for a mismatch's error.
inline std::string describe(const Call& c) {
  return std::string(kind_name(c.kind)) + " of " + std::to_string(c.n) +
         (c.kind == OpKind::kForward ? " messages" : " elements") + " (root " + std::to_string(c.root) + ")";
}

}  // namespace analytic

using analytic::Call;
using analytic::Op;
using analytic::OpKind;
using analytic::describe;
using analytic::same_call;

class AnalyticHub {
 public:
  AnalyticHub(std::unique_ptr<Sync> done, std::unique_ptr<Sync> arrive, const LanCost& lan, int size, double scale)
      : done_(std::move(done)), arrive_(std::move(arrive)), lan_(lan), size_(size), scale_(scale),
        ring_free_(2 * static_cast<size_t>(size)) {}

  int size() const { return size_; }

  /// Member `index` takes part in operation `id` (every member numbers its operations alike) and
  /// returns when it is done for it, at its instant. Throws CollectiveError on a mismatch.
  void take_part(uint64_t id, int index, const Call& c) {
    const auto me = static_cast<size_t>(index);
    const OpKind kind = c.kind;
    const int root = c.root;
    const bool sender = kind != OpKind::kAllreduce && index == root;
    // Arrivals and departures go through a Sync nobody waits on; only an event that can release
    // members (the last arrival, a broadcast's or forward's send) wakes the waiters, once: a
    // collective costs each member O(1) readiness checks, not O(group).
    bool release = false;
    arrive_->update([&](Nanos now) {
      Op& op = ops_[id];
      if (op.arrived == 0) {
        op.calls.assign(static_cast<size_t>(size_), Call{});
        op.at.assign(static_cast<size_t>(size_), Nanos{0});
        op.done = op.at;
      }
      op.calls[me] = c;
      op.at[me] = now;
      if (sender && kind == OpKind::kBroadcast) send_broadcast(op, c, now);
      if (sender && kind == OpKind::kForward) send_forward(op, c, now);
      if (++op.arrived == size_) {
        // Every member has called: all alike, or the first (in member order) unlike member 0 is
        // named, whichever member came last.
        for (size_t m = 1; m < op.calls.size() && op.error.empty(); ++m)
          if (!same_call(op.calls[0], op.calls[m]))
            op.error = "analytic intra-DC group: member 0 called " + describe(op.calls[0]) + " and member " +
                       std::to_string(m) + " " + describe(op.calls[m]);
        if (kind == OpKind::kAllreduce && op.error.empty()) complete(op);
        op.ready = true;
      }
      release = sender || op.ready;
    });
    if (release) done_->update([](Nanos) {});
    // The root of a broadcast or a forward sends and goes on, as a sender over the transport does.
    if (!sender)
      done_->wait(
          [&]() -> std::optional<Nanos> {
            const Op& op = ops_.at(id);
            if (op.ready && !op.error.empty()) return op.at[me];
            // A broadcast's or forward's receiver needs only the root's matching send.
            if (kind != OpKind::kAllreduce)
              return op.sent && same_call(op.calls[static_cast<size_t>(root)], c) ? std::optional(op.done[me])
                                                                                 : std::nullopt;
            return op.ready ? std::optional(op.done[me]) : std::nullopt;
          },
          emu::WaitWhat(kind == OpKind::kAllreduce   ? "analytic intra-DC allreduce: member {0}, operation {2}"
                        : kind == OpKind::kBroadcast ? "analytic intra-DC broadcast: member {0} from {1}, operation {2}"
                                                     : "analytic intra-DC forward: member {0} from {1}, operation {2}",
                        index, root, id));
    std::string error;
    arrive_->update([&](Nanos) {
      Op& op = ops_.at(id);
      if (op.ready) error = op.error;
      if (error.empty() && kind == OpKind::kBroadcast && !sender)
        std::copy(op.root_copy.begin(), op.root_copy.end(), c.data);
      if (error.empty() && kind == OpKind::kForward && !sender) *c.wires = op.root_wires;
      if (++op.departed == size_) ops_.erase(id);
    });
    if (!error.empty()) throw CollectiveError(error);
  }

 private:
  /// The root sends its data to every other member at once, one message on each pair, in member
  /// order (transport_group.h's broadcast): each arrives after its pair's serialization and delay.
  void send_broadcast(Op& op, const Call& c, Nanos now) {
    op.root_copy.assign(c.data, c.data + c.n);
    const auto root = static_cast<size_t>(c.root);
    for (size_t m = 0; m < static_cast<size_t>(size_); ++m)
      if (m != root) op.done[m] = deliver(lan_, bcast_free_[{root, m}], now, represented_bytes(c.n * sizeof(float), 0, scale_));
    op.sent = true;
  }

  /// The root sends each message to every other member, member by member (a member's messages one
  /// after the other on its pair), as the strategies' forward over the transport does: a member
  /// has them all when its last one arrives. A message's bytes: its first `header` as they are,
  /// the rest at the represented scale (Transport::send_data).
  void send_forward(Op& op, const Call& c, Nanos now) {
    const std::vector<std::vector<uint8_t>>& wires = *c.wires;
    const uint64_t header = c.header_bytes;
    op.root_wires = wires;
    const auto root = static_cast<size_t>(c.root);
    for (size_t m = 0; m < static_cast<size_t>(size_); ++m) {
      if (m == root) continue;
      Nanos& free = bcast_free_[{root, m}];
      op.done[m] = now;
      for (const auto& w : wires) {
        op.done[m] = deliver(lan_, free, now, represented_bytes(w.size(), header, scale_));
      }
    }
    op.sent = true;
  }

  /// An allreduce whose members all called alike: Gloo's ring (or the eager one) over their
  /// buffers, then c10d's mean; each member's instant from the ring's schedule.
  void complete(Op& op) {
    const Call& call = op.calls[0];
    const size_t n = call.n, p = op.calls.size();
    std::vector<float*> bufs;
    RingClock c;
    c.lan = &lan_;
    c.free = &ring_free_;
    for (const Call& m : op.calls) {
      bufs.push_back(m.data);
      c.reduce_cost.push_back(*m.reduce);
    }
    const bool shaped = call.shape.elements != 0 && !shape_scales(n, call.shape, scale_);
    if (!shaped && gloo_ring_represents(n, scale_, p)) {
      gloo_ring_sums(bufs, n);
      op.done = gloo_ring_schedule(op.at, n, scale_, c);
    } else {
      // What transport_group.h runs then: the eager ring, each chunk's message the represented
      // model's bytes (a shape's share of its elements, and its rounds).
      eager_ring_sums(bufs, n);
      const uint64_t e = call.shape.elements;
      std::function<uint64_t(size_t)> bytes;
      if (shaped)
        bytes = [&](size_t ch) { return ((ch + 1) * e / p - ch * e / p) * sizeof(float); };
      else
        bytes = [&](size_t ch) { return represented_bytes(((ch + 1) * n / p - ch * n / p) * sizeof(float), 0, scale_); };
      op.done = eager_ring_schedule(op.at, n, bytes, shaped ? call.shape.rounds : 1, c);
    }
    // c10d's mean: the sum divided by the group's size, each member's own reduction.
    const float size = static_cast<float>(p);
    for (size_t m = 0; m < p; ++m) {
      for (size_t i = 0; i < n; ++i) bufs[m][i] /= size;
      op.done[m] += (*op.calls[m].reduce)(n);
    }
  }

  std::unique_ptr<Sync> done_, arrive_;  // one time domain (one scheduler's lock guards both)
  const LanCost lan_;
  const int size_;
  const double scale_;
  std::vector<Nanos> ring_free_;  // the ring's pairs: 2r = r -> r + 1, 2r + 1 = r -> r - 1
  std::map<std::pair<size_t, size_t>, Nanos> bcast_free_;
  std::map<uint64_t, Op> ops_;
};

std::shared_ptr<AnalyticHub> make_analytic_hub(std::unique_ptr<Sync> done, std::unique_ptr<Sync> arrive,
                                               const LanCost& lan, int size, double scale) {
  return std::make_shared<AnalyticHub>(std::move(done), std::move(arrive), lan, size, scale);
}

namespace {

class AnalyticGroup final : public IntraDc {
 public:
  AnalyticGroup(std::shared_ptr<AnalyticHub> hub, int index, std::function<Nanos(uint64_t)> reduce_cost)
      : hub_(std::move(hub)), index_(index), reduce_(std::move(reduce_cost)) {}
  int rank() const override { return index_; }
  int size() const override { return hub_->size(); }
  void allreduce_mean(float* data, size_t n) override {
    if (hub_->size() < 2) return;
    hub_->take_part(next_++, index_, Call{.kind = OpKind::kAllreduce, .data = data, .n = n, .reduce = &reduce_});
  }
  void allreduce_mean_shaped(float* data, size_t n, const RingShape& shape) override {
    if (hub_->size() < 2) return;
    hub_->take_part(next_++, index_,
                    Call{.kind = OpKind::kAllreduce, .data = data, .n = n, .shape = shape, .reduce = &reduce_});
  }
  void broadcast(float* data, size_t n, int root) override {
    if (hub_->size() < 2) return;
    hub_->take_part(next_++, index_,
                    Call{.kind = OpKind::kBroadcast, .data = data, .n = n, .root = root, .reduce = &reduce_});
  }
  bool forward(std::vector<std::vector<uint8_t>>& wires, size_t count, int root, uint64_t header_bytes) override {
    if (hub_->size() < 2) return true;
    hub_->take_part(next_++, index_,
                    Call{.kind = OpKind::kForward, .n = count, .root = root, .wires = &wires, .header_bytes = header_bytes,
                         .reduce = &reduce_});
    return true;
  }
  void barrier() override {
    float one = 1;
    allreduce_mean(&one, 1);
  }

 private:
  std::shared_ptr<AnalyticHub> hub_;
  int index_;
  std::function<Nanos(uint64_t)> reduce_;
  uint64_t next_ = 0;
};

}  // namespace

std::unique_ptr<IntraDc> make_analytic_group(std::shared_ptr<AnalyticHub> hub, int index,
                                             std::function<Nanos(uint64_t)> reduce_cost) {
  return std::make_unique<AnalyticGroup>(std::move(hub), index, std::move(reduce_cost));
}

}  // namespace geotb::engine
