// geotb worker <scenario> --strategy NAME [--out rank.json]: one rank of a process-mode run,
// configured torchrun-style by environment variables (docs/guide/network-modes.md).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "common/units.h"
#include "engine/collectives/intra_dc.h"
#include "engine/collectives/store.h"
#include "engine/checkpoint/file.h"
#include "engine/errors.h"
#include "engine/process_worker.h"
#include "harness/progress_fifo.h"
#include "harness/cmd_worker.h"
#include "harness/scenario.h"
#include "model/rank_report.h"

namespace geotb::harness {

namespace {

struct WorkerArgs {
  std::string scenario, strategy, out;
  std::string timeout = "30s", heartbeat = "1s";
  std::string checkpoint_dir;       ///< "" = the scenario's checkpoint.dir
  std::string checkpoint_requests;  ///< the coordinator's request file (geotb run --net process|dpdk)
  std::string progress_fifo;        ///< the coordinator's progress pipe (harness/progress_fifo.h); "" = none
  std::string resume;               ///< a checkpoint to continue from
  std::string predecessor;          ///< a restarted rank: its previous process's rank file
};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

long env_int(const char* name, long lo, long hi, std::optional<long> def = std::nullopt) {
  const auto v = env(name);
  if (!v) {
    if (def) return *def;
    throw engine::ConfigError(fmt::format("{}: not set (required)", name));
  }
  char* end = nullptr;
  const long x = std::strtol(v->c_str(), &end, 10);
  if (*end != '\0' || x < lo || x > hi) throw engine::ConfigError(fmt::format("{}: \"{}\": expected an integer in [{}, {}]", name, *v, lo, hi));
  return x;
}

/// The local address the kernel would use toward host:port (a connected UDP socket sends
/// nothing); 127.0.0.1 if that fails.
std::string address_toward(const std::string& host, uint16_t port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return "127.0.0.1";
  std::string out = "127.0.0.1";
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char buf[INET_ADDRSTRLEN];
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 && inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf))
      out = buf;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return out;
}

int run_worker(const WorkerArgs& a) {
  int rank = -1, dc = -1, local = -1;
  // The rank file names the failure's kind; the exit status is the kind's (engine/errors.h).
  auto fail = [&](const std::exception& failure) {
    const engine::ErrorKind kind = engine::error_kind(failure);
    const model::RankFailure err{std::string(engine::error_kind_name(kind)), failure.what()};
    fmt::print(stderr, "geotb worker: rank {} (dc {}): {}: {}\n", rank, dc, err.type, err.message);
    if (!a.out.empty()) {
      try {
        model::RankReport failed;
        failed.strategy = a.strategy;
        failed.rank = rank;
        failed.dc = dc;
        failed.local_rank = local;
        failed.failure = err;
        model::save_rank_report(failed, a.out);
      } catch (const std::exception& e) {
        fmt::print(stderr, "geotb worker: writing {}: {}\n", a.out, e.what());
      }
    }
    return engine::exit_code(kind);
  };
  try {
    const Scenario sc = load_scenario(a.scenario);
    const engine::StrategyConfig* scfg = nullptr;
    for (const auto& c : sc.strategies)
      if (c.run_name() == a.strategy) scfg = &c;
    if (!scfg) throw engine::ConfigError(fmt::format("--strategy: \"{}\": not in {}", a.strategy, a.scenario));

    engine::ProcessWorkerConfig cfg;
    cfg.layout = model::rank_layout(sc.cluster);
    cfg.world = static_cast<int>(env_int("WORLD_SIZE", 1, 1 << 20));
    rank = cfg.rank = static_cast<int>(env_int("RANK", 0, cfg.world - 1));
    const bool in_layout = cfg.rank < cfg.layout.world();  // else validate() names WORLD_SIZE
    dc = cfg.dc = static_cast<int>(env_int("GEOTB_DC", 0, 1 << 20, in_layout ? cfg.layout.dc_of(cfg.rank) : 0));
    local = cfg.local_rank =
        static_cast<int>(env_int("GEOTB_LOCAL_RANK", 0, 1 << 20, in_layout ? cfg.layout.local_of(cfg.rank) : 0));
    const auto master = env("MASTER_ADDR");
    if (!master) throw engine::ConfigError("MASTER_ADDR: not set (required)");
    cfg.master_addr = *master;
    cfg.master_port = static_cast<uint16_t>(env_int("MASTER_PORT", 1, 65535));
    cfg.bind_addr = env("GEOTB_BIND_ADDR").value_or(address_toward(cfg.master_addr, cfg.master_port));
    cfg.secret = env("GEOTB_SECRET").value_or("");
    if (cfg.secret.empty())
      fmt::print(stderr,
                 "geotb worker: warning: GEOTB_SECRET is not set: rank {}'s transport accepts any connection that "
                 "names a rank of this run (set the same GEOTB_SECRET on every rank; geotb run draws one for its "
                 "workers)\n",
                 cfg.rank);
    try {
      cfg.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(common::parse_duration(a.timeout));
      cfg.heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(common::parse_duration(a.heartbeat));
    } catch (const common::UnitError& e) {
      throw engine::ConfigError(fmt::format("--timeout/--heartbeat: {}", e.what()));
    }
    cfg.wan_links = model::directed_wan_links(sc.cluster);
    if (!sc.cluster.wan.empty()) {
      cfg.wan_rate_bps = sc.cluster.wan[0].a_to_b.rate_bps;
      cfg.wan_rtt_s = std::chrono::duration<double>(sc.cluster.wan[0].a_to_b.delay + sc.cluster.wan[0].b_to_a.delay).count();
    }
    if (auto e = engine::validate(cfg); !e.empty()) throw engine::ConfigError(e);

    engine::Datasets data;
    data.train = engine::load_fashion_mnist(engine::kFashionMnistDir, true, sc.train_limit);
    // Rank 0 reports, or the lowest rank the timeline never kills; a store of its own then
    // (GEOTB_STORE_EXTERNAL=1, `geotb store`: geotb run starts it when the timeline kills rank 0).
    cfg.reporter = sc.faults.first_never_killed(cfg.layout);
    cfg.serve_store = env_int("GEOTB_STORE_EXTERNAL", 0, 1, 0) == 0;
    if (cfg.reporter == 0 && !cfg.serve_store && cfg.rank == 0)
      fmt::print("geotb worker: rank 0 does not serve the store (GEOTB_STORE_EXTERNAL=1)\n");
    if (cfg.reporter != 0 && cfg.serve_store)
      throw engine::ConfigError(fmt::format("GEOTB_STORE_EXTERNAL: not set, but the timeline kills rank 0: the store "
                                            "must be served by a process of its own (geotb store)"));
    if (cfg.rank == cfg.reporter)
      data.test = engine::load_fashion_mnist(engine::kFashionMnistDir, false, sc.test_limit);

    // The reporting rank prints "progress <done> <total> <seconds>" about once a second to its log
    // (for whoever reads it) and writes it to the coordinator's pipe (--progress-fifo: geotb run
    // --net process|dpdk, harness/progress_fifo.h).
    double last = -1;
    std::optional<ProgressWriter> pipe;
    if (!a.progress_fifo.empty()) pipe.emplace(a.progress_fifo);
    auto progress = [&last, &pipe](int done, int total, double t) {
      if (done == total || t - last >= 1.0) {
        last = t;
        fmt::print("progress {} {} {:.3f}\n", done, total, t);
        std::fflush(stdout);
        if (pipe) pipe->write(done, total, t);
      }
    };
    fmt::print("geotb worker: rank {} of {} (dc {}, local rank {}), {}, store {}:{}, bind {}\n", cfg.rank, cfg.world,
               cfg.dc, cfg.local_rank, scfg->name, cfg.master_addr, cfg.master_port, cfg.bind_addr);
    std::fflush(stdout);
    // GEOTB_TIMELINE_PID (rank 0; set by geotb run --net dpdk): the emulator, which starts the
    // scenario's timeline on SIGUSR1, gets it when every rank has passed the start barrier
    // (run_process_worker calls `started` on rank 0 only).
    std::function<void()> started;
    if (const auto pid = static_cast<pid_t>(env_int("GEOTB_TIMELINE_PID", 1, INT_MAX, 0)); pid > 0) {
      started = [pid] {
        if (kill(pid, SIGUSR1) != 0)
          fmt::print(stderr, "geotb worker: GEOTB_TIMELINE_PID={}: kill(SIGUSR1): {}\n", pid, std::strerror(errno));
      };
    }
    engine::ProcessCheckpointing ckpt;
    ckpt.dir = a.checkpoint_dir.empty() ? sc.checkpoint.dir : a.checkpoint_dir;
    ckpt.every_steps = sc.checkpoint.every_steps;
    ckpt.requests_file = a.checkpoint_requests;
    ckpt.scenario_hash = sc.checkpoint.training_hash;
    ckpt.resume = a.resume;
    ckpt.written = [](int step, const std::string& dir) {
      fmt::print("geotb worker: checkpoint after step {}: {}\n", step, dir);
      std::fflush(stdout);
    };
    // Node faults: the rank the timeline kills writes what it measured, then stops dead.
    engine::ProcessFaults faults;
    faults.plan = sc.faults;
    faults.killed = [&a, &cfg](const model::RankReport& rr) {
      if (!a.out.empty()) model::save_rank_report(rr, a.out);
      fmt::print("geotb worker: rank {} killed by the scenario's timeline at step {}; waiting for SIGKILL\n", cfg.rank,
                 rr.faults && rr.faults->killed_at_step ? *rr.faults->killed_at_step : -1);
      std::fflush(stdout);
    };
    // A restart's new process (geotb run spawns it again once it has reaped the killed one).
    faults.incarnation = static_cast<int>(env_int("GEOTB_INCARNATION", 0, 1 << 20, 0));
    if (faults.incarnation > 0) {
      if (a.predecessor.empty())
        throw engine::ConfigError(fmt::format("GEOTB_INCARNATION: {}: a restarted rank needs --predecessor (its "
                                              "previous process's rank file)",
                                              faults.incarnation));
      faults.predecessor = model::load_rank_report(a.predecessor);
      fmt::print("geotb worker: rank {} restarted (incarnation {}); its predecessor's report: {}\n", cfg.rank,
                 faults.incarnation, a.predecessor);
      std::fflush(stdout);
    }
    const model::RankReport r =
        engine::run_process_worker(cfg, *scfg, sc.workload, data, progress, started, ckpt, faults);
    if (!a.out.empty()) model::save_rank_report(r, a.out);
    fmt::print("geotb worker: rank {} done{}\n", cfg.rank,
               cfg.rank == cfg.reporter ? fmt::format(": wall {:.2f} s, test accuracy {:.4f}", r.wall_s, r.accuracy_curve.back().accuracy) : "");
    return 0;
  } catch (const std::exception& e) {
    return fail(e);
  }
}

}  // namespace

void register_worker_command(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "Run one rank of a process-mode run (env: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, GEOTB_DC, "
      "GEOTB_LOCAL_RANK, GEOTB_BIND_ADDR, GEOTB_SECRET, GEOTB_INCARNATION; see docs/guide/network-modes.md)");
  cmd->add_option("scenario", args->scenario, "Scenario file")->required();
  cmd->add_option("--strategy", args->strategy, "Strategy of the scenario to train")->required();
  cmd->add_option("--out", args->out, "Write this rank's metrics (or its error) here as JSON");
  cmd->add_option("--timeout", args->timeout, "A peer, collective or store wait failing after this is an error")
      ->capture_default_str();
  cmd->add_option("--heartbeat", args->heartbeat, "Transport keep-alive interval")->capture_default_str();
  cmd->add_option("--checkpoint-dir", args->checkpoint_dir, "Write checkpoints here (default: the scenario's checkpoint.dir)");
  cmd->add_option("--checkpoint-requests", args->checkpoint_requests,
                  "The coordinator's checkpoint request file (geotb run forwards SIGUSR1 through it)");
  cmd->add_option("--resume", args->resume, "Continue from this checkpoint (docs/guide/checkpoints.md)");
  cmd->add_option("--progress-fifo", args->progress_fifo,
                  "Write progress lines to this named pipe (the coordinator's; geotb run --net process|dpdk)");
  cmd->add_option("--predecessor", args->predecessor,
                  "A restarted rank (GEOTB_INCARNATION > 0): the rank file its killed process wrote");
  cmd->callback([args]() {
    if (const int rc = run_worker(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
