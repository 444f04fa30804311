// geotb exec <scenario> [--ranks-per-dc N] -- <command> [args...]: a user's distributed job, one
// process per rank inside its data center's namespace behind the DPDK emulator, with the
// environment torchrun gives; a report of kind "geotb.exec" (model/exec_report.h).
// docs/guide/exec.md. The namespaces and the emulator are the ones `geotb run --net dpdk` uses
// (DpdkSession), the ranks are supervised as that run's workers are (RankGroup).
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "common/cli_units.h"
#include "emulator/dpdk/proc.h"
#include "harness/dpdk_session.h"
#include "harness/net_commands.h"
#include "harness/data_plane_options.h"
#include "harness/rank_group.h"
#include "harness/report.h"
#include "harness/scenario.h"
#include "model/exec_report.h"

namespace geotb::harness {

namespace {

struct ExecArgs {
  std::string scenario;
  std::vector<std::string> command;
  int ranks_per_dc = 0;                        ///< 0 = the scenario's workers per DC
  std::string out = "reports";
  std::string logs;                            ///< "" = <out>/<scenario>-exec-<UTC time>-logs
  std::chrono::milliseconds deadline{600000};  ///< whole job, spawn to the last exit
  std::string net_prefix = "gtbexec";
  int rt_priority = -1;  ///< -1: 0 (busy polling) on a shielded CPU, else 50
  bool no_shield = false;
  std::string tcp_cc;  ///< "" = the scenario's tcp_congestion_control
  bool quiet = false;  ///< no live view
  std::vector<std::string> argv;
};

/// The user the ranks run as: the one who invoked sudo (SUDO_UID/SUDO_GID), when geotb runs as
/// root through sudo; nullopt = geotb's own.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name, home;
};

std::optional<RunAs> sudo_user() {
  const char* u = std::getenv("SUDO_UID");
  const char* g = std::getenv("SUDO_GID");
  if (geteuid() != 0 || !u || !g) return std::nullopt;
  RunAs r;
  try {
    r.uid = static_cast<uid_t>(std::stoul(u));
    r.gid = static_cast<gid_t>(std::stoul(g));
  } catch (const std::exception&) {
    throw std::runtime_error(fmt::format("SUDO_UID \"{}\" / SUDO_GID \"{}\": not numbers", u, g));
  }
  if (r.uid == 0) return std::nullopt;
  if (const passwd* pw = getpwuid(r.uid)) {
    r.name = pw->pw_name;
    r.home = pw->pw_dir;
  }
  return r;
}

/// Prints every rank's new complete lines as "[r<rank> <dc>] line" (the live view).
class LiveView {
 public:
  LiveView(const std::vector<RankProcess>& ranks, const std::vector<std::string>& dc_names) : ranks_(ranks) {
    for (const auto& r : ranks) {
      prefixes_.push_back(fmt::format("[r{} {}] ", r.rank, dc_names[static_cast<size_t>(r.dc)]));
      offsets_.push_back(0);
      partial_.emplace_back();
    }
  }
  void poll(bool flush_partial) {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      std::ifstream f(ranks_[i].log_path, std::ios::binary);
      if (!f) continue;
      f.seekg(static_cast<std::streamoff>(offsets_[i]));
      std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      offsets_[i] += chunk.size();
      std::string& buf = partial_[i];
      buf += chunk;
      size_t start = 0;
      for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1)
        fmt::print("{}{}\n", prefixes_[i], buf.substr(start, nl - start));
      buf.erase(0, start);
      if (flush_partial && !buf.empty()) {
        fmt::print("{}{}\n", prefixes_[i], buf);
        buf.clear();
      }
    }
    std::fflush(stdout);
  }

 private:
  const std::vector<RankProcess>& ranks_;
  std::vector<std::string> prefixes_;
  std::vector<size_t> offsets_;
  std::vector<std::string> partial_;
};

/// Every GEOTB_METRIC object of a log, in order.
std::vector<nlohmann::json> metrics_of(const std::string& log_path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(log_path);
  for (std::string line; std::getline(f, line);)
    if (auto m = model::parse_metric_line(line)) out.push_back(std::move(*m));
  return out;
}

/// The scenario's timeline as the emulator got it (both directions of each entry).
model::ExecTimeline scheduled_timeline(const Scenario& sc) {
  model::ExecTimeline t;
  const nlohmann::json raw = sc.raw.value("timeline", nlohmann::json::array());
  for (size_t i = 0; i < sc.cluster.timeline.size(); ++i) {
    const auto& ch = sc.cluster.timeline[i];
    model::TimelineEntry e;
    e.at_s = std::chrono::duration<double>(ch.change.at).count();
    e.a = sc.cluster.dcs[static_cast<size_t>(ch.a)].name;
    e.b = sc.cluster.dcs[static_cast<size_t>(ch.b)].name;
    if (i < raw.size() && raw[i].contains("set")) e.set = raw[i]["set"];
    t.changes.push_back(std::move(e));
  }
  t.scheduled = 2 * sc.cluster.timeline.size();
  return t;
}

int run_exec(const ExecArgs& a) {
  Scenario sc;
  try {
    sc = load_scenario(a.scenario);
    if (!a.tcp_cc.empty()) {
      validate_tcp_congestion_control("--tcp-cc", a.tcp_cc);
      sc.tcp_congestion_control = a.tcp_cc;
    }
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  const int M = static_cast<int>(sc.cluster.dcs.size());
  const int N = a.ranks_per_dc > 0 ? a.ranks_per_dc : sc.cluster.dcs[0].workers;
  if (a.ranks_per_dc < 0 || a.ranks_per_dc > 64) {
    fmt::print(stderr, "geotb: error: --ranks-per-dc: {}: must be in [1, 64]\n", a.ranks_per_dc);
    return 2;
  }
  // torchrun's LOCAL_WORLD_SIZE and a job's rank arithmetic assume one size for every node.
  if (const model::RankLayout layout = model::rank_layout(sc.cluster); a.ranks_per_dc == 0 && !layout.uniform()) {
    fmt::print(stderr,
               "geotb: error: {}: datacenters: {} workers: geotb exec runs the same number of ranks in every data "
               "center; give --ranks-per-dc\n",
               a.scenario, layout.describe());
    return 2;
  }
  if (a.command.empty()) {
    fmt::print(stderr, "geotb: error: no command: geotb exec <scenario> -- <command> [args...]\n");
    return 2;
  }
  if (geteuid() != 0) {
    fmt::print(stderr, "geotb: error: geotb exec creates network namespaces: run as root (through sudo, the ranks "
                       "run as you)\n");
    return 2;
  }
  std::optional<RunAs> run_as;
  try {
    run_as = sudo_user();
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  sc.network = NetworkMode::kDpdk;  // the report says how it ran
  sc.clock = engine::ClockMode::kWall;
  std::vector<std::string> dc_names;
  for (const auto& d : sc.cluster.dcs) dc_names.push_back(d.name);

  RunContext ctx;
  ctx.argv = a.argv;
  ctx.scenario_file = a.scenario;
  ctx.started_at = utc_now_iso();
  std::string stamp = ctx.started_at;
  for (char& ch : stamp)
    if (ch == ':') ch = '-';
  const std::string logs = a.logs.empty() ? fmt::format("{}/{}-exec-{}-logs", a.out, sc.name, stamp) : a.logs;
  std::filesystem::create_directories(logs);
  if (run_as && chown(logs.c_str(), run_as->uid, run_as->gid) != 0)
    fmt::print(stderr, "geotb: warning: chown {} to {}:{} failed\n", logs, run_as->uid, run_as->gid);

  model::ExecReport rep;
  rep.command = a.command;
  rep.ranks_per_dc = N;
  rep.world_size = M * N;
  rep.master_port = 29500;  // the namespace of DC 0 is ours: nothing else listens there
  if (run_as) rep.run_as = std::make_pair(static_cast<int>(run_as->uid), static_cast<int>(run_as->gid));
  rep.timeline = scheduled_timeline(sc);

  SignalFlag sig;
  try {
    DpdkSessionOptions dopt;
    dopt.prefix = a.net_prefix;
    dopt.rt_priority = a.rt_priority;
    dopt.shield = !a.no_shield;
    dopt.log_dir = logs;
    dopt.tcp_congestion_control = sc.tcp_congestion_control;
    fmt::print("geotb exec: scenario {} ({}), {} data centers x {} ranks: {}\n", sc.name, sc.hash.substr(0, 12), M, N,
               emu::join(a.command));
    fmt::print("geotb exec: network namespaces {}-* and the DPDK emulator; logs in {}\n", a.net_prefix, logs);
    DpdkSession net(sc, dopt);
    ctx.dc_tcp_congestion_control = net.tcp_congestion_control();
    const std::vector<DcPlacement> places = net.placements();
    rep.master_addr = places.at(0).address;
    net.start_emulator("exec");

    std::vector<std::string> base = environment_without(
        {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
         "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"},
        {"GEOTB_", "TORCHELASTIC_"});
    if (run_as) {
      std::erase_if(base, [](const std::string& kv) {
        return kv.rfind("HOME=", 0) == 0 || kv.rfind("USER=", 0) == 0 || kv.rfind("LOGNAME=", 0) == 0;
      });
      if (!run_as->home.empty()) base.push_back("HOME=" + run_as->home);
      if (!run_as->name.empty()) {
        base.push_back("USER=" + run_as->name);
        base.push_back("LOGNAME=" + run_as->name);
      }
    }
    std::vector<RankSpec> specs;
    for (int r = 0; r < M * N; ++r) {
      RankSpec s;
      s.rank = r;
      s.dc = r / N;
      const DcPlacement& pl = places.at(static_cast<size_t>(s.dc));
      s.log_path = fmt::format("{}/rank-{}.log", logs, r);
      s.argv = {"ip", "netns", "exec", pl.netns};
      if (!pl.cpus.empty()) s.argv.insert(s.argv.end(), {"taskset", "-c", pl.cpus});
      if (run_as)  // the namespace is entered as root; the command runs as the user who called sudo
        s.argv.insert(s.argv.end(), {"setpriv", fmt::format("--reuid={}", run_as->uid),
                                     fmt::format("--regid={}", run_as->gid),
                                     run_as->name.empty() ? "--clear-groups" : "--init-groups", "--"});
      s.argv.insert(s.argv.end(), a.command.begin(), a.command.end());
      s.env = base;
      for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
               {"MASTER_ADDR", rep.master_addr},
               {"MASTER_PORT", std::to_string(rep.master_port)},
               {"RANK", std::to_string(r)},
               {"WORLD_SIZE", std::to_string(M * N)},
               {"LOCAL_RANK", std::to_string(r % N)},
               {"LOCAL_WORLD_SIZE", std::to_string(N)},
               {"GROUP_RANK", std::to_string(s.dc)},
               {"GROUP_WORLD_SIZE", std::to_string(M)},
               {"GEOTB_DC", std::to_string(s.dc)},
               {"GEOTB_DC_NAME", dc_names[static_cast<size_t>(s.dc)]},
               {"GEOTB_BIND_ADDR", pl.address},
               // Gloo and NCCL pick their interface from the host name (127.0.0.1 here) unless told
               {"GLOO_SOCKET_IFNAME", pl.ifname},
               {"NCCL_SOCKET_IFNAME", pl.ifname}})
        s.env.push_back(k + "=" + v);
      specs.push_back(std::move(s));
    }
    RankGroup group(std::move(specs));
    // The scenario's timeline counts from here: every rank has been started.
    if (const int pid = net.emulator_pid(); pid > 0) kill(pid, SIGUSR1);
    if (run_as)
      for (const auto& r : group.ranks()) (void)chown(r.log_path.c_str(), run_as->uid, run_as->gid);
    LiveView live(group.ranks(), dc_names);
    SuperviseOptions so;
    so.deadline = a.deadline;
    so.interrupted = &sig.flag();
    if (!a.quiet) so.on_poll = [&live] { live.poll(false); };
    GroupOutcome outcome;
    try {
      outcome = group.supervise(so);
    } catch (const Interrupted&) {
      if (!a.quiet) live.poll(true);
      throw;
    }
    if (!a.quiet) live.poll(true);
    const EmulatorStats es = net.stop_emulator();
    if (!es.ok) fmt::print(stderr, "geotb: warning: the emulator's report {} is missing or unreadable\n", es.report_path);
    rep.links = es.links;
    if (es.timeline_origin_s >= 0) rep.timeline.origin_s = es.timeline_origin_s;
    rep.timeline.applied = es.changes_applied;

    rep.status = outcome == GroupOutcome::kDone ? "ok" : outcome == GroupOutcome::kFailed ? "failed" : "deadline";
    rep.wall_s = group.wall_s();
    for (const auto& r : group.ranks()) {
      model::ExecRank er;
      er.rank = r.rank;
      er.dc = r.dc;
      er.local_rank = r.rank % N;
      er.exit_status = r.child.exit_status();
      er.signal = r.child.term_signal();
      er.stopped_by_geotb = r.stopped_by_us;
      er.wall_s = r.wall_s();
      er.log = r.log_path;
      er.metrics = metrics_of(r.log_path);
      rep.ranks.push_back(std::move(er));
    }
    if (outcome == GroupOutcome::kFailed) {
      const RankProcess& f = group.ranks().at(static_cast<size_t>(group.failed_order().front()));
      std::string msg = fmt::format("rank {} (dc {}, {}): {}", f.rank, f.dc, dc_names[static_cast<size_t>(f.dc)],
                                    describe_exit(f.child));
      if (const std::string tail = log_tail(f.log_path, 2); !tail.empty()) msg += "; log: " + tail;
      rep.first_failure = model::ExecFailure{f.rank, f.dc, f.child.exit_status(), f.child.term_signal(), msg};
    }
  } catch (const Interrupted& e) {
    fmt::print(stderr, "\ngeotb exec: {}: every rank stopped, network torn down; no report written (logs: {})\n",
               e.what(), logs);
    return 130;
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: {} (logs: {})\n", e.what(), logs);
    return 1;
  }
  // The namespaces are gone (DpdkSession's destructor): write the report.
  rep.scenario = scenario_summary(sc, ctx);
  rep.context = report_context(ctx);
  rep.context.clock = "wall";
  std::string path;
  try {
    path = write_report_json(nlohmann::json(rep), a.out, sc.name + "-exec");
    if (run_as) (void)chown(path.c_str(), run_as->uid, run_as->gid);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: writing the report: {}\n", e.what());
    return 1;
  }
  fmt::print("\n{:<6} {:<10} {:>6} {:>8} {:>8}  {}\n", "rank", "dc", "exit", "wall s", "metrics", "note");
  for (const auto& r : rep.ranks)
    fmt::print("{:<6} {:<10} {:>6} {:>8.2f} {:>8}  {}\n", r.rank, dc_names[static_cast<size_t>(r.dc)], r.exit_status,
               r.wall_s, r.metrics.size(), r.stopped_by_geotb ? "stopped by geotb" : "");
  for (const auto& l : rep.links) {
    uint64_t drops = 0;
    for (const auto& [cause, n] : l.drops) drops += n;
    fmt::print("link {}->{}: {} frames, {} bytes, {} dropped\n", l.from, l.to, l.frames, l.bytes, drops);
  }
  if (!rep.timeline.changes.empty())
    fmt::print("timeline: started {} s after the data plane, {} of {} scheduled link changes applied\n",
               rep.timeline.origin_s ? fmt::format("{:.2f}", *rep.timeline.origin_s) : std::string("never"),
               rep.timeline.applied, rep.timeline.scheduled);
  if (rep.first_failure) fmt::print(stderr, "geotb exec: first failure: {}\n", rep.first_failure->message);
  if (rep.status == "deadline")
    fmt::print(stderr, "geotb exec: not finished within the deadline of {} s; every rank stopped\n",
               a.deadline.count() / 1000.0);
  fmt::print("report: {}\n", path);
  return rep.status == "ok" ? 0 : 1;
}

}  // namespace

}  // namespace geotb::harness

void register_exec_command(CLI::App& app, const std::vector<std::string>& argv) {
  using geotb::harness::ExecArgs;
  auto a = std::make_shared<ExecArgs>();
  a->argv = argv;
  CLI::App* cmd = app.add_subcommand(
      "exec", "Run your own distributed job (torchrun-style environment) once per rank inside the scenario's emulated "
              "data centers (root); writes a report of kind geotb.exec");
  cmd->add_option("scenario", a->scenario, "Scenario file (its data centers, WAN, timeline)")->required();
  cmd->add_option("command", a->command, "The command each rank runs, after --")->required();
  cmd->add_option("--ranks-per-dc", a->ranks_per_dc, "Ranks per data center (default: the scenario's workers)");
  cmd->add_option("--out", a->out, "Directory for the report")->capture_default_str();
  cmd->add_option("--logs", a->logs, "Directory for rank-<r>.log and the emulator's files (default: "
                                     "<out>/<scenario>-exec-<UTC time>-logs)");
  geotb::common::add_duration_option(*cmd, "--deadline", a->deadline,
                                     "Whole job, from the first spawn to the last exit; every rank is stopped after it");
  cmd->add_option("--net-prefix", a->net_prefix, "Network namespace prefix (<= 8 characters)")->capture_default_str();
  geotb::harness::add_data_plane_cpu_options(*cmd, a->rt_priority, nullptr, a->no_shield, "for the job");
  cmd->add_option("--tcp-cc", a->tcp_cc, "TCP congestion control of the DC hosts, overrides the scenario's");
  cmd->add_flag("--quiet", a->quiet, "No live view of the ranks' output (the logs still get it)");
  cmd->callback([a]() {
    if (const int rc = geotb::harness::run_exec(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}
