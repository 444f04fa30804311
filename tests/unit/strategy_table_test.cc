// The strategy table (engine/strategies/table.h) and each descriptor: names, what each needs from
// the engine, accepted keys, validation messages and the reported config.
#include "engine/strategies/table.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace geotb::engine;

namespace {

TEST(StrategyTable, EveryNameResolvesInTableOrder) {
  const std::vector<std::string> names = {"naive_ddp", "naive_ddp_c10d", "hierarchical", "hier_ef_topk_int8",
                                          "lan",       "local_sgd",      "diloco",         "powersgd",
                                          "qsgd",      "async_ef_topk_int8"};
  EXPECT_EQ(strategy_names(), names);
  ASSERT_EQ(strategy_table().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(strategy_table()[i]->name, names[i]);
    EXPECT_EQ(&find_strategy(names[i]), strategy_table()[i]);
    EXPECT_FALSE(strategy_table()[i]->description.empty()) << names[i];
    EXPECT_NE(strategy_table()[i]->make, nullptr) << names[i];
  }
}

TEST(StrategyTable, UnknownNameListsTheTable) {
  try {
    (void)find_strategy("magic");
    FAIL() << "no UnknownStrategy";
  } catch (const UnknownStrategy& e) {
    EXPECT_STREQ(e.what(),
                 "name: \"magic\": unknown strategy (one of naive_ddp naive_ddp_c10d hierarchical hier_ef_topk_int8 lan "
                 "local_sgd diloco powersgd qsgd async_ef_topk_int8)");
  }
  EXPECT_THROW((void)find_strategy(""), std::invalid_argument);
}

// (needs_intra_dc, one_group, exchanges_every_step, co_located, real_network_only)
using Flags = std::tuple<bool, bool, bool, bool, bool>;
Flags flags(const StrategyInfo& i) {
  return {i.needs_intra_dc, i.one_group, i.exchanges_every_step, i.co_located, i.real_network_only};
}

TEST(StrategyTable, WhatEachNeedsFromTheEngine) {
  EXPECT_EQ(flags(find_strategy("naive_ddp").needs), Flags(false, false, true, false, false));
  EXPECT_EQ(flags(find_strategy("naive_ddp_c10d").needs), Flags(true, true, true, false, true));
  EXPECT_EQ(flags(find_strategy("hierarchical").needs), Flags(true, false, false, false, false));
  EXPECT_EQ(flags(find_strategy("hier_ef_topk_int8").needs), Flags(true, false, false, false, false));
  EXPECT_EQ(flags(find_strategy("lan").needs), Flags(true, true, false, true, false));
  EXPECT_EQ(flags(find_strategy("local_sgd").needs), Flags(true, false, false, false, false));
  EXPECT_EQ(flags(find_strategy("diloco").needs), Flags(true, false, false, false, false));
  EXPECT_EQ(flags(find_strategy("powersgd").needs), Flags(true, false, false, false, false));
  // Only PowerSGD's messages follow the tensor shapes.
  for (const StrategyDescriptor* d : strategy_table())
    EXPECT_EQ(d->needs.tensor_shapes, d->name == "powersgd") << d->name;
  EXPECT_EQ(flags(find_strategy("qsgd").needs), Flags(true, false, false, false, false));
  EXPECT_FALSE(find_strategy("qsgd").needs.survives_kills);  // not with node kills yet
  // Only the asynchronous strategy needs the virtual clock and refuses checkpoints and kills.
  EXPECT_EQ(flags(find_strategy("async_ef_topk_int8").needs), Flags(true, false, false, false, false));
  for (const StrategyDescriptor* d : strategy_table()) {
    EXPECT_EQ(d->needs.virtual_time_only, d->name == "async_ef_topk_int8") << d->name;
    EXPECT_EQ(d->needs.no_checkpoints, d->name == "async_ef_topk_int8") << d->name;
  }
  EXPECT_FALSE(find_strategy("async_ef_topk_int8").needs.survives_kills);
}

std::vector<std::string> key_names(const StrategyDescriptor& d) {
  std::vector<std::string> v;
  for (const StrategyKey* k : d.keys) v.emplace_back(k->name);
  return v;
}

TEST(StrategyTable, AcceptedKeys) {
  // bucket_mb: every strategy runs a DDP allreduce (strategies/ddp_buckets.h).
  const std::vector<std::string> common = {"K", "density", "block", "overlap", "quantize", "bucket_mb"};
  std::vector<std::string> naive = common;
  naive.insert(naive.end(), {"collective", "wire"});
  EXPECT_EQ(key_names(find_strategy("naive_ddp")), naive);
  for (const char* n : {"naive_ddp_c10d", "lan"}) EXPECT_EQ(key_names(find_strategy(n)), common) << n;
  // The hierarchical strategies take "K": "auto" and its bounds (strategies/adaptive_k.h) and a
  // quorum of sites (faults/quorum.h); hierarchical also a 16-bit "wire".
  std::vector<std::string> hier = common;
  hier.insert(hier.end(), {"K_min", "K_max", "K_target", "quorum"});
  EXPECT_EQ(key_names(find_strategy("hier_ef_topk_int8")), hier);
  hier.insert(hier.end() - 1, "wire");
  EXPECT_EQ(key_names(find_strategy("hierarchical")), hier);
  // naive_ddp's and hierarchical's "wire" is one key (float32, bf16, fp16); diloco's its own (int8).
  EXPECT_EQ(find_strategy("naive_ddp").key("wire"), find_strategy("hierarchical").key("wire"));
  EXPECT_NE(find_strategy("naive_ddp").key("wire"), find_strategy("diloco").key("wire"));
  EXPECT_EQ(find_strategy("naive_ddp").key("wire")->kind, StrategyKey::Kind::kText);
  EXPECT_EQ(find_strategy("hier_ef_topk_int8").key("wire"), nullptr);
  EXPECT_EQ(find_strategy("hier_ef_topk_int8").key("K")->kind, StrategyKey::Kind::kSteps);
  EXPECT_EQ(find_strategy("naive_ddp").key("K")->kind, StrategyKey::Kind::kInteger);
  std::vector<std::string> local = common;
  local.insert(local.end(), {"tau", "warmup_steps", "warmup_tau", "momentum_sync", "fedprox_mu", "scaffold", "scaffold_lr"});
  EXPECT_EQ(key_names(find_strategy("local_sgd")), local);
  std::vector<std::string> diloco = common;
  diloco.insert(diloco.end(), {"H", "outer_lr", "outer_momentum", "wire", "fedprox_mu", "scaffold", "scaffold_lr"});
  for (const char* n : {"local_sgd", "diloco"}) {
    EXPECT_EQ(find_strategy(n).key("scaffold")->kind, StrategyKey::Kind::kFlag) << n;
    EXPECT_EQ(find_strategy(n).key("fedprox_mu")->kind, StrategyKey::Kind::kNumber) << n;
  }
  EXPECT_EQ(key_names(find_strategy("diloco")), diloco);
  // powersgd: PowerSGDState's arguments under torch's names.
  std::vector<std::string> powersgd = common;
  powersgd.insert(powersgd.end(), {"matrix_approximation_rank", "start_powerSGD_iter", "min_compression_rate",
                                   "use_error_feedback", "warm_start", "orthogonalization_epsilon", "random_seed"});
  EXPECT_EQ(key_names(find_strategy("powersgd")), powersgd);
  EXPECT_EQ(find_strategy("powersgd").key("matrix_approximation_rank")->lo, 1);
  EXPECT_EQ(find_strategy("powersgd").key("random_seed")->hi, 4294967295);
  EXPECT_EQ(find_strategy("powersgd").key("warm_start")->kind, StrategyKey::Kind::kFlag);
  std::vector<std::string> qsgd = common;
  qsgd.insert(qsgd.end(), {"levels", "bucket"});
  EXPECT_EQ(key_names(find_strategy("qsgd")), qsgd);
  EXPECT_EQ(find_strategy("qsgd").key("levels")->kind, StrategyKey::Kind::kInteger);
  EXPECT_EQ(find_strategy("qsgd").key("bucket")->kind, StrategyKey::Kind::kInteger);
  EXPECT_EQ(find_strategy("qsgd").key("K")->kind, StrategyKey::Kind::kInteger);  // no "auto"
  EXPECT_EQ(find_strategy("diloco").key("levels"), nullptr);
  EXPECT_NE(find_strategy("naive_ddp").key("collective"), nullptr);
  EXPECT_EQ(find_strategy("lan").key("collective"), nullptr);
  EXPECT_EQ(find_strategy("naive_ddp").key("name"), nullptr);
}

StrategyConfig config(const std::string& name) {
  StrategyConfig c;
  c.name = name;
  return c;
}

TEST(StrategyTable, DefaultsAreValidForEveryStrategy) {
  for (const StrategyDescriptor* d : strategy_table()) EXPECT_EQ(d->validate(config(std::string(d->name))), "") << d->name;
}

TEST(StrategyTable, ValidationMessagesNameKeyAndValue) {
  for (const StrategyDescriptor* d : strategy_table()) {
    StrategyConfig c = config(std::string(d->name));
    c.K = 0;
    EXPECT_EQ(d->validate(c), "K: 0: must be in [1, 100000] steps") << d->name;
    c.K = 100001;
    EXPECT_EQ(d->validate(c), "K: 100001: must be in [1, 100000] steps");
    c = config(std::string(d->name));
    c.density = 0;
    EXPECT_EQ(d->validate(c), "density: 0: must be in (0, 100%]");
    c.density = 1.5;
    EXPECT_EQ(d->validate(c), "density: 1.5: must be in (0, 100%]");
    c.density = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(d->validate(c), "density: nan: must be in (0, 100%]");
    c = config(std::string(d->name));
    c.block = 0;
    EXPECT_EQ(d->validate(c), "block: 0: must be in [1, 1048576] elements");
    c.block = (1u << 20) + 1;
    EXPECT_EQ(d->validate(c), "block: 1048577: must be in [1, 1048576] elements");
    c = config(std::string(d->name));
    c.bucket_mb = 0;
    EXPECT_EQ(d->validate(c), "bucket_mb: 0: must be in (0, 1048576] MiB (DDP's bucket_cap_mb; default 25)");
    c.bucket_mb = std::numeric_limits<double>::infinity();
    EXPECT_EQ(d->validate(c), "bucket_mb: inf: must be in (0, 1048576] MiB (DDP's bucket_cap_mb; default 25)");
    // The first invalid key in the descriptor's order.
    c.K = -1;
    EXPECT_EQ(d->validate(c), "K: -1: must be in [1, 100000] steps");
  }
  StrategyConfig c = config("naive_ddp");
  c.collective = "tree";
  EXPECT_EQ(find_strategy("naive_ddp").validate(c), "collective: \"tree\": unknown (gloo_ring or eager_ring)");
  c.collective = "eager_ring";
  EXPECT_EQ(find_strategy("naive_ddp").validate(c), "");

  const StrategyDescriptor& ls = find_strategy("local_sgd");
  c = config("local_sgd");
  c.tau = 0;
  EXPECT_EQ(ls.validate(c), "tau: 0: must be in [1, 1000000] steps");
  c = config("local_sgd");
  c.warmup_steps = -1;
  EXPECT_EQ(ls.validate(c), "warmup_steps: -1: must be in [0, 1000000] steps");
  c = config("local_sgd");
  c.warmup_tau = 0;
  EXPECT_EQ(ls.validate(c), "warmup_tau: 0: must be in [1, 1000000] steps");
  c = config("local_sgd");
  c.momentum_sync = "global";
  EXPECT_EQ(ls.validate(c), "momentum_sync: \"global\": unknown (local or averaged)");
  c = config("local_sgd");
  c.fedprox_mu = -1;
  EXPECT_EQ(ls.validate(c), "fedprox_mu: -1: must be in [0, 1000] (0: off)");
  c = config("local_sgd");
  c.scaffold_lr = "lr";
  EXPECT_EQ(ls.validate(c), "scaffold_lr: \"lr\": unknown (optimizer or effective)");
  EXPECT_EQ(find_strategy("diloco").validate(c), "scaffold_lr: \"lr\": unknown (optimizer or effective)");
  const StrategyDescriptor& dl = find_strategy("diloco");
  c = config("diloco");
  c.H = 0;
  EXPECT_EQ(dl.validate(c), "H: 0: must be in [1, 1000000] steps");
  c = config("diloco");
  c.outer_lr = 0;
  EXPECT_EQ(dl.validate(c), "outer_lr: 0: must be in (0, 10]");
  c = config("diloco");
  c.outer_momentum = 1;
  EXPECT_EQ(dl.validate(c), "outer_momentum: 1: must be in [0, 1)");
  c = config("diloco");
  c.wire = "int4";
  EXPECT_EQ(dl.validate(c), "wire: \"int4\": unknown (float32, bf16 or int8)");
  const StrategyDescriptor& q = find_strategy("qsgd");
  c = config("qsgd");
  for (int64_t bad : {int64_t{0}, int64_t{-3}, int64_t{65536}}) {
    q.key("levels")->set(c, KeyValue{bad});
    EXPECT_EQ(q.validate(c), "levels: " + std::to_string(bad) + ": must be in [1, 65535] levels");
  }
  for (int64_t ok : {int64_t{1}, int64_t{65535}}) {
    q.key("levels")->set(c, KeyValue{ok});
    EXPECT_EQ(q.validate(c), "");
  }
  c = config("qsgd");
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{(1 << 24) + 1}}) {
    q.key("bucket")->set(c, KeyValue{bad});
    EXPECT_EQ(q.validate(c), "bucket: " + std::to_string(bad) + ": must be in [1, 16777216] elements");
  }
  for (int64_t ok : {int64_t{1}, int64_t{1 << 24}}) {
    q.key("bucket")->set(c, KeyValue{ok});
    EXPECT_EQ(q.validate(c), "");
  }
  // K first, then levels, then bucket (the descriptor's order).
  c = config("qsgd");
  c.levels = 0;
  c.bucket = 0;
  EXPECT_EQ(q.validate(c), "levels: 0: must be in [1, 65535] levels");
  c.K = 0;
  EXPECT_EQ(q.validate(c), "K: 0: must be in [1, 100000] steps");
  c = config("diloco");
  c.wire = "fp16";  // binary16 is naive_ddp's and hierarchical's, not diloco's
  EXPECT_EQ(dl.validate(c), "wire: \"fp16\": unknown (float32, bf16 or int8)");
  // async_ef_topk_int8: the bound (-1: none), f(s) and its parameter.
  const StrategyDescriptor& as = find_strategy("async_ef_topk_int8");
  c = config("async_ef_topk_int8");
  EXPECT_EQ(c.max_staleness, 4);
  EXPECT_EQ(c.staleness_weight, "poly");
  for (int64_t ok : {int64_t{-1}, int64_t{0}, int64_t{1000000}}) {
    as.key("max_staleness")->set(c, KeyValue{ok});
    EXPECT_EQ(as.validate(c), "");
  }
  for (int64_t bad : {int64_t{-2}, int64_t{1000001}}) {
    as.key("max_staleness")->set(c, KeyValue{bad});
    EXPECT_EQ(as.validate(c), "max_staleness: " + std::to_string(bad) + ": must be in [-1, 1000000] rounds (-1: no bound)");
  }
  c = config("async_ef_topk_int8");
  as.key("staleness_weight")->set(c, KeyValue{std::string("linear")});
  EXPECT_EQ(as.validate(c), "staleness_weight: \"linear\": must be \"poly\" or \"threshold\"");
  c = config("async_ef_topk_int8");
  c.staleness_exponent = -0.5;
  EXPECT_EQ(as.validate(c), "staleness_exponent: -0.5: must be in [0, 16]");
  c = config("async_ef_topk_int8");
  c.staleness_threshold = -1;
  EXPECT_EQ(as.validate(c), "staleness_threshold: -1: must be in [0, 1000000] rounds");
  c = config("async_ef_topk_int8");
  EXPECT_EQ(c.end, "all");
  as.key("end")->set(c, KeyValue{std::string("last")});
  EXPECT_EQ(as.validate(c), "end: \"last\": must be \"all\" or \"first\"");
}

// "wire" on naive_ddp and hierarchical: float32 (the default), bf16 or fp16; anything else names
// the key and the value. diloco's INT8 is not a 16-bit wire.
TEST(StrategyTable, Wire16AcceptsFloat32Bf16AndFp16) {
  for (const char* n : {"naive_ddp", "hierarchical"}) {
    const StrategyDescriptor& d = find_strategy(n);
    StrategyConfig c = config(n);
    for (const char* ok : {"float32", "bf16", "fp16"}) {
      d.key("wire")->set(c, KeyValue{std::string(ok)});
      EXPECT_EQ(c.wire, ok);
      EXPECT_EQ(d.key("wire")->get(c), KeyValue{std::string(ok)});
      EXPECT_EQ(d.validate(c), "") << n << " " << ok;
    }
    for (const char* bad : {"fp8", "int8", "float16", "BF16", ""}) {
      c.wire = bad;
      EXPECT_EQ(d.validate(c), "wire: \"" + std::string(bad) + "\": unknown (float32, bf16 or fp16)") << n;
    }
    // The first invalid key in the descriptor's order: K before wire.
    c.K = 0;
    EXPECT_EQ(d.validate(c), "K: 0: must be in [1, 100000] steps") << n;
  }
}

TEST(StrategyTable, PeriodicStrategiesDefaultsAreTheStatedOnes) {
  const StrategyConfig c;
  EXPECT_EQ(c.tau, 16);
  EXPECT_EQ(c.warmup_steps, 0);
  EXPECT_EQ(c.warmup_tau, 1);
  EXPECT_EQ(c.momentum_sync, "local");
  EXPECT_EQ(c.H, 500);          // DiLoCo (Douillard et al. 2023)
  EXPECT_EQ(c.outer_lr, 0.7);   // DiLoCo's outer Nesterov learning rate
  EXPECT_EQ(c.outer_momentum, 0.9);
  EXPECT_EQ(c.wire, "float32");
  EXPECT_EQ(c.fedprox_mu, 0.0);  // off
  EXPECT_FALSE(c.scaffold);
  EXPECT_EQ(c.scaffold_lr, "optimizer");
  EXPECT_EQ(c.levels, 256u);  // QSGD: GRACE's quantum_num (sands-lab/grace)
  EXPECT_EQ(c.bucket, 128u);  // GRACE's bucket_size
}

TEST(StrategyTable, KeysStoreAndReadTheirFields) {
  StrategyConfig c;
  const StrategyDescriptor& d = find_strategy("naive_ddp");
  d.key("K")->set(c, KeyValue{int64_t{7}});
  d.key("density")->set(c, KeyValue{0.25});
  d.key("block")->set(c, KeyValue{int64_t{64}});
  d.key("overlap")->set(c, KeyValue{false});
  d.key("quantize")->set(c, KeyValue{false});
  d.key("collective")->set(c, KeyValue{std::string("eager_ring")});
  EXPECT_EQ(c.K, 7);
  EXPECT_EQ(c.density, 0.25);
  EXPECT_EQ(c.block, 64u);
  EXPECT_FALSE(c.overlap);
  EXPECT_FALSE(c.quantize);
  EXPECT_EQ(c.collective, "eager_ring");
  for (const StrategyKey* k : d.keys) {
    const KeyValue v = k->get(c);
    const size_t kinds[] = {0, 1, 2, 3, 1, 0};  // variant index per kind: int64_t, double, bool, string, double, int64_t
    EXPECT_EQ(v.index(), kinds[static_cast<int>(k->kind)]) << k->name;
  }
}

using Reported = std::map<std::string, KeyValue>;
Reported reported(const std::string& name, const StrategyConfig& c) {
  Reported r;
  for (const auto& [k, v] : find_strategy(name).report(c)) r.emplace(k, v);
  return r;
}

TEST(StrategyTable, ReportedConfigPerStrategy) {
  StrategyConfig c;
  c.K = 8;
  c.density = 0.05;
  c.block = 128;
  c.overlap = false;
  c.quantize = true;
  c.collective = "eager_ring";
  c.bucket_mb = 50;
  EXPECT_EQ(reported("naive_ddp", c), (Reported{{"collective", std::string("eager_ring")}, {"bucket_mb", 50.0}}));
  // A 16-bit wire is reported (float32, the default, is not: reports stay as they were).
  StrategyConfig w = c;
  w.wire = "bf16";
  EXPECT_EQ(reported("naive_ddp", w),
            (Reported{{"collective", std::string("eager_ring")}, {"bucket_mb", 50.0}, {"wire", std::string("bf16")}}));
  w.wire = "fp16";
  EXPECT_EQ(reported("hierarchical", w), (Reported{{"K", int64_t{8}}, {"overlap", false}, {"wire", std::string("fp16")}}));
  EXPECT_EQ(reported("hier_ef_topk_int8", w).count("wire"), 0u);
  const Reported k_overlap = {{"K", int64_t{8}}, {"overlap", false}};
  const Reported ddp = {{"K", int64_t{8}}, {"overlap", false}, {"bucket_mb", 50.0}};
  EXPECT_EQ(reported("lan", c), ddp);
  EXPECT_EQ(reported("naive_ddp_c10d", c), ddp);
  EXPECT_EQ(reported("hierarchical", c), k_overlap);
  EXPECT_EQ(reported("hier_ef_topk_int8", c),
            (Reported{{"K", int64_t{8}}, {"overlap", false}, {"density", 0.05}, {"block", int64_t{128}}, {"quantize", true}}));
  c.tau = 4;
  c.warmup_steps = 20;
  c.warmup_tau = 2;
  c.momentum_sync = "averaged";
  EXPECT_EQ(reported("local_sgd", c), (Reported{{"tau", int64_t{4}},
                                                {"warmup_steps", int64_t{20}},
                                                {"warmup_tau", int64_t{2}},
                                                {"momentum_sync", std::string("averaged")}}));
  c.scaffold = true;  // shown when on, as fedprox_mu
  c.fedprox_mu = 0.01;
  EXPECT_EQ(reported("local_sgd", c), (Reported{{"tau", int64_t{4}},
                                                {"warmup_steps", int64_t{20}},
                                                {"warmup_tau", int64_t{2}},
                                                {"momentum_sync", std::string("averaged")},
                                                {"fedprox_mu", 0.01},
                                                {"scaffold", true},
                                                {"scaffold_lr", std::string("optimizer")}}));
  c.scaffold = false;
  c.fedprox_mu = 0;
  c.H = 30;
  c.outer_lr = 0.5;
  c.outer_momentum = 0.8;
  c.wire = "int8";
  EXPECT_EQ(reported("diloco", c), (Reported{{"H", int64_t{30}},
                                             {"outer_lr", 0.5},
                                             {"outer_momentum", 0.8},
                                             {"wire", std::string("int8")},
                                             {"block", int64_t{128}}}));
  c.levels = 15;
  c.bucket = 512;
  EXPECT_EQ(reported("qsgd", c), (Reported{{"K", int64_t{8}}, {"levels", int64_t{15}}, {"bucket", int64_t{512}}}));
  // async_ef_topk_int8: f(s)'s parameter only for its form.
  c.max_staleness = -1;
  const Reported async_common = {{"K", int64_t{8}}, {"density", c.density}, {"block", int64_t{c.block}},
                                 {"quantize", c.quantize}, {"max_staleness", int64_t{-1}}};
  Reported poly = async_common;
  poly.insert({{"staleness_weight", std::string("poly")}, {"staleness_exponent", 1.0}, {"end", std::string("all")}});
  EXPECT_EQ(reported("async_ef_topk_int8", c), poly);
  c.staleness_weight = "threshold";
  c.end = "first";
  Reported threshold = async_common;
  threshold.insert({{"staleness_weight", std::string("threshold")}, {"staleness_threshold", int64_t{2}},
                    {"end", std::string("first")}});
  EXPECT_EQ(reported("async_ef_topk_int8", c), threshold);
}

// "K": "auto" (strategies/adaptive_k.h): stored, reported with its bounds, checked.
// powersgd: every PowerSGDState argument is reported; its checks are torch's (kernels::validate),
// the first invalid argument named with its value.
TEST(StrategyTable, PowerSgdKeysReportAndCheckTorchsArguments) {
  const StrategyDescriptor& d = find_strategy("powersgd");
  StrategyConfig c = config("powersgd");
  c.K = 4;
  d.key("matrix_approximation_rank")->set(c, KeyValue{int64_t{2}});
  d.key("start_powerSGD_iter")->set(c, KeyValue{int64_t{10}});
  d.key("min_compression_rate")->set(c, KeyValue{1.5});
  d.key("use_error_feedback")->set(c, KeyValue{false});
  d.key("warm_start")->set(c, KeyValue{true});
  d.key("orthogonalization_epsilon")->set(c, KeyValue{1e-8});
  d.key("random_seed")->set(c, KeyValue{int64_t{4294967295}});
  EXPECT_EQ(c.powersgd.random_seed, 4294967295u);
  EXPECT_EQ(reported("powersgd", c), (Reported{{"K", int64_t{4}},
                                               {"matrix_approximation_rank", int64_t{2}},
                                               {"start_powerSGD_iter", int64_t{10}},
                                               {"min_compression_rate", 1.5},
                                               {"use_error_feedback", false},
                                               {"warm_start", true},
                                               {"orthogonalization_epsilon", 1e-8},
                                               {"random_seed", int64_t{4294967295}}}));
  EXPECT_EQ(d.validate(c), "");
  c.powersgd.start_iter = 1;  // warm start needs > 1
  EXPECT_EQ(d.validate(c),
            "start_powerSGD_iter: 1: must be above 1 with use_error_feedback or warm_start (PowerSGDState's rule)");
  c.powersgd.warm_start = false;
  EXPECT_EQ(d.validate(c), "");
  c.powersgd.rank = 0;
  EXPECT_EQ(d.validate(c), "matrix_approximation_rank: 0: must be at least 1");
  c.powersgd.rank = 1;
  c.powersgd.orthogonalization_epsilon = -1;
  EXPECT_EQ(d.validate(c), "orthogonalization_epsilon: -1: must be a finite number >= 0");
  // torch's defaults.
  const StrategyConfig def = config("powersgd");
  EXPECT_EQ(def.powersgd.rank, 1);
  EXPECT_EQ(def.powersgd.start_iter, 1000);
  EXPECT_EQ(def.powersgd.min_compression_rate, 2.0);
  EXPECT_TRUE(def.powersgd.error_feedback);
  EXPECT_TRUE(def.powersgd.warm_start);
  EXPECT_EQ(def.powersgd.orthogonalization_epsilon, 0.0);
  EXPECT_EQ(def.powersgd.random_seed, 0u);
}

TEST(StrategyTable, AutoKIsStoredReportedAndChecked) {
  const StrategyDescriptor& d = find_strategy("hier_ef_topk_int8");
  StrategyConfig c{"hier_ef_topk_int8"};
  c.K = 8;
  d.key("K")->set(c, KeyValue{std::string("auto")});
  EXPECT_TRUE(c.K_auto);
  EXPECT_EQ(d.key("K")->get(c), KeyValue{std::string("auto")});
  d.key("K_min")->set(c, KeyValue{int64_t{2}});
  d.key("K_max")->set(c, KeyValue{int64_t{64}});
  d.key("K_target")->set(c, KeyValue{0.9});
  EXPECT_EQ(d.validate(c), "");
  Reported r;
  for (const auto& [k, v] : d.report(c)) r.emplace(k, v);
  EXPECT_EQ(r.at("K"), KeyValue{std::string("auto")});
  EXPECT_EQ(r.at("K_min"), KeyValue{int64_t{2}});
  EXPECT_EQ(r.at("K_max"), KeyValue{int64_t{64}});
  EXPECT_EQ(r.at("K_target"), KeyValue{0.9});
  StrategyConfig bad = c;
  bad.overlap = false;
  EXPECT_EQ(d.validate(bad), "K: \"auto\": needs \"overlap\": true (auto K hides the exchange behind the next K "
                             "steps; a blocking exchange is never hidden)");
  bad = c;
  bad.K_min = 0;
  EXPECT_EQ(d.validate(bad), "K_min: 0: must be in [1, 100000] steps");
  bad = c;
  bad.K_max = 1;
  EXPECT_EQ(d.validate(bad), "K_max: 1: must be in [K_min = 2, 100000] steps");
  bad = c;
  bad.K_target = 1;
  EXPECT_EQ(d.validate(bad), "K_target: 1: must be in (0, 1)");
  // The bounds without "auto" are refused; a fixed K reports no bounds.
  d.key("K")->set(c, KeyValue{int64_t{8}});
  EXPECT_FALSE(c.K_auto);
  EXPECT_EQ(d.validate(c), "K: 8: K_min, K_max and K_target are for \"K\": \"auto\"");
  c.K_min = StrategyConfig{}.K_min;
  c.K_max = StrategyConfig{}.K_max;
  c.K_target = StrategyConfig{}.K_target;
  EXPECT_EQ(d.validate(c), "");
  EXPECT_EQ(d.report(c).size(), 5u);  // K, overlap, density, block, quantize
}

}  // namespace
