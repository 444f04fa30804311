#include "emulator/dpdk/proc.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/child_process.h"

namespace geotb::emu {

namespace {
/// A pipe (both ends close-on-exec) whose ends are closed on every path.
class Pipe {
 public:
  Pipe() {
    if (pipe2(fd_, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  }
  ~Pipe() {
    close_write();
    if (fd_[0] >= 0) close(fd_[0]);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fd_[0]; }
  int write_end() const { return fd_[1]; }
  /// Closes this process's write end (the child holds its copy), so reads see EOF when it exits.
  void close_write() {
    if (fd_[1] >= 0) close(fd_[1]);
    fd_[1] = -1;
  }

 private:
  int fd_[2] = {-1, -1};
};

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
  Pipe out;
  common::ChildProcess child;
  try {
    common::ChildOptions opt;
    opt.argv = argv;
    opt.output_fd = out.write_end();
    child = common::ChildProcess(opt);
  } catch (const common::SpawnError& e) {
    r.status = 127;  // what a shell says for a program it cannot run
    r.output = e.what();
    return r;
  }
  out.close_write();
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  bool killed = false;
  for (;;) {
    pollfd p{out.read_end(), POLLIN, 0};
    const int wait_ms = timeout.count() > 0 ? static_cast<int>(std::max<int64_t>(1, timeout.count() - ms_since(t0))) : -1;
    const int n = poll(&p, 1, wait_ms);
    if (n == 0 && timeout.count() > 0 && ms_since(t0) >= timeout.count() && !killed) {
      child.signal(SIGKILL);
      killed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const ssize_t k = read(out.read_end(), buf, sizeof buf);
    if (k > 0) { r.output.append(buf, static_cast<size_t>(k)); continue; }
    if (k < 0 && errno == EINTR) continue;
    break;  // EOF
  }
  r.status = child.wait();
  return r;
}

std::string run_checked(const std::vector<std::string>& argv) {
  CmdResult r = run_cmd(argv, std::chrono::milliseconds{60000});
  if (r.status != 0) throw std::runtime_error(join(argv) + ": exit " + std::to_string(r.status) + ": " + r.output);
  return r.output;
}

}  // namespace geotb::emu
