#include <CLI/CLI.hpp>

#include "emulator/dpdk/fidelity.h"

namespace geotb::emu {

void add_fidelity_options(CLI::App& cmd, FidelityOptions& o) {
  cmd.add_option("--prefix", o.prefix, "namespace name prefix")->capture_default_str();
  cmd.add_option("--emulate-bin", o.emulate_bin, "geotb-emulate path (default: next to this binary)");
  cmd.add_option("--iperf-seconds", o.iperf_seconds, "seconds per iperf3 run (measured part)")->capture_default_str();
  cmd.add_option("--iperf-omit", o.iperf_omit_seconds, "seconds of slow start before the measured part (iperf3 -O)")
      ->capture_default_str();
  cmd.add_option("--throughput-samples", o.throughput_samples,
                 "adjacent (io-forward, delay-only) pairs of TCP runs; the verdict is the median pair ratio")
      ->capture_default_str();
  cmd.add_option("--ping-count", o.ping_count, "echo requests per ping run")->capture_default_str();
  cmd.add_option("--rt-priority", o.rt_priority, "SCHED_FIFO priority of the data plane (0 = normal scheduling)")
      ->capture_default_str();
  cmd.add_option("--tool-nice", o.tool_nice, "nice of the traffic tools (negative: ahead of other work on their CPUs)")
      ->capture_default_str();
  cmd.add_option("--tcp-cc", o.tcp_cc, "TCP congestion control of the iperf3 runs (\"\" = the namespace default)")
      ->capture_default_str();
  cmd.add_flag("--check", o.check, "exit 1 unless every verdict holds (the fidelity suite)");
  cmd.add_flag("--no-tbf", o.no_tbf, "skip the Linux tbf reference");
  cmd.add_flag("--no-gilbert", o.no_gilbert, "skip the Gilbert-Elliott run");
  cmd.add_flag("--no-delay-only", o.no_delay_only, "skip the delay-only run");
}

FidelityConfig fidelity_config(const FidelityOptions& o, const NetTopology& topo, const std::string& emulate_bin) {
  FidelityConfig fc;
  fc.topo = topo;
  fc.emulate_bin = emulate_bin;
  // rfind gives npos without a '/', and npos + 1 == 0: then plain "geotb-udpgen", from PATH.
  fc.udpgen_bin = emulate_bin.substr(0, emulate_bin.rfind('/') + 1) + "geotb-udpgen";
  fc.tool_nice = o.tool_nice;
  fc.iperf_time = std::chrono::seconds{o.iperf_seconds};
  fc.iperf_omit = std::chrono::seconds{o.iperf_omit_seconds};
  fc.throughput_samples = o.throughput_samples;
  fc.ping_count = o.ping_count;
  fc.rt_priority = o.rt_priority;
  fc.run_tbf = !o.no_tbf;
  fc.run_gilbert = !o.no_gilbert;
  fc.run_delay_only = !o.no_delay_only;
  fc.tcp_cc = o.tcp_cc;
  return fc;
}

std::vector<std::string> failed_verdicts(const nlohmann::json& report) {
  std::vector<std::string> failed;
  for (const auto& [name, v] : report.at("verdicts").items())
    if (v.is_boolean() && !v.get<bool>()) failed.push_back(name);
  return failed;
}

}  // namespace geotb::emu
