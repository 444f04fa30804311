// hier_ef_topk_int8: hierarchical synchronisation with error-feedback top-k + INT8 compression
// between data centers (the seed design). The exact update rule is written out in README.md
// ("hier_ef_topk_int8: the update rule"); in short, for DC d with model x_d:
//
//   every step      g_d = mean of the DC's gradients (Gloo allreduce); x_d <- SGD(x_d, g_d)
//   every K steps   (round r, DC leader)
//                   u   = x_d - mark_d                    progress since the last round
//                   v   = u + e_d                         add the error residual
//                   c_r = Q(topk_p(v)); s_r = deq(c_r)    compress (kernels::compress_ef)
//                   e_d = v - s_r                         residual keeps exactly what was not sent
//                   send c_r to every other DC in the background
//                   wait for round r-1 (overlap) or r (blocking) from every DC:
//                   xbar <- xbar + (1/M) sum_d' s_{d'}    the global anchor, identical everywhere
//                   x_d  <- xbar + s_r + e_d   (overlap: own progress not yet in xbar)
//                   x_d  <- xbar + e_d         (blocking)
//                   mark_d <- x_d
//   Every worker of a DC runs the same deterministic computation on identical inputs (its
//   replica equals the leader's after each Gloo allreduce); only the leader talks to the WAN, and
//   it forwards the peers' messages (a few kB) to its DC members over the DC network.
//   finish          apply the last round, then one dense float32 exchange of each DC's remaining
//                   progress (x_d - mark_d + e_d), so every replica ends with the same model.
//
// `hierarchical` is the same code with density 1 and float32 values: uncompressed, residual 0.
// Tags: each round (and the final exchange) takes two from the strategy's TagAllocator, one for
// the leaders' exchange and one for the leader's forward to its members.
#include <array>
#include <cstring>
#include <exception>
#include <thread>
#include <string>

#include "engine/compute_charge.h"
#include "engine/strategies/exchange_timing.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/transport/tags.h"
#include "kernels/compress.h"
#include "kernels/wire_format.h"

namespace geotb::engine {

namespace {

constexpr size_t kHeader = sizeof(int64_t);  // sender's clock at hand-off, ns
// Headers of an exchange message that do not grow with the model (docs/guide/represented.md):
// the hand-off clock and the compressed tensor's wire header.
constexpr size_t kFixed = kHeader + kernels::kWireHeaderBytes;

/// The tags of one round (and of the final dense exchange): leader <-> leaders, leader -> members.
struct RoundTags {
  uint64_t exchange = 0;
  uint64_t forward = 0;
};

struct Arrived {
  std::vector<std::vector<uint8_t>> wires;  // one per peer DC, in DC order, header stripped
  double launch_to_last_s = 0;              // our hand-off -> last peer message arrived
  ExchangeRecord timing;                    // seconds and lower_bound_s (exchange_timing.h)
  uint64_t bytes_sent = 0;                  // our message (header included)
  uint64_t bytes_max = 0;                   // largest message of the exchange (header included)
};

/// A leader's exchange running on its own thread (in virtual time: its own actor), handed back
/// through the transport's Sync so that the joiner's clock moves to the instant it finished.
struct InFlight {
  Transport* net = nullptr;
  std::unique_ptr<Sync> sync;
  std::thread th;
  bool done = false;  // guarded by sync
  Sync::Nanos done_at{0};
  Arrived result;
  std::exception_ptr err;

  /// Waits for the exchange, then returns its result or rethrows its failure.
  Arrived join() {
    sync->wait([this]() -> std::optional<Sync::Nanos> { return done ? std::optional(done_at) : std::nullopt; },
               "the DC leader's WAN exchange");
    th.join();
    if (err) std::rethrow_exception(err);
    return std::move(result);
  }
  ~InFlight() {
    if (!th.joinable()) return;
    // Abandoned by a failure of the worker: close the transport so that the exchange, possibly
    // blocked on a peer that will never send, ends, then join it.
    net->close();
    th.join();
  }
};

class HierEfTopkInt8 final : public Strategy {
 public:
  HierEfTopkInt8(const StrategyConfig& cfg, const WorkerEnv& env) : cfg_(cfg), buckets_(cfg, env) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    xbar_.assign(x, x + n);
    mark_.assign(x, x + n);
    resid_.assign(n, 0.0f);
    acc_.resize(n);
    s_cur_.assign(n, 0.0f);
    s_prev_.assign(n, 0.0f);
    kcfg_.density = cfg.density;
    kcfg_.block = cfg.block;
    kcfg_.values = cfg.quantize ? kernels::ValueCoding::kInt8 : kernels::ValueCoding::kFloat32;
    kcfg_.rounding = kernels::Rounding::kNearest;  // deterministic: every DC member computes the same
    kcfg_.topk = kernels::TopkMode::kExact;
    for (int d = 0; d < env.num_dcs; ++d)
      if (d != env.dc) {
        peers_.push_back(env.dc_leaders[static_cast<size_t>(d)]);
        peer_links_.push_back(static_cast<size_t>(d) < env.wan_in.size() ? env.wan_in[static_cast<size_t>(d)]
                                                                           : InboundLink{});
      }
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    if ((step + 1) % cfg_.K == 0) round(env, step);
  }

  // A member of this DC died in the step's allreduce: the gradient is gone, the round (if due)
  // still runs so that the DCs stay in lock step. A dead member's forwards are dropped.
  void discard_step(WorkerEnv& env, int step) override {
    if ((step + 1) % cfg_.K == 0) round(env, step);
  }

  void finish(WorkerEnv& env) override {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    if (in_flight_) apply(env, collect(env, pending_.get(), in_flight_tags_), s_prev_, last_round_step_);
    // Dense float32 exchange of everything not yet in xbar, so every replica ends identical.
    kernels::CompressConfig dense;
    dense.density = 1.0;
    dense.values = kernels::ValueCoding::kFloat32;
    std::vector<uint8_t> wire = compress(env, dense);
    const RoundTags tags = take_round_tags("hier.final");
    std::unique_ptr<InFlight> fut;
    if (leader(env)) fut = launch(env, std::move(wire), tags);
    apply(env, collect(env, fut.get(), tags), s_cur_, -1);
    std::memcpy(x, xbar_.data(), n * sizeof(float));
  }

  // The consistent cut: the round in flight (overlap) is collected and applied to the anchor
  // now instead of at the next round. apply() only adds it to xbar_, which nothing reads before
  // that next round, so the run continues bit-identically; what is left is xbar_, mark_, resid_.
  void save(WorkerEnv& env, StateWriter& out) override {
    if (in_flight_) apply(env, collect(env, pending_.get(), in_flight_tags_), s_prev_, last_round_step_);
    out.floats("anchor", xbar_);
    out.floats("mark", mark_);
    out.floats("residual", resid_);
  }
  void restore(WorkerEnv& env, StateReader& in) override {
    const size_t n = env.learner->num_params();
    in.floats("anchor", xbar_, n);
    in.floats("mark", mark_, n);
    in.floats("residual", resid_, n);
    in_flight_ = false;
  }

 private:
  /// The DC's leader: local rank 0, or the survivor that took over its address after its death
  /// (engine/faults/: the agent updates env.dc_leaders; the other DCs keep addressing local rank 0).
  static bool leader(const WorkerEnv& env) { return env.rank == env.dc_leaders[static_cast<size_t>(env.dc)]; }

  /// Every worker takes a round's tags at the same point (each round, then the final exchange),
  /// so leaders and members agree on them.
  RoundTags take_round_tags(std::string_view name) {
    const TagRange r = tags_.take(name, 2);
    return {.exchange = r.tag(0), .forward = r.tag(1)};
  }

  /// acc = x - mark; wire = compress_ef(acc, resid); s_cur = dequantised(wire).
  std::vector<uint8_t> compress(WorkerEnv& env, const kernels::CompressConfig& kc) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kCompress, 2 * n);  // compress + decompress of n elements
    for (size_t i = 0; i < n; ++i) acc_[i] = x[i] - mark_[i];
    std::vector<uint8_t> wire;
    kernels::compress_ef(acc_.data(), resid_.data(), n, kc, wire);
    std::fill(s_cur_.begin(), s_cur_.end(), 0.0f);
    kernels::decompress_add(wire.data(), wire.size(), s_cur_.data(), n, 1.0f);
    return wire;
  }

  void round(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    std::vector<uint8_t> wire = compress(env, kcfg_);
    const RoundTags tags = take_round_tags("hier.round");
    std::unique_ptr<InFlight> fut;
    if (leader(env)) fut = launch(env, std::move(wire), tags);
    if (cfg_.overlap) {
      // Apply the previous round (it had K steps to arrive); this one flies under the next K.
      if (in_flight_) apply(env, collect(env, pending_.get(), in_flight_tags_), s_prev_, last_round_step_);
      pending_ = std::move(fut);  // the previous one was joined by collect() above
      in_flight_ = true;
      in_flight_tags_ = tags;
      last_round_step_ = step;
      ScopedTimer t(*env.clock, env.times.compress_ns);
      {
        const ComputeRegion region(Work::kCompress, n);
        for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + s_cur_[i] + resid_[i];
      }
      s_prev_.swap(s_cur_);
    } else {
      apply(env, collect(env, fut.get(), tags), s_cur_, step);
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, n);
      for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + resid_[i];
    }
    std::memcpy(mark_.data(), x, n * sizeof(float));
  }

  /// Leader: hands `wire` to every other DC leader and collects theirs on a background thread.
  /// `send_own` false: only receive (the round's own message was sent by a dead predecessor).
  std::unique_ptr<InFlight> launch(WorkerEnv& env, std::vector<uint8_t> wire, const RoundTags& tags,
                                   bool send_own = true) {
    auto f = std::make_unique<InFlight>();
    f->net = env.net;
    f->sync = env.net->make_sync();
    InFlight* out = f.get();
    Transport* net = env.net;
    const emu::Clock* clock = env.clock;
    const uint64_t tag = tags.exchange;
    f->th = f->sync->spawn("WAN exchange of rank " + std::to_string(env.rank),
                           [out, net, clock, peers = peers_, links = peer_links_, tag, w = std::move(wire), send_own]() {
      Arrived a;
      std::exception_ptr err;
      try {
        std::vector<uint8_t> msg(kHeader + w.size());
        const int64_t t0 = clock->now().count();
        std::memcpy(msg.data(), &t0, kHeader);
        if (!w.empty()) std::memcpy(msg.data() + kHeader, w.data(), w.size());  // empty: receive only
        if (send_own) {
          for (int p : peers) net->send_data(p, tag, msg, kFixed);
          a.bytes_sent = a.bytes_max = net->represented_size(msg.size(), kFixed);
        }
        ExchangeTiming timing(t0);
        for (size_t k = 0; k < peers.size(); ++k) {
          const int p = peers[k];
          std::vector<uint8_t> in = net->recv(p, tag);
          if (in.size() < kHeader) throw TransportError("exchange: message of " + std::to_string(in.size()) + " bytes");
          int64_t sent_at;
          std::memcpy(&sent_at, in.data(), kHeader);
          const uint64_t size = net->represented_size(in.size(), kFixed);
          a.bytes_max = std::max<uint64_t>(a.bytes_max, size);
          timing.arrived(sent_at, size, links[k]);
          a.wires.emplace_back(in.begin() + kHeader, in.end());
        }
        const int64_t all_here = clock->now().count();
        a.launch_to_last_s = static_cast<double>(all_here - t0) * 1e-9;
        timing.finish(all_here, a.timing);
      } catch (...) {
        err = std::current_exception();
      }
      out->sync->update([&](Sync::Nanos now) {
        out->result = std::move(a);
        out->err = err;
        out->done_at = now;
        out->done = true;
      });
    });
    return f;
  }

  /// The peers' messages of a round: the leader waits for its exchange and forwards them to its
  /// DC members; a member receives them from its leader.
  Arrived collect(WorkerEnv& env, InFlight* exchange, const RoundTags& tags) {
    Arrived a;
    const auto t0 = env.clock->now();
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      if (leader(env)) {
        // A successor that took over as leader with a round in flight: its predecessor had
        // launched the exchange; the other DCs send their messages again to the new address.
        std::unique_ptr<InFlight> adopted;
        if (!exchange) exchange = (adopted = launch(env, {}, tags, /*send_own=*/false)).get();
        a = exchange->join();
        for (int m : dc_ranks_but_self(env))
          for (const auto& w : a.wires) env.net->send_data(m, tags.forward, w, kernels::kWireHeaderBytes);
      } else {
        for (size_t i = 0; i < peers_.size(); ++i)
          a.wires.push_back(env.net->recv(env.dc_leaders[static_cast<size_t>(env.dc)], tags.forward));
      }
    }
    if (leader(env)) {
      const double waited = std::chrono::duration<double>(env.clock->now() - t0).count();
      if (a.launch_to_last_s > waited)
        env.times.overlapped_comm_ns += static_cast<uint64_t>((a.launch_to_last_s - waited) * 1e9);
    }
    in_flight_ = false;
    return a;
  }

  /// xbar += (own + sum of peers) / M; the leader records the exchange.
  void apply(WorkerEnv& env, const Arrived& a, const std::vector<float>& own, int step) {
    const size_t n = env.learner->num_params();
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, (a.wires.size() + 1) * n);  // decompress every peer's + re-base
      // Summed in DC order (own contribution at its own place), the same order in every DC, so
      // that every DC's anchor, hence every replica, is bit-identical with 3 or more DCs too.
      sum_.assign(n, 0.0f);
      for (int d = 0, k = 0; d < env.num_dcs; ++d) {
        if (d == env.dc) {
          for (size_t i = 0; i < n; ++i) sum_[i] += own[i];
        } else {
          const auto& w = a.wires[static_cast<size_t>(k++)];
          kernels::decompress_add(w.data(), w.size(), sum_.data(), n, 1.0f);
        }
      }
      const float inv = 1.0f / static_cast<float>(env.num_dcs);
      for (size_t i = 0; i < n; ++i) xbar_[i] += sum_[i] * inv;
    }
    if (!leader(env)) return;
    ExchangeRecord rec;
    rec.step = step;
    rec.bytes_sent = a.bytes_sent;
    rec.seconds = a.timing.seconds;
    rec.lower_bound_s = a.timing.lower_bound_s;  // every peer's message took at least this: seconds >= it
    rec.rtt_s = a.timing.rtt_s;
    env.exchanges.push_back(rec);
  }

  StrategyConfig cfg_;
  kernels::CompressConfig kcfg_;
  std::vector<int> peers_;    // other DCs' leaders, in DC order
  std::vector<InboundLink> peer_links_;  // the WAN link from each of them to this DC
  std::vector<float> xbar_, mark_, resid_, acc_, s_cur_, s_prev_, sum_;
  std::unique_ptr<InFlight> pending_;  // leader: the exchange in flight (overlap mode)
  bool in_flight_ = false;
  RoundTags in_flight_tags_;
  TagAllocator tags_{strategy_tags()};
  int last_round_step_ = 0;
  DdpBuckets buckets_;  // after every other member: its initialiser comes last
};

std::unique_ptr<Strategy> make_hier_ef_topk_int8(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<HierEfTopkInt8>(cfg, env);
}

std::unique_ptr<Strategy> make_hierarchical(const StrategyConfig& cfg, const WorkerEnv& env) {
  StrategyConfig dense = cfg;
  dense.density = 1.0;
  dense.quantize = false;
  return std::make_unique<HierEfTopkInt8>(dense, env);
}

constexpr std::array<const StrategyKey*, 6> kKeys = {&strategy_keys::K,        &strategy_keys::density,
                                                     &strategy_keys::block,    &strategy_keys::overlap,
                                                     &strategy_keys::quantize, &strategy_keys::bucket_mb};
constexpr std::array<const StrategyKey*, 5> kReported = {&strategy_keys::K, &strategy_keys::overlap,
                                                         &strategy_keys::density, &strategy_keys::block,
                                                         &strategy_keys::quantize};
// hierarchical sends everything in float32: density, block and quantize are accepted (as every
// strategy accepts the common keys) but not used, and not reported.
constexpr std::array<const StrategyKey*, 2> kReportedDense = {&strategy_keys::K, &strategy_keys::overlap};

constexpr StrategyInfo kNeeds = {
    .needs_intra_dc = true, .one_group = false, .exchanges_every_step = false, .survives_kills = true};

}  // namespace

extern const StrategyDescriptor kHierEfTopkInt8;
constexpr StrategyDescriptor kHierEfTopkInt8{
    .name = "hier_ef_topk_int8",
    .description = "Gloo allreduce inside each DC; every K steps error-feedback top-k + INT8 deltas between DC leaders",
    .needs = kNeeds,
    .keys = kKeys,
    .reported = kReported,
    .make = make_hier_ef_topk_int8,
};

extern const StrategyDescriptor kHierarchical;
constexpr StrategyDescriptor kHierarchical{
    .name = "hierarchical",
    .description = "hier_ef_topk_int8 uncompressed: density 100 %, float32 values",
    .needs = kNeeds,
    .keys = kKeys,
    .reported = kReportedDense,
    .make = make_hierarchical,
};

}  // namespace geotb::engine
