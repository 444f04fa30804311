#include <fmt/format.h>

#include <string>
#include <vector>

#include "engine/cluster.h"
#include "engine/model/learner.h"
#include "harness/modes/mode.h"
#include "harness/progress.h"
#include "model/memory_estimate.h"
#include "model/metrics.h"

// The embedded mode: every rank a thread of `geotb run`, over the in-process WAN model, on the
// virtual clock by default (engine/cluster.h run_strategy).

namespace geotb::harness {

namespace {

/// Workers per data center from which `geotb run` notes that analytic LAN collectives exist
/// (docs/guide/scale.md: about 0.8 ms of host time per worker-step at 32 per site with messages).
constexpr int kLargeSite = 32;

/// An embedded run is refused before anything starts when it would not fit in memory
/// (model/memory_estimate.h): false, with the estimate and the limit on stderr. Large sites on
/// Gloo's ring message by message get a note: the host time per worker-step grows with the workers
/// per site (docs/guide/scale.md); analytic collectives compute them instead.
bool embedded_run_fits(const ModeRun& run) {
  const Scenario& sc = run.sc;
  const engine::Datasets& data = run.data;
  const model::RankLayout layout = model::rank_layout(sc.cluster);
  const model::MemoryEstimate est = model::estimate_embedded_memory(
      {.workers = layout.world(),
       .workers_per_dc = layout.max_workers(),
       .dc_pairs = static_cast<int>(sc.cluster.wan.size()),
       .params = engine::param_count(sc.workload.model),
       .examples = data.train.size + data.test.size,
       .inputs = static_cast<uint64_t>(sc.workload.model.inputs),
       .analytic_collectives = sc.clock == engine::ClockMode::kVirtual &&
                               sc.cluster.lan_collectives == engine::ClusterSpec::LanCollectives::kAnalytic});
  const uint64_t limit = run.memory_limit ? run.memory_limit : model::available_memory_bytes();
  if (limit > 0 && est.bytes > limit) {
    fmt::print(stderr,
               "geotb: error: {}: this embedded run needs about {} of memory ({}), above the limit of {} ({}); "
               "use fewer workers or a smaller workload.model\n",
               run.scenario_path, model::format_mib(est.bytes), est.breakdown, model::format_mib(limit),
               run.memory_limit ? "--memory-limit" : "MemAvailable in /proc/meminfo; --memory-limit sets another");
    return false;
  }
  const int per_dc = layout.max_workers();
  if (sc.clock == engine::ClockMode::kVirtual && per_dc >= kLargeSite &&
      sc.cluster.lan_collectives == engine::ClusterSpec::LanCollectives::kMessages)
    fmt::print(stderr,
               "geotb: note: {} workers per data center on Gloo's ring message by message over the LAN ({} "
               "messages per worker and allreduce): the host time per worker-step grows with them; \"lan\": "
               "{{\"collectives\": \"analytic\"}} computes each intra-DC collective as one event with the same sums "
               "(docs/guide/scale.md)\n",
               per_dc, 4 * (per_dc - 1));
  return true;
}

class EmbeddedMode final : public Mode {
 public:
  NetworkMode id() const override { return NetworkMode::kEmbedded; }
  bool admit(const ModeRun& run) const override { return embedded_run_fits(run); }

  int run(ModeRun& run) const override {
    const Scenario& sc = run.sc;
    for (const auto& c : run.chosen) {
      // Seed sc.seed is the strategy's run in the report (series, exchanges, the CI gate's
      // figures); with --seeds N, seeds sc.seed + 1 ... add their figures to its "seeds".
      model::StrategyRun first;
      std::vector<model::SeedResult> seeds;
      bool ok = true;
      for (int i = 0; i < run.seeds && ok; ++i) {
        engine::WorkloadSpec work = sc.workload;
        work.seed = sc.seed + static_cast<uint64_t>(i);
        Progress prog(stdout, run.seeds > 1 ? fmt::format("{} seed {}", c.run_name(), work.seed) : c.run_name(),
                      run.samples_per_step);
        engine::RunOptions opt;
        opt.clock = sc.clock;
        opt.compute = sc.compute;
        opt.faults = sc.faults;
        if (run.worker_timeout) opt.transport_timeout = opt.gloo_timeout = *run.worker_timeout;
        opt.represent_scale = sc.represented ? sc.represented->scale() : 1.0;
        opt.represented_params = sc.represented ? sc.represented->params : 0;
        opt.represented_tensors = sc.represented_tensors;
        opt.represented_shapes = sc.represented_shapes;
        opt.progress = [&prog](int done, int total, double t) { prog.update(done, total, t); };
        opt.checkpoint.dir = run.checkpoint_dir;
        opt.checkpoint.every_steps = sc.checkpoint.every_steps;
        opt.checkpoint.requests = run.checkpoint_requests;
        opt.checkpoint.scenario_hash = sc.checkpoint.training_hash;
        opt.checkpoint.resume = run.resume;
        opt.checkpoint.written = [](int step, const std::string& dir) {
          fmt::print("\ngeotb: checkpoint after step {}: {}\n", step, dir);
        };
        try {
          model::StrategyRun r = engine::run_strategy(sc.cluster, work, c, run.data, opt);
          r.name = c.run_name();
          run.resumed_from(r);
          if (sc.target_accuracy)
            r.metrics.time_to_accuracy = model::metrics::time_to_accuracy(r, *sc.target_accuracy);
          prog.finish(fmt::format("done: {:.0f} samples/s, test accuracy {:.4f}, wall {:.1f} s",
                                  r.metrics.samples_per_s, r.metrics.final_test_accuracy, r.metrics.wall_s));
          if (run.seeds > 1) seeds.push_back(model::metrics::seed_result(r, work.seed));
          if (i == 0) first = std::move(r);
        } catch (const std::exception& e) {
          prog.finish(fmt::format("FAILED: {}", e.what()));
          run.failures.push_back(
              {c.run_name(), run.seeds > 1 ? fmt::format("seed {}: {}", work.seed, e.what()) : e.what()});
          ok = false;
        }
      }
      if (!ok) continue;
      first.seeds = std::move(seeds);
      run.results.push_back(std::move(first));
    }
    return 0;
  }
};

}  // namespace

const Mode& embedded_mode() {
  static const EmbeddedMode mode;
  return mode;
}

}  // namespace geotb::harness
