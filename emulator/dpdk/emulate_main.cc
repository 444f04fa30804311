// geotb-emulate: the WAN emulator's DPDK data plane as a standalone process.
//
//   geotb-emulate <EAL args> -- --port A=net_af_packet0,10.77.0.0/24 --port B=net_af_packet1,10.77.1.0/24
//       --link 'A<>B:rate=1Gbps,delay=15ms' [--io-forward] [--duration 10s] [--json out.json]
//
// Runs until SIGINT/SIGTERM (or --duration), then writes the final JSON report (rx, tx, drops by
// cause, release lateness, achieved rate per link, mbuf pool accounting) to --json or stdout.
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <CLI/CLI.hpp>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "common/atomic_file.h"
#include "common/cli_units.h"
#include "emulator/dpdk/dataplane.h"
#include "emulator/dpdk/link_spec_parse.h"

namespace {
std::atomic<bool> g_quit{false};
std::atomic<bool> g_timeline_go{false};
void on_signal(int) { g_quit.store(true); }
void on_timeline_signal(int) { g_timeline_go.store(true); }
// What the polling thread runs with, read back from the kernel: policy and priority, the CPUs
// it may run on (EAL -l pins it to one), and why a requested real-time priority was not applied.
nlohmann::json scheduling_report(int requested_rt, const std::string& rt_refused, bool busy_polling) {
  const int policy = sched_getscheduler(0);
  sched_param sp{};
  sched_getparam(0, &sp);
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string cpus;
  int ncpus = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) {
        cpus += (cpus.empty() ? "" : ",") + std::to_string(i);
        ++ncpus;
      }
  const bool fifo = policy == SCHED_FIFO;
  std::string summary = fifo ? "SCHED_FIFO " + std::to_string(sp.sched_priority) : "normal scheduling";
  if (!rt_refused.empty()) summary += " (real-time priority not permitted)";
  summary += ncpus == 1 ? ", pinned to CPU " + cpus : ", not pinned (CPUs " + cpus + ")";
  // A cpuset named geotb-cpu-*: the CPU is shielded (emulator/dpdk/cpu_shield.h), nothing movable
  // else runs on it.
  std::string cpuset;
  {
    std::ifstream f("/proc/self/cpuset");
    std::getline(f, cpuset);
  }
  const bool shielded = cpuset.find("/geotb-cpu-") == 0;
  if (shielded) summary += ", CPU shielded";
  summary += busy_polling ? ", busy polling" : ", sleeps when idle";
  nlohmann::json j{{"policy", fifo ? "SCHED_FIFO" : policy == SCHED_OTHER ? "SCHED_OTHER" : std::to_string(policy)},
                   {"rt_priority", fifo ? sp.sched_priority : 0}, {"rt_priority_requested", requested_rt},
                   {"cpus", cpus}, {"pinned", ncpus == 1}, {"cpuset", cpuset}, {"shielded", shielded}, {"busy_polling", busy_polling},
                   {"summary", summary}};
  if (!rt_refused.empty()) j["rt_refused"] = rt_refused;
  return j;
}
}  // namespace

int main(int argc, char** argv) {
  // Before anything else: SIGUSR1's default action would end the process.
  std::signal(SIGUSR1, on_timeline_signal);
  const int eal_args = rte_eal_init(argc, argv);
  if (eal_args < 0) {
    fprintf(stderr, "geotb-emulate: EAL init failed: %s\n", rte_strerror(rte_errno));
    return 2;
  }
  argc -= eal_args;
  argv += eal_args;
  argv[0] = const_cast<char*>("geotb-emulate");

  CLI::App app{"geotb-emulate: DPDK data plane of the geotb WAN emulator"};
  std::vector<std::string> port_args, link_args, change_args;
  using namespace std::chrono_literals;
  std::string json_path;
  std::chrono::nanoseconds duration = 0s, stats_interval = 1s;
  bool io_forward = false;
  uint64_t seed = 1;
  uint32_t pool_size = 65535;
  uint32_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
  uint16_t burst = 32;
  int rt_priority = 0;
  std::chrono::nanoseconds tx_lead = 25us, idle_sleep = 5us, max_busy = 70us, wake_margin = 50us, forced_sleep = 10us;
  double min_sleep_share = -1;
  app.add_option("--port", port_args, "NAME=DEVICE,SUBNET: a data center behind a DPDK port (at least 2)")->required();
  app.add_option("--link", link_args, "A>B:key=value,... or A<>B:... (see link_spec_parse.h)");
  app.add_option("--change", change_args, "at=10s,link=A>B,rate=..,delay=..,loss=..,up=0|1");
  app.add_flag("--io-forward", io_forward, "reference: route and forward, no link model, no delay");
  geotb::common::add_duration_option(app, "--duration", duration, "stop after this long (0s = until SIGINT/SIGTERM)");
  geotb::common::add_duration_option(app, "--stats-interval", stats_interval, "print a stats line this often (0s = never)");
  app.add_option("--json", json_path, "write the final report here (default stdout)");
  app.add_option("--seed", seed, "seed of the link models' random streams");
  app.add_option("--pool-size", pool_size, "mbufs in the pool (bounds frames in flight)");
  app.add_option("--burst", burst, "rx/tx burst size, 1..64");
  geotb::common::add_duration_option(app, "--tx-lead", tx_lead, "once a frame is due, send with it the frames due within this long: they leave up to "
                 "this early, in fewer, larger tx bursts (af_packet: one sendto() per burst; measured at 1 Gbit/s, MTU 1500: "
                 "~7 us of kernel time per frame at 1.2 frames per burst, ~5 us at 3). 0us = never early");
  app.add_option("--mbuf-data-room", data_room, "mbuf data room in bytes incl. 128 headroom (16512 for MTU 9000)");
  app.add_option("--rt-priority", rt_priority, "SCHED_FIFO priority of the polling thread (0 = normal scheduling; where the "
                 "kernel refuses it, normal scheduling with a warning, and the report says so); with it, the loop sleeps "
                 "when idle and keeps --min-sleep-share of its time asleep");
  geotb::common::add_duration_option(app, "--idle-sleep", idle_sleep, "sleep this long when idle (see DataPlane::RunOptions)");
  app.add_option("--min-sleep-share", min_sleep_share, "share of every 10 ms kept asleep (default 0.15 with --rt-priority, else 0; the kernel throttles RT tasks above 0.95 per second, and the kernel charged up to ~90 % rt_time with a 12 % share at MTU 9000)");
  geotb::common::add_duration_option(app, "--max-busy", max_busy, "forced sleeps at most once per this much busy time");
  geotb::common::add_duration_option(app, "--forced-sleep", forced_sleep, "length of a forced sleep");
  geotb::common::add_duration_option(app, "--wake-margin", wake_margin, "idle sleep only if nothing is due within sleep + this");
  std::string timeline_start = "start";
  app.add_option("--timeline-start", timeline_start,
                 "start: --change instants count from the data plane's start; sigusr1: from the SIGUSR1 this process "
                 "receives (geotb run --net dpdk sends it when the workers begin their first step)")
      ->check(CLI::IsMember({"start", "sigusr1"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  geotb::emu::DataPlaneConfig cfg;
  std::vector<std::string> dcs;
  uint64_t duration_ns = 0, stats_ns = 0;
  geotb::emu::DataPlane::RunOptions run_opt;
  rte_mempool* pool = nullptr;
  int rt_applied = 0;      // the SCHED_FIFO priority in force (0: normal scheduling)
  std::string rt_refused;  // why --rt-priority was not applied
  try {
    duration_ns = static_cast<uint64_t>(duration.count());
    stats_ns = static_cast<uint64_t>(stats_interval.count());
    run_opt.duration_ns = duration_ns;
    run_opt.stats_interval_ns = stats_ns;
    run_opt.idle_sleep_ns = static_cast<uint64_t>(idle_sleep.count());
    run_opt.max_busy_ns = static_cast<uint64_t>(max_busy.count());
    run_opt.wake_margin_ns = static_cast<uint64_t>(wake_margin.count());
    run_opt.forced_sleep_ns = static_cast<uint64_t>(forced_sleep.count());
    // Real-time priority where permitted: refused (EPERM: no CAP_SYS_NICE, RLIMIT_RTPRIO 0, a
    // cgroup without RT budget), the poller runs under normal scheduling and says so.
    if (rt_priority > 0) {
      sched_param sp{};
      sp.sched_priority = rt_priority;
      if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
        rt_applied = rt_priority;
      } else if (errno == EPERM) {
        rt_refused = "--rt-priority " + std::to_string(rt_priority) + " not permitted (sched_setscheduler: " + strerror(errno) +
                     "): normal scheduling";
        fprintf(stderr, "geotb-emulate: warning: %s\n", rt_refused.c_str());
      } else {
        throw std::runtime_error("--rt-priority " + std::to_string(rt_priority) + ": sched_setscheduler: " + strerror(errno));
      }
    }
    run_opt.min_sleep_share = min_sleep_share >= 0 ? min_sleep_share : (rt_applied > 0 ? 0.15 : 0.0);
    if (rt_applied == 0 && min_sleep_share < 0) run_opt.idle_sleep_ns = 0;  // plain busy polling
    if (data_room < RTE_MBUF_DEFAULT_BUF_SIZE || data_room > 65535)
      throw std::invalid_argument("--mbuf-data-room " + std::to_string(data_room) + ": must be in [2176, 65535]");
    pool = rte_pktmbuf_pool_create("geotb_pool", pool_size, 256, 0, static_cast<uint16_t>(data_room),
                                   static_cast<int>(rte_socket_id()));
    if (!pool) throw std::runtime_error(std::string("mbuf pool: ") + rte_strerror(rte_errno));
    for (const std::string& s : port_args) {
      const auto pa = geotb::emu::parse_port_arg(s);
      uint16_t pid = 0;
      if (rte_eth_dev_get_port_by_name(pa.device.c_str(), &pid) != 0)
        throw std::invalid_argument("--port \"" + s + "\": no DPDK device \"" + pa.device + "\" (add --vdev=...)");
      if (geotb::emu::setup_port(pid, pool) != 0) throw std::runtime_error("--port \"" + s + "\": setup failed");
      cfg.ports.push_back({pa.dc, pid, pa.subnet});
      dcs.push_back(pa.dc);
    }
    for (const std::string& s : link_args) geotb::emu::parse_link_arg(s, dcs, cfg.links);
    for (const std::string& s : change_args) geotb::emu::parse_change_arg(s, dcs, cfg.links);
    cfg.io_forward = io_forward;
    cfg.seed = seed;
    cfg.burst = burst;
    cfg.tx_lead_ns = static_cast<uint64_t>(tx_lead.count());
    cfg.pool = pool;
    cfg.timeline_on_request = timeline_start == "sigusr1";
    if (cfg.timeline_on_request) run_opt.start_timeline = &g_timeline_go;
    if (io_forward && cfg.links.empty()) {
      for (int a = 0; a < static_cast<int>(dcs.size()); ++a)
        for (int b = 0; b < static_cast<int>(dcs.size()); ++b)
          if (a != b) cfg.links.push_back({a, b, {}, {}});
    }
  } catch (const std::exception& e) {
    fprintf(stderr, "geotb-emulate: %s\n", e.what());
    rte_eal_cleanup();
    return 2;
  }

  const unsigned avail_start = rte_mempool_avail_count(pool);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  nlohmann::json report, sched_json;
  try {
    geotb::emu::DataPlane dp(cfg);
    sched_json = scheduling_report(rt_priority, rt_refused, run_opt.idle_sleep_ns == 0 && run_opt.min_sleep_share <= 0);
    fprintf(stderr, "geotb-emulate: %zu ports, %zu links, %s; %s; running\n", cfg.ports.size(), cfg.links.size(),
            io_forward ? "io-forward" : "link model", sched_json["summary"].get<std::string>().c_str());
    dp.run(g_quit, run_opt);
    report = dp.report();
    report["scheduling"] = sched_json;
  } catch (const std::exception& e) {
    fprintf(stderr, "geotb-emulate: %s\n", e.what());
    rte_eal_cleanup();
    return 2;
  }
  uint16_t pid;
  RTE_ETH_FOREACH_DEV(pid) {
    rte_eth_stats st{};
    if (rte_eth_stats_get(pid, &st) == 0) {
      for (auto& p : report["ports"])
        if (p["port_id"] == pid) p["nic"] = {{"imissed", st.imissed}, {"ierrors", st.ierrors}, {"oerrors", st.oerrors}, {"rx_nombuf", st.rx_nombuf}};
    }
    rte_eth_dev_stop(pid);
  }
  report["mempool"] = {{"size", pool->size}, {"avail_at_start", avail_start}, {"avail_at_end", rte_mempool_avail_count(pool)}};
  report["mempool"]["back_to_start"] = rte_mempool_avail_count(pool) == avail_start;
  RTE_ETH_FOREACH_DEV(pid) rte_eth_dev_close(pid);
  const std::string out = report.dump(2);
  if (json_path.empty()) {
    std::cout << out << std::endl;
  } else {
    geotb::common::write_file_atomically(json_path, out + "\n");
  }
  rte_mempool_free(pool);
  rte_eal_cleanup();
  return 0;
}
