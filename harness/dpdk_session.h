// `geotb run --net dpdk`: the network of a process-mode run. The same namespaces and data plane
// as `geotb net up --emulate` (emulator/dpdk/netns.h, proc.h): one namespace per data center,
// geotb-emulate in its own, started afresh for every strategy (the scenario's timeline counts
// from its start) and stopped after it. The destructor always stops it and removes the
// namespaces (net_down is idempotent: `geotb net down --prefix P` also cleans up after a crash).
// Compiled into geotb only with DPDK (GEOTB_HAVE_NET).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/process_run.h"
#include "harness/scenario.h"

namespace geotb::harness {

struct DpdkSessionOptions {
  std::string prefix = "gtbrun";  ///< namespace prefix (<= 8 characters)
  std::string emulate_bin;        ///< geotb-emulate ("" = next to geotb)
  int rt_priority = 50;           ///< SCHED_FIFO priority of the data plane (0 = normal)
  std::string log_dir;            ///< emulator logs and reports
  /// TCP congestion control in the DC namespaces ("" = the kernel's default, inherited from the
  /// host). Only what the host's net.ipv4.tcp_allowed_congestion_control lists can be set.
  std::string tcp_congestion_control;
};

struct EmulatorStats {
  bool ok = false;            ///< the emulator's report was read and its accounting balanced
  uint64_t wan_frames = 0;    ///< frames sent on every WAN link (both directions)
  uint64_t wan_wire_bytes = 0;  ///< their bytes with Ethernet overhead (preamble, FCS, gap: +24 per L2 frame)
  std::string report_path;
};

class DpdkSession {
 public:
  /// Creates the namespaces (throws std::runtime_error naming the failing command).
  DpdkSession(const Scenario& sc, const DpdkSessionOptions& opt);
  ~DpdkSession();
  DpdkSession(const DpdkSession&) = delete;
  DpdkSession& operator=(const DpdkSession&) = delete;

  /// Where each DC's workers run: its namespace, address, and the CPUs the data plane leaves.
  std::vector<DcPlacement> placements() const;
  /// Starts geotb-emulate and waits until it forwards (up to 20 s; throws with its log).
  void start_emulator(const std::string& tag);
  /// SIGTERM to the emulator (it writes its report), then reads the report.
  EmulatorStats stop_emulator();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geotb::harness
