#include "harness/process_run.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "engine/checkpoint/schedule.h"
#include "engine/errors.h"
#include "engine/strategies/table.h"
#include "harness/progress_fifo.h"
#include "model/rank_report.h"

namespace geotb::harness {

std::string run_secret() {
  // The user's (GEOTB_SECRET), or one of this run's own: 32 bytes of OpenSSL's CSPRNG, hex. The
  // workers get it through their environment, never on a command line (which `ps` shows), and
  // no report or log carries it.
  if (const char* s = std::getenv("GEOTB_SECRET"); s && *s) return s;
  static const std::string mine = [] {
    unsigned char b[32];
    if (RAND_bytes(b, sizeof(b)) != 1) throw ProcessRunError("could not draw the run's secret (OpenSSL RAND_bytes failed)");
    std::string hex;
    for (unsigned char c : b) hex += fmt::format("{:02x}", c);
    return hex;
  }();
  return mine;
}

namespace {

/// Why a worker failed: its typed error from its rank file, else its exit and its log's tail.
std::string describe(const RankProcess& w, const std::string& json_path) {
  std::string why;
  if (std::filesystem::exists(json_path)) {
    try {
      if (const model::RankReport rr = model::load_rank_report(json_path); rr.failure) {
        // The worker wrote its failure's kind (engine/errors.h); a name we do not know is kOther's.
        const engine::ErrorKind kind =
            engine::parse_error_kind(rr.failure->type).value_or(engine::ErrorKind::kOther);
        why = std::string(engine::error_kind_name(kind)) + ": " + rr.failure->message;
      }
    } catch (const std::exception&) {
    }
  }
  if (why.empty()) {
    why = describe_exit(w.child);
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


model::StrategyRun run_strategy_processes(const Scenario& sc, const engine::StrategyConfig& scfg,
                                          const ProcessRunOptions& opt) {
  const int M = static_cast<int>(sc.cluster.dcs.size());
  const model::RankLayout layout = model::rank_layout(sc.cluster);
  const int P = layout.world();
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
  std::vector<std::string> base_env =
      environment_without({"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"}, {"GEOTB_"});
  base_env.push_back("GEOTB_SECRET=" + run_secret());
  if (!std::getenv("OMP_NUM_THREADS")) base_env.push_back("OMP_NUM_THREADS=1");

  const std::string timeout_arg = fmt::format("{}ms", opt.worker_timeout.count());
  // Checkpoint requests (SIGUSR1) reach the workers through a small shared file (checkpoint/schedule.h).
  const bool checkpoints = !opt.checkpoint_dir.empty() || !sc.checkpoint.dir.empty();
  const std::string requests_path = opt.work_dir + "/checkpoint-requests";
  std::unique_ptr<engine::CheckpointRequestFile> requests;
  int requests_seen = opt.checkpoint_requests ? opt.checkpoint_requests->load() : 0;
  if (checkpoints && opt.checkpoint_requests) {
    const int first = opt.resume.empty() ? 0 : engine::find_checkpoint(opt.resume).header.step;
    engine::CheckpointRequestFile::create(requests_path, P, first);
    requests = std::make_unique<engine::CheckpointRequestFile>(requests_path, P);
  }
  // The reporting rank: 0, or the lowest rank the timeline never kills. When rank 0 dies, the
  // store it would serve is served by a process of its own (`geotb store`) at its address.
  const int rep = sc.faults.first_never_killed(layout);
  std::optional<common::ChildProcess> store;
  if (rep != 0) {
    common::ChildOptions so;
    const DcPlacement& pl = place(0);
    if (!pl.netns.empty()) so.argv = {"ip", "netns", "exec", pl.netns};
    so.argv.insert(so.argv.end(), {bin, "store", "--port", std::to_string(port), "--host", master});
    so.env = base_env;
    so.log_path = opt.work_dir + "/store.log";
    so.own_process_group = true;
    store.emplace(so);
    base_env.push_back("GEOTB_STORE_EXTERNAL=1");
  }
  std::vector<std::string> json_paths;
  for (int r = 0; r < P; ++r) json_paths.push_back(fmt::format("{}/rank-{}.json", opt.work_dir, r));
  // The reporting rank's progress comes over a pipe (harness/progress_fifo.h), read at each poll.
  std::optional<ProgressReader> progress_pipe;
  if (opt.progress) progress_pipe.emplace(opt.work_dir + "/progress.fifo");
  // Rank r's process; incarnation n > 0 is a restart's (node faults): the environment says which,
  // and it reads what its killed predecessor wrote (its rank file, moved aside).
  auto predecessor_path = [&](int r, int n) { return fmt::format("{}/rank-{}.inc{}.json", opt.work_dir, r, n - 1); };
  auto spec_for = [&](int r, int n) {
    RankSpec w;
    w.rank = r;
    w.dc = layout.dc_of(r);
    w.log_path = n == 0 ? fmt::format("{}/rank-{}.log", opt.work_dir, r) : fmt::format("{}/rank-{}.inc{}.log", opt.work_dir, r, n);
    const DcPlacement& pl = place(w.dc);
    if (!pl.netns.empty()) w.argv = {"ip", "netns", "exec", pl.netns};
    if (!pl.cpus.empty()) w.argv.insert(w.argv.end(), {"taskset", "-c", pl.cpus});
    w.argv.insert(w.argv.end(), {bin, "worker", opt.scenario_path, "--strategy", scfg.run_name(), "--out",
                                 json_paths[static_cast<size_t>(r)], "--timeout", timeout_arg});
    if (!opt.checkpoint_dir.empty()) w.argv.insert(w.argv.end(), {"--checkpoint-dir", opt.checkpoint_dir});
    if (requests) w.argv.insert(w.argv.end(), {"--checkpoint-requests", requests_path});
    if (!opt.resume.empty() && n == 0) w.argv.insert(w.argv.end(), {"--resume", opt.resume});
    if (n > 0) w.argv.insert(w.argv.end(), {"--predecessor", predecessor_path(r, n)});
    if (progress_pipe && r == rep) w.argv.insert(w.argv.end(), {"--progress-fifo", progress_pipe->path()});
    w.env = base_env;
    w.env.push_back("MASTER_ADDR=" + master);
    w.env.push_back("MASTER_PORT=" + std::to_string(port));
    w.env.push_back("RANK=" + std::to_string(r));
    w.env.push_back("WORLD_SIZE=" + std::to_string(P));
    w.env.push_back("GEOTB_DC=" + std::to_string(w.dc));
    w.env.push_back("GEOTB_LOCAL_RANK=" + std::to_string(layout.local_of(r)));
    w.env.push_back("GEOTB_BIND_ADDR=" + pl.address);
    if (n > 0) w.env.push_back("GEOTB_INCARNATION=" + std::to_string(n));
    if (r == 0 && opt.timeline_pid > 0 && n == 0) w.env.push_back("GEOTB_TIMELINE_PID=" + std::to_string(opt.timeline_pid));
    return w;
  };
  std::vector<RankSpec> specs;
  for (int r = 0; r < P; ++r) {
    std::filesystem::remove(json_paths[static_cast<size_t>(r)]);
    specs.push_back(spec_for(r, 0));
  }

  RankGroup group(std::move(specs));
  SuperviseOptions so;
  so.deadline = deadline;
  so.interrupted = opt.interrupted;
  int last_done = -1;
  std::function<void()> on_progress;
  if (progress_pipe)
    on_progress = [&] {
      if (const std::optional<ProgressPoint> p = progress_pipe->poll(); p && p->done != last_done) {
        last_done = p->done;
        opt.progress(p->done, p->total, p->seconds);
      }
    };
  // Node faults: a rank the timeline kills stops itself at its kill point (SIGSTOP) once it has
  // written its rank file; the coordinator then SIGKILLs it (scope "process": its kernel closes
  // its connections) or leaves it stopped until every other rank has exited (scope "host": it
  // stays silent, its connections open, as a host that froze).
  // A kill that a restart follows: once its process is reaped, it is spawned again at once (its
  // new process waits for its group's boundary: scenario validation allows one restart per
  // worker, after a kill of scope "process").
  struct Victim {
    int rank;
    bool host;
    bool restart = false;  // a restart follows (cleared once it is spawned again)
    bool stopped = false;
  };
  // A full recovery with "restarts": every killed worker comes back (its process waits for the
  // decision, and gives up if none names it).
  const bool fr_restarts = sc.faults.full_recovery_restarts(P);
  std::vector<Victim> victims;
  for (size_t i = 0; i < sc.faults.events.size(); ++i) {
    const model::FaultEvent& e = sc.faults.events[i];
    if (e.kind != model::FaultEvent::Kind::kKill) continue;
    Victim v{layout.rank_of(e.dc, e.worker), e.scope == "host", fr_restarts};
    for (size_t k = i + 1; k < sc.faults.events.size(); ++k)
      if (sc.faults.events[k].kind == model::FaultEvent::Kind::kRestart && sc.faults.events[k].dc == e.dc &&
          sc.faults.events[k].worker == e.worker)
        v.restart = true;
    victims.push_back(v);
  }
  so.on_poll = [&] {
    bool others_done = true;
    for (const auto& w : group.ranks())
      if (w.child.pid() > 0 && std::none_of(victims.begin(), victims.end(), [&](const Victim& v) { return v.rank == w.rank; }))
        others_done = false;
    for (Victim& v : victims) {
      if (!v.stopped && group.is_stopped(v.rank)) {
        v.stopped = true;
        if (!v.host) group.kill_planned(v.rank);
      }
      if (v.stopped && v.host && others_done) group.kill_planned(v.rank);
      if (v.stopped && v.restart && group.ranks()[static_cast<size_t>(v.rank)].child.pid() <= 0) {
        v.restart = false;
        const int n = group.ranks()[static_cast<size_t>(v.rank)].incarnation + 1;
        std::filesystem::rename(json_paths[static_cast<size_t>(v.rank)], predecessor_path(v.rank, n));
        group.respawn(v.rank, spec_for(v.rank, n));
      }
    }
    // A SIGUSR1 since the last poll: one more request in the workers' shared file.
    if (requests && opt.checkpoint_requests->load() != requests_seen) {
      requests_seen = opt.checkpoint_requests->load();
      requests->request();
    }
    if (on_progress) on_progress();
  };
  const GroupOutcome outcome = group.supervise(so);
  const auto& ws = group.ranks();
  if (outcome == GroupOutcome::kFailed) {
    const auto& order = group.failed_order();
    auto why = [&](int r) { return describe(ws[static_cast<size_t>(r)], json_paths[static_cast<size_t>(r)]); };
    std::string msg = fmt::format("{}: first failure: {}", scfg.name, why(order[0]));
    for (size_t i = 1; i < order.size(); ++i) msg += "; then " + why(order[i]);
    int stopped = 0;
    for (const auto& w : ws) stopped += w.stopped_by_us;
    if (stopped) msg += fmt::format("; {} other rank(s) stopped by the coordinator", stopped);
    msg += fmt::format(" (logs: {})", opt.work_dir);
    throw ProcessRunError(msg);
  }
  if (outcome == GroupOutcome::kDeadline)
    throw ProcessRunError(fmt::format("{}: not finished within the deadline of {} s; every worker killed (logs: {})",
                                      scfg.name, deadline.count() / 1000, opt.work_dir));

  std::vector<model::RankReport> reports(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    const std::string& json_path = json_paths[static_cast<size_t>(r)];
    try {
      model::RankReport& rr = reports[static_cast<size_t>(r)];
      rr = model::load_rank_report(json_path);
      if (rr.failure) throw std::runtime_error(rr.failure->type + ": " + rr.failure->message);
      if (ws[static_cast<size_t>(r)].killed_as_planned && !(rr.faults && rr.faults->killed_at_step))
        throw std::runtime_error("killed as planned, but its report has no kill");
    } catch (const std::exception& e) {
      throw ProcessRunError(fmt::format("{}: rank {} exited 0 but its report {} is unusable: {}", scfg.name, r, json_path, e.what()));
    }
  }
  if (rep != 0) {  // what rank 0 would have reported, from the reporting rank
    model::RankReport& r0 = reports[0];
    const model::RankReport& rr = reports[static_cast<size_t>(rep)];
    r0.step_end_s = rr.step_end_s;
    r0.wall_s = rr.wall_s;
    r0.accuracy_curve = rr.accuracy_curve;
    r0.final_weights_sha256 = rr.final_weights_sha256;
  }
  model::StrategyRun run = engine::merge_rank_reports(scfg.name, reports, sc.workload, M);
  uint64_t refused = 0;
  for (const model::RankReport& rr : reports) refused += rr.refused_connections.value_or(0);
  run.refused_connections = refused;
  if (sc.faults.active()) {
    std::vector<model::RankFaultLog> logs;
    for (const model::RankReport& rr : reports) {
      if (!rr.faults) throw ProcessRunError(fmt::format("{}: rank {}'s report has no \"faults\"", scfg.name, rr.rank));
      logs.push_back(*rr.faults);
    }
    run.faults = model::merge_fault_logs(sc.faults, layout, logs, rep);
  }
  return run;
}

}  // namespace geotb::harness
