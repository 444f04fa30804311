// geotb fidelity <scenario>: measure the DPDK emulator against the scenario's first WAN link.
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "emulator/dpdk/fidelity.h"
#include "harness/net_commands.h"
#include "harness/scenario.h"

namespace geotb::harness {
emu::NetTopology net_topology(const Scenario& sc, const std::string& prefix);
std::string find_emulate_bin();
}  // namespace geotb::harness

void register_fidelity_command(CLI::App& app) {
  using namespace geotb;
  struct Opts {
    std::string scenario, out, prefix = "gtbfid", emulate_bin, tcp_cc = "cubic";
    int iperf_seconds = 5, iperf_omit = 2, throughput_samples = 2, ping_count = 100, rt_priority = 50;
    bool check = false, no_tbf = false, no_gilbert = false, no_delay_only = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("fidelity", "measure the DPDK WAN emulator against the scenario's first WAN link (root)");
  cmd->add_option("scenario", o->scenario, "scenario file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "JSON report (default reports/fidelity-<scenario name>.json)");
  cmd->add_option("--prefix", o->prefix, "namespace name prefix");
  cmd->add_option("--emulate-bin", o->emulate_bin, "geotb-emulate path (default: next to geotb)");
  cmd->add_option("--iperf-seconds", o->iperf_seconds, "seconds per iperf3 run (measured part)");
  cmd->add_option("--iperf-omit", o->iperf_omit, "seconds of slow start before the measured part (iperf3 -O)");
  cmd->add_option("--throughput-samples", o->throughput_samples, "io-forward and delay-only TCP samples each, alternating");
  cmd->add_option("--ping-count", o->ping_count, "echo requests per ping run");
  cmd->add_option("--rt-priority", o->rt_priority, "SCHED_FIFO priority of the data plane (0 = normal)");
  cmd->add_flag("--check", o->check, "exit 1 unless every verdict holds");
  cmd->add_flag("--no-tbf", o->no_tbf, "skip the Linux tbf reference");
  cmd->add_flag("--no-gilbert", o->no_gilbert, "skip the Gilbert-Elliott run");
  cmd->add_flag("--no-delay-only", o->no_delay_only, "skip the delay-only run");
  cmd->add_option("--tcp-cc", o->tcp_cc, "TCP congestion control of the iperf3 runs (\"\" = the namespace default)");
  cmd->callback([o] {
    const harness::Scenario sc = harness::load_scenario(o->scenario);
    emu::FidelityConfig fc;
    fc.topo = harness::net_topology(sc, o->prefix);
    fc.emulate_bin = o->emulate_bin.empty() ? harness::find_emulate_bin() : o->emulate_bin;
    fc.udpgen_bin = fc.emulate_bin.find('/') == std::string::npos
                        ? "geotb-udpgen"
                        : fc.emulate_bin.substr(0, fc.emulate_bin.rfind('/') + 1) + "geotb-udpgen";
    fc.iperf_time = std::chrono::seconds{o->iperf_seconds};
    fc.iperf_omit = std::chrono::seconds{o->iperf_omit};
    fc.throughput_samples = o->throughput_samples;
    fc.ping_count = o->ping_count;
    fc.rt_priority = o->rt_priority;
    fc.run_tbf = !o->no_tbf;
    fc.run_gilbert = !o->no_gilbert;
    fc.run_delay_only = !o->no_delay_only;
    fc.tcp_cc = o->tcp_cc;
    nlohmann::json rep = emu::run_fidelity(fc);
    rep["schema"] = "geotb-fidelity/1";
    rep["scenario"] = {{"name", sc.name}, {"hash", sc.hash}, {"path", o->scenario}};
    const std::string out = o->out.empty() ? "reports/fidelity-" + sc.name + ".json" : o->out;
    std::ofstream(out) << rep.dump(2) << "\n";
    fmt::print("{}\nreport: {}\n", rep["verdicts"].dump(2), out);
    if (o->check)
      for (auto& [k, v] : rep["verdicts"].items())
        if (v.is_boolean() && !v.get<bool>()) throw CLI::RuntimeError(fmt::format("fidelity verdict {} is false", k), 1);
  });
}
