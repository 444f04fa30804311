#include "engine/collectives/gloo_ring.h"

#include "engine/collectives/ring_elements.h"
#include "engine/compute_charge.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <thread>

namespace geotb::engine {

namespace {

size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

// Gloo's tcp Pair for the sending direction: sends leave in post order, each as soon as the
// receiver's NOTIFY_RECV_READY for it has arrived (Gloo's device thread does this while the
// user thread goes on posting and waiting). The hand-offs go through the transport's Sync, so in
// virtual time the device thread is an actor and a send leaves at max(posted, ready arrived).
class RendezvousSender {
 public:
  RendezvousSender(Transport& t, int dst, size_t header_bytes) : t_(t), dst_(dst), header_(header_bytes), sync_(t.make_sync()) {
    th_ = sync_->spawn("gloo ring device thread of rank " + std::to_string(t.rank()), [this] { run(); });
  }
  ~RendezvousSender() { stop(); }
  RendezvousSender(const RendezvousSender&) = delete;
  RendezvousSender& operator=(const RendezvousSender&) = delete;

  void post(uint64_t ready_tag, uint64_t data_tag, std::vector<uint8_t> msg) {
    sync_->update([&](Sync::Nanos now) { q_.push_back({ready_tag, data_tag, std::move(msg), now}); });
  }
  /// Blocks until `count` sends have been written; rethrows the sender's failure.
  void wait_written(size_t count) {
    bool failed = false;
    sync_->wait(
        [&]() -> std::optional<Sync::Nanos> {
          if (written_at_.size() >= count) return count == 0 ? Sync::Nanos{0} : written_at_[count - 1];
          if (err_) return failed = true, Sync::Nanos{0};
          return std::nullopt;
        },
        emu::WaitWhat("gloo ring: wait for send {2} to rank {0}", dst_, 0, count));
    if (failed) std::rethrow_exception(error());
  }
  std::exception_ptr error() {
    std::exception_ptr e;
    sync_->update([&](Sync::Nanos) { e = err_; });
    return e;
  }
  /// Joins the device thread (the transport must have been closed if sends are still pending).
  void stop() {
    if (!th_.joinable()) return;
    sync_->update([&](Sync::Nanos) { stopping_ = true; });
    th_.join();
  }

 private:
  struct Item {
    uint64_t ready_tag, data_tag;
    std::vector<uint8_t> msg;
    Sync::Nanos posted_at;
  };
  void run() {
    for (;;) {
      Item it;
      bool stop = false;
      try {
        sync_->wait(
            [&]() -> std::optional<Sync::Nanos> {
              if (!q_.empty()) return q_.front().posted_at;
              if (stopping_) return Sync::Nanos{0};
              return std::nullopt;
            },
            "gloo ring device thread: wait for a post");
        sync_->update([&](Sync::Nanos) {
          if (q_.empty()) {
            stop = true;
            return;
          }
          it = std::move(q_.front());
          q_.pop_front();
        });
        if (stop) return;
        (void)t_.recv(dst_, it.ready_tag);  // the receiver has posted its receive
        t_.send_data(dst_, it.data_tag, std::move(it.msg), header_);  // preamble + segment
      } catch (...) {
        const std::exception_ptr e = std::current_exception();
        sync_->update([&](Sync::Nanos) { err_ = e; });
        t_.close();  // the user thread may be blocked in a recv that this failure makes hopeless
        return;
      }
      sync_->update([&](Sync::Nanos now) { written_at_.push_back(now); });
    }
  }

  Transport& t_;
  const int dst_;
  const size_t header_;
  std::unique_ptr<Sync> sync_;
  std::deque<Item> q_;
  std::vector<Sync::Nanos> written_at_;  ///< instant each send was written, in post order
  bool stopping_ = false;
  std::exception_ptr err_;
  emu::ActorThread th_;
};

}  // namespace

GlooRingLayout gloo_ring_layout(size_t total_bytes, size_t ranks, const GlooRingOptions& o, size_t elem) {
  GlooRingLayout L;
  if (ranks == 0 || total_bytes == 0) return L;
  const size_t max_seg = std::max(elem, elem * (o.max_segment_bytes / elem));
  L.segment_bytes = round_up(std::min((total_bytes + ranks * 2 - 1) / (ranks * 2), max_seg), elem);
  L.num_segments = round_up(std::max((total_bytes + L.segment_bytes - 1) / L.segment_bytes, ranks * 2), ranks);
  L.segments_per_rank = L.num_segments / ranks;
  L.iterations_per_phase = L.num_segments - L.segments_per_rank + 2;
  return L;
}

GlooRingSegment gloo_ring_segment(const GlooRingLayout& L, size_t total, size_t pos, int phase, size_t i) {
  // Reduce-scatter sends segment ((rank+1)·spr + i) and receives ((rank+2)·spr + i); allgather
  // sends (rank·spr + i) and receives ((rank+1)·spr + i).
  const size_t send_first = phase == 0 ? pos + 1 : pos;
  const size_t recv_first = phase == 0 ? pos + 2 : pos + 1;
  const size_t seg = L.segment_bytes, spr = L.segments_per_rank, span = L.num_segments * seg;
  GlooRingSegment r;
  r.send_off = ((send_first * spr + i) * seg) % span;
  r.recv_off = ((recv_first * spr + i) * seg) % span;
  r.send_len = std::min(static_cast<ssize_t>(seg), static_cast<ssize_t>(total) - static_cast<ssize_t>(r.send_off));
  r.recv_len = std::min(static_cast<ssize_t>(seg), static_cast<ssize_t>(total) - static_cast<ssize_t>(r.recv_off));
  return r;
}

bool gloo_ring_represents(size_t n, double scale, size_t ranks, const GlooRingOptions& o, size_t elem) {
  if (scale == 1.0 || ranks < 2) return true;
  const auto rep = static_cast<size_t>(std::llround(static_cast<double>(n) * scale));
  return gloo_ring_layout(n * elem, ranks, o, elem).num_segments ==
         gloo_ring_layout(rep * elem, ranks, o, elem).num_segments;
}

uint64_t gloo_ring_tag_count(size_t n, size_t ranks, const GlooRingOptions& o, size_t elem) {
  if (ranks <= 1 || n == 0) return 0;
  const GlooRingLayout L = gloo_ring_layout(n * elem, ranks, o, elem);
  return 4 * static_cast<uint64_t>(L.num_segments - L.segments_per_rank);
}

namespace {

template <typename E>
void gloo_ring(Transport& t, const std::vector<int>& ring, typename E::T* data, size_t n, const TagRange& tags,
               const GlooRingOptions& o) {
  using T = typename E::T;
  constexpr size_t elem = sizeof(T);
  const size_t p = ring.size();
  if (p <= 1 || n == 0) return;
  const auto it = std::find(ring.begin(), ring.end(), t.rank());
  if (it == ring.end()) throw std::invalid_argument("gloo_ring: rank " + std::to_string(t.rank()) + " not in ring");
  const size_t pos = static_cast<size_t>(it - ring.begin());
  const int send_to = ring[(pos + p - 1) % p];  // Gloo: sendRank = rank - 1
  const int recv_from = ring[(pos + 1) % p];    // Gloo: recvRank = rank + 1
  const size_t total = n * elem;
  const GlooRingLayout L = gloo_ring_layout(total, p, o, elem);
  const size_t S = L.num_segments, spr = L.segments_per_rank;
  // Iteration i < S - spr of a phase sends one segment: its receiver-ready and data messages
  // each take a tag of their own range, phase by phase.
  const uint64_t sends = S - spr;
  tags.require(gloo_ring_tag_count(n, p, o, elem));
  TagAllocator alloc(tags);
  const TagRange ready_tags = alloc.take("gloo_ring.ready", 2 * sends);
  const TagRange data_tags = alloc.take("gloo_ring.data", 2 * sends);
  auto tag = [&](bool ready, uint64_t phase, size_t i) { return (ready ? ready_tags : data_tags).tag(phase * sends + i); };
  auto* bytes = reinterpret_cast<uint8_t*>(data);
  const size_t pre = o.preamble_bytes;

  RendezvousSender sender(t, send_to, pre);
  try {
    size_t sends_posted = 0;
    for (uint64_t phase = 0; phase < 2; ++phase) {
      std::vector<size_t> send_seq(L.iterations_per_phase, 0);
      for (size_t i = 0; i < L.iterations_per_phase; ++i) {
        if (i >= 2) {
          const GlooRingSegment prev = gloo_ring_segment(L, total, pos, static_cast<int>(phase), i - 2);
          if (prev.recv_len > 0) {
            const auto len = static_cast<size_t>(prev.recv_len);
            const std::vector<uint8_t> in = t.recv(recv_from, tag(false, phase, i - 2));
            if (in.size() != pre + len)
              throw TransportError("gloo_ring: segment of " + std::to_string(in.size()) + " bytes from rank " +
                                   std::to_string(recv_from) + ", expected " + std::to_string(pre + len));
            if (phase == 0) {
              T* dst = reinterpret_cast<T*>(bytes + prev.recv_off);
              const uint8_t* src = in.data() + pre;
              const size_t m = len / elem;
              const ComputeRegion region(Work::kReduce, m);
              for (size_t k = 0; k < m; ++k) {
                T s;
                std::memcpy(&s, src + k * elem, elem);
                dst[k] = E::add(dst[k], s);
              }
            } else {
              std::memcpy(bytes + prev.recv_off, in.data() + pre, len);
            }
          }
          if (prev.send_len > 0) sender.wait_written(send_seq[i - 2]);
        }
        if (i < S - spr) {
          const GlooRingSegment cur = gloo_ring_segment(L, total, pos, static_cast<int>(phase), i);
          if (cur.recv_len > 0) t.send(recv_from, tag(true, phase, i), std::vector<uint8_t>(pre, 0));
          if (cur.send_len > 0) {
            const auto len = static_cast<size_t>(cur.send_len);
            std::vector<uint8_t> msg(pre + len, 0);
            std::memcpy(msg.data() + pre, bytes + cur.send_off, len);
            sender.post(tag(true, phase, i), tag(false, phase, i), std::move(msg));
            send_seq[i] = ++sends_posted;
          }
        }
      }
    }
    sender.wait_written(sends_posted);
  } catch (const TransportClosed&) {
    // Woken by a close: the device thread's failure, if it had one, is the cause.
    t.close();
    sender.stop();
    if (std::exception_ptr e = sender.error()) std::rethrow_exception(e);
    throw;
  } catch (...) {
    t.close();  // wake peers blocked on this rank, and this rank's own device thread
    sender.stop();
    throw;
  }
}

}  // namespace

void gloo_ring_allreduce_sum(Transport& t, const std::vector<int>& ring, float* data, size_t n, const TagRange& tags,
                             const GlooRingOptions& o) {
  gloo_ring<ring_elements::Float32>(t, ring, data, n, tags, o);
}

void gloo_ring_allreduce_sum(Transport& t, const std::vector<int>& ring, uint16_t* data, size_t n, kernels::Wire16 w,
                             const TagRange& tags, const GlooRingOptions& o) {
  kernels::with_wire16(w, [&](auto c) { gloo_ring<ring_elements::Wire16<decltype(c)>>(t, ring, data, n, tags, o); });
}

}  // namespace geotb::engine
