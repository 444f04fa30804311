// geotb fidelity <scenario>: measure the DPDK emulator against the scenario's first WAN link.
#include <fmt/format.h>

#include <memory>

#include "emulator/dpdk/fidelity.h"
#include "harness/net_commands.h"
#include "harness/net_topology.h"
#include "harness/scenario.h"

void register_fidelity_command(CLI::App& app) {
  using namespace geotb;
  struct Opts {
    std::string scenario, out;
    emu::FidelityOptions fidelity;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("fidelity", "measure the DPDK WAN emulator against the scenario's first WAN link (root)");
  cmd->add_option("scenario", o->scenario, "scenario file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "JSON report (default reports/fidelity-<scenario name>.json; with --repeat N, -1 .. -N and "
                  "-repeat before .json)");
  emu::add_fidelity_options(*cmd, o->fidelity);
  cmd->callback([o] {
    const harness::Scenario sc = harness::load_scenario(o->scenario);
    const emu::FidelityOptions& f = o->fidelity;
    const emu::FidelityConfig fc = emu::fidelity_config(f, harness::net_topology(sc, f.prefix),
                                                        f.emulate_bin.empty() ? harness::find_emulate_bin() : f.emulate_bin);
    const std::string out = o->out.empty() ? "reports/fidelity-" + sc.name + ".json" : o->out;
    const int rc = emu::fidelity_command(f, fc, out, [&](nlohmann::json& rep) {
      rep["schema"] = "geotb-fidelity/1";
      rep["scenario"] = {{"name", sc.name}, {"hash", sc.hash}, {"path", o->scenario}};
    });
    if (rc != 0) throw CLI::RuntimeError("fidelity: a verdict is false (--check)", rc);
  });
}
