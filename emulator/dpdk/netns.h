// Network namespaces for the DPDK emulator: one per data center plus one for the emulator,
// joined by veth pairs created directly inside the namespaces (the host's own interfaces and
// addresses are never touched).
//
//   <prefix>-<i>   (DC i)    interface "dc"   10.<net>.<i>.1/16, offloads off (TCP through the
//                                            af_packet forwarder needs it), socket buffers = BDP
//   <prefix>-emu             interface "e<i>" no address, GRO off; geotb-emulate opens it with
//                                            net_af_packet and routes 10.<net>.<i>.0/24 to it
//
// Every DC is on-link with every other (one /16), so ARP crosses the emulator like any frame.
// net_down() is idempotent and also cleans up after a crash: it kills what still runs inside
// the namespaces (by pid) and deletes every namespace whose name starts with "<prefix>-".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/dpdk/cpu_shield.h"
#include "emulator/dpdk/route.h"
#include "common/link_config.h"
#include "emulator/link/link_model.h"

namespace geotb::emu {

/// A scheduled change of the WAN link between DCs a and b (both directions), `change.at` counted
/// from the data plane's start.
struct NetChange {
  int a = 0, b = 1;
  LinkChange change;
};

struct NetTopology {
  std::string prefix = "gtb";          ///< namespace name prefix, <= 8 characters
  std::vector<std::string> dcs;        ///< data-center names (reports only; namespaces are numbered)
  /// The emulated links, one per direction; each needs its reverse (TCP). Also size the socket
  /// buffers (BDP).
  std::vector<DirectedLink> wan;
  std::vector<NetChange> timeline;     ///< scheduled link changes
  uint8_t net = 77;                    ///< second octet of the 10.x.0.0/16 used inside the namespaces
  uint32_t mtu = 1500;                 ///< bytes, 576..9000 (above 1500 the data plane uses 16 KiB mbufs)
  /// CPU the data plane polls on. Frames the emulator sends into a DC would otherwise be
  /// received (softirq) on that CPU; RPS on the DC interfaces steers them to the other CPUs.
  /// -1: the last CPU this process may run on (its affinity mask, e.g. a cgroup's cpuset).
  int emulator_cpu = -1;
  /// Pin the data plane to emulator_cpu (EAL -l) and keep the traffic tools, workers and RPS off
  /// it. false: the data plane may run on every allowed CPU (EAL --lcores 0@(...)), and so may
  /// everything else. With one allowed CPU there is nothing to keep apart: not pinned.
  bool pin_emulator = true;
  /// With pin_emulator: also move every other process off emulator_cpu while the namespaces exist
  /// (cpu_shield.h), so that nothing competes with the data plane for it. Where the host refuses,
  /// the layout says why and the data plane is only pinned.
  bool shield_cpu = true;
};

struct DcPlace {
  std::string name;       ///< data-center name
  std::string ns;         ///< its namespace
  std::string ifname;     ///< its interface ("dc")
  std::string address;    ///< e.g. "10.77.0.1"
  Ipv4Prefix subnet;      ///< routed to its port by the emulator
  std::string emu_if;     ///< the peer interface inside the emulator namespace
};

struct NetLayout {
  std::string emu_ns;
  std::vector<DcPlace> dcs;
  uint64_t socket_buffer_bytes = 0;  ///< tcp_rmem/tcp_wmem max and rmem/wmem_max in every DC
  int emulator_cpu = 0;              ///< resolved NetTopology::emulator_cpu (when pinned)
  bool pinned = true;                ///< the data plane has emulator_cpu to itself
  uint32_t mtu = 1500;
  std::vector<int> tool_cpu_list;    ///< the other allowed CPUs (every allowed one when not pinned)
  std::string tool_cpus;             ///< the same for taskset -c (e.g. "0")
  CpuShieldState shield;             ///< set by net_up (net_layout: not active, "not set up")
};

/// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

/// Names, addresses and buffer sizes, without creating anything. Throws std::invalid_argument.
NetLayout net_layout(const NetTopology& t);
/// Creates everything (after a net_down of the same prefix). Throws std::runtime_error naming
/// the failing command and its output; what was created is torn down first.
NetLayout net_up(const NetTopology& t);
/// Removes every namespace "<prefix>-*" and what runs inside, and releases the prefix's CPU shield
/// (and any stale one). Returns how many namespaces were removed.
int net_down(const std::string& prefix);
/// How to start the data plane `argv` (emulator_command or emulator_base_command): inside the
/// emulator namespace, and inside the shielded CPU's cpuset when the layout has one.
std::vector<std::string> emulator_launch(const NetLayout& L, std::vector<std::string> argv);
/// geotb-emulate, its EAL arguments, "--", the ports and the memory options for this layout
/// (links, mode and report path are for the caller to append).
std::vector<std::string> emulator_base_command(const NetLayout& L, const std::string& emulate_bin, const std::string& file_prefix);
/// The geotb-emulate command line (to run inside layout.emu_ns) for this topology: one
/// net_af_packet port per DC, every WAN link in both directions, the timeline as --change.
/// `timeline_on_signal`: the timeline's instants count from the SIGUSR1 the emulator receives
/// (--timeline-start sigusr1), not from its start.
std::vector<std::string> emulator_command(const NetTopology& t, const NetLayout& L, const std::string& emulate_bin,
                                          const std::string& json_path, int rt_priority, const std::string& file_prefix,
                                          bool timeline_on_signal = false);
/// Socket buffer size for a link and its reverse: 4 x bandwidth-delay product (the faster rate;
/// RTT = both delays), clamped to [4 MiB, 256 MiB]; an unlimited rate is sized as 10 Gbit/s.
uint64_t socket_buffer_for(const LinkConfig& there, const LinkConfig& back);

}  // namespace geotb::emu
