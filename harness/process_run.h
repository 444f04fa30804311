// The coordinator of the process mode (`geotb run --net process|dpdk`): starts one
// `geotb worker` process per rank (posix_spawn, never fork-without-exec: fork after OpenMP hung
// Gloo), inside its data center's network namespace when there is one, waits for them with a
// deadline, kills the rest when one fails or on Ctrl-C, and merges their rank files into the
// strategy's result. No libtorch here.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/result.h"
#include "harness/rank_group.h"
#include "harness/scenario.h"

namespace geotb::harness {

/// The transport secret of a process or dpdk run: GEOTB_SECRET when set, else 32 random bytes
/// (hex) drawn once per `geotb run`. Every worker gets it through its environment.
std::string run_secret();

/// Where the workers of one data center run.
struct DcPlacement {
  std::string netns;    ///< network namespace ("" = this one)
  std::string address;  ///< the address its workers bind and advertise (GEOTB_BIND_ADDR)
  std::string cpus;     ///< taskset -c list for its workers ("" = no pinning)
  std::string ifname;   ///< its interface toward the other DCs ("" = none of its own)
};

struct ProcessRunOptions {
  std::string geotb_bin;                  ///< the geotb binary the workers run (default: this one)
  std::string scenario_path;              ///< passed to every worker
  std::vector<DcPlacement> dcs;           ///< one per data center of the scenario
  std::string master_addr;                ///< rank 0's address (its DC's placement address)
  uint16_t master_port = 0;               ///< 0: a free port on master_addr, chosen here
  std::chrono::milliseconds worker_timeout{30000};  ///< workers' --timeout (peer, collective, store)
  std::chrono::milliseconds deadline{0};  ///< whole strategy, from spawn to the last exit (0: derived from steps)
  std::string work_dir;                   ///< rank-<r>.json and rank-<r>.log go here
  std::function<void(int, int, double)> progress;  ///< rank 0's progress (read from its log)
  const std::atomic<int>* interrupted = nullptr;    ///< non-zero: a signal asked to stop (its number)
  /// > 0: rank 0 gets GEOTB_TIMELINE_PID=<it> and sends that process SIGUSR1 when the first step
  /// begins (the dpdk emulator, whose timeline then starts).
  int timeline_pid = 0;
  /// Checkpoints (docs/guide/checkpoints.md): the workers' --checkpoint-dir ("" = the scenario's), a
  /// checkpoint to --resume from ("" = none; the caller has verified it), and a counter that a
  /// SIGUSR1 handler bumps: each new value is a request passed on to the workers.
  std::string checkpoint_dir;
  std::string resume;
  const std::atomic<int>* checkpoint_requests = nullptr;
};

/// A failed process-mode run; what() names the rank that failed first and why.
class ProcessRunError : public engine::RunError {
 public:
  using engine::RunError::RunError;
};
/// Runs `strategy` with one process per rank. Throws ProcessRunError (every worker killed and
/// reaped first) or Interrupted.
model::StrategyRun run_strategy_processes(const Scenario& sc, const engine::StrategyConfig& strategy,
                                          const ProcessRunOptions& opt);

/// The path of the running executable (/proc/self/exe).
std::string self_exe();

/// A TCP port free on `addr` right now (bound and released; the caller binds it next).
uint16_t free_tcp_port(const std::string& addr);

}  // namespace geotb::harness
