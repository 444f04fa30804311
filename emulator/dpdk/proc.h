// Running helper programs (ip, ethtool, iperf3, ping, geotb-emulate) without a shell:
// argv vectors, fork + execvp, output captured through a pipe or sent to a file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace geotb::emu {

struct CmdResult {
  int status = -1;       ///< exit code, or 128 + signal
  std::string output;    ///< stdout and stderr together
};

/// Runs to completion; `timeout` (0 = none) kills it with SIGKILL when exceeded.
CmdResult run_cmd(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = std::chrono::milliseconds{0});
/// Like run_cmd but throws std::runtime_error("<command>: <output>") on a non-zero status.
std::string run_checked(const std::vector<std::string>& argv);
/// "ip netns exec <ns> argv..." (ns empty: argv unchanged).
std::vector<std::string> in_ns(const std::string& ns, std::vector<std::string> argv);
std::string join(const std::vector<std::string>& argv);

/// A background child with stdout+stderr going to `log_path` ("" = /dev/null).
class Child {
 public:
  Child() = default;
  /// `new_session`: the child calls setsid() (survives this process and its terminal).
  Child(const std::vector<std::string>& argv, const std::string& log_path, bool new_session = false);
  Child(Child&& o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }
  Child& operator=(Child&& o) noexcept;
  ~Child();  ///< kills (SIGKILL) and reaps a child still running
  pid_t pid() const { return pid_; }
  /// Stop managing the child (it keeps running; the destructor leaves it alone). Returns its pid.
  pid_t release() {
    const pid_t p = pid_;
    pid_ = -1;
    return p;
  }
  bool running();
  /// SIGTERM, wait up to `grace`, then SIGKILL; returns the exit status.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds{5000});
  /// Waits for exit; returns the status, or -1 on timeout (child left running).
  int wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

}  // namespace geotb::emu
