// local_sgd, diloco and powersgd: one round (two for diloco's outer momentum) of the real strategy objects
// against hand-computed references, on crafted tensors. 2 DCs x 2 workers, each worker a thread
// with a fake learner (its gradients written by the test), an intra-DC group that averages its two
// members, and the in-process fabric between all four (no libtorch). All values are dyadic
// fractions, so float arithmetic is exact and the comparisons are equalities.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>

#include "emulator/inproc/fabric.h"
#include "engine/strategies/table.h"
#include "engine/transport/emulated.h"
#include "strategy_fixtures.h"
#include "kernels/qsgd.h"

using namespace geotb;
using namespace geotb::engine;
using geotb::engine::test::FakeIntra;
using geotb::engine::test::FakeLearner;
using geotb::engine::test::Group;

namespace {

constexpr size_t kN = 3;

const std::vector<float> kX0 = {1, 2, -1};
// Per step, per worker (ranks 0, 1 in DC 0; 2, 3 in DC 1). DC means: step 0 [2,0,1] / [0,2,1],
// step 1 [1,1,1] / [1,0,-1]; steps 2, 3 repeat steps 0, 1.
const float kGrad[2][4][kN] = {{{1, 0, 2}, {3, 0, 0}, {0, 1, 0}, {0, 3, 2}},
                               {{1, 1, 1}, {1, 1, 1}, {2, 0, 0}, {0, 0, -2}}};

struct WorkerOut {
  std::vector<float> x, momentum;
  std::vector<ExchangeRecord> exchanges;
  StateBuffers state;  // the strategy's checkpoint state after finish()
  std::vector<float> x_before_finish;  // after the last step, before finish()

  /// A float buffer of `state` ("scaffold_c", ...).
  std::vector<float> floats(const std::string& name) const {
    const auto* e = state.find(name);
    if (!e) return {};
    std::vector<float> v(e->bytes.size() / sizeof(float));
    std::memcpy(v.data(), e->bytes.data(), e->bytes.size());
    return v;
  }
};

/// A step that DC `dc` discards (node faults: Strategy::discard_step on all its workers).
struct Discard {
  int dc = -1, step = -1;
};

/// What a run may add: a discarded step; `curved`, DC 0's gradient also has x[0] in coordinate 0
/// (a loss term x[0]^2 / 2 that only DC 0 has), so that its gradient depends on the model.
struct Extras {
  Discard discard = {};
  bool curved = false;
  /// env.tensor_shapes (powersgd); empty: one 1-D tensor of kN.
  std::vector<std::vector<int64_t>> shapes = {};
  uint64_t seed = 0;  // env.seed: the run's seed (qsgd's stochastic rounding)
};

/// 1, 2, 3, ... from every seed: PowerSGD's first Q without libtorch.
class CountingNormal final : public kernels::NormalSource {
 public:
  void seed(uint64_t) override { next_ = 1; }
  void fill(float* out, size_t n) override {
    for (size_t i = 0; i < n; ++i) out[i] = next_++;
  }

 private:
  float next_ = 1;
};

/// Runs `steps` steps (then finish()) of strategy `cfg` on the 4 workers (2 + 2, or `layout`) with
/// the gradients `grad` (kGrad); inner SGD lr 0.5, momentum 0.5. `weights`: env.dc_weights.
/// `extras`: Extras.
std::vector<WorkerOut> run(const StrategyConfig& cfg, int steps,
                           const model::RankLayout& layout = model::RankLayout::uniform(2, 2),
                           const float (*grad)[4][kN] = kGrad, const std::vector<float>& weights = {},
                           const Extras& extras = {}) {
  emu::SteadyClock clock;
  emu::FabricConfig fc;
  fc.num_sites = 2;
  for (int r = 0; r < 4; ++r) fc.site_of.push_back(layout.dc_of(r));
  fc.lan.rate_bps = 0;
  fc.lan.delay = std::chrono::nanoseconds{0};
  emu::LinkConfig wan;
  wan.rate_bps = 0;
  wan.delay = std::chrono::nanoseconds{0};
  fc.wan = {{0, 1, wan}, {1, 0, wan}};
  emu::Fabric fabric(fc, clock);
  Group g0(layout.workers(0), kN), g1(layout.workers(1), kN);
  Group* groups[2] = {&g0, &g1};
  std::vector<WorkerOut> out(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      FakeLearner learner(kX0);
      SgdConfig sc;
      sc.lr = 0.5;
      sc.momentum = 0.5;
      Sgd opt(sc, kN);
      EmulatedTransport net(fabric, r, std::chrono::seconds(10));
      FakeIntra intra(*groups[layout.dc_of(r)], layout.local_of(r));
      WorkerEnv env = geotb::engine::test::fixture_env(r, layout, learner, opt, net, intra, clock);
      env.dc_weights = weights;
      env.tensor_shapes = extras.shapes.empty() ? std::vector<std::vector<int64_t>>{{int64_t{kN}}} : extras.shapes;
      env.make_normal = [] { return std::make_unique<CountingNormal>(); };
      env.seed = extras.seed;
      auto s = find_strategy(cfg.name).make(cfg, env);
      for (int step = 0; step < steps; ++step) {
        if (env.dc == extras.discard.dc && step == extras.discard.step) {
          s->discard_step(env, step);
          continue;
        }
        for (size_t i = 0; i < kN; ++i) learner.grads()[i] = grad[step % 2][r][i];
        if (extras.curved && env.dc == 0) learner.grads()[0] += learner.params()[0];
        s->step(env, step);
      }
      std::vector<float> before(learner.params(), learner.params() + kN);
      s->finish(env);
      StateBuffers state;
      StateWriter w(state);
      s->save(env, w);
      out[static_cast<size_t>(r)] = {std::vector<float>(learner.params(), learner.params() + kN),
                                     opt.momentum_buffer(), env.exchanges, std::move(state), std::move(before)};
    });
  for (auto& t : threads) t.join();
  return out;
}

/// run() on 2 + 2 workers with kGrad, equal weights, and `extras`.
std::vector<WorkerOut> run_with(const StrategyConfig& cfg, int steps, const Extras& extras) {
  return run(cfg, steps, model::RankLayout::uniform(2, 2), kGrad, {}, extras);
}

// By hand (lr 0.5, momentum 0.5; the first step sets m = g):
//   DC 0: m = [2,0,1], x = [0,2,-1.5];   then m = [1,0,.5]+[1,1,1] = [2,1,1.5],  x = [-1,1.5,-2.25]
//   DC 1: m = [0,2,1], x = [1,1,-1.5];   then m = [0,1,.5]+[1,0,-1] = [1,1,-.5], x = [.5,.5,-1.25]
//   average: x = [-0.25, 1, -1.75]; averaged momentum [1.5, 1, 0.5].
const std::vector<float> kDc0After2 = {-1, 1.5f, -2.25f}, kDc1After2 = {0.5f, 0.5f, -1.25f};
const std::vector<float> kMeanAfter2 = {-0.25f, 1, -1.75f};

TEST(LocalSgd, OneRoundAveragesTheModelsAndKeepsMomentumLocalByDefault) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  const auto out = run(c, 2);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, kMeanAfter2) << "rank " << r;
  EXPECT_EQ(out[0].momentum, (std::vector<float>{2, 1, 1.5f}));
  EXPECT_EQ(out[1].momentum, (std::vector<float>{2, 1, 1.5f}));
  EXPECT_EQ(out[2].momentum, (std::vector<float>{1, 1, -0.5f}));
  EXPECT_EQ(out[3].momentum, (std::vector<float>{1, 1, -0.5f}));
  // One exchange (after step 1), the model only: 3 floats + the 8-byte header; none at finish.
  ASSERT_EQ(out[0].exchanges.size(), 1u);
  EXPECT_EQ(out[0].exchanges[0].step, 1);
  EXPECT_EQ(out[0].exchanges[0].bytes_sent, 8u + 3 * 4);
  EXPECT_TRUE(out[1].exchanges.empty());  // members do not talk to the WAN
}

TEST(LocalSgd, AveragedMomentumTravelsWithTheModel) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.momentum_sync = "averaged";
  const auto out = run(c, 2);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out[static_cast<size_t>(r)].x, kMeanAfter2) << "rank " << r;
    EXPECT_EQ(out[static_cast<size_t>(r)].momentum, (std::vector<float>{1.5f, 1, 0.5f})) << "rank " << r;
  }
  EXPECT_EQ(out[2].exchanges.at(0).bytes_sent, 8u + 6 * 4);
}

// FedProx, mu 0.5: g <- g + mu (x - x_0) before each SGD step of the first round. Step 0 is as
// without it (x = x_0). Step 1, by hand:
//   DC 0: g = [1,1,1] + .5 ([0,2,-1.5] - [1,2,-1]) = [.5,1,.75]; m = [1,0,.5] + g = [1.5,1,1.25];
//         x = [0,2,-1.5] - .5 m = [-.75,1.5,-2.125]
//   DC 1: g = [1,0,-1] + .5 ([1,1,-1.5] - [1,2,-1]) = [1,-.5,-1.25]; m = [0,1,.5] + g = [1,.5,-.75];
//         x = [1,1,-1.5] - .5 m = [.5,.75,-1.125]
//   average: x = [-.125, 1.125, -1.625]; the momentum stays local.
TEST(LocalSgd, FedProxAddsTheProximalGradientAgainstTheLastAverage) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.fedprox_mu = 0.5;
  auto out = run(c, 2);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(out[static_cast<size_t>(r)].x, (std::vector<float>{-0.125f, 1.125f, -1.625f})) << "rank " << r;
  EXPECT_EQ(out[0].momentum, (std::vector<float>{1.5f, 1, 1.25f}));
  EXPECT_EQ(out[2].momentum, (std::vector<float>{1, 0.5f, -0.75f}));
  // mu 0 is plain local SGD.
  c.fedprox_mu = 0;
  out = run(c, 2);
  EXPECT_EQ(out[0].x, kMeanAfter2);
}

// Unequal sites, 1 + 3 workers, weighted by workers (1/4, 3/4). DC 1's gradients sum to multiples
// of 3, so its means are exact: step 0 [2,2,1], step 1 [1,1,-1]; DC 0's are [2,0,1] and [1,1,1].
// By hand (lr .5, momentum .5):
//   DC 0: x = [0,2,-1.5] after step 0, m = [2,1,1.5] and x = [-1,1.5,-2.25] after step 1
//   DC 1: x = [0,1,-1.5] after step 0, m = [2,2,-.5] and x = [-1,0,-1.25] after step 1
//   average: .25 x_0 + .75 x_1 = [-1, .375, -1.5]   (with equal weights: [-1, .75, -1.75])
const float kGradOnePlusThree[2][4][kN] = {{{2, 0, 1}, {3, 0, 3}, {0, 3, 0}, {3, 3, 0}},
                                           {{1, 1, 1}, {0, 0, 3}, {3, 0, 0}, {0, 3, -6}}};

TEST(LocalSgd, UnequalSitesAverageWeightedByTheirWorkers) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  const model::RankLayout layout({1, 3});
  auto out = run(c, 2, layout, kGradOnePlusThree, {0.25f, 0.75f});
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(out[static_cast<size_t>(r)].x, (std::vector<float>{-1, 0.375f, -1.5f})) << "rank " << r;
  EXPECT_EQ(out[0].exchanges.size(), 1u);  // DC 0's leader
  EXPECT_EQ(out[1].exchanges.size(), 1u);  // DC 1's leader, rank 1
  EXPECT_TRUE(out[2].exchanges.empty());
  // Without weights the DCs count alike.
  out = run(c, 2, layout, kGradOnePlusThree);
  EXPECT_EQ(out[3].x, (std::vector<float>{-1, 0.75f, -1.75f}));
}

// SCAFFOLD (option II, lr 0.5, k = tau = 2 steps: k lr = 1), two rounds by hand.
// Round 1: c = c_d = 0, so the steps are plain local SGD's (kDc0After2, kDc1After2, average
// x1 = kMeanAfter2); then c_d = (x0 - y_d) / (k lr):
//   c_0 = [1,2,-1] - [-1,1.5,-2.25] = [2,.5,1.25];  c_1 = [1,2,-1] - [.5,.5,-1.25] = [.5,1.5,.25]
//   Δc_d = c_d (from 0), c = mean = [1.25,1,.75]; the per-step corrections c - c_d:
//   DC 0 [-.75,.5,-.5], DC 1 [.75,-.5,.5].
// Round 2, from x1 = [-.25,1,-1.75], the momentum kept per DC (DC 0 [2,1,1.5], DC 1 [1,1,-.5]):
//   DC 0: g = [2,0,1]+[-.75,.5,-.5] = [1.25,.5,.5],  m = [1,.5,.75]+g = [2.25,1,1.25],   x = [-1.375,.5,-2.375]
//         g = [1,1,1]+[-.75,.5,-.5] = [.25,1.5,.5],  m = [1.125,.5,.625]+g = [1.375,2,1.125], x = [-2.0625,-.5,-2.9375]
//   DC 1: g = [0,2,1]+[.75,-.5,.5] = [.75,1.5,1.5],  m = [.5,.5,-.25]+g = [1.25,2,1.25],  x = [-.875,0,-2.375]
//         g = [1,0,-1]+[.75,-.5,.5] = [1.75,-.5,-.5], m = [.625,1,.625]+g = [2.375,.5,.125], x = [-2.0625,-.25,-2.4375]
//   average x2 = [-2.0625,-.375,-2.6875], plain local SGD's (below);
//   c_0 = [2,.5,1.25] - [1.25,1,.75] + (x1 - y_0) = [.75,-.5,.5] + [1.8125,1.5,1.1875] = [2.5625,1,1.6875]
//   c_1 = [.5,1.5,.25] - [1.25,1,.75] + (x1 - y_1) = [-.75,.5,-.5] + [1.8125,1.25,.6875] = [1.0625,1.75,.1875]
//   Δc_0 = [.5625,.5,.4375], Δc_1 = [.5625,.25,-.0625]; c = [1.25,1,.75] + [.5625,.375,.1875] = [1.8125,1.375,.9375]
//   (with every DC in every round and the same k, c = (x_prev - x_new) / (k lr): x1 - x2, as here).
const std::vector<float> kScaffoldX2 = {-2.0625f, -0.375f, -2.6875f};
const std::vector<float> kScaffoldC1 = {1.25f, 1, 0.75f}, kScaffoldC2 = {1.8125f, 1.375f, 0.9375f};

TEST(LocalSgd, ScaffoldFirstRoundIsPlainLocalSgdAndSetsTheControlVariates) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.scaffold = true;
  const auto out = run(c, 2);
  for (int r = 0; r < 4; ++r) {
    const auto& o = out[static_cast<size_t>(r)];
    EXPECT_EQ(o.x, kMeanAfter2) << "rank " << r;
    EXPECT_EQ(o.floats("scaffold_c"), kScaffoldC1) << "rank " << r;
    EXPECT_EQ(o.floats("scaffold_c_dc"), r < 2 ? (std::vector<float>{2, 0.5f, 1.25f}) : (std::vector<float>{0.5f, 1.5f, 0.25f}))
        << "rank " << r;
    EXPECT_EQ(o.floats("last_average"), kMeanAfter2) << "rank " << r;
  }
  EXPECT_EQ(out[0].momentum, (std::vector<float>{2, 1, 1.5f}));  // local, as without SCAFFOLD
  // The model and Δc_d: twice the floats of plain local SGD's exchange.
  ASSERT_EQ(out[0].exchanges.size(), 1u);
  EXPECT_EQ(out[0].exchanges[0].bytes_sent, 8u + 2 * 3 * 4);
}

TEST(LocalSgd, ScaffoldSecondRoundCorrectsEveryStepByTheControlVariates) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.scaffold = true;
  const auto out = run(c, 4);
  for (int r = 0; r < 4; ++r) {
    const auto& o = out[static_cast<size_t>(r)];
    EXPECT_EQ(o.x, kScaffoldX2) << "rank " << r;
    EXPECT_EQ(o.floats("scaffold_c"), kScaffoldC2) << "rank " << r;
    EXPECT_EQ(o.floats("scaffold_c_dc"),
              r < 2 ? (std::vector<float>{2.5625f, 1, 1.6875f}) : (std::vector<float>{1.0625f, 1.75f, 0.1875f}))
        << "rank " << r;
  }
  EXPECT_EQ(out[0].momentum, (std::vector<float>{1.375f, 2, 1.125f}));
  EXPECT_EQ(out[2].momentum, (std::vector<float>{2.375f, 0.5f, 0.125f}));
  ASSERT_EQ(out[0].exchanges.size(), 2u);
  EXPECT_EQ(out[0].exchanges[1].bytes_sent, 8u + 2 * 3 * 4);
  // Each DC's steps are corrected: after step 2 (finish() then averages that one step).
  const auto mid = run(c, 3);
  EXPECT_EQ(mid[0].x_before_finish, (std::vector<float>{-1.375f, 0.5f, -2.375f}));
  EXPECT_EQ(mid[2].x_before_finish, (std::vector<float>{-0.875f, 0, -2.375f}));
  // These gradients do not depend on the model and SGD with momentum is linear in them: the
  // corrections c - c_d sum to 0 over the DCs, so the average is plain local SGD's.
  c.scaffold = false;
  const auto plain_mid = run(c, 3);
  EXPECT_EQ(plain_mid[0].x_before_finish, (std::vector<float>{-1.75f, 0.75f, -2.625f}));
  EXPECT_EQ(plain_mid[2].x_before_finish, (std::vector<float>{-0.5f, -0.25f, -2.125f}));
  EXPECT_EQ(run(c, 4)[0].x, kScaffoldX2);
  // With averaged momentum the message is the model, the momentum and Δc_d.
  c.scaffold = true;
  c.momentum_sync = "averaged";
  EXPECT_EQ(run(c, 2)[2].exchanges.at(0).bytes_sent, 8u + 3 * 3 * 4);
}

// Where a DC's gradient depends on the model, the correction moves the average. DC 0's gradient
// gets + x[0] in coordinate 0 (the other coordinates are as above); coordinate 0 by hand:
//   round 1 (plain): DC 0 g = 2+1 = 3, m = 3, x = -.5; g = 1-.5 = .5, m = 1.5+.5 = 2, x = -1.5.
//                    DC 1 x = .5 (as above). x1 = -.5; c_0 = 1+1.5 = 2.5, c_1 = .5, c = 1.5;
//                    corrections: DC 0 -1, DC 1 +1.
//   round 2, SCAFFOLD: DC 0 g = 2-.5-1 = .5, m = 1+.5 = 1.5, x = -1.25; g = 1-1.25-1 = -1.25,
//                      m = .75-1.25 = -.5, x = -1.
//                      DC 1 g = 0+1 = 1, m = .5+1 = 1.5, x = -1.25; g = 1+1 = 2, m = .75+2 = 2.75,
//                      x = -2.625.  Average -1.8125.
//   round 2, plain:    DC 0 g = 2-.5 = 1.5, m = 2.5, x = -1.75; g = 1-1.75 = -.75, m = .5, x = -2.
//                      DC 1 g = 0, m = .5, x = -.75; g = 1, m = 1.25, x = -1.375.  Average -1.6875.
TEST(LocalSgd, ScaffoldMovesTheAverageWhereTheGradientDependsOnTheModel) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.scaffold = true;
  const auto out = run_with(c, 4, {.curved = true});
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(out[static_cast<size_t>(r)].x, (std::vector<float>{-1.8125f, -0.375f, -2.6875f})) << "rank " << r;
  EXPECT_EQ(run_with(c, 2, {.curved = true})[0].floats("scaffold_c"), (std::vector<float>{1.5f, 1, 0.75f}));
  c.scaffold = false;
  EXPECT_EQ(run_with(c, 4, {.curved = true})[0].x, (std::vector<float>{-1.6875f, -0.375f, -2.6875f}));
}

// scaffold_lr "effective": η = lr / (1 - momentum) = .5 / .5 = 1, so k η = 2 and round 1's c_d
// are half of those above: c_0 = [1,.25,.625], c_1 = [.25,.75,.125], c = [.625,.5,.375]; the model
// of round 1 is plain local SGD's as before.
TEST(LocalSgd, ScaffoldEffectiveLrDividesByOneMinusMomentum) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.scaffold = true;
  c.scaffold_lr = "effective";
  const auto out = run(c, 2);
  EXPECT_EQ(out[0].x, kMeanAfter2);
  EXPECT_EQ(out[0].floats("scaffold_c_dc"), (std::vector<float>{1, 0.25f, 0.625f}));
  EXPECT_EQ(out[2].floats("scaffold_c_dc"), (std::vector<float>{0.25f, 0.75f, 0.125f}));
  EXPECT_EQ(out[3].floats("scaffold_c"), (std::vector<float>{0.625f, 0.5f, 0.375f}));
}

// k counts the optimizer steps taken: DC 1 discards step 1 (node faults), so its round has k = 1
// and its model is after step 0, [1,1,-1.5]: c_1 = (x0 - [1,1,-1.5]) / (1 x .5) = [0,2,1]; DC 0's
// is round 1's [2,.5,1.25]; c = [1,1.25,1.125]; the average [0,1.25,-1.875].
TEST(LocalSgd, ScaffoldCountsOnlyTheStepsTaken) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.scaffold = true;
  const auto out = run_with(c, 2, {.discard = {.dc = 1, .step = 1}});
  for (int r = 0; r < 4; ++r) {
    const auto& o = out[static_cast<size_t>(r)];
    EXPECT_EQ(o.x, (std::vector<float>{0, 1.25f, -1.875f})) << "rank " << r;
    EXPECT_EQ(o.floats("scaffold_c"), (std::vector<float>{1, 1.25f, 1.125f})) << "rank " << r;
  }
  EXPECT_EQ(out[2].floats("scaffold_c_dc"), (std::vector<float>{0, 2, 1}));
  // Every step of a round discarded (k = 0): c_d stays (0), Δc_d = 0.
  StrategyConfig one = c;
  one.tau = 1;
  const auto none = run_with(one, 1, {.discard = {.dc = 1, .step = 0}});
  EXPECT_EQ(none[2].floats("scaffold_c_dc"), (std::vector<float>{0, 0, 0}));
  // DC 0: c_0 = (x0 - [0,2,-1.5]) / (1 x .5) = [2,0,1]; c = [1,0,.5].
  EXPECT_EQ(none[0].floats("scaffold_c_dc"), (std::vector<float>{2, 0, 1}));
  EXPECT_EQ(none[2].floats("scaffold_c"), (std::vector<float>{1, 0, 0.5f}));
}

// Both on: g <- g + mu (x - x̄) + (c - c_d), FedProx's term first. Round 1 is FedProx's (c = c_d =
// 0): x1 = [-.125,1.125,-1.625] (the FedProx test), DC models [-.75,1.5,-2.125] and [.5,.75,-1.125];
// c_0 = x0 - y_0 = [1.75,.5,1.125], c_1 = [.5,1.25,.125], c = [1.125,.875,.625].
TEST(LocalSgd, FedProxAndScaffoldTogether) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.fedprox_mu = 0.5;
  c.scaffold = true;
  const auto out = run(c, 2);
  EXPECT_EQ(out[0].x, (std::vector<float>{-0.125f, 1.125f, -1.625f}));
  EXPECT_EQ(out[0].floats("scaffold_c_dc"), (std::vector<float>{1.75f, 0.5f, 1.125f}));
  EXPECT_EQ(out[2].floats("scaffold_c_dc"), (std::vector<float>{0.5f, 1.25f, 0.125f}));
  EXPECT_EQ(out[3].floats("scaffold_c"), (std::vector<float>{1.125f, 0.875f, 0.625f}));
  // Round 2 with DC 0's model-dependent gradient (as in the test above; the proximal term is the
  // same linear function of x in every DC, so without it the corrections would cancel in the
  // average as there): coordinate 0 ends at -365/256 with both, -339/256 with FedProx alone,
  // -29/16 with SCAFFOLD alone (exact rational arithmetic; the other coordinates, 1/64 and
  // -149/64, are FedProx's).
  const auto both = run_with(c, 4, {.curved = true});
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(both[static_cast<size_t>(r)].x, (std::vector<float>{-365.0f / 256, 1.0f / 64, -149.0f / 64})) << "rank " << r;
  c.scaffold = false;
  EXPECT_EQ(run_with(c, 4, {.curved = true})[0].x, (std::vector<float>{-339.0f / 256, 1.0f / 64, -149.0f / 64}));
}

// Unequal sites (the layout and gradients of LocalSgd.UnequalSitesAverageWeightedByTheirWorkers,
// weights 1/4, 3/4): c is the weighted mean of the c_d, as the model is. Round 1 (k lr = 1):
//   c_0 = x0 - [-1,1.5,-2.25] = [2,.5,1.25], c_1 = x0 - [-1,0,-1.25] = [2,2,.25],
//   c = .25 c_0 + .75 c_1 = [2,1.625,.5] = x0 - the weighted average [-1,.375,-1.5].
TEST(LocalSgd, ScaffoldWeighsTheControlVariatesAsTheModels) {
  StrategyConfig c{"local_sgd"};
  c.tau = 2;
  c.scaffold = true;
  const auto out = run(c, 2, model::RankLayout({1, 3}), kGradOnePlusThree, {0.25f, 0.75f});
  for (int r = 0; r < 4; ++r) {
    const auto& o = out[static_cast<size_t>(r)];
    EXPECT_EQ(o.x, (std::vector<float>{-1, 0.375f, -1.5f})) << "rank " << r;
    EXPECT_EQ(o.floats("scaffold_c"), (std::vector<float>{2, 1.625f, 0.5f})) << "rank " << r;
  }
  EXPECT_EQ(out[0].floats("scaffold_c_dc"), (std::vector<float>{2, 0.5f, 1.25f}));
  EXPECT_EQ(out[3].floats("scaffold_c_dc"), (std::vector<float>{2, 2, 0.25f}));
}

TEST(LocalSgd, WarmupAveragesEveryWarmupTauStepsThenEveryTau) {
  // tau 3 after a warm-up of 2 synchronous steps: averagings after steps 0, 1, then 4 (3 steps
  // later); steps 5 and 6 are averaged by finish() (step -1).
  StrategyConfig c{"local_sgd"};
  c.tau = 3;
  c.warmup_steps = 2;
  c.warmup_tau = 1;
  const auto out = run(c, 7);
  std::vector<int> at;
  for (const auto& e : out[0].exchanges) at.push_back(e.step);
  EXPECT_EQ(at, (std::vector<int>{0, 1, 4, -1}));
  for (int r = 1; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, out[0].x);
}

TEST(Diloco, TwoRoundsOfOuterNesterovMatchTheHandComputedModel) {
  // Round 1 (after step 1): Δ_0 = x0 - [-1,1.5,-2.25] = [2,.5,1.25], Δ_1 = x0 - [.5,.5,-1.25] = [.5,1.5,.25],
  //   Δ = [1.25,1,.75]; v = Δ; x̄ = x0 - 0.5 (Δ + 0.5 v) = [0.0625, 1.25, -1.5625].
  // Round 2 (inner momentum kept per DC, from x̄):
  //   DC 0: m = [1,.5,.75]+[2,0,1] = [3,.5,1.75], x = [-1.4375,1,-2.4375];
  //         m = [1.5,.25,.875]+[1,1,1] = [2.5,1.25,1.875], x = [-2.6875,.375,-3.375]
  //   DC 1: m = [.5,.5,-.25]+[0,2,1] = [.5,2.5,.75], x = [-.1875,0,-1.9375];
  //         m = [.25,1.25,.375]+[1,0,-1] = [1.25,1.25,-.625], x = [-.8125,-.625,-1.625]
  //   Δ_0 = [2.75,.875,1.8125], Δ_1 = [.875,1.875,.0625], Δ = [1.8125,1.375,.9375]
  //   v = 0.5 [1.25,1,.75] + Δ = [2.4375,1.875,1.3125]
  //   x̄ = x̄ - 0.5 (Δ + 0.5 v) = [-1.453125, 0.09375, -2.359375]
  StrategyConfig c{"diloco"};
  c.H = 2;
  c.outer_lr = 0.5;
  c.outer_momentum = 0.5;
  const auto one = run(c, 2);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(one[static_cast<size_t>(r)].x, (std::vector<float>{0.0625f, 1.25f, -1.5625f})) << "rank " << r;
  const auto two = run(c, 4);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(two[static_cast<size_t>(r)].x, (std::vector<float>{-1.453125f, 0.09375f, -2.359375f})) << "rank " << r;
  EXPECT_EQ(two[0].momentum, (std::vector<float>{2.5f, 1.25f, 1.875f}));  // inner momentum: DC 0's own
  ASSERT_EQ(two[0].exchanges.size(), 2u);
  EXPECT_EQ(two[0].exchanges[1].bytes_sent, 8u + 3 * 4);  // Δ in float32
}

/// diloco with H = 2, outer lr 1 and no outer momentum (the outer step is then the DCs' mean), on `wire`.
std::vector<WorkerOut> diloco_mean(const std::string& wire) {
  StrategyConfig c{"diloco"};
  c.H = 2;
  c.outer_lr = 1.0;
  c.outer_momentum = 0.0;
  c.wire = wire;
  return run(c, 2);
}

TEST(Diloco, OuterLrOneWithoutMomentumIsTheMeanOfTheDcModels) {
  const auto out = diloco_mean("float32");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, kMeanAfter2) << "rank " << r;
}

TEST(Diloco, Int8WireQuantisesTheDeltaIdenticallyEverywhere) {
  // Per block of 256 (one block here): scale = max|Δ_d| / 127, Δ_d rounded to the nearest
  // multiple; Δ_0 = [2,.5,1.25] -> scale 2/127, Δ_1 = [.5,1.5,.25] -> scale 1.5/127. The outer step
  // with lr 1, no momentum: x̄ = x0 - mean(deq(Δ_d)), within (scale_0 + scale_1) / 4 of the float32
  // result and bit-identical on every replica.
  const auto out = diloco_mean("int8");
  const double bound = (2.0 / 127 + 1.5 / 127) / 4 + 1e-6;
  for (size_t i = 0; i < kN; ++i) EXPECT_NEAR(out[0].x[i], kMeanAfter2[i], bound) << i;
  bool any_diff = false;
  for (size_t i = 0; i < kN; ++i) any_diff = any_diff || out[0].x[i] != kMeanAfter2[i];
  EXPECT_TRUE(any_diff) << "quantisation had no effect: the test would not see a wrong wire";
  for (int r = 1; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, out[0].x) << "rank " << r;
}

// Drift control on diloco's inner steps, the outer model as the anchor: with outer lr 1 and no
// outer momentum the outer step is the mean of the DC models, so diloco is local_sgd (tau = H),
// SCAFFOLD and FedProx included, bit for bit on these dyadic values; Δc_d travels in float32
// after the pseudo-gradient, on every wire (bfloat16 holds every Δ_d here exactly).
TEST(Diloco, FedProxAndScaffoldOnTheInnerStepsMatchLocalSgd) {
  for (const char* wire : {"float32", "bf16"}) {
    SCOPED_TRACE(wire);
    StrategyConfig c{"diloco"};
    c.H = 2;
    c.outer_lr = 1.0;
    c.outer_momentum = 0.0;
    c.wire = wire;
    c.scaffold = true;
    const auto out = run_with(c, 4, {.curved = true});  // LocalSgd.ScaffoldMovesTheAverageWhereTheGradientDependsOnTheModel
    const size_t value_bytes = std::string(wire) == "bf16" ? 2 : 4;
    for (int r = 0; r < 4; ++r) {
      const auto& o = out[static_cast<size_t>(r)];
      EXPECT_EQ(o.x, (std::vector<float>{-1.8125f, -0.375f, -2.6875f})) << "rank " << r;
      EXPECT_EQ(o.floats("scaffold_c"), (std::vector<float>{1.3125f, 1.375f, 0.9375f})) << "rank " << r;
    }
    ASSERT_EQ(out[0].exchanges.size(), 2u);
    EXPECT_EQ(out[0].exchanges[0].bytes_sent, 8u + 3 * value_bytes + 3 * 4);
    c.scaffold = false;
    c.fedprox_mu = 0.5;
    const auto prox = run(c, 2);
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(prox[static_cast<size_t>(r)].x, (std::vector<float>{-0.125f, 1.125f, -1.625f})) << "rank " << r;
    EXPECT_EQ(prox[0].exchanges.at(0).bytes_sent, 8u + 3 * value_bytes);  // FedProx sends nothing more
  }
}

TEST(Diloco, Bf16WireSendsTwoBytesPerValue) {
  // Δ_0 = [2, .5, 1.25] and Δ_1 = [.5, 1.5, .25] are exact in bfloat16: the outer step is the
  // float32 one, bit for bit, and each leader sends 8 + 3 x 2 bytes.
  const auto out = diloco_mean("bf16");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, kMeanAfter2) << "rank " << r;
  ASSERT_EQ(out[0].exchanges.size(), 1u);
  EXPECT_EQ(out[0].exchanges[0].bytes_sent, 8u + 3 * 2);
}

// ---- powersgd -------------------------------------------------------------------------------

// A 1-D tensor is never compressed (torch's test: (3 + 1) * 1 * 2 >= 3): a vanilla round and a
// compressed one (start_powerSGD_iter 0, allowed without error feedback and warm start) are both
// the exact mean of the DCs' progress, so after K = 2 steps every replica holds the mean of the
// DC models, as local_sgd's averaging gives it.
TEST(PowerSgd, UncompressedTensorsAreTheMeanOfTheDcProgress) {
  for (bool vanilla : {true, false}) {
    StrategyConfig c;
    c.name = "powersgd";
    c.K = 2;
    if (!vanilla) {
      c.powersgd.start_iter = 0;
      c.powersgd.error_feedback = c.powersgd.warm_start = false;
    }
    ASSERT_EQ(find_strategy("powersgd").validate(c), "");
    const auto out = run(c, 2);
    for (const auto& w : out) {
      EXPECT_EQ(w.x_before_finish, kMeanAfter2) << vanilla;
      EXPECT_EQ(w.x, kMeanAfter2) << vanilla;
    }
    // Leaders' messages: the 8-byte clock, then floats. Vanilla: the progress; compressed: the
    // uncompressed tensors and P (none), then Q (none). Then finish()'s dense exchange.
    const std::vector<uint64_t> want =
        vanilla ? std::vector<uint64_t>{8 + 4 * kN, 8 + 4 * kN} : std::vector<uint64_t>{8 + 4 * kN, 8, 8 + 4 * kN};
    for (int r : {0, 2}) {
      std::vector<uint64_t> got;
      for (const auto& e : out[static_cast<size_t>(r)].exchanges) got.push_back(e.bytes_sent);
      EXPECT_EQ(got, want) << r;
    }
  }
}

// Rounds before start_powerSGD_iter leave no error; a compressed round of an uncompressed
// tensor leaves e_d = u_d - mean (torch's error for its uncompressed tensors), which finish()
// sends back: the final model is again the mean.
TEST(PowerSgd, ErrorFeedbackOfUncompressedTensorsIsLocalMinusMean) {
  StrategyConfig c;
  c.name = "powersgd";
  c.K = 2;
  c.powersgd.start_iter = 2;
  // Rounds 0 and 1 (steps 0-1, 2-3) vanilla, round 2 (steps 4-5) compressed: its error is the
  // DC's progress minus the mean progress.
  const auto out = run(c, 6);
  const std::vector<float> e0 = out[0].floats("error"), e2 = out[2].floats("error");
  ASSERT_EQ(e0.size(), kN);
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(e0[i], -e2[i]) << i;  // two DCs: local - mean is opposite
    EXPECT_EQ(out[0].x[i], out[2].x[i]) << i;
  }
  EXPECT_NE(e0, std::vector<float>(kN, 0.0f));
  EXPECT_EQ(out[1].floats("error"), e0);  // every worker of a DC holds the same state
  EXPECT_EQ(out[3].floats("error"), e2);
}

// qsgd (strategies/qsgd.cc). With bucket 1 every element is its own bucket: its norm is |u_i|,
// and with s a power of two |u_i| / scale is exactly s, so Q(u) = u without a draw: the round is
// local SGD's averaging of the models, bit for bit (u_0 = [-2,-.5,-1.25], u_1 = [-.5,-1.5,-.25]).
TEST(QsgdStrategy, ExactLevelsMakeARoundTheMeanOfTheDcModels) {
  StrategyConfig c{"qsgd"};
  c.K = 2;
  c.bucket = 1;
  for (uint32_t s : {1u, 256u}) {
    c.levels = s;
    const auto out = run(c, 2);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, kMeanAfter2) << "s " << s << " rank " << r;
    // One exchange, after step 1: the 8-byte clock + 28 + 3 norms + 3 codes of ceil(log2(s+1)) + 1 bits.
    ASSERT_EQ(out[0].exchanges.size(), 1u);
    EXPECT_EQ(out[0].exchanges[0].step, 1);
    EXPECT_EQ(out[0].exchanges[0].bytes_sent, 8u + 28 + 12 + (s == 1 ? 1 : 4));
    EXPECT_TRUE(out[1].exchanges.empty());  // members do not talk to the WAN
    EXPECT_EQ(out[2].exchanges.size(), 1u);
  }
}

/// The DC means of kGrad at `step`, as FakeIntra computes them.
std::vector<float> dc_grad(int dc, int step) {
  std::vector<float> g(kN);
  for (size_t i = 0; i < kN; ++i) {
    const float a = kGrad[step % 2][2 * dc][i], b = kGrad[step % 2][2 * dc + 1][i];
    g[i] = (a + b) / 2.0f;
  }
  return g;
}

/// qsgd's update rule (docs/guide/strategies.md) for the 2 + 2 workers of run(): per DC SGD (lr .5,
/// momentum .5) on the DC's mean gradient; every K steps x̄ <- x̄ + (1/2) sum_d deq(Q(x_d - x̄)) with
/// DC d's stream qsgd_seed(seed, stream_of(d), round); x_d <- x̄; finish: the dense mean of the
/// remaining progress.
std::vector<float> qsgd_reference(const StrategyConfig& c, int steps, uint64_t seed, uint64_t (*stream_of)(int),
                                  uint64_t (*round_of)(uint64_t)) {
  std::vector<float> xbar = kX0;
  std::vector<std::vector<float>> x = {kX0, kX0};
  SgdConfig sc;
  sc.lr = 0.5;
  sc.momentum = 0.5;
  std::vector<Sgd> opt = {Sgd(sc, kN), Sgd(sc, kN)};
  uint64_t round = 0;
  int since = 0;
  auto average = [&](bool quantised) {
    std::vector<float> sum(kN, 0.0f);
    for (int d = 0; d < 2; ++d) {
      std::vector<float> u(kN);
      for (size_t i = 0; i < kN; ++i) u[i] = x[static_cast<size_t>(d)][i] - xbar[i];
      if (quantised) {
        std::vector<uint8_t> w;
        const kernels::QsgdConfig qc{.levels = c.levels,
                                     .bucket = c.bucket,
                                     .seed = kernels::qsgd_seed(seed, stream_of(d), round_of(round))};
        kernels::qsgd_encode(u.data(), kN, qc, w);
        kernels::qsgd_decode_add(w.data(), w.size(), sum.data(), kN, 1.0f);
      } else {
        for (size_t i = 0; i < kN; ++i) sum[i] += 1.0f * u[i];
      }
    }
    for (size_t i = 0; i < kN; ++i) xbar[i] += sum[i] * 0.5f;
    x = {xbar, xbar};
    since = 0;
  };
  for (int step = 0; step < steps; ++step) {
    for (int d = 0; d < 2; ++d) {
      std::vector<float> g = dc_grad(d, step);
      opt[static_cast<size_t>(d)].step(x[static_cast<size_t>(d)].data(), g.data());
    }
    if (++since >= c.K) {
      average(true);
      ++round;
    }
  }
  if (since > 0) average(false);
  return xbar;
}

uint64_t dc_stream(int d) { return static_cast<uint64_t>(d); }
uint64_t dc0_stream(int) { return 0; }
uint64_t same_round(uint64_t r) { return r; }
uint64_t first_round(uint64_t) { return 0; }

// One bucket of 3 at s = 1 and 2: the roundings are random, every replica ends bit-identical, and
// the result is the rule's with each DC's own stream (run seed, DC, round): a DC using another DC's
// stream, or every round the first round's, or another run seed, gives another model.
TEST(QsgdStrategy, RandomRoundsFollowTheRuleWithAStreamPerRunDcAndRound) {
  for (uint32_t s : {1u, 2u}) {
    SCOPED_TRACE("s " + std::to_string(s));
    StrategyConfig c{"qsgd"};
    c.K = 2;
    c.levels = s;
    const uint64_t seed = 42;
    const auto out = run(c, 7, model::RankLayout::uniform(2, 2), kGrad, {}, {.seed = seed});
    for (int r = 1; r < 4; ++r) EXPECT_EQ(out[static_cast<size_t>(r)].x, out[0].x) << "rank " << r;
    const auto ref = qsgd_reference(c, 7, seed, dc_stream, same_round);
    EXPECT_EQ(out[0].x, ref);
    EXPECT_NE(qsgd_reference(c, 7, seed, dc0_stream, same_round), ref);
    EXPECT_NE(qsgd_reference(c, 7, seed, dc_stream, first_round), ref);
    EXPECT_NE(qsgd_reference(c, 7, seed + 1, dc_stream, same_round), ref);
    const auto other = run(c, 7, model::RankLayout::uniform(2, 2), kGrad, {}, {.seed = seed + 1});
    EXPECT_EQ(other[0].x, qsgd_reference(c, 7, seed + 1, dc_stream, same_round));
    // Rounds after steps 1, 3, 5 with a message of 8 + 28 + 4 + ceil(3 (w + 1) / 8) bytes; the
    // last step's progress in float32 at finish (step -1): 8 + 12.
    ASSERT_EQ(out[0].exchanges.size(), 4u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(out[0].exchanges[static_cast<size_t>(k)].step, 2 * k + 1);
      EXPECT_EQ(out[0].exchanges[static_cast<size_t>(k)].bytes_sent, 8 + kernels::qsgd_wire_bytes(kN, s, 128));
    }
    EXPECT_EQ(out[0].exchanges[0].bytes_sent, 8u + 28 + 4 + (s == 1 ? 1 : 2));  // 3 codes of 2 or 3 bits
    EXPECT_EQ(out[0].exchanges[3].step, -1);
    EXPECT_EQ(out[0].exchanges[3].bytes_sent, 8u + 3 * 4);
    // The strategy's state after finish: the anchor (= the model), the round counter.
    EXPECT_EQ(out[0].floats("anchor"), out[0].x);
    ASSERT_NE(out[0].state.find("round"), nullptr);
    int64_t rounds;
    std::memcpy(&rounds, out[0].state.find("round")->bytes.data(), 8);
    EXPECT_EQ(rounds, 3);
  }
}

// Unequal sites (1 + 3 workers, weights 1/4, 3/4), exact levels: the round is the weighted mean
// of the models, as local_sgd's ([-1, .375, -1.5]).
TEST(QsgdStrategy, UnequalSitesWeighTheQuantisedProgress) {
  StrategyConfig c{"qsgd"};
  c.K = 2;
  c.bucket = 1;
  const auto out = run(c, 2, model::RankLayout({1, 3}), kGradOnePlusThree, {0.25f, 0.75f});
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(out[static_cast<size_t>(r)].x, (std::vector<float>{-1, 0.375f, -1.5f})) << "rank " << r;
}

}  // namespace
