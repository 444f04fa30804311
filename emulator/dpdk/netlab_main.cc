// geotb-netlab: namespaces and fidelity without the harness (no libtorch needed).
//   geotb-netlab up       --dcs a,b --rate 1Gbps --rtt 30ms [--prefix gtb]
//   geotb-netlab down     [--prefix gtb]
//   geotb-netlab fidelity --dcs a,b --rate 1Gbps --rtt 30ms [--out report.json] [--prefix gtbfid]
//                         (the options of `geotb fidelity`: emulator/dpdk/fidelity.h FidelityOptions)
// `geotb net` / `geotb fidelity` do the same from a scenario file.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <sstream>

#include "common/cli_units.h"
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
  using namespace std::chrono_literals;
  CLI::App app{"geotb-netlab: DC namespaces and emulator fidelity"};
  app.require_subcommand(1);
  std::string prefix = "gtb", dcs_arg = "a,b", out;
  double rate_bps = 1e9, loss = 0;
  std::chrono::nanoseconds rtt = 30ms;
  uint64_t queue_bytes = 0;
  uint32_t mtu = 1500;
  auto add_topo = [&](CLI::App* s) {
    s->add_option("--dcs", dcs_arg, "comma-separated data-center names");
    geotb::common::add_bandwidth_option(*s, "--rate", rate_bps, "WAN rate per direction (e.g. 1Gbps; 0bps = unlimited)");
    geotb::common::add_duration_option(*s, "--rtt", rtt, "WAN round-trip propagation delay (e.g. 30ms)");
    geotb::common::add_probability_option(*s, "--loss", loss, "Bernoulli loss per direction (e.g. 1e-4)");
    s->add_option("--mtu", mtu, "MTU of the DC interfaces (576..9000)");
    geotb::common::add_bytes_option(*s, "--queue-bytes", queue_bytes,
                                    "bottleneck queue (e.g. 1MB; 0 = one bandwidth-RTT product in fidelity)");
  };
  CLI::App* up = app.add_subcommand("up", "create the namespaces");
  up->add_option("--prefix", prefix, "namespace name prefix");
  add_topo(up);
  CLI::App* down = app.add_subcommand("down", "remove the namespaces (idempotent)");
  down->add_option("--prefix", prefix, "namespace name prefix");
  CLI::App* fid = app.add_subcommand("fidelity", "measure the emulator against its configuration");
  FidelityOptions fo;
  add_topo(fid);
  add_fidelity_options(*fid, fo);
  fid->add_option("--out", out, "JSON report path (default stdout)");
  CLI11_PARSE(app, argc, argv);

  try {
    if (down->parsed()) {
      std::cout << "removed " << net_down(prefix) << " namespaces\n";
      return 0;
    }
    NetTopology t;
    t.prefix = fid->parsed() ? fo.prefix : prefix;
    t.mtu = mtu;
    std::stringstream ss(dcs_arg);
    for (std::string s; std::getline(ss, s, ',');) t.dcs.push_back(s);
    LinkConfig link;
    link.rate_bps = rate_bps;
    link.delay = rtt / 2;
    if (loss > 0) link.loss = LossConfig{LossConfig::Kind::kBernoulli, loss};
    link.queue_bytes = queue_bytes;
    t.wan = {{0, 1, link}, {1, 0, link}};
    if (up->parsed()) {
      const NetLayout L = net_up(t);
      for (const auto& d : L.dcs) std::cout << d.name << ": netns " << d.ns << " " << d.ifname << " " << d.address << "/16 <-> " << L.emu_ns << " " << d.emu_if << "\n";
      std::cout << "socket buffers " << L.socket_buffer_bytes << " bytes\n";
      return 0;
    }
    const FidelityConfig fc =
        fidelity_config(fo, t, fo.emulate_bin.empty() ? self_dir() + "/geotb-emulate" : fo.emulate_bin);
    return fidelity_command(fo, fc, out, [](nlohmann::json&) {});
  } catch (const std::exception& e) {
    std::cerr << "geotb-netlab: " << e.what() << "\n";
    return 2;
  }
}
