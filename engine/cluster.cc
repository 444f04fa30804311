#include "engine/cluster.h"

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "emulator/link/clock.h"
#include "engine/transport/emulated.h"

namespace geotb::engine {

StrategyResult run_strategy(const ClusterSpec& cluster, const WorkloadSpec& work, const StrategyConfig& scfg,
                            const Datasets& data, const RunOptions& opt, bool keep_params) {
  if (cluster.dcs.empty()) throw RunError("cluster has no data centers");
  const int M = static_cast<int>(cluster.dcs.size());
  const int N = cluster.dcs[0].workers;
  for (const auto& d : cluster.dcs)
    if (d.workers != N) throw RunError("every data center must have the same number of workers");
  const int P = M * N;
  const StrategyInfo info = strategy_info(scfg.name);

  emu::FabricConfig fc;
  fc.num_sites = M;
  for (int r = 0; r < P; ++r) fc.site_of.push_back(r / N);
  fc.lan = cluster.lan;
  fc.wan = cluster.wan;
  fc.segments = cluster.segments;
  fc.seed = work.seed;
  emu::SteadyClock clock;
  emu::Fabric fabric(fc, clock);

  // Same seed -> same initial weights in every replica and every strategy.
  std::vector<std::unique_ptr<Learner>> learners;
  for (int r = 0; r < P; ++r) learners.push_back(make_learner(work.model, work.seed));
  const size_t n = learners[0]->num_params();
  for (int r = 1; r < P; ++r) std::memcpy(learners[r]->params(), learners[0]->params(), n * sizeof(float));
  const auto shards = partition_iid(data.train.size, P, work.seed);
  std::shared_ptr<StoreHandle> store = info.needs_intra_dc ? make_inprocess_store() : nullptr;

  std::vector<int> leaders, ring;
  for (int d = 0; d < M; ++d) leaders.push_back(d * N);
  for (int r = 0; r < P; ++r) ring.push_back(r);
  double wan_rate = 0, wan_rtt = 0;
  if (!fc.wan.empty()) {
    wan_rate = fc.wan[0].a_to_b.rate_bps;
    wan_rtt = std::chrono::duration<double>(fc.wan[0].a_to_b.delay + fc.wan[0].b_to_a.delay).count();
  }

  std::vector<std::unique_ptr<Sgd>> opts;
  std::vector<std::unique_ptr<EmulatedTransport>> nets;
  std::vector<WorkerEnv> envs(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    opts.push_back(std::make_unique<Sgd>(work.optimizer, n));
    nets.push_back(std::make_unique<EmulatedTransport>(fabric, r, opt.transport_timeout));
    WorkerEnv& e = envs[static_cast<size_t>(r)];
    e.rank = r;
    e.dc = r / N;
    e.local_rank = r % N;
    e.world = P;
    e.num_dcs = M;
    e.dc_leaders = leaders;
    e.ring = ring;
    e.learner = learners[static_cast<size_t>(r)].get();
    e.opt = opts.back().get();
    e.net = nets.back().get();
    e.clock = &clock;
    e.wan_rate_bps = wan_rate;
    e.wan_rtt_s = wan_rtt;
  }

  const int steps = work.steps;
  const size_t B = static_cast<size_t>(work.batch_per_worker);
  const size_t F = data.train.features();
  std::vector<std::vector<double>> losses(static_cast<size_t>(P), std::vector<double>(static_cast<size_t>(steps), 0));
  std::vector<double> step_end(static_cast<size_t>(steps), 0);
  std::chrono::nanoseconds t_start{0}, t_end{0};

  // Steps after which rank 0 snapshots its parameters for the accuracy curve.
  std::vector<int> snap_steps;
  for (int i = 1; i < work.eval_points; ++i) snap_steps.push_back(steps * i / work.eval_points);
  std::vector<std::vector<float>> snaps(snap_steps.size());

  std::mutex err_mu;
  std::string first_error;
  auto on_start = [&]() noexcept {
    t_start = clock.now();
    for (const TimedLinkChange& tc : cluster.timeline) {
      emu::LinkChange c = tc.change;
      c.at = t_start + tc.change.at;
      fabric.schedule(tc.site_a, tc.site_b, c, true);
    }
  };
  auto on_end = [&]() noexcept { t_end = clock.now(); };
  std::barrier start_line(P, on_start);
  std::barrier finish_line(P, on_end);

  auto worker = [&](int r) {
    WorkerEnv& env = envs[static_cast<size_t>(r)];
    bool started = false;
    try {
      set_compute_threads(1);
      std::unique_ptr<IntraDc> intra;
      if (info.needs_intra_dc) {
        GlooOptions go;
        go.timeout = opt.gloo_timeout;
        intra = info.one_group ? make_gloo_group(store, scfg.name + "/all", r, P, go)
                               : make_gloo_group(store, scfg.name + "/dc" + std::to_string(env.dc), env.local_rank, N, go);
        env.intra = intra.get();
      }
      auto strategy = make_strategy(scfg, env);
      BatchSampler sampler(shards[static_cast<size_t>(r)], work.seed, static_cast<uint64_t>(r));
      std::vector<uint32_t> idx;
      std::vector<float> x(B * F);
      std::vector<int64_t> y(B);
      start_line.arrive_and_wait();
      started = true;
      for (int s = 0; s < steps; ++s) {
        double loss;
        {
          ScopedTimer t(clock, env.times.compute_ns);
          sampler.next(B, idx);
          for (size_t i = 0; i < B; ++i) {
            std::memcpy(&x[i * F], &data.train.images[static_cast<size_t>(idx[i]) * F], F * sizeof(float));
            y[i] = data.train.labels[idx[i]];
          }
          loss = env.learner->forward_backward(x.data(), y.data(), B);
        }
        strategy->step(env, s);
        losses[static_cast<size_t>(r)][static_cast<size_t>(s)] = loss;
        if (r == 0) {
          const double t = std::chrono::duration<double>(clock.now() - t_start).count();
          step_end[static_cast<size_t>(s)] = t;
          for (size_t k = 0; k < snap_steps.size(); ++k)
            if (snap_steps[k] == s + 1) snaps[k].assign(env.learner->params(), env.learner->params() + n);
          if (opt.progress) opt.progress(s + 1, steps, t);
        }
      }
      strategy->finish(env);
      finish_line.arrive_and_wait();
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lk(err_mu);
        if (first_error.empty()) first_error = "rank " + std::to_string(r) + " (dc " + std::to_string(env.dc) + "): " + e.what();
      }
      fabric.close();  // wake every peer blocked on the network
      if (!started) start_line.arrive_and_drop();
      finish_line.arrive_and_drop();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r) threads.emplace_back(worker, r);
  for (auto& t : threads) t.join();
  if (!first_error.empty()) throw RunError(scfg.name + ": " + first_error);

  StrategyResult res;
  res.strategy = scfg.name;
  res.steps = steps;
  res.workers = P;
  res.samples = static_cast<uint64_t>(steps) * B * static_cast<uint64_t>(P);
  res.wall_s = std::chrono::duration<double>(t_end - t_start).count();
  res.samples_per_s = res.wall_s > 0 ? static_cast<double>(res.samples) / res.wall_s : 0;
  double comp = 0, comm = 0, cmpr = 0, over = 0;
  for (const auto& e : envs) {
    comp += static_cast<double>(e.times.compute_ns);
    comm += static_cast<double>(e.times.exposed_comm_ns);
    cmpr += static_cast<double>(e.times.compress_ns);
    if (e.local_rank == 0) over += static_cast<double>(e.times.overlapped_comm_ns);
  }
  const double per = 1e-9 / (static_cast<double>(P) * std::max(steps, 1));
  res.compute_s_per_step = comp * per;
  res.exposed_comm_s_per_step = comm * per;
  res.compress_s_per_step = cmpr * per;
  res.overlapped_comm_s_per_step = over * 1e-9 / (static_cast<double>(M) * std::max(steps, 1));
  res.comm_compute_ratio = res.compute_s_per_step > 0 ? res.exposed_comm_s_per_step / res.compute_s_per_step : 0;
  res.wan = fabric.wan_total();
  res.exchange_log = envs[0].exchanges;
  res.exchanges = info.exchanges_every_step ? static_cast<uint64_t>(steps) : envs[0].exchanges.size();
  res.loss.assign(static_cast<size_t>(steps), 0);
  for (int s = 0; s < steps; ++s) {
    double acc = 0;
    for (int r = 0; r < P; ++r) acc += losses[static_cast<size_t>(r)][static_cast<size_t>(s)];
    res.loss[static_cast<size_t>(s)] = acc / P;
  }
  res.step_end_s = step_end;
  const float* x0 = learners[0]->params();
  for (int r = 1; r < P; ++r) {
    const float* xr = learners[static_cast<size_t>(r)]->params();
    for (size_t i = 0; i < n; ++i)
      res.replica_max_abs_diff = std::max(res.replica_max_abs_diff, static_cast<double>(std::fabs(xr[i] - x0[i])));
  }
  res.final_test_accuracy = learners[0]->accuracy(data.test);
  {
    std::vector<float> final_x(x0, x0 + n);
    for (size_t k = 0; k < snaps.size(); ++k) {
      if (snaps[k].empty() || snap_steps[k] == 0) continue;
      std::memcpy(learners[0]->params(), snaps[k].data(), n * sizeof(float));
      res.accuracy_curve.push_back({snap_steps[k], static_cast<uint64_t>(snap_steps[k]) * B * static_cast<uint64_t>(P),
                                    learners[0]->accuracy(data.test)});
    }
    std::memcpy(learners[0]->params(), final_x.data(), n * sizeof(float));
    res.accuracy_curve.push_back({steps, res.samples, res.final_test_accuracy});
  }
  if (keep_params) res.final_params.assign(x0, x0 + n);
  return res;
}

}  // namespace geotb::engine
