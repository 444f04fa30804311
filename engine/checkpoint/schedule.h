// When a run checkpoints and where to: every N steps and on request (SIGUSR1), the same step on
// every rank. A request is honoured at the first step boundary that no rank has passed yet: each
// rank reports its progress under one lock, and the first rank to see a new request sets the
// target to one past the furthest rank's boundary (its own if it is the furthest), so every rank
// reaches it after the target is set. No libtorch here.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/checkpoint/file.h"

namespace geotb::engine {

/// A run's checkpoints (docs/guide/checkpoints.md).
struct CheckpointOptions {
  std::string dir;          ///< where checkpoints go ("" = none written)
  int every_steps = 0;      ///< a checkpoint after every this many steps (0 = only on request)
  /// Bumped (e.g. by a SIGUSR1 handler) to ask for a checkpoint as soon as possible; may be null.
  const std::atomic<int>* requests = nullptr;
  std::string scenario_hash;  ///< written into every checkpoint (and checked on resuming)
  const Checkpoint* resume = nullptr;  ///< continue from this (every rank's state loaded); null: from step 0
  /// Called once a checkpoint is complete: (steps done, its directory). May be empty.
  std::function<void(int, const std::string&)> written;
  /// Full recovery (embedded mode): (rank, steps done) -> whether that rank goes back to the last
  /// complete checkpoint in `dir` now. Must say so for every rank at the same boundary. Empty: never.
  std::function<bool(int, int)> rewind_due;
  bool writes() const { return !dir.empty(); }
};

/// The shared record the ranks agree through: requests made, requests seen, the target step of
/// the one being honoured (-1: none) and every rank's last boundary.
struct ScheduleState {
  int32_t requests = 0, seen = 0, target = -1;
  std::vector<int32_t> progress;
};

/// One rank's decision at a boundary, on the shared record (the caller holds its lock): whether
/// rank `rank`, having done `steps` steps, checkpoints now.
bool checkpoint_due(ScheduleState& st, int rank, int steps, int every_steps);

/// The embedded mode's agreement on checkpoint steps (its ranks are threads). Thread-safe.
class CheckpointSchedule {
 public:
  CheckpointSchedule(int world, int every_steps, const std::atomic<int>* requests, int first_step = 0);
  /// Rank `rank` has done `steps` steps (called once per boundary, in order): whether it
  /// checkpoints now. Every rank gets the same answer for the same `steps`.
  bool due(int rank, int steps);

 private:
  std::mutex mu_;
  ScheduleState st_;
  int every_;
  const std::atomic<int>* requests_;
};

/// The process modes' agreement: the same record in a small file every rank opens (ranks are
/// processes of one host, possibly in other network namespaces), under flock(2). The
/// coordinator creates it and adds requests (request()); each worker calls due().
class CheckpointRequestFile {
 public:
  /// Creates (or truncates) `path` for `world` ranks that start at `first_step`.
  static void create(const std::string& path, int world, int first_step);
  /// Opens an existing one. Throws CheckpointError naming the path.
  CheckpointRequestFile(const std::string& path, int world);
  ~CheckpointRequestFile();
  CheckpointRequestFile(const CheckpointRequestFile&) = delete;
  CheckpointRequestFile& operator=(const CheckpointRequestFile&) = delete;
  /// Asks for a checkpoint at the first boundary no rank has passed.
  void request();
  /// As CheckpointSchedule::due.
  bool due(int rank, int steps, int every_steps);

 private:
  template <class F>
  void locked(F&& f);
  std::string path_;
  int fd_ = -1;
  int world_;
};

/// Counts the rank files of each checkpoint; the last rank to write one completes it (manifest,
/// latest). Thread-safe.
class CheckpointWriter {
 public:
  CheckpointWriter(const CheckpointOptions& opt, std::string strategy, int world)
      : opt_(opt), strategy_(std::move(strategy)), world_(world) {}
  /// Writes `rank`'s state after `steps`; completes the checkpoint if it is the last.
  void write(int rank, int steps, const StateBuffers& state);
  /// Full recovery went back to the checkpoint after `steps`: the rank files counted for later
  /// checkpoints (never completed) are forgotten; those checkpoints are written again whole.
  void forget_after(int steps);

 private:
  const CheckpointOptions& opt_;
  std::string strategy_;
  int world_;
  std::mutex mu_;
  std::vector<std::pair<int, int>> written_;  // (steps, rank files written)
};

}  // namespace geotb::engine
