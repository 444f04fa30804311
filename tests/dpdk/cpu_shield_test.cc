// The data plane's CPU shield (emulator/dpdk/cpu_shield.h): processes moved off the CPU and back,
// pinnings restored, interrupts routed off it and back, the data plane's wrapper lands in the
// shielded cpuset, one holder at a time, stale shields released. Needs root, two CPUs and a cgroup v1 cpuset hierarchy; skips otherwise.
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "emulator/dpdk/cpu_shield.h"
#include "emulator/dpdk/proc.h"

namespace geotb::emu {
namespace {

constexpr const char* kOwner = "gtbshld";
constexpr const char* kOther = "gtbshl2";

std::string my_cpuset() {
  std::ifstream f("/proc/self/cpuset");
  std::string s;
  std::getline(f, s);
  return s;
}

std::vector<int> my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> v;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) v.push_back(i);
  return v;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
}

void unpin() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &set);
  sched_setaffinity(0, sizeof set, &set);  // the kernel keeps the allowed ones
}

// Every interrupt's route (/proc/irq/N/smp_affinity_list).
std::map<int, std::string> irq_routes() {
  std::map<int, std::string> r;
  if (DIR* d = opendir("/proc/irq")) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in("/proc/irq/" + n + "/smp_affinity_list");
      std::string v;
      if (std::getline(in, v)) r[std::stoi(n)] = v;
    }
    closedir(d);
  }
  return r;
}

class CpuShield : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
    if (my_cpuset() != "/") GTEST_SKIP() << "runs in cpuset " << my_cpuset() << ", not the root one";
    release_cpu_shield(kOwner);
    release_cpu_shield(kOther);
  }
  void TearDown() override {
    release_cpu_shield(kOwner);
    release_cpu_shield(kOther);
    run_cmd({"ip", "netns", "del", std::string(kOwner) + "-emu"});
    unpin();
  }
};

TEST_F(CpuShield, MovesEveryoneOffTheCpuAndBackWithTheirPinnings) {
  const int last = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) - 1;
  pin_to(0);  // a pinning from before the shield: it must survive it
  const std::map<int, std::string> routes_before = irq_routes();
  setenv("GEOTB_SHIELD_IRQS", "1", 1);  // interrupts too (off by default)
  const CpuShieldState s = shield_cpu(last, kOwner);
  unsetenv("GEOTB_SHIELD_IRQS");
  if (!s.active && s.why_not.find("cgroup v1") != std::string::npos) GTEST_SKIP() << s.why_not;
  ASSERT_TRUE(s.active) << s.why_not;
  EXPECT_EQ(s.cpu, last);
  EXPECT_GE(s.processes_moved, 1u);  // this test at least
  // Interrupts: every one that the kernel let move is routed off the CPU.
  size_t off = 0;
  for (const auto& [irq, cpus] : irq_routes())
    if (cpus.find(std::to_string(last)) == std::string::npos) ++off;
  EXPECT_GE(off, s.irqs_moved);
  EXPECT_LE(s.irqs_moved + s.irqs_stayed, routes_before.size());
  std::printf("interrupts: %zu routed off CPU %d, %zu kept by the kernel, of %zu\n", s.irqs_moved, last, s.irqs_stayed,
              routes_before.size());
  EXPECT_EQ(my_cpuset(), std::string("/geotb-sys-") + kOwner);
  unpin();
  for (int c : my_cpus()) EXPECT_NE(c, last) << "this process may still run on the shielded CPU";

  // The data plane's launcher: a process that starts inside the shielded CPU's cpuset.
  const CmdResult in = run_cmd(in_shielded_cpu(s, {"cat", "/proc/self/cpuset"}));
  EXPECT_EQ(in.status, 0);
  EXPECT_EQ(in.output, std::string("/geotb-cpu-") + kOwner + "\n");
  // Everything else still starts outside it.
  EXPECT_EQ(run_cmd({"cat", "/proc/self/cpuset"}).output, std::string("/geotb-sys-") + kOwner + "\n");

  EXPECT_EQ(release_cpu_shield(kOwner), 1);
  EXPECT_EQ(my_cpuset(), "/");
  EXPECT_EQ(my_cpus(), std::vector<int>{0}) << "the pinning from before the shield is back";
  EXPECT_EQ(irq_routes(), routes_before) << "the interrupts' routes from before the shield are back";
  EXPECT_EQ(release_cpu_shield(kOwner), 0);  // idempotent
  EXPECT_EQ(in_shielded_cpu(CpuShieldState{}, {"x"}), std::vector<std::string>{"x"});  // inactive: unchanged
}

TEST_F(CpuShield, OneHolderAtATimeAndStaleShieldsAreReleased) {
  const int last = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) - 1;
  // The holder's namespaces exist: a second owner gets no shield and is told who holds it.
  ASSERT_EQ(run_cmd({"ip", "netns", "add", std::string(kOwner) + "-emu"}).status, 0);
  const CpuShieldState a = shield_cpu(last, kOwner);
  if (!a.active && a.why_not.find("cgroup v1") != std::string::npos) GTEST_SKIP() << a.why_not;
  ASSERT_TRUE(a.active) << a.why_not;
  const CpuShieldState b = shield_cpu(last, kOther);
  EXPECT_FALSE(b.active);
  EXPECT_NE(b.why_not.find(std::string(kOwner) + "-*"), std::string::npos) << b.why_not;
  EXPECT_EQ(resolve_rt_priority(-1, a), 0);
  EXPECT_EQ(resolve_rt_priority(-1, b), 50);
  EXPECT_EQ(resolve_rt_priority(7, a), 7);
  // Its namespaces gone (a crashed run): the shield is stale and the next owner takes over.
  ASSERT_EQ(run_cmd({"ip", "netns", "del", std::string(kOwner) + "-emu"}).status, 0);
  const CpuShieldState c = shield_cpu(last, kOther);
  ASSERT_TRUE(c.active) << c.why_not;
  EXPECT_EQ(my_cpuset(), std::string("/geotb-sys-") + kOther);
  std::ifstream stale(std::string("/sys/fs/cgroup/cpuset/geotb-sys-") + kOwner + "/tasks");
  EXPECT_FALSE(stale.good()) << "the stale shield's cpuset is gone";
  EXPECT_EQ(release_cpu_shield(kOther), 1);
  EXPECT_EQ(my_cpuset(), "/");
}

}  // namespace
}  // namespace geotb::emu
