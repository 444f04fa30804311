// Running helper programs (ip, ethtool, iperf3, ping) to completion without a shell: argv
// vectors, spawned by common/child_process.h, output captured through a pipe. Background
// programs (geotb-emulate, iperf3 -s) are common::ChildProcess objects of their own.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace geotb::emu {

struct CmdResult {
  int status = -1;       ///< exit code, or 128 + signal
  std::string output;    ///< stdout and stderr together
};

/// Runs to completion; `timeout` (0 = none) kills it with SIGKILL when exceeded. A program that
/// cannot be started gives status 127 and the reason as output.
CmdResult run_cmd(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = std::chrono::milliseconds{0});
/// Like run_cmd but throws std::runtime_error("<command>: <output>") on a non-zero status.
std::string run_checked(const std::vector<std::string>& argv);
/// "ip netns exec <ns> argv..." (ns empty: argv unchanged).
std::vector<std::string> in_ns(const std::string& ns, std::vector<std::string> argv);
std::string join(const std::vector<std::string>& argv);

}  // namespace geotb::emu
