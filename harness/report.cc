#include "harness/report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "common/atomic_file.h"
#include "common/units.h"
#include "harness/build_info.h"

namespace geotb::harness {

using nlohmann::json;

std::string utc_now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

json context(const RunContext& ctx) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json j = {
      {"git_revision", kGitRevision},
      {"build_type", kBuildType},
      {"geotb_version", kVersion},
      {"host", host},
      {"hardware_threads", std::thread::hardware_concurrency()},
      {"started_at", ctx.started_at},
      {"argv", ctx.argv},
      {"libraries",
       {{"libtorch", engine::torch_version()},
        {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                      NLOHMANN_JSON_VERSION_PATCH)},
        {"fmt", fmt::format("{}", FMT_VERSION)},
        {"compiler", kCompiler}}},
  };
  if (!ctx.dc_tcp_congestion_control.empty()) j["dc_tcp_congestion_control"] = ctx.dc_tcp_congestion_control;
  return j;
}

json strategy_config(const engine::StrategyConfig& c) {
  json j = {{"name", c.name}};
  if (c.name == "naive_ddp") j["collective"] = c.collective;
  if (engine::strategy_info(c.name).needs_intra_dc) {
    j["K"] = c.K;
    j["overlap"] = c.overlap;
    if (c.name == "hier_ef_topk_int8") {
      j["density"] = c.density;
      j["block"] = c.block;
      j["quantize"] = c.quantize;
    }
  }
  return j;
}

json strategy_json(const engine::StrategyResult& r, const engine::StrategyConfig& c) {
  json ex = json::array();
  double eff_sum = 0;
  for (const auto& e : r.exchange_log) {
    const double eff = e.seconds > 0 ? e.lower_bound_s / e.seconds : 0;
    eff_sum += eff;
    ex.push_back({{"step", e.step}, {"bytes", e.bytes_sent}, {"seconds", e.seconds},
                  {"lower_bound_s", e.lower_bound_s}, {"efficiency", eff}});
  }
  json m = {
      {"samples", r.samples},
      {"wall_s", r.wall_s},
      {"samples_per_s", r.samples_per_s},
      {"compute_s_per_step", r.compute_s_per_step},
      {"exposed_comm_s_per_step", r.exposed_comm_s_per_step},
      {"overlapped_comm_s_per_step", r.overlapped_comm_s_per_step},
      {"compress_s_per_step", r.compress_s_per_step},
      {"comm_compute_ratio", r.comm_compute_ratio},
      {"wan_payload_bytes", r.wan.payload_bytes},
      {"wan_wire_bytes", r.wan.wire_bytes},
      {"wan_messages", r.wan.messages},
      {"wan_retransmissions", r.wan.retransmissions},
      {"exchanges", r.exchanges},
      {"exchange_efficiency_mean", r.exchange_log.empty() ? json(nullptr) : json(eff_sum / r.exchange_log.size())},
      {"final_test_accuracy", r.final_test_accuracy},
      {"replica_max_abs_diff", r.replica_max_abs_diff},
  };
  json acc = json::array();
  for (const auto& p : r.accuracy_curve) acc.push_back({{"step", p.step}, {"samples", p.samples}, {"accuracy", p.accuracy}});
  return {{"name", r.strategy}, {"config", strategy_config(c)}, {"metrics", m},
          {"series", {{"loss", r.loss}, {"step_end_s", r.step_end_s}, {"test_accuracy", acc}}}, {"exchanges", ex}};
}

}  // namespace

json make_report(const Scenario& sc, const std::vector<engine::StrategyResult>& results, const RunContext& ctx,
                 const std::string& baseline) {
  json strategies = json::array();
  const engine::StrategyResult* base = nullptr;
  const engine::StrategyResult* lan = nullptr;
  for (size_t i = 0; i < results.size(); ++i) {
    const engine::StrategyConfig* cfg = nullptr;
    for (const auto& c : sc.strategies)
      if (c.name == results[i].strategy) cfg = &c;
    strategies.push_back(strategy_json(results[i], cfg ? *cfg : engine::StrategyConfig{results[i].strategy}));
    if (results[i].strategy == baseline) base = &results[i];
    if (results[i].strategy == "lan") lan = &results[i];
  }
  json cmp = {{"baseline", base ? json(baseline) : json(nullptr)}, {"strategies", json::object()}};
  for (const auto& r : results) {
    json c;
    if (base) {
      c["throughput_ratio"] = base->samples_per_s > 0 ? r.samples_per_s / base->samples_per_s : 0;
      c["wan_bytes_ratio"] = base->wan.payload_bytes > 0
                                 ? static_cast<double>(r.wan.payload_bytes) / static_cast<double>(base->wan.payload_bytes)
                                 : 0;
      c["accuracy_delta"] = r.final_test_accuracy - base->final_test_accuracy;
    }
    if (lan) c["fraction_of_lan_throughput"] = lan->samples_per_s > 0 ? r.samples_per_s / lan->samples_per_s : 0;
    cmp["strategies"][r.strategy] = c;
  }
  json dcs = json::array();
  for (const auto& d : sc.cluster.dcs) dcs.push_back({{"name", d.name}, {"workers", d.workers}});
  json wan = json::array();
  for (const auto& w : sc.cluster.wan)
    wan.push_back({{"between", {sc.cluster.dcs[static_cast<size_t>(w.a)].name, sc.cluster.dcs[static_cast<size_t>(w.b)].name}},
                   {"bandwidth_bps", w.a_to_b.rate_bps},
                   {"rtt_s", std::chrono::duration<double>(w.a_to_b.delay + w.b_to_a.delay).count()},
                   {"loss_rate", w.a_to_b.loss.stationary_loss()},
                   {"reverse",
                    {{"bandwidth_bps", w.b_to_a.rate_bps},
                     {"loss_rate", w.b_to_a.loss.stationary_loss()}}}});
  return {
      {"schema", "geotb.report"},
      {"schema_version", kReportSchemaVersion},
      {"scenario",
       {{"name", sc.name},
        {"description", sc.description},
        {"file", ctx.scenario_file},
        {"hash", sc.hash},
        {"seed", sc.seed},
        {"network", sc.network},
        {"tcp_congestion_control", sc.tcp_congestion_control},
        {"datacenters", dcs},
        {"wan", wan},
        {"workload",
         {{"model", sc.workload.model.name},
          {"dataset", sc.dataset},
          {"batch_per_worker", sc.workload.batch_per_worker},
          {"steps", sc.workload.steps}}},
        {"check",
         {{"throughput_ratio_tolerance", sc.check.throughput_ratio_tolerance},
          {"accuracy_tolerance", sc.check.accuracy_tolerance},
          {"wan_bytes_ratio_tolerance", sc.check.wan_bytes_ratio_tolerance}}}}},
      {"context", context(ctx)},
      {"strategies", strategies},
      {"comparison", cmp},
  };
}

std::string write_report(const json& j, const std::string& dir, const std::string& name) {
  std::string stamp = utc_now_iso();
  for (char& ch : stamp)
    if (ch == ':') ch = '-';
  return common::write_new_file(dir, fmt::format("{}-{}", name, stamp), ".json", j.dump(1) + "\n");
}

std::string summary_table(const json& rep) {
  std::string out = fmt::format("{:<18} {:>10} {:>8} {:>7} {:>10} {:>10} {:>8} {:>11} {:>6} {:>8} {:>8}\n", "strategy",
                                "samples/s", "x base", "of lan", "compute", "exp.comm", "comm/cp", "WAN bytes",
                                "exch", "test acc", "wall");
  out += fmt::format("{:<18} {:>10} {:>8} {:>7} {:>10} {:>10} {:>8} {:>11} {:>6} {:>8} {:>8}\n", "", "", "", "",
                     "ms/step", "ms/step", "", "", "", "", "s");
  for (const auto& s : rep["strategies"]) {
    const auto& m = s["metrics"];
    const auto& c = rep["comparison"]["strategies"][s["name"].get<std::string>()];
    auto opt = [&](const char* k, const char* f) -> std::string {
      return c.contains(k) ? fmt::format(fmt::runtime(f), c[k].get<double>()) : "-";
    };
    out += fmt::format("{:<18} {:>10.0f} {:>8} {:>7} {:>10.2f} {:>10.2f} {:>8.3f} {:>11} {:>6} {:>8.4f} {:>8.1f}\n",
                       s["name"].get<std::string>(), m["samples_per_s"].get<double>(), opt("throughput_ratio", "{:.2f}x"),
                       opt("fraction_of_lan_throughput", "{:.2f}"), 1e3 * m["compute_s_per_step"].get<double>(),
                       1e3 * m["exposed_comm_s_per_step"].get<double>(), m["comm_compute_ratio"].get<double>(),
                       common::format_bytes(m["wan_payload_bytes"].get<double>()), m["exchanges"].get<uint64_t>(),
                       m["final_test_accuracy"].get<double>(), m["wall_s"].get<double>());
  }
  return out;
}

}  // namespace geotb::harness
