#include "emulator/link/link_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace geotb::emu {

const char* fate_name(Fate f) {
  switch (f) {
    case Fate::kDelivered: return "delivered";
    case Fate::kDropLinkDown: return "link_down";
    case Fate::kDropQueueBytes: return "queue_bytes";
    case Fate::kDropQueuePackets: return "queue_packets";
    case Fate::kDropLoss: return "loss";
  }
  return "?";
}

uint64_t LinkStats::total_drops() const {
  uint64_t t = 0;
  for (int i = 0; i < kNumFates; ++i) t += drops[i];
  return t;
}

namespace {
template <typename T>
std::string bad(const char* field, T value, const char* why) {
  std::ostringstream os;
  os << field << ": " << value << ": " << why;
  return os.str();
}
bool prob_ok(double p) { return std::isfinite(p) && p >= 0.0 && p <= 1.0; }

std::string validate_loss(const LossConfig& l) {
  if (!prob_ok(l.p)) return bad("loss.p", l.p, "must be a probability in [0, 1]");
  if (!prob_ok(l.p_good_to_bad)) return bad("loss.p_good_to_bad", l.p_good_to_bad, "must be in [0, 1]");
  if (!prob_ok(l.p_bad_to_good)) return bad("loss.p_bad_to_good", l.p_bad_to_good, "must be in [0, 1]");
  if (!prob_ok(l.loss_good)) return bad("loss.loss_good", l.loss_good, "must be in [0, 1]");
  if (!prob_ok(l.loss_bad)) return bad("loss.loss_bad", l.loss_bad, "must be in [0, 1]");
  if (l.kind == LossConfig::Kind::kGilbertElliott && l.p_good_to_bad > 0 && l.p_bad_to_good <= 0)
    return bad("loss.p_bad_to_good", l.p_bad_to_good, "must be > 0 or the link never leaves the bad state");
  return {};
}
std::string validate_jitter(const JitterConfig& j) {
  if (j.amount.count() < 0) return bad("jitter", j.amount.count(), "must be >= 0 ns");
  return {};
}
}  // namespace

std::string LinkModel::validate(const LinkConfig& c) {
  if (!std::isfinite(c.rate_bps) || c.rate_bps < 0) return bad("rate_bps", c.rate_bps, "must be >= 0 (0 = unlimited)");
  if (c.rate_bps > 0 && c.rate_bps < 1e3) return bad("rate_bps", c.rate_bps, "below 1 kbit/s is not a WAN");
  if (c.delay.count() < 0) return bad("delay", c.delay.count(), "must be >= 0 ns");
  if (auto e = validate_jitter(c.jitter); !e.empty()) return e;
  if (auto e = validate_loss(c.loss); !e.empty()) return e;
  if (!prob_ok(c.duplicate_p)) return bad("duplicate_p", c.duplicate_p, "must be in [0, 1]");
  if (!prob_ok(c.corrupt_p)) return bad("corrupt_p", c.corrupt_p, "must be in [0, 1]");
  return {};
}

LinkModel::LinkModel(const LinkConfig& cfg, RandomStream rng) : cfg_(cfg), rng_(rng) {
  if (auto e = validate(cfg); !e.empty()) throw std::invalid_argument("link config: " + e);
}

void LinkModel::schedule(const LinkChange& change) {
  LinkConfig probe = cfg_;
  if (change.rate_bps) probe.rate_bps = *change.rate_bps;
  if (change.delay) probe.delay = *change.delay;
  if (change.loss) probe.loss = *change.loss;
  if (change.jitter) probe.jitter = *change.jitter;
  if (auto e = validate(probe); !e.empty()) throw std::invalid_argument("link change: " + e);
  // Keep pending_[next_pending_..] sorted by `at`, stable for equal instants.
  auto it = std::upper_bound(pending_.begin() + static_cast<std::ptrdiff_t>(next_pending_), pending_.end(), change,
                             [](const LinkChange& a, const LinkChange& b) { return a.at < b.at; });
  pending_.insert(it, change);
}

void LinkModel::apply(const LinkChange& c) {
  if (c.up && !*c.up && cfg_.up) {
    // The fibre is cut at c.at (exactly, however late advance() runs): what was serialized by
    // then has left; everything else in the queue and on the serializer is lost (the holder of
    // the frames drops them, see take_cut()). The serializer is idle from c.at on.
    drain(c.at);
    head_ = 0;
    size_ = 0;
    queue_bytes_ = 0;
    if (busy_until() > c.at) {
      last_depart_ = c.at;
      last_depart_ps_ = 0;
    }
    last_release_ = std::min(last_release_, c.at);
    if (!cut_) cut_ = c.at;
  }
  if (c.rate_bps) cfg_.rate_bps = *c.rate_bps;
  if (c.delay) cfg_.delay = *c.delay;
  if (c.loss) {
    cfg_.loss = *c.loss;
    ge_bad_ = false;
  }
  if (c.jitter) cfg_.jitter = *c.jitter;
  if (c.up) cfg_.up = *c.up;
  ++stats_.changes_applied;
}

void LinkModel::advance(Nanos now) {
  while (next_pending_ < pending_.size() && pending_[next_pending_].at <= now) apply(pending_[next_pending_++]);
  if (next_pending_ == pending_.size() && next_pending_ > 0) {
    pending_.clear();
    next_pending_ = 0;
  }
}

std::optional<Nanos> LinkModel::take_cut() {
  const std::optional<Nanos> c = cut_;
  cut_.reset();
  return c;
}

void LinkModel::count_lost_in_flight(uint64_t frames, uint64_t bytes) {
  stats_.delivered -= std::min(frames, stats_.delivered);
  stats_.delivered_bytes -= std::min(bytes, stats_.delivered_bytes);
  stats_.drops[static_cast<int>(Fate::kDropLinkDown)] += frames;
  stats_.lost_in_flight += frames;
}

std::optional<Nanos> LinkModel::next_change() const {
  if (next_pending_ < pending_.size()) return pending_[next_pending_].at;
  return std::nullopt;
}

std::optional<Nanos> LinkModel::next_cut() const {
  bool up = cfg_.up;
  for (size_t i = next_pending_; i < pending_.size(); ++i) {
    if (!pending_[i].up) continue;
    if (up && !*pending_[i].up) return pending_[i].at;
    up = *pending_[i].up;
  }
  return std::nullopt;
}

void LinkModel::reserve(size_t frames) {
  size_t cap = 16;
  while (cap < frames) cap *= 2;
  if (cap <= ring_.size()) return;
  std::vector<Queued> bigger(cap);
  for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
  ring_.swap(bigger);
  head_ = 0;
}

void LinkModel::push(Queued q) {
  if (size_ == ring_.size()) reserve(size_ + 1);
  ring_[(head_ + size_) & (ring_.size() - 1)] = q;
  ++size_;
}

void LinkModel::drain(Nanos now) {
  while (size_ > 0 && ring_[head_].depart <= now) {
    queue_bytes_ -= ring_[head_].bytes;
    head_ = (head_ + 1) & (ring_.size() - 1);
    --size_;
  }
}

uint32_t LinkModel::queued_packets(Nanos now) {
  drain(now);
  return static_cast<uint32_t>(size_);
}
uint64_t LinkModel::queued_bytes(Nanos now) {
  drain(now);
  return queue_bytes_;
}

bool LinkModel::lose() {
  const LossConfig& l = cfg_.loss;
  switch (l.kind) {
    case LossConfig::Kind::kNone: return false;
    case LossConfig::Kind::kBernoulli: return l.p > 0 && rng_.bernoulli(l.p);
    case LossConfig::Kind::kGilbertElliott: {
      const bool lost = rng_.bernoulli(ge_bad_ ? l.loss_bad : l.loss_good);
      // Transition after the frame: the state seen by the next frame.
      ge_bad_ = ge_bad_ ? !rng_.bernoulli(l.p_bad_to_good) : rng_.bernoulli(l.p_good_to_bad);
      return lost;
    }
  }
  return false;
}

Nanos LinkModel::jitter() {
  const JitterConfig& j = cfg_.jitter;
  if (j.kind == JitterConfig::Kind::kNone || j.amount.count() == 0) return Nanos{0};
  const double a = static_cast<double>(j.amount.count());
  const double x = j.kind == JitterConfig::Kind::kUniform ? rng_.uniform(-a, a) : a * rng_.normal();
  return Nanos{std::llround(x)};
}

Verdict LinkModel::offer(Nanos now, uint32_t bytes) {
  now = std::max(now, last_now_);
  last_now_ = now;
  advance(now);
  Verdict v;
  ++stats_.offered;
  stats_.offered_bytes += bytes;
  if (!cfg_.up) {
    v.fate = Fate::kDropLinkDown;
    ++stats_.drops[static_cast<int>(v.fate)];
    return v;
  }
  drain(now);
  if (cfg_.queue_packets > 0 && size_ + 1 > cfg_.queue_packets) {
    v.fate = Fate::kDropQueuePackets;
  } else if (cfg_.queue_bytes > 0 && queue_bytes_ + bytes > cfg_.queue_bytes) {
    v.fate = Fate::kDropQueueBytes;
  }
  if (v.fate != Fate::kDelivered) {
    ++stats_.drops[static_cast<int>(v.fate)];
    return v;
  }
  // A frame offered while a bulk transfer holds the serializer (offer_bulk) is interleaved with
  // it: a lane of its own at the link's rate, outside the no-reordering clamp (the transfer's
  // release is far ahead).
  const bool lane = now < bulk_until_;
  const long double bits = 8.0L * (static_cast<long double>(bytes) + cfg_.overhead_bytes);
  if (lane) {
    lane_depart_ = std::max(now, lane_depart_) +
                   Nanos{cfg_.rate_bps > 0 ? std::llround(bits * 1e9L / static_cast<long double>(cfg_.rate_bps)) : 0};
    v.depart = lane_depart_;
  } else {
    // Serializer in ns + ps so per-frame rounding never accumulates into a rate error.
    if (now > last_depart_ || (now == last_depart_ && last_depart_ps_ == 0)) {
      last_depart_ = now;
      last_depart_ps_ = 0;
    }
    if (cfg_.rate_bps > 0) {
      const int64_t tx_ps = std::llround(bits * 1e12L / static_cast<long double>(cfg_.rate_bps));
      const int64_t ps = last_depart_ps_ + tx_ps;
      last_depart_ += Nanos{ps / 1000};
      last_depart_ps_ = ps % 1000;
    }
    v.depart = busy_until();
    push({v.depart, bytes});
    queue_bytes_ += bytes;
  }

  if (lose()) {
    v.fate = Fate::kDropLoss;
    ++stats_.drops[static_cast<int>(v.fate)];
    return v;
  }
  Nanos release = v.depart + cfg_.delay + jitter();
  if (release < v.depart) release = v.depart;  // jitter never makes a frame arrive before it left
  if (!lane) {
    if (!cfg_.reorder && release < last_release_) release = last_release_;
    last_release_ = std::max(last_release_, release);
  }
  v.release = release;
  v.duplicate = cfg_.duplicate_p > 0 && rng_.bernoulli(cfg_.duplicate_p);
  v.corrupt = cfg_.corrupt_p > 0 && rng_.bernoulli(cfg_.corrupt_p);
  ++stats_.delivered;
  stats_.delivered_bytes += bytes;
  stats_.duplicated += v.duplicate;
  stats_.corrupted += v.corrupt;
  return v;
}

LinkModel::Bulk LinkModel::offer_bulk(Nanos now, uint64_t frames, uint64_t bytes, double max_rate_bps, Nanos rto,
                                      uint32_t max_attempts, uint64_t rounds) {
  now = std::max(now, last_now_);
  advance(now);
  Bulk b;
  const double q = cfg_.loss.kind == LossConfig::Kind::kNone ? 0.0 : cfg_.loss.stationary_loss();
  if (q >= 1) {
    b.depart = b.release = now;
    return b;
  }
  const uint64_t extra = q > 0 ? static_cast<uint64_t>(std::llround(static_cast<double>(frames) * q / (1 - q))) : 0;
  const uint64_t per_frame_avg = frames ? bytes / frames : 0;
  b.transmissions = frames + extra;
  b.wire_bytes = bytes + extra * per_frame_avg + b.transmissions * cfg_.overhead_bytes;
  // Walk the pending changes on a copy of the state: the link's own time stays at `now`.
  double rate = cfg_.rate_bps;
  bool up = cfg_.up;
  Nanos delay = cfg_.delay;
  size_t i = next_pending_;
  auto apply_until = [&](Nanos t) {
    while (i < pending_.size() && pending_[i].at <= t) {
      const LinkChange& c = pending_[i++];
      if (c.rate_bps) rate = *c.rate_bps;
      if (c.delay) delay = *c.delay;
      if (c.up) up = *c.up;
    }
  };
  Nanos t = std::max(now, busy_until());
  b.begin = t;
  rounds = std::max<uint64_t>(1, rounds);
  const long double round_bits = 8.0L * static_cast<long double>(b.wire_bytes) / static_cast<long double>(rounds);
  long double bits = round_bits;  // of the part being serialized
  for (uint64_t left = rounds;;) {
    apply_until(t);
    if (!up) {
      // The sender retries at down + rto * (2^k - 1), k = 1..max_attempts; it resumes at the
      // first retry after the link is back, or gives up.
      const Nanos down = t;
      std::optional<Nanos> back;
      for (size_t j = i; j < pending_.size(); ++j)
        if (pending_[j].up && *pending_[j].up) {
          back = pending_[j].at;
          break;
        }
      Nanos retry = down, step = rto;
      uint32_t k = 0;
      for (; k < max_attempts; ++k) {
        retry += step;
        step *= 2;
        if (back && retry >= *back) break;
      }
      if (!back || k == max_attempts) {
        b.depart = b.release = retry;
        return b;
      }
      t = retry;
      continue;
    }
    const double r = rate > 0 ? (max_rate_bps > 0 ? std::min(rate, max_rate_bps) : rate) : max_rate_bps;
    const std::optional<Nanos> next = i < pending_.size() ? std::optional<Nanos>(pending_[i].at) : std::nullopt;
    if (r > 0) {
      const long double need_ns = bits * 1e9L / static_cast<long double>(r);
      if (next && static_cast<long double>((*next - t).count()) < need_ns) {
        bits -= static_cast<long double>((*next - t).count()) * static_cast<long double>(r) / 1e9L;
        t = *next;
        continue;
      }
      t += Nanos{static_cast<int64_t>(std::llround(need_ns))};
    }  // else unlimited: no serialization time
    if (--left == 0) break;
    // The part has left; the next one leaves when the chain has come back: one way delay later.
    t += delay;
    bits = round_bits;
  }
  b.delivered = true;
  b.depart = t;
  b.release = t + delay;
  last_depart_ = t;
  last_depart_ps_ = 0;
  bulk_until_ = std::max(bulk_until_, t);
  last_release_ = std::max(last_release_, b.release);
  stats_.offered += b.transmissions;
  stats_.offered_bytes += bytes + extra * per_frame_avg;
  stats_.delivered += frames;
  stats_.delivered_bytes += bytes;
  stats_.drops[static_cast<int>(Fate::kDropLoss)] += extra;
  return b;
}

}  // namespace geotb::emu
