#include "harness/cmd_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include "common/cli_units.h"
#include "common/units.h"
#include "engine/checkpoint/file.h"
#include "engine/data/partition.h"
#include "harness/data_plane_options.h"
#include "engine/cluster.h"
#include "engine/model/learner.h"
#include "harness/modes/mode.h"
#include "harness/progress.h"
#include "harness/report.h"
#include "harness/scenario.h"
#include "model/memory_estimate.h"
#include "model/metrics.h"

namespace geotb::harness {

namespace {

struct RunArgs {
  std::string scenario;
  std::string strategies;
  std::string out = "reports";
  std::vector<std::string> argv;
  std::string net;                     ///< "" = the scenario's "network"
  std::string clock;                   ///< "" = the scenario's "clock" (default: virtual when embedded)
  std::string device;                  ///< "" = the scenario's workload.device (default: cpu)
  std::string worker_timeout;  ///< workers' --timeout (process modes; default 30s), the embedded transports' (default 120s)
  std::string deadline;                ///< process modes: per strategy ("" = 120 s + 2 s per step)
  std::string net_prefix = "gtbrun";   ///< dpdk: namespace prefix
  int rt_priority = -1;                ///< dpdk: data plane SCHED_FIFO priority (-1: 0 on a shielded CPU, else 50)
  bool no_pin = false;                 ///< dpdk: do not give the data plane a CPU of its own
  bool no_shield = false;              ///< dpdk: leave other processes on the data plane's CPU
  std::string tcp_cc;                  ///< dpdk: overrides the scenario's tcp_congestion_control ("" = keep it)
  int seeds = 1;                       ///< embedded: runs per strategy, seeds seed, seed + 1, ...
  std::string checkpoint_dir;          ///< "" = the scenario's checkpoint.dir
  std::string resume;                  ///< a checkpoint to continue from ("" = none)
  uint64_t memory_limit = 0;           ///< embedded: refuse a run estimated above it (0 = MemAvailable)
};

// SIGUSR1: a checkpoint as soon as possible (docs/guide/checkpoints.md). The handler only counts.
std::atomic<int> g_checkpoint_requests{0};
extern "C" void on_sigusr1(int) { g_checkpoint_requests.fetch_add(1); }

/// Installs the SIGUSR1 handler for as long as it lives.
class CheckpointSignal {
 public:
  CheckpointSignal() {
    struct sigaction sa {};
    sa.sa_handler = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, &old_);
  }
  ~CheckpointSignal() { sigaction(SIGUSR1, &old_, nullptr); }
  CheckpointSignal(const CheckpointSignal&) = delete;
  CheckpointSignal& operator=(const CheckpointSignal&) = delete;

 private:
  struct sigaction old_ {};
};

std::chrono::milliseconds ms_of(const std::string& field, const std::string& v) {
  try {
    return std::chrono::duration_cast<std::chrono::milliseconds>(common::parse_duration(v));
  } catch (const common::UnitError& e) {
    throw ScenarioError(fmt::format("{}: {}", field, e.what()));
  }
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

/// Empty if the run can train on sc.workload.model.device, else "device: ...: why".
std::string device_check(const Scenario& sc) {
  const std::string& dev = sc.workload.model.device;
  if (auto e = engine::validate(sc.workload.model); !e.empty()) return e;
  if (dev == "cpu") return {};
  if (!traits(sc.network).in_process)
    return fmt::format("device: \"{}\": the {} network mode trains on the CPU only (its workers read the scenario "
                       "themselves); run it embedded", dev, to_string(sc.network));
  if (sc.clock == engine::ClockMode::kVirtual && sc.compute.empty())
    return fmt::format("device: \"{}\" on the virtual clock needs a compute profile (\"compute\": {{\"step_time\", ...}} "
                       "or {{\"calibrated\": FILE}} from geotb calibrate): measured compute is thread CPU time, which "
                       "does not see the GPU's work; or run with --clock wall", dev);
  return engine::device_error(dev);
}

/// `geotb run`'s options applied to the scenario (--net, --clock, --device, --tcp-cc), then what
/// the scenario may not do in the mode it now runs in, refused; warnings for what it may do but
/// should know (BBR in the embedded mode, SCAFFOLD's gain). False: refused, the error on stderr.
bool apply_run_options(const RunArgs& a, Scenario& sc) {
  if (!a.net.empty()) {
    const std::optional<NetworkMode> mode = parse_network_mode(a.net);
    if (!mode) {
      fmt::print(stderr, "geotb: error: --net: \"{}\": one of embedded, process, dpdk\n", a.net);
      return false;
    }
    sc.network = *mode;  // the report says how it ran
    // The scenario's clock default follows the mode it runs in (virtual only exists embedded).
    if (!sc.raw.contains("clock")) sc.clock = traits(sc.network).in_process ? engine::ClockMode::kVirtual : engine::ClockMode::kWall;
  }
  if (!a.clock.empty()) {
    if (a.clock != "virtual" && a.clock != "wall") {
      fmt::print(stderr, "geotb: error: --clock: \"{}\": one of virtual, wall\n", a.clock);
      return false;
    }
    sc.clock = a.clock == "virtual" ? engine::ClockMode::kVirtual : engine::ClockMode::kWall;
  }
  if (!a.device.empty()) sc.workload.model.device = a.device;
  if (const std::string e = device_check(sc); !e.empty()) {
    // e is "device: ...": the scenario's field, or the option that set it.
    fmt::print(stderr, "geotb: error: {}\n", a.device.empty() ? "workload." + e : "--" + e);
    return false;
  }
  if (!traits(sc.network).in_process && sc.clock == engine::ClockMode::kVirtual) {
    fmt::print(stderr, "geotb: error: clock: \"virtual\": the {} network mode runs in wall time only (add --clock wall)\n",
               to_string(sc.network));
    return false;
  }
  try {
    check_sites_for_mode(sc);
    check_faults_for_mode(sc);
    check_represented_for_mode(sc);
    check_lan_collectives(sc);
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "geotb: error: {}: {}\n", a.scenario, e.what());
    return false;
  }
  if (sc.clock == engine::ClockMode::kWall) {  // wall time: compute is what it takes
    sc.compute.clear();
    sc.compute_default.reset();
    sc.compute_derived.clear();
    sc.compute_calibrated.clear();
  }
  if (a.seeds < 1 || a.seeds > 100) {
    fmt::print(stderr, "geotb: error: --seeds: {}: must be in [1, 100]\n", a.seeds);
    return false;
  }
  if (a.seeds > 1 && !traits(sc.network).in_process) {
    fmt::print(stderr, "geotb: error: --seeds: {}: only the embedded network mode repeats a run with other seeds "
                       "(network is \"{}\")\n", a.seeds, to_string(sc.network));
    return false;
  }
  if (!a.tcp_cc.empty()) {
    try {
      validate_tcp_congestion_control("--tcp-cc", a.tcp_cc);
    } catch (const ScenarioError& e) {
      fmt::print(stderr, "geotb: error: {}\n", e.what());
      return false;
    }
    sc.tcp_congestion_control = a.tcp_cc;
    sc.cluster.segments.cc = model_congestion_control(sc.tcp_congestion_control);
  }
  if (traits(sc.network).in_process && sc.tcp_congestion_control == "bbr")
    fmt::print(stderr,
               "geotb: warning: tcp_congestion_control \"bbr\": the in-process WAN model does not model BBR's "
               "pacing (docs/guide/network-modes.md: measured 27 % more exposed communication for naive_ddp over "
               "real BBR); embedded results are those of an unpaced, loss-based TCP\n");
  // SCAFFOLD's option II with η = lr under momentum β: the correction's gain β/(1-β) exceeds 1
  // above β = 0.5 (docs/guide/strategies.md "Momentum"; measured diverging at 0.9).
  for (const auto& s : sc.strategies)
    if (s.scaffold && s.scaffold_lr == "optimizer" && sc.workload.optimizer.momentum > 0.5)
      fmt::print(stderr,
                 "geotb: warning: {}: \"scaffold\": true with \"scaffold_lr\": \"optimizer\" and "
                 "workload.optimizer.momentum {:g}: the control variates' round-to-round gain is {:.3g} > 1 and "
                 "training is expected to diverge; \"scaffold_lr\": \"effective\" divides by 1 - momentum "
                 "(docs/guide/strategies.md)\n",
                 s.name, sc.workload.optimizer.momentum,
                 sc.workload.optimizer.momentum / (1 - sc.workload.optimizer.momentum));
  return true;
}

int run(const RunArgs& a) {
  std::optional<Scenario> loaded = load_scenario_or_report(a.scenario);
  if (!loaded) return 2;
  Scenario& sc = *loaded;
  if (!apply_run_options(a, sc)) return 2;
  std::chrono::milliseconds worker_timeout{0}, deadline{0};
  try {
    worker_timeout = ms_of("--worker-timeout", a.worker_timeout.empty() ? "30s" : a.worker_timeout);
    if (!a.deadline.empty()) deadline = ms_of("--deadline", a.deadline);
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  const Mode& mode = mode_of(sc.network);
  if (const std::string why = mode.unavailable(); !why.empty()) {
    fmt::print(stderr, "geotb: error: {}\n", why);
    return 2;
  }
  std::vector<engine::StrategyConfig> chosen = sc.strategies;
  if (!a.strategies.empty()) {
    chosen.clear();
    for (const auto& name : split_csv(a.strategies)) {
      bool found = false;
      for (const auto& c : sc.strategies)
        if (c.run_name() == name) {
          chosen.push_back(c);
          found = true;
        }
      if (!found) {
        std::string have;
        for (const auto& c : sc.strategies) have += (have.empty() ? "" : ", ") + c.run_name();
        fmt::print(stderr, "geotb: error: --strategies: \"{}\": not in {} (has: {})\n", name, a.scenario, have);
        return 2;
      }
    }
  }

  int workers = 0;
  for (const auto& d : sc.cluster.dcs) workers += d.workers;
  // Checkpoints: written where the scenario (or --checkpoint-dir) says; SIGUSR1 asks for one.
  const std::string checkpoint_dir = a.checkpoint_dir.empty() ? sc.checkpoint.dir : a.checkpoint_dir;
  if (sc.checkpoint.every_steps > 0 && checkpoint_dir.empty()) {
    fmt::print(stderr,
               "geotb: error: {}: checkpoint.every_steps: {}: no directory to write them to (give checkpoint.dir in "
               "the scenario or --checkpoint-dir)\n",
               a.scenario, sc.checkpoint.every_steps);
    return 2;
  }
  {
    // The strategies chosen, in the mode, clock and checkpoint directory this run has.
    Scenario run_sc = sc;
    run_sc.checkpoint.dir = checkpoint_dir;
    std::vector<std::string> names;
    for (const auto& c : chosen) names.push_back(c.run_name());
    try {
      check_strategies_for_mode(run_sc, &names);
    } catch (const ScenarioError& e) {
      fmt::print(stderr, "geotb: error: {}: {}{}\n", a.scenario, e.what(),
                 a.checkpoint_dir.empty() ? "" : " (--checkpoint-dir)");
      return 2;
    }
  }
  std::optional<CheckpointSignal> sigusr1;
  if (!checkpoint_dir.empty()) sigusr1.emplace();
  // --resume: one strategy, its checkpoint verified whole (every rank file) before anything runs.
  std::optional<engine::Checkpoint> resume;
  if (!a.resume.empty()) {
    try {
      if (a.seeds > 1) throw engine::CheckpointError("continues one run: --seeds must be 1");
      const engine::Checkpoint found = engine::find_checkpoint(a.resume);
      if (a.strategies.empty()) {
        chosen.clear();
        for (const auto& c : sc.strategies)
          if (c.run_name() == found.header.strategy) chosen.push_back(c);
        if (chosen.empty())
          throw engine::CheckpointError(fmt::format("{}/manifest: strategy \"{}\": not in {}", found.step_dir,
                                                    found.header.strategy, a.scenario));
      }
      if (chosen.size() != 1)
        throw engine::CheckpointError(fmt::format("continues one strategy, --strategies names {}", chosen.size()));
      resume = engine::load_checkpoint(
          a.resume, {.scenario_hash = sc.checkpoint.training_hash, .strategy = chosen[0].run_name(), .world = workers});
      if (resume->header.step >= sc.workload.steps)
        throw engine::CheckpointError(fmt::format("{}: at step {}, the scenario has {} steps: nothing left to run",
                                                  resume->step_dir, resume->header.step, sc.workload.steps));
    } catch (const engine::CheckpointError& e) {
      fmt::print(stderr, "geotb: error: --resume: {}\n", e.what());
      return 2;
    }
    fmt::print("geotb: resuming {} from {} (step {})\n", chosen[0].run_name(), resume->step_dir, resume->header.step);
  }

  RunContext ctx;
  ctx.argv = a.argv;
  ctx.scenario_file = a.scenario;
  ctx.started_at = utc_now_iso();

  engine::Datasets data;
  try {
    data.train = engine::load_fashion_mnist(engine::kFashionMnistDir, true, sc.train_limit);
    data.test = engine::load_fashion_mnist(engine::kFashionMnistDir, false, sc.test_limit);
  } catch (const engine::DataError& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  const model::RankLayout layout = model::rank_layout(sc.cluster);
  {
    // Made here once before any strategy runs: an impossible partition is refused up front, and
    // the report shows what each data center holds and weighs (the workers make the same).
    try {
      const auto shards = engine::make_partition(data.train, engine::kFashionMnistClasses, sc.workload.partition,
                                                 layout, sc.workload.seed);
      if (sc.workload.partition.kind != engine::PartitionSpec::Kind::kIid) {
        const auto h = engine::label_histogram(shards, data.train.labels, engine::kFashionMnistClasses);
        for (int d = 0; d < layout.dcs(); ++d) {
          std::vector<uint64_t> sum(engine::kFashionMnistClasses, 0);
          for (int w = 0; w < layout.workers(d); ++w)
            for (size_t c = 0; c < sum.size(); ++c) sum[c] += h[static_cast<size_t>(layout.rank_of(d, w))][c];
          ctx.label_histogram_by_dc[sc.cluster.dcs[static_cast<size_t>(d)].name] = sum;
        }
      }
      const std::vector<float> weights = engine::dc_mean_weights(layout, shards, sc.workload.dc_weights);
      for (size_t d = 0; d < weights.size(); ++d) ctx.dc_weight_by_dc[sc.cluster.dcs[d].name] = weights[d];
      if (const engine::GlobalBatchSpec& g = sc.workload.global_batch; g.on()) {
        // The pool every DC holds a copy of, staged before training: Fashion-MNIST's stored form,
        // one byte per pixel and one for the label.
        const auto pool = engine::global_pool(data.train.size, g.pool, sc.workload.seed);
        ctx.global_batch = nlohmann::json{
            {"fraction", g.fraction},
            {"beta", g.beta},
            {"pool", g.pool},
            {"pool_examples", pool.size()},
            {"pool_examples_per_step", g.count(static_cast<size_t>(sc.workload.batch_per_worker))},
            {"pool_staging_wan_bytes", engine::pool_staging_bytes(pool, shards, layout, data.train.size,
                                                                  data.train.features() + 1)}};
      }
    } catch (const engine::PartitionError& e) {
      fmt::print(stderr, "geotb: error: {}: workload.partition: {}\n", a.scenario, e.what());
      return 2;
    }
  }
  ModeRun run(sc, a.scenario, chosen, data, ctx);
  run.samples_per_step = static_cast<size_t>(sc.workload.step_samples()) * static_cast<size_t>(workers);
  run.seeds = a.seeds;
  run.memory_limit = a.memory_limit;
  if (!a.worker_timeout.empty()) run.worker_timeout = worker_timeout;
  run.deadline = deadline;
  run.checkpoint_dir = checkpoint_dir;
  run.checkpoint_dir_option = a.checkpoint_dir;
  run.resume = resume ? &*resume : nullptr;
  run.checkpoint_requests = &g_checkpoint_requests;
  run.net_prefix = a.net_prefix;
  run.rt_priority = a.rt_priority;
  run.pin = !a.no_pin;
  run.shield = !a.no_shield;
  if (!mode.admit(run)) return 2;
  fmt::print("geotb: scenario {} ({}), {} data centers {} workers, {} steps of {} per worker, {} train / {} test examples\n",
             sc.name, sc.hash.substr(0, 12), sc.cluster.dcs.size(),
             layout.uniform() ? fmt::format("x {}", layout.workers(0)) : "of " + layout.describe(), sc.workload.steps,
             sc.workload.batch_per_worker, data.train.size, data.test.size);
  if (const int rc = mode.run(run); rc != 0) return rc;
  std::vector<model::StrategyRun> results = std::move(run.results);
  std::vector<model::Failure> failures = std::move(run.failures);
  const bool failed = !failures.empty();
  const model::RunReport rep = make_report(sc, std::move(results), std::move(failures), ctx);
  std::string path;
  try {
    path = write_report(rep, a.out, sc.name);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: writing the report: {}\n", e.what());
    return 1;
  }
  fmt::print("\n{}\nreport: {}\n", summary_table(rep), path);
  return failed ? 1 : 0;
}

}  // namespace

void register_run_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto args = std::make_shared<RunArgs>();
  args->argv = argv;
  CLI::App* cmd = app.add_subcommand("run", "Replay a scenario: train every strategy, write a JSON report");
  cmd->add_option("scenario", args->scenario, "Scenario file (scenarios/*.json)")->required();
  cmd->add_option("--strategies", args->strategies, "Comma-separated subset of the scenario's strategies");
  cmd->add_option("--seeds", args->seeds,
                  "embedded: run every strategy with N seeds (the scenario's seed, seed + 1, ...); the report keeps "
                  "the first seed's run and every seed's figures with their mean and sd")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Directory for the report")->capture_default_str();
  common::add_bytes_option(*cmd, "--memory-limit", args->memory_limit,
                           "embedded: refuse a run whose estimated memory is above this size (0: the host's "
                           "MemAvailable)");
  cmd->add_option("--clock", args->clock,
                  "embedded: \"virtual\" (default: figures are the scenario's, docs/guide/clocks.md) or \"wall\" "
                  "(the host's clock; figures depend on its cores and load)");
  cmd->add_option("--device", args->device,
                  "Where forward and backward run, overrides workload.device: cpu, cuda or cuda:N (embedded mode; "
                  "docs/guide/gpu.md)");
  cmd->add_option("--net", args->net,
                  "Network mode, overrides the scenario's: embedded (threads, in-process WAN model), process (one "
                  "process per rank on loopback), dpdk (one process per rank in per-DC namespaces behind the DPDK "
                  "emulator; root)");
  cmd->add_option("--worker-timeout", args->worker_timeout,
                  "A worker waiting this long on a peer, collective or the store fails (process/dpdk: default "
                  "30s; embedded: a message not delivered by then, on the run's clock, default 120s)");
  cmd->add_option("--deadline", args->deadline, "process/dpdk: per strategy, from start to the last worker's exit "
                                                "(default 120 s + 2 s per step)");
  cmd->add_option("--checkpoint-dir", args->checkpoint_dir,
                  "Write checkpoints here (default: the scenario's checkpoint.dir); SIGUSR1 then asks for one at "
                  "the next step boundary (docs/guide/checkpoints.md)");
  cmd->add_option("--resume", args->resume,
                  "Continue from a checkpoint: a step directory (<dir>/<strategy>/step-<k>) or <dir>/<strategy> (its "
                  "latest); refused if it belongs to another scenario, strategy or world size");
  cmd->add_option("--net-prefix", args->net_prefix, "dpdk: network namespace prefix (<= 8 characters)")
      ->capture_default_str();
  harness::add_data_plane_cpu_options(*cmd, args->rt_priority, &args->no_pin, args->no_shield, "for the run", "dpdk: ");
  cmd->add_option("--tcp-cc", args->tcp_cc,
                  "dpdk: TCP congestion control of the DC hosts, overrides the scenario's tcp_congestion_control: auto "
                  "(cubic, else reno: what the namespaces may use), default (the host's), or a name, e.g. reno, bbr");
  cmd->callback([args]() {
    if (const int rc = run(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
