// The process modes' run (process.cc, dpdk.cc): one `geotb worker` process per rank for each
// chosen strategy (harness/process_run.h), on the network each mode provides.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/modes/mode.h"
#include "harness/process_run.h"

namespace geotb::harness {

/// Where the ranks run and what wraps each strategy's run: the dpdk mode's namespaces and
/// emulator; nothing around loopback.
class RankNetwork {
 public:
  virtual ~RankNetwork() = default;
  /// One per data center of the scenario.
  virtual std::vector<DcPlacement> placements() const = 0;
  /// Before `c`'s processes start (the emulator for it).
  virtual void before(const engine::StrategyConfig&, ProcessRunOptions&) {}
  /// After they all exited 0: what the network measured, into the run.
  virtual void after(model::StrategyRun&) {}
  /// After they failed.
  virtual void failed() {}
};

/// Every chosen strategy with one process per rank on the network `open` makes (once, inside
/// the run's error handling, given the folder for its logs). Ctrl-C / SIGTERM: workers killed,
/// network torn down, 130. An error outside a strategy: 1, said on stderr.
int run_rank_processes(ModeRun& run, const std::function<std::unique_ptr<RankNetwork>(const std::string& work_dir)>& open);

}  // namespace geotb::harness
