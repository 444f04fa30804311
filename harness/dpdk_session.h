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
#include "model/report.h"
#include "model/exec_report.h"

namespace geotb::harness {

struct DpdkSessionOptions {
  std::string prefix = "gtbrun";  ///< namespace prefix (<= 8 characters)
  std::string emulate_bin;        ///< geotb-emulate ("" = next to geotb)
  /// SCHED_FIFO priority of the data plane (0 = normal; refused: normal, with a warning); -1 =
  /// auto: 0 (busy polling) on a shielded CPU, else 50 (emu::resolve_rt_priority)
  int rt_priority = -1;
  bool pin = true;                ///< the data plane on a CPU of its own, workers on the others (emu::NetTopology::pin_emulator)
  bool shield = true;             ///< and every other process off that CPU (emu::NetTopology::shield_cpu)
  std::string log_dir;            ///< emulator logs and reports
  /// TCP congestion control in the DC namespaces: "auto" (cubic, else reno: the first the host
  /// lets a namespace use, i.e. listed in net.ipv4.tcp_allowed_congestion_control; loss-based and
  /// unpaced, as the in-process model assumes), "default" (the namespace's, inherited from the
  /// host) or a name, which must be in that list (a namespace may not select another).
  std::string tcp_congestion_control = "auto";
};

struct EmulatorStats {
  bool ok = false;            ///< the emulator's report was read and its accounting balanced
  uint64_t wan_frames = 0;    ///< frames sent on every WAN link (both directions)
  uint64_t wan_wire_bytes = 0;  ///< their bytes with Ethernet overhead (preamble, FCS, gap: +24 per L2 frame)
  std::string report_path;
  /// Seconds from the emulator's first poll to the start of the scenario's timeline (the
  /// workers' first step); < 0 if it never started (the run failed before its first step).
  double timeline_origin_s = -1;
  uint64_t changes_applied = 0;  ///< scheduled changes applied, every link
  /// How the poller was scheduled and its stalls (for the strategy's report).
  model::DataPlaneSummary dataplane;
  /// Every WAN link direction: frames, L2 bytes, drops by cause, changes applied (the emulator's
  /// report, "links"); the totals above are their sums.
  std::vector<model::LinkTraffic> links;
};

class DpdkSession {
 public:
  /// Creates the namespaces (throws std::runtime_error naming the failing command).
  DpdkSession(const Scenario& sc, const DpdkSessionOptions& opt);
  ~DpdkSession();
  DpdkSession(const DpdkSession&) = delete;
  DpdkSession& operator=(const DpdkSession&) = delete;

  /// The congestion control the DC namespaces use (read back from the first one).
  const std::string& tcp_congestion_control() const;
  /// Where each DC's workers run: its namespace, address, and the CPUs the data plane leaves.
  std::vector<DcPlacement> placements() const;
  /// Starts geotb-emulate and waits until it forwards (up to 20 s; throws with its log). Prints
  /// the data plane's warnings (e.g. a real-time priority the kernel refused) to stderr.
  void start_emulator(const std::string& tag);
  /// The running emulator's pid (0 if none). Its timeline starts when it receives SIGUSR1.
  int emulator_pid() const;
  /// SIGTERM to the emulator (it writes its report), then reads the report.
  EmulatorStats stop_emulator();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geotb::harness
