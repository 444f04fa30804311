// Scenario validation: good files load, bad ones fail with a message naming field and value.
#include "harness/scenario.h"
#include "common/units.h"
#include "model/represented.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using geotb::harness::parse_scenario;
using geotb::harness::ScenarioError;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

json good() {
  return json::parse(R"({
    "schema": 1, "name": "t", "seed": 3,
    "datacenters": [{"name": "a", "workers": 2}, {"name": "b", "workers": 2}],
    "lan": {"bandwidth": "100Gbps", "rtt": "20us"},
    "wan": [{"between": ["a", "b"], "bandwidth": "10Gbps", "rtt": "30ms",
             "loss": {"model": "bernoulli", "p": "1e-4"}, "jitter": "1ms"}],
    "timeline": [{"at": "2s", "link": ["a", "b"], "set": {"bandwidth": "1Gbps"}}],
    "workload": {"model": "mlp", "dataset": "fashion-mnist", "partition": "iid",
                 "batch_per_worker": 32, "steps": 10, "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}},
    "strategies": [{"name": "naive_ddp"}, {"name": "hier_ef_topk_int8", "K": 8, "density": "1%", "block": 128}],
    "network": "embedded"
  })");
}

std::string error_of(const json& j) {
  try {
    parse_scenario(j, "s.json");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Scenario, GoodFileParsesIntoStructs) {
  auto sc = parse_scenario(good(), "s.json");
  EXPECT_EQ(sc.name, "t");
  EXPECT_EQ(sc.seed, 3u);
  ASSERT_EQ(sc.cluster.dcs.size(), 2u);
  ASSERT_EQ(sc.cluster.wan.size(), 1u);
  EXPECT_DOUBLE_EQ(sc.cluster.wan[0].a_to_b.rate_bps, 10e9);
  EXPECT_EQ(sc.cluster.wan[0].a_to_b.delay, std::chrono::milliseconds(15));
  EXPECT_DOUBLE_EQ(sc.cluster.wan[0].a_to_b.loss.p, 1e-4);
  EXPECT_EQ(sc.cluster.wan[0].a_to_b.jitter.amount, std::chrono::milliseconds(1));
  EXPECT_EQ(sc.cluster.lan.delay, std::chrono::microseconds(10));
  ASSERT_EQ(sc.cluster.timeline.size(), 1u);
  EXPECT_EQ(sc.cluster.timeline[0].change.at, std::chrono::seconds(2));
  EXPECT_DOUBLE_EQ(*sc.cluster.timeline[0].change.rate_bps, 1e9);
  ASSERT_EQ(sc.strategies.size(), 2u);
  EXPECT_EQ(sc.strategies[1].K, 8);
  EXPECT_DOUBLE_EQ(sc.strategies[1].density, 0.01);
  EXPECT_EQ(sc.strategies[1].block, 128u);
  EXPECT_EQ(sc.hash.size(), 64u);
  EXPECT_EQ(sc.hash, parse_scenario(good(), "x").hash);  // same content, same hash
  EXPECT_EQ(sc.tcp_congestion_control, "auto");          // default: loss-based, unpaced
  json j = good();
  j["tcp_congestion_control"] = "bbr";
  EXPECT_EQ(parse_scenario(j, "s.json").tcp_congestion_control, "bbr");
}

TEST(Scenario, AnalyticLanCollectivesParseAndAreRefusedWhereTheyCannotTime) {
  json j = good();
  j["compute"] = {{"step_time", "20ms"}};
  EXPECT_EQ(parse_scenario(j, "s.json").cluster.lan_collectives, geotb::engine::ClusterSpec::LanCollectives::kMessages);
  j["lan"]["collectives"] = "analytic";
  const auto sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.cluster.lan_collectives, geotb::engine::ClusterSpec::LanCollectives::kAnalytic);
  EXPECT_NE(sc.hash, parse_scenario(good(), "s.json").hash);
  json bad = j;
  bad["lan"]["collectives"] = "fluid";
  EXPECT_THAT(error_of(bad), HasSubstr("lan.collectives: \"fluid\": expected \"messages\""));
  bad = j;
  bad.erase("compute");
  EXPECT_THAT(error_of(bad), HasSubstr("lan.collectives: \"analytic\": analytic collectives need a compute profile"));
  bad = j;
  bad.erase("compute");
  bad["clock"] = "wall";
  EXPECT_THAT(error_of(bad), HasSubstr("lan.collectives: \"analytic\": analytic collectives time the virtual clock's "
                                       "embedded mode only (this scenario: network \"embedded\", clock \"wall\")"));
  bad = j;
  bad["lan"]["loss"] = {{"model", "bernoulli"}, {"p", "1e-4"}};
  EXPECT_THAT(error_of(bad), HasSubstr("lan.collectives: \"analytic\": the analytic model has no LAN loss"));
  bad = j;
  bad["timeline"] = json::array({{{"at_step", 2}, {"kill", {{"dc", "b"}, {"worker", 1}}}}});
  EXPECT_THAT(error_of(bad), HasSubstr("lan.collectives: \"analytic\": analytic collectives do not run with node faults"));
}

TEST(Scenario, UnequalDataCentersAndTheirWeightsParse) {
  json j = good();
  j["datacenters"][1]["workers"] = 5;
  j["timeline"] = json::array({{{"at_step", 2}, {"kill", {{"dc", "b"}, {"worker", 4}}}}});
  auto sc = parse_scenario(j, "s.json");
  EXPECT_EQ(geotb::model::rank_layout(sc.cluster).workers(), (std::vector<int>{2, 5}));
  ASSERT_EQ(sc.faults.events.size(), 1u);
  EXPECT_EQ(sc.faults.events[0].worker, 4);
  EXPECT_EQ(sc.workload.dc_weights, geotb::engine::DcWeighting::kWorkers);  // the default
  j["workload"]["dc_weights"] = "examples";
  EXPECT_EQ(parse_scenario(j, "s.json").workload.dc_weights, geotb::engine::DcWeighting::kExamples);
}

TEST(Scenario, StrategyKeysParseIntoTheConfig) {
  json j = good();
  j["strategies"] = json::parse(R"([{"name": "naive_ddp", "collective": "eager_ring"},
      {"name": "hierarchical", "K": 4, "overlap": false, "quantize": false, "density": 0.5, "block": 7},
      {"name": "lan"}])");
  const auto sc = parse_scenario(j, "s.json");
  ASSERT_EQ(sc.strategies.size(), 3u);
  EXPECT_EQ(sc.strategies[0].name, "naive_ddp");
  EXPECT_EQ(sc.strategies[0].collective, "eager_ring");
  EXPECT_EQ(sc.strategies[0].K, 16);  // defaults kept for absent keys
  EXPECT_EQ(sc.strategies[1].K, 4);
  EXPECT_FALSE(sc.strategies[1].overlap);
  EXPECT_FALSE(sc.strategies[1].quantize);
  EXPECT_DOUBLE_EQ(sc.strategies[1].density, 0.5);
  EXPECT_EQ(sc.strategies[1].block, 7u);
  EXPECT_EQ(sc.strategies[1].collective, "gloo_ring");
  EXPECT_EQ(sc.strategies[2].name, "lan");
  EXPECT_TRUE(sc.strategies[2].overlap);
  EXPECT_DOUBLE_EQ(sc.strategies[2].density, 0.01);
  EXPECT_EQ(sc.strategies[2].block, 256u);
}

TEST(Scenario, PeriodicStrategiesAndTheAccuracyTargetParse) {
  json j = good();
  j["strategies"] = json::parse(R"([{"name": "local_sgd", "tau": 8, "warmup_steps": 50, "warmup_tau": 2,
      "momentum_sync": "averaged", "scaffold": true}, {"name": "diloco", "H": 25, "outer_lr": 0.5,
      "outer_momentum": 0, "wire": "int8", "block": 128, "fedprox_mu": 0.01, "scaffold": false}])");
  j["workload"]["target_accuracy"] = "84%";
  const auto sc = parse_scenario(j, "s.json");
  ASSERT_EQ(sc.strategies.size(), 2u);
  EXPECT_EQ(sc.strategies[0].tau, 8);
  EXPECT_EQ(sc.strategies[0].warmup_steps, 50);
  EXPECT_EQ(sc.strategies[0].warmup_tau, 2);
  EXPECT_EQ(sc.strategies[0].momentum_sync, "averaged");
  EXPECT_TRUE(sc.strategies[0].scaffold);
  EXPECT_EQ(sc.strategies[0].fedprox_mu, 0.0);
  EXPECT_EQ(sc.strategies[1].H, 25);
  EXPECT_EQ(sc.strategies[1].fedprox_mu, 0.01);
  EXPECT_FALSE(sc.strategies[1].scaffold);
  EXPECT_EQ(sc.strategies[1].outer_lr, 0.5);
  EXPECT_EQ(sc.strategies[1].outer_momentum, 0.0);  // an integer JSON number is a number too
  EXPECT_EQ(sc.strategies[1].wire, "int8");
  EXPECT_EQ(sc.strategies[1].block, 128u);
  EXPECT_EQ(sc.target_accuracy, std::optional<double>(0.84));
  j["workload"].erase("target_accuracy");
  EXPECT_FALSE(parse_scenario(j, "s.json").target_accuracy.has_value());
}

TEST(Scenario, ClockDefaultsFollowTheNetworkModeAndTheProfileParses) {
  json j = good();
  EXPECT_EQ(parse_scenario(j, "s.json").clock, geotb::engine::ClockMode::kVirtual);  // embedded default
  EXPECT_TRUE(parse_scenario(j, "s.json").compute.empty());
  j["compute"] = {{"step_time", "85ms"}, {"compress_ns_per_element", 3}};
  auto sc = parse_scenario(j, "s.json");
  ASSERT_EQ(sc.compute.size(), sc.cluster.dcs.size());  // one per DC
  for (const auto& p : sc.compute) {
    EXPECT_EQ(p.step_time, std::chrono::milliseconds(85));
    EXPECT_EQ(p.reduce_ns_per_element, 0.5);  // default
    EXPECT_EQ(p.compress_ns_per_element, 3.0);
  }
  // A DC's own profile overrides the common one, field by field.
  j["datacenters"][1]["compute"] = {{"step_time", "40ms"}};
  sc = parse_scenario(j, "s.json");
  ASSERT_EQ(sc.compute.size(), 2u);
  EXPECT_EQ(sc.compute[0].step_time, std::chrono::milliseconds(85));
  EXPECT_EQ(sc.compute[1].step_time, std::chrono::milliseconds(40));
  EXPECT_EQ(sc.compute[1].compress_ns_per_element, 3.0);  // inherited
  // Per-DC profiles alone: every DC needs one.
  j.erase("compute");
  EXPECT_THAT(error_of(j), HasSubstr("datacenters[0].compute: missing: another data center declares a compute profile"));
  j["datacenters"][0]["compute"] = {{"step_time", "10ms"}};
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.compute[0].step_time, std::chrono::milliseconds(10));
  EXPECT_EQ(sc.compute[0].reduce_ns_per_element, 0.5);  // the default, no common profile
  j["datacenters"][1]["compute"] = {{"reduce_ns_per_element", 1}};
  EXPECT_THAT(error_of(j), HasSubstr("datacenters[1].compute.step_time: missing (required)"));
  j["datacenters"][0].erase("compute");
  j["datacenters"][1].erase("compute");
  j["network"] = "process";
  EXPECT_EQ(parse_scenario(j, "s.json").clock, geotb::engine::ClockMode::kWall);  // real networks: wall
}

// A checkpoint block: parsed, and outside the hash a checkpoint is checked against (where and how
// often a run checkpoints does not change it); anything else in the scenario is inside.
TEST(Scenario, CheckpointBlockParsesAndStaysOutOfTheTrainingHash) {
  json j = good();
  const auto plain = parse_scenario(j, "s.json");
  EXPECT_TRUE(plain.checkpoint.dir.empty());
  EXPECT_EQ(plain.checkpoint.every_steps, 0);
  j["checkpoint"] = {{"every_steps", 25}, {"dir", "ckpt"}};
  const auto with = parse_scenario(j, "s.json");
  EXPECT_EQ(with.checkpoint.every_steps, 25);
  EXPECT_EQ(with.checkpoint.dir, "ckpt");
  EXPECT_EQ(with.checkpoint.training_hash, plain.checkpoint.training_hash);
  // The directory may come from `geotb run --checkpoint-dir` instead (cmd_run refuses neither).
  json nodir = good();
  nodir["checkpoint"] = {{"every_steps", 25}};
  const auto without = parse_scenario(nodir, "s.json");
  EXPECT_EQ(without.checkpoint.every_steps, 25);
  EXPECT_TRUE(without.checkpoint.dir.empty());
  EXPECT_NE(with.hash, plain.hash);
  j["seed"] = 4;
  EXPECT_NE(parse_scenario(j, "s.json").checkpoint.training_hash, plain.checkpoint.training_hash);
}

TEST(Scenario, ShippedScenariosLoad) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(GEOTB_SOURCE_DIR "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(geotb::harness::load_scenario(e.path().string()));
    ++n;
  }
  EXPECT_GE(n, 25);
}

// The gate's tolerances: the ratio ones always have a value; accuracy, timing and bytes only when
// the file sets them (absent: the gate's default for the baseline's mode, harness/check.h).
TEST(Scenario, CheckBlockParsesWithModeDefaultsLeftAbsent) {
  json j = good();
  const auto plain = parse_scenario(j, "s.json");
  EXPECT_EQ(plain.check.throughput_ratio, 0.15);
  EXPECT_FALSE(plain.check.accuracy.has_value());
  EXPECT_FALSE(plain.check.timing.has_value());
  EXPECT_FALSE(plain.check.bytes.has_value());
  j["check"] = {{"timing_tolerance", 0.01}, {"bytes_tolerance", 0.02}, {"accuracy_tolerance", 0.001}};
  const auto with = parse_scenario(j, "s.json");
  EXPECT_EQ(with.check.timing, 0.01);
  EXPECT_EQ(with.check.bytes, 0.02);
  EXPECT_EQ(with.check.accuracy, 0.001);
  EXPECT_EQ(with.check.wan_bytes_ratio, 0.05);
}

// A profile derived from the hardware: step_time = 6 N T / (peak x MFU) from the GPU catalog,
// per-element charges from the GPU's memory bandwidth; a DC may change any input; exclusive with
// step_time; bad input names the field and the value.
TEST(Scenario, ComputeDerivedFromTheHardware) {
  json j = good();
  j["compute"] = {{"gpu", "H100-SXM"}, {"mfu", 0.4}, {"params", "8B"}, {"tokens_per_worker_per_step", 4096}};
  auto sc = parse_scenario(j, "s.json");
  ASSERT_EQ(sc.compute.size(), 2u);
  ASSERT_EQ(sc.compute_derived.size(), 2u);
  ASSERT_TRUE(sc.compute_derived[0].has_value());
  // 6 * 8e9 * 4096 / (989e12 * 0.4) = 1.96608e14 / 3.956e14 s.
  EXPECT_NEAR(sc.compute_derived[0]->step_time_s, 0.49698685540950455, 1e-12);
  EXPECT_EQ(sc.compute[0].step_time, std::chrono::nanoseconds(496986855));
  EXPECT_EQ(sc.compute_derived[0]->gpu, "h100-sxm");
  EXPECT_DOUBLE_EQ(sc.compute[0].reduce_ns_per_element, 12 / 3.35e12 * 1e9);
  EXPECT_DOUBLE_EQ(sc.compute[0].compress_ns_per_element, 1e9 / 97.23e9 * (4.8 / 3.35));
  // A slower site: another GPU, the rest inherited.
  j["datacenters"][1]["compute"] = {{"gpu", "a100-sxm-80gb"}};
  sc = parse_scenario(j, "s.json");
  EXPECT_NEAR(sc.compute_derived[1]->step_time_s, 6 * 8e9 * 4096 / (312e12 * 0.4), 1e-12);
  EXPECT_EQ(sc.compute_derived[1]->params, 8e9);
  // A declared step time in a DC replaces the derivation there; explicit charges are recorded.
  j["datacenters"][1]["compute"] = {{"step_time", "900ms"}};
  sc = parse_scenario(j, "s.json");
  EXPECT_FALSE(sc.compute_derived[1].has_value());
  EXPECT_EQ(sc.compute[1].step_time, std::chrono::milliseconds(900));
  j["datacenters"][1].erase("compute");
  j["compute"]["compress_ns_per_element"] = 0.25;
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.compute[0].compress_ns_per_element, 0.25);
  EXPECT_EQ(sc.compute_derived[0]->compress_source, "declared in the scenario");
}

// workload.represents: a catalog entry or a declared model; the compute's params default to it;
// a language model's samples are its sequences.
TEST(Scenario, RepresentedModelParsesAndDrivesTheDerivation) {
  json j = good();
  j["strategies"][0]["collective"] = "eager_ring";
  j["workload"]["represents"] = "llama3-70b";
  j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"gpus_per_worker", 4}, {"tokens_per_worker_per_step", 4 * 8192}};
  auto sc = parse_scenario(j, "s.json");
  ASSERT_TRUE(sc.represented.has_value());
  EXPECT_EQ(sc.represented->params, 70553706496u);
  EXPECT_EQ(sc.represented->trained_params, 784u * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  EXPECT_EQ(sc.represented->sequence_length, 8192u);
  EXPECT_EQ(sc.compute_derived[0]->params, 70553706496.0);
  EXPECT_EQ(sc.compute_derived[0]->gpus_per_worker, 4);
  // 6 N T / (4 x 989e12 x 0.4); sharding 3 x 3/4 x 2 N / 450e9 is shorter: the step is the compute.
  EXPECT_NEAR(sc.compute_derived[0]->compute_s, 6 * 70553706496.0 * 32768 / (4 * 989e12 * 0.4), 1e-9);
  EXPECT_NEAR(sc.compute_derived[0]->shard_comm_s, 4.5 * 70553706496.0 / 450e9, 1e-9);
  EXPECT_EQ(sc.compute_derived[0]->step_time_s, sc.compute_derived[0]->compute_s);
  EXPECT_EQ(sc.workload.samples_per_worker_per_step, 4u);  // 32768 tokens / 8192
  // Declared: a count, or tensor shapes.
  j["workload"]["represents"] = {{"name", "mine"}, {"params", "1.5B"}};
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.represented->params, 1500000000u);
  EXPECT_EQ(sc.represented->sequence_length, 0u);
  EXPECT_EQ(sc.workload.samples_per_worker_per_step, 0u);  // not a language model: the trained batch
  j["workload"]["represents"] = {{"name", "two"}, {"tensors", {{4096, 4096}, {4096}}}};
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.represented->params, 4096u * 4096 + 4096);
  EXPECT_EQ(sc.represented->how, "declared tensors");
}

// "label": one strategy several times with different keys; reports and --strategies use the label.
TEST(Scenario, LabelsLetAStrategyRunTwice) {
  json j = good();
  j["strategies"] = json::parse(R"([{"name": "naive_ddp"},
      {"name": "powersgd", "label": "powersgd-r1", "start_powerSGD_iter": 2},
      {"name": "powersgd", "label": "powersgd-r4", "matrix_approximation_rank": 4, "start_powerSGD_iter": 2}])");
  const auto sc = parse_scenario(j, "s.json");
  ASSERT_EQ(sc.strategies.size(), 3u);
  EXPECT_EQ(sc.strategies[0].run_name(), "naive_ddp");
  EXPECT_EQ(sc.strategies[1].name, "powersgd");
  EXPECT_EQ(sc.strategies[1].run_name(), "powersgd-r1");
  EXPECT_EQ(sc.strategies[1].powersgd.rank, 1);
  EXPECT_EQ(sc.strategies[2].run_name(), "powersgd-r4");
  EXPECT_EQ(sc.strategies[2].powersgd.rank, 4);
  EXPECT_EQ(sc.strategies[2].powersgd.start_iter, 2);
}

// powersgd's factors follow the represented model's shapes: a count alone is refused.
TEST(Scenario, PowerSgdNeedsTheRepresentedModelsShapes) {
  json j = good();
  j["strategies"] = json::parse(R"([{"name": "naive_ddp", "collective": "eager_ring"},
                                    {"name": "powersgd", "start_powerSGD_iter": 2}])");
  j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"tokens_per_worker_per_step", 8192}};
  json k = j;
  k["workload"]["represents"] = {{"name", "mine"}, {"params", "1B"}};
  EXPECT_EQ(error_of(k),
            "s.json: strategies[1].name: \"powersgd\": its messages follow the represented model's tensor shapes, and "
            "workload.represents gives \"mine\" as a count only: declare its \"tensors\" or name a catalog model");
  k["workload"]["represents"] = "llama3-8b";
  const auto sc = parse_scenario(k, "s.json");
  ASSERT_FALSE(sc.represented_shapes.empty());
  EXPECT_EQ(sc.represented_shapes[0], (std::vector<int64_t>{128256, 4096}));  // the token embedding
  EXPECT_EQ(sc.represented_shapes[2], (std::vector<int64_t>{4096, 4096}));    // layer 0's q (out, in)
  EXPECT_EQ(sc.represented_shapes[3], (std::vector<int64_t>{1024, 4096}));    // k: 8 KV heads of 128
  uint64_t total = 0;
  for (const auto& s : sc.represented_shapes) total += geotb::model::tensor_params({s});
  EXPECT_EQ(total, 8030261248u);
}

// "wire": naive_ddp's gradient allreduce and hierarchical's exchange in 16 bits.
TEST(Scenario, SixteenBitWiresParse) {
  json j = good();
  j["strategies"] = json::parse(R"([{"name": "naive_ddp", "wire": "bf16"}, {"name": "hierarchical", "wire": "fp16"}])");
  const auto sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.strategies[0].wire, "bf16");
  EXPECT_EQ(sc.strategies[1].wire, "fp16");
  j["strategies"] = json::parse(R"([{"name": "naive_ddp"}])");
  EXPECT_EQ(parse_scenario(j, "s.json").strategies[0].wire, "float32");
}

// naive_ddp on Gloo's ring represents a larger model only while Gloo's segment count stays the
// trained model's: 2P = 8 segments (P = 4) of at most 1 MiB, so 2 Mi float32 elements, or 4 Mi
// 16-bit ones (the trained MLP's 109,386 parameters make 8 segments either way).
TEST(Scenario, GloosRingRepresentsTwiceTheElementsOnA16BitWire) {
  json j = good();
  j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"tokens_per_worker_per_step", 8192}};
  j["workload"]["represents"] = {{"name", "x"}, {"params", "3M"}};
  EXPECT_THAT(error_of(j),
              HasSubstr("strategies[0].collective: \"gloo_ring\": Gloo's ring cuts 3000000 float32 gradients"));
  j["strategies"][0]["wire"] = "bf16";
  EXPECT_EQ(error_of(j), "(no error)");
  j["workload"]["represents"]["params"] = "5M";
  EXPECT_THAT(error_of(j),
              HasSubstr("strategies[0].collective: \"gloo_ring\": Gloo's ring cuts 5000000 bf16 gradients"));
}

TEST(Scenario, RepresentedModelErrorsNameFieldAndValue) {
  json j = good();
  j["strategies"][0]["collective"] = "eager_ring";
  j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"tokens_per_worker_per_step", 8192}};
  auto with = [&](json r) {
    json k = j;
    k["workload"]["represents"] = std::move(r);
    return error_of(k);
  };
  EXPECT_THAT(with("llama9-1t"), HasSubstr("workload.represents: \"llama9-1t\": unknown model (the catalog has: gpt2-124m"));
  EXPECT_THAT(with(json{{"name", "x"}, {"params", 0}}), HasSubstr("workload.represents.params: 0: must be > 0"));
  EXPECT_THAT(with(json{{"name", "x"}, {"params", -5}}), HasSubstr("workload.represents.params: -5: must be > 0"));
  EXPECT_THAT(with(json{{"name", "x"}, {"params", "-5B"}}), HasSubstr("workload.represents.params: \"-5B\""));
  EXPECT_THAT(with(json{{"name", "x"}, {"params", "0.5"}}),
              HasSubstr("workload.represents.params: \"0.5\": must be in [1, 1e15]"));
  EXPECT_THAT(with(json{{"name", "x"}, {"tensors", {{4096, 0}}}}),
              HasSubstr("workload.represents.tensors[0][1]: 0: expected a dimension: an integer > 0"));
  EXPECT_THAT(with(json{{"params", "1B"}}), HasSubstr("workload.represents.name: null: required for a declared model"));
  EXPECT_THAT(with(json{{"model", "gpt2-124m"}, {"params", "1B"}}), HasSubstr("give one of"));
  // The mode: Gloo's ring, no compute profile, wall clock, another network.
  json k = j;
  k["workload"]["represents"] = "gpt2-124m";
  k["strategies"][0].erase("collective");
  EXPECT_THAT(error_of(k), HasSubstr("strategies[0].collective: \"gloo_ring\": Gloo's ring cuts 124439808 float32 gradients"));
  k = j;
  k["workload"]["represents"] = "gpt2-124m";
  k.erase("compute");
  EXPECT_THAT(error_of(k), HasSubstr("workload.represents: \"gpt2-124m\": a represented model needs a compute profile"));
  k = j;
  k["workload"]["represents"] = "gpt2-124m";
  k["compute"]["tokens_per_worker_per_step"] = 1000;
  EXPECT_THAT(error_of(k), HasSubstr("compute.tokens_per_worker_per_step: 1000.0: must be a whole number of sequences"));
  k["compute"]["mfu"] = 1.5;
  EXPECT_THAT(error_of(k), HasSubstr("compute.mfu: 1.5: must be a number in (0, 1]"));
  k["compute"]["mfu"] = 0.4;
  k["compute"]["gpus_per_worker"] = 0;
  EXPECT_THAT(error_of(k), HasSubstr("compute.gpus_per_worker: 0"));
  // Represented = trained (scale 1) runs wherever the trained model does.
  k = good();
  k["workload"]["represents"] = {{"name", "self"}, {"params", 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10}};
  EXPECT_EQ(error_of(k), "(no error)");
}

struct Bad {
  const char* what;
  std::function<void(json&)> edit;
  const char* message;
};

class BadScenario : public ::testing::TestWithParam<Bad> {};

TEST_P(BadScenario, FailsNamingFieldAndValue) {
  json j = good();
  GetParam().edit(j);
  EXPECT_THAT(error_of(j), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, BadScenario,
    ::testing::Values(
        Bad{"unit typo", [](json& j) { j["wan"][0]["bandwidth"] = "10Gbs"; },
            "s.json: wan[0].bandwidth: \"10Gbs\": unknown unit \"Gbs\""},
        Bad{"missing unit", [](json& j) { j["wan"][0]["rtt"] = 30; }, "wan[0].rtt: 30: missing unit"},
        Bad{"missing unit in string", [](json& j) { j["wan"][0]["rtt"] = "30"; }, "wan[0].rtt: \"30\": missing unit"},
        Bad{"unknown key", [](json& j) { j["wan"][0]["bandwith"] = "1Gbps"; }, "wan[0].bandwith: unknown key"},
        Bad{"negative checkpoint period", [](json& j) { j["checkpoint"] = {{"every_steps", -5}, {"dir", "c"}}; },
            "checkpoint.every_steps: -5: must be in [0, 1000000]"},
        Bad{"empty checkpoint dir", [](json& j) { j["checkpoint"] = {{"dir", ""}}; }, "checkpoint.dir: \"\": must not be empty"},
        Bad{"unknown checkpoint key", [](json& j) { j["checkpoint"] = {{"dir", "c"}, {"every", 5}}; },
            "checkpoint.every: unknown key"},
        Bad{"negative timing tolerance", [](json& j) { j["check"] = {{"timing_tolerance", -0.01}}; },
            "check.timing_tolerance: -0.01: must be in [0, 10]"},
        Bad{"accuracy tolerance above 1", [](json& j) { j["check"] = {{"accuracy_tolerance", 2}}; },
            "check.accuracy_tolerance: 2: must be in [0, 1]"},
        Bad{"unknown check key", [](json& j) { j["check"] = {{"timing", 0.01}}; }, "check.timing: unknown key"},
        Bad{"unknown GPU", [](json& j) { j["compute"] = {{"gpu", "h900"}, {"mfu", 0.4}, {"params", 1e9}, {"tokens_per_worker_per_step", 1}}; },
            "compute.gpu: \"h900\": unknown GPU (the catalog has: a100-sxm-80gb, h100-pcie, h100-sxm, h200-sxm, mi300x)"},
        Bad{"MFU zero", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0}, {"params", 1e9}, {"tokens_per_worker_per_step", 1}}; },
            "compute.mfu: 0: must be a number in (0, 1]"},
        Bad{"MFU above one", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 1.5}, {"params", 1e9}, {"tokens_per_worker_per_step", 1}}; },
            "compute.mfu: 1.5: must be a number in (0, 1]"},
        Bad{"zero params", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"params", 0}, {"tokens_per_worker_per_step", 1}}; },
            "compute.params: 0: must be > 0"},
        Bad{"negative params", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"params", "-8B"}, {"tokens_per_worker_per_step", 1}}; },
            "compute.params: \"-8B\": must be > 0"},
        Bad{"params with a bad suffix", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"params", "8X"}, {"tokens_per_worker_per_step", 1}}; },
            "compute.params: \"8X\": expected a count"},
        Bad{"missing tokens", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"params", "8B"}}; },
            "compute.tokens_per_worker_per_step: missing (required)"},
        Bad{"step time beside the GPU", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.4}, {"params", "8B"}, {"tokens_per_worker_per_step", 1}, {"step_time", "1s"}}; },
            "compute.step_time: \"1s\": a profile derived from the hardware"},
        Bad{"derived step above an hour", [](json& j) { j["compute"] = {{"gpu", "h100-sxm"}, {"mfu", 0.01}, {"params", "405B"}, {"tokens_per_worker_per_step", 1e6}}; },
            "must be in (0, 1 h]"},
        Bad{"unknown top-level key", [](json& j) { j["strategy"] = json::array(); }, "s.json: strategy: unknown key"},
        Bad{"missing field", [](json& j) { j["workload"].erase("steps"); }, "workload.steps: missing (required)"},
        Bad{"negative workers", [](json& j) { j["datacenters"][1]["workers"] = -3; },
            "datacenters[1].workers: -3: must be in [1, 64]"},
        Bad{"absurd bandwidth", [](json& j) { j["wan"][0]["bandwidth"] = "500Tbps"; },
            "wan[0].bandwidth: \"500Tbps\": must be between 1kbps and 10Tbps"},
        Bad{"negative rtt", [](json& j) { j["wan"][0]["rtt"] = "-5ms"; }, "wan[0].rtt: \"-5ms\": must not be negative"},
        Bad{"probability above 1", [](json& j) { j["wan"][0]["loss"]["p"] = 1.5; },
            "wan[0].loss.p: 1.5: a probability must be in [0, 1]"},
        Bad{"unknown strategy", [](json& j) { j["strategies"][0]["name"] = "magic"; },
            "strategies[0].name: \"magic\": unknown strategy"},
        Bad{"zero K", [](json& j) { j["strategies"][1]["K"] = 0; }, "strategies[1].K: 0: must be in [1, 100000]"},
        Bad{"partition by name", [](json& j) { j["workload"]["partition"] = "dirichlet"; },
            "workload.partition: \"dirichlet\": unknown partition (\"iid\", or an object: dirichlet, label_skew)"},
        Bad{"dirichlet alpha 0", [](json& j) { j["workload"]["partition"] = {{"kind", "dirichlet"}, {"alpha", 0}}; },
            "workload.partition.alpha: 0: must be > 0 (Dirichlet concentration)"},
        Bad{"dirichlet without alpha", [](json& j) { j["workload"]["partition"] = {{"kind", "dirichlet"}}; },
            "workload.partition.alpha: missing (required)"},
        Bad{"dirichlet level", [](json& j) { j["workload"]["partition"] = {{"kind", "dirichlet"}, {"alpha", 1}, {"level", "rack"}}; },
            "workload.partition.level: \"rack\": expected \"dc\" (one share per data center) or \"worker\""},
        Bad{"label skew beyond the classes", [](json& j) { j["workload"]["partition"] = {{"kind", "label_skew"}, {"classes_per_dc", 11}}; },
            "workload.partition.classes_per_dc: 11: more classes per data center than the dataset's 10"},
        Bad{"unknown partition kind", [](json& j) { j["workload"]["partition"] = {{"kind", "shards"}}; },
            "workload.partition.kind: \"shards\": unknown partition (dirichlet, label_skew or semantic; or \"iid\" instead of an object)"},
        Bad{"density above 100%", [](json& j) { j["strategies"][1]["density"] = "150%"; },
            "strategies[1].density: \"150%\": a probability must be in [0, 1]"},
        Bad{"zero density", [](json& j) { j["strategies"][1]["density"] = 0; },
            "strategies[1].density: 0: must be in (0, 100%]"},
        Bad{"zero block", [](json& j) { j["strategies"][1]["block"] = 0; },
            "strategies[1].block: 0: must be in [1, 1048576] elements"},
        Bad{"block beyond the field", [](json& j) { j["strategies"][1]["block"] = 1ll << 31; },
            "strategies[1].block: 2147483648: must be in [0, 1073741824]"},
        Bad{"K not an integer", [](json& j) { j["strategies"][1]["K"] = "8"; },
            "strategies[1].K: \"8\": expected a number of steps or \"auto\" (adaptive K)"},
        Bad{"K neither steps nor auto", [](json& j) { j["strategies"][1]["K"] = 2.5; },
            "strategies[1].K: 2.5: expected an integer"},
        Bad{"auto K blocking", [](json& j) { j["strategies"][1]["K"] = "auto"; j["strategies"][1]["overlap"] = false; },
            "strategies[1].K: \"auto\": needs \"overlap\": true (auto K hides the exchange behind the next K steps; "
            "a blocking exchange is never hidden)"},
        Bad{"K_min without auto", [](json& j) { j["strategies"][1]["K_min"] = 2; },
            "strategies[1].K: 8: K_min, K_max and K_target are for \"K\": \"auto\""},
        Bad{"K_max below K_min", [](json& j) { j["strategies"][1]["K"] = "auto"; j["strategies"][1]["K_min"] = 4; j["strategies"][1]["K_max"] = 2; },
            "strategies[1].K_max: 2: must be in [K_min = 4, 100000] steps"},
        Bad{"K_target of 1", [](json& j) { j["strategies"][1]["K"] = "auto"; j["strategies"][1]["K_target"] = 1; },
            "strategies[1].K_target: 1: must be in (0, 1)"},
        Bad{"auto K bounds on naive_ddp", [](json& j) { j["strategies"][0]["K_min"] = 2; },
            "strategies[0].K_min: 2: only hierarchical, hier_ef_topk_int8 take a K_min"},
        Bad{"K on naive_ddp too", [](json& j) { j["strategies"][0]["K"] = 0; },
            "strategies[0].K: 0: must be in [1, 100000] steps"},
        Bad{"overlap not a flag", [](json& j) { j["strategies"][1]["overlap"] = "yes"; },
            "strategies[1].overlap: \"yes\": expected true or false"},
        Bad{"unknown collective", [](json& j) { j["strategies"][0]["collective"] = "tree"; },
            "strategies[0].collective: \"tree\": unknown (gloo_ring or eager_ring)"},
        Bad{"collective not a string", [](json& j) { j["strategies"][0]["collective"] = 1; },
            "strategies[0].collective: 1: expected a string"},
        Bad{"collective on another strategy", [](json& j) { j["strategies"][1]["collective"] = "eager_ring"; },
            "strategies[1].collective: \"eager_ring\": only naive_ddp takes a collective"},
        Bad{"unknown strategy key", [](json& j) { j["strategies"][1]["topk"] = 3; },
            "strategies[1].topk: unknown key (known here: K, K_max, K_min, K_target, block, bucket_mb, density, faults, label, name, overlap, quantize, quorum)"},
        Bad{"negative bucket_mb", [](json& j) { j["strategies"][0]["bucket_mb"] = -25; },
            "strategies[0].bucket_mb: -25: must be in (0, 1048576] MiB (DDP's bucket_cap_mb; default 25)"},
        Bad{"bucket_mb not a number", [](json& j) { j["strategies"][0]["bucket_mb"] = "25MB"; },
            "strategies[0].bucket_mb: \"25MB\""},
        Bad{"unknown clock", [](json& j) { j["clock"] = "sundial"; }, "s.json: clock: \"sundial\": unknown clock"},
        Bad{"tau on hier", [](json& j) { j["strategies"][1]["tau"] = 4; },
            "strategies[1].tau: 4: only local_sgd takes a tau"},
        Bad{"zero tau",
            [](json& j) { j["strategies"][1] = {{"name", "local_sgd"}, {"tau", 0}}; },
            "strategies[1].tau: 0: must be in [1, 1000000] steps"},
        Bad{"unknown momentum sync",
            [](json& j) { j["strategies"][1] = {{"name", "local_sgd"}, {"momentum_sync", "global"}}; },
            "strategies[1].momentum_sync: \"global\": unknown (local or averaged)"},
        Bad{"scaffold not a flag",
            [](json& j) { j["strategies"][1] = {{"name", "local_sgd"}, {"scaffold", 1}}; },
            "strategies[1].scaffold: 1: expected true or false"},
        Bad{"scaffold on hier", [](json& j) { j["strategies"][1]["scaffold"] = true; },
            "strategies[1].scaffold: true: only local_sgd, diloco take a scaffold"},
        Bad{"unknown scaffold_lr",
            [](json& j) { j["strategies"][1] = {{"name", "local_sgd"}, {"scaffold", true}, {"scaffold_lr", "lr"}}; },
            "strategies[1].scaffold_lr: \"lr\": unknown (optimizer or effective)"},
        Bad{"outer lr not a number",
            [](json& j) { j["strategies"][1] = {{"name", "diloco"}, {"outer_lr", "0.7"}}; },
            "strategies[1].outer_lr: \"0.7\": expected a number"},
        Bad{"outer momentum of 1",
            [](json& j) { j["strategies"][1] = {{"name", "diloco"}, {"outer_momentum", 1}}; },
            "strategies[1].outer_momentum: 1: must be in [0, 1)"},
        Bad{"unknown wire",
            [](json& j) { j["strategies"][1] = {{"name", "diloco"}, {"wire", "int4"}}; },
            "strategies[1].wire: \"int4\": unknown (float32, bf16 or int8)"},
        Bad{"fp8 wire on naive_ddp", [](json& j) { j["strategies"][0]["wire"] = "fp8"; },
            "strategies[0].wire: \"fp8\": unknown (float32, bf16 or fp16)"},
        Bad{"int8 wire on hierarchical",
            [](json& j) { j["strategies"][1] = {{"name", "hierarchical"}, {"wire", "int8"}}; },
            "strategies[1].wire: \"int8\": unknown (float32, bf16 or fp16)"},
        Bad{"wire not a string", [](json& j) { j["strategies"][0]["wire"] = 16; },
            "strategies[0].wire: 16: expected a string"},
        Bad{"wire on hier_ef_topk_int8", [](json& j) { j["strategies"][1]["wire"] = "bf16"; },
            "strategies[1].wire: \"bf16\": only naive_ddp, hierarchical, diloco take a wire"},
        Bad{"target accuracy above 1", [](json& j) { j["workload"]["target_accuracy"] = 1.2; },
            "workload.target_accuracy: 1.2: a probability must be in [0, 1]"},
        Bad{"zero target accuracy", [](json& j) { j["workload"]["target_accuracy"] = 0; },
            "workload.target_accuracy: 0: must be in (0, 1]"},
        Bad{"virtual clock on a real network",
            [](json& j) {
              j["network"] = "dpdk";
              j["clock"] = "virtual";
            },
            "clock: \"virtual\": the dpdk network mode runs in wall time only"},
        Bad{"compute profile on the wall clock",
            [](json& j) {
              j["clock"] = "wall";
              j["compute"] = {{"step_time", "5ms"}};
            },
            "compute: {\"step_time\":\"5ms\"}: a compute profile needs \"clock\": \"virtual\""},
        Bad{"negative step time", [](json& j) { j["compute"] = {{"step_time", "-5ms"}}; },
            "compute.step_time: \"-5ms\": must not be negative"},
        Bad{"compute profile without its step time", [](json& j) { j["compute"] = json::object(); },
            "compute.step_time: missing (required)"},
        Bad{"negative per-element cost",
            [](json& j) { j["compute"] = {{"step_time", "5ms"}, {"reduce_ns_per_element", -1}}; },
            "compute.reduce_ns_per_element: -1: must be"},
        Bad{"strategy listed twice", [](json& j) { j["strategies"][1]["name"] = "naive_ddp"; },
            "strategies[1].name: \"naive_ddp\": strategy listed twice (give each entry a distinct \"label\")"},
        Bad{"label listed twice",
            [](json& j) {
              j["strategies"][0]["label"] = "x";
              j["strategies"][1]["label"] = "x";
            },
            "strategies[1].label: \"x\": label listed twice"},
        Bad{"label with a space", [](json& j) { j["strategies"][0]["label"] = "a b"; },
            "strategies[0].label: \"a b\": expected 1 to 64 of [A-Za-z0-9_.+-]"},
        Bad{"label naming another strategy", [](json& j) { j["strategies"][1]["label"] = "naive_ddp"; },
            "strategies[1].label: \"naive_ddp\": the name of another strategy: reports would confuse them"},
        Bad{"link to nowhere", [](json& j) { j["wan"][0]["between"][1] = "mars"; },
            "wan[0].between[1]: \"mars\": no such data center (have: a, b)"},
        Bad{"global batch of no example", [](json& j) { j["workload"]["global_batch"] = {{"fraction", 0.01}}; },
            "workload.global_batch.fraction: 0.01: must leave at least one example of the pool and one of the shard in a "
            "batch of 32"},
        Bad{"global batch beta", [](json& j) { j["workload"]["global_batch"] = {{"fraction", 0.15}, {"beta", 2}}; },
            "workload.global_batch.beta: 2: must be in [0, 1]"},
        Bad{"semantic embedding", [](json& j) { j["workload"]["partition"] = {{"kind", "semantic"}, {"embedding", "bert"}}; },
            "workload.partition.embedding: \"bert\": unknown embedding (pca"},
        Bad{"unknown dc_weights", [](json& j) { j["workload"]["dc_weights"] = "gpus"; },
            "workload.dc_weights: \"gpus\": expected \"workers\""},
        Bad{"kill past its own DC's workers",
            [](json& j) {
              j["datacenters"][1]["workers"] = 3;
              j["timeline"] = json::array({{{"at_step", 2}, {"kill", {{"dc", "a"}, {"worker", 2}}}}});
            },
            "timeline[0].kill.worker: 2: must be in [0, 1]"},
        Bad{"bad lr", [](json& j) { j["workload"]["optimizer"]["lr"] = -1; }, "workload.optimizer.lr: -1"},
        Bad{"string steps", [](json& j) { j["workload"]["steps"] = "10"; },
            "workload.steps: \"10\": expected an integer"},
        Bad{"wrong schema", [](json& j) { j["schema"] = 2; }, "schema: 2: must be in [1, 1]"},
        Bad{"unknown network mode", [](json& j) { j["network"] = "netem"; },
            "network: \"netem\": unknown network mode (one of \"embedded\""},
        Bad{"congestion control with a space", [](json& j) { j["tcp_congestion_control"] = "bbr 2"; },
            "tcp_congestion_control: \"bbr 2\": expected \"auto\", \"default\" or a kernel congestion control name"},
        Bad{"congestion control not a string", [](json& j) { j["tcp_congestion_control"] = 1; },
            "tcp_congestion_control: 1: expected a string"},
        Bad{"missing wan pair", [](json& j) { j["wan"] = json::array(); }, "wan: []: no link between \"a\" and \"b\""},
        Bad{"async on the wall clock",
            [](json& j) {
              j["strategies"] = json::array({{{"name", "hier_ef_topk_int8"}}, {{"name", "async_ef_topk_int8"}}});
              j["clock"] = "wall";
            },
            "strategies[1].name: \"async_ef_topk_int8\": runs in the embedded mode on the virtual clock only (here: "
            "the embedded mode, wall clock)"},
        Bad{"async in the process mode",
            [](json& j) {
              j["strategies"] = json::array({{{"name", "async_ef_topk_int8"}}});
              j["network"] = "process";
            },
            "strategies[0].name: \"async_ef_topk_int8\": runs in the embedded mode on the virtual clock only (here: "
            "the process mode, wall clock)"},
        Bad{"async with checkpoints",
            [](json& j) {
              j["strategies"] = json::array({{{"name", "async_ef_topk_int8"}, {"max_staleness", 2}}});
              j["checkpoint"] = {{"every_steps", 5}, {"dir", "c"}};
            },
            "strategies[0].name: \"async_ef_topk_int8\": cannot be checkpointed"},
        Bad{"async bound below -1",
            [](json& j) { j["strategies"] = json::array({{{"name", "async_ef_topk_int8"}, {"max_staleness", -2}}}); },
            "strategies[0].max_staleness: -2: must be in [-1, 1000000] rounds (-1: no bound)"}),
    [](const ::testing::TestParamInfo<Bad>& i) {
      std::string s = i.param.what;
      for (char& c : s)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

// ---- node faults: timeline kill / restart / slow, top-level "faults" ----

json with_faults() {
  json j = good();
  j["workload"]["steps"] = 100;
  j["timeline"].push_back({{"at_step", 30}, {"kill", {{"dc", "b"}, {"worker", 1}}}});
  j["timeline"].push_back({{"at_step", 60}, {"restart", {{"dc", "b"}, {"worker", 1}}}});
  j["timeline"].push_back({{"at", "4s"}, {"slow", {{"dc", "a"}, {"worker", 1}, {"factor", 5}, {"steps", 20}}}});
  j["faults"] = {{"heartbeat", {{"interval", "500ms"}, {"timeout", "1500ms"}, {"confirmation", "1s"}}},
                 {"shard", "redistribute"}};
  return j;
}

// A dead site: site c's two workers killed at step 30 and restarted at step 60, in a triangle
// whose one strategy has a quorum of sites.
json dead_site() {
  json j = good();
  j["datacenters"].push_back({{"name", "c"}, {"workers", 2}});
  j["wan"].push_back({{"between", {"a", "c"}}, {"bandwidth", "10Gbps"}, {"rtt", "30ms"}});
  j["wan"].push_back({{"between", {"b", "c"}}, {"bandwidth", "10Gbps"}, {"rtt", "30ms"}});
  j["workload"]["steps"] = 100;
  j["strategies"] = json::array({{{"name", "hier_ef_topk_int8"}, {"K", 4}, {"overlap", false}, {"quorum", "5s"}}});
  for (int w : {0, 1}) j["timeline"].push_back({{"at_step", 30}, {"kill", {{"dc", "c"}, {"worker", w}}}});
  for (int w : {0, 1}) j["timeline"].push_back({{"at_step", 60}, {"restart", {{"dc", "c"}, {"worker", w}}}});
  j["faults"] = {{"full_recovery", {{"above_fraction", 1}}}};
  return j;
}

TEST(ScenarioFaults, ADeadSiteParsesUnderAQuorumOnlyKilledAndRestartedWhole) {
  const auto sc = parse_scenario(dead_site(), "s.json");
  EXPECT_EQ(sc.faults.events.size(), 4u);
  json forever = dead_site();  // dead for good: the others go on without it
  forever["timeline"].erase(4);
  forever["timeline"].erase(3);
  EXPECT_EQ(parse_scenario(forever, "s.json").faults.events.size(), 2u);
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"a strategy without a quorum",
       [](json& j) { j["strategies"].push_back({{"name", "naive_ddp"}}); },
       "timeline[2].kill: {\"dc\":\"c\",\"worker\":1}: kills every worker of its data center (shrink needs a "
       "survivor"},
      {"killed at two steps", [](json& j) { j["timeline"][2]["at_step"] = 31; },
       "timeline[2].at_step: 31: a dead site's workers are killed at one step"},
      {"partly restarted", [](json& j) { j["timeline"].erase(4); },
       "timeline[2].kill: {\"dc\":\"c\",\"worker\":1}: takes the last worker of its data center, which is only "
       "partly restarted: restart all 2 of them at one step, or none"},
      {"restarted at two steps", [](json& j) { j["timeline"][4]["at_step"] = 61; },
       "timeline[4].at_step: 61: a dead site is restarted whole at one step (an earlier restart of it is at step 60)"},
      {"two sites",
       [](json& j) {
         j["datacenters"].erase(2);
         j["wan"] = json::array({j["wan"][0]});
         for (int i : {1, 2}) j["timeline"][i]["kill"]["dc"] = "b";
         for (int i : {3, 4}) j["timeline"][i]["restart"]["dc"] = "b";
       },
       "timeline: \"b\": 1 of 2 data centers are killed whole: a quorum of sites needs a strict majority"},
  };
  for (const Case& c : cases) {
    json j = dead_site();
    c.edit(j);
    EXPECT_THAT(error_of(j), HasSubstr(c.message)) << c.what;
  }
}

TEST(ScenarioFaults, KillsRestartsAndSlowWorkersParseInTheProcessAndDpdkModes) {
  for (const char* mode : {"process", "dpdk"}) {
    json j = with_faults();
    j["network"] = mode;
    const auto sc = parse_scenario(j, "s.json");
    ASSERT_EQ(sc.faults.events.size(), 3u) << mode;
    EXPECT_EQ(sc.faults.events[0].at_step, 30) << mode;
    EXPECT_EQ(sc.faults.events[1].kind, geotb::model::FaultEvent::Kind::kRestart) << mode;
    EXPECT_EQ(sc.faults.events[1].at_step, 60) << mode;
    EXPECT_EQ(sc.faults.events[2].kind, geotb::model::FaultEvent::Kind::kSlow) << mode;
    EXPECT_EQ(sc.clock, geotb::engine::ClockMode::kWall) << mode;
    EXPECT_EQ(sc.faults.shard, "redistribute") << mode;
  }
}

TEST(ScenarioFaults, EventsAndHeartbeatsParse) {
  using geotb::model::FaultEvent;
  auto sc = parse_scenario(with_faults(), "s.json");
  EXPECT_EQ(sc.cluster.timeline.size(), 1u);  // the link change only
  ASSERT_EQ(sc.faults.events.size(), 3u);
  const FaultEvent& k = sc.faults.events[0];
  EXPECT_EQ(k.kind, FaultEvent::Kind::kKill);
  EXPECT_EQ(k.dc, 1);
  EXPECT_EQ(k.worker, 1);
  EXPECT_EQ(k.at_step, 30);
  EXPECT_FALSE(k.at.has_value());
  EXPECT_EQ(sc.faults.events[1].kind, FaultEvent::Kind::kRestart);
  EXPECT_EQ(sc.faults.events[1].at_step, 60);
  const FaultEvent& s = sc.faults.events[2];
  EXPECT_EQ(s.kind, FaultEvent::Kind::kSlow);
  EXPECT_EQ(s.at, std::chrono::seconds(4));
  EXPECT_DOUBLE_EQ(s.factor, 5);
  EXPECT_EQ(s.steps, 20);
  EXPECT_FALSE(s.duration.has_value());
  EXPECT_TRUE(sc.faults.heartbeats);
  EXPECT_EQ(sc.faults.heartbeat.interval, std::chrono::milliseconds(500));
  EXPECT_EQ(sc.faults.heartbeat.timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(sc.faults.heartbeat.confirmation, std::chrono::seconds(1));
  EXPECT_EQ(sc.faults.policy, "shrink");
  EXPECT_EQ(sc.faults.shard, "redistribute");
  // Defaults: heartbeats 2 s / 3 s / 2 s, shard drop; heartbeats on whenever there is an event.
  json j = good();
  j["timeline"] = json::array({{{"at_step", 3}, {"kill", {{"dc", "a"}, {"worker", 1}}}}});
  auto d = parse_scenario(j, "s.json");
  EXPECT_TRUE(d.faults.heartbeats);
  EXPECT_EQ(d.faults.heartbeat.interval, std::chrono::seconds(2));
  EXPECT_EQ(d.faults.heartbeat.timeout, std::chrono::seconds(3));
  EXPECT_EQ(d.faults.heartbeat.confirmation, std::chrono::seconds(2));
  EXPECT_EQ(d.faults.heartbeat.witnesses, 3);
  EXPECT_EQ(d.faults.heartbeat.unreachable, std::chrono::seconds(30));
  EXPECT_EQ(d.faults.shard, "drop");
  j["faults"] = {{"heartbeat", {{"witnesses", 0}, {"unreachable", "1min"}}}};
  EXPECT_EQ(parse_scenario(j, "s.json").faults.heartbeat.witnesses, 0);
  EXPECT_EQ(parse_scenario(j, "s.json").faults.heartbeat.unreachable, std::chrono::minutes(1));
  EXPECT_FALSE(parse_scenario(good(), "s.json").faults.active());
  // Every strategy that survives kills may lose a DC leader (worker 0): a survivor takes over.
  j["timeline"][0]["kill"]["worker"] = 0;
  for (const char* name : {"naive_ddp", "hier_ef_topk_int8", "hierarchical", "local_sgd", "diloco"}) {
    j["strategies"] = json::array({{{"name", name}}});
    EXPECT_EQ(parse_scenario(j, "s.json").faults.events[0].worker, 0) << name;
  }
  // Adaptive K's measurements travel with the rounds: not with node kills yet.
  j["strategies"] = json::array({{{"name", "hier_ef_topk_int8"}, {"K", "auto"}}});
  try {
    parse_scenario(j, "s.json");
    ADD_FAILURE() << "auto K with a kill was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "s.json: strategies: \"hier_ef_topk_int8\": \"K\": \"auto\" with node kills is not supported yet "
                           "(give a fixed K)");
  }
}

// Full recovery: defaults, a threshold of its own, and the checkpoints it needs once kills can
// cross it (2 kills of 4 workers: 50 %).
TEST(ScenarioFaults, FullRecoveryParsesAndAsksForCheckpointsOnlyWhenReachable) {
  json j = with_faults();
  auto sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.faults.full_recovery.above_fraction, 0.25);
  EXPECT_EQ(sc.faults.full_recovery.then, "survivors");
  EXPECT_EQ(sc.faults.kills(), 1);
  j["timeline"].push_back({{"at_step", 30}, {"kill", {{"dc", "a"}, {"worker", 1}}}});
  j["faults"]["full_recovery"] = {{"above_fraction", 0.5}, {"then", "survivors"}};  // 2 of 4 is not above half
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.faults.full_recovery.above_fraction, 0.5);
  EXPECT_EQ(sc.faults.kills(), 2);
  j["faults"].erase("full_recovery");
  j["timeline"].erase(2);  // the restart (not combined with full recovery)
  j["checkpoint"] = {{"every_steps", 30}, {"dir", "ckpt"}};  // the first checkpoint, after step 30: in time
  EXPECT_EQ(parse_scenario(j, "s.json").checkpoint.every_steps, 30);
  // Waiting for the dead to be restarted, with their start-up time.
  j["faults"]["full_recovery"] = {{"then", "restarts"}, {"restart_after", "45s"}};
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.faults.full_recovery.then, "restarts");
  EXPECT_EQ(sc.faults.full_recovery.restart_after, std::chrono::seconds(45));
  j["faults"]["full_recovery"] = {{"then", "restarts"}};
  EXPECT_EQ(parse_scenario(j, "s.json").faults.full_recovery.restart_after, std::chrono::nanoseconds{0});
  // Not with a DC leader's kill in a strategy with per-DC groups (hier_ef_topk_int8 here).
  j["timeline"][1]["kill"]["worker"] = 0;
  j["faults"]["full_recovery"] = {{"then", "survivors"}};
  try {
    parse_scenario(j, "s.json");
    ADD_FAILURE() << "full recovery with a DC leader's kill accepted";
  } catch (const ScenarioError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("faults.full_recovery.above_fraction: 0.25: hier_ef_topk_int8: 2 kills "
                                               "of 4 workers would cross it, and full recovery together with a DC "
                                               "leader's kill is not supported yet (set it to 1)"));
  }
}

// A quorum of sites ("quorum"): parsed for hier_ef_topk_int8 with blocking rounds, refused with
// overlap, a bad duration or outside the embedded mode.
TEST(ScenarioQuorum, ParsesAndRefusesNamingTheField) {
  json j = good();
  j["strategies"] = json::array({{{"name", "hier_ef_topk_int8"}, {"overlap", false}, {"quorum", "5s"}}});
  EXPECT_EQ(parse_scenario(j, "s.json").strategies[0].quorum, "5s");
  j["strategies"][0]["overlap"] = true;
  EXPECT_THAT(error_of(j), HasSubstr("strategies[0].quorum: \"5s\": needs \"overlap\": false"));
  j["strategies"][0]["overlap"] = false;
  j["strategies"][0]["quorum"] = "5 parsecs";
  EXPECT_THAT(error_of(j), HasSubstr("strategies[0].quorum: \"5 parsecs\":"));
  j["strategies"][0]["quorum"] = "5s";
  j["network"] = "process";
  EXPECT_THAT(error_of(j), HasSubstr("strategies[0].quorum: \"5s\": runs in the embedded mode on the virtual clock only"));
  j["network"] = "embedded";
  j["strategies"] = json::array({{{"name", "local_sgd"}, {"quorum", "5s"}}});
  EXPECT_THAT(error_of(j), HasSubstr("strategies[0].quorum: \"5s\": only hierarchical, hier_ef_topk_int8 take a quorum"));
}

// Policy "estimate": the scenario's, and a strategy entry's own beside the scenario's shrink.
TEST(ScenarioFaults, EstimatePolicyParsesForTheScenarioAndPerStrategy) {
  json j = with_faults();
  j["faults"]["policy"] = "estimate";
  j["strategies"].erase(0);  // naive_ddp: one group of every worker (refused, BadFaults)
  auto sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.faults.policy, "estimate");
  EXPECT_EQ(sc.faults.estimate.weights, "seed");  // the default
  EXPECT_EQ(sc.faults.estimate.decay, 1.0);
  j["faults"]["policy"] = "shrink";
  j["strategies"] = json::array({{{"name", "hier_ef_topk_int8"}, {"label", "lg"},
                                  {"faults", {{"policy", "estimate"}, {"estimate", {{"weights", "last_gradient"}, {"decay", 0.9}}}}}},
                                 {{"name", "naive_ddp"}}});
  sc = parse_scenario(j, "s.json");
  EXPECT_EQ(sc.faults.policy, "shrink");
  EXPECT_EQ(sc.strategies[0].fault_policy, "estimate");
  ASSERT_TRUE(sc.strategies[0].fault_estimate.has_value());
  EXPECT_EQ(sc.strategies[0].fault_estimate->weights, "last_gradient");
  EXPECT_EQ(sc.strategies[0].fault_estimate->decay, 0.9);
  EXPECT_EQ(sc.strategies[1].fault_policy, "");  // the scenario's
}

class BadFaults : public ::testing::TestWithParam<Bad> {};

TEST_P(BadFaults, FailsNamingFieldAndValue) {
  json j = with_faults();
  GetParam().edit(j);
  EXPECT_THAT(error_of(j), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, BadFaults,
    ::testing::Values(
        Bad{"unknown data center", [](json& j) { j["timeline"][1]["kill"]["dc"] = "mars"; },
            "timeline[1].kill.dc: \"mars\": unknown data center"},
        Bad{"worker out of range", [](json& j) { j["timeline"][1]["kill"]["worker"] = 2; },
            "timeline[1].kill.worker: 2: must be in [0, 1]"},
        Bad{"no time", [](json& j) { j["timeline"][1].erase("at_step"); },
            "timeline[1]: {\"kill\":{\"dc\":\"b\",\"worker\":1}}: needs exactly one of \"at\""},
        Bad{"two times", [](json& j) { j["timeline"][1]["at"] = "1s"; }, "needs exactly one of \"at\""},
        Bad{"step beyond the run", [](json& j) { j["timeline"][1]["at_step"] = 100; },
            "timeline[1].at_step: 100: must be below workload.steps (100)"},
        Bad{"negative step", [](json& j) { j["timeline"][1]["at_step"] = -1; },
            "timeline[1].at_step: -1: must be in [0, 100000000]"},
        Bad{"two kinds", [](json& j) { j["timeline"][1]["slow"] = j["timeline"][3]["slow"]; },
            "an event is exactly one of kill, restart, slow or a link change"},
        Bad{"kill with a link", [](json& j) { j["timeline"][1]["link"] = {"a", "b"}; },
            "an event is exactly one of kill, restart, slow or a link change"},
        Bad{"unknown key in kill", [](json& j) { j["timeline"][1]["kill"]["rank"] = 3; },
            "timeline[1].kill.rank: unknown key"},
        Bad{"kill twice", [](json& j) { j["timeline"][2] = {{"at_step", 60}, {"kill", {{"dc", "b"}, {"worker", 1}}}}; },
            "timeline[2].kill: {\"dc\":\"b\",\"worker\":1}: this worker is already dead (restart it first)"},
        Bad{"restart without a kill", [](json& j) { j["timeline"][2]["restart"]["dc"] = "a"; },
            "timeline[2].restart: {\"dc\":\"a\",\"worker\":1}: no earlier kill of this worker"},
        Bad{"restart before its kill", [](json& j) { j["timeline"][2]["at_step"] = 30; },
            "timeline[2].at_step: 30: must be after the kill it restarts"},
        Bad{"restart timed unlike its kill",
            [](json& j) {
              j["timeline"][2].erase("at_step");
              j["timeline"][2]["at"] = "9s";
            },
            "a restart is timed like its kill"},
        Bad{"every worker of a DC",
            [](json& j) { j["timeline"][2] = {{"at_step", 40}, {"kill", {{"dc", "b"}, {"worker", 0}}}}; },
            "timeline[2].kill: {\"dc\":\"b\",\"worker\":0}: kills every worker of its data center (shrink needs a "
            "survivor; give every strategy a \"quorum\""},
        Bad{"slow factor 1", [](json& j) { j["timeline"][3]["slow"]["factor"] = 1; },
            "timeline[3].slow.factor: 1: must be > 1"},
        Bad{"slow without factor", [](json& j) { j["timeline"][3]["slow"].erase("factor"); },
            "timeline[3].slow.factor: missing (required)"},
        Bad{"slow without length", [](json& j) { j["timeline"][3]["slow"].erase("steps"); },
            "needs exactly one of \"steps\" (a count) and \"duration\""},
        Bad{"slow zero duration",
            [](json& j) {
              j["timeline"][3]["slow"].erase("steps");
              j["timeline"][3]["slow"]["duration"] = "0s";
            },
            "timeline[3].slow.duration: \"0s\": must be > 0"},
        Bad{"at_step on a link change", [](json& j) { j["timeline"][0]["at_step"] = 3; },
            "timeline[0].at_step: 3: a link change is scheduled by \"at\""},
        Bad{"timeout not above interval", [](json& j) { j["faults"]["heartbeat"]["timeout"] = "500ms"; },
            "faults.heartbeat.timeout: \"500ms\": must exceed the interval (500 ms)"},
        Bad{"too many witnesses", [](json& j) { j["faults"]["heartbeat"]["witnesses"] = 17; },
            "faults.heartbeat.witnesses: 17: must be in [0, 16]"},
        Bad{"unreachable below the confirmation", [](json& j) { j["faults"]["heartbeat"]["unreachable"] = "500ms"; },
            "faults.heartbeat.unreachable: \"500ms\": must be at least the confirmation (1 s)"},
        Bad{"heartbeat unit missing", [](json& j) { j["faults"]["heartbeat"]["interval"] = 2; },
            "faults.heartbeat.interval: 2: missing unit"},
        Bad{"unknown policy", [](json& j) { j["faults"]["policy"] = "restart_all"; },
            "faults.policy: \"restart_all\": unknown recovery policy"},
        Bad{"unknown estimate weights",
            [](json& j) {
              j["faults"]["policy"] = "estimate";
              j["faults"]["estimate"] = {{"weights", "cosine"}};
            },
            "faults.estimate.weights: \"cosine\": expected \"seed\" (1/(1 + cos)), \"similarity\""},
        Bad{"decay of a weighted estimate",
            [](json& j) {
              j["faults"]["policy"] = "estimate";
              j["faults"]["estimate"] = {{"weights", "seed"}, {"decay", 0.5}};
            },
            "faults.estimate.decay: 0.5: only with \"weights\": \"last_gradient\""},
        Bad{"decay zero",
            [](json& j) {
              j["faults"]["policy"] = "estimate";
              j["faults"]["estimate"] = {{"weights", "last_gradient"}, {"decay", 0}};
            },
            "faults.estimate.decay: 0: must be above 0"},
        Bad{"estimate under shrink", [](json& j) { j["faults"]["estimate"] = {{"weights", "seed"}}; },
            "faults.estimate: {\"weights\":\"seed\"}: only with \"policy\": \"estimate\""},
        Bad{"estimate in the process mode",
            [](json& j) {
              j["network"] = "process";
              j["faults"]["policy"] = "estimate";
            },
            "faults.policy: \"estimate\": runs in the embedded mode only (here: the process mode)"},
        Bad{"a strategy's unknown policy", [](json& j) { j["strategies"][0]["faults"] = {{"policy", "guess"}}; },
            "strategies[0].faults.policy: \"guess\": unknown recovery policy"},
        Bad{"estimate without an intra-DC group",
            [](json& j) {
              j["strategies"] = json::array({{{"name", "naive_ddp"}}});
              j["faults"]["policy"] = "estimate";
            },
            "faults.policy: \"estimate\": naive_ddp has no intra-DC group"},
        Bad{"unknown shard policy", [](json& j) { j["faults"]["shard"] = "keep"; },
            "faults.shard: \"keep\": unknown shard policy (drop or redistribute)"},
        Bad{"unknown faults key", [](json& j) { j["faults"]["detector"] = "phi"; }, "faults.detector: unknown key"},
        Bad{"restart delay without restarts",
            [](json& j) { j["faults"]["full_recovery"] = {{"then", "survivors"}, {"restart_after", "30s"}}; },
            "faults.full_recovery.restart_after: \"30s\": only for \"then\": \"restarts\""},
        Bad{"restart delay without unit",
            [](json& j) { j["faults"]["full_recovery"] = {{"then", "restarts"}, {"restart_after", 30}}; },
            "faults.full_recovery.restart_after: 30: missing unit"},
        Bad{"restart delay beyond a day",
            [](json& j) { j["faults"]["full_recovery"] = {{"then", "restarts"}, {"restart_after", "1441min"}}; },
            "faults.full_recovery.restart_after: \"1441min\": must be at most"},
        Bad{"full recovery then unknown", [](json& j) { j["faults"]["full_recovery"] = {{"then", "pray"}}; },
            "faults.full_recovery.then: \"pray\": expected \"survivors\""},
        Bad{"full recovery above 0", [](json& j) { j["faults"]["full_recovery"] = {{"above_fraction", 0}}; },
            "faults.full_recovery.above_fraction: 0: must be above 0"},
        Bad{"full recovery above 1", [](json& j) { j["faults"]["full_recovery"] = {{"above_fraction", 1.5}}; },
            "faults.full_recovery.above_fraction: 1.5: must be in [0, 1]"},
        Bad{"full recovery key unknown", [](json& j) { j["faults"]["full_recovery"] = {{"after", 3}}; },
            "faults.full_recovery.after: unknown key"},
        Bad{"restart at a time",
            [](json& j) {
              j["timeline"][1].erase("at_step");
              j["timeline"][1]["at"] = "2s";
              j["timeline"][2].erase("at_step");
              j["timeline"][2]["at"] = "9s";
            },
            "timeline[2].at: \"9 s\": a restart is timed by \"at_step\""},
        Bad{"restart with full recovery",
            [](json& j) {
              j["timeline"].push_back({{"at_step", 30}, {"kill", {{"dc", "a"}, {"worker", 1}}}});
              j["checkpoint"] = {{"every_steps", 10}, {"dir", "ckpt"}};
            },
            "timeline[2].restart: \"restart\": 2 kills of 4 workers cross faults.full_recovery.above_fraction (0.25)"},
        Bad{"full recovery without checkpoints",
            [](json& j) {
              j["timeline"].erase(2);  // the restart
              j["timeline"].push_back({{"at_step", 30}, {"kill", {{"dc", "a"}, {"worker", 1}}}});
            },
            "checkpoint.every_steps: 0: 2 kills of 4 workers cross faults.full_recovery.above_fraction (0.25): full "
            "recovery goes back to the last checkpoint, so the run must take them"},
        Bad{"full recovery's first checkpoint after the first kill",
            [](json& j) {
              j["timeline"].erase(2);  // the restart
              j["timeline"].push_back({{"at_step", 30}, {"kill", {{"dc", "a"}, {"worker", 1}}}});
              j["checkpoint"] = {{"every_steps", 40}, {"dir", "ckpt"}};
            },
            "checkpoint.every_steps: 40: 2 kills of 4 workers cross faults.full_recovery.above_fraction (0.25): full "
            "recovery goes back to the last checkpoint, and the first checkpoint must come before the first kill "
            "(at_step 30)"},
        Bad{"faults on the wall clock", [](json& j) { j["clock"] = "wall"; },
            "timeline[1]: \"embedded/wall\": node faults in the embedded mode run on the virtual clock only"},
        Bad{"kill scope unknown", [](json& j) { j["timeline"][1]["kill"]["scope"] = "rack"; },
            "timeline[1].kill.scope: \"rack\": expected \"process\" (its kernel closes its connections) or \"host\""},
        Bad{"restart of a frozen host in dpdk mode",
            [](json& j) {
              j["network"] = "dpdk";
              j["timeline"][1]["kill"]["scope"] = "host";
            },
            "timeline[1].kill.scope: \"host\": a restart of a worker whose host froze is not implemented in the "
            "process and dpdk modes yet (its frozen process holds its address until the end); kill it with scope "
            "\"process\""},
        Bad{"a restarted worker killed again in process mode",
            [](json& j) {
              j["network"] = "process";
              j["timeline"].push_back({{"at_step", 80}, {"kill", {{"dc", "b"}, {"worker", 1}}}});
            },
            "timeline[4].kill: \"b/1\": a second kill of a worker the timeline restarted is not implemented in the "
            "process and dpdk modes yet (the embedded mode runs it)"},
        Bad{"full recovery restarting a frozen host in process mode",
            [](json& j) {
              j["network"] = "process";
              j["timeline"] = json::array({{{"at_step", 3}, {"kill", {{"dc", "b"}, {"worker", 1}}}},
                                           {{"at_step", 4}, {"kill", {{"dc", "a"}, {"worker", 1}, {"scope", "host"}}}}});
              j["faults"]["full_recovery"] = {{"above_fraction", 0.25}, {"then", "restarts"}};
              j["checkpoint"] = {{"every_steps", 2}, {"dir", "ck"}};
            },
            "timeline[1].kill.scope: \"host\": a full recovery's restart of a worker whose host froze is not "
            "implemented in the process and dpdk modes yet"},
        Bad{"hier restarts a killed DC leader", [](json& j) { j["timeline"][1]["kill"]["worker"] = 0; j["timeline"][2]["restart"]["worker"] = 0; },
            "timeline[2].restart.dc: \"b\": hier_ef_topk_int8: a restart in a data center whose leader the timeline "
            "kills is not supported yet (its successor leads the DC); restart in another DC, or use naive_ddp or lan"},
        Bad{"hier restarts a member of a DC that lost its leader",
            [](json& j) {
              j["timeline"].push_back({{"at_step", 20}, {"kill", {{"dc", "b"}, {"worker", 0}}}});
              j["faults"]["full_recovery"] = {{"above_fraction", 1}};
            },
            "timeline[2].restart.dc: \"b\": hier_ef_topk_int8: a restart in a data center whose leader"},
        Bad{"strategy without kill support", [](json& j) { j["strategies"][1] = {{"name", "naive_ddp_c10d"}}; },
            "strategies: \"naive_ddp_c10d\": this strategy does not survive node kills (timeline[1].kill; supported: "
            "naive_ddp, "},
        Bad{"async without kill support", [](json& j) { j["strategies"][1] = {{"name", "async_ef_topk_int8"}}; },
            "strategies: \"async_ef_topk_int8\": this strategy does not survive node kills (timeline[1].kill; "}),
    [](const ::testing::TestParamInfo<Bad>& i) {
      std::string s = i.param.what;
      for (char& c : s)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

// ---- link traces: timeline {"trace": "x.csv", "link", "time_scale"} (harness/link_trace.h) ----

/// A fresh directory (with traces/) under the system's temporary one, removed at the end of the test.
struct TraceDir {
  std::filesystem::path path;
  explicit TraceDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / fmt::format("geotb-{}-{}", name, ::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path / "traces");
  }
  ~TraceDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& rel, const std::string& text) const {
    std::ofstream(path / rel) << text;
    return (path / rel).string();
  }
};

json with_trace(const std::string& file, double time_scale) {
  json j = good();
  j["timeline"].push_back({{"trace", file}, {"link", {"b", "a"}}, {"time_scale", time_scale}});
  return j;
}

void expect_same_change(const geotb::model::ScheduledChange& got, const geotb::model::ScheduledChange& want) {
  EXPECT_EQ(got.a, want.a);
  EXPECT_EQ(got.b, want.b);
  EXPECT_EQ(got.change.at, want.change.at);
  EXPECT_EQ(got.change.rate_bps, want.change.rate_bps);
  EXPECT_EQ(got.change.delay, want.change.delay);
  ASSERT_EQ(got.change.loss.has_value(), want.change.loss.has_value());
  if (got.change.loss) {
    EXPECT_EQ(got.change.loss->kind, want.change.loss->kind);
    EXPECT_EQ(got.change.loss->p, want.change.loss->p);
  }
  EXPECT_EQ(got.change.jitter.has_value(), want.change.jitter.has_value());
  EXPECT_EQ(got.change.up, want.change.up);
}

TEST(ScenarioTrace, EachRowIsTheLinkChangeItsSetWouldBe) {
  TraceDir d("trace");
  d.write("traces/t.csv",
          "# crafted for the test\n"
          "time_s,bandwidth_mbps,rtt_ms,loss,up\n"
          "0,10000,30,0,1\n"
          "600,2000,,1e-4,\n"
          "1200,,34.5,,0\n"
          "1500,,,,1\n");
  const std::string file = d.write("s.json", with_trace("traces/t.csv", 0.01).dump());
  const auto sc = geotb::harness::load_scenario(file);
  // The same changes as {"at", "link", "set"} events: rows at time_s * 0.01.
  json k = good();
  k["timeline"].push_back({{"at", "0s"}, {"link", {"b", "a"}},
                           {"set", {{"bandwidth", "10000Mbps"}, {"rtt", "30ms"},
                                    {"loss", {{"model", "bernoulli"}, {"p", 0}}}, {"up", true}}}});
  k["timeline"].push_back({{"at", "6s"}, {"link", {"b", "a"}},
                           {"set", {{"bandwidth", "2000Mbps"}, {"loss", {{"model", "bernoulli"}, {"p", "1e-4"}}}}}});
  k["timeline"].push_back({{"at", "12s"}, {"link", {"b", "a"}}, {"set", {{"rtt", "34.5ms"}, {"up", false}}}});
  k["timeline"].push_back({{"at", "15s"}, {"link", {"b", "a"}}, {"set", {{"up", true}}}});
  const auto ref = parse_scenario(k, "k.json");
  ASSERT_EQ(sc.cluster.timeline.size(), 5u);  // good()'s own change at 2s, then the trace's 4 rows
  ASSERT_EQ(ref.cluster.timeline.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    expect_same_change(sc.cluster.timeline[i], ref.cluster.timeline[i]);
  }
  // Spelled out: b -> a is DCs 1, 0; times scaled; only the cells given are set.
  const auto& c = sc.cluster.timeline;
  EXPECT_EQ(c[1].a, 1);
  EXPECT_EQ(c[1].b, 0);
  EXPECT_EQ(c[1].change.at, std::chrono::seconds(0));
  EXPECT_EQ(c[1].change.rate_bps, 10e9);
  EXPECT_EQ(c[1].change.delay, std::chrono::milliseconds(15));
  EXPECT_EQ(c[1].change.loss->kind, geotb::emu::LossConfig::Kind::kBernoulli);
  EXPECT_EQ(c[1].change.loss->p, 0.0);
  EXPECT_EQ(c[1].change.up, true);
  EXPECT_EQ(c[2].change.at, std::chrono::seconds(6));
  EXPECT_EQ(c[2].change.rate_bps, 2e9);
  EXPECT_FALSE(c[2].change.delay.has_value());
  EXPECT_EQ(c[2].change.loss->p, 1e-4);
  EXPECT_FALSE(c[2].change.up.has_value());
  EXPECT_EQ(c[3].change.at, std::chrono::seconds(12));
  EXPECT_FALSE(c[3].change.rate_bps.has_value());
  EXPECT_EQ(c[3].change.delay, std::chrono::microseconds(17250));
  EXPECT_FALSE(c[3].change.loss.has_value());
  EXPECT_EQ(c[3].change.up, false);
  EXPECT_EQ(c[4].change.at, std::chrono::seconds(15));
  EXPECT_EQ(c[4].change.up, true);
  // time_scale defaults to 1.
  json one = with_trace("traces/t.csv", 1);
  one["timeline"][1].erase("time_scale");
  const auto unscaled = geotb::harness::load_scenario(d.write("one.json", one.dump()));
  EXPECT_EQ(unscaled.cluster.timeline[4].change.at, std::chrono::seconds(1500));
}

TEST(ScenarioTrace, TheTraceFileIsPartOfTheScenarioHash) {
  TraceDir d("trace-hash");
  d.write("traces/t.csv", "time_s,bandwidth_mbps\n0,1000\n");
  const std::string file = d.write("s.json", with_trace("traces/t.csv", 1).dump());
  const auto before = geotb::harness::load_scenario(file);
  d.write("traces/t.csv", "time_s,bandwidth_mbps\n0,2000\n");
  const auto after = geotb::harness::load_scenario(file);
  EXPECT_NE(before.hash, after.hash);  // same JSON, another trace: another scenario
  EXPECT_NE(before.checkpoint.training_hash, after.checkpoint.training_hash);
  EXPECT_EQ(before.raw, after.raw);
  // Without a trace the hash is the JSON's alone (as before traces existed).
  EXPECT_EQ(parse_scenario(good(), "s.json").hash, parse_scenario(good(), "other.json", d.path.string()).hash);
}

TEST(ScenarioTrace, FileErrorsNameTheEntryThePathAndTheLine) {
  TraceDir d("trace-errors");
  const std::string file = d.write("s.json", with_trace("traces/missing.csv", 1).dump());
  const std::string missing = (d.path / "traces/missing.csv").string();
  try {
    geotb::harness::load_scenario(file);
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              file + ": timeline[1].trace: " + missing + ": cannot open (No such file or directory)");
  }
  const std::string bad = d.write("traces/bad.csv", "# c\ntime_s,loss\n0,0\n10,1.5\n");
  const std::string file2 = d.write("s2.json", with_trace("traces/bad.csv", 1).dump());
  try {
    geotb::harness::load_scenario(file2);
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              file2 + ": timeline[1].trace: " + bad + ":4: loss: \"1.5\": must be in [0, 1] (a probability)");
  }
  // An absolute path is taken as it is.
  const std::string file3 = d.write("s3.json", with_trace(bad, 1).dump());
  EXPECT_THROW(geotb::harness::load_scenario(file3), ScenarioError);
}

TEST(ScenarioTrace, ShippedDiurnalTraceSpansTheRun) {
  const auto sc = geotb::harness::load_scenario(GEOTB_SOURCE_DIR "/scenarios/diurnal-trace.json");
  const auto& c = sc.cluster.timeline;
  ASSERT_EQ(c.size(), 98u);  // 96 quarter hours and the outage's two rows
  const double scale = sc.raw["timeline"][0]["time_scale"].get<double>();
  EXPECT_EQ(c.front().change.at, std::chrono::seconds(0));
  EXPECT_DOUBLE_EQ(*c.front().change.rate_bps, 5109.9e6);  // the first row, 00:00
  EXPECT_EQ(c.back().change.at, std::chrono::nanoseconds(std::llround(85500 * scale * 1e9)));
  int downs = 0;
  for (const auto& ch : c) {
    downs += ch.change.up == false;
    if (ch.change.rate_bps) {
      EXPECT_GE(*ch.change.rate_bps, 2e9);
      EXPECT_LE(*ch.change.rate_bps, 10e9);
    }
  }
  EXPECT_EQ(downs, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Trace, BadScenario,
    ::testing::Values(
        Bad{"trace time_scale zero", [](json& j) { j = with_trace("x.csv", 0); },
            "s.json: timeline[1].time_scale: 0.0: must be > 0"},
        Bad{"trace time_scale negative", [](json& j) { j = with_trace("x.csv", -2); },
            "s.json: timeline[1].time_scale: -2.0: must be > 0"},
        Bad{"trace time_scale not a number", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1]["time_scale"] = "fast"; },
            "s.json: timeline[1].time_scale: \"fast\": expected a number"},
        Bad{"trace with at", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1]["at"] = "5s"; },
            "s.json: timeline[1].at: \"5s\": a trace entry's times and settings come from its file (give \"trace\" or "
            "\"at\" and \"set\")"},
        Bad{"trace with set", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1]["set"] = {{"up", false}}; },
            "s.json: timeline[1].set: {\"up\":false}: a trace entry's times and settings come from its file"},
        Bad{"trace not a path", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1]["trace"] = 5; },
            "s.json: timeline[1].trace: 5: expected a CSV file's path (relative to the scenario's directory)"},
        Bad{"trace without link", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1].erase("link"); },
            "s.json: timeline[1].link: missing (required)"},
        Bad{"trace to nowhere", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1]["link"][1] = "mars"; },
            "s.json: timeline[1].link[1]: \"mars\": no such data center (have: a, b)"},
        Bad{"trace unknown key", [](json& j) { j = with_trace("x.csv", 1); j["timeline"][1]["scale"] = 2; },
            "s.json: timeline[1].scale: unknown key (known here: kill, link, restart, slow, time_scale, trace)"},
        Bad{"trace file missing", [](json& j) { j = with_trace("no/such.csv", 1); },
            "s.json: timeline[1].trace: no/such.csv: cannot open (No such file or directory)"}),
    [](const ::testing::TestParamInfo<Bad>& i) {
      std::string s = i.param.what;
      for (char& c : s)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

}  // namespace

// workload.device: "cpu" by default; "cuda" and "cuda:N" parse (whether this build can use them is
// checked when a run starts); anything else names the field and the value.
TEST(ScenarioDevice, DeviceParsesAndBadValuesNameTheField) {
  EXPECT_EQ(parse_scenario(good(), "s.json").workload.model.device, "cpu");
  json j = good();
  for (const char* d : {"cpu", "cuda", "cuda:0", "cuda:12"}) {
    j["workload"]["device"] = d;
    EXPECT_EQ(parse_scenario(j, "s.json").workload.model.device, d);
  }
  for (const char* d : {"gpu", "cuda:", "cuda:x", "CUDA", "cuda:1234"}) {
    j["workload"]["device"] = d;
    EXPECT_EQ(error_of(j), fmt::format("s.json: workload.device: \"{}\": expected \"cpu\", \"cuda\" or \"cuda:N\"", d));
  }
}

// "compute": {"calibrated": FILE}: a geotb calibrate output's "compute" block is the profile, keys
// beside it override, and the file is part of the scenario's hash.
TEST(ScenarioCalibrated, TheFilesComputeBlockIsTheProfile) {
  TraceDir d("calibrated");
  const std::string profile =
      R"({"geotb_calibrate": 1, "compute": {"step_time": "653.437us", "reduce_ns_per_element": 0.0036,
          "compress_ns_per_element": 6.92}, "device": {"name": "NVIDIA H200"}})";
  d.write("p.json", profile);
  json j = good();
  j["clock"] = "virtual";
  j["compute"] = {{"calibrated", "p.json"}};
  const std::string file = d.write("s.json", j.dump());
  const auto sc = geotb::harness::load_scenario(file);
  ASSERT_EQ(sc.compute.size(), 2u);
  for (const auto& p : sc.compute) {
    EXPECT_EQ(p.step_time, std::chrono::nanoseconds(653437));
    EXPECT_EQ(p.reduce_ns_per_element, 0.0036);
    EXPECT_EQ(p.compress_ns_per_element, 6.92);
  }
  EXPECT_FALSE(sc.compute_derived[0].has_value());
  ASSERT_EQ(sc.compute_calibrated.size(), 2u);
  EXPECT_EQ(sc.compute_calibrated[1], (geotb::model::CalibrationSource{"p.json", "NVIDIA H200", "unknown"}));
  j["compute"]["compress_ns_per_element"] = 1.5;  // an override beside the file
  const auto over = geotb::harness::load_scenario(d.write("s2.json", j.dump()));
  EXPECT_EQ(over.compute[0].compress_ns_per_element, 1.5);
  EXPECT_EQ(over.compute[0].step_time, std::chrono::nanoseconds(653437));
  // Another measurement in the same file name: the same JSON is another scenario.
  d.write("p.json", std::string(profile).replace(profile.find("653.437us"), 9, "700us"));
  const auto other = geotb::harness::load_scenario(file);
  EXPECT_EQ(other.compute[0].step_time, std::chrono::microseconds(700));
  EXPECT_NE(other.hash, sc.hash);
  EXPECT_EQ(other.raw, sc.raw);
}

TEST(ScenarioCalibrated, BadFilesAndMixedKeysNameTheField) {
  TraceDir d("calibrated-bad");
  json j = good();
  j["clock"] = "virtual";
  auto load_error = [&](const json& s) {
    try {
      geotb::harness::load_scenario(d.write("s.json", s.dump()));
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  j["compute"] = {{"calibrated", "missing.json"}};
  EXPECT_THAT(load_error(j), HasSubstr("compute.calibrated: \"missing.json\": cannot read " +
                                       (d.path / "missing.json").string()));
  d.write("scenario-like.json", good().dump());
  j["compute"] = {{"calibrated", "scenario-like.json"}};
  EXPECT_THAT(load_error(j), HasSubstr("not a geotb calibrate output (no \"compute\": {\"step_time\", ...})"));
  d.write("bad-step.json", R"({"compute": {"step_time": "fast", "reduce_ns_per_element": 0, "compress_ns_per_element": 0}})");
  j["compute"] = {{"calibrated", "bad-step.json"}};
  EXPECT_THAT(load_error(j), HasSubstr("compute.step_time: "));
  d.write("no-reduce.json", R"({"compute": {"step_time": "1ms", "compress_ns_per_element": 0}})");
  j["compute"] = {{"calibrated", "no-reduce.json"}};
  EXPECT_THAT(load_error(j), HasSubstr("compute.reduce_ns_per_element: expected a number >= 0"));
  j["compute"] = {{"calibrated", "no-reduce.json"}, {"step_time", "1ms"}};
  EXPECT_THAT(load_error(j), HasSubstr("compute.calibrated: \"no-reduce.json\": a calibrated profile brings its own step_time"));
  j["compute"] = {{"calibrated", "no-reduce.json"}, {"gpu", "h200-sxm"}, {"mfu", 0.5}};
  EXPECT_THAT(load_error(j), HasSubstr("a calibrated profile brings its own step_time"));
  j["compute"] = {{"calibrated", 3}};
  EXPECT_THAT(load_error(j), HasSubstr("compute.calibrated: 3: expected the path of a geotb calibrate output"));
}

TEST(ScenarioCalibrated, ShippedH200ProfileLoads) {
  const auto sc = geotb::harness::load_scenario(GEOTB_SOURCE_DIR "/scenarios/tiny-h200.json");
  const json p = json::parse(std::ifstream(GEOTB_SOURCE_DIR "/scenarios/profiles/h200-tiny.json"));
  EXPECT_EQ(p["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(sc.compute[0].step_time, geotb::common::parse_duration(p["compute"]["step_time"].get<std::string>()));
  EXPECT_EQ(sc.compute[0].reduce_ns_per_element, p["compute"]["reduce_ns_per_element"].get<double>());
  EXPECT_EQ(sc.compute_calibrated[0],
            (geotb::model::CalibrationSource{"profiles/h200-tiny.json", "NVIDIA H200", p["measured_at"].get<std::string>()}));
}
