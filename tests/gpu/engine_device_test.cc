// The engine's GPU replica (workload.device "cuda", engine/model/torch_learner.cc) against the CPU's.
// Suite gpu: skips without a CUDA build and a device (CI); ci/gpu-check.sh runs it on a GPU machine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "engine/model/calibrate.h"
#include "engine/model/learner.h"
#include "tests/unit/engine_fixtures.h"

namespace geotb::engine {
namespace {

using fixtures::mlp_on;

// The GPU replica starts from the CPU replica's weights (initialised on the CPU from the seed), and
// one step's loss and gradients agree with the CPU's to float rounding.
TEST(GpuLearner, CudaLearnerStartsFromTheCpuWeightsAndAgreesOnAStep) {
  if (!device_error("cuda").empty()) GTEST_SKIP() << device_error("cuda");
  auto cpu = make_learner(mlp_on("cpu"), 11);
  auto gpu = make_learner(mlp_on("cuda"), 11);
  const size_t n = cpu->num_params();
  ASSERT_EQ(gpu->num_params(), n);
  EXPECT_EQ(std::memcmp(cpu->params(), gpu->params(), n * sizeof(float)), 0);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  const size_t batch = 16;
  std::vector<float> x(batch * 784);
  for (float& v : x) v = normal(rng);
  std::vector<int64_t> y(batch);
  for (size_t i = 0; i < batch; ++i) y[i] = static_cast<int64_t>(i % 10);
  // Writing params() changes the GPU model too (uploaded before the next forward).
  for (size_t i = 0; i < n; i += 7) cpu->params()[i] = gpu->params()[i] = 0.01f * static_cast<float>(i % 13);
  const double lc = cpu->forward_backward(x.data(), y.data(), batch);
  const double lg = gpu->forward_backward(x.data(), y.data(), batch);
  EXPECT_NEAR(lg, lc, 1e-5 * std::abs(lc));
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(cpu->grads()[i] - gpu->grads()[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(cpu->grads()[i])));
  }
  EXPECT_LT(max_diff, 1e-4 * max_abs);
  const model::DeviceContext d = device_info("cuda");
  EXPECT_EQ(d.device, "cuda:0");
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.memory_bytes, 0u);
}

}  // namespace
}  // namespace geotb::engine

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
#ifdef GEOTB_TORCH_WHEEL
  // As in harness/main.cc: a PyPI wheel's libtorch_cpu aborts in its own static destructors on
  // some distributions ("free(): invalid pointer"); the results are written, so leave without them.
  std::fflush(nullptr);
  std::_Exit(rc);
#endif
  return rc;
}
