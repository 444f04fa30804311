#include "harness/report.h"

#include <algorithm>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "common/atomic_file.h"
#include "common/units.h"
#include "engine/model/calibrate.h"
#include "engine/strategies/table.h"
#include "harness/build_info.h"
#include "harness/host_cpu.h"
#include "model/metrics.h"

namespace geotb::harness {

std::string utc_now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

model::ReportContext report_context(const RunContext& ctx) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  model::ReportContext c;
  c.git_revision = kGitRevision;
  c.build_type = kBuildType;
  c.geotb_version = kVersion;
  c.host = host;
  c.hardware_threads = std::thread::hardware_concurrency();
  c.cpu = host_cpu();
  c.started_at = ctx.started_at;
  c.argv = ctx.argv;
  c.libraries = {{"libtorch", engine::torch_version()},
                 {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                               NLOHMANN_JSON_VERSION_PATCH)},
                 {"fmt", fmt::format("{}", FMT_VERSION)},
                 {"compiler", kCompiler}};
  if (!ctx.dc_tcp_congestion_control.empty()) c.dc_tcp_congestion_control = ctx.dc_tcp_congestion_control;
  return c;
}

namespace {

}  // namespace

namespace {

/// Which clock produced the time figures, and the compute profile it charged, if any.
void record_clock(const Scenario& sc, model::ReportContext& c) {
  const bool virt = traits(sc.network).in_process && sc.clock == engine::ClockMode::kVirtual;
  c.clock = virt ? "virtual" : "wall";
  if (virt && sc.cluster.lan_collectives == engine::ClusterSpec::LanCollectives::kAnalytic) c.lan_collectives = "analytic";
  if (sc.represented) c.represented_model = sc.represented;
  if (!virt || sc.compute.empty()) return;
  auto profile = [&](size_t i) {
    const engine::ComputeProfile& p = sc.compute[i];
    return model::ReportContext::ComputeProfile{
        std::chrono::duration<double>(p.step_time).count(), p.reduce_ns_per_element, p.compress_ns_per_element,
        i < sc.compute_derived.size() ? sc.compute_derived[i] : std::nullopt,
        i < sc.compute_calibrated.size() ? sc.compute_calibrated[i] : std::nullopt};
  };
  bool uniform = true;
  for (size_t i = 1; i < sc.compute.size(); ++i) uniform = uniform && profile(i) == profile(0);
  if (uniform) {
    c.compute_profile = profile(0);
  } else {
    for (size_t i = 0; i < sc.compute.size(); ++i) c.compute_profile_by_dc[sc.cluster.dcs[i].name] = profile(i);
  }
}

}  // namespace

model::ScenarioSummary scenario_summary(const Scenario& sc, const RunContext& ctx) {
  model::ScenarioSummary s;
  s.name = sc.name;
  s.description = sc.description;
  s.file = ctx.scenario_file;
  s.hash = sc.hash;
  s.seed = sc.seed;
  s.network = to_string(sc.network);
  s.tcp_congestion_control = sc.tcp_congestion_control;
  for (const auto& d : sc.cluster.dcs) s.datacenters.push_back({d.name, d.workers});
  for (const auto& w : sc.cluster.wan)
    s.wan.push_back({sc.cluster.dcs[static_cast<size_t>(w.a)].name, sc.cluster.dcs[static_cast<size_t>(w.b)].name,
                     w.a_to_b.rate_bps, std::chrono::duration<double>(w.a_to_b.delay + w.b_to_a.delay).count(),
                     w.a_to_b.loss.stationary_loss(),
                     model::WanReverse{w.b_to_a.rate_bps, w.b_to_a.loss.stationary_loss()}, {}});
  for (const auto& c : sc.cluster.timeline) {
    if (!c.change.rate_bps) continue;
    for (size_t i = 0; i < sc.cluster.wan.size(); ++i) {
      const auto& w = sc.cluster.wan[i];
      if ((w.a == c.a && w.b == c.b) || (w.a == c.b && w.b == c.a))
        s.wan[i].bandwidth_changes.emplace_back(std::chrono::duration<double>(c.change.at).count(), *c.change.rate_bps);
    }
  }
  for (auto& w : s.wan)
    std::stable_sort(w.bandwidth_changes.begin(), w.bandwidth_changes.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
  s.workload.model = sc.workload.model.name;
  s.workload.dataset = sc.dataset;
  s.workload.batch_per_worker = sc.workload.batch_per_worker;
  s.workload.steps = sc.workload.steps;
  s.workload.target_accuracy = sc.target_accuracy;
  s.workload.eval_points = sc.workload.eval_points;
  s.workload.label_histogram_by_dc = ctx.label_histogram_by_dc;
  if (sc.raw.contains("workload") && sc.raw["workload"].contains("partition") &&
      sc.raw["workload"]["partition"].is_object())
    s.workload.partition = sc.raw["workload"]["partition"];
  if (sc.raw.contains("workload") && sc.raw["workload"].contains("dc_weights") &&
      sc.raw["workload"]["dc_weights"].is_string())
    s.workload.dc_weights = sc.raw["workload"]["dc_weights"].get<std::string>();
  s.workload.dc_weight_by_dc = ctx.dc_weight_by_dc;
  s.workload.global_batch = ctx.global_batch;
  s.check = sc.check;
  return s;
}

nlohmann::json strategy_config_json(const engine::StrategyConfig& c) {
  nlohmann::json j = {{"name", c.name}};
  if (!c.label.empty()) j["label"] = c.label;
  for (const auto& [key, value] : engine::find_strategy(c.name).report(c))
    std::visit([&j, key = std::string(key)](const auto& v) { j[key] = v; }, value);
  return j;
}

model::RunReport make_report(const Scenario& sc, std::vector<model::StrategyRun> runs,
                             std::vector<model::Failure> failures, const RunContext& ctx, const std::string& baseline) {
  model::RunReport r;
  r.scenario = scenario_summary(sc, ctx);
  r.context = report_context(ctx);
  record_clock(sc, r.context);
  if (sc.workload.model.device != "cpu") r.context.device = engine::device_info(sc.workload.model.device);
  for (auto& run : runs) {
    const engine::StrategyConfig* cfg = nullptr;
    for (const auto& c : sc.strategies)
      if (c.run_name() == run.name) cfg = &c;
    run.config = strategy_config_json(cfg ? *cfg : engine::StrategyConfig{run.name});
    if (sc.target_accuracy) run.metrics.time_to_accuracy = model::metrics::time_to_accuracy(run, *sc.target_accuracy);
    model::metrics::derive(run);  // the alarm too, for runs merged before it existed
  }
  r.comparison = model::metrics::compare(runs, baseline);
  r.strategies = std::move(runs);
  r.failures = std::move(failures);
  return r;
}

std::string write_report(const model::RunReport& r, const std::string& dir, const std::string& name) {
  return write_report_json(nlohmann::json(r), dir, name);
}

std::string write_report_json(const nlohmann::json& j, const std::string& dir, const std::string& name) {
  std::string stamp = utc_now_iso();
  for (char& ch : stamp)
    if (ch == ':') ch = '-';
  return common::write_new_file(dir, fmt::format("{}-{}", name, stamp), ".json", j.dump(1) + "\n");
}

std::string summary_table(const model::RunReport& rep) {
  bool seeds = false;
  for (const auto& s : rep.strategies) seeds = seeds || !s.seeds.empty();
  const bool tta = rep.scenario.workload.target_accuracy.has_value();
  // A represented model: its samples (a language model's sequences) and tokens; the proxy's accuracy.
  const auto& rm = rep.context.represented_model;
  const bool lm = rm && rm->sequence_length > 0;
  std::string out = fmt::format("{:<18} {:>10} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>6} {:>8} {:>8} {:>8}",
                                "strategy", "samples/s", "x base", "of lan", "compute", "compress", "exp.comm",
                                "comm/cp", "WAN bytes", "exch", "per exch", rm ? "proxy acc" : "test acc", "wall");
  std::string units = fmt::format("{:<18} {:>10} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>6} {:>8} {:>8} {:>8}", "",
                                  "", "", "", "ms/step", "ms/step", "ms/step", "", "", "", "s", "", "s");
  if (seeds) {
    out += fmt::format(" {:>17}", "acc mean ± sd");
    units += fmt::format(" {:>17}", "(seeds)");
  }
  if (tta) {
    out += fmt::format(" {:>10} {:>10}", "TTA", "TTA");
    units += fmt::format(" {:>10} {:>10}", "s", "samples");
  }
  if (lm) {
    out += fmt::format(" {:>10}", "tokens/s");
    units += fmt::format(" {:>10}", "");
  }
  out += "\n" + units + "\n";
  std::string alarms;
  for (const auto& s : rep.strategies) {
    const model::StrategyMetrics& m = s.metrics;
    const auto it = rep.comparison.strategies.find(s.name);
    const model::StrategyComparison c = it != rep.comparison.strategies.end() ? it->second : model::StrategyComparison{};
    auto opt = [](const std::optional<double>& v, const char* f) -> std::string {
      return v ? fmt::format(fmt::runtime(f), *v) : "-";
    };
    const bool alarm = model::metrics::comm_compute_alarm(m.comm_compute_ratio);
    if (alarm) alarms += fmt::format("{}{} {:.3g}", alarms.empty() ? "" : ", ", s.name, m.comm_compute_ratio);
    out += fmt::format(
        "{:<18} {:>10} {:>8} {:>7} {:>9.2f} {:>9.2f} {:>9.2f} {:>8.3f}{} {:>11} {:>6} {:>8} {:>8.4f} {:>8.1f}", s.name,
        model::format_rate(m.samples_per_s), opt(c.throughput_ratio, "{:.2f}x"), opt(c.fraction_of_lan_throughput, "{:.2f}"),
        1e3 * m.compute_s_per_step, 1e3 * m.compress_s_per_step, 1e3 * m.exposed_comm_s_per_step, m.comm_compute_ratio,
        alarm ? "!" : " ", common::format_bytes(static_cast<double>(m.wan_payload_bytes)), m.exchanges,
        opt(m.exchange_seconds_mean.value_or(std::nullopt), "{:.3g}"), m.final_test_accuracy, m.wall_s);
    if (seeds) {
      const auto sum = model::metrics::seed_summary(s.seeds);
      out += sum ? fmt::format(" {:>17}", fmt::format("{:.4f} ± {:.4f} ({})", sum->final_test_accuracy.mean,
                                                      sum->final_test_accuracy.sd, sum->seeds))
                 : fmt::format(" {:>17}", "-");
    }
    if (tta) {
      const auto& t = m.time_to_accuracy;
      out += fmt::format(" {:>10} {:>10}", t && t->seconds ? fmt::format("{:.2f}", *t->seconds) : "not reached",
                         t && t->samples ? fmt::format("{}", *t->samples) : "-");
    }
    if (lm) out += fmt::format(" {:>10.4g}", m.samples_per_s * static_cast<double>(rm->sequence_length));
    out += "\n";
  }
  if (!alarms.empty())
    out += fmt::format("comm/compute alarm (!: exposed communication above {} of compute): {}\n",
                       model::metrics::kCommComputeAlarm, alarms);
  if (tta)
    out += fmt::format("TTA: first evaluation point with test accuracy >= {:.4g} (of {} points; the first seed's run)\n",
                       *rep.scenario.workload.target_accuracy, rep.scenario.workload.eval_points.value_or(0));
  if (rep.context.clock == "virtual") {
    double host = 0;
    for (const auto& st : rep.strategies) host += st.metrics.host_wall_s.value_or(0);
    out += fmt::format("times in virtual seconds ({}; docs/guide/clocks.md); the host took {:.1f} s{}\n",
                       rep.context.profiled() ? "compute from the scenario's compute profile"
                                              : "compute: measured thread CPU time, minimum of the last 32",
                       host, seeds ? " for the first seed's runs" : "");
    if (rep.context.derived()) out += model::describe_clock(rep.context) + " (context.compute_profile)\n";
    if (rep.context.lan_collectives)
      out += "intra-DC collectives timed analytically, one event each, not message by message (lan.collectives; "
             "docs/guide/scale.md)\n";
  }
  if (rm) out += model::describe_represented(rep.context) + " (context.represented_model)\n";
  return out;
}

}  // namespace geotb::harness
