#include "emulator/dpdk/proc.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace geotb::emu {

namespace {
std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}
int decode(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}
int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::vector<std::string> in_ns(const std::string& ns, std::vector<std::string> argv) {
  if (ns.empty()) return argv;
  std::vector<std::string> v{"ip", "netns", "exec", ns};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

CmdResult run_cmd(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CmdResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  auto args = c_argv(argv);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(args[0], args.data());
    dprintf(2, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  bool killed = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int wait_ms = timeout.count() > 0 ? static_cast<int>(std::max<int64_t>(1, timeout.count() - ms_since(t0))) : -1;
    const int n = poll(&p, 1, wait_ms);
    if (n == 0 && timeout.count() > 0 && ms_since(t0) >= timeout.count() && !killed) {
      kill(pid, SIGKILL);
      killed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const ssize_t k = read(fds[0], buf, sizeof buf);
    if (k > 0) { r.output.append(buf, static_cast<size_t>(k)); continue; }
    if (k < 0 && errno == EINTR) continue;
    break;  // EOF
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  r.status = decode(st);
  return r;
}

std::string run_checked(const std::vector<std::string>& argv) {
  CmdResult r = run_cmd(argv, std::chrono::milliseconds{60000});
  if (r.status != 0) throw std::runtime_error(join(argv) + ": exit " + std::to_string(r.status) + ": " + r.output);
  return r.output;
}

Child::Child(const std::vector<std::string>& argv, const std::string& log_path, bool new_session) {
  auto args = c_argv(argv);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid_ == 0) {
    if (new_session) setsid();
    const int fd = open(log_path.empty() ? "/dev/null" : log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(args[0], args.data());
    dprintf(2, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) stop(std::chrono::milliseconds{0});
    pid_ = o.pid_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int st;
    waitpid(pid_, &st, 0);
  }
}

bool Child::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) { status_ = decode(st); pid_ = -1; return false; }
  return true;
}

int Child::wait(std::chrono::milliseconds timeout) {
  const auto t0 = std::chrono::steady_clock::now();
  while (running()) {
    if (ms_since(t0) >= timeout.count()) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});  // waiting for a process, not emulating a network
  }
  return status_;
}

int Child::stop(std::chrono::milliseconds grace) {
  if (!running()) return status_;
  kill(pid_, SIGTERM);
  if (wait(grace) >= 0 || !running()) return status_;
  kill(pid_, SIGKILL);
  int st = 0;
  waitpid(pid_, &st, 0);
  status_ = decode(st);
  pid_ = -1;
  return status_;
}

}  // namespace geotb::emu
