// geotb net up|down: namespaces per data center plus one for the emulator, from a scenario.
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "common/child_process.h"
#include "emulator/dpdk/netns.h"
#include "emulator/dpdk/proc.h"
#include "harness/net_commands.h"
#include "harness/data_plane_options.h"
#include "harness/net_topology.h"
#include "harness/scenario.h"

void register_net_command(CLI::App& app) {
  using namespace geotb;
  auto* net = app.add_subcommand("net", "network namespaces for the DPDK WAN emulator (root)");
  net->require_subcommand(1);

  struct UpOpts {
    std::string scenario, prefix = "gtb", emulate_bin;
    bool emulate = false, no_pin = false, no_shield = false;
    int rt_priority = -1;
  };
  auto up_opts = std::make_shared<UpOpts>();
  auto* up = net->add_subcommand("up", "create one namespace per data center and one for the emulator");
  up->add_option("scenario", up_opts->scenario, "scenario file")->required()->check(CLI::ExistingFile);
  up->add_option("--prefix", up_opts->prefix, "namespace name prefix (<= 8 characters)");
  up->add_flag("--emulate", up_opts->emulate, "also start geotb-emulate in the background (stopped by `net down`)");
  up->add_option("--emulate-bin", up_opts->emulate_bin, "geotb-emulate path (default: next to geotb)");
  geotb::harness::add_data_plane_cpu_options(*up, up_opts->rt_priority, &up_opts->no_pin, up_opts->no_shield,
                                             "until `net down`");
  up->callback([up_opts] {
    const harness::Scenario sc = harness::load_scenario(up_opts->scenario);
    emu::NetTopology t = harness::net_topology(sc, up_opts->prefix);
    t.pin_emulator = !up_opts->no_pin;
    t.shield_cpu = up_opts->emulate && !up_opts->no_shield;
    const emu::NetLayout L = emu::net_up(t);
    for (const auto& d : L.dcs)
      fmt::print("{:>12}: netns {} dev {} {}/16 (subnet routed by the emulator: {}.{}.{}.0/24) <-> {} dev {}\n", d.name, d.ns,
                 d.ifname, d.address, d.subnet.addr >> 24, (d.subnet.addr >> 16) & 255, (d.subnet.addr >> 8) & 255, L.emu_ns,
                 d.emu_if);
    fmt::print("socket buffers (tcp_rmem/tcp_wmem max): {} bytes; {}, tools on CPUs {}\n", L.socket_buffer_bytes,
               L.pinned ? fmt::format("emulator pinned to CPU {}", L.emulator_cpu) : std::string("emulator not pinned"),
               L.tool_cpus);
    const std::string bin = up_opts->emulate_bin.empty() ? harness::find_emulate_bin() : up_opts->emulate_bin;
    const std::string json_path = "/tmp/" + t.prefix + "-emulate.json", log_path = "/tmp/" + t.prefix + "-emulate.log";
    if (up_opts->emulate)
      fmt::print("CPU shield: {}\n", L.shield.active ? fmt::format("CPU {} for the emulator alone ({} processes and {} interrupts moved off it until `net down`)",
                                                                  L.shield.cpu, L.shield.processes_moved, L.shield.irqs_moved)
                                                      : "none: " + L.shield.why_not);
    const auto argv = emu::emulator_launch(
        L, emu::emulator_command(t, L, bin, json_path, emu::resolve_rt_priority(up_opts->rt_priority, L.shield), t.prefix + "-emu"));
    if (up_opts->emulate) {
      common::ChildOptions o;
      o.argv = argv;
      o.log_path = log_path;
      o.new_session = true;  // outlives this command and its terminal
      common::ChildProcess child(o);
      // Until it forwards, to say how it runs (real-time priority refused, pinning): its log says.
      std::string log;
      for (int i = 0; i < 400 && log.find("running") == std::string::npos && child.running(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // waiting for a process to start
        std::ifstream f(log_path);
        log.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      }
      if (log.find("running") == std::string::npos)
        throw std::runtime_error(fmt::format("geotb-emulate did not start ({}): {}", log_path, log));
      fmt::print("{}", log);
      fmt::print("geotb-emulate started, pid {}; log {}; final report {} when stopped (geotb net down)\n", child.release(),
                 log_path, json_path);
    } else {
      fmt::print("start the data plane with:\n  {}\n", emu::join(argv));
    }
  });

  struct DownOpts {
    std::string scenario, prefix = "gtb";
  };
  auto down_opts = std::make_shared<DownOpts>();
  auto* down = net->add_subcommand("down", "remove the namespaces and what runs in them (idempotent)");
  down->add_option("scenario", down_opts->scenario, "scenario file (only checked; the prefix names the namespaces)");
  down->add_option("--prefix", down_opts->prefix, "namespace name prefix");
  down->callback([down_opts] {
    if (!down_opts->scenario.empty()) harness::load_scenario(down_opts->scenario);
    const int n = emu::net_down(down_opts->prefix);
    fmt::print("removed {} namespaces with prefix {}-\n", n, down_opts->prefix);
  });
}
