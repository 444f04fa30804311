// A CPU of its own for the data plane, at run time: what `isolcpus` does at boot and `cset shield`
// does with cpusets, for as long as the emulated network is up.
//
// Why: pinning the poller and giving it SCHED_FIFO is not enough on current kernels. Since Linux
// 6.12 the fair server (a deadline entity, 50 ms every 1 s by default) runs starved normal tasks
// ahead of real-time ones, so any normal task that becomes runnable on the poller's CPU (another
// process, an unbound kworker) stops a SCHED_FIFO poller for up to 50 ms, about once a second:
// measured on this project's 2-core VM (kernel 6.18) as 15-18 stalls of 49-54 ms in 12 s, 4.4-4.7 %
// of the poller's time, with or without the poller's idle sleeps, and the same with busy polling.
// With every movable process on the other CPUs and the poller busy polling at normal priority,
// the same 12-15 s had 2-4 stalls of at most 1.2-8 ms (0.02-0.08 %): per-CPU kernel threads only.
//
// How (cgroup v1 cpuset hierarchy, root only): every process of the root cpuset moves into
// "geotb-sys-<owner>" (every CPU but the shielded one; kernel threads that cannot move stay), and
// the data plane is started inside "geotb-cpu-<owner>" (the shielded CPU). Processes forked later
// inherit their parent's cpuset, so nothing new lands on the CPU. Each moved thread's affinity
// mask is saved (in /run/geotb/) and restored when the shield is released, so a process pinned
// before keeps its pinning. One shield at a time on a host: a second owner gets none (and is told
// who holds it); a shield whose owner's namespaces are gone is stale and released by the next one.
// With GEOTB_SHIELD_IRQS=1 interrupts follow: every one that can be re-routed (and the default for
// new ones) goes to the other CPUs while the shield is up, and back at release (the old routes
// are in the same record). Off by default: measured worse on the 2-core VM (docs/guide/network-modes.md).
// Not supported (no shield, the reason reported): cgroup v2 only hosts, a non-root caller.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace geotb::emu {

struct CpuShieldState {
  bool active = false;
  int cpu = -1;                ///< the shielded CPU (active)
  std::string why_not;         ///< when not active: why (not requested, not permitted, held by ...)
  size_t processes_moved = 0;  ///< processes moved off the CPU when the shield went up
  size_t tasks_stayed = 0;     ///< tasks left in the root cpuset (per-CPU kernel threads)
  size_t irqs_moved = 0;       ///< interrupts routed off the CPU (GEOTB_SHIELD_IRQS=1; restored at release)
  size_t irqs_stayed = 0;      ///< interrupts the kernel kept where they were (managed ones)
  std::string data_plane_cpuset;  ///< cgroup directory whose cgroup.procs takes the data plane (active)
};
nlohmann::json to_json(const CpuShieldState& s);

/// Shields `cpu` for `owner` (a namespace prefix). Never throws for an unsupported or refused
/// host: the state says why not. Releases a stale shield of another owner first.
CpuShieldState shield_cpu(int cpu, const std::string& owner);

/// Releases `owner`'s shield (and any stale one): every process back to the root cpuset, saved
/// affinities restored, cpusets removed. Returns the number of shields released. Idempotent.
int release_cpu_shield(const std::string& owner);

/// `argv` run so that it starts inside the shielded CPU's cpuset (a /bin/sh that moves itself
/// there, then execs argv); argv unchanged when the shield is not active.
std::vector<std::string> in_shielded_cpu(const CpuShieldState& s, std::vector<std::string> argv);

/// The data plane's default scheduling: a requested SCHED_FIFO priority (>= 0) as given; -1
/// (auto): 0 (busy polling at normal priority) on a shielded CPU, where nothing else competes for
/// it, else 50 (a real-time priority to win against whatever does).
int resolve_rt_priority(int requested, const CpuShieldState& s);

}  // namespace geotb::emu
