// geotb-netlab: namespaces and fidelity without the harness (no libtorch needed).
//   geotb-netlab up       --dcs a,b --rate 1Gbps --rtt 30ms [--prefix gtb]
//   geotb-netlab down     [--prefix gtb]
//   geotb-netlab fidelity --dcs a,b --rate 1Gbps --rtt 30ms [--out report.json]
// `geotb net` / `geotb fidelity` do the same from a scenario file.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "emulator/dpdk/cli_units.h"
#include "emulator/dpdk/fidelity.h"
#include "emulator/dpdk/netns.h"

namespace {
std::string self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}
}  // namespace

int main(int argc, char** argv) {
  using namespace geotb::emu;
  CLI::App app{"geotb-netlab: DC namespaces and emulator fidelity"};
  app.require_subcommand(1);
  std::string prefix = "gtb", dcs_arg = "a,b", rate = "1Gbps", rtt = "30ms", loss = "0", out, emulate_bin, queue = "0";
  int iperf_s = 5, iperf_omit = 2, throughput_samples = 3, ping_count = 100, rt_priority = 50, tool_nice = -10;
  std::string tcp_cc = "cubic";
  uint32_t mtu = 1500;
  bool no_tbf = false, no_ge = false, no_delay_only = false, check = false;
  auto add_topo = [&](CLI::App* s) {
    s->add_option("--prefix", prefix, "namespace name prefix");
    s->add_option("--dcs", dcs_arg, "comma-separated data-center names");
    s->add_option("--rate", rate, "WAN rate per direction (e.g. 1Gbps; 0 = unlimited)");
    s->add_option("--rtt", rtt, "WAN round-trip propagation delay (e.g. 30ms)");
    s->add_option("--loss", loss, "Bernoulli loss per direction (e.g. 1e-4)");
    s->add_option("--mtu", mtu, "MTU of the DC interfaces (576..9000)");
    s->add_option("--queue-bytes", queue, "bottleneck queue bytes (0 = one bandwidth-RTT product in fidelity)");
  };
  CLI::App* up = app.add_subcommand("up", "create the namespaces");
  add_topo(up);
  CLI::App* down = app.add_subcommand("down", "remove the namespaces (idempotent)");
  down->add_option("--prefix", prefix, "namespace name prefix");
  CLI::App* fid = app.add_subcommand("fidelity", "measure the emulator against its configuration");
  add_topo(fid);
  fid->add_option("--out", out, "JSON report path (default stdout)");
  fid->add_option("--emulate-bin", emulate_bin, "geotb-emulate path (default: next to this binary)");
  fid->add_option("--iperf-seconds", iperf_s, "seconds per iperf3 run (measured part)");
  fid->add_option("--iperf-omit", iperf_omit, "seconds of slow start before the measured part (iperf3 -O)");
  fid->add_option("--throughput-samples", throughput_samples, "adjacent (io-forward, delay-only) pairs of TCP runs; the verdict is the median pair ratio");
  fid->add_option("--ping-count", ping_count, "echo requests per ping run");
  fid->add_flag("--no-tbf", no_tbf, "skip the Linux tbf reference");
  fid->add_flag("--check", check, "exit 1 unless every verdict holds (the fidelity suite)");
  fid->add_option("--tool-nice", tool_nice, "nice of the traffic tools (negative: ahead of other work on their CPUs)");
  fid->add_option("--rt-priority", rt_priority, "SCHED_FIFO priority of the data plane (0 = normal scheduling)");
  fid->add_flag("--no-gilbert", no_ge, "skip the Gilbert-Elliott run");
  fid->add_option("--tcp-cc", tcp_cc, "TCP congestion control of the iperf3 runs (\"\" = the namespace default)");
  fid->add_flag("--no-delay-only", no_delay_only, "skip the delay-only run");
  CLI11_PARSE(app, argc, argv);

  try {
    if (down->parsed()) {
      std::cout << "removed " << net_down(prefix) << " namespaces\n";
      return 0;
    }
    NetTopology t;
    t.prefix = prefix;
    t.mtu = mtu;
    std::stringstream ss(dcs_arg);
    for (std::string s; std::getline(ss, s, ',');) t.dcs.push_back(s);
    WanLinkSpec w;
    w.a = 0;
    w.b = 1;
    w.a_to_b.rate_bps = parse_rate_bps(rate);
    w.a_to_b.delay = parse_duration_ns(rtt) / 2;
    const double p = parse_probability(loss);
    if (p > 0) w.a_to_b.loss = LossConfig{LossConfig::Kind::kBernoulli, p};
    w.a_to_b.queue_bytes = std::stoull(queue);
    w.b_to_a = w.a_to_b;
    t.wan.push_back(w);
    if (up->parsed()) {
      const NetLayout L = net_up(t);
      for (const auto& d : L.dcs) std::cout << d.name << ": netns " << d.ns << " " << d.ifname << " " << d.address << "/16 <-> " << L.emu_ns << " " << d.emu_if << "\n";
      std::cout << "socket buffers " << L.socket_buffer_bytes << " bytes\n";
      return 0;
    }
    FidelityConfig fc;
    fc.topo = t;
    fc.emulate_bin = emulate_bin.empty() ? self_dir() + "/geotb-emulate" : emulate_bin;
    fc.udpgen_bin = fc.emulate_bin.substr(0, fc.emulate_bin.rfind('/') + 1) + "geotb-udpgen";
    fc.tool_nice = tool_nice;
    fc.iperf_time = std::chrono::seconds{iperf_s};
    fc.iperf_omit = std::chrono::seconds{iperf_omit};
    fc.throughput_samples = throughput_samples;
    fc.ping_count = ping_count;
    fc.run_tbf = !no_tbf;
    fc.rt_priority = rt_priority;
    fc.run_gilbert = !no_ge;
    fc.run_delay_only = !no_delay_only;
    fc.tcp_cc = tcp_cc;
    const nlohmann::json rep = run_fidelity(fc);
    if (out.empty()) {
      std::cout << rep.dump(2) << "\n";
    } else {
      std::ofstream(out) << rep.dump(2) << "\n";
      std::cout << rep["verdicts"].dump(2) << "\n";
    }
    if (check) {
      for (auto& [k, v] : rep["verdicts"].items())
        if (v.is_boolean() && !v.get<bool>()) {
          std::cerr << "geotb-netlab: verdict " << k << " is false\n";
          return 1;
        }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "geotb-netlab: " << e.what() << "\n";
    return 2;
  }
}
