#include "harness/process_run.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/errors.h"
#include "engine/strategies/table.h"
#include "model/rank_report.h"
#include "common/child_process.h"

extern char** environ;

namespace geotb::harness {

namespace {

std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;
void on_signal(int sig) { g_signal.store(sig); }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The last `lines` non-empty lines of a log, joined with " | ".
std::string log_tail(const std::string& path, int lines) {
  const std::string s = slurp(path);
  std::vector<std::string> v;
  std::istringstream is(s);
  std::string l;
  while (std::getline(is, l))
    if (!l.empty()) v.push_back(l);
  std::string out;
  for (size_t i = v.size() > static_cast<size_t>(lines) ? v.size() - static_cast<size_t>(lines) : 0; i < v.size(); ++i)
    out += (out.empty() ? "" : " | ") + v[i];
  return out;
}

struct Worker {
  int rank = 0, dc = 0;
  common::ChildProcess child;  ///< its own process group, killed as a group
  bool killed_by_us = false;
  std::string json_path, log_path;
};

/// SIGTERM to every running worker's group, up to 3 s to exit, then SIGKILL; all reaped.
void kill_all(std::vector<Worker>& ws) {
  for (auto& w : ws)
    if (w.child.pid() > 0) {
      w.killed_by_us = true;
      w.child.signal(SIGTERM);
    }
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    bool any = false;
    for (auto& w : ws) any |= w.child.running();
    if (!any) return;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(3)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& w : ws) w.child.signal(SIGKILL);
  for (auto& w : ws) w.child.wait();
}

std::string describe(const Worker& w) {
  std::string why;
  if (std::filesystem::exists(w.json_path)) {
    try {
      if (const model::RankReport rr = model::load_rank_report(w.json_path); rr.failure) {
        // The worker wrote its failure's kind (engine/errors.h); a name we do not know is kOther's.
        const engine::ErrorKind kind =
            engine::parse_error_kind(rr.failure->type).value_or(engine::ErrorKind::kOther);
        why = std::string(engine::error_kind_name(kind)) + ": " + rr.failure->message;
      }
    } catch (const std::exception&) {
    }
  }
  if (why.empty()) {
    const int sig = w.child.term_signal();
    why = sig ? fmt::format("killed by signal {} ({})", sig, strsignal(sig)) : fmt::format("exit status {}", w.child.exit_status());
    const std::string tail = log_tail(w.log_path, 2);
    if (!tail.empty()) why += "; log: " + tail;
  }
  return fmt::format("rank {} (dc {}): {}", w.rank, w.dc, why);
}

}  // namespace

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  return std::string(buf, static_cast<size_t>(n));
}

uint16_t free_tcp_port(const std::string& addr) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  if (inet_pton(AF_INET, addr.c_str(), &a.sin_addr) != 1) {
    close(fd);
    throw std::runtime_error("free_tcp_port: \"" + addr + "\": not an IPv4 address");
  }
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string e = std::strerror(errno);
    close(fd);
    throw std::runtime_error("free_tcp_port: " + addr + ": " + e);
  }
  close(fd);
  return ntohs(a.sin_port);
}

SignalFlag::SignalFlag() {
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}
SignalFlag::~SignalFlag() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}
const std::atomic<int>& SignalFlag::flag() const { return g_signal; }

model::StrategyRun run_strategy_processes(const Scenario& sc, const engine::StrategyConfig& scfg,
                                          const ProcessRunOptions& opt) {
  const int M = static_cast<int>(sc.cluster.dcs.size());
  const int N = sc.cluster.dcs[0].workers;
  const int P = M * N;
  if (static_cast<int>(opt.dcs.size()) != M)
    throw std::invalid_argument(fmt::format("{} placements for {} data centers", opt.dcs.size(), M));
  // The `lan` reference puts every worker in one data center: DC 0's place.
  const bool one_dc = engine::find_strategy(scfg.name).needs.co_located;
  auto place = [&](int dc) -> const DcPlacement& { return opt.dcs[static_cast<size_t>(one_dc ? 0 : dc)]; };
  const std::string master = opt.master_addr.empty() ? place(0).address : opt.master_addr;
  // In a namespace of its own (dpdk) nothing else listens: the torchrun default port. Here, a free one.
  const uint16_t port = opt.master_port ? opt.master_port : place(0).netns.empty() ? free_tcp_port(master) : 29500;
  const std::string bin = opt.geotb_bin.empty() ? self_exe() : opt.geotb_bin;
  const auto deadline = opt.deadline.count() > 0
                            ? opt.deadline
                            : std::chrono::milliseconds(120000 + 2000 * static_cast<int64_t>(sc.workload.steps));
  std::filesystem::create_directories(opt.work_dir);

  // Everything of this environment except what the workers get from us.
  std::vector<std::string> base_env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string k = kv.substr(0, kv.find('='));
    if (k == "MASTER_ADDR" || k == "MASTER_PORT" || k == "RANK" || k == "WORLD_SIZE" || k.rfind("GEOTB_", 0) == 0 ||
        k == "LOCAL_RANK")
      continue;
    base_env.push_back(kv);
  }
  if (const char* s = std::getenv("GEOTB_SECRET")) base_env.push_back(std::string("GEOTB_SECRET=") + s);
  if (!std::getenv("OMP_NUM_THREADS")) base_env.push_back("OMP_NUM_THREADS=1");

  std::vector<Worker> ws(static_cast<size_t>(P));
  const std::string timeout_arg = fmt::format("{}ms", opt.worker_timeout.count());
  try {
    for (int r = 0; r < P; ++r) {
      Worker& w = ws[static_cast<size_t>(r)];
      w.rank = r;
      w.dc = r / N;
      w.json_path = fmt::format("{}/rank-{}.json", opt.work_dir, r);
      w.log_path = fmt::format("{}/rank-{}.log", opt.work_dir, r);
      std::filesystem::remove(w.json_path);
      const DcPlacement& pl = place(w.dc);
      std::vector<std::string> argv;
      if (!pl.netns.empty()) argv = {"ip", "netns", "exec", pl.netns};
      if (!pl.cpus.empty()) argv.insert(argv.end(), {"taskset", "-c", pl.cpus});
      argv.insert(argv.end(), {bin, "worker", opt.scenario_path, "--strategy", scfg.name, "--out", w.json_path, "--timeout",
                               timeout_arg});
      std::vector<std::string> env = base_env;
      env.push_back("MASTER_ADDR=" + master);
      env.push_back("MASTER_PORT=" + std::to_string(port));
      env.push_back("RANK=" + std::to_string(r));
      env.push_back("WORLD_SIZE=" + std::to_string(P));
      env.push_back("GEOTB_DC=" + std::to_string(w.dc));
      env.push_back("GEOTB_LOCAL_RANK=" + std::to_string(r % N));
      env.push_back("GEOTB_BIND_ADDR=" + pl.address);
      if (r == 0 && opt.timeline_pid > 0) env.push_back("GEOTB_TIMELINE_PID=" + std::to_string(opt.timeline_pid));
      common::ChildOptions child;
      child.argv = std::move(argv);
      child.env = std::move(env);
      child.log_path = w.log_path;
      child.own_process_group = true;
      w.child = common::ChildProcess(child);
    }

    const auto t0 = std::chrono::steady_clock::now();
    auto last_progress = t0;
    int last_done = -1;
    std::vector<int> failed_order;  // ranks that failed on their own, in the order we saw it
    for (;;) {
      bool any_running = false;
      for (auto& w : ws) {
        const bool was = w.child.pid() > 0;
        const bool now_running = w.child.running();
        if (was && !now_running && w.child.exit_status() != 0) failed_order.push_back(w.rank);
        any_running |= now_running;
      }
      if (!failed_order.empty()) {
        // Give the others a moment to fail on their own (their typed errors name the cause),
        // then stop the rest.
        const auto grace_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
        while (std::chrono::steady_clock::now() < grace_end) {
          bool still = false;
          for (auto& w : ws) {
            const bool was = w.child.pid() > 0;
            const bool now_running = w.child.running();
            if (was && !now_running && w.child.exit_status() != 0) failed_order.push_back(w.rank);
            still |= now_running;
          }
          if (!still) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        kill_all(ws);
        std::string msg = fmt::format("{}: first failure: {}", scfg.name, describe(ws[static_cast<size_t>(failed_order[0])]));
        for (size_t i = 1; i < failed_order.size(); ++i) msg += "; then " + describe(ws[static_cast<size_t>(failed_order[i])]);
        int stopped = 0;
        for (const auto& w : ws) stopped += w.killed_by_us;
        if (stopped) msg += fmt::format("; {} other rank(s) stopped by the coordinator", stopped);
        msg += fmt::format(" (logs: {})", opt.work_dir);
        throw ProcessRunError(msg);
      }
      if (!any_running) break;
      if (opt.interrupted && opt.interrupted->load() != 0) {
        kill_all(ws);
        throw Interrupted(opt.interrupted->load());
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - t0 > deadline) {
        kill_all(ws);
        throw ProcessRunError(fmt::format("{}: not finished within the deadline of {} s; every worker killed (logs: {})",
                                          scfg.name, deadline.count() / 1000, opt.work_dir));
      }
      if (opt.progress && now - last_progress > std::chrono::milliseconds(500)) {
        last_progress = now;
        const std::string log = slurp(ws[0].log_path);
        const auto p = log.rfind("progress ");
        int done = 0, total = 0;
        double t = 0;
        if (p != std::string::npos && std::sscanf(log.c_str() + p, "progress %d %d %lf", &done, &total, &t) == 3 &&
            done != last_done) {
          last_done = done;
          opt.progress(done, total, t);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling child processes, not timing anything
    }
  } catch (...) {
    kill_all(ws);
    throw;
  }

  std::vector<model::RankReport> reports(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    const Worker& w = ws[static_cast<size_t>(r)];
    try {
      model::RankReport& rr = reports[static_cast<size_t>(r)];
      rr = model::load_rank_report(w.json_path);
      if (rr.failure) throw std::runtime_error(rr.failure->type + ": " + rr.failure->message);
    } catch (const std::exception& e) {
      throw ProcessRunError(fmt::format("{}: rank {} exited 0 but its report {} is unusable: {}", scfg.name, r, w.json_path, e.what()));
    }
  }
  return engine::merge_rank_reports(scfg.name, reports, sc.workload, M);
}

}  // namespace geotb::harness
