#include "harness/cmd_run.h"

#include <fmt/format.h>

#include <memory>
#include <sstream>

#include "engine/cluster.h"
#include "harness/progress.h"
#include "harness/report.h"
#include "harness/scenario.h"

namespace geotb::harness {

namespace {

struct RunArgs {
  std::string scenario;
  std::string strategies;
  std::string out = "reports";
  std::vector<std::string> argv;
};

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int run(const RunArgs& a) {
  Scenario sc;
  try {
    sc = load_scenario(a.scenario);
  } catch (const ScenarioError& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  std::vector<engine::StrategyConfig> chosen = sc.strategies;
  if (!a.strategies.empty()) {
    chosen.clear();
    for (const auto& name : split_csv(a.strategies)) {
      bool found = false;
      for (const auto& c : sc.strategies)
        if (c.name == name) {
          chosen.push_back(c);
          found = true;
        }
      if (!found) {
        std::string have;
        for (const auto& c : sc.strategies) have += (have.empty() ? "" : ", ") + c.name;
        fmt::print(stderr, "geotb: error: --strategies: \"{}\": not in {} (has: {})\n", name, a.scenario, have);
        return 2;
      }
    }
  }

  RunContext ctx;
  ctx.argv = a.argv;
  ctx.scenario_file = a.scenario;
  ctx.started_at = utc_now_iso();

  engine::Datasets data;
  try {
    data.train = engine::load_fashion_mnist(engine::kFashionMnistDir, true, sc.train_limit);
    data.test = engine::load_fashion_mnist(engine::kFashionMnistDir, false, sc.test_limit);
  } catch (const engine::DataError& e) {
    fmt::print(stderr, "geotb: error: {}\n", e.what());
    return 2;
  }
  int workers = 0;
  for (const auto& d : sc.cluster.dcs) workers += d.workers;
  fmt::print("geotb: scenario {} ({}), {} data centers x {} workers, {} steps of {} per worker, {} train / {} test examples\n",
             sc.name, sc.hash.substr(0, 12), sc.cluster.dcs.size(), sc.cluster.dcs[0].workers, sc.workload.steps,
             sc.workload.batch_per_worker, data.train.size, data.test.size);

  std::vector<engine::StrategyResult> results;
  std::vector<std::pair<std::string, std::string>> failures;
  for (const auto& c : chosen) {
    Progress prog(stdout, c.name, static_cast<size_t>(sc.workload.batch_per_worker) * static_cast<size_t>(workers));
    engine::RunOptions opt;
    opt.progress = [&prog](int done, int total, double t) { prog.update(done, total, t); };
    try {
      results.push_back(engine::run_strategy(sc.cluster, sc.workload, c, data, opt));
      const auto& r = results.back();
      prog.finish(fmt::format("done: {:.0f} samples/s, test accuracy {:.4f}, wall {:.1f} s", r.samples_per_s,
                              r.final_test_accuracy, r.wall_s));
    } catch (const std::exception& e) {
      prog.finish(fmt::format("FAILED: {}", e.what()));
      failures.emplace_back(c.name, e.what());
    }
  }
  nlohmann::json rep = make_report(sc, results, ctx);
  rep["failures"] = nlohmann::json::array();
  for (const auto& [n, e] : failures) rep["failures"].push_back({{"strategy", n}, {"error", e}});
  std::string path;
  try {
    path = write_report(rep, a.out, sc.name);
  } catch (const std::exception& e) {
    fmt::print(stderr, "geotb: error: writing the report: {}\n", e.what());
    return 1;
  }
  fmt::print("\n{}\nreport: {}\n", summary_table(rep), path);
  return failures.empty() ? 0 : 1;
}

}  // namespace

void register_run_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto args = std::make_shared<RunArgs>();
  args->argv = argv;
  CLI::App* cmd = app.add_subcommand("run", "Replay a scenario: train every strategy, write a JSON report");
  cmd->add_option("scenario", args->scenario, "Scenario file (scenarios/*.json)")->required();
  cmd->add_option("--strategies", args->strategies, "Comma-separated subset of the scenario's strategies");
  cmd->add_option("--out", args->out, "Directory for the report")->capture_default_str();
  cmd->callback([args]() {
    if (const int rc = run(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace geotb::harness
