// hier_ef_topk_int8: hierarchical synchronisation with error-feedback top-k + INT8 compression
// between data centers (the seed design). The exact update rule is written out in
// docs/guide/strategies.md ("hier_ef_topk_int8: the update rule"); in short, for DC d with model x_d:
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
// With "wire": "bf16" | "fp16" its rounds send v = u + e_d as 16-bit floats instead
// (kernels::cast16_ef: s_r = 16-bit(v), saturated at the format's largest finite value,
// e_d = v - s_r exactly: error feedback keeps the rounding for the next round), 2 bytes per
// element and no wire header; the peers add decode(s_r) as they add a float32 message. The final
// exchange at finish stays float32, so every replica still ends identical.
// "K": "auto" (strategies/adaptive_k.h): a round first collects the one in flight, then decides
// the next K from the measurements that round carried (every DC's, the same at every worker: the
// leader forwards them to its members), then launches its own exchange, whose message carries
// this DC's latest measurement (24 bytes after the clock).
// Tags: each round (and the final exchange) takes two from the strategy's TagAllocator, one for
// the leaders' exchange and one for the leader's forward to its members.
// "quorum" (blocking rounds, fixed K): each round runs among the sites the membership service
// (faults/quorum.h) decided for it; a site left out pauses and rejoins with the others' anchor
// (quorum_round, quorum_pause, quorum_rejoined; docs/guide/strategies.md "Quorum of sites").
#include <array>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <exception>
#include <thread>
#include <string>

#include "engine/compute_charge.h"
#include "engine/faults/quorum.h"
#include "engine/strategies/adaptive_k.h"
#include "engine/strategies/exchange_timing.h"
#include "engine/strategies/dc_exchange.h"
#include "engine/strategies/ddp_buckets.h"
#include "engine/strategies/descriptor.h"
#include "engine/transport/tags.h"
#include "kernels/compress.h"
#include "kernels/wire16.h"
#include "kernels/wire_format.h"

namespace geotb::engine {

namespace {

// Headers of an exchange message that do not grow with the model (docs/guide/represented.md):
// the hand-off clock (and "K": "auto"'s measurement, below), then the coding's header (Coding).
constexpr size_t kHeader = sizeof(int64_t);  // sender's clock at hand-off, ns
// "K": "auto": the sender's latest RoundMeasure (three doubles) follows the clock.
constexpr size_t kMeasureBytes = 3 * sizeof(double);

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
  std::vector<RoundMeasure> measures;       // "K": "auto": each peer's, in DC order (leader only)
  std::vector<int> sites;                   // quorum: the data center of each of `wires`
  bool excluded = false;                    // quorum: this site was dropped from the round
};

/// A round's exchange under a quorum of sites (faults/quorum.h): which round, this site, and the
/// site of each peer leader, so that a wait for a separated site ends when the service drops it.
struct QuorumWait {
  SiteQuorum* service = nullptr;
  int round = 0;
  int site = 0;
  std::vector<int> peer_sites;  // parallel to the exchange's peers
};

/// A leader's exchange running on its own thread (in virtual time: its own actor), handed back
/// through the transport's Sync so that the joiner's clock moves to the instant it finished.
struct InFlight {
  Transport* net = nullptr;
  std::unique_ptr<Sync> sync;
  emu::ActorThread th;
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

/// What a round's (or the final exchange's) message carries: the compressed tensor of
/// kernels/wire_format.h, or (wire16) 2-byte floats of that format.
struct Coding {
  std::optional<kernels::Wire16> wire16;
  /// The message's bytes that do not grow with the model (docs/guide/represented.md).
  size_t header() const { return wire16 ? 0 : kernels::kWireHeaderBytes; }
};

class HierEfTopkInt8 final : public Strategy {
 public:
  /// `wire16`: hierarchical's 16-bit rounds ("wire"); none: the compressed wire format.
  HierEfTopkInt8(const StrategyConfig& cfg, const WorkerEnv& env, std::optional<kernels::Wire16> wire16 = std::nullopt)
      : cfg_(cfg), rounds_{wire16}, buckets_(cfg, env) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    xbar_.assign(x, x + n);
    mark_.assign(x, x + n);
    resid_.assign(n, 0.0f);
    acc_.resize(n);
    s_cur_.assign(n, 0.0f);
    s_prev_.assign(n, 0.0f);
    kcfg_ = ef_round_coding(cfg);
    if (cfg.K_auto) {
      auto_k_.emplace(AdaptiveKConfig{.k_min = cfg.K_min, .k_max = cfg.K_max, .target = cfg.K_target}, env.num_dcs);
      next_round_ = auto_k_->k();
      interval_steps_ = auto_k_->k();
      interval_start_ns_ = env.clock->now().count();
    }
    DcPeers peers = dc_peers(env);
    peers_ = std::move(peers.leaders);
    peer_links_ = std::move(peers.links);
    quorum_ = cfg.quorum.empty() ? nullptr : env.quorum;
    if (quorum_) pause_tag_ = tags_.take("hier.quorum.pause", 1).tag(0);  // every rank alike, before any round
    if (!cfg.quorum.empty() && !quorum_)
      throw std::logic_error("hier_ef_topk_int8: \"quorum\" without the cluster's quorum service");
  }

  int next_step(int step) const override { return std::max(step + 1, resume_at_); }

  // A site restarted whole under a quorum (faults/fault_runtime.h): the state restored is another
  // site's worker's. x = x̄ = mark = the anchor every site shares; the residual was that site's own
  // unsent progress: 0 here, as for a site that rejoins after a pause (quorum_rejoined).
  void rejoin_site(WorkerEnv& env) override {
    if (!quorum_) throw std::logic_error("hier_ef_topk_int8: another site's state without \"quorum\"");
    std::memcpy(env.learner->params(), xbar_.data(), xbar_.size() * sizeof(float));
    mark_ = xbar_;
    std::fill(resid_.begin(), resid_.end(), 0.0f);
    std::fill(s_cur_.begin(), s_cur_.end(), 0.0f);
    std::fill(s_prev_.begin(), s_prev_.end(), 0.0f);
  }

  uint64_t loop_step_share() const override { return buckets_.loop_step_share(); }

  void step(WorkerEnv& env, int step) override {
    buckets_.intra_mean(env);  // DDP inside the DC (strategies/ddp_buckets.h)
    {
      ScopedTimer t(*env.clock, env.times.compute_ns);
      env.opt->step(env.learner->params(), env.learner->grads());
    }
    if (round_due(step)) round(env, step);
  }

  // A member of this DC died in the step's allreduce: the gradient is gone, the round (if due)
  // still runs so that the DCs stay in lock step. A dead member's forwards are dropped.
  void discard_step(WorkerEnv& env, int step) override {
    if (round_due(step)) round(env, step);
  }

  void finish(WorkerEnv& env) override {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    if (in_flight_) collect_pending(env);
    if (quorum_ && leader(env)) quorum_->finished(env.dc);
    // Dense float32 exchange of everything not yet in xbar, so every replica ends identical
    // (whatever the rounds' wire).
    kernels::CompressConfig dense;
    dense.density = 1.0;
    dense.values = kernels::ValueCoding::kFloat32;
    const Coding float32{};
    if (quorum_) {
      // Under a quorum the final exchange is one more round of the service's, after the last:
      // among the sites it decides (a dead site dropped, a paused one left out), every replica of
      // them identical at the end. A paused site admitted at it already has the final anchor.
      const int r_final = env.steps / cfg_.K;
      if (rejoined_at_ != r_final) {
        std::vector<uint8_t> wire = compress(env, dense, float32);
        quorum_exchange(env, r_final, std::move(wire), take_round_tags("hier.final"), float32, -1);
      }
      std::memcpy(x, xbar_.data(), n * sizeof(float));
      return;
    }
    std::vector<uint8_t> wire = compress(env, dense, float32);
    const RoundTags tags = take_round_tags("hier.final");
    std::unique_ptr<InFlight> fut;
    if (leader(env)) fut = launch(env, std::move(wire), tags, float32);
    apply(env, collect(env, fut.get(), tags, float32), s_cur_, -1, float32);
    std::memcpy(x, xbar_.data(), n * sizeof(float));
  }

  // The consistent cut: the round in flight (overlap) is collected and applied to the anchor
  // now instead of at the next round. apply() only adds it to xbar_, which nothing reads before
  // that next round, so the run continues bit-identically; what is left is xbar_, mark_, resid_.
  // With "K": "auto" the collected round's measurements wait in decision_ for the next boundary;
  // they, the rule's state and the interval's bookkeeping are saved too (own_sent_ is not: it
  // served the round just collected, and the next round sets it anew).
  void save(WorkerEnv& env, StateWriter& out) override {
    if (in_flight_) collect_pending(env);
    out.floats("anchor", xbar_);
    out.floats("mark", mark_);
    out.floats("residual", resid_);
    if (!auto_k_) return;
    StateWriter a = out.sub("adaptive_k");
    a.vec("rule", auto_k_->save());
    a.vec("decision", flatten(decision_));
    a.vec("bookkeeping", std::vector<double>{static_cast<double>(next_round_), static_cast<double>(interval_steps_),
                                             last_exchange_s_, last_round_s_,
                                             static_cast<double>(env.clock->now().count() - interval_start_ns_)});
  }
  void restore(WorkerEnv& env, StateReader& in) override {
    const size_t n = env.learner->num_params();
    in.floats("anchor", xbar_, n);
    in.floats("mark", mark_, n);
    in.floats("residual", resid_, n);
    in_flight_ = false;
    if (!auto_k_) return;
    StateReader a = in.sub("adaptive_k");
    std::vector<double> v;
    a.vec_exact("rule", v, auto_k_->save().size());
    try {
      auto_k_->restore(v);
    } catch (const std::invalid_argument& e) {
      throw StateError(std::string("strategy.adaptive_k.rule: ") + e.what());
    }
    std::vector<double> dec;
    a.vec("decision", dec);
    if (!dec.empty() && dec.size() != 3 * static_cast<size_t>(env.num_dcs))
      throw StateError("strategy.adaptive_k.decision: " + std::to_string(dec.size()) + " values");
    decision_ = unflatten(dec);
    a.vec_exact("bookkeeping", v, 5);
    next_round_ = static_cast<int>(v[0]);
    interval_steps_ = static_cast<int>(v[1]);
    last_exchange_s_ = v[2];
    last_round_s_ = v[3];
    interval_start_ns_ = env.clock->now().count() - static_cast<int64_t>(v[4]);
    a.finish();
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

  /// acc = x - mark; wire = compress_ef(acc, resid); s_cur = dequantised(wire). A 16-bit coding:
  /// wire = cast16_ef(acc, resid), s_cur = its decoded values (the same contract: resid <- v - s_cur).
  std::vector<uint8_t> compress(WorkerEnv& env, const kernels::CompressConfig& kc, const Coding& coding) {
    const size_t n = env.learner->num_params();
    const float* x = env.learner->params();
    ScopedTimer t(*env.clock, env.times.compress_ns);
    const ComputeRegion region(Work::kCompress, 2 * n);  // compress + decompress of n elements
    for (size_t i = 0; i < n; ++i) acc_[i] = x[i] - mark_[i];
    std::vector<uint8_t> wire;
    if (coding.wire16) {
      wire.resize(2 * n);
      kernels::cast16_ef(*coding.wire16, acc_.data(), resid_.data(), s_cur_.data(), n, wire.data());
      return wire;
    }
    kernels::compress_ef(acc_.data(), resid_.data(), n, kc, wire);
    std::fill(s_cur_.begin(), s_cur_.end(), 0.0f);
    kernels::decompress_add(wire.data(), wire.size(), s_cur_.data(), n, 1.0f);
    return wire;
  }

  bool round_due(int step) const { return auto_k_ ? step + 1 == next_round_ : (step + 1) % cfg_.K == 0; }

  static std::vector<double> flatten(const std::vector<RoundMeasure>& ms) {
    std::vector<double> v;
    for (const RoundMeasure& m : ms) v.insert(v.end(), {m.exchange_s, m.step_s, m.round_s});
    return v;
  }
  static std::vector<RoundMeasure> unflatten(const std::vector<double>& v) {
    std::vector<RoundMeasure> ms;
    for (size_t i = 0; i + 2 < v.size(); i += 3) ms.push_back({v[i], v[i + 1], v[i + 2]});
    return ms;
  }

  /// Collects and applies the round in flight. "K": "auto": the leader records its exchange time
  /// and sends every DC's measurement carried by that round (its own as it sent it) to its members;
  /// every worker keeps them in decision_ for the next boundary.
  void collect_pending(WorkerEnv& env) {
    const RoundTags tags = in_flight_tags_;
    Arrived a = collect(env, pending_.get(), tags, rounds_);
    if (auto_k_ && leader(env)) {
      last_exchange_s_ = a.launch_to_last_s;
      decision_.clear();
      for (int d = 0, k = 0; d < env.num_dcs; ++d)
        decision_.push_back(d == env.dc ? own_sent_ : a.measures.at(static_cast<size_t>(k++)));
      const std::vector<double> v = flatten(decision_);
      std::vector<uint8_t> msg(v.size() * sizeof(double));
      std::memcpy(msg.data(), v.data(), msg.size());
      for (int m : dc_ranks_but_self(env)) env.net->send(m, tags.forward, msg);
    } else if (auto_k_) {
      const std::vector<uint8_t> msg = env.net->recv(env.dc_leaders[static_cast<size_t>(env.dc)], tags.forward);
      if (msg.size() != static_cast<size_t>(env.num_dcs) * kMeasureBytes)
        throw TransportError("adaptive K: measurements of " + std::to_string(msg.size()) + " bytes from the leader");
      std::vector<double> v(msg.size() / sizeof(double));
      std::memcpy(v.data(), msg.data(), msg.size());
      decision_ = unflatten(v);
    }
    apply(env, a, s_prev_, last_round_step_, rounds_);
  }

  /// "K": "auto": collect the round in flight, decide the next K, launch this round's exchange
  /// with this DC's measurement, re-base. Same arithmetic as round()'s overlap branch.
  void adaptive_round(WorkerEnv& env, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    const int64_t entry = env.clock->now().count();
    const uint64_t exposed0 = env.times.exposed_comm_ns;
    const double step_s = static_cast<double>(entry - interval_start_ns_) * 1e-9 / interval_steps_;
    std::vector<uint8_t> wire = compress(env, kcfg_, rounds_);
    const RoundTags tags = take_round_tags("hier.round");
    if (in_flight_) collect_pending(env);
    if (!decision_.empty()) {
      auto_k_->decide(decision_);
      decision_.clear();
    }
    const int k = auto_k_->k();
    // This DC's measurement, carried by this round's message: the exchange just collected, the
    // training time per step of the interval that ended, the previous round's own compute.
    own_sent_ = last_exchange_s_ >= 0 ? RoundMeasure{last_exchange_s_, step_s, last_round_s_} : RoundMeasure{};
    if (leader(env)) pending_ = launch(env, std::move(wire), tags, rounds_, true, &own_sent_);
    in_flight_k_ = k;
    fly(env, tags, step);
    std::memcpy(mark_.data(), x, n * sizeof(float));
    next_round_ = step + 1 + k;
    interval_steps_ = k;
    const int64_t exit = env.clock->now().count();
    last_round_s_ = static_cast<double>(exit - entry) * 1e-9 -
                    static_cast<double>(env.times.exposed_comm_ns - exposed0) * 1e-9;
    interval_start_ns_ = exit;
  }

  /// Overlap: round `tags`, compressed after `step`, is in flight; the replica re-bases on the
  /// anchor plus its own progress not yet in it: x <- xbar + s_cur + resid.
  void fly(WorkerEnv& env, const RoundTags& tags, int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    in_flight_ = true;
    in_flight_tags_ = tags;
    last_round_step_ = step;
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, n);
      for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + s_cur_[i] + resid_[i];
    }
    s_prev_.swap(s_cur_);
  }

  void round(WorkerEnv& env, int step) {
    if (auto_k_) return adaptive_round(env, step);
    if (quorum_) return quorum_round(env, step);
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    std::vector<uint8_t> wire = compress(env, kcfg_, rounds_);
    const RoundTags tags = take_round_tags("hier.round");
    std::unique_ptr<InFlight> fut;
    if (leader(env)) fut = launch(env, std::move(wire), tags, rounds_);
    if (cfg_.overlap) {
      // Apply the previous round (it had K steps to arrive); this one flies under the next K.
      if (in_flight_)
        apply(env, collect(env, pending_.get(), in_flight_tags_, rounds_), s_prev_, last_round_step_, rounds_);
      pending_ = std::move(fut);  // the previous one was joined by collect() above
      fly(env, tags, step);
    } else {
      apply(env, collect(env, fut.get(), tags, rounds_), s_cur_, step, rounds_);
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, n);
      for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + resid_[i];
    }
    std::memcpy(mark_.data(), x, n * sizeof(float));
  }

  /// A round under the quorum of sites (faults/quorum.h; "overlap": false, fixed K). The leader
  /// asks the service for round r's sites S_r. In S_r: the exchange runs among S_r's leaders but
  /// those admitted at r (they receive the state instead), the anchor moves by the mean over
  /// them, and S_r's lowest site sends each admitted site {r, anchor}. Left out: the site pauses
  /// (quorum_pause). The leader tells its members first which of the two happened (a header on
  /// the forward tag), then forwards the peers' messages or the state.
  void quorum_round(WorkerEnv& env, int step) {
    std::vector<uint8_t> wire = compress(env, kcfg_, rounds_);
    quorum_exchange(env, (step + 1) / cfg_.K - 1, std::move(wire), take_round_tags("hier.round"), rounds_, step);
  }

  /// Round `r` under the quorum (quorum_round), or the final exchange (finish: r one beyond the
  /// last round, `step` -1), of `wire` in `coding`.
  void quorum_exchange(WorkerEnv& env, int r, std::vector<uint8_t> wire, const RoundTags& tags, const Coding& coding,
                       int step) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    std::vector<int> active;  // the sites exchanging this round, ascending
    int sent_to = 0;          // leader: the peers its message went to (the round's sites when it launched)
    std::vector<int> joiners;  // admitted at r: they get the state
    Arrived a;
    if (leader(env)) {
      // No majority on this side now: wait until there is one (then decide or read r), or until
      // the others decided r without this site (then pause until it can rejoin).
      std::optional<std::vector<int>> S;
      bool out = false;
      {
        ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
        while (!(S = quorum_->ask(r, env.dc, env.clock->now()))) {
          if (!quorum_->sites_of(r).empty()) {
            out = true;
            break;
          }
          quorum_poll(env, r);
        }
      }
      if (out) return quorum_pause(env, r, tags);
      for (int d : *S) (quorum_->admitted_at(d) == r ? joiners : active).push_back(d);
      DcPeers sub;
      QuorumWait qw{quorum_, r, env.dc, {}};
      for (int d : active)
        if (d != env.dc) {
          sub.leaders.push_back(env.dc_leaders[static_cast<size_t>(d)]);
          sub.links.push_back(static_cast<size_t>(d) < env.wan_in.size() ? env.wan_in[static_cast<size_t>(d)] : InboundLink{});
          qw.peer_sites.push_back(d);
        }
      sent_to = static_cast<int>(sub.leaders.size());
      std::unique_ptr<InFlight> fut = launch(env, std::move(wire), tags, coding, true, nullptr, &sub, qw);
      bool left_out = false;
      {
        ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
        a = fut->join();
        // The round's sites are final now; only their messages count (a site may have been
        // dropped after this leader received its message).
        const std::vector<int> final_sites = a.excluded ? std::vector<int>{} : quorum_->finalize(r, env.clock->now());
        left_out = std::find(final_sites.begin(), final_sites.end(), env.dc) == final_sites.end();
        std::vector<std::vector<uint8_t>> kept;
        for (size_t i = 0; i < a.sites.size(); ++i)
          if (std::find(final_sites.begin(), final_sites.end(), a.sites[i]) != final_sites.end())
            kept.push_back(std::move(a.wires[i]));
        a.wires = std::move(kept);
        active.clear();
        joiners.clear();
        for (int d : final_sites) (quorum_->admitted_at(d) == r ? joiners : active).push_back(d);
      }
      if (left_out) return quorum_pause(env, r, tags);
      {
        ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
        std::vector<uint8_t> head = {0, static_cast<uint8_t>(active.size())};
        for (int d : active) head.push_back(static_cast<uint8_t>(d));
        for (int m : dc_ranks_but_self(env)) {
          env.net->send(m, tags.forward, head);
          for (const auto& w : a.wires) env.net->send_data(m, tags.forward, w, coding.header());
        }
      }
    } else {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      const int lead = env.dc_leaders[static_cast<size_t>(env.dc)];
      // The leader may be paused for as long as its links are cut: no transport timeout here, but
      // a failure once every other site has finished (it will not be admitted any more).
      std::optional<std::vector<uint8_t>> got;
      while (!(got = env.net->recv_until(lead, tags.forward, env.clock->now() + std::chrono::seconds(1))))
        fail_if_others_finished(env, r);
      const std::vector<uint8_t> head = std::move(*got);
      if (head.empty()) throw TransportError("quorum: an empty header from the leader");
      if (head[0] == 1) return quorum_rejoined(env, r, head);
      active.assign(head.begin() + 2, head.begin() + 2 + head[1]);
      for (size_t i = 0; i + 1 < active.size(); ++i) a.wires.push_back(env.net->recv(lead, tags.forward));
    }
    // x̄ += Σ_{d∈S} w_d s_d / Σ_{d∈S} w_d, in DC order (every replica alike).
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, (a.wires.size() + 1) * n);
      sum_.assign(n, 0.0f);
      float wsum = 0;
      size_t k = 0;
      for (int d : active) {
        const float w = dc_mean_weight(env, d);
        wsum += w;
        if (d == env.dc) {
          for (size_t i = 0; i < n; ++i) sum_[i] += w * s_cur_[i];
        } else {
          add_wire(coding, a.wires[k++], w, sum_.data(), n);
        }
      }
      const float inv = 1.0f / wsum;
      for (size_t i = 0; i < n; ++i) xbar_[i] += sum_[i] * inv;
      for (size_t i = 0; i < n; ++i) x[i] = xbar_[i] + resid_[i];
    }
    std::memcpy(mark_.data(), x, n * sizeof(float));
    if (leader(env)) {
      env.exchanges.push_back(exchange_record(a, step));
      env.exchanges.back().peers = sent_to;
      // S_r's lowest exchanging site hands the admitted sites the anchor, on round r's forward tag
      // (its own members get theirs on it too; an admitted leader is none of them).
      if (!joiners.empty() && env.dc == active.front()) {
        std::vector<uint8_t> state(sizeof(int32_t) + n * sizeof(float));
        const int32_t rr = r;
        std::memcpy(state.data(), &rr, sizeof rr);
        std::memcpy(state.data() + sizeof rr, xbar_.data(), n * sizeof(float));
        for (int d : joiners) env.net->send_data(env.dc_leaders[static_cast<size_t>(d)], tags.forward, state, sizeof rr);
      }
    }
  }

  /// The leader of a site left out of round r: it waits (nobody of its DC trains) until its side
  /// of the partition holds a majority again, asks to join, waits for its admission at a round
  /// r' and for the state from r''s lowest site, takes it, tells its members, and resumes at step
  /// (r' + 1) K. The rounds in between take their tags, as every other site's did.
  void quorum_pause(WorkerEnv& env, int r, const RoundTags& tags) {
    const size_t n = env.learner->num_params();
    std::optional<int> admitted;
    std::vector<uint8_t> state;
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      while (!quorum_->has_majority(env.dc, env.clock->now())) quorum_poll(env, r);
      quorum_->request_join(env.dc);
      while (!(admitted = quorum_->admitted_at(env.dc))) quorum_poll(env, r);
      RoundTags at = tags;
      for (int k = r + 1; k <= *admitted; ++k) at = take_round_tags("hier.round");
      const std::vector<int> sites = quorum_->sites_of(*admitted);
      int from = -1;  // the lowest site of round r' that exchanged (not itself admitted then)
      for (int d : sites)
        if (quorum_->admitted_at(d) != *admitted) {
          from = d;
          break;
        }
      if (from < 0) throw TransportError("quorum: round " + std::to_string(*admitted) + " has no site to take the state from");
      state = env.net->recv(env.dc_leaders[static_cast<size_t>(from)], at.forward);
      if (state.size() != sizeof(int32_t) + n * sizeof(float))
        throw TransportError("quorum: a state of " + std::to_string(state.size()) + " bytes");
      std::vector<uint8_t> head = {1};
      head.insert(head.end(), state.begin(), state.end());
      for (int m : dc_ranks_but_self(env)) env.net->send_data(m, tags.forward, head, 1 + sizeof(int32_t));
      state = std::move(head);
    }
    quorum_rejoined(env, r, state);
  }

  /// A paused leader's wait of 100 ms before it asks the quorum again: a wait that times out (not
  /// a charge), so that the other actors run meanwhile; nothing is ever sent on its tag. Fails the
  /// run when every other site has finished: nobody will admit this one any more.
  void quorum_poll(WorkerEnv& env, int r) {
    fail_if_others_finished(env, r);
    if (env.net->recv_until(env.rank, pause_tag_, env.clock->now() + std::chrono::milliseconds(100)))
      throw TransportError("quorum: a message on the pause's own tag");
  }

  /// A paused site (leader or member) when every other site has finished: nobody will admit it.
  /// Not while its site takes part in round r, or was admitted at r or later: a member waits for
  /// its leader then (the final round runs after the others said they finished).
  void fail_if_others_finished(const WorkerEnv& env, int r) const {
    if (quorum_->in_round(r, env.dc) || quorum_->admitted_at(env.dc).value_or(-1) >= r) return;
    if (quorum_->others_finished(env.dc))
      throw TransportError("quorum: data center " + std::to_string(env.dc) + " was paused at round " +
                           std::to_string(r) + " and the others finished before it could rejoin (its side of the "
                           "partition held no majority until then)");
  }

  /// Every worker of a rejoining site: x = x̄ = mark = the majority's anchor of round r', the
  /// residual reset to 0 (its progress belongs to a model the others never saw), and the run goes
  /// on at step (r' + 1) K. A member takes the skipped rounds' tags here (its leader did).
  void quorum_rejoined(WorkerEnv& env, int r, const std::vector<uint8_t>& head) {
    const size_t n = env.learner->num_params();
    float* x = env.learner->params();
    int32_t to = 0;
    if (head.size() != 1 + sizeof to + n * sizeof(float)) throw TransportError("quorum: a rejoin state of " +
                                                                               std::to_string(head.size()) + " bytes");
    std::memcpy(&to, head.data() + 1, sizeof to);
    rejoined_at_ = to;
    if (!leader(env))
      for (int k = r + 1; k <= to; ++k) take_round_tags("hier.round");
    std::memcpy(xbar_.data(), head.data() + 1 + sizeof to, n * sizeof(float));
    std::memcpy(x, xbar_.data(), n * sizeof(float));
    mark_ = xbar_;
    std::fill(resid_.begin(), resid_.end(), 0.0f);
    resume_at_ = (to + 1) * cfg_.K;
  }

  /// Leader: hands `wire` to every other DC leader and collects theirs on a background thread.
  /// `send_own` false: only receive (the round's own message was sent by a dead predecessor).
  /// `measure` ("K": "auto"): this DC's latest measurement, sent after the clock.
  std::unique_ptr<InFlight> launch(WorkerEnv& env, std::vector<uint8_t> wire, const RoundTags& tags,
                                   const Coding& coding, bool send_own = true,
                                   const RoundMeasure* measure = nullptr, const DcPeers* subset = nullptr,
                                   std::optional<QuorumWait> qw = std::nullopt) {
    auto f = std::make_unique<InFlight>();
    f->net = env.net;
    f->sync = env.net->make_sync();
    InFlight* out = f.get();
    Transport* net = env.net;
    const emu::Clock* clock = env.clock;
    const uint64_t tag = tags.exchange;
    const bool measured = auto_k_.has_value();
    const size_t head = kHeader + (measured ? kMeasureBytes : 0), fixed = head + coding.header();
    std::array<double, 3> m{};
    if (measure) m = {measure->exchange_s, measure->step_s, measure->round_s};
    f->th = f->sync->spawn("WAN exchange of rank " + std::to_string(env.rank),
                           [out, net, clock, peers = subset ? subset->leaders : peers_,
                            links = subset ? subset->links : peer_links_, tag, w = std::move(wire), send_own,
                            measured, head, fixed, m, qw]() {
      Arrived a;
      std::exception_ptr err;
      try {
        std::vector<uint8_t> msg(head + w.size());
        const int64_t t0 = clock->now().count();
        std::memcpy(msg.data(), &t0, kHeader);
        if (measured) std::memcpy(msg.data() + kHeader, m.data(), kMeasureBytes);
        if (!w.empty()) std::memcpy(msg.data() + head, w.data(), w.size());  // empty: receive only
        if (send_own) {
          for (int p : peers) net->send_data(p, tag, msg, fixed);
          a.bytes_sent = a.bytes_max = net->represented_size(msg.size(), fixed);
        }
        ExchangeTiming timing(t0);
        for (size_t k = 0; k < peers.size(); ++k) {
          const int p = peers[k];
          std::vector<uint8_t> in;
          if (!qw) {
            in = net->recv(p, tag);
          } else {
            // Under a quorum: wait in slices of 50 ms; between them, a peer the service separated
            // from this side is dropped from the round (or this site was: it stops).
            const int ps = qw->peer_sites[k];
            std::optional<std::vector<uint8_t>> got;
            for (;;) {
              got = net->recv_until(p, tag, clock->now() + std::chrono::milliseconds(50));
              if (got) break;
              if (!qw->service->in_round(qw->round, qw->site)) break;
              if (qw->service->drop(qw->round, qw->site, ps, clock->now())) break;
            }
            if (!qw->service->in_round(qw->round, qw->site)) {
              a.excluded = true;
              break;
            }
            if (!got) continue;  // dropped from the round
            in = std::move(*got);
            a.sites.push_back(ps);
          }
          if (in.size() < head) throw TransportError("exchange: message of " + std::to_string(in.size()) + " bytes");
          int64_t sent_at;
          std::memcpy(&sent_at, in.data(), kHeader);
          if (measured) {
            std::array<double, 3> pm;
            std::memcpy(pm.data(), in.data() + kHeader, kMeasureBytes);
            a.measures.push_back({pm[0], pm[1], pm[2]});
          }
          const uint64_t size = net->represented_size(in.size(), fixed);
          a.bytes_max = std::max<uint64_t>(a.bytes_max, size);
          timing.arrived(sent_at, size, links[k]);
          a.wires.emplace_back(in.begin() + head, in.end());
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
  Arrived collect(WorkerEnv& env, InFlight* exchange, const RoundTags& tags, const Coding& coding) {
    Arrived a;
    const auto t0 = env.clock->now();
    {
      ScopedTimer t(*env.clock, env.times.exposed_comm_ns);
      if (leader(env)) {
        // A successor that took over as leader with a round in flight: its predecessor had
        // launched the exchange; the other DCs send their messages again to the new address.
        std::unique_ptr<InFlight> adopted;
        if (!exchange) exchange = (adopted = launch(env, {}, tags, coding, /*send_own=*/false)).get();
        a = exchange->join();
        if (!forwarded_by_group(env, a.wires, coding))
          for (int m : dc_ranks_but_self(env))
            for (const auto& w : a.wires) env.net->send_data(m, tags.forward, w, coding.header());
      } else if (!forwarded_by_group(env, a.wires, coding)) {
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

  /// The leader's forward of the other sites' payloads to its DC as one operation of the intra-DC
  /// group, where the group computes it (analytic collectives: one event, not a message per
  /// payload and member). The leader is the group's first member (no node faults there).
  bool forwarded_by_group(WorkerEnv& env, std::vector<std::vector<uint8_t>>& wires, const Coding& coding) {
    return env.intra && env.intra->forward(wires, peers_.size(), 0, coding.header());
  }

  /// xbar += sum_d w_d own_d (w_d = 1/M, or workload "dc_weights"); the leader records the exchange.
  void apply(WorkerEnv& env, const Arrived& a, const std::vector<float>& own, int step, const Coding& coding) {
    const size_t n = env.learner->num_params();
    {
      ScopedTimer t(*env.clock, env.times.compress_ns);
      const ComputeRegion region(Work::kCompress, (a.wires.size() + 1) * n);  // decompress every peer's + re-base
      // Summed in DC order (own contribution at its own place), the same order in every DC, so
      // that every DC's anchor, hence every replica, is bit-identical with 3 or more DCs too.
      dc_weighted_sum(env, own.data(), n, sum_,
                      [&](size_t k, float wd, float* sum) { add_wire(coding, a.wires[k], wd, sum, n); });
      const float inv = dc_mean_scale(env);
      for (size_t i = 0; i < n; ++i) xbar_[i] += sum_[i] * inv;
    }
    if (!leader(env)) return;
    ExchangeRecord rec = exchange_record(a, step);
    if (auto_k_ && step >= 0) rec.K = in_flight_k_;
    env.exchanges.push_back(rec);
  }

  /// sum[0, n) += wd times a peer's message of `coding` (the compressed wire format, or 16 bits).
  static void add_wire(const Coding& coding, const std::vector<uint8_t>& w, float wd, float* sum, size_t n) {
    if (!coding.wire16) {
      kernels::decompress_add(w.data(), w.size(), sum, n, wd);
    } else if (w.size() != 2 * n) {
      throw TransportError("hierarchical: a 16-bit exchange of " + std::to_string(w.size()) + " bytes, expected " +
                           std::to_string(2 * n));
    } else {
      kernels::add16(*coding.wire16, w.data(), n, wd, sum);
    }
  }

  /// The leader's log entry of an exchange that followed `step`.
  static ExchangeRecord exchange_record(const Arrived& a, int step) {
    ExchangeRecord rec;
    rec.step = step;
    rec.bytes_sent = a.bytes_sent;
    rec.seconds = a.timing.seconds;
    rec.lower_bound_s = a.timing.lower_bound_s;  // every peer's message took at least this: seconds >= it
    rec.rtt_s = a.timing.rtt_s;
    return rec;
  }

  StrategyConfig cfg_;
  Coding rounds_;  // the rounds' coding (the final exchange's is float32)
  kernels::CompressConfig kcfg_;
  std::vector<int> peers_;    // other DCs' leaders, in DC order
  std::vector<InboundLink> peer_links_;  // the WAN link from each of them to this DC
  std::vector<float> xbar_, mark_, resid_, acc_, s_cur_, s_prev_, sum_;
  std::unique_ptr<InFlight> pending_;  // leader: the exchange in flight (overlap mode)
  bool in_flight_ = false;
  RoundTags in_flight_tags_;
  TagAllocator tags_{strategy_tags()};
  int last_round_step_ = 0;
  // "K": "auto" (strategies/adaptive_k.h); absent for a fixed K.
  std::optional<AdaptiveK> auto_k_;
  int next_round_ = 0;                  // step + 1 of the next round
  int interval_steps_ = 0;              // K of the interval in progress
  int in_flight_k_ = 0;                 // K decided at the round in flight (recorded when it is applied)
  int64_t interval_start_ns_ = 0;       // clock when the interval in progress began (the last round ended)
  double last_exchange_s_ = -1;         // leader: the last collected exchange's T; -1: none yet
  double last_round_s_ = 0;             // the last round's own compute, seconds
  RoundMeasure own_sent_;               // leader: the measurement its round in flight carries
  std::vector<RoundMeasure> decision_;  // the collected round's measurements, every DC's; empty: none
  SiteQuorum* quorum_ = nullptr;        // "quorum": the cluster's service (faults/quorum.h); else null
  int resume_at_ = 0;                   // a paused site's step to resume at (Strategy::next_step)
  int rejoined_at_ = -1;                // quorum: the round a paused site was last admitted at
  uint64_t pause_tag_ = 0;              // quorum: the tag a paused leader waits on (nothing comes)
  DdpBuckets buckets_;  // after every other member: its initialiser comes last
};

std::unique_ptr<Strategy> make_hier_ef_topk_int8(const StrategyConfig& cfg, const WorkerEnv& env) {
  return std::make_unique<HierEfTopkInt8>(cfg, env);
}

std::unique_ptr<Strategy> make_hierarchical(const StrategyConfig& cfg, const WorkerEnv& env) {
  StrategyConfig dense = cfg;
  dense.density = 1.0;
  dense.quantize = false;
  return std::make_unique<HierEfTopkInt8>(dense, env, kernels::parse_wire16(cfg.wire));
}

constexpr std::array<const StrategyKey*, 10> kHierEfTopkInt8Keys = {
    &strategy_keys::K_or_auto, &strategy_keys::density,  &strategy_keys::block,
    &strategy_keys::overlap,   &strategy_keys::quantize, &strategy_keys::bucket_mb,
    &strategy_keys::K_min,     &strategy_keys::K_max,    &strategy_keys::K_target,
    &strategy_keys::quorum};
constexpr std::array<const StrategyKey*, 9> kHierEfTopkInt8Reported = {
    &strategy_keys::K_or_auto, &strategy_keys::K_min,   &strategy_keys::K_max,    &strategy_keys::K_target,
    &strategy_keys::overlap,   &strategy_keys::density, &strategy_keys::block,    &strategy_keys::quantize,
    &strategy_keys::quorum};
// hierarchical sends everything densely, in float32 or 16 bits ("wire"): density, block and
// quantize are accepted (as every strategy accepts the common keys) but not used, and not reported.
constexpr std::array<const StrategyKey*, 11> kHierarchicalKeys = {
    &strategy_keys::K_or_auto, &strategy_keys::density,  &strategy_keys::block,
    &strategy_keys::overlap,   &strategy_keys::quantize, &strategy_keys::bucket_mb,
    &strategy_keys::K_min,     &strategy_keys::K_max,    &strategy_keys::K_target,
    &strategy_keys::wire16,    &strategy_keys::quorum};
constexpr std::array<const StrategyKey*, 7> kHierarchicalReported = {
    &strategy_keys::K_or_auto, &strategy_keys::K_min,   &strategy_keys::K_max,
    &strategy_keys::K_target,  &strategy_keys::overlap, &strategy_keys::wire16,
    &strategy_keys::quorum};

constexpr StrategyInfo kNeeds = {
    .needs_intra_dc = true, .one_group = false, .exchanges_every_step = false, .survives_kills = true};

}  // namespace

extern const StrategyDescriptor kHierEfTopkInt8;
constexpr StrategyDescriptor kHierEfTopkInt8{
    .name = "hier_ef_topk_int8",
    .description = "Gloo allreduce inside each DC; every K steps error-feedback top-k + INT8 deltas between DC leaders",
    .needs = kNeeds,
    .keys = kHierEfTopkInt8Keys,
    .reported = kHierEfTopkInt8Reported,
    .make = make_hier_ef_topk_int8,
};

extern const StrategyDescriptor kHierarchical;
constexpr StrategyDescriptor kHierarchical{
    .name = "hierarchical",
    .description = "hier_ef_topk_int8 uncompressed: density 100 %, float32 values (or bf16/fp16 with error "
                   "feedback: \"wire\")",
    .needs = kNeeds,
    .keys = kHierarchicalKeys,
    .reported = kHierarchicalReported,
    .make = make_hierarchical,
};

}  // namespace geotb::engine
