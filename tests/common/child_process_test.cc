// Child processes: exit codes, signals, log files, environment, process groups, deadlines and
// the kill on destruction.
#include "common/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace geotb::common {
namespace {

using namespace std::chrono_literals;

// A script whose sleep must be the child itself says `exec sleep`: /bin/sh may fork the command
// instead of exec'ing it, and a killed shell then leaves an orphan sleep holding the test's stdout,
// which kept meson waiting 30 s for its end in 9 of 30 runs.
ChildOptions sh(const std::string& script) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

std::string log_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("geotb-child-" + std::to_string(getpid()) + "-" + name)).string();
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The process exists and is not a zombie (a zombie left to an init that does not reap counts as gone).
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(ChildProcess, ExitCode) {
  ChildProcess c(sh("exit 3"));
  EXPECT_EQ(c.wait(), 3);
  EXPECT_TRUE(c.reaped());
  EXPECT_EQ(c.term_signal(), 0);
  EXPECT_EQ(c.pid(), -1);  // reaped: no pid any more
}

TEST(ChildProcess, KilledBySignal) {
  ChildProcess c(sh("kill -9 $$"));
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
  EXPECT_EQ(c.term_signal(), SIGKILL);
}

TEST(ChildProcess, LogFileGetsStdoutAndStderrAndStdinIsEmpty) {
  const std::string log = log_path("log");
  ChildOptions o = sh("echo out; echo err >&2; cat; echo done");
  o.log_path = log;
  ChildProcess c(o);
  EXPECT_EQ(c.wait(), 0);
  EXPECT_EQ(slurp(log), "out\nerr\ndone\n");
  std::filesystem::remove(log);
}

TEST(ChildProcess, EnvironmentIsExactlyTheGivenOne) {
  const std::string log = log_path("env");
  ChildOptions o = sh("echo \"$GEOTB_X-${HOME:-none}\"");
  o.env = std::vector<std::string>{"GEOTB_X=42"};
  o.log_path = log;
  ChildProcess c(o);
  EXPECT_EQ(c.wait(), 0);
  EXPECT_EQ(slurp(log), "42-none\n");
  std::filesystem::remove(log);
}

TEST(ChildProcess, SignalsStartAtDefaultEvenWhenIgnoredHere) {
  struct sigaction ign {}, old_sa {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ign, &old_sa);
  ChildProcess c(sh("exec sleep 30"));
  sigaction(SIGTERM, &old_sa, nullptr);
  c.signal(SIGTERM);
  EXPECT_EQ(c.wait_for(5s).value_or(-1), 128 + SIGTERM);
}

TEST(ChildProcess, WaitForTimesOutAndStopEscalates) {
  // The shell ignores SIGTERM: stop() has to send SIGKILL after the grace period.
  ChildOptions o = sh("trap '' TERM; sleep 30");
  o.own_process_group = true;  // the SIGKILL reaches sleep too
  ChildProcess c(o);
  EXPECT_FALSE(c.wait_for(50ms).has_value());
  EXPECT_TRUE(c.running());
  EXPECT_EQ(c.stop(200ms), 128 + SIGKILL);
}

TEST(ChildProcess, OwnProcessGroupIsSignalledAsAGroup) {
  const std::string log = log_path("group");
  ChildOptions o = sh("sleep 30 & echo $!; wait");
  o.own_process_group = true;
  o.log_path = log;
  ChildProcess c(o);
  EXPECT_EQ(getpgid(c.pid()), c.pid());
  pid_t grandchild = 0;
  for (int i = 0; i < 500 && grandchild == 0; ++i) {
    std::istringstream(slurp(log)) >> grandchild;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GT(grandchild, 0);
  c.signal(SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
  for (int i = 0; i < 500 && alive(grandchild); ++i) std::this_thread::sleep_for(10ms);  // reaped by init
  EXPECT_FALSE(alive(grandchild));
  std::filesystem::remove(log);
}

TEST(ChildProcess, DestructorKillsAndReapsUnlessReleased) {
  pid_t pid = 0;
  {
    ChildProcess c(sh("exec sleep 30"));
    pid = c.pid();
    EXPECT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid));  // killed and reaped: not even a zombie
  pid_t kept = 0;
  {
    ChildProcess c(sh("exec sleep 30"));
    kept = c.release();
  }
  EXPECT_TRUE(alive(kept));
  ::kill(kept, SIGKILL);
  int st = 0;  // released: the test reaps it itself
  EXPECT_EQ(waitpid(kept, &st, 0), kept);
}

TEST(ChildProcess, MissingProgramIsASpawnError) {
  ChildOptions o;
  o.argv = {"/nonexistent/geotb-no-such-program"};
  try {
    ChildProcess c(o);
    FAIL() << "no error";
  } catch (const SpawnError& e) {
    EXPECT_EQ(std::string(e.what()), "spawning /nonexistent/geotb-no-such-program: No such file or directory");
  }
}

}  // namespace
}  // namespace geotb::common
