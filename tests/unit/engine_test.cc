// Engine pieces that need no network: optimizer, data, and the identity of the two strategies.
#include <gtest/gtest.h>

#include <cstdio>

#include "engine/collectives/analytic_group.h"
#include "engine/collectives/gloo_ring.h"
#include "engine/transport/emulated.h"
#include "emulator/inproc/virtual_time.h"

#include <thread>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cluster.h"
#include "tests/unit/engine_fixtures.h"
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

ClusterSpec fast_cluster() { return fixtures::two_dcs(2, 0, std::chrono::nanoseconds(0), 0, std::chrono::nanoseconds(0)); }

WorkloadSpec small_work() { return fixtures::small_mlp(25, 5, WorkloadSpec{}.eval_points); }

const Datasets& small_data() { return fixtures::fashion_subset(4000, 500); }

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// The same final weights up to float summation order: relative L2 difference and the largest
// element difference both within 1e-5 (of the norm, of the largest weight).
void expect_same_weights(const std::vector<float>& xa, const std::vector<float>& xb) {
  ASSERT_EQ(xa.size(), xb.size());
  EXPECT_LE(rel_diff(xb, xa), 1e-5);
  double max_abs = 0, max_ref = 0;
  for (size_t i = 0; i < xa.size(); ++i) {
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(xa[i] - xb[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(xa[i])));
  }
  EXPECT_LE(max_abs, 1e-5 * max_ref);
}

// hier_ef_topk_int8 as a dense blocking exchange every step: naive DDP's mean, through the DC means.
StrategyConfig dense_blocking_hier() {
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 1;
  hier.density = 1.0;
  hier.quantize = false;
  hier.overlap = false;
  return hier;
}

TEST(Identity, DenseBlockingEveryStepHierEqualsNaiveDdp) {
  const Datasets& data = small_data();
  RunOptions opt;
  StrategyConfig naive{"naive_ddp"};
  StrategyConfig hier = dense_blocking_hier();
  std::vector<float> xa, xb, xc;
  const auto a = run_strategy(fast_cluster(), small_work(), naive, data, opt, &xa);
  const auto b = run_strategy(fast_cluster(), small_work(), hier, data, opt, &xb);
  expect_same_weights(xa, xb);
  EXPECT_EQ(a.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(b.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(b.metrics.exchanges, 26u);  // 25 rounds + the final dense one

  // Negative control: with K = 2 the DCs drift between exchanges, and the weights differ.
  hier.K = 2;
  run_strategy(fast_cluster(), small_work(), hier, data, opt, &xc);
  EXPECT_GT(rel_diff(xc, xa), 1e-4);
}

// Unequal sites (1 + 3 workers): the DC means weigh each DC by its workers (1/4, 3/4), so a dense
// blocking round every step applies the mean of all four workers' gradients, as naive DDP does.
// With the DCs weighing alike, DC a's one worker would count as much as DC b's three.
TEST(Identity, UnequalSitesWeightedByWorkersHierEqualsNaiveDdp) {
  const Datasets& data = small_data();
  RunOptions opt;
  ClusterSpec c = fast_cluster();
  c.dcs = {{"a", 1}, {"b", 3}};
  const StrategyConfig hier = dense_blocking_hier();
  std::vector<float> xa, xb, xc;
  const auto a = run_strategy(c, small_work(), StrategyConfig{"naive_ddp"}, data, opt, &xa);
  const auto b = run_strategy(c, small_work(), hier, data, opt, &xb);
  expect_same_weights(xa, xb);
  EXPECT_EQ(a.metrics.samples, 25u * 4 * 16);
  EXPECT_EQ(b.metrics.replica_max_abs_diff, 0.0);
  // local_sgd with tau 1 and averaged momentum: the same identity through the model average.
  StrategyConfig local{"local_sgd"};
  local.tau = 1;
  local.momentum_sync = "averaged";
  run_strategy(c, small_work(), local, data, opt, &xc);
  expect_same_weights(xa, xc);
  // dc_weights "examples": the IID split gives DC a 1/4 of the examples, the same weights.
  std::vector<float> xd;
  WorkloadSpec w = small_work();
  w.dc_weights = DcWeighting::kExamples;  // IID: 1/4 and 3/4 of the examples, the same weights
  run_strategy(c, w, hier, data, opt, &xd);
  EXPECT_EQ(xd, xb);
}

// workload.global_batch with beta 1: the pool's forward/backward runs but weighs 0, so a batch of
// 20 with 5 from the pool trains exactly as a batch of 15 from the shard alone (the shard sampler
// draws 15 per step either way). With beta 0.5 the pool's gradient counts, and the model differs.
TEST(Identity, GlobalBatchWithBetaOneIsTheShardPartAlone) {
  const Datasets& data = small_data();
  RunOptions opt;
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 4;
  WorkloadSpec mixed = small_work();
  mixed.batch_per_worker = 20;
  mixed.global_batch.fraction = 0.25;
  mixed.global_batch.beta = 1.0;
  WorkloadSpec plain = small_work();
  plain.batch_per_worker = 15;
  std::vector<float> xa, xb, xc;
  run_strategy(fast_cluster(), mixed, hier, data, opt, &xa);
  run_strategy(fast_cluster(), plain, hier, data, opt, &xb);
  EXPECT_EQ(xa, xb);
  mixed.global_batch.beta = 0.5;
  const auto c = run_strategy(fast_cluster(), mixed, hier, data, opt, &xc);
  EXPECT_GT(rel_diff(xc, xb), 1e-4);
  EXPECT_EQ(c.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(c.metrics.samples, 25u * 4 * 20);  // every example of the batch counts
}

TEST(Identity, LocalSgdTauOneAveragedMomentumEqualsNaiveDdp) {
  const Datasets& data = small_data();
  RunOptions opt;
  StrategyConfig local{"local_sgd"};
  local.tau = 1;
  local.momentum_sync = "averaged";
  std::vector<float> xa, xb, xc;
  const auto a = run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp"}, data, opt, &xa);
  const auto b = run_strategy(fast_cluster(), small_work(), local, data, opt, &xb);
  expect_same_weights(xa, xb);
  EXPECT_EQ(b.metrics.replica_max_abs_diff, 0.0);
  EXPECT_EQ(b.metrics.exchanges, 25u);  // one averaging per step, nothing left for finish()
  EXPECT_EQ(b.metrics.wan_final_sync_bytes, std::optional<uint64_t>(0));

  // With tau = 1 local momentum gives the same weights too (the mean of the DCs' buffers follows
  // the global one: SGD with momentum is linear), up to rounding.
  local.momentum_sync = "local";
  run_strategy(fast_cluster(), small_work(), local, data, opt, &xc);
  EXPECT_LE(rel_diff(xc, xa), 1e-5);
  // Negative control: with tau = 2 the DCs drift between averagings, and the weights differ.
  local.tau = 2;
  local.momentum_sync = "averaged";
  run_strategy(fast_cluster(), small_work(), local, data, opt, &xc);
  EXPECT_GT(rel_diff(xc, xa), 1e-4);
}

TEST(Identity, DilocoOuterLrOneNoMomentumEqualsLocalSgdTauH) {
  const Datasets& data = small_data();
  RunOptions opt;
  StrategyConfig local{"local_sgd"};
  local.tau = 5;
  StrategyConfig diloco{"diloco"};
  diloco.H = 5;
  diloco.outer_lr = 1.0;
  diloco.outer_momentum = 0.0;
  std::vector<float> xa, xb, xc;
  const auto a = run_strategy(fast_cluster(), small_work(), local, data, opt, &xa);
  const auto b = run_strategy(fast_cluster(), small_work(), diloco, data, opt, &xb);
  EXPECT_LE(rel_diff(xb, xa), 1e-5);
  EXPECT_EQ(a.metrics.exchanges, 5u);  // after steps 4, 9, ..., 24
  EXPECT_EQ(b.metrics.exchanges, 5u);
  EXPECT_EQ(a.metrics.wan_payload_bytes, b.metrics.wan_payload_bytes);  // the model vs Δ: same size
  EXPECT_EQ(b.metrics.replica_max_abs_diff, 0.0);

  // Negative control: DiLoCo's defaults (outer lr 0.7, Nesterov 0.9) take another path.
  diloco.outer_lr = 0.7;
  diloco.outer_momentum = 0.9;
  run_strategy(fast_cluster(), small_work(), diloco, data, opt, &xc);
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
  // The WAN split: the final dense sync is each leader's last message, once to the other DC.
  ASSERT_TRUE(r.metrics.wan_final_sync_bytes.has_value());
  ASSERT_EQ(r.exchanges.back().step, -1);
  EXPECT_EQ(*r.metrics.wan_final_sync_bytes, 2 * r.exchanges.back().bytes_sent);
  EXPECT_LT(*r.metrics.wan_final_sync_bytes, r.metrics.wan_payload_bytes);
  EXPECT_EQ(d.metrics.wan_final_sync_bytes, std::optional<uint64_t>(0));
}

// powersgd, rank 2 from round 2 (start_powerSGD_iter), on the 784-32-10 MLP: both weight
// matrices pass torch's compression test ((32 + 784) * 2 * 2 < 32 * 784, (10 + 32) * 2 * 2 < 320),
// the biases (42 floats) do not. The two vanilla rounds send the progress (25,450 floats); each
// compressed round sends the biases with P (42 + 64 + 20 floats), then Q (1,568 + 64); finish()
// sends the rest densely. Every message has the 8-byte clock. Every replica ends identical.
TEST(Strategies, PowerSgdSendsItsFactorsAndEveryReplicaEndsIdentical) {
  StrategyConfig p{"powersgd"};
  p.K = 4;
  p.powersgd.rank = 2;
  p.powersgd.start_iter = 2;
  const auto r = run_strategy(fast_cluster(), small_work(), p, small_data(), RunOptions{});
  EXPECT_EQ(r.metrics.replica_max_abs_diff, 0.0);
  constexpr uint64_t dense = 8 + 4 * 25450, first = 8 + 4 * (42 + 64 + 20), second = 8 + 4 * (1568 + 64);
  std::vector<uint64_t> sent;
  for (const auto& e : r.exchanges) sent.push_back(e.bytes_sent);
  EXPECT_EQ(sent, (std::vector<uint64_t>{dense, dense, first, second, first, second, first, second, first, second,
                                         dense}));
  EXPECT_LT(r.series.loss.back(), r.series.loss.front());
}

using fixtures::triangle;

// Gloo's ring allreduce of n floats among P ranks on links of rate B and one-way delay d, as a
// timeline of its protocol (docs/guide/clocks.md, "The intra-DC ring time"), written independently of
// the code under test: every rank is in the same state at the same time, so one rank's timeline is
// the ring's. Per phase (reduce-scatter, then allgather) iteration i < K = S - S/P posts a
// receiver-ready (48 B) to the successor and a data segment (48 B + seg) to the predecessor, which
// leaves once the predecessor's ready has arrived; iteration i >= 2 waits for data(i - 2) and, in
// the reduce-scatter, adds it (reduce_ns per float). Messages: payload cut into 1448-byte segments
// of +52 header bytes, +38 Ethernet bytes per frame, one serializer per direction of a rank pair.
double gloo_ring_time_s(size_t n, size_t P, double B, double d, double reduce_ns) {
  const GlooRingLayout L = gloo_ring_layout(n * sizeof(float), P);
  const size_t K = L.num_segments - L.segments_per_rank;
  auto wire_s = [&](double payload) {
    const double frames = std::max(1.0, std::ceil(payload / 1448.0));
    return (payload + frames * (52 + 38)) * 8 / B;
  };
  const double r = wire_s(48), m = wire_s(48.0 + static_cast<double>(L.segment_bytes));
  const double c = reduce_ns * 1e-9 * static_cast<double>(L.segment_bytes / sizeof(float));
  double t = 0, ready_free = 0, data_free = 0, offered = 0;
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<double> arrive(K);
    for (size_t i = 0; i < K + 2; ++i) {
      if (i >= 2) {
        t = std::max(t, arrive[i - 2]);
        if (phase == 0) t += c;
      }
      if (i < K) {
        const double ready_out = std::max(t, ready_free);  // our ready(i); the predecessor's is the same
        ready_free = ready_out + r;
        offered = std::max({t, ready_out + r + d, offered});  // data(i) leaves on its ready, in order
        const double start = std::max(offered, data_free);
        data_free = start + m;
        arrive[i] = data_free + d;  // the successor's data(i) reaches us at the same instant
      }
    }
  }
  return t;
}

// The median step of a run on a compute profile, less the profile's step time: what a step waited
// for communication (on steps without an inter-DC round, the intra-DC allreduce alone).
double median_step_comm_s(const geotb::model::StrategyRun& r, double step_time_s) {
  std::vector<double> d;
  for (size_t i = 1; i < r.series.step_end_s.size(); ++i) d.push_back(r.series.step_end_s[i] - r.series.step_end_s[i - 1]);
  std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
  return d[d.size() / 2] - step_time_s;
}

// How much longer the first step is than the median one, spread over the run's steps.
double first_step_excess_s(const geotb::model::StrategyRun& r, double step_time_s) {
  const double first = r.series.step_end_s.at(0) - step_time_s;
  return (first - median_step_comm_s(r, step_time_s)) / static_cast<double>(r.series.step_end_s.size());
}

// Every strategy pays the LAN: on the virtual clock with a compute profile, a steady step of lan
// (4 ranks in one DC) and of hier (2 ranks per DC) waits for the ring time above plus the mean's
// division (n floats at the profile's per-element reduction cost), within 0.5 %, at the default
// LAN and at 1 Gbit/s / 1 ms (0.5 ms one way); and with the WAN equal to the LAN, naive_ddp's ring
// over both DCs costs what lan's does (within 0.5 %). The first step is longer (the TCP model's
// slow start: +18 us at 100 Gbit/s, +891 us at 1 Gbit/s, where a 25 kB ring chunk outgrows the
// initial window and needs one more round trip), so the mean exposed comm per step is the steady
// ring plus that excess spread over the run: it is asserted as such, also within 0.5 %.
TEST(VirtualClock, EveryStrategyPaysTheLanAsGloosRingProtocolSays) {
  RunOptions opt;
  opt.clock = ClockMode::kVirtual;
  opt.compute = {ComputeProfile{}};
  opt.compute[0].step_time = std::chrono::milliseconds(10);
  const double step_s = 0.010;
  const size_t n = 784 * 32 + 32 + 32 * 10 + 10;  // small_work's MLP
  const double division_s = static_cast<double>(n) * opt.compute[0].reduce_ns_per_element * 1e-9;
  struct Lan {
    double rate_bps;
    std::chrono::nanoseconds one_way;
  };
  for (const Lan lan : {Lan{100e9, std::chrono::microseconds(10)}, Lan{1e9, std::chrono::microseconds(500)}}) {
    SCOPED_TRACE(lan.rate_bps);
    ClusterSpec c = fast_cluster();
    c.lan.rate_bps = lan.rate_bps;
    c.lan.delay = lan.one_way;
    c.wan[0].a_to_b.rate_bps = c.wan[0].b_to_a.rate_bps = 1e9;
    c.wan[0].a_to_b.delay = c.wan[0].b_to_a.delay = std::chrono::milliseconds(15);
    const double d = std::chrono::duration<double>(lan.one_way).count();
    const double want4 = gloo_ring_time_s(n, 4, lan.rate_bps, d, opt.compute[0].reduce_ns_per_element) + division_s;
    const double want2 = gloo_ring_time_s(n, 2, lan.rate_bps, d, opt.compute[0].reduce_ns_per_element) + division_s;
    const auto l = run_strategy(c, small_work(), StrategyConfig{"lan"}, small_data(), opt);
    EXPECT_NEAR(median_step_comm_s(l, step_s), want4, 0.005 * want4) << "lan";
    EXPECT_NEAR(l.metrics.exposed_comm_s_per_step, want4 + first_step_excess_s(l, step_s), 0.005 * want4) << "lan";
    StrategyConfig hier{"hier_ef_topk_int8"};
    hier.K = 5;
    const auto h = run_strategy(c, small_work(), hier, small_data(), opt);
    EXPECT_NEAR(median_step_comm_s(h, step_s), want2, 0.005 * want2) << "hier";
    // naive_ddp with the WAN equal to the LAN: the same ring of 4 as lan's (its mean's division is
    // counted as compute, after the allreduce: compare whole steps).
    c.wan[0].a_to_b = c.wan[0].b_to_a = c.lan;
    const auto nv = run_strategy(c, small_work(), StrategyConfig{"naive_ddp"}, small_data(), opt);
    EXPECT_NEAR(nv.metrics.exposed_comm_s_per_step, want4 - division_s + first_step_excess_s(nv, step_s),
                0.005 * want4)
        << "naive_ddp";
    EXPECT_NEAR(median_step_comm_s(nv, step_s), median_step_comm_s(l, step_s), 0.005 * want4) << "naive_ddp vs lan";
    std::printf("LAN %.0f bit/s, %.0f us one way: model ring of 4 + division %.3f us: lan's median step %.3f "
                "(mean %.3f, first step's excess %.3f per step); naive_ddp with WAN = LAN: median %.3f, mean %.3f; "
                "model ring of 2 + division %.3f us: hier's median step %.3f\n",
                lan.rate_bps, d * 1e6, want4 * 1e6, median_step_comm_s(l, step_s) * 1e6,
                l.metrics.exposed_comm_s_per_step * 1e6, first_step_excess_s(l, step_s) * 1e6,
                median_step_comm_s(nv, step_s) * 1e6, nv.metrics.exposed_comm_s_per_step * 1e6, want2 * 1e6,
                median_step_comm_s(h, step_s) * 1e6);
  }
}

// A compute profile per data center: naive_ddp's synchronous steps run at the slower DC's pace
// (the same steps as with the slow profile everywhere, within 0.5 %), while the mean compute per
// worker is the two profiles' mean; and the run is exactly repeatable.
TEST(VirtualClock, PerDataCenterProfilesChargeEachDcItsOwnStepTime) {
  RunOptions opt;
  opt.clock = ClockMode::kVirtual;
  opt.compute = {ComputeProfile{}, ComputeProfile{}};
  opt.compute[0].step_time = std::chrono::milliseconds(10);
  opt.compute[1].step_time = std::chrono::milliseconds(30);
  const auto mixed = run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp"}, small_data(), opt);
  RunOptions slow = opt;
  slow.compute = {opt.compute[1]};
  const auto all_slow = run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp"}, small_data(), slow);
  const double step_mixed = median_step_comm_s(mixed, 0), step_slow = median_step_comm_s(all_slow, 0);
  EXPECT_GT(step_mixed, 0.030);
  std::printf("median step: 10 ms + 30 ms profiles %.6f s, 30 ms everywhere %.6f s\n", step_mixed, step_slow);
  EXPECT_NEAR(step_mixed, step_slow, 0.005 * step_slow);
  const double division_s = static_cast<double>(784 * 32 + 32 + 32 * 10 + 10) * 0.5e-9;  // naive's mean
  EXPECT_NEAR(mixed.metrics.compute_s_per_step, 0.020 + division_s, 1e-9);
  EXPECT_NEAR(all_slow.metrics.compute_s_per_step, 0.030 + division_s, 1e-9);
  const auto again = run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp"}, small_data(), opt);
  EXPECT_EQ(again.series.step_end_s, mixed.series.step_end_s);
  // Neither one per DC nor one for all: refused.
  RunOptions three = opt;
  three.compute.push_back(opt.compute[0]);
  EXPECT_THROW(run_strategy(fast_cluster(), small_work(), StrategyConfig{"naive_ddp"}, small_data(), three), RunError);
}

// Three sites on asymmetric links (as triangle-asymmetric): on the virtual clock with a compute
// profile, every exchange takes at least S / B + one-way delay of the link each message crossed,
// and close to it (the links are otherwise idle: efficiency > 0.9); replicas end bit-identical
// (peer contributions summed in DC order everywhere); and a second run gives the same times.
TEST(VirtualClock, ExchangesRespectTheLinkTheyCrossedAndReplicasAreIdenticalWithThreeSites) {
  RunOptions opt;
  opt.clock = ClockMode::kVirtual;
  opt.compute = {ComputeProfile{}};
  opt.compute[0].step_time = std::chrono::milliseconds(20);
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
        if (e.step >= 0) {
          EXPECT_GT(e.lower_bound_s / e.seconds, 0.9) << "step " << e.step;
        }
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

namespace {

// Gloo's ring of 2 on 4 floats (4 segments of 1 float, 2 sends per phase), computed without
// messages, by hand: 1 byte per ns, 1 us one way, 90 bytes of headers per frame, so a
// receiver-ready (48 bytes) takes 138 ns to leave and a segment (48 + 4) 142 ns; 1 ns per element
// reduced. Phase 0: the ready messages leave at 0 and 138 (arrive 1138, 1276); the segments leave
// at 1138 and 1280 (the pair busy until then), arrive 2280 and 2422; each is reduced on arrival:
// 2281, 2423. Phase 1 from 2423: readies arrive 3561 and 3699, segments leave 3561 and 3703,
// arrive 4703 and 4845, where the ring ends (no reduction in the allgather).
TEST(AnalyticLan, GloosRingScheduleByHand) {
  LanCost lan;
  lan.rate_bps = 8e9;
  lan.delay = std::chrono::microseconds(1);
  std::vector<std::chrono::nanoseconds> free(4, std::chrono::nanoseconds{0});
  RingClock c;
  c.lan = &lan;
  c.free = &free;
  auto one_ns = [](uint64_t e) { return std::chrono::nanoseconds(static_cast<int64_t>(e)); };
  c.reduce_cost = {one_ns, one_ns};
  const auto done = gloo_ring_schedule({std::chrono::nanoseconds{0}, std::chrono::nanoseconds{0}}, 4, 1.0, c);
  EXPECT_EQ(done, (std::vector<std::chrono::nanoseconds>{std::chrono::nanoseconds{4845}, std::chrono::nanoseconds{4845}}));
  // The pairs stay busy across calls: r -> r + 1 until the last ready left, r -> r - 1 the last segment.
  EXPECT_EQ(free[0].count(), 2699);
  EXPECT_EQ(free[1].count(), 3845);
  // A member 500 ns late: its receiver-ready messages are late, so what it receives is late by as
  // much, but what it sends waits for the other's readiness (1138 ns), which is not late: it ends
  // 500 ns later, the other at the same instant as before.
  std::vector<std::chrono::nanoseconds> idle(4, std::chrono::nanoseconds{0});
  c.free = &idle;
  const auto late = gloo_ring_schedule({std::chrono::nanoseconds{0}, std::chrono::nanoseconds{500}}, 4, 1.0, c);
  EXPECT_EQ(late, (std::vector<std::chrono::nanoseconds>{std::chrono::nanoseconds{4845}, std::chrono::nanoseconds{5345}}));
}

// Members that call different operations (a strategy's bug): every member gets the same
// CollectiveError naming both calls by member, whichever arrives last (the threads' order), and
// nobody waits forever; the hub then serves the next operation (crafted values: the mean, exactly).
TEST(AnalyticLan, AMismatchIsACollectiveErrorForEveryMember) {
  geotb::emu::VirtualScheduler sched;
  geotb::emu::VirtualClock clock(sched);
  geotb::emu::FabricConfig fc;
  fc.site_of = {0, 0};
  geotb::emu::Fabric fabric(fc, clock, sched);
  EmulatedTransport t0(fabric, 0, std::chrono::seconds(10), &sched), t1(fabric, 1, std::chrono::seconds(10), &sched);
  const auto hub = make_analytic_hub(t0.make_sync(), t0.make_sync(), LanCost{}, 2, 1.0);
  auto free_cost = [](uint64_t) { return std::chrono::nanoseconds{0}; };
  std::vector<std::string> errors(2);
  std::vector<std::vector<float>> after(2);
  // Both actors exist before either runs: one alone and blocked would be a deadlock.
  const std::vector<int> actors = {sched.add_actor("member 0", std::chrono::nanoseconds{0}),
                                   sched.add_actor("member 1", std::chrono::nanoseconds{0})};
  std::vector<std::thread> members;
  for (int m = 0; m < 2; ++m) {
    const auto actor = actors[static_cast<size_t>(m)];
    members.emplace_back([&, m, actor] {
      sched.bind(actor);
      const auto g = make_analytic_group(hub, m, free_cost);
      std::vector<float> d(4 + static_cast<size_t>(m), 1.0f);
      try {
        g->allreduce_mean(d.data(), d.size());  // 4 elements on member 0, 5 on member 1
      } catch (const CollectiveError& e) {
        errors[static_cast<size_t>(m)] = e.what();
      }
      std::vector<float> x = {static_cast<float>(m), 3.0f * static_cast<float>(m)};
      g->allreduce_mean(x.data(), x.size());
      after[static_cast<size_t>(m)] = x;
      sched.finish(actor);
    });
  }
  for (auto& t : members) t.join();
  for (const std::string& e : errors)
    EXPECT_EQ(e, "analytic intra-DC group: member 0 called allreduce of 4 elements (root 0) and member 1 allreduce "
                 "of 5 elements (root 0)");
  for (const auto& x : after) EXPECT_EQ(x, (std::vector<float>{0.5f, 1.5f}));
}

// lan.collectives "analytic" against the message model, on the virtual clock with a profile: the
// same sums to the bit (final weights, losses, replicas identical) for the strategies whose
// intra-DC collectives go through IntraDc (lan's group of 8, the hierarchical ones' groups of 4,
// local_sgd's and diloco's), and each steady step within 0.5 % of the message model's, whose
// TCP slow start (the first steps) the analytic model does not have. A represented model too large
// for Gloo's layout to scale runs the eager ring in both: same sums.
TEST(AnalyticLan, SameSumsAsTheMessagesAndStepsWithinHalfAPercent) {
  RunOptions opt;
  opt.clock = ClockMode::kVirtual;
  opt.compute = {ComputeProfile{}};
  opt.compute[0].step_time = std::chrono::milliseconds(10);
  ClusterSpec msg = fixtures::two_dcs(4, 100e9, std::chrono::microseconds(10), 1e9, std::chrono::milliseconds(15));
  ClusterSpec ana = msg;
  ana.lan_collectives = ClusterSpec::LanCollectives::kAnalytic;
  StrategyConfig hier{"hier_ef_topk_int8"};
  hier.K = 5;
  StrategyConfig hier_dense{"hierarchical"};
  hier_dense.K = 4;
  StrategyConfig local{"local_sgd"};
  local.tau = 5;
  StrategyConfig diloco{"diloco"};
  diloco.H = 5;
  for (const StrategyConfig& s : {StrategyConfig{"lan"}, hier, hier_dense, local, diloco}) {
    SCOPED_TRACE(s.name);
    std::vector<float> xm, xa;
    const auto m = run_strategy(msg, small_work(), s, small_data(), opt, &xm);
    const auto a = run_strategy(ana, small_work(), s, small_data(), opt, &xa);
    EXPECT_EQ(xa, xm);
    EXPECT_EQ(a.series.loss, m.series.loss);
    EXPECT_EQ(a.metrics.replica_max_abs_diff, 0.0);
    EXPECT_EQ(a.metrics.wan_payload_bytes, m.metrics.wan_payload_bytes);
    const double sm = median_step_comm_s(m, 0.010), sa = median_step_comm_s(a, 0.010);
    std::printf("%s: median step comm %.3f us (messages) %.3f us (analytic); wall %.6f s, %.6f s\n", s.name.c_str(),
                sm * 1e6, sa * 1e6, m.metrics.wall_s, a.metrics.wall_s);
    EXPECT_NEAR(sa, sm, 0.005 * sm);
    EXPECT_NEAR(a.metrics.wall_s, m.metrics.wall_s, 0.005 * m.metrics.wall_s);
  }
  RunOptions big = opt;
  big.represent_scale = 1e4;  // 254M elements: Gloo would cut them into more segments: the eager ring
  WorkloadSpec w = small_work();
  w.steps = 3;
  std::vector<float> xm, xa;
  const auto m = run_strategy(msg, w, hier, small_data(), big, &xm);
  const auto a = run_strategy(ana, w, hier, small_data(), big, &xa);
  EXPECT_EQ(xa, xm);
  std::printf("represented x1e4: wall %.3f s (messages), %.3f s (analytic)\n", m.metrics.wall_s, a.metrics.wall_s);
}

}  // namespace
