#include "harness/modes/process.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "harness/progress.h"
#include "harness/rank_group.h"

// The process mode: one OS process per rank on this host's loopback, no WAN emulation.

namespace geotb::harness {

int run_rank_processes(ModeRun& run, const std::function<std::unique_ptr<RankNetwork>(const std::string& work_dir)>& open) {
  const Scenario& sc = run.sc;
  SignalFlag sig;
  const std::string work_dir =
      (std::filesystem::temp_directory_path() / fmt::format("geotb-run-{}-{}", sc.name, getpid())).string();
  ProcessRunOptions po;
  po.scenario_path = run.scenario_path;
  po.worker_timeout = run.worker_timeout.value_or(std::chrono::seconds(30));
  po.deadline = run.deadline;
  po.interrupted = &sig.flag();
  po.checkpoint_dir = run.checkpoint_dir_option;
  po.resume = run.resume ? run.resume->step_dir : "";
  po.checkpoint_requests = run.checkpoint_requests;
  try {
    const std::unique_ptr<RankNetwork> net = open(work_dir);
    po.dcs = net->placements();
    for (const auto& c : run.chosen) {
      Progress prog(stdout, c.run_name(), run.samples_per_step);
      po.progress = [&prog](int done, int total, double t) { prog.update(done, total, t); };
      po.work_dir = work_dir + "/" + c.run_name();
      try {
        net->before(c, po);
        model::StrategyRun r = run_strategy_processes(sc, c, po);
        r.name = c.run_name();
        run.resumed_from(r);
        net->after(r);
        run.results.push_back(std::move(r));
        const model::StrategyMetrics& m = run.results.back().metrics;
        prog.finish(fmt::format("done: {:.0f} samples/s, test accuracy {:.4f}, wall {:.1f} s", m.samples_per_s,
                                m.final_test_accuracy, m.wall_s));
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        net->failed();
        prog.finish(fmt::format("FAILED: {}", e.what()));
        run.failures.push_back({c.run_name(), e.what()});
      }
    }
  } catch (const Interrupted& e) {
    fmt::print(stderr, "\ngeotb: {}: workers killed, network torn down; no report written (worker logs: {})\n", e.what(),
               work_dir);
    return 130;
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 1;
  }
  if (run.failures.empty()) std::filesystem::remove_all(work_dir);
  return 0;
}

namespace {

/// Every data center on 127.0.0.1, no namespace.
class Loopback final : public RankNetwork {
 public:
  explicit Loopback(size_t dcs) : dcs_(dcs) {}
  std::vector<DcPlacement> placements() const override {
    return std::vector<DcPlacement>(dcs_, DcPlacement{"", "127.0.0.1", "", ""});
  }

 private:
  size_t dcs_;
};

class ProcessMode final : public Mode {
 public:
  NetworkMode id() const override { return NetworkMode::kProcess; }
  int run(ModeRun& run) const override {
    const size_t dcs = run.sc.cluster.dcs.size();
    return run_rank_processes(run, [dcs](const std::string&) { return std::make_unique<Loopback>(dcs); });
  }
};

}  // namespace

const Mode& process_mode() {
  static const ProcessMode mode;
  return mode;
}

}  // namespace geotb::harness
