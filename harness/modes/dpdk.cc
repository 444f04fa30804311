#include <fmt/format.h>
#include <unistd.h>

#include <optional>

#include "harness/dpdk_session.h"
#include "harness/modes/process.h"
#include "model/metrics.h"

// The dpdk mode: one process per rank in its data center's network namespace, every frame
// between data centers through the DPDK emulator (geotb-emulate). Built with DPDK only
// (harness/meson.build); without it modes/dpdk_absent.cc stands in.

namespace geotb::harness {

namespace {

/// The namespaces for the whole run, the emulator for each strategy.
class DpdkNetwork final : public RankNetwork {
 public:
  DpdkNetwork(ModeRun& run, const std::string& work_dir) : run_(run) {
    const Scenario& sc = run.sc;
    DpdkSessionOptions dopt;
    dopt.prefix = run.net_prefix;
    dopt.rt_priority = run.rt_priority;
    dopt.pin = run.pin;
    dopt.shield = run.shield;
    dopt.log_dir = work_dir;
    dopt.tcp_congestion_control = sc.tcp_congestion_control;
    fmt::print("geotb: network namespaces {}-* and the DPDK emulator (logs in {})\n", run.net_prefix, work_dir);
    session_.emplace(sc, dopt);
    run.ctx.dc_tcp_congestion_control = session_->tcp_congestion_control();
    fmt::print("geotb: TCP congestion control in the DC namespaces: {} (scenario: {})\n",
               run.ctx.dc_tcp_congestion_control, sc.tcp_congestion_control);
  }
  std::vector<DcPlacement> placements() const override { return session_->placements(); }
  void before(const engine::StrategyConfig& c, ProcessRunOptions& po) override {
    session_->start_emulator(c.name);
    po.timeline_pid = session_->emulator_pid();
  }
  void after(model::StrategyRun& r) override {
    const EmulatorStats es = session_->stop_emulator();
    if (es.ok) {
      r.metrics.wan_wire_bytes = es.wan_wire_bytes;  // measured frames, not the estimate
      r.dataplane = es.dataplane;
      const model::DataPlaneSummary& d = es.dataplane;
      fmt::print("geotb: data plane: {}; {} stalls > 1 ms ({:.1f} ms in all, longest iteration {:.1f} ms: {:.3f} % of "
                 "{:.1f} s): {}\n",
                 d.scheduling, d.stalls, d.stall_total_s * 1e3, d.max_iteration_s * 1e3,
                 100 * model::metrics::stall_share(d), d.run_s, model::metrics::stalls_ok(d) ? "ok" : "over 1 %");
    }
    if (es.ok && !run_.sc.cluster.timeline.empty())
      fmt::print("geotb: emulator: timeline started {:.2f} s after the data plane (the first step), {} of {} "
                 "scheduled link changes applied\n",
                 es.timeline_origin_s, es.changes_applied, 2 * run_.sc.cluster.timeline.size());
  }
  void failed() override { session_->stop_emulator(); }

 private:
  ModeRun& run_;
  std::optional<DpdkSession> session_;
};

class DpdkMode final : public Mode {
 public:
  NetworkMode id() const override { return NetworkMode::kDpdk; }
  std::string unavailable() const override {
    return geteuid() != 0 ? "network \"dpdk\" creates network namespaces: run as root" : "";
  }
  int run(ModeRun& run) const override {
    return run_rank_processes(run, [&run](const std::string& work_dir) { return std::make_unique<DpdkNetwork>(run, work_dir); });
  }
};

}  // namespace

const Mode& dpdk_mode() {
  static const DpdkMode mode;
  return mode;
}

}  // namespace geotb::harness
