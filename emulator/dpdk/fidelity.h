// Fidelity of the DPDK emulator against its configuration, measured with real traffic between
// two data-center namespaces (ping, iperf3) and with the data plane's own counters.
//
// One call runs, on the same namespaces and veth ports, in this order:
//   io_forward  geotb-emulate --io-forward: base RTT and reference TCP throughput (1 and 4 streams)
//   tbf         Linux bridge + tbf at the configured rate: reference TCP (4 streams) and UDP rate
//   link        the configured link: ping RTT vs delay + base RTT, TCP 1 and 4 streams vs rate
//               (iperf3 -C tcp_cc, after iperf_omit of slow start), saturating UDP (steady-window
//               rate with a 95 % t interval, loss), release lateness/earliness from the data plane
//   delay_only  same delay, no rate limit, vs plain io-forwarding: throughput_samples adjacent
//               pairs (alternating order); verdict: median of the pairs' TCP 4-stream goodput ratios
//               (the data plane's work per frame per sample, as a diagnostic)
//   gilbert     configured rate, Gilbert-Elliott loss, UDP below the rate: loss rate and mean burst
//               length vs theory within 3 standard errors derived from the frames and runs seen
//               (emulator/stats/loss_check.h), fresh seed per run
// Each measurement is a plain number with its definition next to it in the JSON report.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/dpdk/netns.h"
#include "emulator/stats/binomial.h"

namespace CLI {
class App;
}  // namespace CLI

namespace geotb::emu {

struct FidelityConfig {
  NetTopology topo;                          ///< measured from wan[0].from to wan[0].to (dcs[0] -> dcs[1])
  std::string emulate_bin = "geotb-emulate"; ///< path of the data-plane binary
  std::string udpgen_bin = "geotb-udpgen";   ///< path of the UDP sender/receiver
  int tool_nice = -10;                       ///< nice of ping/iperf3/udpgen (0 = leave alone)
  std::string work_dir = "/tmp";             ///< logs and per-run JSON files go here
  std::chrono::seconds iperf_time{5};        ///< per iperf3 run, measured part
  /// iperf3 --omit: seconds of TCP slow start before the measured part (at 30 ms RTT the first
  /// second of 4 cubic streams carried ~700 Mbit/s, the following ones ~950 at 1 Gbit/s).
  std::chrono::seconds iperf_omit{2};
  int ping_count = 100;                      ///< echo requests, 10 ms apart
  double udp_overload = 1.05;                ///< saturating UDP offers this x the configured wire rate
  double ge_udp_load = 0.5;                  ///< Gilbert run offers this x the rate (no queue drops)
  /// Gilbert run datagram payload, whatever the MTU: the loss process is per frame, so small
  /// frames give more loss runs per second (at MTU 9000 with 8972-byte datagrams a 5 s run had
  /// ~330 runs: a 3-sigma bound of +-12 % on the mean run length; 1472 bytes give ~1950, +-6 %).
  /// 0 = the payload that offers ge_frames_per_s at ge_udp_load x the rate, in [64, 1472]: 1472
  /// at 1 Gbit/s, 246 at 200 Mbit/s (with 1472 there a 4 s run saw 318 runs and could not
  /// resolve 10 %: 3 se of the mean run 0.58 > 0.4, of the loss rate 0.0083 > 0.0038).
  uint32_t ge_payload = 0;
  double ge_frames_per_s = 40000;
  LossConfig ge{LossConfig::Kind::kGilbertElliott, 0.0, 0.01, 0.25, 0.0, 1.0};  ///< mean burst 4
  /// Seed of the data plane's random streams in the Gilbert run; 0 = a fresh one each run
  /// (recorded in the report). A fixed seed makes every run draw the same loss pattern, so a
  /// 3-sigma check would fail the same way every time for the seeds it fails for.
  uint64_t ge_seed = 0;
  bool run_tbf = true, run_delay_only = true, run_gilbert = true;
  /// Delay-only vs io-forward: adjacent pairs, this many, in alternating order. TCP goodput of both
  /// is bound by the CPU the TCP endpoints share (forwarding is not the bottleneck on 2 vCPUs),
  /// which drifts between runs (one 5 s sample of either varied by +-20 % across runs, while
  /// within a run the per-second goodput is steady): the verdict is the median of the pairs'
  /// ratios. A pair falls below 0.9 by chance with some probability p (5 of 38 pairs measured
  /// before); the median of 7 then does with P(Binomial(7, p) >= 4): 1.2 % at p = 0.15, against
  /// 6.1 % for the median of 3 (P(Binomial(3, p) >= 2)).
  int throughput_samples = 7;
  /// SCHED_FIFO priority of the data plane (0 = normal); -1: 0 (busy polling) on a shielded CPU,
  /// else 50 (resolve_rt_priority)
  int rt_priority = -1;
  /// TCP congestion control of the iperf3 runs (iperf3 -C); empty = the namespace default, which
  /// follows the host's net.ipv4.tcp_congestion_control (bbr on the build machine). Linux's own
  /// default is cubic; BBR v1 keeps ~2 BDP in flight and loses ~10 % at a one-BDP drop-tail queue.
  std::string tcp_cc = "cubic";
};

/// Brings the namespaces up, runs everything, tears them down (also on error). Returns the report.
/// Throws std::runtime_error on setup failures (commands and output named).
nlohmann::json run_fidelity(const FidelityConfig& cfg);

/// The command-line options of a fidelity run, shared by `geotb fidelity` and
/// `geotb-netlab fidelity` (add_fidelity_options registers them); the defaults are
/// FidelityConfig's.
struct FidelityOptions {
  std::string prefix = "gtbfid";  ///< namespace name prefix (its own, so a `net up` session survives)
  std::string emulate_bin;        ///< geotb-emulate path; "" = the command's default (next to itself)
  int iperf_seconds = static_cast<int>(FidelityConfig{}.iperf_time.count());
  int iperf_omit_seconds = static_cast<int>(FidelityConfig{}.iperf_omit.count());
  int throughput_samples = FidelityConfig{}.throughput_samples;
  int ping_count = FidelityConfig{}.ping_count;
  int rt_priority = FidelityConfig{}.rt_priority;
  int tool_nice = FidelityConfig{}.tool_nice;
  std::string tcp_cc = FidelityConfig{}.tcp_cc;
  bool check = false;  ///< the command fails (exit 1) unless every verdict holds (in every run)
  bool no_tbf = false, no_gilbert = false, no_delay_only = false;
  bool no_pin = false;  ///< let the data plane run on every CPU (see NetTopology::pin_emulator)
  bool no_shield = false;  ///< leave other processes on the data plane's CPU (see NetTopology::shield_cpu)
  int repeat = 1;       ///< run the suite this many times and print each verdict's pass count
};

/// Registers --prefix, --emulate-bin, --iperf-seconds, --iperf-omit, --throughput-samples,
/// --ping-count, --rt-priority, --tool-nice, --tcp-cc, --check, --no-tbf, --no-gilbert and
/// --no-delay-only on `cmd`, bound to `o` (which must outlive the parse).
void add_fidelity_options(CLI::App& cmd, FidelityOptions& o);

/// The run's configuration: `topo`, the options, `emulate_bin` (resolved by the caller) and
/// geotb-udpgen from the same directory (from PATH when emulate_bin has no directory).
FidelityConfig fidelity_config(const FidelityOptions& o, const NetTopology& topo, const std::string& emulate_bin);

/// The names of the report's verdicts that are false (what --check fails on).
std::vector<std::string> failed_verdicts(const nlohmann::json& report);

/// What `geotb fidelity` and `geotb-netlab fidelity` do once the configuration is made: runs the
/// suite o.repeat times (namespaces up and down each time). `decorate` adds the caller's fields to
/// each report. One run: the report goes to `out` (stdout when empty) and its verdicts are printed.
/// N runs: run k's report to `out` with "-k" before its extension (default fidelity-run-k.json),
/// a line per run (its failed verdicts), then each verdict's pass count "k/N" and the time taken;
/// the pass counts also go to `out` with "-repeat" before its extension. A run that throws counts
/// as failing every verdict (its error is printed). Returns the exit status: 1 under --check when
/// a verdict failed in any run, else 0.
int fidelity_command(const FidelityOptions& o, const FidelityConfig& fc, const std::string& out,
                     const std::function<void(nlohmann::json&)>& decorate);

}  // namespace geotb::emu
