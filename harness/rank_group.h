// One OS process per rank, supervised as a group: what `geotb run --net process|dpdk`
// (process_run.cc, one `geotb worker` per rank) and `geotb exec` (cmd_exec.cc, the user's command
// per rank) share. Every rank is started with posix_spawn (common/child_process.h) as the leader
// of its own process group, stdout and stderr to its log file. supervise() waits with a deadline;
// the first rank that exits non-zero gives the others a grace period to fail on their own (their
// own messages then name the cause), after which the rest are stopped (SIGTERM, SIGKILL 3 s
// later); SIGINT/SIGTERM (SignalFlag) stop every rank and throw Interrupted. No libtorch here.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/child_process.h"

namespace geotb::harness {

/// SIGINT/SIGTERM arrived (a SignalFlag's flag): every rank was stopped.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int sig) : std::runtime_error("interrupted by signal " + std::to_string(sig)), signal(sig) {}
  int signal;
};

/// Installs SIGINT/SIGTERM handlers that store the signal number in the returned flag (and do
/// nothing else); the previous handlers come back when the guard is destroyed.
class SignalFlag {
 public:
  SignalFlag();
  ~SignalFlag();
  SignalFlag(const SignalFlag&) = delete;
  SignalFlag& operator=(const SignalFlag&) = delete;
  const std::atomic<int>& flag() const;
};

/// This process's environment ("KEY=value" each) without the variables named in `drop` and
/// without any whose name starts with one of `drop_prefixes`.
std::vector<std::string> environment_without(const std::vector<std::string>& drop,
                                             const std::vector<std::string>& drop_prefixes);

/// How to start one rank.
struct RankSpec {
  int rank = 0, dc = 0;
  std::vector<std::string> argv;  ///< argv[0] looked up in PATH
  std::vector<std::string> env;   ///< the whole environment, "KEY=value" each
  std::string log_path;           ///< stdout and stderr (created or truncated)
};

/// One rank's process and what became of it.
struct RankProcess {
  int rank = 0, dc = 0;
  std::string log_path;
  common::ChildProcess child;
  bool stopped_by_us = false;  ///< the group stopped it (another rank failed, deadline, signal)
  bool killed_as_planned = false;  ///< kill_planned(): its death is the scenario's, not a failure
  int incarnation = 0;             ///< respawn()s so far
  std::chrono::steady_clock::time_point started, ended;  ///< ended: when its exit was collected (20 ms polls)
  double wall_s() const { return std::chrono::duration<double>(ended - started).count(); }
};

struct SuperviseOptions {
  std::chrono::milliseconds deadline{0};          ///< from the group's start; 0 = none
  std::chrono::milliseconds failure_grace{1500};  ///< after the first failure, before stopping the rest
  const std::atomic<int>* interrupted = nullptr;  ///< non-zero: a signal asked to stop (its number)
  std::function<void()> on_poll;                  ///< called every 20 ms while ranks run (progress, live view)
};

enum class GroupOutcome {
  kDone,      ///< every rank exited 0
  kFailed,    ///< a rank exited non-zero (or died of a signal): failed_order() says which, the rest were stopped
  kDeadline,  ///< the deadline passed: every rank was stopped
};

class RankGroup {
 public:
  /// Starts every rank (in order); throws common::SpawnError with the ranks started so far killed.
  explicit RankGroup(std::vector<RankSpec> specs);
  /// Kills and reaps whatever still runs.
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  /// Waits as SuperviseOptions says. Throws Interrupted after stopping every rank.
  GroupOutcome supervise(const SuperviseOptions& opt);
  /// Whether `rank` is stopped (SIGSTOP: state T in /proc/<pid>/stat), not running nor gone.
  bool is_stopped(int rank) const;
  /// SIGKILL to `rank`, whose death the scenario asks for (node faults): its exit is no failure.
  void kill_planned(int rank);
  /// Starts `rank` again as `spec` says (node faults: a restart) once its previous process has
  /// been reaped; it is then a running rank like the others. Throws common::SpawnError.
  void respawn(int rank, RankSpec spec);
  /// SIGTERM to every running rank's group, up to 3 s to exit, then SIGKILL; all reaped.
  void stop_all();

  const std::vector<RankProcess>& ranks() const { return ranks_; }
  /// Ranks that exited non-zero on their own, in the order their exits were collected.
  const std::vector<int>& failed_order() const { return failed_order_; }
  /// Seconds from the first spawn to the last exit collected.
  double wall_s() const;

 private:
  /// Collects exits; true while any rank runs.
  bool poll();

  std::vector<RankProcess> ranks_;
  std::vector<int> failed_order_;
  std::chrono::steady_clock::time_point started_;
};

/// "exit status 3" or "killed by signal 9 (Killed)".
std::string describe_exit(const common::ChildProcess& child);

/// The last `lines` non-empty lines of a file, joined with " | " ("" if unreadable).
std::string log_tail(const std::string& path, int lines);

}  // namespace geotb::harness
