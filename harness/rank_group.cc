#include "harness/rank_group.h"

#include <signal.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace geotb::harness {

namespace {
std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;
void on_signal(int sig) { g_signal.store(sig); }
}  // namespace

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

std::vector<std::string> environment_without(const std::vector<std::string>& drop,
                                             const std::vector<std::string>& drop_prefixes) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string k = kv.substr(0, kv.find('='));
    if (std::find(drop.begin(), drop.end(), k) != drop.end()) continue;
    if (std::any_of(drop_prefixes.begin(), drop_prefixes.end(), [&](const std::string& p) { return k.rfind(p, 0) == 0; }))
      continue;
    out.push_back(kv);
  }
  return out;
}

std::string describe_exit(const common::ChildProcess& child) {
  const int sig = child.term_signal();
  return sig ? fmt::format("killed by signal {} ({})", sig, strsignal(sig)) : fmt::format("exit status {}", child.exit_status());
}

std::string log_tail(const std::string& path, int lines) {
  std::ifstream f(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(f, l);)
    if (!l.empty()) v.push_back(l);
  std::string out;
  for (size_t i = v.size() > static_cast<size_t>(lines) ? v.size() - static_cast<size_t>(lines) : 0; i < v.size(); ++i)
    out += (out.empty() ? "" : " | ") + v[i];
  return out;
}

RankGroup::RankGroup(std::vector<RankSpec> specs) {
  started_ = std::chrono::steady_clock::now();
  ranks_.reserve(specs.size());
  for (auto& s : specs) {
    RankProcess p;
    p.rank = s.rank;
    p.dc = s.dc;
    p.log_path = s.log_path;
    common::ChildOptions child;
    child.argv = std::move(s.argv);
    child.env = std::move(s.env);
    child.log_path = s.log_path;
    child.own_process_group = true;
    p.started = std::chrono::steady_clock::now();
    p.child = common::ChildProcess(child);  // throws SpawnError: the ranks started so far die with ranks_
    ranks_.push_back(std::move(p));
  }
}

RankGroup::~RankGroup() = default;  // each ChildProcess kills and reaps its own

double RankGroup::wall_s() const {
  auto last = started_;
  for (const auto& r : ranks_) last = std::max(last, r.ended);
  return std::chrono::duration<double>(last - started_).count();
}

bool RankGroup::poll() {
  bool any = false;
  for (auto& r : ranks_) {
    const bool was = r.child.pid() > 0;
    const bool now_running = r.child.running();
    if (was && !now_running) {
      r.ended = std::chrono::steady_clock::now();
      if (r.child.exit_status() != 0 && !r.stopped_by_us && !r.killed_as_planned) failed_order_.push_back(r.rank);
    }
    any |= now_running;
  }
  return any;
}

bool RankGroup::is_stopped(int rank) const {
  const RankProcess& r = ranks_.at(static_cast<size_t>(rank));
  if (r.child.pid() <= 0) return false;
  std::ifstream f("/proc/" + std::to_string(r.child.pid()) + "/stat");
  std::string stat;
  std::getline(f, stat);
  // "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parentheses).
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T';
}

void RankGroup::kill_planned(int rank) {
  RankProcess& r = ranks_.at(static_cast<size_t>(rank));
  r.killed_as_planned = true;
  r.child.signal(SIGKILL);
}

void RankGroup::respawn(int rank, RankSpec spec) {
  RankProcess& r = ranks_.at(static_cast<size_t>(rank));
  if (r.child.pid() > 0) throw std::logic_error("respawn: rank " + std::to_string(rank) + " still runs");
  common::ChildOptions child;
  child.argv = std::move(spec.argv);
  child.env = std::move(spec.env);
  child.log_path = spec.log_path;
  child.own_process_group = true;
  r.child = common::ChildProcess(child);
  r.log_path = spec.log_path;
  r.killed_as_planned = false;
  r.started = std::chrono::steady_clock::now();
  ++r.incarnation;
}

void RankGroup::stop_all() {
  for (auto& r : ranks_)
    if (r.child.pid() > 0) {
      r.stopped_by_us = true;
      r.child.signal(SIGTERM);
    }
  const auto t0 = std::chrono::steady_clock::now();
  while (poll()) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(3)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& r : ranks_) r.child.signal(SIGKILL);
  for (auto& r : ranks_)
    if (r.child.pid() > 0) {
      r.child.wait();
      r.ended = std::chrono::steady_clock::now();
    }
}

GroupOutcome RankGroup::supervise(const SuperviseOptions& opt) {
  try {
    for (;;) {
      const bool any_running = poll();
      if (opt.on_poll) opt.on_poll();
      if (!failed_order_.empty()) {
        // Give the others a moment to fail on their own, then stop the rest.
        const auto grace_end = std::chrono::steady_clock::now() + opt.failure_grace;
        while (std::chrono::steady_clock::now() < grace_end && poll()) {
          if (opt.on_poll) opt.on_poll();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        stop_all();
        if (opt.on_poll) opt.on_poll();
        return GroupOutcome::kFailed;
      }
      if (!any_running) return GroupOutcome::kDone;
      if (opt.interrupted && opt.interrupted->load() != 0) {
        stop_all();
        throw Interrupted(opt.interrupted->load());
      }
      if (opt.deadline.count() > 0 && std::chrono::steady_clock::now() - started_ > opt.deadline) {
        stop_all();
        if (opt.on_poll) opt.on_poll();
        return GroupOutcome::kDeadline;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling child processes, not timing anything
    }
  } catch (...) {
    stop_all();
    throw;
  }
}

}  // namespace geotb::harness
