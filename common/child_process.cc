#include "common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace geotb::common {

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

/// posix_spawn's file actions and attributes, destroyed on every path.
struct SpawnSetup {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  SpawnSetup() {
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

ChildProcess::ChildProcess(const ChildOptions& opt) {
  if (opt.argv.empty()) throw SpawnError("spawning: empty argv");
  auto av = c_strings(opt.argv);
  std::vector<char*> ev;
  if (opt.env) ev = c_strings(*opt.env);
  SpawnSetup s;
  posix_spawn_file_actions_addopen(&s.fa, 0, "/dev/null", O_RDONLY, 0);
  if (!opt.log_path.empty()) {
    posix_spawn_file_actions_addopen(&s.fa, 1, opt.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&s.fa, 1, 2);
  } else if (opt.output_fd >= 0) {
    posix_spawn_file_actions_adddup2(&s.fa, opt.output_fd, 1);
    posix_spawn_file_actions_adddup2(&s.fa, opt.output_fd, 2);
  }
  // Default dispositions for what a coordinator typically handles or ignores, nothing blocked.
  sigset_t none, defs;
  sigemptyset(&none);
  sigemptyset(&defs);
  sigaddset(&defs, SIGINT);
  sigaddset(&defs, SIGTERM);
  sigaddset(&defs, SIGPIPE);
  posix_spawnattr_setsigmask(&s.at, &none);
  posix_spawnattr_setsigdefault(&s.at, &defs);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (opt.new_session) {
    flags |= POSIX_SPAWN_SETSID;
  } else if (opt.own_process_group) {
    posix_spawnattr_setpgroup(&s.at, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&s.at, flags);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, av[0], &s.fa, &s.at, av.data(), opt.env ? ev.data() : environ);
  if (rc != 0) throw SpawnError("spawning " + opt.argv[0] + ": " + std::strerror(rc));
  pid_ = pid;
  group_ = opt.own_process_group || opt.new_session;
}

ChildProcess::~ChildProcess() { kill_and_reap(); }

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), group_(o.group_), reaped_(o.reaped_), status_(o.status_), signal_(o.signal_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = std::exchange(o.pid_, -1);
    group_ = o.group_;
    reaped_ = o.reaped_;
    status_ = o.status_;
    signal_ = o.signal_;
  }
  return *this;
}

void ChildProcess::kill_and_reap() noexcept {
  if (pid_ > 0 && !reaped_) {
    signal(SIGKILL);
    reap(true);
  }
}

void ChildProcess::reap(bool block) {
  if (pid_ <= 0 || reaped_) return;
  int st = 0;
  pid_t r;
  while ((r = waitpid(pid_, &st, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r != pid_) return;
  reaped_ = true;
  if (WIFEXITED(st)) {
    status_ = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    signal_ = WTERMSIG(st);
    status_ = 128 + signal_;
  }
}

bool ChildProcess::running() {
  reap(false);
  return pid_ > 0 && !reaped_;
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});  // waiting for a process, not timing anything
  }
  return status_;
}

int ChildProcess::wait() {
  reap(true);
  return status_;
}

void ChildProcess::signal(int sig) {
  if (pid_ <= 0 || reaped_) return;
  ::kill(group_ ? -pid_ : pid_, sig);
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return status_;
  signal(SIGTERM);
  if (wait_for(grace)) return status_;
  signal(SIGKILL);
  return wait();
}

pid_t ChildProcess::release() {
  const pid_t p = pid_;
  pid_ = -1;
  return p;
}

}  // namespace geotb::common
