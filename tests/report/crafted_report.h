// Crafted run reports for the report tests: small, valid (harness/report.schema.json) and with
// values chosen by the test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace geotb::harness::crafted {

using nlohmann::json;

struct Strat {
  std::string name;
  double samples_per_s;
  uint64_t wan_bytes;
  double accuracy;
};

inline json strategy_json(const Strat& s) {
  return {{"name", s.name},
          {"config", {{"name", s.name}}},
          {"metrics",
           {{"samples", 1024},
            {"wall_s", 1.0},
            {"samples_per_s", s.samples_per_s},
            {"compute_s_per_step", 0.001},
            {"exposed_comm_s_per_step", 0.002},
            {"overlapped_comm_s_per_step", 0.0},
            {"compress_s_per_step", 0.0},
            {"comm_compute_ratio", 2.0},
            {"wan_payload_bytes", s.wan_bytes},
            {"wan_wire_bytes", s.wan_bytes},
            {"wan_messages", 4},
            {"wan_retransmissions", 0},
            {"exchanges", 4},
            {"exchange_efficiency_mean", nullptr},
            {"final_test_accuracy", s.accuracy},
            {"replica_max_abs_diff", 0.0}}},
          {"series",
           {{"loss", {2.0, 1.5, 1.0, 0.5}},
            {"step_end_s", {0.25, 0.5, 0.75, 1.0}},
            {"test_accuracy", {{{"step", 4}, {"samples", 1024}, {"accuracy", s.accuracy}}}}}},
          {"exchanges", json::array()}};
}

inline json report_json(const std::vector<Strat>& strategies, json check = nullptr, const std::string& hash = std::string(64, 'a')) {
  json st = json::array();
  for (const auto& s : strategies) st.push_back(strategy_json(s));
  json sc = {{"name", "crafted"},
             {"description", "unit test"},
             {"file", "scenarios/crafted.json"},
             {"hash", hash},
             {"seed", 1},
             {"network", "embedded"},
             {"datacenters", {{{"name", "a"}, {"workers", 2}}, {{"name", "b"}, {"workers", 2}}}},
             {"wan", {{{"between", {"a", "b"}}, {"bandwidth_bps", 1e9}, {"rtt_s", 0.01}, {"loss_rate", 0.0}}}},
             {"workload", {{"model", "mlp"}, {"dataset", "fashion-mnist"}, {"batch_per_worker", 64}, {"steps", 4}}}};
  if (!check.is_null()) sc["check"] = check;
  return {{"schema", "geotb.report"},
          {"schema_version", 1},
          {"scenario", sc},
          {"context",
           {{"git_revision", "abc"},
            {"host", "test"},
            {"started_at", "2026-01-01T00:00:00Z"},
            // One CPU for every crafted report: the gate compares their accuracies as on one host.
            {"cpu", {{"model", "Test CPU"}, {"features", "sse4_2 avx avx2 fma"}, {"blas", "Haswell"}, {"onednn_isa", "avx2"}}}}},
          {"strategies", st},
          {"comparison", {{"baseline", "naive_ddp"}, {"strategies", json::object()}}},
          {"failures", json::array()}};
}

}  // namespace geotb::harness::crafted
