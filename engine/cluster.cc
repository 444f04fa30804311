#include "engine/cluster.h"

#include <algorithm>
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
#include "engine/faults/fault_runtime.h"
#include "engine/faults/quorum.h"
#include "engine/faults/rejoin.h"
#include "engine/model/torch_rng.h"
#include "engine/strategies/table.h"
#include "engine/transport/emulated.h"
#include "engine/hosts/inproc_host.h"
#include "engine/rank_host.h"
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

/// Node faults and heartbeats (faults/fault_runtime.h), with the strategy entry's own recovery
/// policy if it names one; `sched`: the virtual clock's scheduler (they need it).
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

/// A worker's compute charged to its actor on the virtual clock: as `profile` declares it (a
/// represented model `scale` times the trained one), or measured (null profile); times the
/// worker's slow factor under node faults.
void install_compute_charge(emu::VirtualScheduler& sched, FaultRuntime* faults, int r, const ComputeProfile* profile,
                            double scale) {
  auto scaled = [faults, r](std::chrono::nanoseconds d) {
    return faults ? std::chrono::nanoseconds(std::llround(static_cast<double>(d.count()) * faults->compute_factor(r))) : d;
  };
  if (profile)
    set_thread_compute_charge([s = &sched, profile = *profile, scaled, scale](Work w, uint64_t n) {
      s->charge(s->current(), scaled(represented_cost(profile, scale, w, n)));
    });
  else
    set_thread_measured_charge([s = &sched, scaled](std::chrono::nanoseconds d) { s->charge(s->current(), scaled(d)); });
}

/// Rank r's intra-DC group on the virtual clock (its DC's members, or every rank with `one_group`):
/// the message model's, over the fabric, or the analytic one of `hub` with its reductions charged
/// by `profile`.
std::unique_ptr<IntraDc> make_virtual_group(const model::RankLayout& layout, bool one_group, int r, Transport& net,
                                            const std::shared_ptr<AnalyticHub>& hub, const ComputeProfile* profile,
                                            double scale) {
  std::vector<int> members;
  for (int m = 0; m < layout.world(); ++m)
    if (one_group || layout.dc_of(m) == layout.dc_of(r)) members.push_back(m);
  const int pos = static_cast<int>(std::find(members.begin(), members.end(), r) - members.begin());
  if (hub)
    return make_analytic_group(hub, pos, [profile = *profile, scale](uint64_t e) {
      return represented_cost(profile, scale, Work::kReduce, e);
    });
  return make_transport_group(net, members, pos);
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
  auto compute_profile = [&](int dc) -> const ComputeProfile& {
    return opt.compute[opt.compute.size() == 1 ? 0 : static_cast<size_t>(dc)];
  };
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
  // Full recovery goes back to a checkpoint: a run whose kills can call for it must take them.
  if (faults && faults->full_recovery_possible() && !opt.checkpoint.writes())
    throw RunError(scfg.name + ": " + std::to_string(opt.faults.kills()) + " kills of " + std::to_string(P) +
                   " workers can cross faults.full_recovery.above_fraction (" +
                   std::to_string(opt.faults.full_recovery.above_fraction) +
                   "), and full recovery goes back to the last checkpoint: give the run a checkpoint directory and "
                   "checkpoint.every_steps");
  // The lines, checkpoints and rewinds every rank shares (hosts/inproc_host.h). The scenario's
  // timeline counts from the first step (a resumed run's from its checkpoint's instant).
  InprocRun run({.world = P,
                 .clock = &clock,
                 .sched = sched.get(),
                 .fabric = &fabric,
                 .faults = faults.get(),
                 .checkpoint = &opt.checkpoint,
                 .run_name = scfg.run_name(),
                 .resume = resume,
                 .at_start = [&](std::chrono::nanoseconds origin) {
                   *quorum_origin = origin;
                   for (const model::ScheduledChange& tc : cluster.timeline) {
                     emu::LinkChange c = tc.change;
                     c.at = origin + tc.change.at;
                     fabric.schedule(tc.a, tc.b, c, true);
                   }
                 }});

  std::vector<WorkerRecord> records(static_cast<size_t>(P));
  std::mutex err_mu;
  std::string first_error;
  std::string closed_error;  // "woken by another rank's failure": reported only if nothing else is

  auto worker = [&](int r) {
    WorkerEnv& env = envs[static_cast<size_t>(r)];
    std::unique_ptr<IntraDc> intra;
    InprocRankHost host(run, r, *nets[static_cast<size_t>(r)], intra);
    const ComputeProfile* profile = opt.compute.empty() ? nullptr : &compute_profile(env.dc);  // null: measured
    if (virt) {
      sched->bind(actor[static_cast<size_t>(r)]);
      install_compute_charge(*sched, faults.get(), r, profile, opt.represent_scale);
    }
    try {
      set_compute_threads(1);
      if (info.needs_intra_dc) {
        GlooOptions go;  // the wall clock's real Gloo group
        go.timeout = opt.gloo_timeout;
        intra = virt ? make_virtual_group(layout, info.one_group, r, *nets[static_cast<size_t>(r)],
                                          analytic ? analytic_hubs.at(info.one_group ? 0 : env.dc) : nullptr, profile,
                                          opt.represent_scale)
                     : make_gloo_group(store,
                                       info.one_group ? scfg.name + "/all" : scfg.name + "/dc" + std::to_string(env.dc),
                                       info.one_group ? r : env.local_rank,
                                       info.one_group ? P : layout.workers(env.dc), go);
        env.intra = intra.get();
      }
      const RankPlan plan{scfg, work, data.train, shards[static_cast<size_t>(r)], r == 0 ? opt.progress : nullptr,
                          resume ? &resume->ranks[static_cast<size_t>(r)] : nullptr};
      run_rank(host, plan, env, records[static_cast<size_t>(r)]);
      intra.reset();  // while this thread is still its actor
    } catch (const WorkerKilled&) {
      intra.reset();
      host.killed();  // stopped dead by a fault event outside the loop: no error of the run
    } catch (const std::exception& e) {
      intra.reset();
      {
        std::lock_guard<std::mutex> lk(err_mu);
        std::string& slot = dynamic_cast<const TransportClosed*>(&e) ? closed_error : first_error;
        if (slot.empty()) slot = "rank " + std::to_string(r) + " (dc " + std::to_string(env.dc) + "): " + e.what();
      }
      fabric.close();  // wake every peer blocked on the network (virtual time: every waiting actor)
      host.failed();
    }
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
  reports[0].wall_s = std::chrono::duration<double>(run.end_instant() - run.start_instant() + run.resumed_at()).count();
  reports[0].accuracy_curve = accuracy_curve(*learners[static_cast<size_t>(rep)], records[static_cast<size_t>(rep)], work, P, data.test);
  reports[0].final_weights_sha256 = sha256_hex(x0, n * sizeof(float));
  model::StrategyRun res = merge_rank_reports(scfg.name, reports, work, M);
  if (faults) res.faults = faults->section();
  if (quorum) {
    model::QuorumSection q;
    q.timeout_s = std::chrono::duration<double>(quorum->timeout()).count();
    for (const SiteQuorum::Decision& d : quorum->decisions())
      q.decisions.push_back({d.round, (d.round + 1) * scfg.K - 1, d.sites,
                             std::max(0.0, std::chrono::duration<double>(d.at - run.start_instant()).count())});
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
