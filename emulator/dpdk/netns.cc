#include "emulator/dpdk/netns.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "emulator/dpdk/link_spec_parse.h"
#include "emulator/dpdk/proc.h"

namespace geotb::emu {

uint64_t socket_buffer_for(const LinkConfig& there, const LinkConfig& back) {
  const double rate = std::max(there.rate_bps > 0 ? there.rate_bps : 10e9, back.rate_bps > 0 ? back.rate_bps : 10e9);
  const double rtt_s = static_cast<double>((there.delay + back.delay).count()) / 1e9;
  const double bdp = rate * rtt_s / 8;
  return std::clamp<uint64_t>(static_cast<uint64_t>(4 * bdp), uint64_t{4} << 20, uint64_t{256} << 20);
}

std::vector<int> allowed_cpus() {
  std::vector<int> v;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) v.push_back(i);
  if (v.empty()) v.push_back(0);
  return v;
}

NetLayout net_layout(const NetTopology& t) {
  if (t.prefix.empty() || t.prefix.size() > 8 || t.prefix.find_first_of("/ -") != std::string::npos)
    throw std::invalid_argument("prefix: \"" + t.prefix + "\": 1..8 characters, no '/', ' ' or '-'");
  if (t.dcs.size() < 2 || t.dcs.size() > 200) throw std::invalid_argument("dcs: " + std::to_string(t.dcs.size()) + ": need 2..200");
  auto reverse_of = [&](const DirectedLink& l) -> const DirectedLink* {
    for (const DirectedLink& r : t.wan)
      if (r.from == l.to && r.to == l.from) return &r;
    return nullptr;
  };
  for (size_t i = 0; i < t.wan.size(); ++i) {
    const DirectedLink& l = t.wan[i];
    const int n = static_cast<int>(t.dcs.size());
    const std::string name = "wan[" + std::to_string(i) + "]: " + std::to_string(l.from) + ">" + std::to_string(l.to);
    if (l.from < 0 || l.from >= n || l.to < 0 || l.to >= n || l.from == l.to)
      throw std::invalid_argument(name + ": not two distinct DCs");
    if (!reverse_of(l)) throw std::invalid_argument(name + ": no link back");
  }
  if (t.mtu < 576 || t.mtu > 9000) throw std::invalid_argument("mtu: " + std::to_string(t.mtu) + ": 576..9000");
  NetLayout L;
  L.emu_ns = t.prefix + "-emu";
  L.mtu = t.mtu;
  for (size_t i = 0; i < t.dcs.size(); ++i) {
    DcPlace d;
    d.name = t.dcs[i];
    d.ns = t.prefix + "-" + std::to_string(i);
    d.ifname = "dc";
    d.address = "10." + std::to_string(t.net) + "." + std::to_string(i) + ".1";
    d.subnet = Ipv4Prefix{(10u << 24) | (uint32_t{t.net} << 16) | (static_cast<uint32_t>(i) << 8), 24};
    d.emu_if = "e" + std::to_string(i);
    L.dcs.push_back(d);
  }
  const std::vector<int> cpus = allowed_cpus();
  L.emulator_cpu = t.emulator_cpu >= 0 ? t.emulator_cpu : cpus.back();
  if (std::find(cpus.begin(), cpus.end(), L.emulator_cpu) == cpus.end())
    throw std::invalid_argument("emulator_cpu: " + std::to_string(t.emulator_cpu) + ": not among the CPUs this process may use (" +
                                std::to_string(cpus.size()) + " allowed)");
  L.pinned = t.pin_emulator && cpus.size() > 1;
  L.shield.why_not = "not set up (net_up shields)";
  for (int i : cpus)
    if (i != L.emulator_cpu || !L.pinned) {
      L.tool_cpu_list.push_back(i);
      if (!L.tool_cpus.empty()) L.tool_cpus += ',';
      L.tool_cpus += std::to_string(i);
    }
  L.socket_buffer_bytes = uint64_t{4} << 20;
  for (const DirectedLink& l : t.wan)
    L.socket_buffer_bytes = std::max(L.socket_buffer_bytes, socket_buffer_for(l.config, reverse_of(l)->config));
  return L;
}

int net_down(const std::string& prefix) {
  const CmdResult list = run_cmd({"ip", "netns", "list"});
  std::istringstream is(list.output);
  std::string line;
  std::vector<std::string> victims;
  while (std::getline(is, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix + "-", 0) == 0) victims.push_back(name);
  }
  // Processes we left inside (emulator, iperf3 servers after a crash) keep veths alive. SIGTERM
  // first, so that a data plane started by `net up --emulate` writes its final report; SIGKILL
  // what is still there after 3 s.
  std::vector<pid_t> inside;
  for (const auto& ns : victims) {
    const CmdResult pids = run_cmd({"ip", "netns", "pids", ns});
    std::istringstream ps(pids.output);
    for (pid_t pid; ps >> pid;) inside.push_back(pid);
  }
  auto alive = [](pid_t pid) {
    if (kill(pid, 0) != 0) return false;
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    std::getline(st, s);
    const size_t close = s.rfind(')');
    return close == std::string::npos || close + 2 >= s.size() || s[close + 2] != 'Z';  // a zombie is gone
  };
  for (pid_t pid : inside) kill(pid, SIGTERM);
  for (int i = 0; i < 60 && std::any_of(inside.begin(), inside.end(), alive); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  for (pid_t pid : inside)
    if (alive(pid)) kill(pid, SIGKILL);
  for (const auto& ns : victims) run_cmd({"ip", "netns", "del", ns});
  release_cpu_shield(prefix);
  return static_cast<int>(victims.size());
}

std::vector<std::string> emulator_launch(const NetLayout& L, std::vector<std::string> argv) {
  return in_shielded_cpu(L.shield, in_ns(L.emu_ns, std::move(argv)));
}

std::vector<std::string> emulator_base_command(const NetLayout& L, const std::string& emulate_bin, const std::string& file_prefix) {
  // Jumbo frames: 16 KiB af_packet frames and mbufs, fewer of them (plain io forwarding between
  // two namespaces on 2 cores: 4.7 Gbit/s at MTU 9000 with these sizes, 1.9 Gbit/s at MTU 1500).
  const bool jumbo = L.mtu > 1500;
  // Pinned: EAL's main lcore (the poller) on emulator_cpu. Not pinned: lcore 0 on every CPU the
  // tools may use (which is then every allowed one).
  std::vector<std::string> argv{emulate_bin, "--no-huge", "--no-pci", "-m", jumbo ? "1024" : "512", "--file-prefix=" + file_prefix};
  if (L.pinned) {
    argv.insert(argv.end(), {"-l", std::to_string(L.emulator_cpu)});
  } else {
    argv.push_back("--lcores=0@(" + L.tool_cpus + ")");
  }
  argv.push_back("--log-level=warning");
  const std::string ring = jumbo ? ",blocksz=16384,framesz=16384,framecnt=1024" : ",framecnt=4096";
  for (size_t i = 0; i < L.dcs.size(); ++i)
    argv.push_back("--vdev=net_af_packet" + std::to_string(i) + ",iface=" + L.dcs[i].emu_if + ring + ",qdisc_bypass=1");
  argv.push_back("--");
  for (size_t i = 0; i < L.dcs.size(); ++i) {
    const Ipv4Prefix& p = L.dcs[i].subnet;
    std::ostringstream os;
    os << "d" << i << "=net_af_packet" << i << "," << (p.addr >> 24) << "." << ((p.addr >> 16) & 255) << "."
       << ((p.addr >> 8) & 255) << "." << (p.addr & 255) << "/" << int(p.len);
    argv.insert(argv.end(), {"--port", os.str()});
  }
  if (jumbo) argv.insert(argv.end(), {"--mbuf-data-room", "16512", "--pool-size", "16383"});
  return argv;
}

std::vector<std::string> emulator_command(const NetTopology& t, const NetLayout& L, const std::string& emulate_bin,
                                          const std::string& json_path, int rt_priority, const std::string& file_prefix,
                                          bool timeline_on_signal) {
  std::vector<std::string> argv = emulator_base_command(L, emulate_bin, file_prefix);
  auto dc = [&](int i) { return "d" + std::to_string(i); };
  for (const DirectedLink& l : t.wan)
    argv.insert(argv.end(), {"--link", dc(l.from) + ">" + dc(l.to) + ":" + link_spec_text(l.config)});
  for (const NetChange& ch : t.timeline)
    argv.insert(argv.end(), {"--change", change_spec_text(ch.change) + ",link=" + dc(ch.a) + "<>" + dc(ch.b)});
  if (rt_priority > 0) argv.insert(argv.end(), {"--rt-priority", std::to_string(rt_priority)});
  if (timeline_on_signal) argv.insert(argv.end(), {"--timeline-start", "sigusr1"});
  argv.insert(argv.end(), {"--stats-interval", "0s", "--json", json_path});
  return argv;
}

NetLayout net_up(const NetTopology& t) {
  net_down(t.prefix);  // first: it releases a shield of this prefix, which changes the CPUs allowed
  NetLayout L = net_layout(t);
  try {
    const std::string mtu = std::to_string(t.mtu);
    const std::string buf = std::to_string(L.socket_buffer_bytes);
    run_checked({"ip", "netns", "add", L.emu_ns});
    run_checked(in_ns(L.emu_ns, {"ip", "link", "set", "lo", "up"}));
    run_checked(in_ns(L.emu_ns, {"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"}));
    for (const DcPlace& d : L.dcs) {
      run_checked({"ip", "netns", "add", d.ns});
      run_checked(in_ns(d.ns, {"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"}));
      run_checked(in_ns(d.ns, {"sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"}));
      run_checked({"ip", "link", "add", d.ifname, "netns", d.ns, "mtu", mtu, "type", "veth", "peer", "name", d.emu_if,
                   "netns", L.emu_ns, "mtu", mtu});
      run_checked(in_ns(d.ns, {"ip", "link", "set", "lo", "up"}));
      run_checked(in_ns(d.ns, {"ip", "addr", "add", d.address + "/16", "dev", d.ifname}));
      run_checked(in_ns(d.ns, {"ip", "link", "set", d.ifname, "up"}));
      // TCP through an af_packet forwarder: no checksum offload, no segmentation offloads.
      run_checked(in_ns(d.ns, {"ethtool", "-K", d.ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off"}));
      run_checked(in_ns(L.emu_ns, {"ethtool", "-K", d.emu_if, "gro", "off", "tso", "off", "gso", "off", "tx", "off"}));
      run_checked(in_ns(L.emu_ns, {"ip", "link", "set", d.emu_if, "up"}));
      for (const char* k : {"net.core.rmem_max", "net.core.wmem_max"})
        run_cmd(in_ns(d.ns, {"sysctl", "-q", "-w", std::string(k) + "=" + buf}));  // global on some kernels: best effort
      run_checked(in_ns(d.ns, {"sysctl", "-q", "-w", "net.ipv4.tcp_rmem=4096 131072 " + buf}));
      run_checked(in_ns(d.ns, {"sysctl", "-q", "-w", "net.ipv4.tcp_wmem=4096 65536 " + buf}));
      run_checked(in_ns(d.ns, {"sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1"}));
      // RPS: receive processing of frames the data plane sends into this DC off the emulator CPU.
      uint64_t mask = 0;
      for (int i : L.tool_cpu_list)
        if (i < 64) mask |= uint64_t{1} << i;
      if (mask && L.pinned) {
        char hex[32];
        snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(mask));
        run_checked(in_ns(d.ns, {"sh", "-c", std::string("echo ") + hex + " > /sys/class/net/" + d.ifname + "/queues/rx-0/rps_cpus"}));
      }
    }
  } catch (...) {
    net_down(t.prefix);
    throw;
  }
  if (!L.pinned)
    L.shield.why_not = "the data plane is not pinned";
  else if (!t.shield_cpu)
    L.shield.why_not = "not asked (--no-shield)";
  else
    L.shield = shield_cpu(L.emulator_cpu, t.prefix);
  return L;
}

}  // namespace geotb::emu
