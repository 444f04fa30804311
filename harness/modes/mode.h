// How `geotb run` runs a scenario's strategies in each network mode: one class per mode
// (embedded.cc, process.cc, dpdk.cc), made by mode_of(). The modes' properties, which the
// scenario's rules read too, are harness/network_mode.h's traits. `geotb run` (cmd_run.cc) asks the
// mode; it does not compare NetworkMode values.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/checkpoint/file.h"
#include "engine/cluster.h"
#include "harness/network_mode.h"
#include "harness/report.h"
#include "harness/scenario.h"
#include "model/report.h"

namespace geotb::harness {

/// What `geotb run` hands a mode (its options and what it loaded), and what it gets back.
struct ModeRun {
  ModeRun(const Scenario& s, std::string path, std::vector<engine::StrategyConfig> strategies,
          const engine::Datasets& d, RunContext& c)
      : sc(s), scenario_path(std::move(path)), chosen(std::move(strategies)), data(d), ctx(c) {}

  const Scenario& sc;                  ///< with `geotb run`'s overrides applied
  std::string scenario_path;           ///< as given (the process modes' workers read it)
  std::vector<engine::StrategyConfig> chosen;
  const engine::Datasets& data;
  RunContext& ctx;                     ///< the report's context (the dpdk mode adds its TCP CC)
  size_t samples_per_step = 0;         ///< of the whole cluster (progress lines)
  int seeds = 1;                       ///< --seeds
  uint64_t memory_limit = 0;           ///< --memory-limit (0: MemAvailable)
  std::optional<std::chrono::milliseconds> worker_timeout;  ///< --worker-timeout, if given
  std::chrono::milliseconds deadline{0};                    ///< --deadline (0: derived)
  std::string checkpoint_dir;          ///< resolved: --checkpoint-dir, else the scenario's
  std::string checkpoint_dir_option;   ///< --checkpoint-dir as given ("" = the scenario's)
  const engine::Checkpoint* resume = nullptr;  ///< --resume, verified
  std::atomic<int>* checkpoint_requests = nullptr;  ///< bumped by SIGUSR1
  // dpdk: the namespaces and the data plane's CPU (harness/data_plane_options.h)
  std::string net_prefix;
  int rt_priority = -1;
  bool pin = true, shield = true;

  std::vector<model::StrategyRun> results;
  std::vector<model::Failure> failures;

  /// The report's resumed_from, when the run continues a checkpoint.
  void resumed_from(model::StrategyRun& r) const {
    if (resume) r.resumed_from = model::ResumedFrom{resume->header.step, resume->step_dir};
  }
};

class Mode {
 public:
  virtual ~Mode() = default;
  virtual NetworkMode id() const = 0;
  const ModeTraits& traits() const { return harness::traits(id()); }
  /// "" or why this geotb cannot run the mode on this host (dpdk: built without DPDK, not root).
  virtual std::string unavailable() const { return {}; }
  /// With the data loaded, before anything runs: false if the run must not start (said on stderr).
  virtual bool admit(const ModeRun&) const { return true; }
  /// Runs every chosen strategy into r.results and r.failures: 0, or the exit status `geotb run`
  /// ends with before writing a report (1: the mode failed; 130: interrupted).
  virtual int run(ModeRun& r) const = 0;
};

/// The mode `m` (one instance each).
const Mode& mode_of(NetworkMode m);
/// Each mode's instance, in its own file; dpdk_mode() is modes/dpdk.cc's in a geotb built with
/// DPDK, else modes/dpdk_absent.cc's, which is unavailable.
const Mode& embedded_mode();
const Mode& process_mode();
const Mode& dpdk_mode();

}  // namespace geotb::harness
