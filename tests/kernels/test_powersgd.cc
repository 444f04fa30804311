// PowerSGD's pieces (kernels/powersgd.h) on crafted inputs: numpy's seeds, torch's compression
// test, both orthogonalisations, one iteration on a matrix it reproduces exactly, checkpoints.
// The comparison with torch's own hook is tests/unit/powersgd_torch_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/powersgd.h"

namespace geotb::kernels {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{24, 16}, {16}, {8, 3, 3, 3}, {40, 30}, {5, 4}};

/// 1, 2, 3, ...: a NormalSource whose draws a test can follow.
class Counting final : public NormalSource {
 public:
  void seed(uint64_t s) override {
    seeds.push_back(s);
    next = 1;
  }
  void fill(float* out, size_t n) override {
    for (size_t i = 0; i < n; ++i) out[i] = next++;
  }
  std::vector<uint64_t> seeds;
  float next = 1;
};

TEST(PowerSgd, SeedsAreNumpyRandomStateRandint) {
  // /usr/bin/python3 -c 'import numpy as np; r = np.random.RandomState(0);
  //                      print([r.randint(1_000_000_000) for _ in range(3)])'   (numpy 1.24.2)
  NumpyRandint r0(0), r1(12345);
  EXPECT_EQ(r0.next(), 209652396u);
  EXPECT_EQ(r0.next(), 398764591u);
  EXPECT_EQ(r0.next(), 924231285u);
  EXPECT_EQ(r1.next(), 771445218u);
  EXPECT_EQ(r1.next(), 601959909u);
  NumpyRandint copy(0);
  copy.restore(r1.save());
  EXPECT_EQ(copy.next(), 285080861u);
  EXPECT_EQ(r1.next(), 285080861u);
  EXPECT_THROW(copy.restore({1, 2, 3}), std::invalid_argument);
}

TEST(PowerSgd, PlanIsTorchsCompressionTest) {
  // (rows + cols) * r * 2 < rows * cols; 1-D tensors are rows x 1 and never pass.
  const PowerSgdPlan p1 = PowerSgdPlan::make(kShapes, 1, 2);
  ASSERT_EQ(p1.tensors.size(), 5u);
  EXPECT_EQ(p1.numel, 384u + 16 + 216 + 1200 + 20);
  const std::vector<bool> c1 = {true, false, true, true, true};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(p1.tensors[i].compressed, c1[i]) << i;
  EXPECT_EQ(p1.tensors[2].rows, 8u);
  EXPECT_EQ(p1.tensors[2].cols, 27u);  // a conv weight viewed (out, in * kh * kw)
  EXPECT_EQ(p1.p_size, 24u + 8 + 40 + 5);
  EXPECT_EQ(p1.q_size, 16u + 27 + 30 + 4);
  EXPECT_EQ(p1.uncompressed, 16u);
  const PowerSgdPlan p2 = PowerSgdPlan::make(kShapes, 2, 2);  // (5 + 4) * 2 * 2 = 36 >= 20
  EXPECT_FALSE(p2.tensors[4].compressed);
  EXPECT_EQ(p2.uncompressed, 36u);
  const PowerSgdPlan p4 = PowerSgdPlan::make(kShapes, 4, 2);  // (8 + 27) * 4 * 2 = 280 >= 216
  EXPECT_FALSE(p4.tensors[2].compressed);
  EXPECT_EQ(p4.p_size, (24u + 40) * 4);
  EXPECT_EQ(p4.q_size, (16u + 30) * 4);
  EXPECT_EQ(PowerSgdPlan::make({{3, 2}}, 8, 0).tensors[0].rank, 2);  // min(rows, cols, rank)
  EXPECT_THROW(PowerSgdPlan::make({{3, 0}}, 1, 2), std::invalid_argument);
  EXPECT_THROW(PowerSgdPlan::make({{}}, 1, 2), std::invalid_argument);
}

TEST(PowerSgd, GramSchmidtOnACraftedMatrix) {
  // Columns (3, 4, 0) and (1, 2, 0): the first becomes (0.6, 0.8, 0); the second loses its
  // projection 2.2 on it, (-0.32, 0.24, 0), and is normalised: (-0.8, 0.6, 0).
  std::vector<float> m = {3, 1, 4, 2, 0, 0};
  EXPECT_EQ(orthogonalize(m.data(), 3, 2, 0), 0u);
  const std::vector<float> want = {0.6f, -0.8f, 0.8f, 0.6f, 0, 0};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(m[i], want[i], 1e-6) << i;
  // A zero column with epsilon 0: set to zero and counted (torch would produce NaN).
  std::vector<float> z = {0, 1, 0, 1, 0, 1};
  EXPECT_EQ(orthogonalize(z.data(), 3, 2, 0), 1u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(z[r * 2], 0.0f);
    EXPECT_NEAR(z[r * 2 + 1], 1 / std::sqrt(3.0f), 1e-6);
  }
  // With epsilon: col / (|col| + eps), no special case.
  std::vector<float> e = {0, 0, 0};
  EXPECT_EQ(orthogonalize(e.data(), 3, 1, 1e-8), 0u);
  EXPECT_EQ(e[0], 0.0f);
}

TEST(PowerSgd, HouseholderSignsAreLapacks) {
  // Three columns: Householder QR. Column 0 = (3, 4, 0, 0): reflected onto beta e_0 with
  // beta = -5 (alpha = 3 > 0), so Q's first column is -(0.6, 0.8, 0, 0), where Gram-Schmidt
  // would give +(0.6, 0.8, 0, 0). Columns 1 and 2 are e_2 and e_3 after it: with nothing below
  // their diagonal once reflected, LAPACK leaves them, and their signs follow.
  std::vector<float> m = {3, 0, 0,  //
                          4, 0, 0,  //
                          0, 2, 0,  //
                          0, 0, 7};
  EXPECT_EQ(orthogonalize(m.data(), 4, 3, 0), 0u);
  EXPECT_NEAR(m[0], -0.6f, 1e-6);
  EXPECT_NEAR(m[3], -0.8f, 1e-6);
  // Q^T Q = I.
  for (size_t a = 0; a < 3; ++a)
    for (size_t b = 0; b < 3; ++b) {
      double s = 0;
      for (size_t r = 0; r < 4; ++r) s += static_cast<double>(m[r * 3 + a]) * m[r * 3 + b];
      EXPECT_NEAR(s, a == b ? 1.0 : 0.0, 1e-6) << a << "," << b;
    }
  // The identity's first columns have nothing below the diagonal: no reflection, Q = them.
  std::vector<float> id = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  orthogonalize(id.data(), 4, 3, 0);
  EXPECT_EQ(id, (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_THROW(orthogonalize(id.data(), 2, 3, 0), std::invalid_argument);
}

TEST(PowerSgd, ValidateNamesTorchsArguments) {
  PowerSgdConfig c;
  EXPECT_EQ(validate(c), "");
  c.rank = 0;
  EXPECT_EQ(validate(c), "matrix_approximation_rank: 0: must be at least 1");
  c = {};
  c.start_iter = 1;
  EXPECT_EQ(validate(c),
            "start_powerSGD_iter: 1: must be above 1 with use_error_feedback or warm_start (PowerSGDState's rule)");
  c.error_feedback = c.warm_start = false;
  EXPECT_EQ(validate(c), "");
  c.min_compression_rate = -1;
  EXPECT_EQ(validate(c), "min_compression_rate: -1: must be a finite number >= 0");
  EXPECT_THROW(PowerSgd(c, kShapes), std::invalid_argument);
}

/// One replica (world 1): begin, after_p and finish with the replica's own sums.
void iterate(PowerSgd& ps, std::vector<float>& g, NormalSource* normal) {
  const PowerSgdPlan& plan = ps.plan();
  std::vector<float> unc(plan.uncompressed), p(plan.p_size), q(plan.q_size);
  ps.begin(g.data(), unc.data(), p.data(), normal);
  ps.after_p(g.data(), unc.data(), p.data(), 1, q.data());
  ps.finish(g.data(), q.data(), 1);
}

TEST(PowerSgd, ARankOneMatrixComesBackExactlyAndLeavesNoError) {
  // M = u v^T with u = (1, 2, 3, 4), v = (1, -1, 2, 0, 1): rank 1, so one power step recovers it
  // (Q's draws 1..5 are not orthogonal to v) and the error is rounding only; the bias (1-D)
  // goes as it is.
  PowerSgdConfig c;
  c.start_iter = 2;
  PowerSgd ps(c, {{4, 5}, {3}});
  ASSERT_TRUE(ps.plan().tensors[0].compressed);
  const std::vector<float> u = {1, 2, 3, 4}, v = {1, -1, 2, 0, 1};
  std::vector<float> g;
  for (float a : u)
    for (float b : v) g.push_back(a * b);
  g.insert(g.end(), {0.5f, -0.25f, 2.0f});
  const std::vector<float> in = g;
  Counting normal;
  EXPECT_TRUE(ps.vanilla());
  ps.vanilla_done();
  ps.vanilla_done();
  ASSERT_FALSE(ps.vanilla());
  iterate(ps, g, &normal);
  EXPECT_EQ(normal.seeds, std::vector<uint64_t>{209652396u});  // RandomState(0)'s first randint
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], in[i], 1e-5) << i;
  for (size_t i = 20; i < 23; ++i) EXPECT_EQ(g[i], in[i]);  // uncompressed, world 1: exact
  ASSERT_EQ(ps.error().size(), 23u);
  for (size_t i = 0; i < 23; ++i) EXPECT_EQ(ps.error()[i], in[i] - g[i]) << i;
  EXPECT_EQ(ps.iter(), 3);
  // Warm start: the next iteration draws nothing.
  iterate(ps, g, nullptr);
  EXPECT_EQ(normal.seeds.size(), 1u);
}

TEST(PowerSgd, WithoutWarmStartEveryIterationDrawsASeed) {
  PowerSgdConfig c;
  c.start_iter = 2;
  c.warm_start = false;
  PowerSgd ps(c, {{6, 6}});
  ps.vanilla_done();
  ps.vanilla_done();
  std::vector<float> g(36);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i % 7) - 3;
  Counting normal;
  iterate(ps, g, &normal);
  iterate(ps, g, &normal);
  EXPECT_EQ(normal.seeds, (std::vector<uint64_t>{209652396u, 398764591u}));
}

TEST(PowerSgd, ErrorFeedbackConservesWhatWasNotSent) {
  // error = (g + error_in) - decompressed, element by element.
  PowerSgdConfig c;
  c.start_iter = 2;
  PowerSgd ps(c, {{8, 6}, {4}});
  ps.vanilla_done();
  ps.vanilla_done();
  Counting normal;
  std::vector<float> g(52);
  for (int t = 0; t < 3; ++t) {
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::sin(static_cast<float>(i * (t + 3)));
    const std::vector<float> err_in = ps.error().empty() ? std::vector<float>(52, 0.0f) : ps.error();
    const std::vector<float> in = g;
    iterate(ps, g, &normal);
    for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(ps.error()[i], (in[i] + err_in[i]) - g[i]) << t << ":" << i;
  }
}

TEST(PowerSgd, SaveAndRestoreContinueBitForBit) {
  PowerSgdConfig c;
  c.start_iter = 2;
  c.rank = 2;
  PowerSgd a(c, kShapes), b(c, kShapes);
  Counting na, nb;
  std::vector<float> g(1836);
  auto fill = [&](int t) {
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::cos(static_cast<float>(i) * 0.37f + static_cast<float>(t));
  };
  for (int t = 0; t < 5; ++t) {
    fill(t);
    if (a.vanilla()) a.vanilla_done();
    else iterate(a, g, &na);
  }
  b.restore(a.save());
  for (int t = 5; t < 8; ++t) {
    fill(t);
    std::vector<float> ga = g, gb = g;
    iterate(a, ga, &na);
    iterate(b, gb, &nb);
    EXPECT_EQ(ga, gb) << t;
  }
  EXPECT_EQ(a.p(), b.p());
  EXPECT_EQ(a.q(), b.q());
  EXPECT_EQ(a.error(), b.error());
  PowerSgd::State bad = a.save();
  bad.q.resize(3);
  EXPECT_THROW(b.restore(bad), std::invalid_argument);
}

}  // namespace
}  // namespace geotb::kernels
