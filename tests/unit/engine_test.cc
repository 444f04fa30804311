// Engine pieces that need no network: optimizer, data, and the identity of the two strategies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cluster.h"
#include "engine/data/fashion_mnist.h"
#include "engine/optim/sgd.h"

using namespace geotb::engine;

namespace {

TEST(Sgd, MomentumAndWeightDecayFollowTorchRule) {
  SgdConfig c;
  c.lr = 0.5;
  c.momentum = 0.5;
  c.weight_decay = 0.25;
  Sgd opt(c, 1);
  float x = 2.0f;
  const float g = 1.0f;
  opt.step(&x, &g);  // d = 1 + 0.25*2 = 1.5; m = 1.5; x = 2 - 0.75 = 1.25
  EXPECT_FLOAT_EQ(x, 1.25f);
  opt.step(&x, &g);  // d = 1 + 0.3125 = 1.3125; m = 0.75 + 1.3125 = 2.0625; x = 1.25 - 1.03125
  EXPECT_FLOAT_EQ(x, 0.21875f);
}

TEST(Sgd, ValidateNamesTheField) {
  SgdConfig c;
  c.momentum = 1.0;
  EXPECT_NE(validate(c).find("optimizer.momentum: 1"), std::string::npos);
}

const Dataset& train() {
  static Dataset d = load_fashion_mnist(kFashionMnistDir, true);
  return d;
}

TEST(FashionMnist, LoadsTheFullBalancedTrainingSet) {
  const Dataset& d = train();
  ASSERT_EQ(d.size, 60000u);
  EXPECT_EQ(d.rows, 28);
  EXPECT_EQ(d.cols, 28);
  std::vector<int> per_class(10, 0);
  for (int64_t y : d.labels) per_class[static_cast<size_t>(y)]++;
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[static_cast<size_t>(c)], 6000) << "class " << c;
  const double mean = std::accumulate(d.images.begin(), d.images.end(), 0.0) / static_cast<double>(d.images.size());
  EXPECT_NEAR(mean, 0.0, 0.01);  // normalised with the training-set mean
  const Dataset t = load_fashion_mnist(kFashionMnistDir, false, 123);
  EXPECT_EQ(t.size, 123u);
  EXPECT_THROW(load_fashion_mnist("/nonexistent", true), DataError);
}

TEST(FashionMnist, IidPartitionCoversEveryExampleOnce) {
  auto parts = partition_iid(1003, 4, 9);
  std::vector<int> seen(1003, 0);
  for (const auto& p : parts) {
    EXPECT_TRUE(p.size() == 250 || p.size() == 251);
    for (uint32_t i : p) seen[i]++;
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  EXPECT_EQ(partition_iid(1003, 4, 9), parts);   // seeded
  EXPECT_NE(partition_iid(1003, 4, 10), parts);
}

ClusterSpec fast_cluster() {
  ClusterSpec c;
  c.dcs = {{"a", 2}, {"b", 2}};
  c.lan.rate_bps = 0;
  c.lan.delay = std::chrono::nanoseconds(0);
  geotb::model::WanLink w;
  w.a = 0;
  w.b = 1;
  w.a_to_b.rate_bps = w.b_to_a.rate_bps = 0;
  c.wan = {w};
  return c;
}

WorkloadSpec small_work() {
  WorkloadSpec w;
  w.model.hidden = {32};
  w.optimizer.lr = 0.05;
  w.optimizer.momentum = 0.9;
  w.batch_per_worker = 16;
  w.steps = 25;
  w.seed = 5;
  return w;
}

const Datasets& small_data() {
  static const Datasets d = [] {
    Datasets x;
    x.train = load_fashion_mnist(kFashionMnistDir, true, 4000);
    x.test = load_fashion_mnist(kFashionMnistDir, false, 500);
    return x;
  }();
  return d;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

TEST(Identity, DenseBlockingEveryStepHierEqualsNaiveDdp) {
  const Datasets& data = small_data();
  RunOptions opt;
  StrategyConfig naive{"naive_ddp"};
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 1;
  hier.density = 1.0;
  hier.quantize = false;
  hier.overlap = false;
  std::vector<float> xa, xb, xc;
  const auto a = run_strategy(fast_cluster(), small_work(), naive, data, opt, &xa);
  const auto b = run_strategy(fast_cluster(), small_work(), hier, data, opt, &xb);
  ASSERT_EQ(xa.size(), xb.size());
  EXPECT_LE(rel_diff(xb, xa), 1e-5);
  double max_abs = 0, max_ref = 0;
  for (size_t i = 0; i < xa.size(); ++i) {
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(xa[i] - xb[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(xa[i])));
  }
  EXPECT_LE(max_abs, 1e-5 * max_ref);
  EXPECT_EQ(a.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(b.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(b.metrics.exchanges, 26u);  // 25 rounds + the final dense one

  // Negative control: with K = 2 the DCs drift between exchanges, and the weights differ.
  hier.K = 2;
  run_strategy(fast_cluster(), small_work(), hier, data, opt, &xc);
  EXPECT_GT(rel_diff(xc, xa), 1e-4);
}

TEST(Strategies, EveryReplicaEndsIdenticalAndCompressedTrafficIsSmall) {
  const Datasets& data = small_data();
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 4;
  hier.density = 0.01;
  const auto r = run_strategy(fast_cluster(), small_work(), hier, data, RunOptions{});
  EXPECT_EQ(r.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(r.metrics.exchanges, 7u);  // 6 rounds (steps 4, 8, ..., 24) + final
  EXPECT_EQ(r.metrics.samples, 25u * 16u * 4u);
  EXPECT_EQ(r.series.loss.size(), 25u);
  const auto d = run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp"}, data, RunOptions{});
  EXPECT_LT(r.metrics.wan_payload_bytes * 20, d.metrics.wan_payload_bytes);
}

// Three sites on asymmetric links (as triangle-asymmetric): on the virtual clock with a compute
// profile, every exchange takes at least S / B + one-way delay of the link each message crossed,
// and close to it (the links are otherwise idle: efficiency > 0.9); replicas end bit-identical
// (peer contributions summed in DC order everywhere); and a second run gives the same times.
ClusterSpec triangle() {
  ClusterSpec c;
  c.dcs = {{"a", 2}, {"b", 2}, {"c", 2}};
  c.lan.rate_bps = 100e9;
  c.lan.delay = std::chrono::microseconds(10);
  auto link = [](int a, int b, double ab_bps, int ab_ms, double ba_bps, int ba_ms) {
    geotb::model::WanLink w;
    w.a = a;
    w.b = b;
    w.a_to_b.rate_bps = ab_bps;
    w.a_to_b.delay = std::chrono::milliseconds(ab_ms);
    w.b_to_a.rate_bps = ba_bps;
    w.b_to_a.delay = std::chrono::milliseconds(ba_ms);
    return w;
  };
  c.wan = {link(0, 1, 1e9, 15, 200e6, 20), link(0, 2, 100e6, 45, 1e9, 55), link(1, 2, 50e6, 60, 50e6, 60)};
  return c;
}

TEST(VirtualClock, ExchangesRespectTheLinkTheyCrossedAndReplicasAreIdenticalWithThreeSites) {
  RunOptions opt;
  opt.clock = ClockMode::kVirtual;
  opt.compute = ComputeProfile{};
  opt.compute->step_time = std::chrono::milliseconds(20);
  for (const char* name : {"hier_ef_topk_int8", "hierarchical"}) {
    StrategyConfig hier{name};
    hier.K = 4;
    const auto r = run_strategy(triangle(), small_work(), hier, small_data(), opt);
    EXPECT_EQ(r.metrics.replica_max_abs_diff, 0.0) << name;
    ASSERT_EQ(r.exchanges.size(), 7u) << name;
    for (const auto& e : r.exchanges) {
      EXPECT_GE(e.seconds, e.lower_bound_s) << name << " step " << e.step;
      EXPECT_GT(e.lower_bound_s, 0.055) << name << ": the slowest link into site a is 55 ms one way";
    }
    // Compressed rounds are tiny and fly on idle links: within 10 % of the bound.
    if (std::string(name) == "hier_ef_topk_int8")
      for (const auto& e : r.exchanges)
        if (e.step >= 0) EXPECT_GT(e.lower_bound_s / e.seconds, 0.9) << "step " << e.step;
    const auto again = run_strategy(triangle(), small_work(), hier, small_data(), opt);
    EXPECT_EQ(again.series.step_end_s, r.series.step_end_s) << name;
    EXPECT_EQ(again.metrics.wall_s, r.metrics.wall_s) << name;
  }
}

}  // namespace

namespace {

TEST(Strategies, NaiveDdpC10dIsRefusedInEmbeddedMode) {
  // Its Gloo TCP would run over loopback, beside the WAN model: a number that would mean nothing.
  try {
    run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp_c10d"}, small_data(), RunOptions{});
    FAIL() << "expected RunError";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("naive_ddp_c10d: runs only over a real network"), std::string::npos) << e.what();
  }
}

TEST(Faults, WanDownFailsTheRunWithATypedErrorNamingTheRank) {
  ClusterSpec c = fast_cluster();
  c.wan[0].a_to_b.up = c.wan[0].b_to_a.up = false;
  c.segments.min_rto = std::chrono::milliseconds(5);
  c.segments.max_attempts = 3;
  const Datasets& data = small_data();
  try {
    run_strategy(c, small_work(), StrategyConfig{"naive_ddp"}, data, RunOptions{});
    FAIL() << "expected RunError";
  } catch (const RunError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("naive_ddp: rank "), std::string::npos) << m;
    EXPECT_NE(m.find("undeliverable"), std::string::npos) << m;
  }
}

TEST(Faults, OutageShorterThanTheRetriesDelaysButCompletes) {
  ClusterSpec c = fast_cluster();
  c.wan[0].a_to_b.delay = c.wan[0].b_to_a.delay = std::chrono::milliseconds(1);
  c.segments.min_rto = std::chrono::milliseconds(20);
  geotb::model::ScheduledChange down, up;
  down.change.at = std::chrono::milliseconds(0);
  down.change.up = false;
  up.change.at = std::chrono::milliseconds(150);
  up.change.up = true;
  c.timeline = {down, up};
  WorkloadSpec w = small_work();
  w.steps = 5;
  const auto r = run_strategy(c, w, StrategyConfig{"naive_ddp"}, small_data(), RunOptions{});
  EXPECT_GE(r.metrics.wall_s, 0.15);  // nothing crossed the WAN before the link came back
  EXPECT_GT(r.metrics.wan_retransmissions, 0u);
  EXPECT_EQ(r.metrics.replica_max_abs_diff, 0.0);
}

}  // namespace
