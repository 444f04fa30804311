#include "engine/cluster.h"

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "emulator/inproc/fabric.h"
#include "emulator/inproc/virtual_time.h"
#include "common/clock.h"
#include "engine/checkpoint/worker_state.h"
#include "engine/collectives/analytic_group.h"
#include "engine/collectives/transport_group.h"
#include "common/units.h"
#include "engine/faults/agent.h"
#include "engine/faults/quorum.h"
#include "engine/faults/rejoin.h"
#include "engine/model/torch_rng.h"
#include "engine/strategies/table.h"
#include "engine/transport/emulated.h"
#include "engine/worker_loop.h"

namespace geotb::engine {

namespace {

/// What this strategy and these options cannot do in the embedded mode, refused before anything
/// is built.
void refuse_what_cannot_run(const StrategyConfig& scfg, const StrategyInfo& info, const RunOptions& opt, int M) {
  if (info.real_network_only)
    throw RunError(scfg.name + ": runs only over a real network (geotb run --net process|dpdk): in embedded mode "
                   "its c10d Gloo traffic would bypass the emulated WAN");

  const bool virt = opt.clock == ClockMode::kVirtual;
  if (info.virtual_time_only && !virt)
    throw RunError(scfg.name + ": runs on the virtual clock only (its sites apply what has arrived by their own "
                   "instant, which only virtual time answers exactly)");
  if (info.no_checkpoints && (opt.checkpoint.writes() || opt.checkpoint.resume))
    throw RunError(scfg.name + ": checkpoint: this strategy cannot be checkpointed (its sites are at different "
                   "steps, with updates in flight: no step is a consistent cut)");
  if (opt.represent_scale != 1.0 && (!virt || opt.compute.empty()))
    throw RunError("a represented model needs the virtual clock and a compute profile (docs/guide/represented.md)");
  if (!(opt.represent_scale > 0)) throw RunError("represent_scale must be > 0");
  if (!opt.compute.empty() && opt.compute.size() != 1 && opt.compute.size() != static_cast<size_t>(M))
    throw RunError("compute: " + std::to_string(opt.compute.size()) + " profiles for " + std::to_string(M) +
                   " data centers (give one for all or one per data center)");
}

/// The in-process fabric of the cluster: one site per DC (one for all when `one_site`: the `lan`
/// reference's group on the virtual clock), its LAN, a link per WAN direction.
emu::FabricConfig fabric_config(const ClusterSpec& cluster, const model::RankLayout& layout, bool one_site,
                                uint64_t seed) {
  const int M = static_cast<int>(cluster.dcs.size()), P = layout.world();
  emu::FabricConfig fc;
  fc.num_sites = M;
  // Virtual time: the `lan` reference's group runs over the fabric, so place it in one DC.
  for (int r = 0; r < P; ++r) fc.site_of.push_back(one_site ? 0 : layout.dc_of(r));
  fc.lan = cluster.lan;
  fc.wan = model::directed_wan_links(cluster);  // the fabric's view of the topology: one link per direction
  fc.segments = cluster.segments;
  fc.seed = seed;
  return fc;
}

/// "quorum" (hier_ef_topk_int8, hierarchical): the sites' membership service (faults/quorum.h),
/// reading the links' states from the scenario's timeline, which counts from `*origin` (the first
/// step). Null without one.
std::unique_ptr<SiteQuorum> make_quorum(const StrategyConfig& scfg, const ClusterSpec& cluster, bool virt,
                                        const std::shared_ptr<std::chrono::nanoseconds>& quorum_origin) {
  const int M = static_cast<int>(cluster.dcs.size());
  std::unique_ptr<SiteQuorum> quorum;
  if (!scfg.quorum.empty()) {
    if (!virt) throw RunError(scfg.run_name() + ": \"quorum\" runs on the virtual clock only");
    const SiteQuorum::DownSince links = down_since_of(cluster);
    quorum = std::make_unique<SiteQuorum>(
        M, common::parse_duration(scfg.quorum),
        [links, quorum_origin](int a, int b, std::chrono::nanoseconds t) -> std::optional<std::chrono::nanoseconds> {
          const std::optional<std::chrono::nanoseconds> since = links(a, b, t - *quorum_origin);
          return since ? std::optional(*since + *quorum_origin) : std::nullopt;
        });
  }
  return quorum;
}

/// A message's timeout: a represented model's messages take its time (hundreds of virtual seconds
/// for a 70B model's gradient over a WAN), so the timeout for a message never sent grows with it,
/// up to 30 days.
std::chrono::nanoseconds transport_timeout_for(const RunOptions& opt) {
  return opt.represent_scale > 1
             ? std::chrono::nanoseconds(static_cast<int64_t>(std::min(
                   2.592e15, static_cast<double>(std::chrono::nanoseconds(opt.transport_timeout).count()) * opt.represent_scale)))
             : std::chrono::nanoseconds(opt.transport_timeout);
}

/// `lan.collectives: "analytic"` (collectives/analytic_group.h): one hub per intra-DC group (one for
/// all with `one_group`), shared by its members, in the time domain of its first member's transport.
std::vector<std::shared_ptr<AnalyticHub>> make_analytic_hubs(const ClusterSpec& cluster, const model::RankLayout& layout,
                                                             bool one_group, const RunOptions& opt, bool virt,
                                                             bool node_faults,
                                                             const std::vector<std::unique_ptr<EmulatedTransport>>& nets) {
  const int M = static_cast<int>(cluster.dcs.size()), P = layout.world();
  std::vector<std::shared_ptr<AnalyticHub>> analytic_hubs;
  if (!virt || opt.compute.empty())
    throw RunError("lan.collectives \"analytic\" needs the virtual clock and a compute profile (its reductions are "
                   "charged by the profile)");
  if (node_faults)
    throw RunError("lan.collectives \"analytic\" does not run with node faults (a dead member's group is the message "
                   "model's): use \"messages\"");
  LanCost lc;
  lc.rate_bps = cluster.lan.rate_bps;
  lc.delay = cluster.lan.delay;
  lc.mss_bytes = cluster.segments.mss_bytes;
  lc.header_bytes = cluster.segments.header_bytes;
  lc.overhead_bytes = cluster.lan.overhead_bytes;
  for (int g = 0; g < (one_group ? 1 : M); ++g)
    analytic_hubs.push_back(make_analytic_hub(nets[static_cast<size_t>(layout.first(g))]->make_sync(),
                                              nets[static_cast<size_t>(layout.first(g))]->make_sync(), lc,
                                              one_group ? P : layout.workers(g), opt.represent_scale));
  return analytic_hubs;
}

/// Node faults and heartbeats (faults/agent.h), with the strategy entry's own recovery policy if
/// it names one; `sched`: the virtual clock's scheduler (they need it).
std::unique_ptr<FaultRuntime> make_faults(const RunOptions& opt, const StrategyConfig& scfg, const StrategyInfo& info,
                                          const WorkloadSpec& work, const Datasets& data,
                                          const model::RankLayout& layout, emu::Fabric& fabric,
                                          emu::VirtualScheduler* sched,
                                          const std::vector<std::vector<uint32_t>>& shards, SiteQuorum* quorum) {
  if (!sched) throw RunError("node faults and heartbeats need the virtual clock (embedded mode)");
  model::FaultPlan plan = opt.faults;
  if (!scfg.fault_policy.empty()) {  // the strategy entry's own policy
    plan.policy = scfg.fault_policy;
    if (scfg.fault_estimate) plan.estimate = *scfg.fault_estimate;
  }
  if (plan.policy == "estimate" && work.global_batch.on())
    throw RunError(scfg.run_name() + ": faults.policy \"estimate\" with workload.global_batch: not supported (the dead "
                   "worker's batch would mix in a global share)");
  auto faults = std::make_unique<FaultRuntime>(plan, info, layout, fabric, *sched, shards, work.seed);
  faults->enable_estimates(data.train, static_cast<size_t>(work.batch_per_worker));
  faults->attach_quorum(quorum);  // refuses a dead site it cannot recover from
  return faults;
}

}  // namespace

model::StrategyRun run_strategy(const ClusterSpec& cluster, const WorkloadSpec& work, const StrategyConfig& scfg,
                                const Datasets& data, const RunOptions& opt, std::vector<float>* final_params) {
  if (cluster.dcs.empty()) throw RunError("cluster has no data centers");
  const int M = static_cast<int>(cluster.dcs.size());
  const model::RankLayout layout = model::rank_layout(cluster);  // DCs may differ in size
  const int P = layout.world();
  const StrategyInfo& info = find_strategy(scfg.name).needs;
  refuse_what_cannot_run(scfg, info, opt, M);
  const bool virt = opt.clock == ClockMode::kVirtual;
  auto compute_profile = [&](int dc) { return opt.compute[opt.compute.size() == 1 ? 0 : static_cast<size_t>(dc)]; };
  const emu::FabricConfig fc = fabric_config(cluster, layout, virt && info.co_located, work.seed);
  emu::SteadyClock steady;
  std::unique_ptr<emu::VirtualScheduler> sched;
  std::unique_ptr<emu::VirtualClock> vclock;
  if (virt) {
    sched = std::make_unique<emu::VirtualScheduler>(emu::actors_from_environment());
    vclock = std::make_unique<emu::VirtualClock>(*sched);
  }
  const emu::Clock& clock = virt ? static_cast<const emu::Clock&>(*vclock) : steady;
  std::unique_ptr<emu::Fabric> fabric_holder =
      virt ? std::make_unique<emu::Fabric>(fc, clock, *sched) : std::make_unique<emu::Fabric>(fc, clock);
  emu::Fabric& fabric = *fabric_holder;
  std::vector<emu::VirtualScheduler::ActorId> actor(static_cast<size_t>(P), -1);
  if (virt)
    for (int r = 0; r < P; ++r)
      actor[static_cast<size_t>(r)] =
          sched->add_actor("rank " + std::to_string(r) + " (dc " + std::to_string(layout.dc_of(r)) + ")",
                           std::chrono::nanoseconds{0});

  // Same seed -> same initial weights in every replica and every strategy.
  std::vector<std::unique_ptr<Learner>> learners;
  for (int r = 0; r < P; ++r) learners.push_back(make_learner(work.model, work.seed));
  const size_t n = learners[0]->num_params();
  for (int r = 1; r < P; ++r) std::memcpy(learners[r]->params(), learners[0]->params(), n * sizeof(float));
  const auto shards = make_partition(data.train, kFashionMnistClasses, work.partition, layout, work.seed);
  const std::vector<float> dc_weights = dc_mean_weights(layout, shards, work.dc_weights);
  std::shared_ptr<StoreHandle> store = info.needs_intra_dc && !virt ? make_inprocess_store() : nullptr;
  // The quorum's timeline counts from the first step: its origin is set when the run starts.
  auto quorum_origin = std::make_shared<std::chrono::nanoseconds>(0);
  std::unique_ptr<SiteQuorum> quorum = make_quorum(scfg, cluster, virt, quorum_origin);

  std::unique_ptr<FaultRuntime> faults =
      opt.faults.active() ? make_faults(opt, scfg, info, work, data, layout, fabric, sched.get(), shards, quorum.get())
                          : nullptr;

  const std::vector<int> leaders = layout.leaders();
  std::vector<int> ring;
  for (int r = 0; r < P; ++r) ring.push_back(r);

  const std::chrono::nanoseconds transport_timeout = transport_timeout_for(opt);
  std::vector<std::unique_ptr<Sgd>> opts;
  std::vector<std::unique_ptr<EmulatedTransport>> nets;
  std::vector<WorkerEnv> envs(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    opts.push_back(std::make_unique<Sgd>(work.optimizer, n));
    nets.push_back(
        std::make_unique<EmulatedTransport>(fabric, r, transport_timeout, sched.get(), opt.represent_scale));
    WorkerEnv& e = envs[static_cast<size_t>(r)];
    e.rank = r;
    e.dc = layout.dc_of(r);
    e.local_rank = layout.local_of(r);
    e.world = P;
    e.num_dcs = M;
    e.layout = layout;
    e.dc_weights = dc_weights;
    e.dc_leaders = leaders;
    e.quorum = quorum.get();
    e.ring = ring;
    e.learner = learners[static_cast<size_t>(r)].get();
    e.opt = opts.back().get();
    e.net = nets.back().get();
    e.clock = &clock;
    e.wan_in = inbound_links(fc.wan, e.dc, M);
    e.grad_elements = opt.represented_params;
    e.grad_tensors = opt.represented_params ? opt.represented_tensors : tensor_sizes(work.model);
    e.tensor_shapes = tensor_shapes(work.model);
    e.represented_shapes = opt.represented_shapes;
    e.make_normal = make_torch_normal_source;
  }

  // `lan.collectives: "analytic"`: one hub per intra-DC group, shared by its members.
  const bool analytic = cluster.lan_collectives == ClusterSpec::LanCollectives::kAnalytic && info.needs_intra_dc;
  const std::vector<std::shared_ptr<AnalyticHub>> analytic_hubs =
      analytic ? make_analytic_hubs(cluster, layout, info.one_group, opt, virt, faults != nullptr, nets)
               : std::vector<std::shared_ptr<AnalyticHub>>{};

  // Resuming: every rank's state is in memory and verified (checkpoint/file.h) before any starts.
  const Checkpoint* resume = opt.checkpoint.resume;
  if (resume && (static_cast<int>(resume->ranks.size()) != P || resume->header.strategy != scfg.run_name()))
    throw RunError(scfg.name + ": the checkpoint " + resume->step_dir + " is of " + resume->header.strategy + " with " +
                   std::to_string(resume->ranks.size()) + " ranks, this run " + std::to_string(P));
  // The timeline continues from rank 0's instant at the checkpoint.
  const std::chrono::nanoseconds resumed_at = resume ? resume_point(resume->ranks[0]).elapsed : std::chrono::nanoseconds{0};
  // Full recovery goes back to a checkpoint: a run whose kills can call for it must take them.
  const bool full_recovery = faults && faults->full_recovery_possible();
  if (full_recovery && !opt.checkpoint.writes())
    throw RunError(scfg.name + ": " + std::to_string(opt.faults.kills()) + " kills of " + std::to_string(P) +
                   " workers can cross faults.full_recovery.above_fraction (" +
                   std::to_string(opt.faults.full_recovery.above_fraction) +
                   "), and full recovery goes back to the last checkpoint: give the run a checkpoint directory and "
                   "checkpoint.every_steps");
  std::optional<CheckpointSchedule> ckpt_schedule;
  std::optional<CheckpointWriter> ckpt_writer;
  if (opt.checkpoint.writes()) {
    ckpt_schedule.emplace(P, opt.checkpoint.every_steps, opt.checkpoint.requests,
                          resume ? resume->header.step : 0);
    ckpt_writer.emplace(opt.checkpoint, scfg.run_name(), P);
  }

  // Full recovery: the checkpoint every rank goes back to at a boundary, the first to get there
  // reads it (the last complete one then) and the others take the same.
  std::mutex rewind_mu;
  std::vector<std::pair<int, std::shared_ptr<const Checkpoint>>> rewinds;  // (boundary, checkpoint)
  auto rewind_to = [&](int steps) {
    std::lock_guard<std::mutex> lk(rewind_mu);
    for (const auto& [b, c] : rewinds)
      if (b == steps) return c;
    auto c = std::make_shared<const Checkpoint>(load_checkpoint(
        opt.checkpoint.dir + "/" + scfg.run_name(),
        {.scenario_hash = opt.checkpoint.scenario_hash, .strategy = scfg.run_name(), .world = P}));
    rewinds.emplace_back(steps, c);
    ckpt_writer->forget_after(c->header.step);
    return c;
  };

  std::vector<WorkerRecord> records(static_cast<size_t>(P));
  std::chrono::nanoseconds t_start{0}, t_end{0};

  std::mutex err_mu;
  std::string first_error;
  std::string closed_error;  // "woken by another rank's failure": reported only if nothing else is
  // The scenario's timeline counts from the first step.
  auto schedule_timeline = [&](std::chrono::nanoseconds origin) {
    *quorum_origin = origin - resumed_at;
    for (const model::ScheduledChange& tc : cluster.timeline) {
      emu::LinkChange c = tc.change;
      c.at = origin - resumed_at + tc.change.at;
      fabric.schedule(tc.a, tc.b, c, true);
    }
  };
  auto on_start = [&]() noexcept {
    t_start = clock.now();
    schedule_timeline(t_start);
  };
  auto on_end = [&]() noexcept { t_end = clock.now(); };
  std::barrier start_line(P, on_start);
  std::barrier finish_line(P, on_end);
  // Virtual time: the same two rendezvous, released at the latest arrival's virtual instant.
  struct VirtualLine {
    int arrived = 0;
    std::chrono::nanoseconds latest{0};
    std::optional<std::chrono::nanoseconds> released;
  } vstart, vfinish;
  auto virtual_line = [&](VirtualLine& line, const char* what, std::chrono::nanoseconds& instant, bool start) {
    const auto me = sched->current();
    const auto now = sched->now(me);
    sched->update([&] {
      line.latest = std::max(line.latest, now);
      if (++line.arrived < P) return;
      line.released = line.latest;
      instant = line.latest;
      if (start) schedule_timeline(instant);
    });
    try {
      sched->wait(me, [&] { return line.released; }, std::nullopt, what);
    } catch (const emu::SchedulerAborted& e) {
      throw TransportClosed(std::string(what) + ": " + e.what());
    } catch (const emu::DeadlockError& e) {
      throw TransportError(e.what());
    }
  };

  // A killed worker leaves the finish line's count (it never arrives).
  auto virtual_line_drop = [&](VirtualLine& line, std::chrono::nanoseconds& instant) {
    sched->update([&] {
      if (++line.arrived < P) return;
      line.released = line.latest;
      instant = line.latest;
    });
  };

  auto worker = [&](int r) {
    WorkerEnv& env = envs[static_cast<size_t>(r)];
    bool started = false;
    if (virt) {
      sched->bind(actor[static_cast<size_t>(r)]);
      // A slow worker (node faults) is charged its compute times its factor.
      auto scaled = [f = faults.get(), r](std::chrono::nanoseconds d) {
        return f ? std::chrono::nanoseconds(std::llround(static_cast<double>(d.count()) * f->compute_factor(r))) : d;
      };
      if (!opt.compute.empty())
        set_thread_compute_charge(
            [s = sched.get(), profile = compute_profile(env.dc), scaled, k = opt.represent_scale](Work w, uint64_t n) {
              s->charge(s->current(), scaled(represented_cost(profile, k, w, n)));
            });
      else
        set_thread_measured_charge(
            [s = sched.get(), scaled](std::chrono::nanoseconds d) { s->charge(s->current(), scaled(d)); });
    }
    bool killed = false;
    try {
      set_compute_threads(1);
      std::unique_ptr<IntraDc> intra;
      if (info.needs_intra_dc && virt) {
        std::vector<int> members;
        for (int m = 0; m < P; ++m)
          if (info.one_group || layout.dc_of(m) == env.dc) members.push_back(m);
        const auto pos = std::find(members.begin(), members.end(), r) - members.begin();
        if (analytic)
          intra = make_analytic_group(analytic_hubs.at(info.one_group ? 0 : env.dc), static_cast<int>(pos),
                                      [profile = compute_profile(env.dc), k = opt.represent_scale](uint64_t e) {
                                        return represented_cost(profile, k, Work::kReduce, e);
                                      });
        else
          intra = make_transport_group(*nets[static_cast<size_t>(r)], members, static_cast<int>(pos));
        env.intra = intra.get();
      } else if (info.needs_intra_dc) {
        GlooOptions go;
        go.timeout = opt.gloo_timeout;
        intra = info.one_group ? make_gloo_group(store, scfg.name + "/all", r, P, go)
                               : make_gloo_group(store, scfg.name + "/dc" + std::to_string(env.dc), env.local_rank,
                                                 layout.workers(env.dc), go);
        env.intra = intra.get();
      }
      WorkerLoopHooks hooks;
      hooks.start = [&] {
        if (virt) {
          virtual_line(vstart, "start barrier", t_start, true);
        } else {
          start_line.arrive_and_wait();
        }
        started = true;
        if (faults) faults->started(r, t_start);
        return t_start;
      };
      hooks.finished = [&] {
        if (virt)
          virtual_line(vfinish, "finish barrier", t_end, false);
        else
          finish_line.arrive_and_wait();
      };
      if (r == 0) hooks.progress = opt.progress;
      if (resume) hooks.resume = &resume->ranks[static_cast<size_t>(r)];
      if (ckpt_writer) {
        hooks.checkpoint_due = [&, r](int steps) { return ckpt_schedule->due(r, steps); };
        if (opt.checkpoint.rewind_due || full_recovery)
          hooks.rewind = [&, r](int steps) -> const StateBuffers* {
            const bool due = opt.checkpoint.rewind_due ? opt.checkpoint.rewind_due(r, steps) : faults->rewind_due(r, steps);
            if (!due) return nullptr;
            const std::shared_ptr<const Checkpoint> c = rewind_to(steps);
            if (faults)
              faults->rewound(r, steps, c->header.step, resume_point(c->ranks[0]).elapsed, sched->now(sched->current()));
            return &c->ranks[static_cast<size_t>(r)];
          };
        hooks.checkpoint_write = [&, r](int steps, const StateBuffers& s) {
          // A worker died before this boundary: the checkpoint can never be complete (a rank that
          // has not heard of the death yet still writes its file, which stays without a manifest).
          if (faults && faults->checkpoint_cannot_complete(r, steps)) return;
          if (r != 0) return ckpt_writer->write(r, steps, s);
          // Rank 0 keeps the fabric's WAN totals (counters, not weights: as of its checkpoint instant).
          const emu::TrafficStats t = fabric.wan_total();
          ckpt_writer->write(r, steps, with_wan_counters(s, {t.messages, t.payload_bytes, t.wire_bytes, t.retransmissions}));
        };
      }
      if (faults) hooks.faults = &faults->hooks(r);
      WorkerRecord& rec = records[static_cast<size_t>(r)];
      std::optional<FaultRuntime::Rejoin> j;  // the state it restarted from: alive for the loop's run
      std::shared_ptr<const Checkpoint> restart_ckpt;
      for (;;) {
        try {
          run_worker_loop(env, scfg, work, data.train, shards[static_cast<size_t>(r)], hooks, rec);
          break;
        } catch (const WorkerKilled&) {
          if (!faults || !faults->will_restart(r)) throw;
        }
        // Killed, and restarted later: dead until its group hands it the group's model at the
        // restart's boundary, then on from there with its own times, series and data.
        const WorkerTimes spent = env.times;
        const std::vector<ExchangeRecord> logged = env.exchanges;
        // A full recovery may restart it ("then": "restarts"), or may never come: it leaves the
        // finish line's count meanwhile, and gives up once every live worker has finished.
        const bool by_recovery = faults->restarts_on_recovery() && faults->full_recovery_possible();
        if (by_recovery) virtual_line_drop(vfinish, t_end);
        j = faults->await_restart(env, [&] { return by_recovery && vfinish.released.has_value(); });
        if (!j) {
          killed = true;
          break;
        }
        // Back in the group its coordinator described, in the tag epoch every rank moved to,
        // resuming from `state`.
        const auto rejoin = [&](const StateBuffers& state) {
          env.ring = j->ring;
          if (intra) {
            const auto pos = std::find(j->members.begin(), j->members.end(), r) - j->members.begin();
            intra = join_transport_group(*nets[static_cast<size_t>(r)], j->members, static_cast<int>(pos), j->group_tags);
            env.intra = intra.get();
          }
          hooks.resume = &state;
          // The loop counts time from t_start - resumed_at (its start minus the resumed state's elapsed).
          const std::chrono::nanoseconds elapsed = resume_point(state).elapsed;
          hooks.start = [&, elapsed] { return t_start - resumed_at + elapsed; };
          hooks.tag_epoch = j->tag_epoch;
          hooks.resume_from_other_site = j->other_site;
        };
        if (j->from_checkpoint) {
          // A restarted process: its own state from the checkpoint the survivors went back to,
          // in their grown groups; it counts at the finish line again.
          sched->update([&] { --vfinish.arrived; });
          restart_ckpt = rewind_to(j->steps);
          rejoin(restart_ckpt->ranks[static_cast<size_t>(r)]);
          // Like a survivor's rewind: the time accounting and exchange log keep what its first
          // life cost (checkpoint/worker_state.h rewind_worker).
          hooks.after_resume = keep_first_life({spent, logged, std::nullopt});
          continue;
        }
        // Its own data: the group's state but for the sampler, which walks its shard afresh.
        own_sampler(j->state, shards[static_cast<size_t>(r)], work.seed, r, P, j->steps);
        rejoin(j->state);
        hooks.checkpoint_due = nullptr;  // no checkpoints once a worker was dead (they cannot complete)
        hooks.after_resume =
            keep_first_life({spent, logged, FirstLife::Series{rec.loss, rec.step_end_s, j->killed_at_step, j->steps}});
      }
    } catch (const WorkerKilled&) {
      killed = true;  // stopped dead by a fault event: no error of the run
      virtual_line_drop(vfinish, t_end);
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lk(err_mu);
        std::string& slot = dynamic_cast<const TransportClosed*>(&e) ? closed_error : first_error;
        if (slot.empty()) slot = "rank " + std::to_string(r) + " (dc " + std::to_string(env.dc) + "): " + e.what();
      }
      fabric.close();  // wake every peer blocked on the network (virtual time: every waiting actor)
      if (!virt) {
        if (!started) start_line.arrive_and_drop();
        finish_line.arrive_and_drop();
      }
    }
    (void)killed;
    if (virt) {
      set_thread_compute_charge({});
      set_thread_measured_charge({});
      sched->finish(actor[static_cast<size_t>(r)]);
    }
  };
  const auto host_t0 = steady.now();
  // With fibers this thread runs every actor, and each worker sets the compute threads to 1
  // here: the accuracy evaluation below gets this thread's setting back.
  const int compute_threads_before = compute_threads();
  std::vector<emu::ActorThread> threads;
  for (int r = 0; r < P; ++r)
    threads.push_back(virt ? sched->start("rank " + std::to_string(r), [&worker, r] { worker(r); })
                           : emu::ActorThread(std::thread(worker, r)));
  for (auto& t : threads) t.join();
  set_compute_threads(compute_threads_before);
  const auto host_wall = steady.now() - host_t0;
  if (first_error.empty()) first_error = closed_error;
  if (!first_error.empty()) throw RunError(scfg.name + ": " + first_error);

  // The same merge as the process mode (per-rank reports), with the fabric's own WAN accounting.
  std::vector<RankReport> reports(static_cast<size_t>(P));
  // The reporting rank: rank 0, or the lowest rank alive at the end after node kills.
  const int rep = faults ? faults->reporter() : 0;
  const float* x0 = learners[static_cast<size_t>(rep)]->params();
  for (int r = 0; r < P; ++r) {
    RankReport& rr = reports[static_cast<size_t>(r)];
    const WorkerEnv& e = envs[static_cast<size_t>(r)];
    WorkerRecord& rec = records[static_cast<size_t>(r)];
    rr.strategy = scfg.name;
    rr.rank = r;
    rr.dc = e.dc;
    rr.local_rank = e.local_rank;
    rr.times = e.times;
    rr.loss = std::move(rec.loss);
    rr.step_end_s = std::move(rec.step_end_s);
    rr.exchanges = e.exchanges;
    rr.async_log = e.async_log;
    if (r != rep && !(faults && faults->dead_at_end(r)))  // a dead replica is stale, not wrong
      rr.replica_max_abs_diff = max_abs_diff(learners[static_cast<size_t>(r)]->params(), x0, n);
  }
  if (rep != 0) reports[0].step_end_s = reports[static_cast<size_t>(rep)].step_end_s;
  reports[0].wall_s = std::chrono::duration<double>(t_end - t_start + resumed_at).count();
  reports[0].accuracy_curve = accuracy_curve(*learners[static_cast<size_t>(rep)], records[static_cast<size_t>(rep)], work, P, data.test);
  reports[0].final_weights_sha256 = sha256_hex(x0, n * sizeof(float));
  model::StrategyRun res = merge_rank_reports(scfg.name, reports, work, M);
  if (faults) res.faults = faults->section();
  if (quorum) {
    model::QuorumSection q;
    q.timeout_s = std::chrono::duration<double>(quorum->timeout()).count();
    for (const SiteQuorum::Decision& d : quorum->decisions())
      q.decisions.push_back({d.round, (d.round + 1) * scfg.K - 1, d.sites,
                             std::max(0.0, std::chrono::duration<double>(d.at - t_start).count())});
    res.quorum = q;
  }
  if (virt) {
    res.metrics.host_wall_s = std::chrono::duration<double>(host_wall).count();
    const emu::VirtualScheduler::Counters c = sched->counters();
    res.metrics.host_scheduler = model::StrategyMetrics::HostScheduler{
        sched->actors() == emu::VirtualScheduler::Actors::kFibers ? "fibers" : "threads", c.reevaluations,
        c.readiness_checks, c.network_events, c.wakeups};
  }
  // The fabric's own WAN accounting (it also counts retransmissions).
  emu::TrafficStats wan = fabric.wan_total();
  if (const std::optional<WanCounters> before = resume ? wan_counters_of(resume->ranks[0]) : std::nullopt) {
    wan.messages += before->messages;  // the part before the checkpoint
    wan.payload_bytes += before->payload_bytes;
    wan.wire_bytes += before->wire_bytes;
    wan.retransmissions += before->retransmissions.value_or(0);
  }
  res.metrics.wan_messages = wan.messages;
  res.metrics.wan_payload_bytes = wan.payload_bytes;
  res.metrics.wan_wire_bytes = wan.wire_bytes;
  res.metrics.wan_retransmissions = wan.retransmissions;
  if (final_params) final_params->assign(x0, x0 + n);
  return res;
}

}  // namespace geotb::engine
