// async_ef_topk_int8: hierarchical error-feedback top-k + INT8 exchange (hier_ef_topk_int8's
// compression) with asynchronous sites under a staleness bound: each site goes on at its own pace
// and applies the other sites' updates as they arrive (strategy two of the cross-DC strategy
// guide; SSP's bounded staleness). The rule, written out in docs/guide/strategies.md
// ("async_ef_topk_int8: the update rule"), for site d with model x_d and round counter r_d:
//
//   every step      g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, g_d)
//   every K steps   round r = r_d (DC leader; its members compute the same from what it forwards):
//                   v = x_d - mark_d + e_d; c = Q(topk_p(v)); s_own = deq(c); e_d = v - s_own
//                   send c to every other site's leader, at once (no waiting)
//                   wait only while some site's round r - S has not arrived (S = max_staleness)
//                   apply every arrived update of a round r' <= r, s = r - r' rounds late:
//                   xbar_d <- xbar_d + (1/M) (s_own + sum_{d', r'} f(s) s_{d', r'})
//                   x_d <- xbar_d + e_d; mark_d <- x_d
//   An update of a later round (a faster site's) waits for this site's round r'. So s is in
//   [0, S]: a site is never more than S rounds ahead of the slowest. f(s) = 1/(1+s)^a ("poly";
//   a = 1: the learning rate / (1 + s)), or 1 if s <= tau else 0 ("threshold": dropped).
//   Each site's anchor xbar_d is its own: the models agree only at the end.
//   The end         "end": "all" (default): every site runs at least the run's steps; a site at or
//                   past its natural last round (no round boundary left before `steps`) goes on
//                   while some peer has neither ended nor sent its own natural last round, so the
//                   faster sites train while the slowest finishes. "end": "first": the run ends
//                   with the first site's last round, every other site at its next round. A
//                   round's message says whether it is the sender's last (bit 63 of the header
//                   clock). Each site then receives every round still on its way and applies it,
//                   and the sites average their models once, densely in float32: x = sum_d w_d x_d
//                   (the "final synchronous average" the report names). With S = 0 the sites run
//                   in lock step and every anchor is identical: the final exchange is then
//                   hier_ef_topk_int8's (progress since the last round), and the whole run is
//                   bit for bit hier_ef_topk_int8 with "overlap": false (tests/unit/async_test.cc).
// Runs on the embedded mode's virtual clock only ("what has arrived by now" is Transport::poll).
// Node kills and checkpoints are refused (descriptor): the sites are at different steps at any
// instant, with updates in flight, so no step is a consistent cut.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/checkpoint/state.h"
#include "engine/compute_charge.h"
#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/strategies/exchange_timing.h"
#include "engine/transport/tags.h"
#include "kernels/compress.h"
#include "kernels/wire_format.h"

namespace geotb::engine {

namespace {

constexpr size_t kAsyncHeader = sizeof(int64_t);           // the sender's clock at hand-off, ns
constexpr uint64_t kLastRound = uint64_t{1} << 63;    // in the header: the sender's last round
constexpr size_t kFixed = kAsyncHeader + kernels::kWireHeaderBytes;  // what does not grow with the model

/// A peer's round as the leader received it.
struct Update {
  size_t peer = 0;      // index into peers_ (the other DCs in DC order)
  int round = 0;        // the sender's round
  int64_t sent_at = 0;  // the sender's hand-off, ns
  uint64_t size = 0;    // its size on the network (represented), header included
  std::vector<uint8_t> wire = {};
};

/// What the leader knows of one peer.
struct PeerState {
  int next_round = 0;  // rounds received so far
  bool ended = false;  // its last round has arrived
};

std::string weight_text(const StrategyConfig& c) {
  std::ostringstream os;
  if (c.staleness_weight == "threshold")
    os << "1 if s <= " << c.staleness_threshold << ", else 0";
  else
    os << "1/(1+s)^" << c.staleness_exponent;
  return os.str();
}

class AsyncEfTopkInt8 final : public Strategy {
 public:
  AsyncEfTopkInt8(const StrategyConfig& cfg, const WorkerEnv& env)
      : cfg_(cfg), identical_anchors_(cfg.max_staleness == 0), final_(env, tags_.take("async.final", 2)),
        buckets_(cfg, env) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    xbar_.assign(x, x + n);
    mark_.assign(x, x + n);
    resid_.assign(n, 0.0f);
    acc_.resize(n);
    s_own_.assign(n, 0.0f);
    kcfg_ = ef_round_coding(cfg);
    DcPeers peers = dc_peers(env);
    peers_ = std::move(peers.leaders);
    peer_links_ = std::move(peers.links);
    state_.resize(peers_.size());
    // One tag each: a sender's messages of one tag arrive in send order, so the k-th from a peer
    // is its round k.
    exchange_tag_ = tags_.take("async.rounds", 1).tag(0);
    forward_tag_ = tags_.take("async.forward", 1).tag(0);
    log_.dc = env.dc;
    log_.max_staleness = cfg.max_staleness;
    log_.staleness_weight = weight_text(cfg);
    log_.start_s = seconds(env);
    steps_total_ = env.steps;
    if (leader(env)) snapshot(env);
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    steps_done_ = step + 1;
    if ((step + 1) % cfg_.K == 0) round(env, step);
  }

  bool ends_after(int /*step*/) const override { return stop_; }
  // "end": "all": a site that reached every step runs on while it has not sent its last round.
  // (No rounds at all when steps < K: nothing to wait for.)
  bool runs_past(int /*step*/) const override { return steps_total_ >= cfg_.K && !last_round_; }

  void finish(WorkerEnv& env) override {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    // 1. Every round still on its way (sites that never reach a round, steps < K, send none).
    std::vector<Update> drained;
    if (env.steps >= cfg_.K) {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      if (leader(env)) {
        for (size_t k = 0; k < peers_.size(); ++k)
          while (!state_[k].ended) receive(env, k, drained);
        for (Update& u : held_) drained.push_back(std::move(u));
        held_.clear();
        order(drained);
        if (!identical_anchors_) forward(env, drained, false);
      } else if (!identical_anchors_) {
        drained = from_leader(env).first;
      }
    }
    if (identical_anchors_ && !drained.empty())
      throw std::logic_error("async_ef_topk_int8: rounds left at the end with max_staleness 0");
    if (!drained.empty()) {
      // Applied on top of the progress since the last round (the site trained on after it).
      std::fill(s_own_.begin(), s_own_.end(), 0.0f);
      const std::vector<float> before = xbar_;
      apply(env, drained, rounds_ - 1);
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, n);
      for (size_t i = 0; i < n; ++i) x[i] += xbar_[i] - before[i];
    }
    if (leader(env)) snapshot(env);
    // 2. The final synchronous average.
    kernels::CompressConfig dense;
    dense.density = 1.0;
    dense.values = kernels::ValueCoding::kFloat32;
    std::vector<uint8_t> wire;
    if (identical_anchors_) {
      wire = compress(env, dense);  // hier_ef_topk_int8's: the progress since the last round + e_d
    } else {
      // x_d itself: with anchors of their own, only the models are common ground.
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, 2 * n);
      std::vector<float> zero(n, 0.0f);
      std::memcpy(acc_.data(), x, n * sizeof(float));
      kernels::compress_ef(acc_.data(), zero.data(), n, dense, wire);
      std::memcpy(s_own_.data(), x, n * sizeof(float));
    }
    // The leaders' exchange, forwarded to the members; the leader records it (step -1).
    const std::vector<std::vector<uint8_t>> finals =
        final_.exchange(env, wire, -1, "async.final", kernels::kWireHeaderBytes);
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, (finals.size() + 1) * n);
      dc_weighted_sum(env, s_own_.data(), n, sum_, [&](size_t k, float wd, float* sum) {
        kernels::decompress_add(finals[k].data(), finals[k].size(), sum, n, wd);
      });
      const float inv = dc_mean_scale(env);
      if (identical_anchors_) {
        for (size_t i = 0; i < n; ++i) xbar_[i] += sum_[i] * inv;
      } else {
        for (size_t i = 0; i < n; ++i) xbar_[i] = sum_[i] * inv;
      }
    }
    std::memcpy(x, xbar_.data(), n * sizeof(float));
    if (leader(env)) {
      log_.steps = steps_done_;
      log_.rounds = rounds_;
      env.async_log = std::move(log_);
    }
  }

  void save(WorkerEnv&, StateWriter&) override { throw StateError("async_ef_topk_int8: no checkpoints (no consistent cut)"); }
  void restore(WorkerEnv&, StateReader&) override {
    throw StateError("async_ef_topk_int8: no checkpoints (no consistent cut)");
  }

 private:
  static bool leader(const WorkerEnv& env) { return env.rank == env.dc_leaders[static_cast<size_t>(env.dc)]; }

  /// hier_ef_topk_int8's: acc = x - mark; wire = compress_ef(acc, resid); s_own = dequantised(wire).
  std::vector<uint8_t> compress(WorkerEnv& env, const kernels::CompressConfig& kc) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kCompress, 2 * n);  // compress + decompress of n elements
    for (size_t i = 0; i < n; ++i) acc_[i] = x[i] - mark_[i];
    std::vector<uint8_t> wire;
    kernels::compress_ef(acc_.data(), resid_.data(), n, kc, wire);
    std::fill(s_own_.begin(), s_own_.end(), 0.0f);
    kernels::decompress_add(wire.data(), wire.size(), s_own_.data(), n, 1.0f);
    return wire;
  }

  float weight(int s) const {
    if (cfg_.staleness_weight == "threshold") return s <= cfg_.staleness_threshold ? 1.0f : 0.0f;
    if (s == 0) return 1.0f;
    return static_cast<float>(1.0 / std::pow(1.0 + s, cfg_.staleness_exponent));
  }

  /// Leader: the next round of peer k, waiting for it.
  void receive(WorkerEnv& env, size_t k, std::vector<Update>& out) {
    take(env, k, env.net->recv(peers_[k], exchange_tag_), out);
  }
  /// Leader: every peer's rounds that have arrived by now.
  void poll_all(WorkerEnv& env, std::vector<Update>& out) {
    for (size_t k = 0; k < peers_.size(); ++k)
      while (!state_[k].ended)
        if (std::optional<std::vector<uint8_t>> m = env.net->poll(peers_[k], exchange_tag_))
          take(env, k, std::move(*m), out);
        else
          break;
  }
  void take(WorkerEnv& env, size_t k, std::vector<uint8_t> in, std::vector<Update>& out) {
    if (in.size() < kAsyncHeader) throw TransportError("async: a round message of " + std::to_string(in.size()) + " bytes");
    uint64_t head;
    std::memcpy(&head, in.data(), kAsyncHeader);
    PeerState& p = state_[k];
    Update u{.peer = k,
             .round = p.next_round++,
             .sent_at = static_cast<int64_t>(head & ~kLastRound),
             .size = env.net->represented_size(in.size(), kFixed),
             .wire = std::vector<uint8_t>(in.begin() + kAsyncHeader, in.end())};
    p.ended = (head & kLastRound) != 0;
    out.push_back(std::move(u));
  }
  /// In DC order, then round order: the order every member applies them in.
  static void order(std::vector<Update>& u) {
    std::stable_sort(u.begin(), u.end(),
                     [](const Update& a, const Update& b) { return a.peer != b.peer ? a.peer < b.peer : a.round < b.round; });
  }

  /// Leader: the updates to apply, to every member. With identical anchors (max_staleness 0) they
  /// are exactly one per peer of this round, as hier_ef_topk_int8 forwards them; otherwise a
  /// short list (whether this is the site's last round, then (peer, round) pairs) goes first.
  void forward(WorkerEnv& env, const std::vector<Update>& ups, bool last) {
    const std::vector<int> members = dc_ranks_but_self(env);
    if (members.empty()) return;
    if (!identical_anchors_) {
      std::vector<int32_t> meta{last ? 1 : 0, static_cast<int32_t>(ups.size())};
      for (const Update& u : ups) meta.insert(meta.end(), {static_cast<int32_t>(u.peer), u.round});
      std::vector<uint8_t> bytes(meta.size() * sizeof(int32_t));
      std::memcpy(bytes.data(), meta.data(), bytes.size());
      for (int m : members) env.net->send(m, forward_tag_, bytes);
    }
    for (int m : members)
      for (const Update& u : ups) env.net->send_data(m, forward_tag_, u.wire, kernels::kWireHeaderBytes);
  }
  /// Member: what the leader applies (and whether this is the site's last round), from its forward.
  std::pair<std::vector<Update>, bool> from_leader(WorkerEnv& env, int round = -1) {
    const int lead = env.dc_leaders[static_cast<size_t>(env.dc)];
    std::vector<Update> ups;
    bool last = false;
    if (identical_anchors_) {
      for (size_t k = 0; k < peers_.size(); ++k) ups.push_back({.peer = k, .round = round});
    } else {
      const std::vector<uint8_t> bytes = env.net->recv(lead, forward_tag_);
      std::vector<int32_t> meta(bytes.size() / sizeof(int32_t));
      std::memcpy(meta.data(), bytes.data(), meta.size() * sizeof(int32_t));
      if (meta.size() < 2 || meta.size() != 2 + 2 * static_cast<size_t>(meta[1]))
        throw TransportError("async: a forward list of " + std::to_string(bytes.size()) + " bytes from the leader");
      last = meta[0] != 0;
      for (int32_t i = 0; i < meta[1]; ++i)
        ups.push_back({.peer = static_cast<size_t>(meta[2 + 2 * i]), .round = meta[3 + 2 * i]});
    }
    for (Update& u : ups) u.wire = env.net->recv(lead, forward_tag_);
    return {std::move(ups), last};
  }

  /// Leader, before sending the round after `step`: whether it is this site's last.
  ///   "first": the run ends with the first site's last round: its natural last (no round boundary
  ///            left before `steps`), or any round once a peer's last round has arrived.
  ///   "all":   every site runs at least `steps`; at or past its natural last round a site goes on
  ///            while some peer has neither ended nor sent its own natural last round (that peer is
  ///            behind), so the fast sites train while the slowest finishes. With identical anchors
  ///            (max_staleness 0) the sites are in lock step: the natural last round is the last.
  bool is_last(const WorkerEnv& env, int step, bool natural_last) const {
    if (identical_anchors_) return natural_last;
    if (cfg_.end == "first") {
      if (natural_last) return true;
      return std::any_of(state_.begin(), state_.end(), [](const PeerState& p) { return p.ended; });
    }
    if (step + 1 + cfg_.K <= env.steps) return false;  // before its natural last round
    const int natural_last_round = env.steps / cfg_.K - 1;
    return std::none_of(state_.begin(), state_.end(),
                        [&](const PeerState& p) { return !p.ended && p.next_round <= natural_last_round; });
  }

  void round(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    const int r = rounds_++;
    std::vector<uint8_t> wire = compress(env, kcfg_);
    // The last round by the step count: no round boundary is left before the end.
    const bool natural_last = step + 1 + cfg_.K > env.steps;
    std::vector<Update> now;  // applied this round
    ExchangeRecord rec;
    rec.step = step;
    if (leader(env)) {
      const int64_t t0 = env.clock->now().count();
      // 1. What has arrived decides whether this round is the site's last (end_rule).
      std::vector<Update> got;
      poll_all(env, got);
      last_round_ = is_last(env, step, natural_last);
      // 2. This round to every peer, at once.
      std::vector<uint8_t> msg(kAsyncHeader + wire.size());
      const uint64_t head = static_cast<uint64_t>(t0) | (last_round_ ? kLastRound : 0);
      std::memcpy(msg.data(), &head, kAsyncHeader);
      std::memcpy(msg.data() + kAsyncHeader, wire.data(), wire.size());
      for (int p : peers_) env.net->send_data(p, exchange_tag_, msg, kFixed);
      rec.bytes_sent = env.net->represented_size(msg.size(), kFixed);
      {
        ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
        // 3. Wait only for what the bound requires: every peer's round r - S (or its end).
        if (cfg_.max_staleness >= 0)
          for (size_t k = 0; k < peers_.size(); ++k)
            while (!state_[k].ended && state_[k].next_round <= r - cfg_.max_staleness) {
              const auto w0 = env.clock->now();
              receive(env, k, got);
              log_.wait_at_bound_s += std::chrono::duration<double>(env.clock->now() - w0).count();
            }
        // 4. And whatever else is here by now.
        poll_all(env, got);
        for (Update& u : got) held_.push_back(std::move(u));
        const auto due = std::stable_partition(held_.begin(), held_.end(), [r](const Update& u) { return u.round <= r; });
        now.assign(std::make_move_iterator(held_.begin()), std::make_move_iterator(due));
        held_.erase(held_.begin(), due);
        order(now);
        ExchangeTiming timing(t0);
        for (const Update& u : now) timing.arrived(u.sent_at, u.size, peer_links_[u.peer]);
        timing.finish(env.clock->now().count(), rec);
        forward(env, now, last_round_);
      }
    } else {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      auto [ups, last] = from_leader(env, r);
      now = std::move(ups);
      // With identical anchors every site ends at its natural last round; else the leader says.
      last_round_ = identical_anchors_ ? natural_last : last;
    }
    stop_ = last_round_ && !natural_last;
    apply(env, now, r);
    if (leader(env)) env.exchanges.push_back(rec);
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, n);
      for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + resid_[i];
    }
    std::memcpy(mark_.data(), x, n * sizeof(float));
    if (!leader(env)) return;
    log_.round_s.push_back(seconds(env) - log_.start_s);
    if (r % snapshot_stride_ == 0) snapshot(env);
  }

  static double seconds(const WorkerEnv& env) { return static_cast<double>(env.clock->now().count()) * 1e-9; }

  /// xbar += (1/M) (s_own + sum f(r - r') s_{d', r'}), summed in DC order, then round order.
  /// The leader counts each update's staleness.
  void apply(WorkerEnv& env, const std::vector<Update>& ups, int r) {
    const size_t n = env.learner->num_params();
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kCompress, (ups.size() + 1) * n);  // decompress each + re-base
    const bool lead = leader(env);
    dc_weighted_sum(env, s_own_.data(), n, sum_, [&](size_t k, float wd, float* sum) {
      for (const Update& u : ups) {
        if (u.peer != k) continue;
        const int s = std::max(0, r - u.round);
        if (lead) {
          if (log_.staleness.size() <= static_cast<size_t>(s)) log_.staleness.resize(static_cast<size_t>(s) + 1, 0);
          ++log_.staleness[static_cast<size_t>(s)];
        }
        const float f = weight(s);
        if (f != 0.0f) kernels::decompress_add(u.wire.data(), u.wire.size(), sum, n, wd * f);
      }
    });
    const float inv = dc_mean_scale(env);
    for (size_t i = 0; i < n; ++i) xbar_[i] += sum_[i] * inv;
  }

  /// Leader: the site's model now, for the divergence over time (thinned evenly).
  void snapshot(const WorkerEnv& env) {
    const size_t n = env.learner->num_params();
    log_.snapshot_s.push_back(seconds(env) - log_.start_s);
    log_.snapshots.emplace_back(env.learner->params(), env.learner->params() + n);
    if (log_.snapshots.size() < model::kMaxAsyncSnapshots) return;
    // Full: keep every other one (the first included) and take every other round from now on.
    size_t w = 0;
    for (size_t i = 0; i < log_.snapshots.size(); i += 2, ++w) {
      if (w == i) continue;  // (a vector moved onto itself may be left empty)
      log_.snapshots[w] = std::move(log_.snapshots[i]);
      log_.snapshot_s[w] = log_.snapshot_s[i];
    }
    log_.snapshots.resize(w);
    log_.snapshot_s.resize(w);
    snapshot_stride_ *= 2;
  }

  StrategyConfig cfg_;
  const bool identical_anchors_;  // max_staleness 0: lock step, every site's anchor the same
  kernels::CompressConfig kcfg_;
  std::vector<int> peers_;               // other DCs' leaders, in DC order
  std::vector<InboundLink> peer_links_;  // the WAN link from each of them to this DC
  std::vector<PeerState> state_;         // leader: per peer
  std::vector<Update> held_;             // leader: arrived, of a round this site has not reached
  std::vector<float> xbar_, mark_, resid_, acc_, s_own_, sum_;
  TagAllocator tags_{strategy_tags()};
  DcExchange final_;  // the final synchronous average (after tags_: it takes a range of them)
  uint64_t exchange_tag_ = 0, forward_tag_ = 0;
  int rounds_ = 0;      // rounds done
  int steps_done_ = 0;
  bool last_round_ = false;  // this site has sent its last round
  bool stop_ = false;        // ... before its natural last one ("end": "first"): it ends after it
  int steps_total_ = 0;      // the run's steps (WorkerEnv::steps)
  int snapshot_stride_ = 1;
  model::AsyncSiteLog log_;
  DdpBuckets buckets_;  // after every other member: its initialiser comes last
};

std::string show_int(const char* key, int v, int lo, const char* unit) {
  return std::string(key) + ": " + show_value(v) + ": must be in [" + show_value(lo) + ", 1000000] " + unit;
}

constexpr StrategyKey kMaxStaleness{
    .name = "max_staleness",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.max_staleness = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.max_staleness}}; },
    .check = [](const StrategyConfig& c) {
      return c.max_staleness < -1 || c.max_staleness > 1000000
                 ? show_int("max_staleness", c.max_staleness, -1, "rounds (-1: no bound)")
                 : std::string();
    },
};
constexpr StrategyKey kStalenessWeight{
    .name = "staleness_weight",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.staleness_weight = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.staleness_weight}; },
    .check = [](const StrategyConfig& c) {
      return c.staleness_weight == "poly" || c.staleness_weight == "threshold"
                 ? std::string()
                 : "staleness_weight: \"" + c.staleness_weight + "\": must be \"poly\" or \"threshold\"";
    },
};
constexpr StrategyKey kStalenessExponent{
    .name = "staleness_exponent",
    .kind = StrategyKey::Kind::kNumber,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.staleness_exponent = std::get<double>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.staleness_exponent}; },
    .check = [](const StrategyConfig& c) {
      return std::isfinite(c.staleness_exponent) && c.staleness_exponent >= 0 && c.staleness_exponent <= 16
                 ? std::string()
                 : "staleness_exponent: " + show_value(c.staleness_exponent) + ": must be in [0, 16]";
    },
    .shown = [](const StrategyConfig& c) { return c.staleness_weight == "poly"; },
};
constexpr StrategyKey kEnd{
    .name = "end",
    .kind = StrategyKey::Kind::kText,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.end = std::get<std::string>(v); },
    .get = [](const StrategyConfig& c) { return KeyValue{c.end}; },
    .check = [](const StrategyConfig& c) {
      return c.end == "all" || c.end == "first" ? std::string()
                                                : "end: \"" + c.end + "\": must be \"all\" or \"first\"";
    },
};
constexpr StrategyKey kStalenessThreshold{
    .name = "staleness_threshold",
    .kind = StrategyKey::Kind::kInteger,
    .lo = -1000000000,
    .hi = 1000000000,
    .set = [](StrategyConfig& c, const KeyValue& v) { c.staleness_threshold = static_cast<int>(std::get<int64_t>(v)); },
    .get = [](const StrategyConfig& c) { return KeyValue{int64_t{c.staleness_threshold}}; },
    .check = [](const StrategyConfig& c) {
      return c.staleness_threshold < 0 || c.staleness_threshold > 1000000
                 ? show_int("staleness_threshold", c.staleness_threshold, 0, "rounds")
                 : std::string();
    },
    .shown = [](const StrategyConfig& c) { return c.staleness_weight == "threshold"; },
};

// The common keys are accepted (overlap and bucket_mb as every strategy takes them); the rounds
// are always in the background: overlap is not used.
constexpr std::array<const StrategyKey*, 11> kKeys = {
    &strategy_keys::K,        &strategy_keys::density,  &strategy_keys::block,   &strategy_keys::overlap,
    &strategy_keys::quantize, &strategy_keys::bucket_mb, &kMaxStaleness,         &kStalenessWeight,
    &kStalenessExponent,      &kStalenessThreshold,      &kEnd};
constexpr std::array<const StrategyKey*, 9> kReported = {
    &strategy_keys::K,  &strategy_keys::density, &strategy_keys::block,        &strategy_keys::quantize,
    &kMaxStaleness,     &kStalenessWeight,       &kStalenessExponent,          &kStalenessThreshold,
    &kEnd};

std::unique_ptr<Strategy> make_async(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<AsyncEfTopkInt8>(cfg, env);
}

}  // namespace

extern const StrategyDescriptor kAsyncEfTopkInt8;
constexpr StrategyDescriptor kAsyncEfTopkInt8{
    .name = "async_ef_topk_int8",
    .description = "hier_ef_topk_int8's compressed rounds with asynchronous sites: each applies the others' "
                   "updates as they arrive, weighted by staleness, at most max_staleness rounds ahead",
    .needs = {.needs_intra_dc = true,
              .one_group = false,
              .exchanges_every_step = false,
              .survives_kills = false,
              .virtual_time_only = true,
              .no_checkpoints = true},
    .keys = kKeys,
    .reported = kReported,
    .make = make_async,
};

}  // namespace geotb::engine
