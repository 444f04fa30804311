// Policy "estimate" (engine/faults/estimate.h) on hand-made gradients: the formulas, and five
// workers of one DC (the fifth dead) running the estimator around a real allreduce of the
// engine's transport group, with a learner whose gradient is a crafted linear function of its
// batch's mean input. Every value is chosen so that the float arithmetic is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "emulator/inproc/fabric.h"
#include "common/clock.h"
#include "engine/collectives/transport_group.h"
#include "engine/faults/estimate.h"
#include "engine/strategy.h"
#include "engine/transport/emulated.h"

using namespace geotb::engine;

namespace {

TEST(Estimate, FormulasOnCraftedVectors) {
  const float a[3] = {1, 0, 0}, b[3] = {0, 2, 0}, c[3] = {3, 0, 0}, m[3] = {-1, 0, 0}, z[3] = {0, 0, 0};
  EXPECT_EQ(cosine(a, b, 3), 0.0);
  EXPECT_EQ(cosine(a, c, 3), 1.0);
  EXPECT_EQ(cosine(a, m, 3), -1.0);
  EXPECT_EQ(cosine(a, z, 3), 0.0);  // a zero vector: 0, not NaN
  EXPECT_EQ(rel_error(c, a, 3), 2.0);  // |(3,0,0) - (1,0,0)| / |(1,0,0)|
  EXPECT_EQ(rel_error(a, z, 3), 1.0);  // truth zero: |est|
  // The notes' weight grows as the batches differ; similarity's falls.
  EXPECT_EQ(estimate_weight("seed", 1.0), 0.5);
  EXPECT_EQ(estimate_weight("seed", 0.0), 1.0);
  EXPECT_EQ(estimate_weight("seed", -0.5), 2.0);
  EXPECT_EQ(estimate_weight("seed", -1.0), 1e9);  // the pole
  EXPECT_EQ(estimate_weight("similarity", 0.25), 0.25);
  EXPECT_EQ(estimate_weight("similarity", -0.25), 0.0);
  EXPECT_EQ(estimate_weight("equal", -0.25), 1.0);
  const float x[6] = {1, 2, 3, 4, 5, 6};  // two rows of three
  EXPECT_EQ(batch_feature(x, 2, {0.5f, 0.5f, 0.5f}), (std::vector<float>{2.0f, 3.0f, 4.0f}));
  // (L/N)(1 + Σ_d w/W): 4 survivors of 5, one dead, w = 0.5 of W = 2: 4/5 * 1.25 = 1.
  EXPECT_EQ(survivor_factor(4, 5, {0.5}, {2.0}), 1.0);
  EXPECT_EQ(survivor_factor(2, 4, {1.0, 3.0}, {2.0, 4.0}), 0.5 * (1 + 0.5 + 0.75));
}

// The gradient is k-th element (k + 1) * mean(x[:, k % 2]): linear in the batch's mean input.
class LinearLearner final : public Learner {
 public:
  explicit LinearLearner(size_t n) : p_(n, 0.0f), g_(n, 0.0f) {}
  size_t num_params() const override { return p_.size(); }
  float* params() override { return p_.data(); }
  float* grads() override { return g_.data(); }
  double forward_backward(const float* x, const int64_t*, size_t batch) override {
    double m[2] = {0, 0};
    for (size_t r = 0; r < batch; ++r) m[0] += x[2 * r], m[1] += x[2 * r + 1];
    for (size_t k = 0; k < g_.size(); ++k) g_[k] = static_cast<float>(static_cast<double>(k + 1) * m[k % 2] / batch);
    return 0;
  }
  double accuracy(const Dataset&) override { return 0; }

 private:
  std::vector<float> p_, g_;
};

constexpr size_t kN = 6;  // parameters
constexpr size_t kBatch = 2;

// The dead worker (rank 4)'s shard: every example's input is (1, 0), so each of its batches
// means (1, 0) and its true gradient is (1, 0, 3, 0, 5, 0).
Dataset crafted_train() {
  Dataset d;
  d.size = 8;
  d.rows = 1;
  d.cols = 2;
  for (size_t i = 0; i < d.size; ++i) {
    d.images.push_back(1.0f);
    d.images.push_back(0.0f);
    d.labels.push_back(0);
  }
  return d;
}

struct DcOutcome {
  std::vector<std::vector<float>> mean;  // per survivor: the group's mean after each step
  std::vector<geotb::model::EstimateRecord> records;
};

// Five ranks of one DC; step 0 with all five, then rank 4 dies and steps 1 and 2 run with the
// four survivors, each with its own batch: `inputs[r]` the mean input of every step's batch.
DcOutcome run_dc(const geotb::model::EstimateConfig& cfg, const std::vector<std::vector<float>>& inputs) {
  geotb::emu::FabricConfig fc;
  fc.num_sites = 1;
  fc.site_of = {0, 0, 0, 0, 0};
  fc.lan.rate_bps = 0;
  fc.lan.delay = std::chrono::nanoseconds{0};
  geotb::emu::SteadyClock clock;
  geotb::emu::Fabric fabric(fc, clock);
  const Dataset train = crafted_train();
  EstimateBoard board;
  auto center = std::make_shared<const std::vector<float>>(std::vector<float>{0.0f, 0.0f});
  DcOutcome out;
  out.mean.resize(4);
  std::vector<std::thread> th;
  for (int r = 0; r < 5; ++r)
    th.emplace_back([&, r] {
      EmulatedTransport t(fabric, r, std::chrono::seconds(10));
      auto group = make_transport_group(t, {0, 1, 2, 3, 4}, r);
      GradientEstimator::Setup s;
      s.cfg = cfg;
      s.rank = r;
      s.dc = 0;
      s.dc_ranks = {0, 1, 2, 3, 4};
      for (int m = 0; m < 5; ++m) s.shards[m] = {0, 1, 2, 3, 4, 5, 6, 7};
      s.train = &train;
      s.center = center;
      s.seed = 1;
      s.batch = kBatch;
      s.board = &board;
      GradientEstimator est(s);
      LinearLearner learner(kN);
      WorkerEnv env;
      env.rank = r;
      env.learner = &learner;
      env.intra = group.get();
      env.clock = &clock;
      env.estimator = &est;
      std::unique_ptr<IntraDc> shrunk;
      for (int step = 0; step < 3; ++step) {
        if (step == 1) {
          if (r == 4) return;  // dead
          shrunk = shrink_transport_group(*group, t, {0, 1, 2, 3}, r);
          env.intra = shrunk.get();
          est.set_group({0, 1, 2, 3});
        }
        const std::vector<float>& in = inputs[static_cast<size_t>(r)];
        const float x[2 * kBatch] = {in[2 * step], in[2 * step + 1], in[2 * step], in[2 * step + 1]};
        est.batch(step, x, kBatch);
        learner.forward_backward(x, nullptr, kBatch);
        est.before_reduce(env);
        env.intra->allreduce_mean(learner.grads(), kN);
        est.after_reduce(env);
        if (r < 4 && step > 0) out.mean[static_cast<size_t>(r)].insert(out.mean[static_cast<size_t>(r)].end(),
                                                                        learner.grads(), learner.grads() + kN);
      }
    });
  for (auto& t : th) t.join();
  out.records = board.records();
  return out;
}

// Every rank's batch mean at steps 0, 1, 2 (x, y per step). Steps 1 and 2: ranks 0 and 1 like
// the dead's (1, 0), ranks 2 and 3 orthogonal to it (0, 1). Step 0 (all alive) sums to (5, 5):
// its mean over five is exact. Rank 4's step 0 is its shard's (1, 0).
const std::vector<std::vector<float>> kInputs = {
    {2, 0, 1, 0, 1, 0}, {2, 0, 1, 0, 1, 0}, {0, 2, 0, 1, 0, 1}, {0, 3, 0, 1, 0, 1}, {1, 0, 1, 0, 1, 0}};

std::vector<float> grad_of(float mx, float my, float scale = 1.0f) {
  std::vector<float> g(kN);
  for (size_t k = 0; k < kN; ++k) g[k] = scale * static_cast<float>(k + 1) * (k % 2 ? my : mx);
  return g;
}

// similarity: w = (1, 1, 0, 0), W = 2: Ĝ = (G0 + G1) / 2 = (1, 0, 3, 0, 5, 0), the truth. The
// group's mean (G0 + G1 + G2 + G3 + Ĝ) / 5 = (3 (1,0,..) + 2 (0,1,..)) / 5 per element.
TEST(Estimate, SimilarityWeighsTheLikeBatchesAndTheMeanIsOverAllFive) {
  geotb::model::EstimateConfig cfg;
  cfg.weights = "similarity";
  const DcOutcome o = run_dc(cfg, kInputs);
  const std::vector<float> want = {3.0f / 5 * 1, 2.0f / 5 * 2, 3.0f / 5 * 3, 2.0f / 5 * 4, 3.0f / 5 * 5, 2.0f / 5 * 6};
  for (int r = 0; r < 4; ++r)
    for (size_t k = 0; k < kN; ++k) EXPECT_FLOAT_EQ(o.mean[static_cast<size_t>(r)][k], want[k]) << r << " " << k;
  ASSERT_EQ(o.records.size(), 2u);  // steps 1 and 2, by the lowest survivor
  for (const auto& rec : o.records) {
    EXPECT_EQ(rec.rank, 4);
    EXPECT_DOUBLE_EQ(rec.cosine, 1.0);
    EXPECT_DOUBLE_EQ(rec.rel_error, 0.0);
    // The survivors' mean (1/2, 1/2) per pair against the truth (1, 0): cos = (1+9+25) / |.| |.|
    const std::vector<float> shrink = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f}, truth = grad_of(1, 0);
    EXPECT_DOUBLE_EQ(rec.shrink_cosine, cosine(shrink.data(), truth.data(), kN));
    EXPECT_DOUBLE_EQ(rec.shrink_rel_error, rel_error(shrink.data(), truth.data(), kN));
  }
  EXPECT_EQ(o.records[0].step, 1);
  EXPECT_EQ(o.records[1].step, 2);
}

// seed: w = 1/(1 + cos) = (0.5, 0.5, 1, 1), W = 3: Ĝ = (0.5 G0 + 0.5 G1 + G2 + G3) / 3, which
// leans toward the *unlike* batches: (1/3, 2/3) per pair against the truth (1, 0).
TEST(Estimate, SeedWeighsTheUnlikeBatchesMore) {
  geotb::model::EstimateConfig cfg;
  cfg.weights = "seed";
  const DcOutcome o = run_dc(cfg, kInputs);
  const std::vector<float> est = {1.0f / 3, 4.0f / 3, 1.0f, 8.0f / 3, 5.0f / 3, 4.0f}, truth = grad_of(1, 0);
  ASSERT_EQ(o.records.size(), 2u);
  EXPECT_NEAR(o.records[0].cosine, cosine(est.data(), truth.data(), kN), 1e-6);
  EXPECT_NEAR(o.records[0].rel_error, rel_error(est.data(), truth.data(), kN), 1e-6);
  for (size_t k = 0; k < kN; ++k)
    EXPECT_NEAR(o.mean[0][k], (grad_of(2, 2)[k] + est[k]) / 5, 1e-6) << k;
}

// equal: the survivors' mean, as shrink divides by the survivors: bit for bit.
TEST(Estimate, EqualIsShrinksMeanExactly) {
  geotb::model::EstimateConfig cfg;
  cfg.weights = "equal";
  const DcOutcome o = run_dc(cfg, kInputs);
  for (size_t k = 0; k < kN; ++k) EXPECT_EQ(o.mean[2][k], grad_of(2, 2)[k] / 4) << k;
  ASSERT_EQ(o.records.size(), 2u);
  EXPECT_EQ(o.records[0].cosine, o.records[0].shrink_cosine);
  EXPECT_EQ(o.records[0].rel_error, o.records[0].shrink_rel_error);
}

// last_gradient: after the death the survivors recover the dead's gradient of step 0 from
// 5 · mean(0) = (1, 1) per pair minus their own gradients of step 0, (4, 5) from a mean of
// (1, 1.25) over four: (1, 0, 3, 0, 5, 0) exactly. With decay 0.5 it stands in at half at step 1
// and a quarter at step 2 (the group's means as float arithmetic gives them: 4/5 is inexact).
TEST(Estimate, LastGradientIsRecoveredExactlyAndDecays) {
  geotb::model::EstimateConfig cfg;
  cfg.weights = "last_gradient";
  const DcOutcome o = run_dc(cfg, kInputs);
  for (size_t k = 0; k < kN; ++k) {
    EXPECT_FLOAT_EQ(o.mean[1][k], (grad_of(2, 2)[k] + grad_of(1, 0)[k]) / 5) << k;
    EXPECT_FLOAT_EQ(o.mean[1][kN + k], (grad_of(2, 2)[k] + grad_of(1, 0)[k]) / 5) << k;
  }
  ASSERT_EQ(o.records.size(), 2u);
  EXPECT_DOUBLE_EQ(o.records[0].rel_error, 0.0);
  cfg.decay = 0.5;
  const DcOutcome d = run_dc(cfg, kInputs);
  for (size_t k = 0; k < kN; ++k) {
    EXPECT_FLOAT_EQ(d.mean[3][k], (grad_of(2, 2)[k] + grad_of(1, 0, 0.5f)[k]) / 5) << k;
    EXPECT_FLOAT_EQ(d.mean[3][kN + k], (grad_of(2, 2)[k] + grad_of(1, 0, 0.25f)[k]) / 5) << k;
  }
  EXPECT_DOUBLE_EQ(d.records[1].cosine, 1.0);
  EXPECT_DOUBLE_EQ(d.records[1].rel_error, 0.75);
}

}  // namespace
