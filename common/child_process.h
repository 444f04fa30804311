// A child process owned by an object: started with posix_spawn (never fork without exec: a
// fork of a process with OpenMP or Gloo threads can hang in the child), killed and reaped when
// the object goes away unless it was released.
//
// The child gets stdin from /dev/null, no signal blocked, and SIGINT, SIGTERM and SIGPIPE at
// their default action whatever this process does with them; stdout and stderr go to a log file,
// to a descriptor (a pipe) or are inherited. Not thread-safe: one thread owns the object.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace geotb::common {

/// posix_spawn failed (program not found, log file not writable, ...); nothing is running.
class SpawnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ChildOptions {
  std::vector<std::string> argv;                ///< argv[0] is looked up in PATH
  std::optional<std::vector<std::string>> env;  ///< "KEY=value" each; nullopt: this process's environment
  std::string log_path;   ///< non-empty: stdout and stderr go to this file (created or truncated, mode 0644)
  int output_fd = -1;     ///< >= 0 and no log_path: stdout and stderr go to this descriptor (the caller's)
  bool own_process_group = false;  ///< leads a new process group; signals then go to the whole group
  bool new_session = false;        ///< leads a new session (setsid): outlives this process's terminal
};

class ChildProcess {
 public:
  ChildProcess() = default;
  /// Starts the child. Throws SpawnError("spawning <argv[0]>: <reason>").
  explicit ChildProcess(const ChildOptions& opt);
  /// SIGKILL (to its group if it has one) and reaped, unless it exited, was reaped or released.
  ~ChildProcess();
  ChildProcess(ChildProcess&& o) noexcept;
  /// Kills and reaps the child this object held (as the destructor), then takes `o`'s.
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// The child's pid (also its process group id with own_process_group); -1 when there is none:
  /// never started, released, or exited and reaped.
  pid_t pid() const { return reaped_ ? -1 : pid_; }
  /// Collects its exit if it has exited (non-blocking); true while it runs.
  bool running();
  /// Its exit has been collected (by running(), a wait or stop()).
  bool reaped() const { return reaped_; }
  /// Exit code, or 128 + the signal that ended it; -1 until reaped.
  int exit_status() const { return status_; }
  /// The signal that ended it; 0 if it exited (or is not reaped yet).
  int term_signal() const { return signal_; }

  /// Waits until it exits (polling every 10 ms); its exit_status(), or nullopt after `timeout`
  /// (it keeps running).
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  /// Waits as long as it takes; its exit_status().
  int wait();
  /// Sends `sig` to the child (to its process group with own_process_group); nothing once reaped.
  void signal(int sig);
  /// SIGTERM, up to `grace` to exit, then SIGKILL; reaped. Its exit_status().
  int stop(std::chrono::milliseconds grace);
  /// Stops owning the child: it keeps running and the destructor leaves it alone. Its pid.
  pid_t release();

 private:
  void reap(bool block);
  void kill_and_reap() noexcept;

  pid_t pid_ = -1;
  bool group_ = false;
  bool reaped_ = false;
  int status_ = -1;
  int signal_ = 0;
};

}  // namespace geotb::common
